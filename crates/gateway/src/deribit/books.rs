//! Books kept locally from `book.{instrument}.{interval}` notifications: decode with the
//! instrument's spec, apply to `ticktrade_book::l2::L2Book`, detect gaps.
//!
//! Owns: one `L2Book` per subscribed instrument and the decode buffer.
//! Must not: do I/O. A gap (or any bad frame) marks the book stale and returns
//! `BookOutcome::Stale`; the session then resubscribes for a fresh snapshot.

use std::collections::HashMap;

use ticktrade_book::l2::{ApplyError, L2Book, LevelUpdate};
use ticktrade_core::{InstrumentSpec, Side};
use ticktrade_deribit_proto::{BookKind, decode_book_units};

use crate::venue::BookSnapshot;

struct Entry {
    spec: InstrumentSpec,
    book: L2Book,
    timestamp_ms: u64,
}

/// What one notification did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum BookOutcome {
    Applied {
        instrument: String,
        change_id: u64,
    },
    Synced {
        instrument: String,
        change_id: u64,
    },
    /// Became stale now (gap, bad entry): resync.
    Stale {
        instrument: String,
    },
    /// Ignored: not ours, or already stale and waiting for its snapshot.
    Ignored,
}

#[derive(Default)]
pub(crate) struct LocalBooks {
    books: HashMap<String, Entry>,
    updates: Vec<LevelUpdate>,
}

impl LocalBooks {
    /// Starts keeping `spec`'s book; it is stale until the first snapshot.
    pub(crate) fn track(&mut self, spec: InstrumentSpec) {
        let mut book = L2Book::new();
        book.mark_stale();
        self.books.entry(spec.name.clone()).or_insert(Entry { spec, book, timestamp_ms: 0 });
    }

    pub(crate) fn untrack(&mut self, instrument: &str) {
        self.books.remove(instrument);
    }

    /// Marks every book stale (the connection dropped).
    pub(crate) fn mark_all_stale(&mut self) {
        for entry in self.books.values_mut() {
            entry.book.mark_stale();
        }
    }

    pub(crate) fn stale(&self) -> Vec<String> {
        let mut names: Vec<String> =
            self.books.iter().filter(|(_, e)| e.book.is_stale()).map(|(n, _)| n.clone()).collect();
        names.sort();
        names
    }

    /// Applies one `book.*` notification frame (the whole frame text).
    pub(crate) fn on_frame(&mut self, instrument: &str, frame: &[u8]) -> BookOutcome {
        let Some(entry) = self.books.get_mut(instrument) else { return BookOutcome::Ignored };
        let header = match decode_book_units(frame, &entry.spec, &mut self.updates) {
            Ok(header) => header,
            Err(_) => {
                let was_stale = entry.book.is_stale();
                entry.book.mark_stale();
                return if was_stale {
                    BookOutcome::Ignored
                } else {
                    BookOutcome::Stale { instrument: instrument.to_owned() }
                };
            }
        };
        entry.timestamp_ms = header.timestamp_ms;
        match (header.kind, header.prev_change_id) {
            (BookKind::Snapshot | BookKind::Window, _) | (BookKind::Change, None) => {
                entry.book.apply_snapshot(header.change_id, &self.updates);
                BookOutcome::Synced { instrument: instrument.to_owned(), change_id: header.change_id }
            }
            (BookKind::Change, Some(prev)) => match entry.book.apply_change(header.change_id, prev, &self.updates) {
                Ok(()) => BookOutcome::Applied { instrument: instrument.to_owned(), change_id: header.change_id },
                // A duplicate of what we already applied is harmless: the book went stale
                // only because `apply_change` is strict; resync to be certain.
                Err(ApplyError::Stale) => BookOutcome::Ignored,
                Err(_) => BookOutcome::Stale { instrument: instrument.to_owned() },
            },
        }
    }

    /// The top `depth` levels (0 = all) of a synced book.
    pub(crate) fn snapshot(&self, instrument: &str, depth: usize) -> Option<BookSnapshot> {
        let entry = self.books.get(instrument)?;
        if entry.book.is_stale() {
            return None;
        }
        let depth = if depth == 0 { usize::MAX } else { depth };
        let side = |side| {
            entry
                .book
                .top(side, depth)
                .map(|l| (entry.spec.price_to_decimal(l.price), entry.spec.qty_to_decimal(l.qty)))
                .collect()
        };
        Some(BookSnapshot {
            instrument: instrument.to_owned(),
            change_id: entry.book.last_change_id().unwrap_or(0),
            timestamp_ms: i64::try_from(entry.timestamp_ms).unwrap_or(i64::MAX),
            bids: side(Side::Buy),
            asks: side(Side::Sell),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticktrade_core::Decimal;

    fn frame(kind: &str, change: u64, prev: Option<u64>, bids: &str) -> Vec<u8> {
        let prev = prev.map(|p| format!(",\"prev_change_id\":{p}")).unwrap_or_default();
        format!(
            r#"{{"jsonrpc":"2.0","method":"subscription","params":{{"channel":"book.X.raw","data":{{"type":"{kind}","timestamp":5,"instrument_name":"X","change_id":{change}{prev},"bids":[{bids}],"asks":[["new",101.0,3]]}}}}}}"#
        )
        .into_bytes()
    }

    #[test]
    fn snapshot_changes_gap_and_resync() {
        let mut books = LocalBooks::default();
        books.track(InstrumentSpec::simple("X", Decimal::parse("0.5").unwrap(), Decimal::ONE).unwrap());
        assert_eq!(books.stale(), vec!["X".to_owned()]);
        assert!(matches!(
            books.on_frame("X", &frame("snapshot", 10, None, r#"["new",100.0,5]"#)),
            BookOutcome::Synced { change_id: 10, .. }
        ));
        assert!(matches!(
            books.on_frame("X", &frame("change", 11, Some(10), r#"["change",100.0,7]"#)),
            BookOutcome::Applied { .. }
        ));
        let snap = books.snapshot("X", 0).unwrap();
        assert_eq!(snap.bids, vec![(Decimal::from_int(100), Decimal::from_int(7))]);
        // 12 is lost: 13 arrives with prev 12.
        assert_eq!(
            books.on_frame("X", &frame("change", 13, Some(12), "")),
            BookOutcome::Stale { instrument: "X".into() }
        );
        assert_eq!(books.snapshot("X", 0), None);
        assert_eq!(books.on_frame("X", &frame("change", 14, Some(13), "")), BookOutcome::Ignored);
        assert!(matches!(
            books.on_frame("X", &frame("snapshot", 20, None, r#"["new",99.5,1]"#)),
            BookOutcome::Synced { .. }
        ));
        assert_eq!(books.snapshot("X", 1).unwrap().bids, vec![(Decimal::parse("99.5").unwrap(), Decimal::ONE)]);
        // Off-grid price → stale, not a panic.
        assert!(matches!(
            books.on_frame("X", &frame("change", 21, Some(20), r#"["new",99.3,1]"#)),
            BookOutcome::Stale { .. }
        ));
        assert_eq!(books.on_frame("Y", &frame("snapshot", 1, None, "")), BookOutcome::Ignored);
    }
}
