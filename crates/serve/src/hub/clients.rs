//! The hub's side of each client: delivering frames through its bounded queue and what a
//! slow-client outcome means, removing a client and its interest, heartbeats, and the sweep
//! that drops upstream subscriptions nobody wants any more.
//!
//! Owns: `Hub::deliver`/`deliver_frame`, the per-client accounting, the heartbeat and linger
//! schedules (a `test_request` every interval; close 4000 "heartbeat close" when unanswered).
//! Must not: await on a client.

use super::*;

impl Hub {
    /// Sends the JSON `text` to client `id` as one WebSocket text frame; see [`Hub::deliver_frame`].
    pub(crate) fn deliver(&mut self, id: ClientId, text: &[u8], upstream_at: Option<Instant>) -> bool {
        let frame = text_frame(text);
        self.deliver_frame(id, &frame, upstream_at)
    }

    /// Writes `frame` (framed once, the same bytes for every client) to client `id`, or queues
    /// it behind what its socket has not taken yet; applies the slow-client policy when its
    /// queue is full. Returns whether the frame was written or queued.
    pub(crate) fn deliver_frame(&mut self, id: ClientId, frame: &Bytes, upstream_at: Option<Instant>) -> bool {
        let Some(client) = self.clients.get_mut(&id) else { return false };
        let offer = client.out.send(frame, upstream_at);
        if offer == Offer::Written
            && let Some(at) = upstream_at
        {
            let ns = client.delays.record(at, Instant::now());
            if let Some(shared) = &self.shared
                && let Ok(mut guard) = shared.fanout_ns.lock()
                && let Some(h) = guard.as_mut()
            {
                h.saturating_record(ns);
            }
        }
        self.account(id, offer, frame.len() as u64)
    }

    /// Counts a frame of `len` bytes offered to client `id` and carries out what its queue's
    /// slow-client policy decided. Returns whether the frame will reach the client.
    pub(super) fn account(&mut self, id: ClientId, offer: Offer, len: u64) -> bool {
        let Some(client) = self.clients.get_mut(&id) else { return false };
        match offer {
            Offer::Written | Offer::Queued | Offer::Conflated => {
                client.counters.messages += 1;
                client.counters.bytes += len;
                self.totals.messages += 1;
                self.totals.bytes += len;
                if offer == Offer::Conflated {
                    client.counters.conflations += 1;
                    self.totals.conflations += 1;
                }
                true
            }
            Offer::Dropped => {
                // Its book channels lost a change: each gets a fresh snapshot once the queue
                // has room again (`catch_up`).
                client.counters.drops += 1;
                self.totals.drops += 1;
                let mut conflated = false;
                for (ch, synced) in client.subs.iter_mut() {
                    if *synced && ch.starts_with("book.") {
                        *synced = false;
                        conflated = true;
                    }
                }
                if conflated {
                    client.counters.conflations += 1;
                    self.totals.conflations += 1;
                }
                false
            }
            Offer::Disconnect => {
                client.counters.drops += 1;
                self.totals.drops += 1;
                if let Some(kill) = client.kill.take() {
                    let _ = kill.send(format!("slow consumer: {} frames queued and not read", self.cfg.queue_capacity));
                }
                self.totals.disconnects += 1;
                self.remove_client(id);
                false
            }
            Offer::Closed => false,
        }
    }

    pub(crate) fn remove_client(&mut self, id: ClientId) {
        let Some(client) = self.clients.remove(&id) else { return };
        for ch in client.subs.keys() {
            self.drop_interest(id, ch);
        }
    }

    /// Removes client `id`'s interest in downstream channel `ch` (subscriber list, book
    /// channel list, relay map, upstream reference count).
    pub(crate) fn drop_interest(&mut self, id: ClientId, ch: &str) {
        let Some(ids) = self.subscribers.get_mut(ch) else { return };
        ids.retain(|c| *c != id);
        let empty = ids.is_empty();
        if empty {
            self.subscribers.remove(ch);
        }
        let Some(up) = upstream_channel(ch, self.cfg.raw) else { return };
        if empty {
            if let Some(downs) = self.relays.get_mut(&up) {
                downs.retain(|d| d != ch);
                if downs.is_empty() {
                    self.relays.remove(&up);
                }
            }
            if let Some(instrument) = Channel::parse(ch).and_then(|c| c.instrument())
                && let Some(state) = self.books.get_mut(instrument)
            {
                state.channels.retain(|d| d != ch);
            }
        }
        if let Some(sub) = self.upstream.get_mut(&up) {
            sub.refs = sub.refs.saturating_sub(1);
            if sub.refs == 0 {
                sub.idle_since = Some(timer_now());
            }
        }
    }

    /// Sends due heartbeat `test_request`s; closes (4000 "heartbeat close") a client that did
    /// not answer the previous one with `public/test` within its interval.
    pub(crate) fn heartbeats(&mut self, now: Instant) {
        const TEST_REQUEST: &[u8] = br#"{"jsonrpc":"2.0","method":"heartbeat","params":{"type":"test_request"}}"#;
        let due: Vec<(ClientId, bool)> = self
            .clients
            .iter()
            .filter_map(|(id, c)| c.heartbeat.filter(|h| now >= h.next).map(|h| (*id, h.awaiting)))
            .collect();
        for (id, unanswered) in due {
            if unanswered {
                if let Some(client) = self.clients.get(&id) {
                    client.out.close(4000, "heartbeat close");
                }
                self.totals.heartbeat_closes += 1;
                self.remove_client(id);
                continue;
            }
            if let Some(h) = self.clients.get_mut(&id).and_then(|c| c.heartbeat.as_mut()) {
                h.awaiting = true;
                h.next = now + h.every;
            }
            self.deliver(id, TEST_REQUEST, None);
        }
    }

    /// Drops upstream subscriptions idle for longer than `linger`.
    pub(super) fn sweep(&mut self, now: Instant) {
        let linger = self.cfg.linger;
        let idle: Vec<String> = self
            .upstream
            .iter()
            .filter(|(_, s)| s.refs == 0 && s.idle_since.is_some_and(|t| now.duration_since(t) >= linger))
            .map(|(ch, _)| ch.clone())
            .collect();
        for ch in &idle {
            self.upstream.remove(ch);
            if let Some(instrument) = ch.strip_prefix("book.").and_then(|c| c.strip_suffix(".100ms"))
                && !self.cfg.raw
            {
                self.books.remove(instrument);
            }
        }
        self.subscribe_upstream(&idle, false);
    }
}

/// The conflation key of a downstream channel: frames of one channel supersede each other.
pub(super) fn conflation_key(ch: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::hash::DefaultHasher::new();
    ch.hash(&mut h);
    h.finish()
}
