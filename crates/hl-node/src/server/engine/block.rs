//! One block through the engine: its two lines decoded (on both threads when there are two),
//! planned, its coins applied and published by the lanes, then what only the engine thread
//! may do: reports, stale announcements, `l4Book` frames, disconnects.
//!
//! Owns: the order of a block's stages, the second thread's pool (built on the first block)
//! and the switches of the block's threads to real-time and back.
//! Must not: read files or handle requests (`engine.rs` does, between blocks), or let a late
//! helper thread delay a block (each stage is a `join` this thread can finish alone).

use super::decode::{decode_diffs, decode_on_two, decode_statuses};
use super::warm::helper_since;
#[allow(clippy::wildcard_imports)]
use super::*;

impl Engine {
    pub(super) fn on_block(&mut self, height: u64, statuses_line: &Line, diffs_line: &Line) {
        let started = Instant::now();
        // Before the switch to real-time: a helper started now (the first block) inherits the
        // engine thread's class, and only a class switched by `raise` is switched back.
        let both = self.two_threads();
        self.switch_class(true);
        // The two lines are decoded at once when there are two threads (`decode_on_two`), into
        // the last block's buffers (`Spare`).
        let (status_bufs, diffs_buf) = self.spare.take();
        // Every status (not only those that may rest) when someone reads them all.
        let all_statuses = !self.subs.l4.is_empty() || !self.subs.order_updates.is_empty();
        let mut helper_start = [u64::MAX; 2];
        let (st, df, tail_buf) = match self.pool.as_ref().filter(|_| both) {
            Some(pool) => {
                self.warm.offer();
                let (st, df, tail, start) =
                    decode_on_two(pool, statuses_line, diffs_line, all_statuses, status_bufs, diffs_buf, 0);
                helper_start[0] = start;
                // Keep the helper awake through plan_block, up to the coins' `join`.
                self.warm.spin(pool);
                (st, df, tail)
            }
            None => {
                let [head, tail] = status_bufs;
                (decode_statuses(statuses_line, all_statuses, head), decode_diffs(diffs_line, diffs_buf), tail)
            }
        };
        let time = st.time.or(df.time).and_then(|t| parse_node_time(t).ok()).unwrap_or(self.books.time());
        let (mut statuses, mut diffs) = (st.events, df.events);
        if self.config.coins.is_some() {
            statuses.retain(|s| self.allowed(&s.order.coin));
            diffs.retain(|d| self.allowed(&d.coin));
        }
        for r in st.reports.into_iter().chain(df.reports) {
            self.report(r);
        }
        let mut newly_stale = Vec::new();
        for coin in st.damaged.into_iter().chain(df.damaged) {
            if self.allowed(&coin) {
                let id = self.books.coin_id(&coin);
                if !self.books.book(id).is_some_and(|b| b.stale) {
                    newly_stale.push(id);
                }
                self.books.mark_stale(id);
            }
        }
        let decoded = Instant::now();
        let mut plan = std::mem::take(&mut self.plan);
        self.books.plan_block(height, time, &statuses, &diffs, &mut plan);
        let timings = self.record_timings;
        let plan_ns = if timings { decoded.elapsed().as_nanos() as u64 } else { 0 };
        for coin in newly_stale {
            self.announce_stale(coin);
        }
        let coins_started = timings.then(Instant::now);
        let gap;
        (helper_start[1], gap) = self.run_coins(&plan, &statuses, &diffs, both);
        let coins_ns = coins_started.map_or(0, |t| t.elapsed().as_nanos() as u64);
        self.plan = plan;
        // What the lanes could not do off the engine thread: apply errors (reported, the coin
        // announced stale) and frames a client's queue refused (slow or gone: disconnected).
        for i in 0..self.lanes.len() {
            let mut errors = std::mem::take(&mut self.lanes[i].errors);
            for (coin, err) in errors.drain(..) {
                self.report(format!("{}: {err}; coin stale until the next snapshot", diffs_line.origin));
                self.announce_stale(coin);
            }
            self.lanes[i].errors = errors;
            let mut undelivered = std::mem::take(&mut self.lanes[i].undelivered);
            for (id, why) in undelivered.drain(..) {
                self.subs.undelivered(id, why, &mut self.dead);
            }
            self.lanes[i].undelivered = undelivered;
        }
        self.publish_l4(height, time, &statuses, &diffs);
        self.publish_feeds(&statuses);
        self.spare.put(statuses, tail_buf, diffs);
        self.switch_class(false);
        let realtime_blocks = self.block_class.as_ref().map_or((0, 0), crate::sched::BlockClass::raised_blocks);
        if let Ok(mut stats) = self.stats.lock() {
            stats.height = height;
            stats.realtime_blocks = realtime_blocks;
            if timings {
                let done = Instant::now();
                let total = done.duration_since(started).as_nanos() as u64;
                let decode = decoded.duration_since(started).as_nanos() as u64;
                // Each lane's stages, summed over the lanes; the lanes' time outside them, and
                // the engine's outside decode, plan and the coins, count as queueing.
                let mut sums = [plan_ns, 0, 0];
                let (mut queue, mut aggregated, mut changed) =
                    (total.saturating_sub(decode + plan_ns + coins_ns), 0, 0);
                let mut first_frame: Option<Instant> = None;
                for lane in &self.lanes {
                    for (s, ns) in sums.iter_mut().zip(lane.ns) {
                        *s += ns;
                    }
                    queue += lane.busy_ns.saturating_sub(lane.ns.iter().sum());
                    aggregated += lane.n_aggregated;
                    changed += lane.n_changed;
                    first_frame = match (first_frame, lane.first_frame) {
                        (Some(a), Some(b)) => Some(a.min(b)),
                        (a, b) => a.or(b),
                    };
                }
                stats.block_ns.push(total);
                stats.phase_ns.push([decode, sums[0], sums[1], sums[2], queue]);
                stats.views_aggregated.push(aggregated);
                stats.coins_changed.push(changed);
                if both {
                    stats.helper_start_ns.push(helper_start);
                    stats.coins_end_gap_ns.push(gap);
                }
                let time_ms = time.as_millis().max(0) as u64;
                let lines = self.read_at.map(|(h, w, r)| if h == height { (w, r) } else { (started, started) });
                stats.marks.push(BlockMarks { time_ms, lines, started, first_frame, done });
            }
        }
    }

    /// Switches the block's threads to real-time (`up`) or back ([`Engine::realtime_blocks`]);
    /// a refusal is logged once and the engine goes on in the normal class.
    fn switch_class(&mut self, up: bool) {
        if let Some(class) = self.block_class.as_mut() {
            let switched = if up { class.raise() } else { class.lower() };
            if let Err(err) = switched {
                tracing::warn!("blocks run in the normal class from now on: {err}");
            }
        }
    }

    /// Runs each block from now on with its threads switched to `SCHED_FIFO` by `class`, and
    /// back to the normal class after it (`--rt-priority`): called on the engine thread before
    /// its first block (the helper, started on the first block, records itself then). The
    /// caller checks the permission first (`BlockClass::probe`, as `server::start` does).
    pub fn realtime_blocks(&mut self, class: crate::sched::BlockClass) {
        self.block_class = Some(class);
    }

    /// True when this block runs on two threads: `EngineConfig::threads` is 2 and the pool
    /// with this thread as its first member exists (built here on the first block; an engine
    /// driven from another thread than the one that built it runs on one).
    fn two_threads(&mut self) -> bool {
        if self.lanes.len() < 2 || self.pool_failed {
            return false;
        }
        if self.pool.is_none() {
            // The helper records itself for the switches to real-time (`BlockClass`).
            let slot = self.block_class.as_ref().map(crate::sched::BlockClass::helper_slot);
            let built = rayon::ThreadPoolBuilder::new()
                .num_threads(2)
                .use_current_thread()
                .thread_name(|i| format!("hl-engine-{i}"))
                .start_handler(move |i| {
                    if let (1, Some(slot)) = (i, slot.as_ref()) {
                        let _ = slot.set(crate::sched::ThreadRef::current());
                    }
                })
                .build();
            match built {
                Ok(pool) => self.pool = Some(pool),
                Err(err) => {
                    tracing::warn!("the engine's second thread could not be started, running on one: {err}");
                    self.pool_failed = true;
                    return false;
                }
            }
        }
        self.pool.as_ref().is_some_and(|pool| pool.current_thread_index() == Some(0))
    }

    /// Applies and publishes every coin of the block (`plan`), on both threads when `both`:
    /// each takes the next coin from one shared queue until none is left, so a late or
    /// descheduled helper only means the engine thread does more of them (it never waits for
    /// the helper to start: a helper job nobody stole is run by the engine thread, and finds
    /// the queue empty). The block ends when both are done. Returns when the helper started
    /// (`helper_since`) and how far apart the two threads finished (nanoseconds; `u64::MAX`
    /// unless both ran coins and timings are on).
    fn run_coins(
        &mut self,
        plan: &BlockPlan,
        statuses: &[OrderStatus<'_>],
        diffs: &[BookDiff<'_>],
        both: bool,
    ) -> (u64, u64) {
        let last = (0..plan.len()).map(|g| plan.coin(g).0 as usize + 1).max().unwrap_or(0);
        if self.views.len() < last {
            self.views.resize_with(last, Vec::new);
        }
        #[cfg(test)]
        let helper_only = self.helper_only && both;
        #[cfg(not(test))]
        let helper_only = false;
        let time_ms = self.books.time().as_millis().max(0) as u64;
        let helper_done = self.block_class.as_ref().map(crate::sched::BlockClass::helper_done);
        let Engine { books, views, subs, lanes, pool, record_timings, warm, .. } = self;
        let (coins, parts) = books.split_block(plan);
        let mut lists = views.iter_mut().enumerate();
        let jobs: Vec<CoinJob<'_>> = parts
            .filter_map(|part| {
                let ci = part.coin.0 as usize;
                let (_, views) = lists.find(|(i, _)| *i == ci)?;
                Some(CoinJob { part, views })
            })
            .collect();
        let yield_every = (!both).then_some(YIELD_EVERY);
        let ctx = BlockCtx { coins, plan, statuses, diffs, subs, time_ms, timings: *record_timings, yield_every };
        let queue = Mutex::new(jobs.into_iter());
        for lane in lanes.iter_mut() {
            lane.start_block();
        }
        match (pool.as_ref().filter(|_| both), lanes.split_first_mut()) {
            (Some(pool), Some((first, [second, ..]))) => {
                let helper_started = AtomicBool::new(false);
                warm.offer();
                let offered = Instant::now();
                let timings = *record_timings;
                let (first_done, (start, second_done)) = pool.join(
                    || {
                        if helper_only {
                            while !helper_started.load(Ordering::Acquire) {
                                std::thread::yield_now();
                            }
                        } else {
                            first.drain(&ctx, &queue);
                        }
                        timings.then(Instant::now)
                    },
                    || {
                        let start = helper_since(offered);
                        helper_started.store(true, Ordering::Release);
                        second.drain(&ctx, &queue);
                        // The helper back to the normal class now (if the block raised it), not
                        // the engine thread when it ran this half itself.
                        if let (Some(done), true) = (helper_done.as_ref(), start != u64::MAX) {
                            done.run();
                        }
                        (start, timings.then(Instant::now))
                    },
                );
                self.n_parallel += 1;
                self.n_helper_coins += second.n_coins;
                // How far apart the two threads ran out of coins (the helper's half counts
                // only when the helper ran it).
                let gap = match (first_done, second_done) {
                    (Some(a), Some(b)) if start != u64::MAX => a.max(b).duration_since(a.min(b)).as_nanos() as u64,
                    _ => u64::MAX,
                };
                (start, gap)
            }
            (_, Some((first, _))) => {
                first.drain(&ctx, &queue);
                (u64::MAX, u64::MAX)
            }
            (_, None) => (u64::MAX, u64::MAX),
        }
    }

    /// Tells a stale coin's book subscribers that updates stop until the next snapshot (they
    /// would otherwise see a silently frozen book).
    fn announce_stale(&mut self, coin: CoinId) {
        let mut ids: Vec<ClientId> = self.subs.l4.get(&coin).cloned().unwrap_or_default();
        if let Some(keys) = self.subs.l2.get(&coin) {
            ids.extend(keys.values().flatten().copied());
        }
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return;
        }
        let name = &self.books.coins.spec(coin).name;
        let text = format!(
            "Order book for {name} is stale (its data could not be applied); no updates until the next snapshot"
        );
        let frame = Bytes::from(proto::error_frame(&text));
        for id in ids {
            self.subs.send(id, frame.clone(), &mut self.dead);
        }
    }

    fn publish_l4(&mut self, height: u64, time: Utc, statuses: &[OrderStatus<'_>], diffs: &[BookDiff<'_>]) {
        if self.subs.l4.is_empty() {
            return;
        }
        let time_ms = time.as_millis().max(0) as u64;
        let wanted: Vec<(CoinId, Vec<ClientId>)> = self.subs.l4.iter().map(|(c, ids)| (*c, ids.clone())).collect();
        for (coin, ids) in wanted {
            let name = self.books.coins.spec(coin).name.as_str();
            let st: Vec<proto::L4Status<'_>> =
                statuses.iter().filter(|s| s.order.coin == name).map(proto::L4Status::from_node).collect();
            let df: Vec<proto::L4Diff<'_>> =
                diffs.iter().filter(|d| d.coin == name).map(proto::L4Diff::from_node).collect();
            if st.is_empty() && df.is_empty() {
                continue;
            }
            let frame = Bytes::from(proto::l4_updates_frame(time_ms, height, &st, &df));
            for id in ids {
                self.subs.send(id, frame.clone(), &mut self.dead);
            }
        }
    }
}
