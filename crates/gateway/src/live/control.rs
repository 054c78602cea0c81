//! The session's control path: what happens on connect and disconnect, the answers to
//! control requests (auth, heartbeat, cancel-on-disconnect, account limits, subscriptions),
//! reconciliation after a (re)connect, and the stop sequence.
//!
//! Owns: the order of the sync steps and the three conditions of going live (books resynced,
//! private subscriptions confirmed, orders reconciled); the stop steps (cancel all, verify
//! none is open, flatten).
//! Must not: run on the timed path (these are answers to rare requests; they may allocate),
//! or resend an order: a place whose answer was lost is looked up by its label, never sent
//! again.

use ticktrade_core::{Clock, Decimal, InstrumentId, Mono, SplitMix64};
use ticktrade_deribit_proto::api::Num;
use ticktrade_deribit_proto::envelope::encode_request;
use ticktrade_deribit_proto::order::{OrderKind, OrderRequest as WireOrder, OrderTag, TimeInForce};
use ticktrade_deribit_proto::ratelimit::{Class, RateLimits, Rule};
use ticktrade_deribit_proto::requests::{self, CancelScope};
use ticktrade_deribit_proto::signature::Secret;
use ticktrade_strategy::{Action, Blocked, Label, Status as OrderStatus, Strategy};

use super::journal::{Entry, Link};
use super::session::{Core, Exit, LiveError, LiveReport, Phase, StopStep, book_fill};
use super::wire::{Group, Pending, Query, closing_side, order_report, position_lots};

/// Requests of the non-matching class the queued queries leave unspent, for what cannot wait
/// for a refill (heartbeat answers, the stop's checks).
const QUERY_HEADROOM: u64 = 5;

/// How far the venue's clock may be behind this host's: a currency's trades catch-up starts
/// this much before the time this host last knew every trade of it was seen. A wider margin
/// only re-reads trades the sequence filter then drops.
const CLOCK_MARGIN_MS: u64 = 60_000;

/// The trades catch-up of currency groups. Deribit's `trade_seq` counts per instrument, so a
/// currency-wide query cannot start after the last trade seen the way
/// `get_user_trades_by_instrument`'s `start_seq` does; it reads a time window instead, oldest
/// first, and drops what was seen before by sequence number.
#[derive(Clone, Debug, Default)]
pub(super) struct CatchUp {
    /// Per group, a time (this host's clock, ms) before which every trade of the group was
    /// seen: the first connection's, then the start of the last complete catch-up. A trade of
    /// ours is never older than the first connection (our labels are this run's).
    covered_ms: Vec<u64>,
    /// When the running catch-up began (its queries went out after it).
    started_ms: u64,
    /// `last_trade_seq` when the running catch-up began: a trade at or below it was booked
    /// already. Not the live figure: a page may list one instrument's trades of one
    /// millisecond in any order, and an unseen one must not be dropped for a later seq seen
    /// first. Repeats within the catch-up (pages overlap on their boundary millisecond) are
    /// recent, and the strategy's trade-id memory drops them.
    seen_before: Vec<Option<u64>>,
}

impl<S: Strategy> Core<S> {
    /// A new connection: everything the venue knew of the old one is gone.
    pub(super) fn on_connect(&mut self) {
        let now = self.now();
        self.sync.connected = true;
        self.sync.authenticated = false;
        self.sync.subscribed = false;
        self.sync.reconciled = false;
        self.sync.books_ok.iter_mut().for_each(|b| *b = false);
        self.sync.resyncing.iter_mut().for_each(|b| *b = false);
        self.inflight.clear();
        self.recon.queries.clear();
        self.wire.clear();
        self.last_recv = now;
        self.last_book.iter_mut().for_each(|t| *t = now);
        if self.recon.trades.covered_ms.len() != self.instruments.currencies.len() {
            let start_ms = self.wall_ms();
            self.recon.trades.covered_ms = vec![start_ms; self.instruments.currencies.len()];
        }
        self.runner.strategy_mut().record(Entry::Link { at: now, link: Link::Connected });
        match self.config.credentials.clone() {
            Some(credentials) => {
                let id = self.inflight.issue(Pending::Auth);
                let send_secret = self.config.send_secret;
                let secret = Secret::new(credentials.client_secret.expose());
                let timestamp_ms = (self.clock.utc().0 / 1_000_000).max(0) as u64;
                let mut rng = SplitMix64::seeded(self.clock.raw().0);
                let nonce = format!("{:016x}", rng.next_u64());
                self.request(Class::NonMatching, |out| {
                    if send_secret {
                        requests::auth_client_credentials(out, id, &credentials.client_id, &secret);
                    } else {
                        requests::auth_client_signature(
                            out,
                            id,
                            &credentials.client_id,
                            &secret,
                            timestamp_ms,
                            &nonce,
                            "",
                        );
                    }
                });
            }
            None => self.after_auth(now),
        }
    }

    /// The connection is gone: orders in flight become unknown, trading pauses.
    pub(super) fn on_disconnect(&mut self) {
        let now = self.now();
        self.sync.connected = false;
        self.sync.authenticated = false;
        self.inflight.clear();
        self.recon.queries.clear();
        self.wire.clear();
        if self.sync.phase == Phase::Live {
            self.sync.phase = Phase::Syncing;
        }
        self.runner.set_paused(true);
        self.runner.on_disconnect(&self.books, now, &mut self.outbox);
        // Cancels the strategy asked for meanwhile wait for the next connection; nothing
        // else can go out while paused.
        let queued: Vec<Action> = self.outbox.drain().filter(Action::is_cancel).collect();
        for action in queued {
            self.defer(action);
        }
        self.runner.strategy_mut().record(Entry::Link { at: now, link: Link::Disconnected });
    }

    fn after_auth(&mut self, now: Mono) {
        if let Phase::Stopping(_) = self.sync.phase {
            // Reconnected while stopping: go straight back to cancelling, everywhere (what
            // the venue did meanwhile is unknown).
            self.stop_step_cancel(now, true);
            return;
        }
        let interval = self.config.heartbeat_s.max(10);
        let id = self.inflight.issue(Pending::Heartbeat);
        self.request(Class::NonMatching, |out| requests::set_heartbeat(out, id, interval));
        if self.sync.authenticated {
            if self.config.cancel_on_disconnect {
                let id = self.inflight.issue(Pending::CancelOnDisconnect);
                self.request(Class::NonMatching, |out| {
                    requests::enable_cancel_on_disconnect(out, id, CancelScope::Connection);
                });
            }
            let currency = self.currency(InstrumentId(0)).to_owned();
            let id = self.inflight.issue(Pending::AccountSummary);
            self.request(Class::NonMatching, |out| {
                encode_request(out, id, "private/get_account_summary", |p| {
                    p.str("currency", &currency).bool("extended", true);
                });
            });
        }
        let scope = self.scope();
        let channels: Vec<String> =
            self.instruments.book_channels.iter().chain(&self.instruments.private_channels).cloned().collect();
        // As many requests as it takes to stay within the venue's request limit (an options
        // maker on every strike has thousands of channels).
        let mut first = 0;
        for run in requests::channel_batches(&channels) {
            let (start, len) = (first as u32, run.len() as u32);
            let id = self.inflight.issue(Pending::Subscribe { first: start, len });
            self.request(Class::Subscribe, |out| requests::subscribe(out, id, scope, run.iter().map(String::as_str)));
            first += run.len();
        }
    }

    /// This host's clock, in ms since the Unix epoch.
    fn wall_ms(&self) -> u64 {
        (self.clock.utc().0 / 1_000_000).max(0) as u64
    }

    /// The currency Deribit files an instrument's orders under.
    fn currency(&self, instrument: InstrumentId) -> &str {
        let currency = self.instruments.spec(instrument).order_currency();
        if currency.is_empty() { "BTC" } else { currency }
    }

    pub(super) fn on_control_result(&mut self, pending: Pending, result: &[u8], now: Mono) {
        match pending {
            Pending::Auth => {
                self.sync.authenticated = true;
                self.after_auth(now);
            }
            Pending::AccountSummary => {
                if !self.config.adopt_account_limits {
                    return;
                }
                if let Some(limits) = account_limits(result) {
                    self.credits.adopt_client(limits, now.0);
                }
            }
            Pending::Subscribe { first, len } => {
                let confirmed: std::collections::HashSet<String> = serde_json::from_slice(result).unwrap_or_default();
                let missing: Vec<&String> = self
                    .instruments
                    .book_channels
                    .iter()
                    .chain(&self.instruments.private_channels)
                    .skip(first as usize)
                    .take(len as usize)
                    .filter(|c| !confirmed.contains(*c))
                    .collect();
                if !missing.is_empty() {
                    self.fatal = Some(LiveError::Refused {
                        what: "the subscriptions",
                        code: 0,
                        message: format!("not confirmed: {missing:?}"),
                    });
                    return;
                }
                // Subscribed once no other run is waiting for its answer.
                if self.inflight.any(|p| matches!(p, Pending::Subscribe { .. })) {
                    return;
                }
                self.sync.subscribed = true;
                if self.sync.authenticated {
                    self.start_reconcile(now);
                } else {
                    self.sync.reconciled = true;
                }
                self.maybe_live(now);
            }
            Pending::Resubscribe(_) | Pending::Unsubscribe | Pending::Heartbeat | Pending::CancelOnDisconnect => {}
            Pending::Test => {}
            Pending::OrderByLabel(_) => {
                self.apply_orders(result, now);
                self.reconcile_progress(now);
            }
            Pending::UserTrades(instrument) => {
                if self.apply_trades_result(result, now) {
                    self.request_trades(instrument);
                }
                self.reconcile_progress(now);
            }
            Pending::OpenOrders(instrument) => {
                self.apply_open_orders(result, |_, _| Some(instrument));
                self.reconcile_progress(now);
            }
            Pending::CurrencyOpenOrders(group) => {
                // Other instruments of the currency are not the session's: neither its order
                // state nor the stop's to cancel.
                self.apply_open_orders(result, |instruments, name| instruments.in_group(name, group));
                self.reconcile_progress(now);
            }
            Pending::Position(instrument) => {
                match position_of(result).and_then(|p| {
                    position_lots(self.instruments.spec(instrument), p.size.0)
                        .ok()
                        .map(|lots| (lots, p.average_price.0))
                }) {
                    Some((lots, avg)) => self.recon.positions.push((instrument, lots, avg)),
                    None => self.malformed("position"),
                }
                self.reconcile_progress(now);
            }
            Pending::CurrencyPositions(group) => {
                self.apply_positions(result, group);
                self.reconcile_progress(now);
            }
            Pending::CurrencyTrades { group, from_ms } => {
                if let Some((has_more, last_ms)) = self.apply_currency_trades(result, group, now) {
                    match (has_more, last_ms) {
                        // The next page starts at the last one's millisecond, included: trades
                        // of that millisecond the page had no room for are not skipped.
                        (true, Some(last)) if last > from_ms => {
                            self.query(Query::CurrencyTrades { group, from_ms: last });
                        }
                        // A full page within one millisecond: the window cannot move past it.
                        // The per-instrument catch-up pages by sequence number instead.
                        (true, _) => {
                            let members: Vec<InstrumentId> = self.instruments.members(group).collect();
                            members.into_iter().for_each(|i| self.request_trades(i));
                        }
                        (false, _) => {
                            let covered = &mut self.recon.trades.covered_ms[group.0 as usize];
                            *covered = (*covered).max(self.recon.trades.started_ms);
                        }
                    }
                }
                self.reconcile_progress(now);
            }
            Pending::Flatten(_) => {
                self.apply_result_trades_and_order(result, now);
                self.reconcile_progress(now);
            }
            Pending::Place(_) | Pending::Edit(_) | Pending::Cancel(_) | Pending::CancelAll => {}
        }
    }

    pub(super) fn on_control_error(&mut self, pending: Option<Pending>, code: i64, message: &str, now: Mono) {
        match pending {
            Some(Pending::Auth) => {
                self.fatal = Some(LiveError::Auth { code, message: message.to_owned() });
            }
            Some(Pending::Subscribe { .. }) => {
                self.fatal = Some(LiveError::Refused { what: "the subscriptions", code, message: message.to_owned() });
            }
            Some(Pending::CancelAll) => self.on_cancel_all_done(),
            Some(
                Pending::OrderByLabel(_)
                | Pending::UserTrades(_)
                | Pending::OpenOrders(_)
                | Pending::Position(_)
                | Pending::CurrencyTrades { .. }
                | Pending::CurrencyOpenOrders(_)
                | Pending::CurrencyPositions(_),
            ) => {
                // A query the venue refused (e.g. credits): the connection is reset and the
                // reconciliation starts over on the next one.
                tracing::warn!("reconciliation query refused: {code} {message}");
                self.lost = Some("a reconciliation query was refused");
            }
            Some(Pending::Flatten(_)) => {
                tracing::warn!("closing order refused: {code} {message}");
                self.reconcile_progress(now);
            }
            _ => tracing::warn!("venue error {code}: {message}"),
        }
    }

    /// A catch-up query's trades (`{"trades":[…],"has_more":…}`); only our labels are booked.
    /// Returns `has_more`.
    fn apply_trades_result(&mut self, result: &[u8], now: Mono) -> bool {
        let Core { runner, instruments, books, outbox, stats, last_trade_seq, .. } = self;
        let decoded = ticktrade_deribit_proto::report::decode_user_trades(result, |trade, _| {
            book_fill(runner, instruments, books, outbox, stats, last_trade_seq, &trade, now, true);
        });
        match decoded {
            Ok(has_more) => has_more,
            Err(_) => {
                self.malformed("user trades");
                false
            }
        }
    }

    /// An open orders answer: each order on an instrument `owner` names is counted, marked for
    /// the stop's next cancel round, and kept for the snapshot.
    fn apply_open_orders(
        &mut self,
        result: &[u8],
        owner: impl Fn(&super::wire::Instruments, &str) -> Option<InstrumentId>,
    ) {
        let Core { instruments, recon, stats, .. } = self;
        let decoded = ticktrade_deribit_proto::report::for_each_order(result, |order, _| {
            let Some(instrument) = owner(instruments, order.instrument_name) else { return };
            recon.venue_open += 1;
            // The stop's next cancel round covers this instrument.
            recon.cancel[instrument.0 as usize] = true;
            match order_report(&order, instruments) {
                Ok(report) => recon.open.push(report),
                Err(_) => stats.dropped_reports += 1,
            }
        });
        if decoded.is_err() {
            self.malformed("open orders");
        }
    }

    /// A `get_positions` answer: the group's instruments it lists, and a flat position for
    /// those it leaves out (Deribit lists only instruments with a position, or recently had).
    fn apply_positions(&mut self, result: &[u8], group: Group) {
        let Some(rows) = positions_of(result) else {
            self.malformed("positions");
            return;
        };
        let first = self.recon.positions.len();
        for row in &rows {
            let Some(instrument) = self.instruments.in_group(&row.instrument_name, group) else { continue };
            match position_lots(self.instruments.spec(instrument), row.size.0) {
                Ok(lots) => self.recon.positions.push((instrument, lots, row.average_price.0)),
                Err(_) => self.malformed("position"),
            }
        }
        let members: Vec<InstrumentId> = self.instruments.members(group).collect();
        for instrument in members {
            if !self.recon.positions[first..].iter().any(|(i, _, _)| *i == instrument) {
                self.recon.positions.push((instrument, 0, Decimal::ZERO));
            }
        }
    }

    /// One page of a currency's trades catch-up: the group's trades not seen before the
    /// catch-up began are booked (only our labels). Returns `has_more` and the page's newest
    /// trade time, or `None` if the answer does not decode.
    fn apply_currency_trades(&mut self, result: &[u8], group: Group, now: Mono) -> Option<(bool, Option<u64>)> {
        let Core { runner, instruments, books, outbox, stats, last_trade_seq, recon, .. } = self;
        let seen_before = &recon.trades.seen_before;
        let mut last_ms: Option<u64> = None;
        let decoded = ticktrade_deribit_proto::report::decode_user_trades(result, |trade, _| {
            last_ms = Some(last_ms.map_or(trade.timestamp, |ms| ms.max(trade.timestamp)));
            let Some(instrument) = instruments.in_group(trade.instrument_name, group) else { return };
            if seen_before.get(instrument.0 as usize).copied().flatten().is_some_and(|seq| trade.trade_seq <= seq) {
                return;
            }
            book_fill(runner, instruments, books, outbox, stats, last_trade_seq, &trade, now, true);
        });
        match decoded {
            Ok(has_more) => Some((has_more, last_ms)),
            Err(_) => {
                self.malformed("user trades");
                None
            }
        }
    }

    /// A closing order's result: its trades change the position.
    fn apply_result_trades_and_order(&mut self, result: &[u8], now: Mono) {
        let Core { runner, instruments, books, outbox, stats, last_trade_seq, .. } = self;
        let decoded = ticktrade_deribit_proto::report::decode_order_result(result, |trade, _| {
            book_fill(runner, instruments, books, outbox, stats, last_trade_seq, &trade, now, false);
        });
        if decoded.is_err() {
            self.malformed("closing order result");
        }
    }

    fn request_trades(&mut self, instrument: InstrumentId) {
        self.query(Query::UserTrades(instrument));
    }

    /// Trades missed since the last ones seen: a time window of each currency group (a page
    /// per `trades_page` trades of the account in it, not a request per instrument), and the
    /// per-instrument query of the instruments in no group.
    fn catch_up_trades(&mut self) {
        let now_ms = self.wall_ms();
        let catch_up = &mut self.recon.trades;
        catch_up.started_ms = now_ms;
        catch_up.seen_before.clone_from(&self.last_trade_seq);
        let groups: Vec<Query> = (0u16..)
            .zip(&catch_up.covered_ms)
            .map(|(g, covered)| Query::CurrencyTrades {
                group: Group(g),
                from_ms: covered.saturating_sub(CLOCK_MARGIN_MS),
            })
            .collect();
        for query in groups {
            self.query(query);
        }
        for i in 0..self.instruments.len() {
            if self.instruments.group[i].is_none() {
                self.request_trades(InstrumentId(i as u32));
            }
        }
    }

    /// Queues a query; it goes out as soon as the venue's non-matching credits allow
    /// (`send_queries`), so a session on many instruments never gets `too_many_requests` back
    /// for its own reconciliation.
    fn query(&mut self, query: Query) {
        self.recon.queries.push_back(query);
        self.send_queries(self.now());
    }

    /// Sends queued queries while credits last (and from housekeeping as they refill).
    pub(super) fn send_queries(&mut self, now: Mono) {
        while self.sync.connected {
            let Some(&query) = self.recon.queries.front() else { return };
            if !self.credits.try_take_keeping(Class::NonMatching, now.0, QUERY_HEADROOM) {
                return;
            }
            self.recon.queries.pop_front();
            self.stats.queries += 1;
            let id = self.inflight.issue(query.pending());
            let name = match query {
                Query::UserTrades(i) | Query::OpenOrders(i) | Query::Position(i) => {
                    self.instruments.spec(i).name.clone()
                }
                Query::CurrencyTrades { group: g, .. } | Query::CurrencyOpenOrders(g) | Query::CurrencyPositions(g) => {
                    self.instruments.currencies[g.0 as usize].clone()
                }
            };
            let start = match query {
                Query::UserTrades(i) => self.last_trade_seq[i.0 as usize].map(|s| s + 1),
                _ => None,
            };
            let page = self.config.trades_page.clamp(1, 1000);
            self.encode_request(|out| match query {
                Query::UserTrades(_) => match start {
                    Some(seq) => requests::get_user_trades_by_instrument(out, id, &name, Some(seq), Some(1000), true),
                    // Never saw a trade here: the newest hundred (only our labels are booked).
                    None => requests::get_user_trades_by_instrument(out, id, &name, None, Some(100), false),
                },
                Query::OpenOrders(_) => requests::get_open_orders_by_instrument(out, id, &name),
                Query::Position(_) => requests::get_position(out, id, &name),
                // Oldest first from the window's start, as many as a request may return: each
                // page starts where the last one ended, so none is skipped (`CurrencyTrades`).
                Query::CurrencyTrades { from_ms, .. } => {
                    requests::get_user_trades_by_currency(out, id, &name, Some(from_ms), Some(page), true)
                }
                Query::CurrencyOpenOrders(_) => requests::get_open_orders_by_currency(out, id, &name),
                Query::CurrencyPositions(_) => requests::get_positions(out, id, &name),
            });
        }
    }

    /// Step 1: the fate of orders a disconnect left unknown, and trades missed meanwhile.
    fn start_reconcile(&mut self, now: Mono) {
        self.recon.stage = 1;
        let unknown: Vec<(Label, InstrumentId)> = self
            .runner
            .orders()
            .live()
            .filter(|o| o.status == OrderStatus::Unknown)
            .map(|o| (o.label, o.instrument))
            .collect();
        for (label, instrument) in unknown {
            let currency = self.currency(instrument).to_owned();
            let id = self.inflight.issue(Pending::OrderByLabel(label));
            let tag =
                ticktrade_deribit_proto::order::Label::new(label.as_bytes()).map_or(OrderTag::None, OrderTag::Text);
            self.request(Class::NonMatching, |out| requests::get_order_state_by_label(out, id, &currency, tag));
        }
        if self.sync.ever_live {
            self.catch_up_trades();
        }
        self.reconcile_progress(now);
    }

    /// Moves reconciliation (or the stop sequence) on once the current step's answers are in.
    fn reconcile_progress(&mut self, now: Mono) {
        let waiting = |p: &Pending| {
            matches!(
                p,
                Pending::OrderByLabel(_)
                    | Pending::UserTrades(_)
                    | Pending::OpenOrders(_)
                    | Pending::Position(_)
                    | Pending::CurrencyTrades { .. }
                    | Pending::CurrencyOpenOrders(_)
                    | Pending::CurrencyPositions(_)
                    | Pending::Flatten(_)
            )
        };
        if self.inflight.any(waiting) || !self.recon.queries.is_empty() {
            return;
        }
        match self.sync.phase {
            Phase::Stopping(StopStep::Verify) => return self.stop_verified(now),
            Phase::Stopping(StopStep::Trades) => return self.stop_trades_done(),
            Phase::Stopping(StopStep::Flatten) => return self.stop_flatten(now),
            Phase::Stopping(StopStep::Cancel) | Phase::Done | Phase::Live => return,
            Phase::Syncing => {}
        }
        match self.recon.stage {
            1 => {
                self.recon.stage = 2;
                self.recon.open.clear();
                self.recon.positions.clear();
                self.query_venue(true, true);
            }
            2 => {
                self.recon.stage = 0;
                let open = std::mem::take(&mut self.recon.open);
                let positions = std::mem::take(&mut self.recon.positions);
                self.runner.apply_snapshot(&open, &positions, &self.books, now, &mut self.outbox);
                self.recon.open = open;
                self.recon.positions = positions;
                self.sync.reconciled = true;
                self.maybe_live(now);
            }
            _ => {}
        }
    }

    /// Asks the venue for the open orders and/or positions of every instrument: one request
    /// per currency group, one per instrument in none.
    fn query_venue(&mut self, open_orders: bool, positions: bool) {
        if open_orders {
            self.recon.venue_open = 0;
        }
        for g in 0..self.instruments.currencies.len() {
            let group = Group(g as u16);
            if open_orders {
                self.query(Query::CurrencyOpenOrders(group));
            }
            if positions {
                self.query(Query::CurrencyPositions(group));
            }
        }
        for i in 0..self.instruments.len() {
            let instrument = InstrumentId(i as u32);
            if self.instruments.group[i].is_some() {
                continue;
            }
            if open_orders {
                self.query(Query::OpenOrders(instrument));
            }
            if positions {
                self.query(Query::Position(instrument));
            }
        }
    }

    /// Trading (re)starts when the books are resynced, the private subscriptions confirmed and
    /// the orders reconciled.
    pub(super) fn maybe_live(&mut self, now: Mono) {
        let ready = self.sync.connected
            && self.sync.subscribed
            && self.sync.reconciled
            && self.sync.books_ok.iter().all(|ok| *ok);
        if self.sync.phase != Phase::Syncing || !ready {
            return;
        }
        self.sync.phase = Phase::Live;
        self.sync.ever_live = true;
        self.runner.set_paused(false);
        self.last_book.iter_mut().for_each(|t| *t = now);
        self.runner.strategy_mut().record(Entry::Link { at: now, link: Link::Live });
    }

    /// The kill switch: nothing but cancels from now on; then the stop steps.
    pub(super) fn begin_stop(&mut self, why: Blocked, now: Mono) {
        self.recon.stop_why = Some(self.runner.risk().killed().unwrap_or(why));
        self.recon.deadline = Some(Mono(now.0 + self.config.shutdown_timeout.as_nanos() as u64));
        self.runner.strategy_mut().record(Entry::Kill { at: now, why: self.recon.stop_why.unwrap_or(why) });
        self.runner.set_paused(true);
        self.runner.kill(why, &mut self.outbox);
        // The kill queued a cancel-all; the stop steps send their own.
        self.outbox.clear();
        self.deferred.clear();
        self.sync.phase = Phase::Stopping(StopStep::Cancel);
        if self.config.credentials.is_none() || self.config.dry_run {
            self.sync.phase = Phase::Done;
            return;
        }
        // The first round covers the instruments our live orders (pending ones included) are
        // on; before the first reconciliation a previous run's orders may be anywhere.
        self.recon.cancel.iter_mut().for_each(|c| *c = false);
        for order in self.runner.orders().live() {
            self.recon.cancel[order.instrument.0 as usize] = true;
        }
        if self.sync.authenticated {
            self.stop_step_cancel(now, !self.sync.ever_live);
        }
    }

    /// One cancel round of the stop: a `cancel_all_by_instrument` for every instrument
    /// (`all`) or for those marked in `recon.cancel`, paced by the matching-engine credits
    /// (what cannot go now waits in `deferred`, sent between frames as credits come back): a
    /// burst of one per instrument on hundreds of instruments got the connection dropped.
    /// The verify step that follows marks the instruments where the venue still lists open
    /// orders, of any client, for the next round.
    fn stop_step_cancel(&mut self, now: Mono, all: bool) {
        self.sync.phase = Phase::Stopping(StopStep::Cancel);
        for i in 0..self.instruments.len() {
            if std::mem::take(&mut self.recon.cancel[i]) || all {
                self.send_or_defer(Action::CancelAll { instrument: Some(InstrumentId(i as u32)) }, now);
            }
        }
        // Nothing to cancel: verify at once.
        self.on_cancel_all_done();
    }

    pub(super) fn on_cancel_all_done(&mut self) {
        let waiting = self.inflight.any(|p| *p == Pending::CancelAll)
            || self.deferred.iter().any(|a| matches!(a, Action::CancelAll { .. }));
        if self.sync.phase != Phase::Stopping(StopStep::Cancel) || waiting {
            return;
        }
        self.sync.phase = Phase::Stopping(StopStep::Verify);
        self.recon.open.clear();
        self.query_venue(true, false);
    }

    fn stop_verified(&mut self, now: Mono) {
        if self.recon.venue_open > 0 {
            // Something was placed or triggered meanwhile: cancel again where it is.
            self.stop_step_cancel(now, false);
            return;
        }
        let open = std::mem::take(&mut self.recon.open);
        self.runner.apply_snapshot(&open, &[], &self.books, now, &mut self.outbox);
        self.recon.open = open;
        self.outbox.clear();
        // Trades can be reported after the cancel-all's answer: catch up from the last one seen
        // before reporting fills and positions.
        self.sync.phase = Phase::Stopping(StopStep::Trades);
        self.catch_up_trades();
        self.reconcile_progress(now);
    }

    fn stop_trades_done(&mut self) {
        if self.config.flatten {
            self.sync.phase = Phase::Stopping(StopStep::Flatten);
            self.recon.positions.clear();
            self.query_venue(false, true);
        } else {
            self.sync.phase = Phase::Done;
        }
    }

    /// Positions are in: close what is open with reduce-only market orders, then look again.
    fn stop_flatten(&mut self, now: Mono) {
        let positions = std::mem::take(&mut self.recon.positions);
        let open: Vec<(InstrumentId, i64)> =
            positions.iter().filter(|(_, lots, _)| *lots != 0).map(|(i, lots, _)| (*i, *lots)).collect();
        let snapshot: Vec<(InstrumentId, i64, Decimal)> = positions.clone();
        self.recon.positions = positions;
        self.runner.apply_snapshot(&[], &snapshot, &self.books, now, &mut self.outbox);
        self.outbox.clear();
        if open.is_empty() {
            self.sync.phase = Phase::Done;
            return;
        }
        for (instrument, lots) in open {
            let side = closing_side(lots);
            let qty = ticktrade_core::Qty::from_raw(lots.abs());
            let id = self.inflight.issue(Pending::Flatten(instrument));
            let order = WireOrder {
                side,
                kind: OrderKind::Market,
                qty,
                label: OrderTag::None,
                time_in_force: TimeInForce::ImmediateOrCancel,
                post_only: false,
                reject_post_only: false,
                reduce_only: true,
            };
            let _ = self.credits.try_take(Class::Matching, now.0);
            let encoder = self.encoders[instrument.0 as usize].clone();
            self.request(Class::Matching, |out| encoder.encode_order(out, id, &order));
            self.runner.strategy_mut().record(Entry::Flatten { at: now, instrument, side, qty });
        }
        self.recon.positions.clear();
        self.query_venue(false, true);
    }

    /// Gives up stopping at the deadline.
    pub(super) fn stop_deadline(&mut self, now: Mono) {
        if self.recon.deadline.is_some_and(|d| now >= d) {
            self.sync.phase = Phase::Done;
            self.recon.deadline = None;
            self.recon.stage = u8::MAX;
        }
    }

    pub(super) fn report(&mut self) -> LiveReport {
        self.flush_journal();
        let names: Vec<String> = self.instruments.specs.iter().map(|s| s.name.clone()).collect();
        let orders = self.runner.orders();
        let positions: Vec<(String, i64)> = names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.clone(), orders.position(InstrumentId(i as u32)).qty().raw()))
            .collect();
        let pnl = names
            .iter()
            .enumerate()
            .map(|(i, name)| (name.clone(), self.runner.pnl(InstrumentId(i as u32), &self.books)))
            .collect();
        let incomplete = self.recon.stage == u8::MAX;
        let exit = if incomplete {
            Exit::Incomplete {
                open_orders: self.recon.venue_open.max(orders.live().count()),
                positions: positions.iter().filter(|(_, l)| *l != 0).cloned().collect(),
            }
        } else {
            Exit::Clean
        };
        LiveReport { exit, stats: self.stats, positions, pnl, kill: self.recon.stop_why }
    }
}

/// The account's matching-engine and non-matching limits from `get_account_summary`'s
/// `limits` (`{"matching_engine":{"trading":{"total":{"rate":…,"burst":…}}},
/// "non_matching_engine":{"rate":…,"burst":…}}`), as credit rules.
pub(super) fn account_limits(result: &[u8]) -> Option<RateLimits> {
    let value: serde_json::Value = serde_json::from_slice(result).ok()?;
    let limits = value.get("limits")?;
    let rule = |v: &serde_json::Value, base: Rule| -> Option<Rule> {
        let rate = v.get("rate")?.as_u64()?;
        let burst = v.get("burst")?.as_u64()?;
        // A venue's figures are input: huge ones saturate rather than overflow.
        (rate > 0 && burst > 0).then(|| Rule {
            cost: base.cost,
            max: base.cost.saturating_mul(burst),
            refill_per_s: base.cost.saturating_mul(rate),
        })
    };
    let defaults = RateLimits::client_default();
    let matching = limits
        .get("matching_engine")
        .and_then(|m| m.get("trading").and_then(|t| t.get("total")).or_else(|| m.get("total")))
        .and_then(|v| rule(v, defaults.matching));
    let non_matching = limits.get("non_matching_engine").and_then(|v| rule(v, defaults.non_matching));
    Some(RateLimits {
        matching: matching.unwrap_or(defaults.matching),
        non_matching: non_matching.unwrap_or(defaults.non_matching),
        subscribe: defaults.subscribe,
    })
}

/// The members of Deribit's position object the session reads, exact.
#[derive(serde::Deserialize)]
struct PositionRow {
    #[serde(default)]
    instrument_name: String,
    size: Num,
    average_price: Num,
}

/// `get_position`'s result: one position object.
fn position_of(result: &[u8]) -> Option<PositionRow> {
    serde_json::from_slice(result).ok()
}

/// `get_positions`' result: an array of position objects.
fn positions_of(result: &[u8]) -> Option<Vec<PositionRow>> {
    serde_json::from_slice(result).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn account_limits_become_credit_rules() {
        let result = br#"{"currency":"BTC","limits":{"limits_per_currency":false,"non_matching_engine":{"burst":100,"rate":20},"matching_engine":{"trading":{"total":{"burst":50,"rate":20}},"cancel_all":{"burst":50,"rate":20}}}}"#;
        let limits = account_limits(result).unwrap();
        assert_eq!(limits.matching, Rule::MATCHING_TIER_2);
        assert_eq!(limits.non_matching, Rule::NON_MATCHING);
        assert_eq!(account_limits(br#"{"currency":"BTC"}"#), None);
        // An unlimited venue's figures saturate instead of overflowing.
        let m = u64::MAX;
        let huge =
            format!(r#"{{"limits":{{"matching_engine":{{"trading":{{"total":{{"burst":{m},"rate":{m}}}}}}}}}}}"#);
        let limits = account_limits(huge.as_bytes()).unwrap();
        assert_eq!(limits.matching.max, u64::MAX);
    }

    #[test]
    fn positions_are_read_exactly() {
        let p = position_of(br#"{"size":-30,"average_price":64250.5,"kind":"future"}"#).unwrap();
        assert_eq!(p.size.0, Decimal::from_int(-30));
        assert_eq!(p.average_price.0, Decimal::parse("64250.5").unwrap());
        let rows = positions_of(br#"[{"instrument_name":"BTC-PERPETUAL","size":50,"average_price":7440.18,"kind":"future"},{"instrument_name":"BTC-27DEC24","size":0,"average_price":0}]"#).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].instrument_name.as_str(), rows[0].size.0), ("BTC-PERPETUAL", Decimal::from_int(50)));
        assert!(positions_of(br#"{"size":1}"#).is_none());
    }
}
