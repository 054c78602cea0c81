use super::*;
use proptest::prelude::*;
use std::collections::BTreeMap;
use ticktrade_core::Price;

fn book(change_id: u64, levels: &BTreeMap<(bool, i64), i64>) -> L2Book {
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
    b.apply_snapshot(change_id, &updates);
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
    /// Applying the diff to the old book gives exactly the new book, with no update for an
    /// unchanged level.
    #[test]
    fn diff_turns_old_into_new(old in levels(), new in levels()) {
        let (a, b) = (book(1, &old), book(1, &new));
        let mut diff = Vec::new();
        book_diff(&a, &b, &mut diff);
        let mut patched = book(1, &old);
        patched.apply_change(2, 1, &diff).unwrap();
        prop_assert_eq!(side_map(&patched), side_map(&b));
        let unchanged = old.iter().filter(|(k, v)| new.get(k) == Some(v)).count();
        let resized = old.keys().filter(|k| new.contains_key(k) && old[k] != new[k]).count();
        prop_assert_eq!(diff.len(), old.len() + new.len() - 2 * unchanged - resized);
    }

    /// A subscriber that took the snapshot and applies every interval frame holds the
    /// current book after each one, and its chain has no gap.
    #[test]
    fn interval_frames_keep_a_subscriber_in_step(steps in proptest::collection::vec(levels(), 1..12)) {
        let mut id = 10;
        let mut channel = IntervalBook::new(&book(id, &BTreeMap::new()));
        let mut held = channel.flushed().clone();
        for (i, step) in steps.iter().enumerate() {
            // Every other step leaves the book alone: no frame.
            if i % 2 == 1 {
                prop_assert!(channel.flush(&book(id, step), &mut Vec::new()).is_none());
                continue;
            }
            id += 3;
            let current = book(id, step);
            let mut diff = Vec::new();
            let change = channel.flush(&current, &mut diff).unwrap();
            prop_assert_eq!(Some(change.prev_change_id), held.last_change_id());
            prop_assert_eq!(change.change_id, id);
            held.apply_change(change.change_id, change.prev_change_id, &diff).unwrap();
            prop_assert_eq!(side_map(&held), side_map(&current));
            prop_assert_eq!(side_map(channel.flushed()), side_map(&current));
        }
    }
}

#[test]
fn changes_that_cancel_out_still_move_the_chain() {
    let levels: BTreeMap<(bool, i64), i64> = [((true, 10), 1)].into();
    let mut channel = IntervalBook::new(&book(5, &levels));
    let mut diff = Vec::new();
    let change = channel.flush(&book(7, &levels), &mut diff);
    assert_eq!(change, Some(IntervalChange { prev_change_id: 5, change_id: 7 }));
    assert!(diff.is_empty());
    assert_eq!(channel.flush(&book(7, &levels), &mut diff), None);
    channel.reset(&book(20, &BTreeMap::new()));
    assert_eq!(channel.flushed().last_change_id(), Some(20));
}

#[test]
fn snapshot_levels_are_bids_then_asks_best_first() {
    let m: BTreeMap<(bool, i64), i64> = [((true, 10), 1), ((true, 9), 2), ((false, 11), 3), ((false, 12), 4)].into();
    let mut out = Vec::new();
    book_levels(&book(1, &m), &mut out);
    let got: Vec<(Side, i64)> = out.iter().map(|u| (u.side, u.price.raw())).collect();
    assert_eq!(got, vec![(Side::Buy, 10), (Side::Buy, 9), (Side::Sell, 11), (Side::Sell, 12)]);
    assert!(out.iter().all(|u| u.action == Action::New));
}

#[test]
fn only_book_channels_with_an_interval_are_batched() {
    assert_eq!(batched_interval("book.BTC-PERPETUAL.100ms"), Some(Interval::Ms100));
    assert_eq!(batched_interval("book.BTC-PERPETUAL.agg2"), Some(Interval::Agg2));
    assert_eq!(batched_interval("book.BTC-PERPETUAL.none.10.100ms"), Some(Interval::Ms100));
    assert_eq!(batched_interval("book.BTC-PERPETUAL.raw"), None);
    assert_eq!(batched_interval("ticker.BTC-PERPETUAL.100ms"), None);
    assert_eq!(period(Interval::Agg2), Duration::from_secs(2));
}
