//! Subscriptions and fan-out: who gets which notification, snapshots first, changes chained.
//!
//! Owns: per-session channel sets, per-channel session lists, subscribe/unsubscribe, and the
//! fan-out of a batch of the exchange's events (`ticktrade_exchange::Event`): raw book
//! changes, public trades, tickers, quotes, each account's data. Book frames are laid out by
//! `ticktrade_deribit_proto::book::encode_book_units`.
//! Must not: await. Every send is an offer to the session's bounded queue
//! (`ticktrade_net::outbound`, policy `Disconnect`); a full queue kills that session with a
//! reason.
//!
//! Simplifications (documented in the crate header): `trades.*` and `user.*` channels with a
//! `100ms`/`agg2` interval are sent per event (as arrays), not batched; `incremental_ticker`
//! changes carry every ticker field, not only the changed ones.
//!
//! # Layout
//! - `channel`: channel names resolved against the catalogue (`Sub`, `Selector`).
//! - `interval`: `100ms`/`agg2` books, grouped windows and tickers, flushed on the timer.
//! - `users`: per-account channels and quote/ticker change detection.
//! - `faults`: change frames through the drop/duplicate/reorder faults, the book restart.

mod channel;
mod faults;
mod interval;
mod users;

use channel::{Sub, selector_matches};
use interval::{book_frame, book_of};
use users::{Top, UserBatch, incremental, user_batch};

use std::collections::HashMap;
use std::sync::Arc;

use ticktrade_book::l2::L2Book;
use ticktrade_core::{InstrumentId, Price, Qty, Side, Utc};
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_deribit_proto::book::{Action, BookHeader, BookKind, LevelUpdate, encode_book_units};
use ticktrade_deribit_proto::channel::Interval;
use ticktrade_deribit_proto::interval::{IntervalBook, book_levels};
use ticktrade_exchange::{BookAction, Event};

use super::{SessionFrame, SessionTx, SubscribeRequest};
use crate::clock::SimClock;
use crate::fault::{ChangeAction, FaultLog, Faults};
use crate::market::{AccountId, Market, money};
use crate::rpc::{self, RpcError, Timing};
use ticktrade_net::outbound::Offer;

struct SessionEntry {
    tx: SessionTx,
    account: Option<AccountId>,
    /// Channel name → (resolved channel, label).
    channels: HashMap<String, (Sub, Option<String>)>,
}

#[derive(Default)]
pub struct Subscriptions {
    sessions: HashMap<u64, SessionEntry>,
    by_channel: HashMap<String, (Sub, Vec<u64>)>,
    /// Aggregated book channels: what their subscribers have been sent.
    aggs: HashMap<String, IntervalBook>,
    /// Last data sent on grouped-book and ticker channels (to send only on change).
    last_sent: HashMap<String, String>,
    quote_last: HashMap<InstrumentId, Top>,
    held: HashMap<String, Arc<str>>,
    /// Scratch: level changes of the current book batch.
    levels: Vec<LevelUpdate>,
    frame: Vec<u8>,
}

fn to_text<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_owned())
}

fn new_level(side: Side, price: Price, qty: Qty) -> LevelUpdate {
    LevelUpdate { side, action: Action::New, price, qty }
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
        match entry.tx.out.offer(SessionFrame::Text(text), None) {
            Offer::Disconnect => {
                tracing::warn!(session, "slow consumer: outbound queue full, disconnecting");
                entry.tx.kill.fire(4003, "slow consumer: outbound queue full");
                false
            }
            offer => offer.delivered(),
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
            if parsed.iter().any(|(name, _)| ticktrade_deribit_proto::channel::is_private(name)) {
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
                    let book = if interval == Interval::Raw {
                        book_of(market, instr)
                    } else {
                        // Bring existing subscribers up to date first, so one chain serves all.
                        self.flush_book_agg(market, &name, instr);
                        let agg =
                            self.aggs.entry(name.clone()).or_insert_with(|| IntervalBook::new(&book_of(market, instr)));
                        agg.flushed().clone()
                    };
                    let text = self.snapshot_text(market, &name, instr, &book, market.last_change_ms(instr));
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
                Event::MmpTrigger { account, index, group, frozen } if !Market::is_house(*account) => {
                    self.publish_mmp_trigger(market, account.0, *index, *group, *frozen);
                }
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
