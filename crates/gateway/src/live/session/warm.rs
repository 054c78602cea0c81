//! The warm-up of a busy-polling loop: after each empty read, [`Core::warm`] runs the pure part
//! of the book frame path (channel lookup, decoder, loss and edit risk checks, request encoder,
//! framing and masking) over a kept frame into scratch buffers, so that its code is in the
//! instruction cache when the next frame lands. The read's system call and the answers handled
//! since the last tick evict it; a cold tick waits on those misses one by one.
//!
//! Owns: the kept frame and the scratch buffers.
//! Must not: change anything the session sends or keeps (order state, request ids, credits,
//! masks, counters, the journal), allocate, or call the strategy's callbacks. The in-memory
//! benchmark's test checks the first: a session sends the same bytes with and without it.
//!
//! Effect: in the model of callgrind's cache simulator a warmed tick misses the instruction
//! cache about half as often; `bench tick-to-trade --busy-poll` measures what that is worth
//! (docs/PERFORMANCE.md §4.1).

use super::*;
use ticktrade_core::{Price, Qty};
use ticktrade_strategy::VenueId;

/// What [`Core::warm`] runs over: a copy of the first change frame seen, the label of the last
/// order placed or edited, a scratch decode buffer and a scratch writer (its own mask state).
/// Only a busy-polling session keeps a frame (and has the buffers); otherwise a round does
/// nothing.
pub(super) struct Warm {
    enabled: bool,
    frame: Vec<u8>,
    instrument: Option<InstrumentId>,
    label: Option<Label>,
    updates: Vec<LevelUpdate>,
    writer: WsWriter,
}

/// The longest change frame kept for warming.
const WARM_FRAME_CAP: usize = 4096;
/// Room for its level updates: a level takes at least 13 bytes (`["new",1,1],`).
const WARM_LEVELS_CAP: usize = WARM_FRAME_CAP / 8;

impl Warm {
    pub(super) fn new(enabled: bool) -> Warm {
        let room = |n: usize| if enabled { n } else { 0 };
        Warm {
            enabled,
            frame: Vec::with_capacity(room(WARM_FRAME_CAP)),
            instrument: None,
            label: None,
            updates: Vec::with_capacity(room(WARM_LEVELS_CAP)),
            writer: WsWriter::new(Role::Client, room(4096), 0x85EB_CA6B),
        }
    }

    /// Keeps `payload` (a change frame of `instrument` that decoded) if none is kept yet.
    #[inline(always)]
    pub(super) fn keep_first(&mut self, instrument: InstrumentId, payload: &[u8]) {
        if self.enabled && self.instrument.is_none() {
            self.keep(instrument, payload);
        }
    }

    #[cold]
    fn keep(&mut self, instrument: InstrumentId, payload: &[u8]) {
        if payload.len() <= WARM_FRAME_CAP {
            self.frame.clear();
            self.frame.extend_from_slice(payload);
            self.instrument = Some(instrument);
        }
    }

    #[inline(always)]
    pub(super) fn set_label(&mut self, label: Label) {
        self.label = Some(label);
    }
}

impl<S: Strategy> Core<S> {
    /// One warm-up round (see the module doc). Nothing is applied, decided or sent.
    #[inline(never)]
    pub fn warm(&mut self) {
        let Some(instrument) = self.warm.instrument else { return };
        let i = instrument.0 as usize;
        let found = self.book_instrument(&self.warm.frame);
        let now = self.now();
        let Warm { frame, updates, writer, label, .. } = &mut self.warm;
        let _ = self.decoders[i].decode(frame, updates);
        let checked = self.runner.warm(instrument, label.as_ref(), &self.books, now);
        let mut written = 0;
        if let Some(label) = *label {
            let (price, qty) = updates.first().map_or((Price::from_raw(1), Qty::from_raw(1)), |u| (u.price, u.qty));
            let edit = Action::Edit { label, instrument, venue_id: VenueId::EMPTY, price, qty };
            outgoing::write_request(&self.encoders, &self.instruments, writer.begin(), edit, 0);
            written = writer.finish(Opcode::Text).len();
        }
        std::hint::black_box((found, checked, written));
    }
}
