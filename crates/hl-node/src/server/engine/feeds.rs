//! The feeds that follow a block besides `l2Book` and `l4Book`: `bbo`, `allMids`,
//! `activeAssetCtx`, `orderUpdates` (from the block's statuses) and `userFills` (from the
//! fills line).
//!
//! Owns: what was last sent on `bbo`, `allMids` and `activeAssetCtx` (a frame goes out only
//! when it changed), the base asset contexts (`MetaDocs`'s, given at start),
//! and the per-user buffers the block's `orderUpdates`/`userFills` frames are written into.
//! Must not: cost anything when nobody follows a feed (each starts with an `is_empty` check
//! of its index), or allocate per event in steady state: a user's frame is written into a
//! buffer kept from block to block, and copied once into the frame it becomes.

use bytes::Bytes;
use rustc_hash::FxHashMap;
use serde_json::value::RawValue;

use ticktrade_core::Side;
use ticktrade_hl_proto::asset_ctx::{BaseCtxs, BookCtx, active_asset_ctx_frame, perp_ctx, spot_ctx};
use ticktrade_hl_proto::info::CoinKind;
use ticktrade_hl_proto::node::{OrderStatus, parse_events_into};
use ticktrade_hl_proto::time::parse_node_time;
use ticktrade_hl_proto::ws::UnitLevel;
use ticktrade_hl_proto::ws::feeds;

use super::Engine;
use crate::coins::CoinId;
use crate::server::publish::ClientId;

/// What the feeds keep between blocks.
#[derive(Default)]
pub(super) struct FeedState {
    /// Per coin with `bbo` subscribers: the best levels last sent.
    bbo_last: FxHashMap<CoinId, [Option<UnitLevel>; 2]>,
    /// The last `allMids` frame sent (its bytes), and the one being built.
    mids_last: Vec<u8>,
    mids_next: Vec<u8>,
    /// Per followed user: the frame being built this block and its number of entries.
    users: FxHashMap<String, (Vec<u8>, usize)>,
    /// The last fills line's `[user, fill]` events, emptied (`decode::recycle`).
    fill_events: Vec<(&'static str, &'static RawValue)>,
    /// A frame for one client (`bbo`, `allMids` on subscribe).
    out: Vec<u8>,
    /// Per coin with `activeAssetCtx` subscribers: the frame last sent.
    ctx_last: FxHashMap<CoinId, Bytes>,
    /// The contexts' fields the books do not determine (`MetaDocs`'s), perps and spot.
    pub(super) base: (BaseCtxs, BaseCtxs),
}

/// `0x` and 40 hex digits (any case; Hyperliquid's addresses).
pub(super) fn is_address(user: &str) -> bool {
    user.len() == 42 && user.starts_with("0x") && user.as_bytes()[2..].iter().all(u8::is_ascii_hexdigit)
}

impl Engine {
    /// The best bid and ask of `coin` as levels; `None` for a stale or unknown book.
    fn bbo_of(&self, coin: CoinId) -> Option<[Option<UnitLevel>; 2]> {
        let book = self.books.book(coin).filter(|b| !b.stale)?;
        let level =
            |side| book.book.best(side).map(|l| UnitLevel { px: l.price.raw(), sz: l.qty.raw(), n: l.n_orders });
        Some([level(Side::Buy), level(Side::Sell)])
    }

    fn write_bbo(&mut self, coin: CoinId, bbo: [Option<UnitLevel>; 2]) -> Bytes {
        let spec = self.books.coins.spec(coin);
        let time_ms = self.books.time().as_millis().max(0) as u64;
        self.feeds.out.clear();
        feeds::write_bbo(&mut self.feeds.out, &spec.name, time_ms, spec.units, bbo);
        Bytes::copy_from_slice(&self.feeds.out)
    }

    /// The current `bbo` of `coin` for a new subscriber. It is also what every earlier
    /// subscriber has last seen (they got each change), so the next frame is the next change.
    pub(super) fn bbo_now(&mut self, coin: CoinId) -> Option<Bytes> {
        let bbo = self.bbo_of(coin)?;
        self.feeds.bbo_last.insert(coin, bbo);
        Some(self.write_bbo(coin, bbo))
    }

    /// Every kept coin's mid into `out` as `"coin":"mid"` entries.
    pub(super) fn write_mids(&self, out: &mut Vec<u8>) {
        let mut first = true;
        let mut mid = String::new();
        for (id, spec) in self.books.coins.iter() {
            if !self.allowed(&spec.name) {
                continue;
            }
            let Some(book) = self.books.book(id) else { continue };
            mid.clear();
            if !crate::ctx::write_mid(book, spec.units, &mut mid) {
                continue;
            }
            feeds::push_mid(out, first, &spec.name, &mid);
            first = false;
        }
    }

    /// The current `allMids` frame.
    pub(super) fn all_mids_now(&mut self) -> Bytes {
        let mut out = std::mem::take(&mut self.feeds.out);
        out.clear();
        feeds::begin_all_mids(&mut out);
        self.write_mids(&mut out);
        feeds::end_all_mids(&mut out);
        let frame = Bytes::copy_from_slice(&out);
        // What every subscriber has last seen (as for `bbo_now`).
        self.feeds.mids_last.clear();
        self.feeds.mids_last.extend_from_slice(&out);
        self.feeds.out = out;
        frame
    }

    /// After a block: `bbo` of every followed coin whose best levels changed, `allMids` when a
    /// mid changed, and each followed user's statuses of the block as one `orderUpdates` frame.
    pub(super) fn publish_feeds(&mut self, statuses: &[OrderStatus<'_>]) {
        if !self.subs.bbo.is_empty() {
            let coins: Vec<CoinId> = self.subs.bbo.keys().copied().collect();
            for coin in coins {
                let Some(bbo) = self.bbo_of(coin) else { continue };
                if self.feeds.bbo_last.get(&coin) == Some(&bbo) {
                    continue;
                }
                self.feeds.bbo_last.insert(coin, bbo);
                let frame = self.write_bbo(coin, bbo);
                self.send_to_list(ListOf::Bbo(coin), &frame);
            }
            let subs = &self.subs.bbo;
            self.feeds.bbo_last.retain(|coin, _| subs.contains_key(coin));
        }
        if !self.subs.all_mids.is_empty() {
            let mut next = std::mem::take(&mut self.feeds.mids_next);
            next.clear();
            feeds::begin_all_mids(&mut next);
            self.write_mids(&mut next);
            feeds::end_all_mids(&mut next);
            if next != self.feeds.mids_last {
                let frame = Bytes::copy_from_slice(&next);
                self.send_to_list(ListOf::AllMids, &frame);
                std::mem::swap(&mut next, &mut self.feeds.mids_last);
            }
            self.feeds.mids_next = next;
        }
        if !self.subs.order_updates.is_empty() {
            self.publish_order_updates(statuses);
        }
        self.publish_asset_ctxs();
    }

    /// `activeAssetCtx` of every followed coin whose context changed (after a block, and after
    /// a fills line: the volumes).
    pub(super) fn publish_asset_ctxs(&mut self) {
        if !self.subs.asset_ctx.is_empty() {
            let coins: Vec<CoinId> = self.subs.asset_ctx.keys().copied().collect();
            for coin in coins {
                let frame = self.asset_ctx_frame(coin);
                if self.feeds.ctx_last.get(&coin) == Some(&frame) {
                    continue;
                }
                self.feeds.ctx_last.insert(coin, frame.clone());
                self.send_to_list(ListOf::AssetCtx(coin), &frame);
            }
            let subs = &self.subs.asset_ctx;
            self.feeds.ctx_last.retain(|coin, _| subs.contains_key(coin));
        }
    }

    /// The `activeAssetCtx` (perp) or `activeSpotAssetCtx` (spot) frame of `coin` now: the
    /// book's mid and impact prices with the base context's other fields (`MetaDocs`).
    fn asset_ctx_frame(&self, coin: CoinId) -> Bytes {
        let spec = self.books.coins.spec(coin);
        let spot = spec.kind == CoinKind::Spot;
        let mut book = match self.books.book(coin) {
            Some(book) => crate::ctx::book_ctx(&spec.name, book, spec.units, !spot),
            None => BookCtx::default(),
        };
        book.volume = self.volume_texts(coin);
        let ctx = if spot {
            spot_ctx(&spec.name, self.feeds.base.1.get(&spec.name), &book)
        } else {
            perp_ctx(self.feeds.base.0.get(&spec.name), &book)
        };
        Bytes::from(active_asset_ctx_frame(&spec.name, spot, &ctx))
    }

    /// The current context of `coin` for a new subscriber (also what earlier ones last saw).
    pub(super) fn asset_ctx_now(&mut self, coin: CoinId) -> Bytes {
        let frame = self.asset_ctx_frame(coin);
        self.feeds.ctx_last.insert(coin, frame.clone());
        frame
    }

    fn publish_order_updates(&mut self, statuses: &[OrderStatus<'_>]) {
        let users = &mut self.feeds.users;
        let subs = &self.subs.order_updates;
        for user in subs.keys() {
            if !users.contains_key(user) {
                users.insert(user.clone(), (Vec::with_capacity(1024), 0));
            }
        }
        for status in statuses {
            let Some((out, n)) = users.get_mut(status.user) else { continue };
            if *n == 0 {
                out.clear();
                feeds::begin_order_updates(out);
            }
            let status_timestamp = parse_node_time(status.time).map_or(0, |t| t.as_millis().max(0) as u64);
            let order = feeds::WsOrder {
                order: feeds::WsBasicOrder::from_node(&status.order),
                status: &status.status,
                status_timestamp,
            };
            feeds::push_order_update(out, *n == 0, &order);
            *n += 1;
        }
        self.flush_users(true);
    }

    /// Sends each user's frame built this block to the user's clients (`orderUpdates` or
    /// `userFills`), and forgets the buffers of users nobody follows any more.
    fn flush_users(&mut self, orders: bool) {
        let mut users = std::mem::take(&mut self.feeds.users);
        for (user, (out, n)) in &mut users {
            if *n == 0 {
                continue;
            }
            if orders {
                feeds::end_array_frame(out);
            } else {
                feeds::end_user_fills(out);
            }
            *n = 0;
            let frame = Bytes::copy_from_slice(out);
            let list = if orders { ListOf::OrderUpdates(user) } else { ListOf::UserFills(user) };
            self.send_to_list(list, &frame);
        }
        let (a, b) = (&self.subs.order_updates, &self.subs.user_fills);
        users.retain(|user, _| a.contains_key(user) || b.contains_key(user));
        self.feeds.users = users;
    }

    /// Each followed user's fills of the fills line `text` as one `userFills` frame.
    pub(super) fn publish_user_fills(&mut self, text: &str) {
        let mut events: Vec<(&str, &RawValue)> = super::decode::recycle(std::mem::take(&mut self.feeds.fill_events));
        if let Err(err) = parse_events_into(text, &mut events) {
            self.report(format!("fills line not decoded for userFills: {err}"));
            self.feeds.fill_events = super::decode::recycle(events);
            return;
        }
        let users = &mut self.feeds.users;
        for user in self.subs.user_fills.keys() {
            if !users.contains_key(user) {
                users.insert(user.clone(), (Vec::with_capacity(1024), 0));
            }
        }
        for (user, fill) in &events {
            if !self.subs.user_fills.contains_key(*user) {
                continue;
            }
            let Some((out, n)) = users.get_mut(*user) else { continue };
            if *n == 0 {
                out.clear();
                feeds::begin_user_fills(out, user, false);
            }
            feeds::push_fill(out, *n == 0, fill);
            *n += 1;
        }
        self.feeds.fill_events = super::decode::recycle(events);
        self.flush_users(false);
    }

    pub(super) fn send_to_list(&mut self, list: ListOf<'_>, frame: &Bytes) {
        let ids: &[ClientId] = match list {
            ListOf::Bbo(coin) => self.subs.bbo.get(&coin).map_or(&[], Vec::as_slice),
            ListOf::AllMids => &self.subs.all_mids,
            ListOf::OrderUpdates(user) => self.subs.order_updates.get(user).map_or(&[], Vec::as_slice),
            ListOf::UserFills(user) => self.subs.user_fills.get(user).map_or(&[], Vec::as_slice),
            ListOf::AssetCtx(coin) => self.subs.asset_ctx.get(&coin).map_or(&[], Vec::as_slice),
            ListOf::Candle(coin, interval) => self.subs.candle.get(&(coin, interval)).map_or(&[], Vec::as_slice),
        };
        for &id in ids {
            if let Err(why) = self.subs.try_send(id, crate::server::publish::Frames::one(frame.clone())) {
                self.pending_undelivered.push((id, why));
            }
        }
        for (id, why) in self.pending_undelivered.drain(..) {
            self.subs.undelivered(id, why, &mut self.dead);
        }
    }
}

/// Which subscriber list a frame goes to.
pub(super) enum ListOf<'a> {
    Bbo(CoinId),
    AllMids,
    OrderUpdates(&'a str),
    UserFills(&'a str),
    AssetCtx(CoinId),
    Candle(CoinId, ticktrade_hl_proto::candle::Interval),
}
