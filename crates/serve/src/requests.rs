//! The JSON-RPC methods a downstream client may call, answered by the hub: subscriptions
//! (validated against the instrument list and the per-client limit), a few local methods,
//! and any other `public/*` method proxied upstream with the client's id restored.
//!
//! Owns: request decode, response encode, the subscription bookkeeping on subscribe.
//! Must not: answer before earlier frames queued to the client (responses go through the
//! same queue as notifications, so a subscribe reply precedes its snapshot).

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;
use ticktrade_book::l2::L2Book;
use ticktrade_core::Side;
use ticktrade_deribit_proto::Id;
use ticktrade_deribit_proto::channel::Channel;
use ticktrade_deribit_proto::envelope::{ServerStamps, decode_request, encode_error, encode_result};
use ticktrade_deribit_proto::error::code;

use crate::hub::{BookState, ClientId, Heartbeat, Hub, OwnedId, Pending, grouping, upstream_channel};
use crate::now_us;

#[derive(Deserialize)]
struct ChannelsParams {
    channels: Vec<String>,
}

#[derive(Deserialize)]
struct UpResponse<'a> {
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
}

fn stamps(us_in: u64) -> ServerStamps {
    ServerStamps { us_in, us_out: now_us(), testnet: false }
}

impl OwnedId {
    fn from_id(id: Id<'_>) -> OwnedId {
        match id {
            Id::Num(n) => OwnedId::Num(n),
            Id::Str(s) => OwnedId::Str(s.to_owned()),
        }
    }

    fn as_id(&self) -> Id<'_> {
        match self {
            OwnedId::Num(n) => Id::Num(*n),
            OwnedId::Str(s) => Id::Str(s),
        }
    }
}

/// Sends an upstream reply to the client that asked, under the client's own id.
pub(crate) fn forward_response(hub: &mut Hub, client: ClientId, id: &OwnedId, text: &str) {
    let mut out = Vec::with_capacity(text.len() + 64);
    match serde_json::from_str::<UpResponse<'_>>(text) {
        Ok(UpResponse { result: Some(result), .. }) => {
            encode_result(&mut out, id.as_id(), result.get(), stamps(now_us()))
        }
        Ok(UpResponse { error: Some(error), .. }) => {
            out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
            id.as_id().write(&mut out);
            out.extend_from_slice(br#","error":"#);
            out.extend_from_slice(error.get().as_bytes());
            out.extend_from_slice(br#","testnet":false}"#);
        }
        _ => encode_error(
            &mut out,
            Some(id.as_id()),
            code::INTERNAL_SERVER_ERROR,
            "internal_server_error",
            None,
            stamps(now_us()),
        ),
    }
    send(hub, client, out);
}

/// A REST reply from an upstream JSON-RPC response: its `result` or `error`, no id.
pub(crate) fn rest_response(text: &str) -> String {
    let mut out = Vec::with_capacity(text.len() + 64);
    out.extend_from_slice(br#"{"jsonrpc":"2.0","#);
    match serde_json::from_str::<UpResponse<'_>>(text) {
        Ok(UpResponse { result: Some(result), .. }) => {
            out.extend_from_slice(br#""result":"#);
            out.extend_from_slice(result.get().as_bytes());
        }
        Ok(UpResponse { error: Some(error), .. }) => {
            out.extend_from_slice(br#""error":"#);
            out.extend_from_slice(error.get().as_bytes());
        }
        _ => out.extend_from_slice(br#""error":{"code":11094,"message":"internal_server_error"}"#),
    }
    out.extend_from_slice(br#","testnet":false}"#);
    String::from_utf8(out).unwrap_or_default()
}

fn send(hub: &mut Hub, client: ClientId, out: Vec<u8>) {
    hub.deliver(client, &out, None);
}

impl Hub {
    pub(crate) fn on_request(&mut self, client: ClientId, text: &str, us_in: u64) {
        let mut out = Vec::with_capacity(256);
        let request = match decode_request(text) {
            Ok(r) => r,
            Err(e) => {
                e.encode(&mut out, stamps(us_in));
                return send(self, client, out);
            }
        };
        let params = request.params.map_or("{}", RawValue::get);
        let method = request.method.as_ref();
        let id = request.id;
        let channels = || serde_json::from_str::<ChannelsParams>(params).map(|p| p.channels);
        match method {
            "public/subscribe" | "private/subscribe" => match channels() {
                Ok(list) => {
                    if let Err(limit) = self.subscribe(client, id, &list, us_in) {
                        let data = format!(r#"{{"reason":"too many subscriptions (limit {limit} per connection)"}}"#);
                        invalid_params(self, client, id, &data, us_in);
                    }
                }
                Err(_) => invalid_channels(self, client, id, us_in),
            },
            "public/unsubscribe" | "private/unsubscribe" => match channels() {
                Ok(list) => {
                    let mut removed = Vec::new();
                    for ch in list {
                        let had = self.clients.get_mut(&client).and_then(|c| c.subs.remove(&ch)).is_some();
                        if had {
                            self.drop_interest(client, &ch);
                            removed.push(ch);
                        }
                    }
                    let result = serde_json::to_string(&removed).unwrap_or_else(|_| "[]".into());
                    encode_result(&mut out, id, &result, stamps(us_in));
                    send(self, client, out);
                }
                Err(_) => invalid_channels(self, client, id, us_in),
            },
            "public/unsubscribe_all" | "private/unsubscribe_all" => {
                let subs: Vec<String> =
                    self.clients.get_mut(&client).map(|c| c.subs.drain().map(|(k, _)| k).collect()).unwrap_or_default();
                for ch in subs {
                    self.drop_interest(client, &ch);
                }
                encode_result(&mut out, id, r#""ok""#, stamps(us_in));
                send(self, client, out);
            }
            "public/get_time" => {
                encode_result(&mut out, id, &(now_us() / 1000).to_string(), stamps(us_in));
                send(self, client, out);
            }
            "public/test" | "public/hello" => {
                if let Some(h) = self.clients.get_mut(&client).and_then(|c| c.heartbeat.as_mut()) {
                    h.awaiting = false;
                }
                encode_result(&mut out, id, r#"{"version":"1.2.26"}"#, stamps(us_in));
                send(self, client, out);
            }
            "public/set_heartbeat" => {
                #[derive(Deserialize)]
                struct HeartbeatParams {
                    interval: f64,
                }
                let min = self.cfg.min_heartbeat.as_secs_f64();
                match serde_json::from_str::<HeartbeatParams>(params) {
                    Ok(p) if p.interval >= min && p.interval <= 3_600.0 => {
                        let every = std::time::Duration::from_secs_f64(p.interval);
                        if let Some(c) = self.clients.get_mut(&client) {
                            let next = crate::hub::timer_now() + every;
                            c.heartbeat = Some(Heartbeat { every, next, awaiting: false });
                        }
                        encode_result(&mut out, id, r#""ok""#, stamps(us_in));
                    }
                    _ => {
                        let data = format!(r#"{{"reason":"must be between {min} and 3600","param":"interval"}}"#);
                        encode_invalid_params(&mut out, id, &data, us_in);
                    }
                }
                send(self, client, out);
            }
            "public/disable_heartbeat" => {
                if let Some(c) = self.clients.get_mut(&client) {
                    c.heartbeat = None;
                }
                encode_result(&mut out, id, r#""ok""#, stamps(us_in));
                send(self, client, out);
            }
            "public/ticktrade_get_stats" => {
                encode_result(&mut out, id, &self.stats_result(client), stamps(us_in));
                send(self, client, out);
            }
            "public/get_order_book" if self.local_book_result(params).is_some() => {
                let result = self.local_book_result(params).unwrap_or_default();
                encode_result(&mut out, id, &result, stamps(us_in));
                send(self, client, out);
            }
            m if m.starts_with("public/") => {
                if self.connected {
                    let method = m.to_owned();
                    self.send_upstream(&method, params, Pending::Proxy { client, id: OwnedId::from_id(id) });
                } else {
                    let data = r#""upstream not connected""#;
                    encode_error(
                        &mut out,
                        Some(id),
                        code::INTERNAL_SERVER_ERROR,
                        "internal_server_error",
                        Some(data),
                        stamps(us_in),
                    );
                    send(self, client, out);
                }
            }
            m if m.starts_with("private/") => {
                encode_error(&mut out, Some(id), code::UNAUTHORIZED, "unauthorized", None, stamps(us_in));
                send(self, client, out);
            }
            _ => {
                encode_error(&mut out, Some(id), code::METHOD_NOT_FOUND, "Method not found", None, stamps(us_in));
                send(self, client, out);
            }
        }
    }

    /// `GET /api/v2/public/{method}`: the book, the time and `test` answered here, the rest
    /// relayed upstream (the reply is sent on `reply` when it comes).
    pub(crate) fn on_rest(&mut self, method: &str, params: &str, reply: tokio::sync::oneshot::Sender<String>) {
        let local = match method {
            "get_order_book" => self.local_book_result(params),
            "get_time" => Some((now_us() / 1000).to_string()),
            "test" => Some(r#"{"version":"1.2.26"}"#.to_owned()),
            _ => None,
        };
        if let Some(result) = local {
            let us_out = now_us();
            let _ = reply.send(format!(
                r#"{{"jsonrpc":"2.0","result":{result},"usIn":{us_out},"usOut":{us_out},"usDiff":0,"testnet":false}}"#
            ));
            return;
        }
        if !self.connected {
            let _ = reply.send(
                r#"{"jsonrpc":"2.0","error":{"code":11094,"message":"internal_server_error","data":"upstream not connected"},"testnet":false}"#
                    .to_owned(),
            );
            return;
        }
        let method = format!("public/{method}");
        self.send_upstream(&method, params, Pending::Rest(reply));
    }

    /// `public/get_order_book` from the published book (on the same chain as the book
    /// notifications), or `None` to ask upstream (book not kept here, or not synced).
    fn local_book_result(&self, params: &str) -> Option<String> {
        #[derive(Deserialize)]
        struct BookParams {
            instrument_name: String,
            #[serde(default)]
            depth: Option<usize>,
        }
        let p: BookParams = serde_json::from_str(params).ok()?;
        let state = self.books.get(&p.instrument_name)?;
        if self.cfg.raw || !state.published || state.book.is_stale() {
            return None;
        }
        let depth = p.depth.unwrap_or(20).max(1);
        let mut out = Vec::with_capacity(1024);
        out.extend_from_slice(br#"{"timestamp":"#);
        out.extend_from_slice(state.timestamp_ms.to_string().as_bytes());
        out.extend_from_slice(br#","state":"open","instrument_name":"#);
        ticktrade_deribit_proto::envelope::write_json_str(&mut out, &p.instrument_name);
        out.extend_from_slice(br#","change_id":"#);
        out.extend_from_slice(state.book.last_change_id().unwrap_or(0).to_string().as_bytes());
        for (name, side) in [("bids", Side::Buy), ("asks", Side::Sell)] {
            out.extend_from_slice(format!(r#","{name}":["#).as_bytes());
            for (i, level) in state.book.top(side, depth).enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                out.push(b'[');
                state.spec.write_price(level.price, &mut out);
                out.push(b',');
                state.spec.write_qty(level.qty, &mut out);
                out.push(b']');
            }
            out.push(b']');
            let best = state.book.best(side);
            let key = if side == Side::Buy { "bid" } else { "ask" };
            out.extend_from_slice(format!(r#","best_{key}_price":"#).as_bytes());
            match best {
                Some(l) => state.spec.write_price(l.price, &mut out),
                None => out.extend_from_slice(b"null"),
            }
            out.extend_from_slice(format!(r#","best_{key}_amount":"#).as_bytes());
            match best {
                Some(l) => state.spec.write_qty(l.qty, &mut out),
                None => out.push(b'0'),
            }
        }
        out.push(b'}');
        String::from_utf8(out).ok()
    }

    /// Subscribes `client` to the channels it may have; replies with the accepted ones, then
    /// subscribes upstream and sends snapshots of books already held. `Err(limit)` if the
    /// per-connection limit would be passed (nothing is subscribed then).
    fn subscribe(&mut self, client: ClientId, id: Id<'_>, list: &[String], us_in: u64) -> Result<(), usize> {
        let limit = self.cfg.max_subscriptions;
        let Some(held) = self.clients.get(&client).map(|c| c.subs.len()) else { return Ok(()) };
        let new = list.iter().filter(|ch| self.clients.get(&client).is_some_and(|c| !c.subs.contains_key(*ch))).count();
        if held + new > limit {
            return Err(limit);
        }
        let mut accepted = Vec::new();
        let mut new_upstream = Vec::new();
        let mut instruments = Vec::new();
        for ch in list {
            if self.clients.get(&client).is_some_and(|c| c.subs.contains_key(ch)) {
                accepted.push(ch.clone());
                continue;
            }
            let Some(parsed) = Channel::parse(ch) else { continue };
            let Some(up) = upstream_channel(ch, self.cfg.raw) else { continue };
            let instrument = parsed.instrument();
            let spec = match instrument {
                Some(name) => match self.specs.get(name) {
                    Some(spec) => Some(spec.clone()),
                    None => continue,
                },
                None => None,
            };
            let book = !self.cfg.raw && matches!(parsed, Channel::Book { .. } | Channel::GroupedBook { .. });
            if let (Channel::GroupedBook { group, .. }, Some(spec)) = (parsed, &spec)
                && grouping(group, spec).is_none()
            {
                continue;
            }
            if book && let (Some(name), Some(spec)) = (instrument, spec) {
                let state = self.books.entry(name.to_owned()).or_insert_with(|| BookState {
                    spec,
                    book: L2Book::new(),
                    published: false,
                    upstream_last: None,
                    upstream_stale: true,
                    timestamp_ms: 0,
                    channels: Vec::new(),
                });
                if !state.channels.contains(ch) {
                    state.channels.push(ch.clone());
                }
                instruments.push(name.to_owned());
            } else {
                let downs = self.relays.entry(up.clone()).or_default();
                if !downs.contains(ch) {
                    downs.push(ch.clone());
                }
            }
            self.subscribers.entry(ch.clone()).or_default().push(client);
            if let Some(c) = self.clients.get_mut(&client) {
                c.subs.insert(ch.clone(), !book);
            }
            let sub = self.upstream.entry(up.clone()).or_default();
            if sub.refs == 0 && sub.idle_since.is_none() {
                new_upstream.push(up);
            }
            sub.refs += 1;
            sub.idle_since = None;
            accepted.push(ch.clone());
        }
        let mut out = Vec::with_capacity(128);
        let result = serde_json::to_string(&accepted).unwrap_or_else(|_| "[]".into());
        encode_result(&mut out, id, &result, stamps(us_in));
        send(self, client, out);
        new_upstream.dedup();
        self.subscribe_upstream(&new_upstream, true);
        let mut seen = HashMap::new();
        for name in instruments {
            if seen.insert(name.clone(), ()).is_none() {
                self.catch_up(&name);
            }
        }
        Ok(())
    }
}

fn invalid_channels(hub: &mut Hub, client: ClientId, id: Id<'_>, us_in: u64) {
    let data = r#"{"reason":"params.channels must be a list of channel names","param":"channels"}"#;
    invalid_params(hub, client, id, data, us_in);
}

/// Sends Deribit's -32602 `Invalid params` with `data` (a JSON object naming the reason).
fn invalid_params(hub: &mut Hub, client: ClientId, id: Id<'_>, data: &str, us_in: u64) {
    let mut out = Vec::new();
    encode_invalid_params(&mut out, id, data, us_in);
    send(hub, client, out);
}

fn encode_invalid_params(out: &mut Vec<u8>, id: Id<'_>, data: &str, us_in: u64) {
    encode_error(out, Some(id), code::INVALID_PARAMS, "Invalid params", Some(data), stamps(us_in));
}
