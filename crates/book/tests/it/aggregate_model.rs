//! Aggregation against a naive recomputation: every level is put in its bucket (computed here
//! independently, with decimal digit strings and i128), buckets are sorted best first, top N.

use std::collections::BTreeMap;

use proptest::prelude::*;
use ticktrade_book::aggregate::{AggLevel, AggregateBuf, Grouping, HlPrecision, aggregate, aggregate_book};
use ticktrade_book::l2::L2Book;
use ticktrade_core::{Decimal, Price, Qty, Side};

/// Bucket width in ticks for significant-figure rounding, the slow way.
fn naive_width(sig: u32, mantissa: u8, price: i64) -> i128 {
    if price <= 0 {
        return 1;
    }
    let digits = price.to_string().len() as u32;
    if digits < sig { 1 } else { i128::from(mantissa) * 10i128.pow(digits - sig) }
}

fn naive_bucket(side: Side, price: i64, width: i128) -> i64 {
    let p = i128::from(price);
    let down = p.div_euclid(width) * width;
    let b = match side {
        Side::Buy => down,
        Side::Sell if down == p => p,
        Side::Sell => down + width,
    };
    i64::try_from(b).unwrap_or(i64::MAX)
}

fn naive(levels: &[AggLevel], side: Side, width_of: impl Fn(i64) -> i128, n: usize) -> Vec<AggLevel> {
    let mut buckets: BTreeMap<i64, (i64, u32)> = BTreeMap::new();
    for l in levels {
        let b = naive_bucket(side, l.price.raw(), width_of(l.price.raw()));
        let e = buckets.entry(b).or_insert((0, 0));
        e.0 += l.qty.raw();
        e.1 += l.n;
    }
    let to = |(&p, &(q, c)): (&i64, &(i64, u32))| AggLevel { price: Price::from_raw(p), qty: Qty::from_raw(q), n: c };
    match side {
        Side::Buy => buckets.iter().rev().map(to).take(n).collect(),
        Side::Sell => buckets.iter().map(to).take(n).collect(),
    }
}

fn naive_hl(levels: &[AggLevel], side: Side, precision: HlPrecision, n: usize) -> Vec<AggLevel> {
    match precision.params() {
        (None, _) => naive(levels, side, |_| 1, n),
        (Some(sig), m) => naive(levels, side, |p| naive_width(u32::from(sig), m.unwrap_or(1), p), n),
    }
}

fn price() -> impl Strategy<Value = i64> {
    prop_oneof![
        4 => 99_000i64..101_200,          // across a power of ten
        2 => 9_950i64..10_060,
        2 => 1i64..2_000,
        1 => 1i64..1_000_000_000_000,
        1 => -500i64..1,
    ]
}

/// Prices that all fit one dense ladder window (the book's range-sum path).
fn dense_price() -> impl Strategy<Value = i64> {
    prop_oneof![
        6 => 99_000i64..101_200,
        2 => 100_000i64..140_000,
        1 => 60_000i64..100_000,
    ]
}

/// Prices that straddle a power of ten (where every significant-figure width changes) at
/// several magnitudes, and clusters separated by huge empty stretches of the dense window
/// (the cursor crosses thousands of empty words; coarse buckets span the gaps).
fn boundary_or_gappy_price() -> impl Strategy<Value = i64> {
    prop_oneof![
        2 => 990i64..1_012,
        2 => 9_980i64..10_025,
        2 => 99_950i64..100_070,
        2 => 999_900i64..1_000_200,
        1 => 1_000_000i64..1_040_000,
        1 => (0i64..8).prop_map(|k| 600_000 + k * 39_531),
    ]
}

/// Distinct prices with sizes and order counts, best first for `side`.
fn side_levels(side: Side) -> impl Strategy<Value = Vec<AggLevel>> {
    levels_from(price(), side)
}

fn levels_from(price: impl Strategy<Value = i64>, side: Side) -> impl Strategy<Value = Vec<AggLevel>> {
    prop::collection::btree_map(price, (1i64..1000, 1u32..5), 0..300).prop_map(move |m| {
        let mut v: Vec<AggLevel> = m
            .into_iter()
            .map(|(p, (q, c))| AggLevel { price: Price::from_raw(p), qty: Qty::from_raw(q), n: c })
            .collect();
        if side == Side::Buy {
            v.reverse();
        }
        v
    })
}

fn both_sides() -> impl Strategy<Value = (Vec<AggLevel>, Vec<AggLevel>)> {
    (side_levels(Side::Buy), side_levels(Side::Sell))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn all_seven_variants_match_naive((bids, asks) in both_sides(), n in 0usize..25) {
        let mut buf = AggregateBuf::new(Decimal::parse("0.1").unwrap(), n).unwrap();
        buf.aggregate_side(Side::Buy, bids.iter().copied());
        buf.aggregate_side(Side::Sell, asks.iter().copied());
        // The same levels in an L2Book (no order counts there: each level counts 1).
        let mut book = L2Book::new();
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            for l in levels.iter() {
                book.set_level(side, l.price, l.qty);
            }
        }
        let mut from_book = AggregateBuf::new(Decimal::ONE, n).unwrap();
        from_book.aggregate_book(&book);
        let mut out = Vec::new();
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            let ones: Vec<AggLevel> = levels.iter().map(|l| AggLevel { n: 1, ..*l }).collect();
            for precision in HlPrecision::ALL {
                let want = naive_hl(levels, side, precision, n);
                prop_assert_eq!(buf.get(side, precision), &want[..], "{:?} {:?}", side, precision);
                prop_assert_eq!(from_book.get(side, precision), &naive_hl(&ones, side, precision, n)[..], "book {:?} {:?}", side, precision);
                aggregate(levels.iter().copied(), side, precision.grouping(), n, &mut out);
                prop_assert_eq!(&out, &want, "single {:?} {:?}", side, precision);
            }
        }
    }

    /// A book whose levels are all in the dense window: `aggregate_book` sums whole buckets
    /// from the ladder after the first `n` levels.
    #[test]
    fn dense_book_all_seven_match_naive(bids in levels_from(dense_price(), Side::Buy), asks in levels_from(dense_price(), Side::Sell), n in 0usize..25) {
        let mut book = L2Book::new();
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            for l in levels.iter() {
                book.set_level(side, l.price, l.qty);
            }
        }
        let mut buf = AggregateBuf::new(Decimal::ONE, n).unwrap();
        buf.aggregate_book(&book);
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            let ones: Vec<AggLevel> = levels.iter().map(|l| AggLevel { n: 1, ..*l }).collect();
            for precision in HlPrecision::ALL {
                prop_assert_eq!(buf.get(side, precision), &naive_hl(&ones, side, precision, n)[..], "{:?} {:?}", side, precision);
            }
        }
    }

    /// Levels straddling powers of ten and clustered with huge gaps, in one dense window
    /// (the cursor path), with `n` around the depths where variants complete one by one, so
    /// the entry walk moves down the chain at different points.
    #[test]
    fn boundary_and_gappy_books_match_naive(bids in levels_from(boundary_or_gappy_price(), Side::Buy), asks in levels_from(boundary_or_gappy_price(), Side::Sell), n in 0usize..30) {
        let mut book = L2Book::new();
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            for l in levels.iter() {
                book.set_level(side, l.price, l.qty);
            }
        }
        let mut buf = AggregateBuf::new(Decimal::ONE, n).unwrap();
        let mut from_levels = AggregateBuf::new(Decimal::ONE, n).unwrap();
        buf.aggregate_book(&book);
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            from_levels.aggregate_side(side, levels.iter().copied());
            let ones: Vec<AggLevel> = levels.iter().map(|l| AggLevel { n: 1, ..*l }).collect();
            for precision in HlPrecision::ALL {
                prop_assert_eq!(buf.get(side, precision), &naive_hl(&ones, side, precision, n)[..], "book {:?} {:?}", side, precision);
                prop_assert_eq!(from_levels.get(side, precision), &naive_hl(levels, side, precision, n)[..], "levels {:?} {:?}", side, precision);
            }
        }
    }

    /// The same book aggregated again after deletes and re-inserts: the reused buffers and
    /// the cursor see only the current levels.
    #[test]
    fn reaggregation_after_changes_matches_naive(bids in levels_from(dense_price(), Side::Buy), asks in levels_from(dense_price(), Side::Sell), keep_every in 2usize..5) {
        let mut book = L2Book::new();
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            for l in levels.iter() {
                book.set_level(side, l.price, l.qty);
            }
        }
        let mut buf = AggregateBuf::new(Decimal::ONE, 20).unwrap();
        buf.aggregate_book(&book);
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            for (i, l) in levels.iter().enumerate() {
                if i % keep_every != 0 {
                    book.set_level(side, l.price, Qty::from_raw(0));
                }
            }
        }
        buf.aggregate_book(&book);
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            let kept: Vec<AggLevel> = levels.iter().step_by(keep_every).map(|l| AggLevel { n: 1, ..*l }).collect();
            for precision in HlPrecision::ALL {
                prop_assert_eq!(buf.get(side, precision), &naive_hl(&kept, side, precision, 20)[..], "{:?} {:?}", side, precision);
            }
        }
    }

    /// Deribit groups and every significant-figure rule on books all in the dense window
    /// (each bucket taken whole by the cursor).
    #[test]
    fn single_grouping_on_dense_books_matches_naive(bids in levels_from(boundary_or_gappy_price(), Side::Buy), asks in levels_from(dense_price(), Side::Sell), width in 1i64..2000, n in 0usize..25) {
        let mut book = L2Book::new();
        let mut out = Vec::new();
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            for l in levels.iter() {
                book.set_level(side, l.price, l.qty);
            }
        }
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            let ones: Vec<AggLevel> = levels.iter().map(|l| AggLevel { n: 1, ..*l }).collect();
            aggregate_book(&book, side, Grouping::Ticks(width), n, &mut out);
            prop_assert_eq!(&out, &naive(&ones, side, |_| i128::from(width), n), "{:?} width {}", side, width);
            for precision in HlPrecision::ALL {
                aggregate_book(&book, side, precision.grouping(), n, &mut out);
                prop_assert_eq!(&out, &naive_hl(&ones, side, precision, n), "{:?} {:?}", side, precision);
            }
        }
    }

    #[test]
    fn deribit_groups_match_naive((bids, asks) in both_sides(), width in 1i64..60, n in 0usize..25) {
        let mut book = L2Book::new();
        let mut out = Vec::new();
        for (side, levels) in [(Side::Buy, &bids), (Side::Sell, &asks)] {
            for l in levels.iter() {
                book.set_level(side, l.price, l.qty);
            }
            aggregate(levels.iter().copied(), side, Grouping::Ticks(width), n, &mut out);
            prop_assert_eq!(&out, &naive(levels, side, |_| i128::from(width), n));
            let ones: Vec<AggLevel> = levels.iter().map(|l| AggLevel { n: 1, ..*l }).collect();
            aggregate_book(&book, side, Grouping::Ticks(width), n, &mut out);
            prop_assert_eq!(&out, &naive(&ones, side, |_| i128::from(width), n));
        }
    }
}
