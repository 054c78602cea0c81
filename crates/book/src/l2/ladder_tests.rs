use super::*;

fn levels(l: &Ladder) -> Vec<(i64, i64)> {
    l.iter().collect()
}

#[test]
fn grows_both_ways_and_keeps_levels() {
    let mut l = Ladder::new(false);
    l.set(100, 1);
    l.set(100 + 40_000, 2);
    l.set(100 - 40_000, 3);
    assert_eq!(levels(&l), vec![(-39_900, 3), (100, 1), (40_100, 2)]);
    assert_eq!(l.best(), Some((-39_900, 3)));
    assert_eq!(l.sparse.len(), 0, "within the span limit everything is dense");
}

#[test]
fn far_prices_go_sparse_and_merge_in_order() {
    let mut l = Ladder::new(true);
    l.set(0, 1);
    l.set(1_000_000_000, 2);
    l.set(-1_000_000_000, 3);
    l.set(5, 4);
    assert_eq!(l.sparse.len(), 2);
    assert_eq!(levels(&l), vec![(1_000_000_000, 2), (5, 4), (0, 1), (-1_000_000_000, 3)]);
    assert_eq!(l.best(), Some((1_000_000_000, 2)));
    l.remove(1_000_000_000);
    assert_eq!(l.best(), Some((5, 4)));
    l.remove(5);
    l.remove(0);
    assert_eq!(l.best(), Some((-1_000_000_000, 3)));
    // Dense is empty: the next dense insert recentres and pulls nearby sparse levels in.
    l.set(-1_000_000_001, 7);
    assert_eq!(l.sparse.len(), 0);
    assert_eq!(levels(&l), vec![(-1_000_000_000, 3), (-1_000_000_001, 7)]);
}

#[test]
fn extreme_prices_do_not_overflow() {
    let mut l = Ladder::new(false);
    l.set(i64::MAX, 1);
    l.set(i64::MIN, 2);
    l.set(i64::MAX - 1, 3);
    assert_eq!(levels(&l), vec![(i64::MIN, 2), (i64::MAX - 1, 3), (i64::MAX, 1)]);
    assert_eq!(l.get(i64::MAX), 1);
    l.clear();
    assert_eq!(l.len(), 0);
    assert_eq!(l.best(), None);
}

fn walked(l: &Ladder, stop_after: usize) -> Vec<(i64, i64)> {
    let mut v = Vec::new();
    l.walk(|p, q| {
        v.push((p, q));
        if v.len() >= stop_after { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }
    });
    v
}

#[test]
fn walk_matches_iter_dense_and_sparse() {
    for bid in [true, false] {
        let mut l = Ladder::new(bid);
        for p in [5, 70, 71, 300, 4000, -9000] {
            l.set(p, p.abs() + 1);
        }
        assert_eq!(walked(&l, usize::MAX), levels(&l));
        assert_eq!(walked(&l, 2), levels(&l)[..2].to_vec());
        l.set(1 << 40, 3);
        assert_eq!(walked(&l, usize::MAX), levels(&l));
        assert_eq!(walked(&l, 3), levels(&l)[..3].to_vec());
    }
}

/// Reference for `take_through`: the levels from the cursor's position through `edge`.
fn naive_take(rest: &mut Vec<(i64, i64)>, bid: bool, edge: i64) -> (i64, u32) {
    let k = rest.iter().take_while(|&&(p, _)| if bid { p >= edge } else { p <= edge }).count();
    let taken: Vec<(i64, i64)> = rest.drain(..k).collect();
    (taken.iter().map(|l| l.1).sum(), taken.len() as u32)
}

#[test]
fn cursor_takes_ranges_like_a_filter() {
    let prices: Vec<i64> =
        (1000..1200).filter(|p| p % 7 != 3).chain((1300..1600).step_by(9)).chain([-64, 3, 64, 65, 5000]).collect();
    for bid in [true, false] {
        let mut l = Ladder::new(bid);
        for &p in &prices {
            l.set(p, p.abs() * 3 + 1);
        }
        for step in [1i64, 5, 13, 64, 100, 700] {
            let mut rest = levels(&l);
            let mut c = l.dense_cursor().unwrap();
            // Take a few single levels, then ranges of `step` ticks until the end.
            for _ in 0..3 {
                let (p, qty) = rest.remove(0);
                assert_eq!(c.peek(), Some(p));
                assert_eq!(c.take_through(p), (qty, 1));
            }
            while let Some(p) = c.peek() {
                assert_eq!(p, rest[0].0);
                let edge = if bid { p - step } else { p + step };
                assert_eq!(c.take_through(edge), naive_take(&mut rest, bid, edge), "bid {bid} step {step} at {p}");
            }
            assert!(rest.is_empty());
            assert_eq!(c.peek(), None);
            assert_eq!(c.take_through(if bid { i64::MIN } else { i64::MAX }), (0, 0));
        }
        // Edges beyond the window on either side.
        let mut c = l.dense_cursor().unwrap();
        assert_eq!(c.take_through(if bid { i64::MAX } else { i64::MIN }), (0, 0));
        let all = levels(&l);
        assert_eq!(
            c.take_through(if bid { i64::MIN } else { i64::MAX }),
            (all.iter().map(|l| l.1).sum(), all.len() as u32)
        );
        // A level stored sparsely: no cursor.
        l.set(1 << 40, 1);
        assert!(l.dense_cursor().is_none());
    }
}

#[test]
fn best_follows_deletes_across_words() {
    let mut l = Ladder::new(true);
    for p in [10, 200, 201, 700] {
        l.set(p, p);
    }
    assert_eq!(l.best(), Some((700, 700)));
    l.remove(700);
    assert_eq!(l.best(), Some((201, 201)));
    l.remove(201);
    l.remove(200);
    assert_eq!(l.best(), Some((10, 10)));
    l.remove(10);
    assert_eq!(l.best(), None);
    assert_eq!(l.len(), 0);
}
