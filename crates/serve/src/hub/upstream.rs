//! The hub's side of the upstream connection: requests it sends (subscriptions by demand),
//! the answers routed back by their pending kind, and each upstream frame classified into a
//! book change, a relayed notification or a response.
//!
//! Owns: `Hub::send_upstream`, `subscribe_upstream`, `on_connected`, `on_upstream`,
//! `on_response`, `relay`.
//! Must not: block on the upstream (every request is a bounded send).

use super::*;

impl Hub {
    /// Sends a request upstream; the reply is routed by `pending`.
    pub(crate) fn send_upstream(&mut self, method: &str, params: &str, pending: Pending) {
        let id = self.next_up_id;
        self.next_up_id += 1;
        self.pending.insert(id, pending);
        let text = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#);
        if self.up_tx.try_send(text).is_err() {
            self.pending.remove(&id);
            tracing::warn!("upstream request queue full; {method} dropped");
        }
    }

    pub(crate) fn subscribe_upstream(&mut self, channels: &[String], subscribe: bool) {
        if channels.is_empty() || !self.connected {
            return;
        }
        let method = if subscribe { "public/subscribe" } else { "public/unsubscribe" };
        // Every instrument's channels in one request can pass the venue's request limit (it
        // would refuse them all): one request per run that fits.
        for run in ticktrade_deribit_proto::requests::channel_batches(channels) {
            let params = serde_json::json!({ "channels": run }).to_string();
            self.send_upstream(method, &params, Pending::Ignore);
        }
    }

    pub(super) fn on_connected(&mut self) {
        self.connected = true;
        if self.specs.is_empty() {
            self.send_upstream("public/get_instruments", r#"{"currency":"any"}"#, Pending::Instruments);
        }
        for state in self.books.values_mut() {
            state.upstream_stale = true;
            state.upstream_last = None;
        }
        let live: Vec<String> = self.upstream.keys().cloned().collect();
        self.subscribe_upstream(&live, true);
    }

    /// Applies and fans out one upstream frame. Returns its channel when the frame goes on
    /// the bus too (a publisher's book, trades or ticker notification).
    pub(super) fn on_upstream(&mut self, text: &str, at: Instant) -> Option<String> {
        self.totals.upstream_frames += 1;
        self.trace_at = self.shared.as_ref().filter(|s| s.traces.is_on()).map(|_| (at, Instant::now()));
        let Ok(frame) = serde_json::from_str::<UpFrame<'_>>(text) else {
            tracing::warn!("upstream sent a frame that is not JSON-RPC ({} bytes)", text.len());
            return None;
        };
        if frame.method == Some("subscription") {
            let Some(UpParams { channel: Some(channel), data: Some(data) }) = frame.params else { return None };
            if !self.cfg.raw
                && let Some(instrument) = channel.strip_prefix("book.").and_then(|c| c.strip_suffix(".100ms"))
                && self.books.contains_key(instrument)
            {
                self.on_book(instrument, text.as_bytes(), at);
            }
            if self.relays.contains_key(channel) {
                self.relay(channel, text, data.get(), at);
            }
            let on_bus = self.bus.is_some() && ticktrade_bus::subject::parse_channel(channel).is_some();
            return on_bus.then(|| channel.to_owned());
        }
        if let Some(id) = frame.id
            && let Some(pending) = self.pending.remove(&id)
        {
            self.on_response(pending, text);
        }
        None
    }

    pub(super) fn on_response(&mut self, pending: Pending, text: &str) {
        match pending {
            Pending::Ignore => {}
            Pending::Instruments => match ticktrade_deribit_proto::instrument::parse_instruments_response(text, 0) {
                Ok(specs) => {
                    self.specs = specs
                        .into_iter()
                        .filter(|s| self.filter.as_ref().is_none_or(|f| f.contains(&s.name)))
                        .map(|s| (s.name.clone(), s))
                        .collect();
                    let _ = self.ready.send(true);
                    self.follow_all_for_bus();
                }
                Err(e) => tracing::warn!("upstream instrument list: {e}"),
            },
            Pending::Proxy { client, id } => crate::requests::forward_response(self, client, &id, text),
            Pending::Rest(reply) => {
                let _ = reply.send(crate::requests::rest_response(text));
            }
        }
    }

    /// Frames of an upstream channel relayed to the downstream channels fed by it.
    pub(super) fn relay(&mut self, upstream: &str, text: &str, data: &str, at: Instant) {
        let Some(downs) = self.relays.get(upstream).cloned() else { return };
        for down in downs {
            let frame = if down == upstream {
                text_frame(text.as_bytes())
            } else {
                let mut buf = Vec::with_capacity(text.len() + 8);
                encode_notification(&mut buf, &down, data, None);
                text_frame(&buf)
            };
            self.fan_out(&down, &frame, at, false);
        }
    }
}
