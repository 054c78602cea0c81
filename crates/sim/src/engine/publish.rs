//! Subscriptions and fan-out: who gets which notification, snapshots first, changes chained.
//!
//! Owns: per-session channel sets (names parsed by `ticktrade_deribit_proto::channel` and
//! resolved against the catalogue), per-channel session lists, the aggregated book state of
//! each `100ms`/`agg2` book channel (so its `prev_change_id` chain is its own), grouped-book
//! windows, ticker/quote change detection, and the reorder buffer of the change faults.
//! Everything published comes from the exchange's events (`ticktrade_exchange::Event`);
//! book frames are laid out by `ticktrade_deribit_proto::book::encode_book_units`.
//! Must not: await. Every send is `try_send` on the session's bounded queue; a full queue
//! kills that session with a reason.
//!
//! Simplifications (documented in the crate header): `trades.*` and `user.*` channels with a
//! `100ms`/`agg2` interval are sent per event (as arrays), not batched; `incremental_ticker`
//! changes carry every ticker field, not only the changed ones.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ticktrade_core::{InstrumentId, Price, Qty, Side, Utc};
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_deribit_proto::book::{Action, BookHeader, BookKind, LevelUpdate, encode_book_units};
use ticktrade_deribit_proto::channel::{Channel, Group, Interval, Target};
use ticktrade_exchange::{BookAction, Event};

use super::{Outbound, SessionTx, SubscribeRequest};
use crate::clock::SimClock;
use crate::fault::{ChangeAction, FaultLog, Faults};
use crate::market::{AccountId, Market, money};
use crate::rpc::{self, RpcError, Timing};

/// Which instruments a `trades.*` or `user.*` channel covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    Instrument(InstrumentId),
    /// `kind` and `currency` as given (`any` matches all).
    KindCurrency {
        kind: String,
        currency: String,
    },
}

/// A channel name resolved against the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sub {
    Book {
        instr: InstrumentId,
        interval: Interval,
    },
    /// `group` in price units (0 = none).
    GroupedBook {
        instr: InstrumentId,
        group: u16,
        depth: usize,
        interval: Interval,
    },
    Trades {
        selector: Selector,
        interval: Interval,
    },
    Ticker {
        instr: InstrumentId,
        interval: Interval,
    },
    IncrementalTicker {
        instr: InstrumentId,
    },
    Quote {
        instr: InstrumentId,
    },
    PriceIndex {
        index: String,
    },
    UserOrders {
        selector: Selector,
        interval: Interval,
    },
    UserTrades {
        selector: Selector,
        interval: Interval,
    },
    UserChanges {
        selector: Selector,
        interval: Interval,
    },
    UserPortfolio {
        currency: String,
    },
}

impl Sub {
    /// Parses and resolves a channel name; unknown names, instruments and indexes are `None`
    /// (dropped from the subscribe result, as Deribit does).
    pub fn resolve(market: &Market, name: &str) -> Option<Sub> {
        let channel = Channel::parse(name)?;
        let instr = |n: &str| market.find(n);
        let selector = |target: Target<'_>| -> Option<Selector> {
            match target {
                Target::Instrument(n) => Some(Selector::Instrument(instr(n)?)),
                Target::KindCurrency { kind, currency } => {
                    let known = currency.eq_ignore_ascii_case("any")
                        || market.currency_names().iter().any(|c| c.as_str() == currency);
                    known.then(|| Selector::KindCurrency { kind: kind.to_owned(), currency: currency.to_owned() })
                }
            }
        };
        Some(match channel {
            Channel::Book { instrument, interval } => Sub::Book { instr: instr(instrument)?, interval },
            Channel::GroupedBook { instrument, group, depth, interval } => Sub::GroupedBook {
                instr: instr(instrument)?,
                group: match group {
                    Group::None => 0,
                    Group::By(n) => n,
                },
                depth: usize::from(depth.levels()),
                interval,
            },
            Channel::Trades { target, interval } => Sub::Trades { selector: selector(target)?, interval },
            Channel::Ticker { instrument, interval } => Sub::Ticker { instr: instr(instrument)?, interval },
            Channel::IncrementalTicker { instrument } => Sub::IncrementalTicker { instr: instr(instrument)? },
            Channel::Quote { instrument } => Sub::Quote { instr: instr(instrument)? },
            Channel::PriceIndex { index_name } => {
                market.index_price(index_name)?;
                Sub::PriceIndex { index: index_name.to_owned() }
            }
            Channel::Perpetual { .. } => return None,
            Channel::UserOrders { target, interval } => Sub::UserOrders { selector: selector(target)?, interval },
            Channel::UserTrades { target, interval } => Sub::UserTrades { selector: selector(target)?, interval },
            Channel::UserChanges { target, interval } => Sub::UserChanges { selector: selector(target)?, interval },
            Channel::UserPortfolio { currency } => {
                let upper = currency.to_ascii_uppercase();
                let known = upper == "ANY" || market.currency_names().contains(&upper);
                known.then_some(Sub::UserPortfolio { currency: upper })?
            }
        })
    }

    /// `user.*` channels need an authenticated session.
    pub fn is_private(&self) -> bool {
        matches!(
            self,
            Sub::UserOrders { .. } | Sub::UserTrades { .. } | Sub::UserChanges { .. } | Sub::UserPortfolio { .. }
        )
    }

    /// Public `raw` channels need an authenticated session (error 13778).
    pub fn is_public_raw(&self) -> bool {
        matches!(
            self,
            Sub::Book { interval: Interval::Raw, .. }
                | Sub::GroupedBook { interval: Interval::Raw, .. }
                | Sub::Trades { interval: Interval::Raw, .. }
                | Sub::Ticker { interval: Interval::Raw, .. }
        )
    }

    /// The one instrument a public channel is about.
    fn instrument(&self) -> Option<InstrumentId> {
        match self {
            Sub::Book { instr, .. }
            | Sub::GroupedBook { instr, .. }
            | Sub::Ticker { instr, .. }
            | Sub::IncrementalTicker { instr }
            | Sub::Quote { instr } => Some(*instr),
            _ => None,
        }
    }
}

struct SessionEntry {
    tx: SessionTx,
    account: Option<AccountId>,
    /// Channel name → (resolved channel, label).
    channels: HashMap<String, (Sub, Option<String>)>,
}

/// Best bid and best ask.
type Top = (Option<(Price, Qty)>, Option<(Price, Qty)>);

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Ladder {
    bids: BTreeMap<Price, Qty>,
    asks: BTreeMap<Price, Qty>,
    change_id: i64,
}

/// What one batch of exchange events did for one account on one instrument.
struct UserBatch {
    account: AccountId,
    instr: InstrumentId,
    orders: Vec<api::Order>,
    trades: Vec<api::UserTrade>,
    position: bool,
}

#[derive(Default)]
pub struct Subscriptions {
    sessions: HashMap<u64, SessionEntry>,
    by_channel: HashMap<String, (Sub, Vec<u64>)>,
    /// Aggregated book channels: what their subscribers have been sent.
    aggs: HashMap<String, Ladder>,
    /// Last data sent on grouped-book and ticker channels (to send only on change).
    last_sent: HashMap<String, String>,
    quote_last: HashMap<InstrumentId, Top>,
    held: HashMap<String, Arc<str>>,
    /// Scratch: level changes of the current book batch.
    levels: Vec<LevelUpdate>,
    frame: Vec<u8>,
}

fn ladder_of(market: &Market, instr: InstrumentId) -> Ladder {
    Ladder {
        bids: market.levels(instr, Side::Buy, usize::MAX).into_iter().collect(),
        asks: market.levels(instr, Side::Sell, usize::MAX).into_iter().collect(),
        change_id: market.change_id(instr),
    }
}

fn to_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn new_level(side: Side, price: Price, qty: Qty) -> LevelUpdate {
    LevelUpdate { side, action: Action::New, price, qty }
}

/// A whole `book.*` frame.
#[allow(clippy::too_many_arguments)]
fn book_frame(
    out: &mut Vec<u8>,
    market: &Market,
    channel: &str,
    instr: InstrumentId,
    kind: BookKind,
    change_id: i64,
    prev_change_id: Option<i64>,
    timestamp_ms: i64,
    levels: &[LevelUpdate],
) -> Arc<str> {
    out.clear();
    let header = BookHeader {
        channel,
        instrument: market.name(instr),
        kind,
        change_id: change_id.max(0) as u64,
        prev_change_id: prev_change_id.map(|p| p.max(0) as u64),
        timestamp_ms: timestamp_ms.max(0) as u64,
    };
    encode_book_units(out, &header, market.spec(instr), levels);
    Arc::from(String::from_utf8_lossy(out).as_ref())
}

fn snapshot_levels(ladder: &Ladder) -> Vec<LevelUpdate> {
    let bids = ladder.bids.iter().rev().map(|(p, q)| new_level(Side::Buy, *p, *q));
    let asks = ladder.asks.iter().map(|(p, q)| new_level(Side::Sell, *p, *q));
    bids.chain(asks).collect()
}

fn diff_side(side: Side, old: &BTreeMap<Price, Qty>, new: &BTreeMap<Price, Qty>, out: &mut Vec<LevelUpdate>) {
    for (price, qty) in old {
        match new.get(price) {
            None => out.push(LevelUpdate { side, action: Action::Delete, price: *price, qty: Qty::ZERO }),
            Some(q) if q != qty => out.push(LevelUpdate { side, action: Action::Change, price: *price, qty: *q }),
            _ => {}
        }
    }
    for (price, qty) in new {
        if !old.contains_key(price) {
            out.push(new_level(side, *price, *qty));
        }
    }
}

fn selector_matches(market: &Market, selector: &Selector, instr: InstrumentId) -> bool {
    match selector {
        Selector::Instrument(i) => *i == instr,
        Selector::KindCurrency { kind, currency } => {
            market.kind_matches(instr, kind) && market.currency_matches(instr, currency)
        }
    }
}

/// Groups levels into buckets `width` ticks wide (bids down, asks up) and keeps the top `depth`.
fn grouped(levels: Vec<(Price, Qty)>, side: Side, width: i64, depth: usize) -> Vec<(Price, Qty)> {
    let mut out: Vec<(Price, Qty)> = Vec::new();
    for (price, qty) in levels {
        let raw = price.raw();
        let bucket = match side {
            Side::Buy => raw.div_euclid(width) * width,
            Side::Sell => -((-raw).div_euclid(width) * width),
        };
        match out.last_mut() {
            Some((p, q)) if p.raw() == bucket => *q += qty,
            _ => {
                if out.len() == depth {
                    break;
                }
                out.push((Price::from_raw(bucket), qty));
            }
        }
    }
    out
}

impl Subscriptions {
    pub fn register(&mut self, session: u64, tx: SessionTx) {
        self.sessions.insert(session, SessionEntry { tx, account: None, channels: HashMap::new() });
    }

    pub fn unregister(&mut self, session: u64) {
        if let Some(entry) = self.sessions.remove(&session) {
            for name in entry.channels.keys() {
                self.drop_sub(name, session);
            }
        }
    }

    fn drop_sub(&mut self, name: &str, session: u64) {
        if let Some((_, list)) = self.by_channel.get_mut(name) {
            list.retain(|s| *s != session);
            if list.is_empty() {
                self.by_channel.remove(name);
                self.aggs.remove(name);
                self.last_sent.remove(name);
                self.held.remove(name);
            }
        }
    }

    pub fn session_count(&self) -> usize {
        self.sessions.len()
    }

    pub fn session_ids(&self, only: Option<u64>) -> Vec<u64> {
        match only {
            Some(id) => self.sessions.contains_key(&id).then_some(id).into_iter().collect(),
            None => self.sessions.keys().copied().collect(),
        }
    }

    pub fn kill(&self, session: u64, code: u16, reason: &str) {
        if let Some(entry) = self.sessions.get(&session) {
            entry.tx.kill.fire(code, reason);
        }
    }

    pub fn close_all(&self, code: u16, reason: &str) {
        for entry in self.sessions.values() {
            entry.tx.kill.fire(code, reason);
        }
    }

    /// Queues a frame; a full queue disconnects the session (never buffers without limit).
    pub fn send_text(&self, session: u64, text: Arc<str>) -> bool {
        let Some(entry) = self.sessions.get(&session) else { return false };
        match entry.tx.tx.try_send(Outbound::Text(text)) {
            Ok(()) => true,
            Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!(session, "slow consumer: outbound queue full, disconnecting");
                entry.tx.kill.fire(4003, "slow consumer: outbound queue full");
                false
            }
            Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => false,
        }
    }

    fn send_all(&self, channel: &str, text: &Arc<str>) {
        if let Some((_, list)) = self.by_channel.get(channel) {
            for session in list {
                self.send_text(*session, text.clone());
            }
        }
    }

    /// `public/subscribe` / `private/subscribe`: validates, answers, then sends first data.
    pub fn subscribe(
        &mut self,
        market: &Market,
        now: Utc,
        clock: &SimClock,
        request: SubscribeRequest,
        testnet: bool,
    ) -> Result<(), RpcError> {
        let session = request.session;
        let parsed: Vec<(String, Sub)> =
            request.channels.iter().filter_map(|name| Sub::resolve(market, name).map(|c| (name.clone(), c))).collect();
        if request.account.is_none() {
            if parsed.iter().any(|(_, c)| c.is_private()) {
                return Err(RpcError::unauthorized());
            }
            if parsed.iter().any(|(_, c)| c.is_public_raw()) {
                return Err(RpcError::new(13778, "raw_subscriptions_not_available_for_unauthorized"));
            }
        }
        let Some(entry) = self.sessions.get_mut(&session) else { return Err(RpcError::new(13008, "request_failed")) };
        entry.account = request.account.or(entry.account);
        let mut fresh = Vec::new();
        let mut accepted = Vec::with_capacity(parsed.len());
        for (name, channel) in parsed {
            accepted.push(name.clone());
            if entry.channels.contains_key(&name) {
                continue;
            }
            entry.channels.insert(name.clone(), (channel.clone(), request.label.clone()));
            fresh.push((name, channel));
        }
        for (name, channel) in &fresh {
            self.by_channel.entry(name.clone()).or_insert_with(|| (channel.clone(), Vec::new())).1.push(session);
        }
        let timing = Timing { us_in: request.us_in, us_out: clock.micros() };
        let response = rpc::response(request.id.as_deref(), &to_text(&accepted), timing, testnet);
        self.send_text(session, Arc::from(response));
        let now_ms = now.as_millis();
        for (name, channel) in fresh {
            match channel {
                Sub::Book { instr, interval } => {
                    let ladder = if interval == Interval::Raw {
                        ladder_of(market, instr)
                    } else {
                        // Bring existing subscribers up to date first, so one chain serves all.
                        self.flush_book_agg(market, &name, instr);
                        self.aggs.entry(name.clone()).or_insert_with(|| ladder_of(market, instr)).clone()
                    };
                    let levels = snapshot_levels(&ladder);
                    let ts = market.last_change_ms(instr);
                    let mut frame = std::mem::take(&mut self.frame);
                    let text = book_frame(
                        &mut frame,
                        market,
                        &name,
                        instr,
                        BookKind::Snapshot,
                        ladder.change_id,
                        None,
                        ts,
                        &levels,
                    );
                    self.frame = frame;
                    self.send_text(session, text);
                }
                Sub::GroupedBook { instr, group, depth, .. } => {
                    let text = self.grouped_window(market, &name, instr, group, depth);
                    self.send_text(session, Arc::from(text));
                }
                Sub::IncrementalTicker { instr } => {
                    let data = incremental(&market.ticker(instr, now_ms), "snapshot");
                    self.send_text(session, Arc::from(rpc::notification(&name, &data, None)));
                }
                _ => {}
            }
        }
        Ok(())
    }

    pub fn unsubscribe(
        &mut self,
        session: u64,
        channels: Option<Vec<String>>,
        id: Option<String>,
        us_in: i64,
        clock: &SimClock,
        testnet: bool,
    ) {
        let Some(entry) = self.sessions.get_mut(&session) else { return };
        let names: Vec<String> = match &channels {
            Some(list) => list.iter().filter(|n| entry.channels.contains_key(*n)).cloned().collect(),
            None => entry.channels.keys().cloned().collect(),
        };
        for name in &names {
            entry.channels.remove(name);
        }
        for name in &names {
            self.drop_sub(name, session);
        }
        let result = if channels.is_some() { to_text(&names) } else { "\"ok\"".to_owned() };
        let timing = Timing { us_in, us_out: clock.micros() };
        self.send_text(session, Arc::from(rpc::response(id.as_deref(), &result, timing, testnet)));
    }

    fn channels_of(&self, instr: InstrumentId) -> Vec<(String, Sub)> {
        self.by_channel
            .iter()
            .filter(|(_, (c, _))| c.instrument() == Some(instr))
            .map(|(n, (c, _))| (n.clone(), c.clone()))
            .collect()
    }

    /// Sends a book change frame through the change faults.
    fn emit_change(
        &mut self,
        name: &str,
        instrument: &str,
        change_id: i64,
        text: Arc<str>,
        faults: &mut Faults,
        log: &FaultLog,
    ) {
        match faults.on_change(instrument) {
            ChangeAction::Send => {
                self.send_all(name, &text);
                if let Some(held) = self.held.remove(name) {
                    self.send_all(name, &held);
                }
            }
            ChangeAction::Drop => log.record("drop_change", format!("{name} change_id {change_id}")),
            ChangeAction::Duplicate => {
                log.record("duplicate_change", format!("{name} change_id {change_id}"));
                self.send_all(name, &text);
                self.send_all(name, &text);
            }
            ChangeAction::Reorder => {
                log.record("reorder_change", format!("{name} change_id {change_id}"));
                if let Some(previous) = self.held.insert(name.to_owned(), text) {
                    self.send_all(name, &previous);
                }
            }
        }
    }

    fn has_session_for(&self, account: AccountId) -> bool {
        self.sessions.values().any(|e| e.account == Some(account) && !e.channels.is_empty())
    }

    /// Fans a batch of the exchange's events out: book changes, public trades, tickers and
    /// quotes, and each account's orders, trades, positions and portfolio.
    pub fn publish(&mut self, market: &Market, now: Utc, events: &[Event], faults: &mut Faults, log: &FaultLog) {
        if self.by_channel.is_empty() {
            return;
        }
        let now_ms = now.as_millis();
        let mut trades: Vec<(InstrumentId, api::PublicTrade)> = Vec::new();
        let mut users: Vec<UserBatch> = Vec::new();
        let mut portfolios: Vec<(AccountId, String)> = Vec::new();
        let mut tickers: Vec<InstrumentId> = Vec::new();
        let wants_trades = self.by_channel.values().any(|(c, _)| matches!(c, Sub::Trades { .. }));
        self.levels.clear();
        for event in events {
            match event {
                Event::BookLevel(l) => {
                    let action = match l.action {
                        BookAction::New => Action::New,
                        BookAction::Change => Action::Change,
                        BookAction::Delete => Action::Delete,
                    };
                    self.levels.push(LevelUpdate { side: l.side, action, price: l.price, qty: l.qty });
                }
                Event::BookBatch(b) => {
                    let levels = std::mem::take(&mut self.levels);
                    for (name, channel) in self.channels_of(b.instrument) {
                        if let Sub::Book { interval: Interval::Raw, instr } = channel {
                            let mut frame = std::mem::take(&mut self.frame);
                            let text = book_frame(
                                &mut frame,
                                market,
                                &name,
                                instr,
                                BookKind::Change,
                                b.change_id as i64,
                                Some(b.prev_change_id as i64),
                                b.timestamp.as_millis(),
                                &levels,
                            );
                            self.frame = frame;
                            self.emit_change(&name, market.name(instr), b.change_id as i64, text, faults, log);
                        }
                    }
                    self.levels = levels;
                    self.levels.clear();
                }
                Event::PublicTrade(t) if wants_trades => trades.push((t.instrument, market.render_public_trade(t))),
                Event::Order(o) if !Market::is_house(o.account) && self.has_session_for(o.account.0) => {
                    user_batch(&mut users, o.account.0, o.instrument).orders.push(market.render_order(o));
                }
                Event::UserTrade(t) if !Market::is_house(t.account) && self.has_session_for(t.account.0) => {
                    user_batch(&mut users, t.account.0, t.instrument).trades.push(market.render_user_trade(t));
                }
                Event::Position { account, instrument }
                    if !Market::is_house(*account) && self.has_session_for(account.0) =>
                {
                    user_batch(&mut users, account.0, *instrument).position = true;
                }
                Event::Portfolio { account, currency } if !Market::is_house(*account) => {
                    let name = market.ex.catalogue().currency_name(*currency).to_owned();
                    if !portfolios.iter().any(|(a, c)| *a == account.0 && *c == name) {
                        portfolios.push((account.0, name));
                    }
                }
                Event::Ticker { instrument } if !tickers.contains(instrument) => tickers.push(*instrument),
                _ => {}
            }
        }
        self.publish_trades(market, &trades);
        for batch in &users {
            self.publish_user(market, batch);
        }
        for (account, currency) in &portfolios {
            self.publish_portfolio(market, *account, currency);
        }
        for instr in tickers {
            for (name, channel) in self.channels_of(instr) {
                match channel {
                    Sub::Ticker { interval: Interval::Raw, .. } => {
                        let text = rpc::notification(&name, &to_text(&market.ticker(instr, now_ms)), None);
                        self.send_all(&name, &Arc::from(text));
                    }
                    Sub::Quote { .. } => self.publish_quote(market, instr, &name, now_ms),
                    _ => {}
                }
            }
        }
    }

    /// The book restart fault: every book subscriber of `instr` gets a new snapshot.
    pub fn restart(&mut self, market: &Market, instr: InstrumentId, now: Utc) {
        for (name, channel) in self.channels_of(instr) {
            if let Sub::Book { interval, .. } = channel {
                let ladder = ladder_of(market, instr);
                if interval != Interval::Raw {
                    self.aggs.insert(name.clone(), ladder.clone());
                }
                self.held.remove(&name);
                let levels = snapshot_levels(&ladder);
                let mut frame = std::mem::take(&mut self.frame);
                let text = book_frame(
                    &mut frame,
                    market,
                    &name,
                    instr,
                    BookKind::Snapshot,
                    ladder.change_id,
                    None,
                    now.as_millis(),
                    &levels,
                );
                self.frame = frame;
                self.send_all(&name, &text);
            }
        }
    }

    fn publish_trades(&self, market: &Market, trades: &[(InstrumentId, api::PublicTrade)]) {
        if trades.is_empty() {
            return;
        }
        for (name, (channel, _)) in &self.by_channel {
            let Sub::Trades { selector, .. } = channel else { continue };
            let mine: Vec<&api::PublicTrade> =
                trades.iter().filter(|(i, _)| selector_matches(market, selector, *i)).map(|(_, t)| t).collect();
            if !mine.is_empty() {
                self.send_all(name, &Arc::from(rpc::notification(name, &to_text(&mine), None)));
            }
        }
    }

    fn publish_quote(&mut self, market: &Market, instr: InstrumentId, name: &str, now_ms: i64) {
        let top = (market.best(instr, Side::Buy), market.best(instr, Side::Sell));
        if self.quote_last.get(&instr) == Some(&top) {
            return;
        }
        self.quote_last.insert(instr, top);
        let spec = market.spec(instr);
        let quote = api::Quote {
            instrument_name: spec.name.clone(),
            timestamp: now_ms,
            best_bid_price: top.0.map(|(p, _)| Num(spec.price_to_decimal(p))),
            best_bid_amount: top.0.map_or(Num::ZERO, |(_, q)| Num(spec.qty_to_decimal(q))),
            best_ask_price: top.1.map(|(p, _)| Num(spec.price_to_decimal(p))),
            best_ask_amount: top.1.map_or(Num::ZERO, |(_, q)| Num(spec.qty_to_decimal(q))),
        };
        self.send_all(name, &Arc::from(rpc::notification(name, &to_text(&quote), None)));
    }

    fn publish_user(&self, market: &Market, batch: &UserBatch) {
        let instr = batch.instr;
        for (session, entry) in &self.sessions {
            if entry.account != Some(batch.account) {
                continue;
            }
            for (name, (channel, label)) in &entry.channels {
                let label = label.as_deref();
                let send = |data: String| {
                    self.send_text(*session, Arc::from(rpc::notification(name, &data, label)));
                };
                match channel {
                    Sub::UserOrders { selector, interval } if selector_matches(market, selector, instr) => {
                        if *interval == Interval::Raw {
                            batch.orders.iter().for_each(|o| send(to_text(o)));
                        } else if !batch.orders.is_empty() {
                            send(to_text(&batch.orders));
                        }
                    }
                    Sub::UserTrades { selector, .. }
                        if selector_matches(market, selector, instr) && !batch.trades.is_empty() =>
                    {
                        send(to_text(&batch.trades));
                    }
                    Sub::UserChanges { selector, .. } if selector_matches(market, selector, instr) => {
                        let changes = api::UserChanges {
                            instrument_name: market.name(instr).to_owned(),
                            orders: batch.orders.clone(),
                            trades: batch.trades.clone(),
                            positions: if batch.position {
                                vec![market.render_position(batch.account, instr)]
                            } else {
                                Vec::new()
                            },
                        };
                        send(to_text(&changes));
                    }
                    _ => {}
                }
            }
        }
    }

    fn publish_portfolio(&self, market: &Market, account: AccountId, currency: &str) {
        for (session, entry) in &self.sessions {
            if entry.account != Some(account) {
                continue;
            }
            for (name, (channel, label)) in &entry.channels {
                let Sub::UserPortfolio { currency: wanted } = channel else { continue };
                if wanted == "ANY" || wanted == currency {
                    let data = to_text(&market.account_summary(account, currency, false));
                    self.send_text(*session, Arc::from(rpc::notification(name, &data, label.as_deref())));
                }
            }
        }
    }

    fn flush_book_agg(&mut self, market: &Market, name: &str, instr: InstrumentId) -> Option<(i64, Arc<str>)> {
        let old = self.aggs.get(name)?;
        if old.change_id == market.change_id(instr) {
            return None;
        }
        let new = ladder_of(market, instr);
        let mut levels = Vec::new();
        diff_side(Side::Buy, &old.bids, &new.bids, &mut levels);
        diff_side(Side::Sell, &old.asks, &new.asks, &mut levels);
        let prev = old.change_id;
        let change_id = new.change_id;
        self.aggs.insert(name.to_owned(), new);
        let mut frame = std::mem::take(&mut self.frame);
        let ts = market.last_change_ms(instr);
        let text = book_frame(&mut frame, market, name, instr, BookKind::Change, change_id, Some(prev), ts, &levels);
        self.frame = frame;
        Some((change_id, text))
    }

    /// A grouped book's top-`depth` window (`book.X.{group}.{depth}.{interval}`) as a frame.
    fn grouped_window(&self, market: &Market, name: &str, instr: InstrumentId, group: u16, depth: usize) -> String {
        let spec = market.spec(instr);
        let width = if group == 0 {
            1
        } else {
            let ticks = ticktrade_exchange::Money::from_int(i64::from(group))
                / ticktrade_exchange::Money::from_decimal(spec.tick());
            let ticks = ticks.to_decimal();
            (ticks.mantissa() / 10_i64.pow(u32::from(ticks.scale()))).max(1)
        };
        let mut levels = Vec::new();
        for side in [Side::Buy, Side::Sell] {
            let window = grouped(market.levels(instr, side, usize::MAX), side, width, depth);
            levels.extend(window.into_iter().map(|(p, q)| new_level(side, p, q)));
        }
        let mut frame = Vec::new();
        let ts = market.last_change_ms(instr);
        let text =
            book_frame(&mut frame, market, name, instr, BookKind::Window, market.change_id(instr), None, ts, &levels);
        text.to_string()
    }

    /// Timer flush of `interval` channels: aggregated books, grouped books, tickers.
    pub fn flush_aggregated(
        &mut self,
        market: &Market,
        now: Utc,
        interval: Interval,
        faults: &mut Faults,
        log: &FaultLog,
    ) {
        let now_ms = now.as_millis();
        let names: Vec<(String, Sub)> = self.by_channel.iter().map(|(n, (c, _))| (n.clone(), c.clone())).collect();
        for (name, channel) in names {
            match channel {
                Sub::Book { instr, interval: i } if i == interval => {
                    if let Some((change_id, text)) = self.flush_book_agg(market, &name, instr) {
                        let instrument = market.name(instr).to_owned();
                        self.emit_change(&name, &instrument, change_id, text, faults, log);
                    }
                }
                Sub::GroupedBook { instr, group, depth, interval: i }
                    if i == interval || (i == Interval::Raw && interval == Interval::Ms100) =>
                {
                    let text = self.grouped_window(market, &name, instr, group, depth);
                    if self.last_sent.get(&name) != Some(&text) {
                        self.send_all(&name, &Arc::from(text.as_str()));
                        self.last_sent.insert(name, text);
                    }
                }
                Sub::Ticker { instr, interval: i } if i == interval => {
                    let key = format!("{}:{}", market.change_id(instr), market.tape_len(instr));
                    if self.last_sent.get(&name) != Some(&key) {
                        let text = rpc::notification(&name, &to_text(&market.ticker(instr, now_ms)), None);
                        self.send_all(&name, &Arc::from(text));
                        self.last_sent.insert(name, key);
                    }
                }
                Sub::IncrementalTicker { instr } if interval == Interval::Ms100 => {
                    let key = format!("{}:{}", market.change_id(instr), market.tape_len(instr));
                    if self.last_sent.get(&name).is_some_and(|k| *k != key) {
                        let text =
                            rpc::notification(&name, &incremental(&market.ticker(instr, now_ms), "change"), None);
                        self.send_all(&name, &Arc::from(text));
                    }
                    self.last_sent.insert(name, key);
                }
                _ => {}
            }
        }
    }

    /// `deribit_price_index.*`, once a second.
    pub fn publish_index(&self, market: &Market, now: Utc) {
        for (name, (channel, _)) in &self.by_channel {
            let Sub::PriceIndex { index } = channel else { continue };
            let Some(price) = market.index_price(index) else { continue };
            let data = api::PriceIndex { index_name: index.clone(), price: money(price), timestamp: now.as_millis() };
            self.send_all(name, &Arc::from(rpc::notification(name, &to_text(&data), None)));
        }
    }
}

fn user_batch(users: &mut Vec<UserBatch>, account: AccountId, instr: InstrumentId) -> &mut UserBatch {
    let at = match users.iter().position(|u| u.account == account && u.instr == instr) {
        Some(at) => at,
        None => {
            users.push(UserBatch { account, instr, orders: Vec::new(), trades: Vec::new(), position: false });
            users.len() - 1
        }
    };
    &mut users[at]
}

fn incremental(ticker: &api::Ticker, kind: &str) -> String {
    let mut value = serde_json::to_value(ticker).unwrap_or_default();
    if let Some(object) = value.as_object_mut() {
        object.insert("type".to_owned(), serde_json::Value::String(kind.to_owned()));
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_buckets_levels() {
        let levels = vec![
            (Price::from_raw(105), Qty::from_raw(1)),
            (Price::from_raw(103), Qty::from_raw(2)),
            (Price::from_raw(99), Qty::from_raw(4)),
        ];
        let bids = grouped(levels, Side::Buy, 5, 10);
        assert_eq!(
            bids,
            vec![
                (Price::from_raw(105), Qty::from_raw(1)),
                (Price::from_raw(100), Qty::from_raw(2)),
                (Price::from_raw(95), Qty::from_raw(4))
            ]
        );
        let asks = grouped(
            vec![(Price::from_raw(101), Qty::from_raw(1)), (Price::from_raw(104), Qty::from_raw(1))],
            Side::Sell,
            5,
            1,
        );
        assert_eq!(asks, vec![(Price::from_raw(105), Qty::from_raw(2))]);
    }

    #[test]
    fn channel_names_resolve_against_the_catalogue() {
        let now = ticktrade_core::Utc::from_millis(1_767_254_400_000);
        let (catalogue, infos) = crate::market::builtin_catalogue(now).unwrap();
        let market = Market::new(catalogue, infos, 1, 0, now);
        let perp = market.find("BTC-PERPETUAL").unwrap();
        let r = |n: &str| Sub::resolve(&market, n);
        assert_eq!(r("book.BTC-PERPETUAL.100ms"), Some(Sub::Book { instr: perp, interval: Interval::Ms100 }));
        assert_eq!(
            r("book.BTC-PERPETUAL.none.10.100ms"),
            Some(Sub::GroupedBook { instr: perp, group: 0, depth: 10, interval: Interval::Ms100 })
        );
        assert!(r("user.orders.any.any.raw").is_some_and(|c| c.is_private()));
        assert!(r("user.trades.BTC-PERPETUAL.100ms").is_some());
        assert!(r("user.portfolio.btc").is_some());
        assert!(r("deribit_price_index.btc_usd").is_some());
        assert!(r("incremental_ticker.BTC-PERPETUAL").is_some());
        assert!(r("trades.future.BTC.100ms").is_some());
        assert!(r("book.BTC-PERPETUAL.raw").is_some_and(|c| c.is_public_raw()));
        for name in [
            "book.NOPE.100ms",
            "book.BTC-PERPETUAL.50ms",
            "book.BTC-PERPETUAL.none.50.100ms",
            "nonsense",
            "",
            "user.orders.x.y.z.w",
            "deribit_price_index.zzz",
            "user.portfolio.xyz",
        ] {
            assert_eq!(r(name), None, "{name}");
        }
    }
}
