//! `L2Book` against a naive `BTreeMap` model with the same sequence and stale rules, on random
//! snapshot/delta/set streams with gaps, re-snapshots and far-apart prices.

use std::collections::BTreeMap;

use proptest::prelude::*;
use ticktrade_book::l2::{Action, ApplyError, L2Book, Level, LevelUpdate, VwapFill, checksum_levels};
use ticktrade_core::{Price, Qty, Side};

#[derive(Default, Debug)]
struct Model {
    sides: [BTreeMap<i64, i64>; 2],
    last: Option<u64>,
    stale: bool,
}

fn si(side: Side) -> usize {
    usize::from(side == Side::Sell)
}

impl Model {
    fn set(&mut self, side: Side, price: i64, qty: i64) {
        if qty <= 0 {
            self.sides[si(side)].remove(&price);
        } else {
            self.sides[si(side)].insert(price, qty);
        }
    }

    fn apply(&mut self, u: &LevelUpdate) {
        let qty = if u.action == Action::Delete { 0 } else { u.qty.raw() };
        self.set(u.side, u.price.raw(), qty);
    }

    fn snapshot(&mut self, cid: u64, ups: &[LevelUpdate]) {
        self.sides = Default::default();
        for u in ups {
            self.apply(u);
        }
        self.last = Some(cid);
        self.stale = false;
    }

    fn change(&mut self, cid: u64, prev: u64, ups: &[LevelUpdate]) -> Result<(), ApplyError> {
        if self.stale {
            return Err(ApplyError::Stale);
        }
        if self.last != Some(prev) {
            self.stale = true;
            return Err(ApplyError::Gap { expected_prev: self.last.unwrap_or(0), got_prev: prev });
        }
        if let Some(u) = ups.iter().find(|u| u.action != Action::Delete && u.qty.raw() < 0) {
            self.stale = true;
            return Err(ApplyError::NegativeQty { price: u.price, qty: u.qty });
        }
        for u in ups {
            self.apply(u);
        }
        self.last = Some(cid);
        Ok(())
    }

    fn levels(&self, side: Side) -> Vec<Level> {
        let lv = |(&p, &q): (&i64, &i64)| Level { price: Price::from_raw(p), qty: Qty::from_raw(q) };
        match side {
            Side::Buy => self.sides[0].iter().rev().map(lv).collect(),
            Side::Sell => self.sides[1].iter().map(lv).collect(),
        }
    }

    fn vwap(&self, side: Side, qty: i64) -> Option<VwapFill> {
        if qty <= 0 {
            return None;
        }
        let levels = self.levels(side);
        let first = levels.first()?;
        let (mut notional, mut filled, mut worst) = (0i128, 0i64, first.price);
        for l in levels {
            if filled == qty {
                break;
            }
            let take = (qty - filled).min(l.qty.raw());
            notional += i128::from(l.price.raw()) * i128::from(take);
            filled += take;
            worst = l.price;
        }
        Some(VwapFill { notional, filled: Qty::from_raw(filled), worst })
    }
}

#[derive(Clone, Debug)]
enum Op {
    Snapshot(Vec<LevelUpdate>),
    /// `gap` shifts `prev_change_id` away from the last applied id.
    Change {
        gap: u64,
        ups: Vec<LevelUpdate>,
    },
    Set(Side, i64, i64),
    Clear,
    MarkStale,
}

fn price() -> impl Strategy<Value = i64> {
    prop_oneof![
        8 => 1_000i64..1_300,
        2 => 0i64..100_000,
        1 => -1_000_000_000i64..=1_000_000_000,
        1 => prop_oneof![Just(i64::MAX), Just(i64::MIN), Just(i64::MAX - 63), Just(i64::MIN + 64)],
    ]
}

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Buy), Just(Side::Sell)]
}

fn update(allow_negative: bool) -> impl Strategy<Value = LevelUpdate> {
    let qty = if allow_negative { -1i64..40 } else { 0i64..40 };
    (side(), prop_oneof![Just(Action::New), Just(Action::Change), Just(Action::Delete)], price(), qty)
        .prop_map(|(side, action, p, q)| LevelUpdate { side, action, price: Price::from_raw(p), qty: Qty::from_raw(q) })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        1 => prop::collection::vec(update(false), 0..60).prop_map(Op::Snapshot),
        12 => (prop_oneof![20 => Just(0u64), 1 => 1u64..3], prop::collection::vec(update(true), 0..6))
            .prop_map(|(gap, ups)| Op::Change { gap, ups }),
        4 => (side(), price(), -1i64..30).prop_map(|(s, p, q)| Op::Set(s, p, q)),
        1 => Just(Op::Clear),
        1 => Just(Op::MarkStale),
    ]
}

fn check_equal(book: &L2Book, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(book.is_stale(), model.stale);
    prop_assert_eq!(book.last_change_id(), model.last);
    for side in [Side::Buy, Side::Sell] {
        let want = model.levels(side);
        prop_assert_eq!(book.levels(side).collect::<Vec<_>>(), want.clone());
        prop_assert_eq!(book.depth(side), want.len());
        prop_assert_eq!(book.best(side), want.first().copied());
        let mut walked = Vec::new();
        book.walk_levels(side, |l| {
            walked.push(l);
            std::ops::ControlFlow::Continue(())
        });
        prop_assert_eq!(walked, want);
    }
    prop_assert_eq!(book.best_bid(), book.best(Side::Buy));
    prop_assert_eq!(book.best_ask(), book.best(Side::Sell));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn l2_book_matches_btreemap_model(ops in prop::collection::vec(op(), 0..150), probes in prop::collection::vec((side(), price(), 0i64..200, 0usize..8), 8)) {
        let (mut book, mut model) = (L2Book::new(), Model::default());
        let mut next_cid = 100u64;
        for op in &ops {
            match op {
                Op::Snapshot(ups) => {
                    next_cid += 7;
                    book.apply_snapshot(next_cid, ups);
                    model.snapshot(next_cid, ups);
                }
                Op::Change { gap, ups } => {
                    let prev = model.last.unwrap_or(0) + gap;
                    next_cid += 3;
                    prop_assert_eq!(book.apply_change(next_cid, prev, ups), model.change(next_cid, prev, ups));
                }
                Op::Set(side, p, q) => {
                    book.set_level(*side, Price::from_raw(*p), Qty::from_raw(*q));
                    model.set(*side, *p, *q);
                }
                Op::Clear => {
                    book.clear();
                    model.sides = Default::default();
                }
                Op::MarkStale => {
                    book.mark_stale();
                    model.stale = true;
                }
            }
            check_equal(&book, &model)?;
        }
        for &(side, p, q, n) in &probes {
            let want = model.sides[si(side)].get(&p).copied().unwrap_or(0);
            prop_assert_eq!(book.qty_at(side, Price::from_raw(p)), Qty::from_raw(want));
            prop_assert_eq!(book.vwap(side, Qty::from_raw(q)), model.vwap(side, q));
            prop_assert_eq!(book.top(side, n).collect::<Vec<_>>(), model.levels(side).into_iter().take(n).collect::<Vec<_>>());
            let model_sum = checksum_levels(
                model.levels(Side::Buy).into_iter().take(n),
                model.levels(Side::Sell).into_iter().take(n),
            );
            prop_assert_eq!(book.checksum(n), model_sum);
        }
    }

    /// Prices ±10^9 ticks apart (and beyond the dense window's limit) are all kept.
    #[test]
    fn far_apart_prices_never_drop_a_level(prices in prop::collection::btree_set(-1_000_000_000i64..=1_000_000_000, 1..200), side in side()) {
        let mut book = L2Book::new();
        for (i, &p) in prices.iter().enumerate() {
            book.set_level(side, Price::from_raw(p), Qty::from_raw(i as i64 + 1));
        }
        prop_assert_eq!(book.depth(side), prices.len());
        let mut got: Vec<i64> = book.levels(side).map(|l| l.price.raw()).collect();
        if side == Side::Buy {
            got.reverse();
        }
        prop_assert_eq!(got, prices.iter().copied().collect::<Vec<_>>());
        for (i, &p) in prices.iter().enumerate() {
            prop_assert_eq!(book.qty_at(side, Price::from_raw(p)), Qty::from_raw(i as i64 + 1));
        }
    }
}
