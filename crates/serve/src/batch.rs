//! Interval channels (`book.{i}.100ms`, `book.{i}.agg2`, grouped books): one frame per
//! interval carrying the net change since the channel's last frame, on the published book's
//! `change_id` chain (`prev_change_id` = the id of the channel's previous frame), and only
//! when something changed. `raw` channels get every change as it is applied. An interval
//! frame's fan-out delay counts from the newest upstream frame it carries.
//!
//! Owns: per (instrument, interval) the book as of the last flush, when the next flush is due
//! and whether anything changed since.
//! Must not: send an interval change to a client that does not hold that channel's book (a
//! client joining between flushes gets the snapshot of the last flushed book, so the next
//! interval frame continues its chain).

use std::time::{Duration, Instant};

use ticktrade_book::l2::L2Book;
use ticktrade_deribit_proto::book::encode_book_units;
use ticktrade_deribit_proto::channel::{Channel, Interval};
use ticktrade_deribit_proto::{BookHeader, BookKind};

use crate::diff::book_diff;
use crate::frames::{book_snapshot, encode_window, snapshot_frame};
use crate::hub::Hub;
use crate::wire::text_frame;

/// One interval of one instrument.
pub(crate) struct Batch {
    /// The book as the interval channels' subscribers last saw it.
    pub flushed: L2Book,
    pub next: Instant,
    /// When the newest upstream frame folded into this interval arrived (`Some` = dirty).
    pub dirty: Option<Instant>,
}

/// The interval a downstream book channel is batched over, `None` for `raw` (every change).
pub(crate) fn batched_interval(ch: &str) -> Option<Interval> {
    match Channel::parse(ch)? {
        Channel::Book { interval, .. } | Channel::GroupedBook { interval, .. } if interval != Interval::Raw => {
            Some(interval)
        }
        _ => None,
    }
}

/// How often an interval channel is sent.
pub(crate) fn period(interval: Interval) -> Duration {
    Duration::from_millis(interval.period_ms())
}

impl Hub {
    /// The batch of `instrument` over `interval`, started from the published book if new.
    fn batch(&mut self, instrument: &str, interval: Interval) -> Option<&mut Batch> {
        let state = self.books.get(instrument)?;
        let key = (instrument.to_owned(), interval);
        Some(self.batches.entry(key).or_insert_with(|| Batch {
            flushed: state.book.clone(),
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
                batch.flushed = state.book.clone();
                batch.dirty = None;
            }
        }
    }

    /// The snapshot a new subscriber of `ch` gets: an interval book channel's is the book as
    /// of its last flush, so its next frame continues the chain.
    pub(crate) fn snapshot_for(&mut self, ch: &str, instrument: &str) -> Vec<u8> {
        if let Some(Channel::Book { interval, .. }) = Channel::parse(ch)
            && interval != Interval::Raw
            && self.batch(instrument, interval).is_some()
            && let (Some(state), Some(batch)) =
                (self.books.get(instrument), self.batches.get(&(instrument.to_owned(), interval)))
        {
            let mut buf = Vec::with_capacity(1024);
            book_snapshot(&mut buf, ch, instrument, &state.spec, &batch.flushed, state.timestamp_ms);
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
            book_diff(&batch.flushed, &state.book, &mut diff);
            let prev = batch.flushed.last_change_id().unwrap_or(0);
            let change_id = state.book.last_change_id().unwrap_or(0);
            batch.flushed = state.book.clone();
            if diff.is_empty() {
                continue;
            }
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
