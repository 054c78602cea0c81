//! Between frames: stop requests, deferred cancels, book staleness, connection silence, the
//! strategy's timer and the status snapshot.
//!
//! Owns: the session's clocks of things that must happen without a frame.
//! Must not: run inside a frame's timed span.

use super::*;

impl<S: Strategy> Core<S> {
    /// Between frames: stop requests, deferred cancels, staleness, silence, timer, status.
    pub fn housekeeping(&mut self, disconnected: bool) {
        let now = self.now();
        if self.stop.is_stopped() && !matches!(self.sync.phase, Phase::Stopping(_) | Phase::Done) {
            self.begin_stop(Blocked::Killed, now);
        }
        if let Some(why) = self.runner.risk().killed()
            && !matches!(self.sync.phase, Phase::Stopping(_) | Phase::Done)
        {
            self.begin_stop(why, now);
        }
        if self.config.stop_after_orders.is_some_and(|n| self.stats.places + self.stats.edits >= n)
            && !matches!(self.sync.phase, Phase::Stopping(_) | Phase::Done)
        {
            self.begin_stop(Blocked::Killed, now);
        }
        if let Phase::Stopping(_) = self.sync.phase {
            self.stop_deadline(now);
        }
        if disconnected {
            self.flush_journal();
            return;
        }
        while self.sync.authenticated && !self.config.dry_run {
            let Some(action) = self.deferred.front().copied() else { break };
            if self.credits_for(action, now).is_err() {
                if action == (Action::CancelAll { instrument: None }) && self.instruments.len() > 1 {
                    // Its requests may be more than the venue's burst: one per instrument,
                    // each paced on its own (the queue has room for one per instrument).
                    self.deferred.pop_front();
                    for i in (0..self.instruments.len()).rev() {
                        self.deferred.push_front(Action::CancelAll { instrument: Some(InstrumentId(i as u32)) });
                    }
                    continue;
                }
                break;
            }
            self.deferred.pop_front();
            self.encode_action(action);
            self.pending_journal_push(Entry::Sent { at: now, action, dry_run: false });
        }
        if !self.recon.queries.is_empty() {
            self.send_queries(now);
        }
        let silence = Duration::from_secs(u64::from(self.config.heartbeat_s) * 2 + 5);
        if now.since(self.last_recv) > silence.as_nanos() as u64 {
            self.fatal_link("no frame and no heartbeat for too long");
            return;
        }
        if self.sync.phase == Phase::Live {
            let stale = self.config.stale_after.as_nanos() as u64;
            for i in 0..self.instruments.len() {
                if now.since(self.last_book[i]) > stale {
                    self.book_stale(InstrumentId(i as u32), now, true);
                }
            }
        }
        if now >= self.next_timer {
            self.next_timer = Mono(now.0 + self.config.timer.as_nanos() as u64);
            if self.sync.phase == Phase::Live {
                self.runner.on_timer(&self.books, now, &mut self.outbox);
            }
        }
        if !self.outbox.is_empty() {
            self.send_actions(now);
        }
        if let Some(every) = self.config.status_every
            && now >= self.next_status
        {
            self.next_status = Mono(now.0 + every.as_nanos() as u64);
            let status = self.status(now);
            self.pending_journal_push(Entry::Status(status));
        }
        self.flush_journal();
    }

    /// Treats the connection as lost: the loop drops it and reconnects.
    pub(super) fn fatal_link(&mut self, why: &'static str) {
        self.lost = Some(why);
    }

    pub(super) fn status(&self, now: Mono) -> Status {
        let id = InstrumentId(0);
        let orders = self.runner.orders();
        Status {
            at: now,
            position: orders.position(id).qty().raw(),
            pnl: self.runner.pnl(id, &self.books),
            open_orders: orders.live().count() as u32,
            orders_sent: self.stats.places,
            fills: self.runner.strategy().fills,
            live: self.sync.phase == Phase::Live,
        }
    }
}
