//! What the session sends: control requests and the strategy's actions, paced by the venue's
//! credits (places and edits refused locally when spent, cancels deferred), encoded into the
//! turn's write batch.
//!
//! Owns: the request encoding, the local pacing, the deferred cancels, the batch write and the
//! floor probe's write.
//! Must not: allocate or log on the path from a book frame to its write.

use super::*;

impl<S: Strategy> Core<S> {
    /// Encodes one request into the write batch, spending `class` credits (control requests
    /// are few and never refused locally: the venue's non-matching pool is large).
    pub fn request(&mut self, class: Class, encode: impl FnOnce(&mut Vec<u8>)) {
        if !self.sync.connected {
            return;
        }
        let _ = self.credits.try_take(class, self.now().0);
        self.encode_request(encode);
    }

    /// Encodes one request into the write batch (credits already spent).
    pub fn encode_request(&mut self, encode: impl FnOnce(&mut Vec<u8>)) {
        let buf = self.writer.begin();
        encode(buf);
        let frame = self.writer.finish(Opcode::Text);
        self.wire.extend_from_slice(frame);
    }

    /// Sends the outbox, oldest first. Callbacks that run meanwhile (a local refusal) may
    /// append to it; those are sent in the same turn.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub fn send_actions(&mut self, now: Mono) {
        let mut k = 0;
        while k < self.outbox.len() {
            let action = self.outbox.as_slice()[k];
            k += 1;
            self.send_action(action, now);
        }
        self.outbox.clear();
    }

    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub(super) fn send_action(&mut self, action: Action, now: Mono) {
        if self.config.dry_run {
            self.stats.would_send += 1;
            self.pending_journal_push(Entry::Sent { at: now, action, dry_run: true });
            return;
        }
        if matches!(self.sync.phase, Phase::Done) {
            return;
        }
        if !self.sync.authenticated || self.credits_for(action, now).is_err() {
            match action {
                Action::Place { label, .. } => {
                    self.stats.rate_limited += 1;
                    let reason = Reason::new(10028, "not sent: request credits spent");
                    self.reject(&label, Request::Place, reason, now);
                }
                Action::Edit { label, .. } => {
                    self.stats.rate_limited += 1;
                    let reason = Reason::new(10028, "not sent: request credits spent");
                    self.reject(&label, Request::Edit, reason, now);
                }
                Action::Cancel { .. } | Action::CancelAll { .. } => self.defer(action),
            }
            return;
        }
        self.encode_action(action);
        self.pending_journal_push(Entry::Sent { at: now, action, dry_run: false });
    }

    /// Spends the matching-engine credits of `action`'s requests, all or none (a cancel-all
    /// of every instrument is one request per instrument).
    pub(super) fn credits_for(&mut self, action: Action, now: Mono) -> Result<(), u64> {
        let n = match action {
            Action::CancelAll { instrument: None } => self.instruments.len(),
            _ => 1,
        };
        self.credits.try_take_n(Class::Matching, now.0, n as u64)
    }

    /// A cancel that cannot go out now waits, in order. The queue holds one entry per order
    /// slot; beyond that, a cancel-all replaces everything queued (it covers them all).
    pub fn defer(&mut self, action: Action) {
        if matches!(self.sync.phase, Phase::Stopping(_)) {
            // The stop's own cancel rounds cover every order; the queue holds theirs.
            return;
        }
        if self.deferred.len() >= self.deferred_cap {
            self.deferred.clear();
            self.deferred.push_back(Action::CancelAll { instrument: None });
            return;
        }
        self.deferred.push_back(action);
    }

    /// Sends `action` if its credits are there, or queues it behind the deferred cancels
    /// without the queue's cap (the stop's cancels must all go out; the queue has room for
    /// one per instrument besides).
    pub(in crate::live) fn send_or_defer(&mut self, action: Action, now: Mono) {
        if !self.sync.connected {
            return;
        }
        if self.deferred.is_empty() && self.credits_for(action, now).is_ok() {
            self.encode_action(action);
            self.pending_journal_push(Entry::Sent { at: now, action, dry_run: false });
        } else {
            self.deferred.push_back(action);
        }
    }

    /// Encodes a request for `action` (credits already spent).
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub(super) fn encode_action(&mut self, action: Action) {
        let pending = match action {
            Action::Place { label, .. } => {
                self.stats.places += 1;
                self.warm.set_label(label);
                Pending::Place(label)
            }
            Action::Edit { label, .. } => {
                self.stats.edits += 1;
                self.warm.set_label(label);
                Pending::Edit(label)
            }
            Action::Cancel { label, .. } => {
                self.stats.cancels += 1;
                Pending::Cancel(label)
            }
            Action::CancelAll { instrument } => {
                self.stats.cancels += 1;
                let range = match instrument {
                    Some(i) => i.0 as usize..i.0 as usize + 1,
                    None => 0..self.instruments.len(),
                };
                for i in range {
                    let id = self.inflight.issue(Pending::CancelAll);
                    let one = Action::CancelAll { instrument: Some(InstrumentId(i as u32)) };
                    write_request(&self.encoders, &self.instruments, self.writer.begin(), one, id);
                    let frame = self.writer.finish(Opcode::Text);
                    self.wire.extend_from_slice(frame);
                }
                return;
            }
        };
        let id = self.inflight.issue(pending);
        write_request(&self.encoders, &self.instruments, self.writer.begin(), action, id);
        let frame = self.writer.finish(Opcode::Text);
        self.wire.extend_from_slice(frame);
    }
}

/// Appends the request body of `action` with request id `id`. A cancel-all is one request per
/// instrument: this writes the one of `CancelAll { instrument: Some(_) }`, and the caller
/// expands `None` into those. Pure: the session's warm-up runs it into a scratch buffer.
#[inline(never)]
#[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
pub(super) fn write_request(
    encoders: &[OrderEncoder],
    instruments: &Instruments,
    out: &mut Vec<u8>,
    action: Action,
    id: u64,
) {
    match action {
        Action::Place { label, order } => {
            let wire = WireOrder {
                side: order.side,
                kind: OrderKind::Limit(order.price),
                qty: order.qty,
                label: wire_tag(&label),
                time_in_force: match order.time_in_force {
                    TimeInForce::GoodTilCancelled => ticktrade_deribit_proto::order::TimeInForce::GoodTilCancelled,
                    TimeInForce::ImmediateOrCancel => ticktrade_deribit_proto::order::TimeInForce::ImmediateOrCancel,
                    TimeInForce::FillOrKill => ticktrade_deribit_proto::order::TimeInForce::FillOrKill,
                },
                post_only: order.post_only,
                // The strategy chose the price: a post-only order that would cross is
                // refused rather than moved.
                reject_post_only: order.post_only,
                reduce_only: order.reduce_only,
            };
            encoders[order.instrument.0 as usize].encode_order(out, id, &wire);
        }
        Action::Edit { label, instrument, price, qty, .. } => {
            encoders[instrument.0 as usize].encode_edit_by_label(out, id, wire_tag(&label), qty, price, false);
        }
        Action::Cancel { label, instrument, venue_id } => {
            if venue_id.is_empty() {
                let currency = instruments.spec(instrument).order_currency();
                let currency = (!currency.is_empty()).then_some(currency);
                requests::cancel_by_label(out, id, wire_tag(&label), currency);
            } else {
                requests::cancel(out, id, venue_id.as_str());
            }
        }
        Action::CancelAll { instrument } => {
            if let Some(i) = instrument {
                requests::cancel_all_by_instrument(out, id, &instruments.specs[i.0 as usize].name);
            }
        }
    }
}

pub(super) fn wire_tag(label: &Label) -> OrderTag<'_> {
    // Labels come from `LabelGen` (ASCII, at most 32 bytes), so this never falls back.
    WireLabel::new(label.as_bytes()).map_or(OrderTag::None, OrderTag::Text)
}

/// Writes the batched frames, if any, and empties the batch.
pub(super) fn write_wire(stream: &mut HotStream, wire: &mut Vec<u8>) -> std::io::Result<()> {
    if wire.is_empty() {
        return Ok(());
    }
    let written = std::io::Write::write_all(stream, wire);
    wire.clear();
    written
}

/// The floor probe: the last order's bytes written again at the same distance from the read
/// as the order was (a write made at once often finds the peer's vCPU still awake and is
/// cheaper), timing only the write.
pub(super) fn floor_write(floor: &mut Floor, conn: &mut Conn, clock: &TscClock) {
    if floor.last.is_empty() {
        return;
    }
    while clock.raw().0.saturating_sub(conn.t0.0) < floor.last_compute {
        std::hint::spin_loop();
    }
    let start = clock.raw();
    if std::io::Write::write_all(&mut conn.stream, &floor.last).is_err() {
        return;
    }
    let end = clock.raw();
    let mut stamps = Stamps::received(clock.to_mono(start), ticktrade_core::Utc(0));
    stamps.set(Stage::Sent, clock.to_mono(end));
    floor.ring.push(stamps);
}
