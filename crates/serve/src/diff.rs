//! The change that turns one book into another: how the server keeps every client's
//! `change_id` chain unbroken when it resyncs from upstream (the fresh upstream snapshot is
//! sent on as the difference between the book clients hold and the new one).
//!
//! Owns: the level diff of two books.
//! Must not: do I/O or touch change ids (the caller sequences the result).

use ticktrade_book::l2::{Action, L2Book, LevelUpdate};
use ticktrade_core::{Qty, Side};

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
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;
    use ticktrade_core::Price;

    fn book(levels: &BTreeMap<(bool, i64), i64>) -> L2Book {
        let updates: Vec<LevelUpdate> = levels
            .iter()
            .map(|(&(bid, p), &q)| LevelUpdate {
                side: if bid { Side::Buy } else { Side::Sell },
                action: Action::New,
                price: Price::from_raw(p),
                qty: Qty::from_raw(q),
            })
            .collect();
        let mut b = L2Book::new();
        b.apply_snapshot(1, &updates);
        b
    }

    fn side_map(b: &L2Book) -> Vec<(Side, i64, i64)> {
        let mut v = Vec::new();
        for side in [Side::Buy, Side::Sell] {
            v.extend(b.levels(side).map(|l| (side, l.price.raw(), l.qty.raw())));
        }
        v
    }

    fn levels() -> impl Strategy<Value = BTreeMap<(bool, i64), i64>> {
        proptest::collection::btree_map((any::<bool>(), 900i64..1100), 1i64..50, 0..40)
    }

    proptest! {
        /// Applying the diff to the old book gives exactly the new book.
        #[test]
        fn diff_turns_old_into_new(old in levels(), new in levels()) {
            let (a, b) = (book(&old), book(&new));
            let mut diff = Vec::new();
            book_diff(&a, &b, &mut diff);
            let mut patched = book(&old);
            patched.apply_change(2, 1, &diff).unwrap();
            prop_assert_eq!(side_map(&patched), side_map(&b));
            // Minimal: no update for an unchanged level.
            let unchanged = old.iter().filter(|(k, v)| new.get(k) == Some(v)).count();
            prop_assert_eq!(diff.len(), old.len() + new.len() - 2 * unchanged - old.keys().filter(|k| new.contains_key(k) && old[k] != new[k]).count());
        }
    }

    #[test]
    fn snapshot_levels_round_trip() {
        let m: BTreeMap<(bool, i64), i64> = [((true, 10), 1), ((true, 9), 2), ((false, 11), 3)].into();
        let mut out = Vec::new();
        book_levels(&book(&m), &mut out);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].price.raw(), 10);
        assert_eq!(out[2].side, Side::Sell);
    }
}
