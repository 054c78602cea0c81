//! The session's control path: what happens on connect and disconnect, the answers to
//! control requests (auth, heartbeat, cancel-on-disconnect, account limits, subscriptions),
//! and reconciliation after a (re)connect; the stop sequence is `stop`.
//!
//! Owns: the order of the sync steps and the three conditions of going live (books resynced,
//! private subscriptions confirmed, orders reconciled). Subscriptions go out in runs that each
//! stay under the venue's 32 kB request limit (`requests::channel_batches`).
//! Must not: run on the timed path (these are answers to rare requests; they may allocate),
//! or resend an order: a place whose answer was lost is looked up by its label, never sent
//! again.

use ticktrade_core::{Clock, InstrumentId, Mono, SplitMix64};
use ticktrade_deribit_proto::envelope::encode_request;
use ticktrade_deribit_proto::order::OrderTag;
use ticktrade_deribit_proto::ratelimit::{Class, RateLimits, Rule};
use ticktrade_deribit_proto::requests::{self, CancelScope};
use ticktrade_deribit_proto::signature::Secret;
use ticktrade_strategy::{Action, Label, Status as OrderStatus, Strategy};

use super::journal::{Entry, Link};
use super::session::{Core, Exit, LiveError, LiveReport, Phase, StopStep, book_fill};
use super::wire::Pending;

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
        self.start_trades_window();
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
                self.apply_position(result, instrument);
                self.reconcile_progress(now);
            }
            Pending::CurrencyPositions(group) => {
                self.apply_positions(result, group);
                self.reconcile_progress(now);
            }
            Pending::CurrencyTrades { group, from_ms } => {
                self.on_currency_trades(result, group, from_ms, now);
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
            Some(p) if p.is_reconciliation_query() => {
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
    pub(super) fn reconcile_progress(&mut self, now: Mono) {
        let waiting = |p: &Pending| p.is_reconciliation_query() || matches!(p, Pending::Flatten(_));
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
}
