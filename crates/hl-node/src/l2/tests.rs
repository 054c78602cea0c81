use std::collections::BTreeMap;

use proptest::prelude::*;
use ticktrade_book::l4::L4Book;
use ticktrade_core::{Decimal, Price, Qty, Side};

use super::*;

/// Hyperliquid's rule on real numbers, computed with exact decimals at 10^-18.
fn naive_bucket(px: Decimal, n_sig: u32, mantissa: u32, is_bid: bool) -> i128 {
    let scaled = i128::from(px.mantissa()) * 10i128.pow(18 - u32::from(px.scale()));
    // floor(log10 px) + 1, from the scaled integer: digits(scaled) - 18.
    let d = scaled.to_string().len() as i32 - 18;
    let exp18 = d - n_sig as i32 + 18;
    if exp18 < 0 {
        return scaled;
    }
    let width = i128::from(mantissa) * 10i128.pow(exp18 as u32);
    let floor = scaled.div_euclid(width) * width;
    if is_bid || floor == scaled { floor } else { floor + width }
}

fn naive(
    levels: &[(i64, i64, u32)],
    unit: Decimal,
    is_bid: bool,
    n_sig: Option<u32>,
    mantissa: u32,
    n: usize,
) -> Vec<(i128, i64, u32)> {
    let mut buckets: BTreeMap<i128, (i64, u32)> = BTreeMap::new();
    for &(px, sz, count) in levels {
        let real = Decimal::from_units(px, unit).unwrap();
        let key = match n_sig {
            None => i128::from(real.mantissa()) * 10i128.pow(18 - u32::from(real.scale())),
            Some(s) => naive_bucket(real, s, mantissa, is_bid),
        };
        let e = buckets.entry(key).or_default();
        e.0 += sz;
        e.1 += count;
    }
    let all: Vec<_> = buckets.into_iter().map(|(k, (s, c))| (k, s, c)).collect();
    if is_bid { all.into_iter().rev().take(n).collect() } else { all.into_iter().take(n).collect() }
}

fn to_naive_units(levels: &[UnitLevel], unit: Decimal) -> Vec<(i128, i64, u32)> {
    levels
        .iter()
        .map(|l| {
            let d = Decimal::from_units(l.px, unit).unwrap();
            (i128::from(d.mantissa()) * 10i128.pow(18 - u32::from(d.scale())), l.sz, l.n)
        })
        .collect()
}

#[test]
fn documented_vectors() {
    let path =
        format!("{}/../../testdata/hyperliquid/examples/l2_aggregation.test_vectors.json", env!("CARGO_MANIFEST_DIR"));
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let unit = Decimal::new(1, 2).unwrap();
    let mut book: L4Book<()> = L4Book::new();
    let mut oid = 0;
    for (key, side) in [("bids", Side::Buy), ("asks", Side::Sell)] {
        for level in doc["book"][key].as_array().unwrap() {
            let px = Decimal::parse(level["px"].as_str().unwrap()).unwrap().to_units(unit).unwrap();
            let sz: i64 = level["sz"].as_str().unwrap().parse().unwrap();
            let count = level["count"].as_i64().unwrap();
            for _ in 0..count {
                oid += 1;
                book.add(oid, side, Price::from_raw(px), Qty::from_raw(sz), ()).unwrap();
            }
        }
    }
    let mut views = 0;
    for case in doc["cases"].as_array().unwrap() {
        let n_sig = case["nSigFigs"].as_u64().map(|v| v as u32);
        let mantissa = case["mantissa"].as_u64().unwrap_or(1) as u32;
        let n = case["nLevels"].as_u64().unwrap() as usize;
        // The function order_book_server's vectors test takes any mantissa and ignores it at
        // full precision (1 is the same as none); a subscription takes another mantissa only
        // with nSigFigs 5, so a case outside that (nSigFigs 3, mantissa 5) is no view here
        // (`ticktrade-book`'s vector test checks its buckets).
        let variant = match n_sig {
            None => L2Variant::Full,
            Some(sig) => match L2Variant::from_params(Some(sig), (mantissa != 1).then_some(mantissa)) {
                Some(v) => v,
                None => continue,
            },
        };
        views += 1;
        for (i, side) in [Side::Buy, Side::Sell].into_iter().enumerate() {
            let mut out = Vec::new();
            aggregate(book.levels(side), side == Side::Buy, variant, n, &mut out);
            let got: Vec<(String, String, u64)> = out
                .iter()
                .map(|l| (Decimal::from_units(l.px, unit).unwrap().to_string(), l.sz.to_string(), u64::from(l.n)))
                .collect();
            let want: Vec<(String, String, u64)> = case["expect"][i]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    (
                        l["px"].as_str().unwrap().to_owned(),
                        l["sz"].as_str().unwrap().to_owned(),
                        l["n"].as_u64().unwrap(),
                    )
                })
                .collect();
            assert_eq!(got, want, "case {case}");
        }
    }
    assert_eq!(views, 2, "the vectors' cases that are subscriptions");
}

#[test]
fn bucket_examples() {
    // BTC at 0.1 units: 76450.0 → 764500 units.
    let (sig5, sig5m5) = (L2Variant::Sig5 { mantissa: 1 }, L2Variant::Sig5 { mantissa: 5 });
    assert_eq!(bucket(764_503, sig5, true), 764_500);
    assert_eq!(bucket(764_503, sig5, false), 764_510);
    assert_eq!(bucket(764_503, sig5m5, false), 764_550);
    assert_eq!(bucket(764_503, L2Variant::Sig2, true), 760_000);
    assert_eq!(bucket(764_503, L2Variant::Sig2, false), 770_000);
    assert_eq!(bucket(1234, sig5m5, false), 1234);
    assert_eq!(bucket(999_999, L2Variant::Sig2, false), 1_000_000);
    assert_eq!(bucket(764_503, L2Variant::Full, false), 764_503);
}

proptest! {
    #[test]
    fn matches_naive_decimal_model(
        raw in prop::collection::vec((1i64..5_000_000, 1i64..1000, any::<bool>()), 0..120),
        scale in 0u8..9,
        variant_idx in 0usize..7,
        n in 1usize..40,
    ) {
        let unit = Decimal::new(1, scale).unwrap();
        let variant = L2Variant::ALL[variant_idx];
        let mut book: L4Book<()> = L4Book::new();
        for (i, &(px, sz, bid)) in raw.iter().enumerate() {
            let side = if bid { Side::Buy } else { Side::Sell };
            book.add(i as u64, side, Price::from_raw(px), Qty::from_raw(sz), ()).unwrap();
        }
        for side in [Side::Buy, Side::Sell] {
            let is_bid = side == Side::Buy;
            let mut out = Vec::new();
            aggregate(book.levels(side), is_bid, variant, n, &mut out);
            let levels: Vec<(i64, i64, u32)> = book.levels(side).map(|l| (l.price.raw(), l.qty.raw(), l.n_orders)).collect();
            let expect = naive(&levels, unit, is_bid, variant.n_sig_figs(), variant.mantissa(), n);
            prop_assert_eq!(to_naive_units(&out, unit), expect);
        }
    }
}

proptest! {
    #[test]
    fn gathered_aggregation_equals_book_walk(
        raw in prop::collection::vec((1i64..3_000_000, 1i64..1000, any::<bool>()), 0..150),
        around in prop::sample::select(vec![1i64, 9, 99, 999, 9_999, 99_999, 999_999, 1_000_000]),
        n in 0usize..30,
    ) {
        // Prices around a power of ten as well as spread out, where bucket widths change.
        let mut book: L4Book<()> = L4Book::new();
        for (i, &(px, sz, bid)) in raw.iter().enumerate() {
            let px = if i % 2 == 0 { px } else { (around + px % 40 - 20).max(1) };
            let side = if bid { Side::Buy } else { Side::Sell };
            book.add(i as u64, side, Price::from_raw(px), Qty::from_raw(sz), ()).unwrap();
        }
        let mut gathered = Vec::new();
        for side in [Side::Buy, Side::Sell] {
            let is_bid = side == Side::Buy;
            gather(book.levels(side), &mut gathered);
            for variant in L2Variant::ALL {
                let (mut a, mut b) = (Vec::new(), Vec::new());
                aggregate(book.levels(side), is_bid, variant, n, &mut a);
                aggregate_units(&gathered, is_bid, variant, n, &mut b);
                prop_assert_eq!(&a, &b, "{:?} {:?}", side, variant);
            }
        }
    }
}

#[test]
fn gathered_aggregation_merges_across_a_power_of_ten() {
    // Asks 9_999 (rounds up to 10_000 at 2 significant figures) and 10_000 are one bucket.
    let levels = [UnitLevel { px: 9_999, sz: 1, n: 1 }, UnitLevel { px: 10_000, sz: 2, n: 1 }];
    let mut out = Vec::new();
    aggregate_units(&levels, false, L2Variant::ALL[6], 5, &mut out);
    assert_eq!(out, vec![UnitLevel { px: 10_000, sz: 3, n: 2 }]);
}

/// One change to a book side in the skip-rule property test: add at a price, or remove,
/// reduce or move the order picked by the index.
#[derive(Clone, Debug)]
enum Change {
    Add(i64, i64, bool),
    Remove(usize),
    Reduce(usize, i64),
    Move(usize, i64),
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        (1i64..3_000_000, 1i64..1000, any::<bool>()).prop_map(|(p, s, b)| Change::Add(p, s, b)),
        any::<usize>().prop_map(Change::Remove),
        (any::<usize>(), 1i64..1000).prop_map(|(i, s)| Change::Reduce(i, s)),
        (any::<usize>(), 1i64..3_000_000).prop_map(|(i, p)| Change::Move(i, p)),
    ]
}

proptest! {
    /// `side_may_change` never skips a view whose full recompute differs from its last levels.
    /// Touched prices are recorded as `Books::apply_block` does: the level of an added,
    /// reduced or removed order, and both levels of a moved one.
    #[test]
    fn skip_rule_never_skips_a_changed_view(
        raw in prop::collection::vec((1i64..3_000_000, 1i64..1000, any::<bool>()), 0..150),
        around in prop::sample::select(vec![1i64, 99, 9_999, 99_999, 999_999, 1_000_000]),
        changes in prop::collection::vec(change(), 1..6),
        n in 1usize..30,
    ) {
        // Half the prices near a power of ten, where bucket widths change; the changes move
        // near the best levels or near that power of ten too, so they often land in view.
        let near = |i: usize, px: i64| if i.is_multiple_of(2) { px } else { (around + px % 40 - 20).max(1) };
        let mut book: L4Book<()> = L4Book::new();
        for (i, &(px, sz, bid)) in raw.iter().enumerate() {
            let side = if bid { Side::Buy } else { Side::Sell };
            book.add(i as u64, side, Price::from_raw(near(i, px)), Qty::from_raw(sz), ()).unwrap();
        }
        let mut before = [Vec::new(), Vec::new()];
        for (i, side) in [Side::Buy, Side::Sell].into_iter().enumerate() {
            gather(book.levels(side), &mut before[i]);
        }
        let mut touched = [(i64::MAX, i64::MIN); 2];
        let mut touch = |side: Side, px: i64| {
            let r = &mut touched[usize::from(side != Side::Buy)];
            *r = (r.0.min(px), r.1.max(px));
        };
        let mut next_id = raw.len() as u64;
        for (k, c) in changes.iter().enumerate() {
            let ids: Vec<u64> = (0..next_id).filter(|id| book.contains(*id)).collect();
            let pick = |i: usize| (!ids.is_empty()).then(|| ids[i % ids.len()]);
            match *c {
                Change::Add(px, sz, bid) => {
                    let side = if bid { Side::Buy } else { Side::Sell };
                    let px = near(k, px);
                    touch(side, px);
                    book.add(next_id, side, Price::from_raw(px), Qty::from_raw(sz), ()).unwrap();
                    next_id += 1;
                }
                Change::Remove(i) => if let Some(id) = pick(i) {
                    let o = book.remove(id).unwrap();
                    touch(o.side, o.price.raw());
                },
                Change::Reduce(i, sz) => if let Some(id) = pick(i) {
                    let o = book.get(id).unwrap();
                    let (side, px, qty) = (o.side, o.price.raw(), o.qty.raw());
                    touch(side, px);
                    book.reduce(id, Qty::from_raw(sz.min(qty - 1).max(0))).unwrap();
                },
                Change::Move(i, px) => if let Some(id) = pick(i) {
                    let o = book.get(id).unwrap();
                    let (side, old, qty) = (o.side, o.price.raw(), o.qty.raw());
                    let px = near(k, px);
                    touch(side, old);
                    touch(side, px);
                    book.modify(id, Price::from_raw(px), Qty::from_raw(qty)).unwrap();
                },
            }
        }
        let mut after = Vec::new();
        for (i, side) in [Side::Buy, Side::Sell].into_iter().enumerate() {
            let is_bid = side == Side::Buy;
            gather(book.levels(side), &mut after);
            for variant in L2Variant::ALL {
                let (mut last, mut now) = (Vec::new(), Vec::new());
                aggregate_units(&before[i], is_bid, variant, n, &mut last);
                aggregate_units(&after, is_bid, variant, n, &mut now);
                let shown = (last.len(), last.last().map_or(0, |l| l.px));
                if !side_may_change(shown, is_bid, variant, n, touched[i]) {
                    prop_assert_eq!(&last, &now, "{:?} {:?} touched {:?}", side, variant, touched[i]);
                }
            }
        }
    }
}

#[test]
fn skip_rule_examples() {
    let full = L2Variant::ALL[0];
    // Bids 100, 99, 98 shown (deepest 98).
    let bids = (3, 98);
    // Untouched, or touched only below the deepest shown bid: nothing to do.
    assert!(!side_may_change(bids, true, full, 3, (i64::MAX, i64::MIN)));
    assert!(!side_may_change(bids, true, full, 3, (50, 97)));
    // Touched at the deepest shown level, inside, or above the best: recompute.
    assert!(side_may_change(bids, true, full, 3, (50, 98)));
    assert!(side_may_change(bids, true, full, 3, (101, 101)));
    // Fewer levels shown than asked for: any touch may add one.
    assert!(side_may_change(bids, true, full, 4, (1, 1)));
    // Asks 101, 102, 103 shown.
    let asks = (3, 103);
    assert!(!side_may_change(asks, false, full, 3, (104, 200)));
    assert!(side_may_change(asks, false, full, 3, (103, 200)));
}

proptest! {
    #[test]
    fn kept_levels_are_the_variant_view(
        raw in prop::collection::vec((1i64..3_000_000, 1i64..1000), 0..120),
        around in prop::sample::select(vec![9i64, 99, 999, 9_999, 99_999, 999_999, 1_000_000, 100_000]),
        step in prop::sample::select(vec![1i64, 2, 5, 10, 100]),
        n in 0usize..30,
        is_bid in any::<bool>(),
    ) {
        // Prices on a grid (so variants often keep every level) around a power of ten, where
        // widths change, and spread out.
        let mut book: L4Book<()> = L4Book::new();
        let side = if is_bid { Side::Buy } else { Side::Sell };
        for (i, &(px, sz)) in raw.iter().enumerate() {
            let px = if i % 3 == 0 { px } else { ((around + px % 60 - 30).max(1) / step).max(1) * step };
            book.add(i as u64, side, Price::from_raw(px), Qty::from_raw(sz), ()).unwrap();
        }
        let mut gathered = Vec::new();
        gather(book.levels(side), &mut gathered);
        let mut full = Vec::new();
        aggregate_units(&gathered, is_bid, L2Variant::Full, n, &mut full);
        for variant in L2Variant::ALL {
            let mut own = Vec::new();
            aggregate_units(&gathered, is_bid, variant, n, &mut own);
            if keeps_levels(&full, variant) {
                prop_assert_eq!(&own, &full, "{:?}", variant);
            }
        }
    }
}

#[test]
fn five_significant_figures_keep_hyperliquid_prices() {
    // Prices of at most five significant figures (what Hyperliquid allows) are kept at
    // nSigFigs 5; one with six is not, nor is an odd price at mantissa 2.
    let levels = |pxs: &[i64]| pxs.iter().map(|&px| UnitLevel { px, sz: 1, n: 1 }).collect::<Vec<_>>();
    let sig5 = L2Variant::Sig5 { mantissa: 1 };
    assert!(keeps_levels(&levels(&[99_999, 99_998, 12_345, 7, 1_234_500, 100_000]), sig5));
    assert!(!keeps_levels(&levels(&[99_999, 100_001]), sig5));
    assert!(!keeps_levels(&levels(&[12_345]), L2Variant::Sig5 { mantissa: 2 }));
    assert!(keeps_levels(&levels(&[12_344, 1_234]), L2Variant::Sig5 { mantissa: 2 }));
    assert!(keeps_levels(&levels(&[12_000, 99]), L2Variant::Sig2));
    assert!(!keeps_levels(&levels(&[12_100]), L2Variant::Sig2));
    assert!(keeps_levels(&levels(&[]), L2Variant::Sig2));
}
