//! Client requests handled on the engine thread: (un)subscribe with Hyperliquid's
//! validation and error strings, `post` info requests, `/info` `l2Book`/`allMids`, and
//! forgetting a client's subscriptions.
//!
//! Owns: the mapping from a `Subscription` to its index slot. Must not: block or compute
//! anything but the one view a request asks for.

use bytes::Bytes;
use ticktrade_core::Side;
use ticktrade_hl_proto::asset_ctx::BookCtx;
use ticktrade_hl_proto::info::InfoRequest;
use ticktrade_hl_proto::ws::{self as proto, ClientMessage, L2Params, L2Variant, Subscription, errors};

use super::Engine;
use crate::server::publish::{ClientId, L2Key, Slot};

impl Engine {
    pub(super) fn slot_for(&self, sub: &Subscription) -> Option<Slot> {
        if self.config.raw || !self.allowed(sub.coin()) {
            return None;
        }
        let coin = self.books.coins.id(sub.coin())?;
        match sub {
            Subscription::L2Book { n_sig_figs, mantissa, n_levels, fast, .. } => {
                let params = L2Params::new(*n_sig_figs, *mantissa, *n_levels, *fast)?;
                Some(Slot::L2(coin, L2Key::new(params)))
            }
            Subscription::Trades { coin } => Some(Slot::Trades(coin.clone())),
            Subscription::L4Book { .. } => Some(Slot::L4(coin)),
        }
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
                    return self.send_text(id, proto::error_frame(&errors::invalid(&sub.to_json())));
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
                        let frame = proto::l4_snapshot_frame(sub.coin(), time_ms, self.books.height(), &bids, &asks);
                        self.send_text(id, frame);
                    }
                    Slot::Trades(_) => {}
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
                let mut mids = serde_json::Map::new();
                for (id, spec) in self.books.coins.iter() {
                    let Some(mid) = self.books.book(id).and_then(|b| crate::ctx::mid_text(b, spec.units)) else {
                        continue;
                    };
                    mids.insert(spec.name.clone(), serde_json::Value::String(mid));
                }
                serde_json::Value::Object(mids).to_string()
            }
            // Answered by the HTTP layer (the documents, with `book_ctxs` for the contexts).
            InfoRequest::Meta { .. }
            | InfoRequest::SpotMeta
            | InfoRequest::PerpDexs
            | InfoRequest::MetaAndAssetCtxs { .. }
            | InfoRequest::SpotMetaAndAssetCtxs
            | InfoRequest::ExchangeStatus => "null".to_owned(),
        }
    }

    /// The books' part of each coin's asset context (`crate::ctx`), in order.
    pub(super) fn book_ctxs(&self, coins: &[(String, bool)]) -> Vec<BookCtx> {
        coins
            .iter()
            .map(|(name, impact)| {
                let id = self.books.coins.id(name).filter(|_| self.allowed(name));
                match id.and_then(|id| Some((self.books.book(id)?, self.books.coins.spec(id).units))) {
                    Some((book, units)) => crate::ctx::book_ctx(name, book, units, *impact),
                    None => BookCtx::default(),
                }
            })
            .collect()
    }

    pub(super) fn drop_client(&mut self, id: ClientId) {
        let raw = self.config.raw;
        let coins = &self.books.coins;
        let allowed = |c: &str| self.config.coins.as_ref().is_none_or(|set| set.contains(c));
        self.subs.disconnect(id, |sub| {
            if raw || !allowed(sub.coin()) {
                return None;
            }
            let coin = coins.id(sub.coin())?;
            Some(match sub {
                Subscription::L2Book { n_sig_figs, mantissa, n_levels, fast, .. } => {
                    Slot::L2(coin, L2Key::new(L2Params::new(*n_sig_figs, *mantissa, *n_levels, *fast)?))
                }
                Subscription::Trades { coin } => Slot::Trades(coin.clone()),
                Subscription::L4Book { .. } => Slot::L4(coin),
            })
        });
    }
}
