//! Interval channels (`book.{i}.100ms`, `book.{i}.agg2`, grouped books) on the hub's clock:
//! the rule (net change since the channel's last frame, on the published book's chain) is
//! `ticktrade_deribit_proto::interval`, shared with the simulator. `raw` channels get every
//! change as it is applied. An interval frame's fan-out delay counts from the newest upstream
//! frame it carries.
//!
//! Owns: per (instrument, interval) the channel's [`IntervalBook`], when its next frame is
//! due and whether anything changed since its last one.
//! Must not: send an interval change to a client that does not hold that channel's book (a
//! client joining between flushes gets the snapshot of the last flushed book, so the next
//! interval frame continues its chain).

use std::time::Instant;

use ticktrade_deribit_proto::book::encode_book_units;
use ticktrade_deribit_proto::channel::{Channel, Interval};
use ticktrade_deribit_proto::interval::{IntervalBook, IntervalChange, batched_interval, period};
use ticktrade_deribit_proto::{BookHeader, BookKind};

use crate::frames::{book_snapshot, encode_window, snapshot_frame};
use crate::hub::Hub;
use crate::wire::text_frame;

/// One interval of one instrument.
pub(crate) struct Batch {
    /// The book as the interval channels' subscribers last saw it.
    pub book: IntervalBook,
    pub next: Instant,
    /// When the newest upstream frame folded into this interval arrived (`Some` = dirty).
    pub dirty: Option<Instant>,
}

impl Hub {
    /// The batch of `instrument` over `interval`, started from the published book if new.
    fn batch(&mut self, instrument: &str, interval: Interval) -> Option<&mut Batch> {
        let state = self.books.get(instrument)?;
        let key = (instrument.to_owned(), interval);
        Some(self.batches.entry(key).or_insert_with(|| Batch {
            book: IntervalBook::new(&state.book),
            next: crate::hub::timer_now() + period(interval),
            dirty: None,
        }))
    }

    /// Something changed in `instrument`'s published book, from an upstream frame received at `at`.
    pub(crate) fn mark_dirty(&mut self, instrument: &str, at: Instant) {
        for ((name, _), batch) in self.batches.iter_mut() {
            if name == instrument {
                batch.dirty = Some(at);
            }
        }
    }

    /// The published book was replaced (every subscriber is re-snapshotted): the interval
    /// channels start again from it.
    pub(crate) fn reset_batches(&mut self, instrument: &str) {
        let Some(state) = self.books.get(instrument) else { return };
        for ((name, _), batch) in self.batches.iter_mut() {
            if name == instrument {
                batch.book.reset(&state.book);
                batch.dirty = None;
            }
        }
    }

    /// The snapshot a new subscriber of `ch` gets: an interval book channel's is the book as
    /// of its last flush, so its next frame continues the chain.
    pub(crate) fn snapshot_for(&mut self, ch: &str, instrument: &str) -> Vec<u8> {
        // A grouped window is recomputed on its interval's flush: the batch must exist even
        // when no plain interval channel of the instrument is subscribed.
        if let Some(Channel::GroupedBook { interval, .. }) = Channel::parse(ch)
            && interval != Interval::Raw
        {
            let _ = self.batch(instrument, interval);
        }
        if let Some(Channel::Book { interval, .. }) = Channel::parse(ch)
            && interval != Interval::Raw
            && self.batch(instrument, interval).is_some()
            && let (Some(state), Some(batch)) =
                (self.books.get(instrument), self.batches.get(&(instrument.to_owned(), interval)))
        {
            let mut buf = Vec::with_capacity(1024);
            book_snapshot(&mut buf, ch, instrument, &state.spec, batch.book.flushed(), state.timestamp_ms);
            return buf;
        }
        self.books.get(instrument).map(|state| snapshot_frame(ch, instrument, state)).unwrap_or_default()
    }

    /// Sends every due interval's net change to its channels' subscribers.
    pub(crate) fn flush_batches(&mut self, now: Instant) {
        self.batches.retain(|(name, _), _| self.books.contains_key(name));
        let due: Vec<(String, Interval)> =
            self.batches.iter().filter(|(_, b)| b.next <= now).map(|(k, _)| k.clone()).collect();
        let mut diff = Vec::new();
        for key in due {
            let (instrument, interval) = (&key.0, key.1);
            let Some(state) = self.books.get(instrument) else { continue };
            let Some(batch) = self.batches.get_mut(&key) else { continue };
            batch.next = now + period(interval);
            let Some(upstream_at) = batch.dirty else { continue };
            if !state.published || state.book.is_stale() {
                continue;
            }
            batch.dirty = None;
            diff.clear();
            // Changes that cancelled out still move the chain: the frame goes out empty.
            let Some(IntervalChange { prev_change_id: prev, change_id }) = batch.book.flush(&state.book, &mut diff)
            else {
                continue;
            };
            let mut frames = Vec::new();
            for ch in state.channels.iter().filter(|ch| batched_interval(ch) == Some(interval)) {
                let mut buf = Vec::with_capacity(512);
                match Channel::parse(ch) {
                    Some(Channel::Book { .. }) => {
                        let header = BookHeader {
                            channel: ch,
                            instrument,
                            kind: BookKind::Change,
                            change_id,
                            prev_change_id: Some(prev),
                            timestamp_ms: state.timestamp_ms,
                        };
                        encode_book_units(&mut buf, &header, &state.spec, &diff);
                        frames.push((ch.clone(), text_frame(&buf), true));
                    }
                    Some(Channel::GroupedBook { .. }) => {
                        encode_window(&mut buf, ch, instrument, state);
                        frames.push((ch.clone(), text_frame(&buf), false));
                    }
                    _ => {}
                }
            }
            for (ch, frame, needs_sync) in frames {
                self.fan_out(&ch, &frame, upstream_at, needs_sync);
            }
        }
    }
}
