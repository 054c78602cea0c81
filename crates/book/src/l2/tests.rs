use super::*;

fn p(x: i64) -> Price {
    Price::from_raw(x)
}

fn q(x: i64) -> Qty {
    Qty::from_raw(x)
}

fn up(side: Side, action: Action, price: i64, qty: i64) -> LevelUpdate {
    LevelUpdate { side, action, price: p(price), qty: q(qty) }
}

fn lv(price: i64, qty: i64) -> Level {
    Level { price: p(price), qty: q(qty) }
}

fn book() -> L2Book {
    let mut b = L2Book::new();
    b.apply_snapshot(
        10,
        &[
            up(Side::Buy, Action::New, 100, 5),
            up(Side::Buy, Action::New, 99, 7),
            up(Side::Buy, Action::New, 90, 1),
            up(Side::Sell, Action::New, 101, 2),
            up(Side::Sell, Action::New, 105, 3),
        ],
    );
    b
}

#[test]
fn snapshot_then_best_and_levels() {
    let b = book();
    assert_eq!(b.best_bid(), Some(lv(100, 5)));
    assert_eq!(b.best_ask(), Some(lv(101, 2)));
    assert_eq!(b.levels(Side::Buy).collect::<Vec<_>>(), vec![lv(100, 5), lv(99, 7), lv(90, 1)]);
    assert_eq!(b.top(Side::Sell, 1).collect::<Vec<_>>(), vec![lv(101, 2)]);
    assert_eq!(b.depth(Side::Buy), 3);
    assert_eq!(b.qty_at(Side::Buy, p(99)), q(7));
    assert_eq!(b.qty_at(Side::Buy, p(98)), Qty::ZERO);
    assert_eq!(b.last_change_id(), Some(10));
    assert!(!b.is_stale());
}

#[test]
fn change_semantics_follow_the_feed() {
    let mut b = book();
    b.apply_change(
        11,
        10,
        &[
            up(Side::Buy, Action::Change, 98, 4), // change of a missing level creates it
            up(Side::Buy, Action::Delete, 97, 0), // delete of a missing level: nothing
            up(Side::Buy, Action::Delete, 100, 0),
            up(Side::Sell, Action::New, 101, 9), // new of an existing level overwrites
            up(Side::Sell, Action::Change, 105, 0), // amount 0 removes
        ],
    )
    .unwrap();
    assert_eq!(b.levels(Side::Buy).collect::<Vec<_>>(), vec![lv(99, 7), lv(98, 4), lv(90, 1)]);
    assert_eq!(b.levels(Side::Sell).collect::<Vec<_>>(), vec![lv(101, 9)]);
    assert_eq!(b.last_change_id(), Some(11));
}

#[test]
fn gap_makes_stale_until_snapshot() {
    let mut b = book();
    let before = b.checksum(10);
    assert_eq!(
        b.apply_change(12, 11, &[up(Side::Buy, Action::New, 95, 1)]),
        Err(ApplyError::Gap { expected_prev: 10, got_prev: 11 })
    );
    assert!(b.is_stale());
    assert_eq!(b.apply_change(11, 10, &[up(Side::Buy, Action::New, 95, 1)]), Err(ApplyError::Stale));
    assert_eq!(b.checksum(10), before, "nothing applied while stale");
    b.apply_snapshot(20, &[up(Side::Sell, Action::New, 200, 1)]);
    assert!(!b.is_stale());
    assert_eq!(b.depth(Side::Buy), 0, "no stale level survives a snapshot");
    assert_eq!(b.levels(Side::Sell).collect::<Vec<_>>(), vec![lv(200, 1)]);
    b.apply_change(21, 20, &[]).unwrap();
    b.mark_stale();
    assert_eq!(b.apply_change(22, 21, &[]), Err(ApplyError::Stale));
}

#[test]
fn change_before_any_snapshot_is_a_gap() {
    let mut b = L2Book::new();
    assert_eq!(b.apply_change(2, 1, &[]), Err(ApplyError::Gap { expected_prev: 0, got_prev: 1 }));
    assert!(b.is_stale());
}

#[test]
fn negative_amount_applies_nothing_and_goes_stale() {
    let mut b = book();
    let before = b.checksum(10);
    let err = b.apply_change(11, 10, &[up(Side::Buy, Action::New, 95, 1), up(Side::Sell, Action::Change, 102, -1)]);
    assert_eq!(err, Err(ApplyError::NegativeQty { price: p(102), qty: q(-1) }));
    assert!(b.is_stale());
    assert_eq!(b.checksum(10), before);
}

#[test]
fn crossed_book_is_kept() {
    let mut b = book();
    b.apply_change(11, 10, &[up(Side::Buy, Action::New, 103, 1)]).unwrap();
    assert_eq!(b.best_bid(), Some(lv(103, 1)));
    assert_eq!(b.best_ask(), Some(lv(101, 2)));
}

#[test]
fn vwap_is_exact_and_reports_thin_books() {
    let b = book();
    assert_eq!(b.vwap(Side::Sell, q(4)), Some(VwapFill { notional: 101 * 2 + 105 * 2, filled: q(4), worst: p(105) }));
    let thin = b.vwap(Side::Sell, q(100)).unwrap();
    assert_eq!(thin.filled, q(5));
    assert!(!thin.is_complete(q(100)));
    assert_eq!(b.vwap(Side::Buy, q(5)), Some(VwapFill { notional: 500, filled: q(5), worst: p(100) }));
    assert_eq!(b.vwap(Side::Buy, Qty::ZERO), None);
    assert_eq!(L2Book::new().vwap(Side::Buy, q(1)), None);
}

#[test]
fn checksum_sees_changes_and_ignores_depth_beyond_n() {
    let a = book();
    let mut b = book();
    assert_eq!(a.checksum(5), b.checksum(5));
    b.set_level(Side::Buy, p(90), q(2));
    assert_ne!(a.checksum(5), b.checksum(5));
    assert_eq!(a.checksum(1), b.checksum(1));
    b.set_level(Side::Buy, p(90), q(1));
    assert_eq!(a.checksum(5), b.checksum(5));
}

#[test]
fn far_outliers_and_huge_ranges_are_kept() {
    let mut b = L2Book::new();
    let prices = [1, 40_001, 1_000_000_000, -1_000_000_000, 5_000_000, i64::MAX / 2];
    for (i, &x) in prices.iter().enumerate() {
        b.set_level(Side::Sell, p(x), q(i as i64 + 1));
    }
    assert_eq!(b.depth(Side::Sell), prices.len());
    let mut sorted: Vec<_> = prices.iter().enumerate().map(|(i, &x)| lv(x, i as i64 + 1)).collect();
    sorted.sort_by_key(|l| l.price);
    assert_eq!(b.levels(Side::Sell).collect::<Vec<_>>(), sorted);
    for l in &sorted {
        assert_eq!(b.qty_at(Side::Sell, l.price), l.qty);
    }
}

#[test]
fn snapshot_centres_on_the_best_not_on_an_outlier() {
    let mut b = L2Book::new();
    let far = up(Side::Buy, Action::New, 10, 1);
    let mut ups = vec![far];
    for i in 0..600 {
        ups.push(up(Side::Buy, Action::New, 50_000_000 - i, 1));
    }
    b.apply_snapshot(1, &ups);
    assert_eq!(b.depth(Side::Buy), 601);
    assert_eq!(b.best_bid(), Some(lv(50_000_000, 1)));
    assert_eq!(b.levels(Side::Buy).last(), Some(lv(10, 1)));
}
