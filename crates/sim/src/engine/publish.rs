//! Subscriptions and fan-out: who gets which notification, snapshots first, changes chained.
//!
//! Owns: per-session channel sets, per-channel session lists, the aggregated book state of
//! each `100ms`/`agg2` book channel (so its `prev_change_id` chain is its own), grouped-book
//! windows, ticker/quote change detection, and the reorder buffer of the change faults.
//! Must not: await. Every send is `try_send` on the session's bounded queue; a full queue
//! kills that session with a reason.
//!
//! Simplifications (documented in the crate header): `trades.*` and `user.*` channels with a
//! `100ms`/`agg2` interval are sent per event (as arrays), not batched; `incremental_ticker`
//! changes carry every ticker field, not only the changed ones.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty, Side, Utc};
use ticktrade_deribit_proto::api::{self, Num};

use super::{Outbound, SessionTx, SubscribeRequest};
pub use crate::channel::Interval;
use crate::channel::{Channel, Selector};
use crate::fault::{ChangeAction, FaultLog, Faults};
use crate::venue::{AccountId, Event, LevelChange, Venue};
use crate::wire::{self, RpcError, Timing};

struct SessionEntry {
    tx: SessionTx,
    account: Option<AccountId>,
    /// Channel name → (parsed channel, label).
    channels: HashMap<String, (Channel, Option<String>)>,
}

/// Best bid and best ask.
type Top = (Option<(Price, Qty)>, Option<(Price, Qty)>);

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Ladder {
    bids: BTreeMap<Price, Qty>,
    asks: BTreeMap<Price, Qty>,
    change_id: i64,
}

#[derive(Default)]
pub struct Subscriptions {
    sessions: HashMap<u64, SessionEntry>,
    by_channel: HashMap<String, (Channel, Vec<u64>)>,
    /// Aggregated book channels: what their subscribers have been sent.
    aggs: HashMap<String, Ladder>,
    /// Last data sent on grouped-book and ticker channels (to send only on change).
    last_sent: HashMap<String, String>,
    quote_last: HashMap<usize, Top>,
    held: HashMap<String, Arc<str>>,
}

fn ladder_of(venue: &Venue, instr: usize) -> Ladder {
    Ladder {
        bids: venue.levels(instr, Side::Buy, usize::MAX).into_iter().collect(),
        asks: venue.levels(instr, Side::Sell, usize::MAX).into_iter().collect(),
        change_id: venue.change_id(instr),
    }
}

fn entry(spec: &InstrumentSpec, action: &str, price: Price, qty: Qty) -> (String, Num, Num) {
    (action.to_owned(), Num(spec.price_to_decimal(price)), Num(spec.qty_to_decimal(qty)))
}

fn snapshot_data(spec: &InstrumentSpec, ladder: &Ladder, ts: i64) -> api::BookData {
    api::BookData {
        kind: "snapshot".to_owned(),
        instrument_name: spec.name.clone(),
        timestamp: ts,
        change_id: ladder.change_id,
        prev_change_id: None,
        bids: ladder.bids.iter().rev().map(|(p, q)| entry(spec, "new", *p, *q)).collect(),
        asks: ladder.asks.iter().map(|(p, q)| entry(spec, "new", *p, *q)).collect(),
    }
}

fn diff_side(spec: &InstrumentSpec, old: &BTreeMap<Price, Qty>, new: &BTreeMap<Price, Qty>) -> Vec<(String, Num, Num)> {
    let mut out = Vec::new();
    for (price, qty) in old {
        match new.get(price) {
            None => out.push(entry(spec, "delete", *price, Qty::from_raw(0))),
            Some(q) if q != qty => out.push(entry(spec, "change", *price, *q)),
            _ => {}
        }
    }
    for (price, qty) in new {
        if !old.contains_key(price) {
            out.push(entry(spec, "new", *price, *qty));
        }
    }
    out
}

fn to_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn selector_matches(venue: &Venue, selector: &Selector, instr: usize) -> bool {
    match selector {
        Selector::Instrument(i) => *i == instr,
        Selector::KindCurrency { kind, currency } => {
            let info = venue.info(instr);
            let kind_ok = kind == "any" || info.kind == *kind || (kind == "combo" && info.kind.ends_with("combo"));
            let currency_ok =
                currency == "any" || info.base_currency == *currency || info.settlement_currency == *currency;
            kind_ok && currency_ok
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
        venue: &mut Venue,
        now: Utc,
        request: SubscribeRequest,
        testnet: bool,
        _faults: &mut Faults,
    ) -> Result<(), RpcError> {
        let session = request.session;
        let parsed: Vec<(String, Channel)> = request
            .channels
            .iter()
            .filter_map(|name| {
                let find = |n: &str| venue.find(n);
                let index_ok = |i: &str| venue.instruments().any(|(_, info)| info.price_index == i);
                Channel::parse(name, find, index_ok).map(|c| (name.clone(), c))
            })
            .collect();
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
        let timing = Timing { us_in: request.us_in, us_out: super::now_us() };
        let response = wire::response(request.id.as_deref(), &to_text(&accepted), timing, testnet);
        self.send_text(session, Arc::from(response));
        let now_ms = now.as_millis();
        for (name, channel) in fresh {
            match channel {
                Channel::Book { instr, interval } => {
                    let ladder = if interval == Interval::Raw {
                        ladder_of(venue, instr)
                    } else {
                        // Bring existing subscribers up to date first, so one chain serves all.
                        self.flush_book_agg(venue, &name, instr);
                        self.aggs.entry(name.clone()).or_insert_with(|| ladder_of(venue, instr)).clone()
                    };
                    let data = snapshot_data(venue.spec(instr), &ladder, venue.last_change_ms(instr));
                    self.send_text(session, Arc::from(wire::notification(&name, &to_text(&data), None)));
                }
                Channel::GroupedBook { instr, group, depth, .. } => {
                    let data = self.grouped_window(venue, instr, group, depth);
                    self.send_text(session, Arc::from(wire::notification(&name, &data, None)));
                }
                Channel::IncrementalTicker { instr } => {
                    let data = incremental(&venue.ticker(instr, now_ms), "snapshot");
                    self.send_text(session, Arc::from(wire::notification(&name, &data, None)));
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
        let timing = Timing { us_in, us_out: super::now_us() };
        self.send_text(session, Arc::from(wire::response(id.as_deref(), &result, timing, testnet)));
    }

    fn channels_of(&self, instr: usize) -> Vec<(String, Channel)> {
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

    /// Fans one venue event out.
    pub fn publish(&mut self, venue: &Venue, now: Utc, event: &Event, faults: &mut Faults, log: &FaultLog) {
        let now_ms = now.as_millis();
        match event {
            Event::Book { instr, change_id, prev_change_id, timestamp_ms, changes } => {
                let spec = venue.spec(*instr);
                for (name, channel) in self.channels_of(*instr) {
                    match channel {
                        Channel::Book { interval: Interval::Raw, .. } => {
                            let data = change_data(spec, *change_id, *prev_change_id, *timestamp_ms, changes);
                            let text: Arc<str> = Arc::from(wire::notification(&name, &to_text(&data), None));
                            self.emit_change(&name, &spec.name, *change_id, text, faults, log);
                        }
                        Channel::Ticker { interval: Interval::Raw, .. } => {
                            let text = wire::notification(&name, &to_text(&venue.ticker(*instr, now_ms)), None);
                            self.send_all(&name, &Arc::from(text));
                        }
                        Channel::Quote { .. } => self.publish_quote(venue, *instr, &name, now_ms),
                        _ => {}
                    }
                }
            }
            Event::Restart { instr } => {
                let spec = venue.spec(*instr);
                for (name, channel) in self.channels_of(*instr) {
                    if let Channel::Book { interval, .. } = channel {
                        let ladder = ladder_of(venue, *instr);
                        if interval != Interval::Raw {
                            self.aggs.insert(name.clone(), ladder.clone());
                        }
                        self.held.remove(&name);
                        let data = snapshot_data(spec, &ladder, now_ms);
                        self.send_all(&name, &Arc::from(wire::notification(&name, &to_text(&data), None)));
                    }
                }
            }
            Event::Trades { instr, trades } => {
                for (name, channel) in self.channels_of(*instr) {
                    match channel {
                        Channel::Trades { .. } => {
                            self.send_all(&name, &Arc::from(wire::notification(&name, &to_text(trades), None)))
                        }
                        Channel::Ticker { interval: Interval::Raw, .. } => {
                            let text = wire::notification(&name, &to_text(&venue.ticker(*instr, now_ms)), None);
                            self.send_all(&name, &Arc::from(text));
                        }
                        _ => {}
                    }
                }
            }
            Event::User { account, instr, orders, trades, position } => {
                self.publish_user(venue, now, *account, *instr, orders, trades, position)
            }
        }
    }

    fn publish_quote(&mut self, venue: &Venue, instr: usize, name: &str, now_ms: i64) {
        let top = (venue.best(instr, Side::Buy), venue.best(instr, Side::Sell));
        if self.quote_last.get(&instr) == Some(&top) {
            return;
        }
        self.quote_last.insert(instr, top);
        let spec = venue.spec(instr);
        let quote = api::Quote {
            instrument_name: spec.name.clone(),
            timestamp: now_ms,
            best_bid_price: top.0.map(|(p, _)| Num(spec.price_to_decimal(p))),
            best_bid_amount: top.0.map_or(Num::ZERO, |(_, q)| Num(spec.qty_to_decimal(q))),
            best_ask_price: top.1.map(|(p, _)| Num(spec.price_to_decimal(p))),
            best_ask_amount: top.1.map_or(Num::ZERO, |(_, q)| Num(spec.qty_to_decimal(q))),
        };
        self.send_all(name, &Arc::from(wire::notification(name, &to_text(&quote), None)));
    }

    #[allow(clippy::too_many_arguments)]
    fn publish_user(
        &self,
        venue: &Venue,
        now: Utc,
        account: AccountId,
        instr: usize,
        orders: &[api::Order],
        trades: &[api::UserTrade],
        position: &api::Position,
    ) {
        for (session, entry) in &self.sessions {
            if entry.account != Some(account) {
                continue;
            }
            for (name, (channel, label)) in &entry.channels {
                let label = label.as_deref();
                let send = |data: String| {
                    self.send_text(*session, Arc::from(wire::notification(name, &data, label)));
                };
                match channel {
                    Channel::UserOrders { selector, interval } if selector_matches(venue, selector, instr) => {
                        if *interval == Interval::Raw {
                            orders.iter().for_each(|o| send(to_text(o)));
                        } else if !orders.is_empty() {
                            send(to_text(&orders));
                        }
                    }
                    Channel::UserTrades { selector, .. }
                        if selector_matches(venue, selector, instr) && !trades.is_empty() =>
                    {
                        send(to_text(&trades));
                    }
                    Channel::UserChanges { selector, .. } if selector_matches(venue, selector, instr) => {
                        let changes = api::UserChanges {
                            instrument_name: venue.info(instr).instrument_name.clone(),
                            orders: orders.to_vec(),
                            trades: trades.to_vec(),
                            positions: if trades.is_empty() { Vec::new() } else { vec![position.clone()] },
                        };
                        send(to_text(&changes));
                    }
                    Channel::UserPortfolio { currency } if !trades.is_empty() => {
                        let settlement = &venue.info(instr).settlement_currency;
                        if currency == "ANY" || currency == settlement {
                            send(to_text(&venue.account_summary(account, settlement, false)));
                        }
                    }
                    _ => {}
                }
            }
        }
        let _ = now;
    }

    fn flush_book_agg(&mut self, venue: &Venue, name: &str, instr: usize) -> Option<(i64, Arc<str>)> {
        let old = self.aggs.get(name)?;
        if old.change_id == venue.change_id(instr) {
            return None;
        }
        let new = ladder_of(venue, instr);
        let spec = venue.spec(instr);
        let data = api::BookData {
            kind: "change".to_owned(),
            instrument_name: spec.name.clone(),
            timestamp: venue.last_change_ms(instr),
            change_id: new.change_id,
            prev_change_id: Some(old.change_id),
            bids: diff_side(spec, &old.bids, &new.bids),
            asks: diff_side(spec, &old.asks, &new.asks),
        };
        self.aggs.insert(name.to_owned(), new);
        let text: Arc<str> = Arc::from(wire::notification(name, &to_text(&data), None));
        Some((data.change_id, text))
    }

    fn grouped_window(&self, venue: &Venue, instr: usize, group: u32, depth: usize) -> String {
        let spec = venue.spec(instr);
        let width = if group == 0 {
            1
        } else {
            crate::venue::render_div(Decimal::from_int(i64::from(group)), spec.tick(), 0).mantissa().max(1)
        };
        let side = |s| {
            grouped(venue.levels(instr, s, usize::MAX), s, width, depth)
                .into_iter()
                .map(|(p, q)| (Num(spec.price_to_decimal(p)), Num(spec.qty_to_decimal(q))))
                .collect()
        };
        let data = api::GroupedBookData {
            instrument_name: spec.name.clone(),
            timestamp: venue.last_change_ms(instr),
            change_id: venue.change_id(instr),
            bids: side(Side::Buy),
            asks: side(Side::Sell),
        };
        to_text(&data)
    }

    /// Timer flush of `interval` channels: aggregated books, grouped books, tickers.
    pub fn flush_aggregated(
        &mut self,
        venue: &Venue,
        now: Utc,
        interval: Interval,
        faults: &mut Faults,
        log: &FaultLog,
    ) {
        let now_ms = now.as_millis();
        let names: Vec<(String, Channel)> = self.by_channel.iter().map(|(n, (c, _))| (n.clone(), c.clone())).collect();
        for (name, channel) in names {
            match channel {
                Channel::Book { instr, interval: i } if i == interval => {
                    if let Some((change_id, text)) = self.flush_book_agg(venue, &name, instr) {
                        let instrument = venue.spec(instr).name.clone();
                        self.emit_change(&name, &instrument, change_id, text, faults, log);
                    }
                }
                Channel::GroupedBook { instr, group, depth, interval: i }
                    if i == interval || (i == Interval::Raw && interval == Interval::Ms100) =>
                {
                    let data = self.grouped_window(venue, instr, group, depth);
                    if self.last_sent.get(&name) != Some(&data) {
                        self.send_all(&name, &Arc::from(wire::notification(&name, &data, None)));
                        self.last_sent.insert(name, data);
                    }
                }
                Channel::Ticker { instr, interval: i } if i == interval => {
                    let key = format!("{}:{}", venue.change_id(instr), venue.tape_len(instr));
                    if self.last_sent.get(&name) != Some(&key) {
                        let text = wire::notification(&name, &to_text(&venue.ticker(instr, now_ms)), None);
                        self.send_all(&name, &Arc::from(text));
                        self.last_sent.insert(name, key);
                    }
                }
                Channel::IncrementalTicker { instr } if interval == Interval::Ms100 => {
                    let key = format!("{}:{}", venue.change_id(instr), venue.tape_len(instr));
                    if self.last_sent.get(&name).is_some_and(|k| *k != key) {
                        let text =
                            wire::notification(&name, &incremental(&venue.ticker(instr, now_ms), "change"), None);
                        self.send_all(&name, &Arc::from(text));
                    }
                    self.last_sent.insert(name, key);
                }
                _ => {}
            }
        }
    }

    /// `deribit_price_index.*`, once a second.
    pub fn publish_index(&self, venue: &Venue, now: Utc) {
        for (name, (channel, _)) in &self.by_channel {
            let Channel::PriceIndex { index } = channel else { continue };
            let Some((instr, _)) = venue.instruments().find(|(_, i)| i.price_index == *index) else { continue };
            let data = api::PriceIndex {
                index_name: index.clone(),
                price: Num(venue.spec(instr).price_to_decimal(venue.index_price(instr))),
                timestamp: now.as_millis(),
            };
            self.send_all(name, &Arc::from(wire::notification(name, &to_text(&data), None)));
        }
    }
}

fn change_data(spec: &InstrumentSpec, change_id: i64, prev: i64, ts: i64, changes: &[LevelChange]) -> api::BookData {
    let side =
        |s| changes.iter().filter(|c| c.side == s).map(|c| entry(spec, c.action.as_str(), c.price, c.qty)).collect();
    api::BookData {
        kind: "change".to_owned(),
        instrument_name: spec.name.clone(),
        timestamp: ts,
        change_id,
        prev_change_id: Some(prev),
        bids: side(Side::Buy),
        asks: side(Side::Sell),
    }
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
}
