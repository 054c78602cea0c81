//! Synthetic Deribit `book.BTC-PERPETUAL.raw` frames for the hot path's tests and benchmarks:
//! a snapshot and change notifications built from `ticktrade_book::workload`'s seeded,
//! BTC-PERPETUAL-shaped stream and encoded by `ticktrade_deribit_proto`'s book encoder, so they
//! are byte-for-byte what the simulator publishes.
//!
//! Owns: grouping single-level deltas into frames (Deribit sends a few levels per change) and
//! the frames' change ids and timestamps.
//! Must not: do I/O or read a clock itself (timestamps are synthetic: 1 ms apart from a fixed
//! epoch).

use ticktrade_book::workload::{Workload, WorkloadParams};
use ticktrade_core::{Decimal, InstrumentSpec, SpecError};
use ticktrade_deribit_proto::book::encode_book_units;
use ticktrade_deribit_proto::{BookHeader, BookKind};

/// The instrument the synthetic feed is for.
pub const INSTRUMENT: &str = "BTC-PERPETUAL";
/// 2026-01-01T00:00:00Z in ms; frame `i` is stamped `EPOCH_MS + i`.
const EPOCH_MS: u64 = 1_767_225_600_000;

/// BTC-PERPETUAL's spec: tick 0.5 USD, amounts in multiples of 10 USD.
pub fn btc_perpetual() -> Result<InstrumentSpec, SpecError> {
    let tick = Decimal::new(5, 1).map_err(|_| SpecError::BadTick(Decimal::ZERO))?;
    let qty_unit = Decimal::new(10, 0).map_err(|_| SpecError::BadQtyUnit(Decimal::ZERO))?;
    InstrumentSpec::simple(INSTRUMENT, tick, qty_unit)
}

/// A snapshot frame and the change frames that follow it without gaps.
#[derive(Clone, Debug)]
pub struct SyntheticFeed {
    pub snapshot: Vec<u8>,
    /// Levels in the snapshot (to size decode buffers).
    pub snapshot_levels: usize,
    pub changes: Vec<Vec<u8>>,
    /// `change_id` of each change frame, ascending.
    pub change_ids: Vec<u64>,
}

impl SyntheticFeed {
    /// `n_frames` change frames of `levels_per_frame` level updates each (3 gives frames of
    /// about 300 bytes, like a recorded Deribit change frame of three levels).
    pub fn generate(spec: &InstrumentSpec, n_frames: usize, levels_per_frame: usize) -> SyntheticFeed {
        let per = levels_per_frame.max(1);
        let workload = Workload::generate(WorkloadParams::btc_perpetual(n_frames * per));
        let channel = "book.BTC-PERPETUAL.raw";
        let mut snapshot = Vec::new();
        let header = BookHeader {
            channel,
            instrument: INSTRUMENT,
            kind: BookKind::Snapshot,
            change_id: workload.snapshot_change_id,
            prev_change_id: None,
            timestamp_ms: EPOCH_MS,
        };
        encode_book_units(&mut snapshot, &header, spec, &workload.snapshot);
        let mut changes = Vec::with_capacity(n_frames);
        let mut change_ids = Vec::with_capacity(n_frames);
        for (i, deltas) in workload.deltas.chunks(per).enumerate() {
            let first = i * per;
            let (_, prev) = workload.change_ids(first);
            let (change_id, _) = workload.change_ids(first + deltas.len() - 1);
            let header = BookHeader {
                channel,
                instrument: INSTRUMENT,
                kind: BookKind::Change,
                change_id,
                prev_change_id: Some(prev),
                timestamp_ms: EPOCH_MS + 1 + i as u64,
            };
            let mut frame = Vec::with_capacity(320);
            encode_book_units(&mut frame, &header, spec, deltas);
            changes.push(frame);
            change_ids.push(change_id);
        }
        SyntheticFeed { snapshot, snapshot_levels: workload.snapshot.len(), changes, change_ids }
    }

    /// Index of the change frame with `change_id`, if it is one of ours.
    pub fn index_of(&self, change_id: u64) -> Option<usize> {
        self.change_ids.binary_search(&change_id).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticktrade_deribit_proto::decode_book_units;

    #[test]
    fn frames_decode_in_sequence_and_are_deribit_sized() {
        let spec = btc_perpetual().unwrap();
        let feed = SyntheticFeed::generate(&spec, 200, 3);
        assert_eq!(feed.changes.len(), 200);
        let mut updates = Vec::new();
        let snap = decode_book_units(&feed.snapshot, &spec, &mut updates).unwrap();
        assert_eq!(snap.kind, BookKind::Snapshot);
        assert_eq!(updates.len(), feed.snapshot_levels);
        let mut last = snap.change_id;
        for (frame, &id) in feed.changes.iter().zip(&feed.change_ids) {
            let header = decode_book_units(frame, &spec, &mut updates).unwrap();
            assert_eq!((header.prev_change_id, header.change_id), (Some(last), id));
            assert_eq!(updates.len(), 3);
            last = id;
        }
        let mean = feed.changes.iter().map(Vec::len).sum::<usize>() / feed.changes.len();
        assert!((200..400).contains(&mean), "mean frame {mean} B");
        assert_eq!(feed.index_of(feed.change_ids[17]), Some(17));
        assert_eq!(feed.index_of(snap.change_id), None);
    }
}
