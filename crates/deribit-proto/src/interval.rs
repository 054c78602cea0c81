//! Deribit's interval book channels (`book.{i}.100ms`, `book.{i}.agg2`, grouped books): one
//! frame per interval carrying the net change since the channel's previous frame, on the
//! book's own `change_id` chain (`prev_change_id` = the `change_id` of the channel's previous
//! frame). `raw` channels get every change as it is applied. The simulator and the fan-out
//! server both publish interval channels through [`IntervalBook`].
//!
//! Owns: the book an interval channel's subscribers hold (as of its last frame), the net
//! change of an interval ([`book_diff`]), a whole book as snapshot entries
//! ([`book_levels`]), which channels are batched and how often ([`batched_interval`],
//! [`period`]).
//! Must not: read a clock (the caller decides when an interval is due) or encode frames
//! (`book::encode_book_units` does).

use std::time::Duration;

use ticktrade_book::l2::{Action, L2Book, LevelUpdate};
use ticktrade_core::{Qty, Side};

use crate::channel::{Channel, Interval};

/// The interval a book channel is batched over; `None` for `raw` (every change) and for
/// channels that are not books.
pub fn batched_interval(ch: &str) -> Option<Interval> {
    match Channel::parse(ch)? {
        Channel::Book { interval, .. } | Channel::GroupedBook { interval, .. } if interval != Interval::Raw => {
            Some(interval)
        }
        _ => None,
    }
}

/// How often an interval channel is sent.
pub fn period(interval: Interval) -> Duration {
    Duration::from_millis(interval.period_ms())
}

/// One interval channel's book as its subscribers hold it: a new subscriber's snapshot is
/// this book, so the channel's next frame continues its chain.
#[derive(Clone, Debug)]
pub struct IntervalBook {
    flushed: L2Book,
}

/// An interval's frame: its chain ids (the levels go to the caller's buffer).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalChange {
    pub prev_change_id: u64,
    pub change_id: u64,
}

impl IntervalBook {
    /// Starts the channel from `current` (what its first subscriber is sent as a snapshot).
    pub fn new(current: &L2Book) -> IntervalBook {
        IntervalBook { flushed: current.clone() }
    }

    /// The book as of the channel's last frame.
    pub fn flushed(&self) -> &L2Book {
        &self.flushed
    }

    /// The book was replaced and every subscriber re-snapshotted: start again from `current`.
    pub fn reset(&mut self, current: &L2Book) {
        self.flushed.clone_from(current);
    }

    /// Ends the interval at `current`: when its `change_id` moved since the last frame,
    /// appends to `out` the updates that turn the held book into `current` (possibly none,
    /// when the interval's changes cancelled out: the frame still carries the new id so the
    /// chain stays unbroken) and returns the frame's ids. `None`: nothing happened.
    pub fn flush(&mut self, current: &L2Book, out: &mut Vec<LevelUpdate>) -> Option<IntervalChange> {
        let prev_change_id = self.flushed.last_change_id().unwrap_or(0);
        let change_id = current.last_change_id().unwrap_or(0);
        if change_id == prev_change_id {
            return None;
        }
        book_diff(&self.flushed, current, out);
        self.flushed.clone_from(current);
        Some(IntervalChange { prev_change_id, change_id })
    }
}

/// Appends to `out` the updates that turn `old` into `new`: `delete` for levels gone,
/// `change` for sizes that differ, `new` for levels that appear. Bids first, best first.
pub fn book_diff(old: &L2Book, new: &L2Book, out: &mut Vec<LevelUpdate>) {
    for side in [Side::Buy, Side::Sell] {
        let mut a = old.levels(side).peekable();
        let mut b = new.levels(side).peekable();
        // Both walk best first: bids descending, asks ascending.
        let better = |x: i64, y: i64| if side == Side::Buy { x > y } else { x < y };
        loop {
            match (a.peek().copied(), b.peek().copied()) {
                (None, None) => break,
                (Some(o), None) => {
                    out.push(LevelUpdate { side, action: Action::Delete, price: o.price, qty: Qty::ZERO });
                    a.next();
                }
                (None, Some(n)) => {
                    out.push(LevelUpdate { side, action: Action::New, price: n.price, qty: n.qty });
                    b.next();
                }
                (Some(o), Some(n)) if o.price == n.price => {
                    if o.qty != n.qty {
                        out.push(LevelUpdate { side, action: Action::Change, price: n.price, qty: n.qty });
                    }
                    a.next();
                    b.next();
                }
                (Some(o), Some(n)) if better(o.price.raw(), n.price.raw()) => {
                    out.push(LevelUpdate { side, action: Action::Delete, price: o.price, qty: Qty::ZERO });
                    a.next();
                }
                (Some(_), Some(n)) => {
                    out.push(LevelUpdate { side, action: Action::New, price: n.price, qty: n.qty });
                    b.next();
                }
            }
        }
    }
}

/// A whole book as a snapshot's entries (every level `new`), bids then asks, best first.
pub fn book_levels(book: &L2Book, out: &mut Vec<LevelUpdate>) {
    for side in [Side::Buy, Side::Sell] {
        out.extend(book.levels(side).map(|l| LevelUpdate { side, action: Action::New, price: l.price, qty: l.qty }));
    }
}

#[cfg(test)]
#[path = "interval_tests.rs"]
mod tests;
