//! The replay itself: every book notification applied to its instrument's `L2Book`, with the
//! sequence rules and the counts the report prints.
//!
//! Owns: per-instrument counters (snapshots, changes, gaps, resyncs), what makes a book stale
//! (a gap, a frame of that book that cannot be decoded or converted), and the line errors.
//! A snapshot that arrives while the book is stale is a resync. A grouped book's window
//! (`book.X.none.10.100ms`) replaces its book like a snapshot and is counted as one. Frames of
//! other channels, responses and heartbeats are skipped silently.

use std::collections::BTreeMap;

use ticktrade_book::l2::{ApplyError, L2Book, LevelUpdate};
use ticktrade_core::InstrumentSpec;
use ticktrade_deribit_proto::book::{BookHeader, BookKind, DecimalLevel, decode_book};
use ticktrade_deribit_proto::envelope::{Incoming, classify};

use super::recording::{Frame, LineError};

/// One book channel's book and what happened to it.
#[derive(Debug)]
pub struct InstrumentBook {
    pub instrument: String,
    pub spec: InstrumentSpec,
    pub book: L2Book,
    pub snapshots: u64,
    pub changes: u64,
    pub gaps: u64,
    pub resyncs: u64,
}

/// Books of every book channel seen, keyed by channel name: `book.X.raw` and `book.X.100ms`
/// (or a grouped `book.X.none.10.100ms`) are separate books with their own change-id chains.
pub struct Replay {
    specs: BTreeMap<String, InstrumentSpec>,
    pub books: BTreeMap<String, InstrumentBook>,
    pub errors: Vec<LineError>,
    /// Sequence gaps, reported apart from unreadable lines (the data was read fine).
    pub notices: Vec<LineError>,
    levels: Vec<DecimalLevel>,
    updates: Vec<LevelUpdate>,
}

impl Replay {
    pub fn new(specs: BTreeMap<String, InstrumentSpec>) -> Replay {
        Replay {
            specs,
            books: BTreeMap::new(),
            errors: Vec::new(),
            notices: Vec::new(),
            levels: Vec::new(),
            updates: Vec::new(),
        }
    }

    pub fn on_frame(&mut self, frame: &Frame<'_>) {
        let mut levels = std::mem::take(&mut self.levels);
        match decode_book(frame.text.as_bytes(), &mut levels) {
            Ok(header) => self.apply(frame.line, &header, &levels),
            Err(decode_error) => match classify(frame.text) {
                Ok(Incoming::Notification(note)) if note.channel.starts_with("book.") => {
                    let message = format!("bad {} notification: {decode_error}", note.channel);
                    self.error(frame.line, message);
                    // A lost frame of this book: it cannot be trusted until a snapshot.
                    if let Some(state) = self.books.get_mut(note.channel) {
                        state.book.mark_stale();
                    }
                }
                Ok(_) => {}
                Err(error) => self.error(frame.line, format!("not a Deribit frame: {error}")),
            },
        }
        self.levels = levels;
    }

    fn error(&mut self, line: usize, message: String) {
        self.errors.push(LineError { line, message });
    }

    fn apply(&mut self, line: usize, header: &BookHeader<'_>, levels: &[DecimalLevel]) {
        if !self.books.contains_key(header.channel) {
            let Some(spec) = self.specs.get(header.instrument) else {
                self.error(line, format!("{}: no instrument spec", header.instrument));
                return;
            };
            let state = InstrumentBook {
                instrument: header.instrument.to_owned(),
                spec: spec.clone(),
                book: L2Book::new(),
                snapshots: 0,
                changes: 0,
                gaps: 0,
                resyncs: 0,
            };
            self.books.insert(header.channel.to_owned(), state);
        }
        let Some(state) = self.books.get_mut(header.channel) else { return };
        self.updates.clear();
        for level in levels {
            let converted = state
                .spec
                .price_from_decimal(level.price)
                .and_then(|price| Ok((price, state.spec.qty_from_decimal(level.amount)?)));
            match converted {
                Ok((price, qty)) => {
                    self.updates.push(LevelUpdate { side: level.side, action: level.action, price, qty })
                }
                Err(error) => {
                    state.book.mark_stale();
                    let message = format!(
                        "{}: {} {} × {} does not fit the instrument's units (tick {}, amount step {}): {error}",
                        header.instrument,
                        level.side,
                        level.price,
                        level.amount,
                        state.spec.tick(),
                        state.spec.qty_unit
                    );
                    self.errors.push(LineError { line, message });
                    return;
                }
            }
        }
        match header.kind {
            BookKind::Snapshot | BookKind::Window => {
                if state.book.is_stale() {
                    state.resyncs += 1;
                }
                state.snapshots += 1;
                state.book.apply_snapshot(header.change_id, &self.updates);
            }
            BookKind::Change => {
                state.changes += 1;
                let Some(prev) = header.prev_change_id else {
                    state.book.mark_stale();
                    let message = format!("{}: change {} without prev_change_id", header.instrument, header.change_id);
                    self.errors.push(LineError { line, message });
                    return;
                };
                match state.book.apply_change(header.change_id, prev, &self.updates) {
                    Ok(()) | Err(ApplyError::Stale) => {}
                    Err(gap @ ApplyError::Gap { .. }) => {
                        state.gaps += 1;
                        let message = format!("{}: {gap}; book stale until the next snapshot", header.instrument);
                        self.notices.push(LineError { line, message });
                    }
                    Err(error @ ApplyError::NegativeQty { .. }) => {
                        self.errors.push(LineError { line, message: format!("{}: {error}", header.instrument) });
                    }
                }
            }
        }
    }
}
