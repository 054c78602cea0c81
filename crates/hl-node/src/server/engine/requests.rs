//! Client requests handled on the engine thread: (un)subscribe with Hyperliquid's
//! validation and error strings, `post` info requests, `/info` `l2Book`, `allMids` and a
//! user's orders (`openOrders`, `frontendOpenOrders`, `orderStatus`, read off the books),
//! `candleSnapshot` (`candles`), and
//! forgetting a client's subscriptions.
//!
//! Owns: the mapping from a `Subscription` to its index slot. Must not: block or compute
//! anything but the one view a request asks for.

use bytes::Bytes;
use ticktrade_core::Side;
use ticktrade_hl_proto::asset_ctx::BookCtx;
use ticktrade_hl_proto::candle::Interval;
use ticktrade_hl_proto::info::InfoRequest;
use ticktrade_hl_proto::orders::{self, OrderRef};
use ticktrade_hl_proto::ws::{self as proto, ClientMessage, L2Params, L2Variant, Subscription, errors, feeds};

use super::feeds::is_address;
use super::{Engine, EngineConfig};
use crate::books::{OwnedL4Order, UserKey};
use crate::coins::CoinTable;
use crate::server::publish::{ClientId, L2Key, Slot};

/// Where `sub` lives in the indexes; `None` when it is invalid here (unknown or filtered
/// coin, bad parameters, not a user address, a feed `--raw` does not serve).
fn slot_of(config: &EngineConfig, coins: &CoinTable, sub: &Subscription) -> Option<Slot> {
    if config.raw {
        return None;
    }
    let coin = match sub.coin() {
        Some(name) if config.coins.as_ref().is_some_and(|set| !set.contains(name)) => return None,
        Some(name) => Some(coins.id(name)?),
        None => None,
    };
    Some(match sub {
        Subscription::L2Book { n_sig_figs, mantissa, n_levels, fast, .. } => {
            Slot::L2(coin?, L2Key::new(L2Params::new(*n_sig_figs, *mantissa, *n_levels, *fast)?))
        }
        Subscription::Trades { coin } => Slot::Trades(coin.clone()),
        Subscription::L4Book { .. } => Slot::L4(coin?),
        Subscription::Bbo { .. } => Slot::Bbo(coin?),
        Subscription::AllMids { .. } => Slot::AllMids,
        Subscription::OrderUpdates { user } if is_address(user) => Slot::OrderUpdates(user.clone()),
        Subscription::UserFills { user, .. } if is_address(user) => Slot::UserFills(user.clone()),
        Subscription::ActiveAssetCtx { .. } => Slot::AssetCtx(coin?),
        Subscription::Candle { interval, .. } => Slot::Candle(coin?, Interval::parse(interval)?),
        Subscription::OrderUpdates { .. } | Subscription::UserFills { .. } => return None,
    })
}

impl Engine {
    pub(super) fn slot_for(&self, sub: &Subscription) -> Option<Slot> {
        slot_of(&self.config, &self.books.coins, sub)
    }

    pub(super) fn send_text(&mut self, id: ClientId, text: String) {
        self.subs.send(id, Bytes::from(text), &mut self.dead);
    }

    pub(super) fn on_request(&mut self, id: ClientId, message: ClientMessage, text: &str) {
        match message {
            ClientMessage::Ping => self.send_text(id, proto::pong().to_owned()),
            ClientMessage::Subscribe { subscription } => {
                let sub = subscription.normalised();
                let Some(slot) = self.slot_for(&sub) else {
                    return self.send_text(id, crate::server::invalid_subscription(&sub));
                };
                if self.subs.has(id, &sub) {
                    return self.send_text(id, proto::error_frame(&errors::already(true, &sub.to_json())));
                }
                if !self.subs.add(id, sub.clone(), slot.clone()) {
                    return;
                }
                self.send_text(id, proto::subscription_response(true, &sub));
                match slot {
                    Slot::L2(coin, key) => {
                        if self.aggregate_l2(
                            coin,
                            L2Variant::ALL[usize::from(key.variant_idx)],
                            usize::from(key.n_levels),
                        ) {
                            let frame = self.encode_view(coin, key);
                            self.subs.send(id, frame, &mut self.dead);
                        }
                    }
                    Slot::L4(coin) => {
                        let orders = self.books.l4_orders(coin);
                        let [bids, asks] =
                            [&orders[0], &orders[1]].map(|side| side.iter().map(|o| o.as_l4()).collect::<Vec<_>>());
                        let time_ms = self.books.time().as_millis().max(0) as u64;
                        let name = &self.books.coins.spec(coin).name;
                        let frame = proto::l4_snapshot_frame(name, time_ms, self.books.height(), &bids, &asks);
                        self.send_text(id, frame);
                    }
                    // The current best levels and mids, as `l2Book` sends the current book.
                    Slot::Bbo(coin) => {
                        if let Some(frame) = self.bbo_now(coin) {
                            self.subs.send(id, frame, &mut self.dead);
                        }
                    }
                    Slot::AllMids => {
                        let frame = self.all_mids_now();
                        self.subs.send(id, frame, &mut self.dead);
                    }
                    // The snapshot of the user's fills: none (fills are streamed from the
                    // subscription on; ticktrade keeps no fill history).
                    Slot::UserFills(user) => {
                        let mut out = Vec::new();
                        feeds::begin_user_fills(&mut out, &user, true);
                        feeds::end_user_fills(&mut out);
                        self.subs.send(id, Bytes::from(out), &mut self.dead);
                    }
                    Slot::AssetCtx(coin) => {
                        let frame = self.asset_ctx_now(coin);
                        self.subs.send(id, frame, &mut self.dead);
                    }
                    // Candles go out as trades change them (`candleSnapshot` has the history).
                    Slot::Trades(_) | Slot::OrderUpdates(_) | Slot::Candle(..) => {}
                }
            }
            ClientMessage::Unsubscribe { subscription } => {
                let sub = subscription.normalised();
                match self.slot_for(&sub) {
                    Some(slot) if self.subs.has(id, &sub) => {
                        self.subs.remove_sub(id, &sub, &slot);
                        self.send_text(id, proto::subscription_response(false, &sub));
                    }
                    _ => self.send_text(id, proto::error_frame(&errors::already(false, &sub.to_json()))),
                }
            }
            ClientMessage::Post { id: request_id, request } => {
                let reply = if request.kind != "info" {
                    proto::post_error(request_id, "only info requests are supported by this read-only server")
                } else {
                    match serde_json::from_value::<InfoRequest>(request.payload) {
                        Ok(InfoRequest::L2Book { coin, n_sig_figs, mantissa }) => {
                            match self.l2_payload(&coin, n_sig_figs, mantissa) {
                                Some(book) => proto::post_l2_response(request_id, &book),
                                None => proto::post_error(request_id, &format!("Invalid l2Book request: {text}")),
                            }
                        }
                        Ok(_) | Err(_) => proto::post_error(request_id, &format!("Unsupported post request: {text}")),
                    }
                };
                self.send_text(id, reply);
            }
        }
    }

    /// The `WsBook` payload of a coin at 20 levels.
    pub(super) fn l2_payload(&mut self, coin: &str, n_sig_figs: Option<u32>, mantissa: Option<u32>) -> Option<String> {
        let params = L2Params::new(n_sig_figs, mantissa, None, None)?;
        let id = self.books.coins.id(coin).filter(|_| self.allowed(coin))?;
        let book = self.books.book(id)?;
        crate::l2::aggregate(book.book.levels(Side::Buy), true, params.variant, params.n_levels, &mut self.bids);
        crate::l2::aggregate(book.book.levels(Side::Sell), false, params.variant, params.n_levels, &mut self.asks);
        let spec = self.books.coins.spec(id);
        let mut out = Vec::new();
        proto::write_ws_book(
            &mut out,
            &spec.name,
            self.books.time().as_millis().max(0) as u64,
            spec.units,
            &self.bids,
            &self.asks,
        );
        String::from_utf8(out).ok()
    }

    /// Answers `l2Book` and `allMids` (`meta`/`spotMeta` are served by the HTTP layer).
    pub(super) fn info(&mut self, request: InfoRequest) -> String {
        match request {
            InfoRequest::L2Book { coin, n_sig_figs, mantissa } => {
                self.l2_payload(&coin, n_sig_figs, mantissa).unwrap_or_else(|| "null".to_owned())
            }
            InfoRequest::AllMids { .. } => {
                let mut out = b"{".to_vec();
                self.write_mids(&mut out);
                out.push(b'}');
                String::from_utf8(out).unwrap_or_else(|_| "{}".to_owned())
            }
            InfoRequest::OpenOrders { user, .. } => {
                let orders = self.books.user_orders(&UserKey::new(&user));
                orders::open_orders_json(&orders.iter().map(OwnedL4Order::as_resting).collect::<Vec<_>>())
            }
            InfoRequest::FrontendOpenOrders { user, .. } => {
                let orders = self.books.user_orders(&UserKey::new(&user));
                orders::frontend_open_orders_json(&orders.iter().map(OwnedL4Order::as_resting).collect::<Vec<_>>())
            }
            InfoRequest::OrderStatus { user, oid } => {
                let key = UserKey::new(&user);
                let order = match oid {
                    OrderRef::Oid(oid) => self.books.user_order(&key, oid),
                    OrderRef::Cloid(cloid) => self.books.user_order_by_cloid(&key, &cloid.to_ascii_lowercase()),
                };
                // A resting order is `open` since it was placed (its timestamp); an order
                // that left the book is not known here (no order history is kept).
                let found = order.as_ref().map(|o| (o.as_resting(), o.meta.timestamp));
                orders::order_status_json(found.as_ref().map(|(o, ts)| (o, "open", *ts)))
            }
            InfoRequest::CandleSnapshot { req } => self.candle_snapshot(&req),
            // Answered by the HTTP layer (the documents, with `book_ctxs` for the contexts).
            InfoRequest::Meta { .. }
            | InfoRequest::SpotMeta
            | InfoRequest::PerpDexs
            | InfoRequest::MetaAndAssetCtxs { .. }
            | InfoRequest::SpotMetaAndAssetCtxs
            | InfoRequest::ExchangeStatus => "null".to_owned(),
        }
    }

    /// The books' part of each coin's asset context (`crate::ctx`) and its volume, in order.
    pub(super) fn book_ctxs(&self, coins: &[(String, bool)]) -> Vec<BookCtx> {
        coins
            .iter()
            .map(|(name, impact)| {
                let id = self.books.coins.id(name).filter(|_| self.allowed(name));
                let mut ctx = match id.and_then(|id| Some((self.books.book(id)?, self.books.coins.spec(id).units))) {
                    Some((book, units)) => crate::ctx::book_ctx(name, book, units, *impact),
                    None => BookCtx::default(),
                };
                ctx.volume = id.and_then(|id| self.volume_texts(id));
                ctx
            })
            .collect()
    }

    pub(super) fn drop_client(&mut self, id: ClientId) {
        let (config, coins) = (&self.config, &self.books.coins);
        self.subs.disconnect(id, |sub| slot_of(config, coins, sub));
    }
}
