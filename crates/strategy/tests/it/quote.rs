//! The `quote` market maker on scripted books: it amends (not cancel/replace) when the mid moves
//! beyond the threshold, skews with inventory, and never exceeds its maximum position.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{INST, Venue};
use proptest::prelude::*;
use ticktrade_core::{Price, Qty, Side};
use ticktrade_strategy::context::Action;
use ticktrade_strategy::quote::{Distance, Quote, QuoteParams};
use ticktrade_strategy::risk::{InstrumentLimits, Limits};

fn params() -> QuoteParams {
    QuoteParams {
        instrument: INST,
        distance: Distance::Ticks(4),
        size: Qty::from_raw(10),
        max_position: Qty::from_raw(30),
        skew_ticks: 6,
        requote_ticks: 2,
    }
}

fn venue(params: QuoteParams) -> Venue<Quote> {
    let limits = Limits {
        instruments: vec![InstrumentLimits { max_position: Some(params.max_position), ..Default::default() }],
        ..Limits::default()
    };
    Venue::new(Quote::new(params), limits)
}

fn places(actions: &[Action]) -> Vec<(Side, i64, i64)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Place { order, .. } => Some((order.side, order.price.raw(), order.qty.raw())),
            _ => None,
        })
        .collect()
}

fn edits(actions: &[Action]) -> Vec<(i64, i64)> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::Edit { price, qty, .. } => Some((price.raw(), qty.raw())),
            _ => None,
        })
        .collect()
}

#[test]
fn quotes_both_sides_then_amends_only_beyond_the_threshold() {
    let mut v = venue(params());
    // Mid 1000: bid 996, ask 1004.
    let first = v.book((990, 5), (1010, 5)).to_vec();
    assert_eq!(places(&first), [(Side::Buy, 996, 10), (Side::Sell, 1004, 10)]);
    v.ack();
    // Mid 1002: two ticks, at the threshold: nothing goes out.
    assert!(v.book((992, 5), (1012, 5)).is_empty());
    // Mid 1003: three ticks: both quotes amended in place, no cancel, no new order.
    let moved = v.book((993, 5), (1013, 5)).to_vec();
    assert_eq!(edits(&moved), [(999, 10), (1007, 10)]);
    assert!(places(&moved).is_empty());
    assert!(!moved.iter().any(Action::is_cancel));
    // While the edits are in flight, a further move stacks nothing.
    assert!(v.book((1000, 5), (1020, 5)).is_empty());
    v.sent = moved;
    v.ack();
    assert_eq!(v.runner.orders().live().map(|o| o.price.raw()).collect::<Vec<_>>(), [999, 1007]);
}

#[test]
fn skews_against_inventory() {
    let mut v = venue(params());
    v.book((990, 5), (1010, 5));
    v.ack();
    let bid = v.runner.strategy().bid().unwrap();
    // Bought 10 of 30: skew 6 × 10 / 30 = 2 ticks down on both sides; the filled bid is
    // replaced, the ask amended only if the move passes the threshold (2 does not).
    v.fill(bid, 10);
    let after = v.sent.clone();
    assert_eq!(places(&after), [(Side::Buy, 994, 10)]);
    assert!(edits(&after).is_empty());
    v.ack();
    // Bought 10 more (20): skew 4 ticks, the ask wants 1000, 4 ticks from 1004: amended.
    let bid = v.runner.strategy().bid().unwrap();
    v.fill(bid, 10);
    assert_eq!(edits(&v.sent), [(1_000, 10)], "{:?}", v.sent);
    v.ack();
    // Bought 10 more (30, the maximum): no bid at all, and the ask (wanting 998, 2 ticks
    // away) stays where it is.
    let bid = v.runner.strategy().bid().unwrap();
    v.fill(bid, 10);
    assert_eq!(v.runner.orders().position(INST).qty, 30);
    assert!(v.sent.is_empty(), "{:?}", v.sent);
    let live: Vec<_> = v.runner.orders().live().map(|o| (o.side, o.price.raw())).collect();
    assert_eq!(live, [(Side::Sell, 1_000)]);
}

#[test]
fn distance_in_bps_is_at_least_one_tick() {
    let mut v = venue(QuoteParams { distance: Distance::Bps(50), ..params() });
    // Mid 10 000 ticks, 50 bps = 50 ticks.
    assert_eq!(places(v.book((9_990, 5), (10_010, 5))), [(Side::Buy, 9_950, 10), (Side::Sell, 10_050, 10)]);
    let mut v = venue(QuoteParams { distance: Distance::Bps(1), ..params() });
    assert_eq!(places(v.book((90, 5), (110, 5))), [(Side::Buy, 99, 10), (Side::Sell, 101, 10)]);
}

proptest! {
    /// Whatever the book does and whatever fills: position plus our open buys never exceeds
    /// the maximum (and symmetrically for sells).
    #[test]
    fn never_exceeds_max_position(steps in prop::collection::vec((0i64..40, any::<bool>(), 0u8..4, 1i64..12), 1..80)) {
        let mut v = venue(params());
        for (mid_move, buy_side, what, qty) in steps {
            let mid = 1_000 + mid_move;
            v.book((mid - 3, 5), (mid + 3, 5));
            v.ack();
            let label = if buy_side { v.runner.strategy().bid() } else { v.runner.strategy().ask() };
            if let (Some(label), 1..) = (label, what)
                && let Some(order) = v.runner.orders().get(&label).copied().filter(|o| o.status.is_live())
            {
                v.fill(label, qty.min(order.remaining().raw()));
                v.ack();
            }
            let position = v.runner.orders().position(INST).qty;
            let open = |side| v.runner.orders().live().filter(|o| o.side == side).map(|o| o.remaining().raw()).sum::<i64>();
            prop_assert!(position + open(Side::Buy) <= 30, "long exposure {} + {}", position, open(Side::Buy));
            prop_assert!(-position + open(Side::Sell) <= 30, "short exposure {} + {}", position, open(Side::Sell));
            prop_assert!(v.runner.strategy().last_blocked.is_none(), "{:?}", v.runner.strategy().last_blocked);
        }
    }
}

#[test]
fn price_stays_passive_when_the_spread_is_tight() {
    let mut v = venue(QuoteParams { distance: Distance::Ticks(0), ..params() });
    let got = places(v.book((999, 5), (1_000, 5)));
    assert_eq!(got, [(Side::Buy, 999, 10), (Side::Sell, 1_000, 10)]);
    assert!(got.iter().all(|(_, p, _)| Price::from_raw(*p) > Price::ZERO));
}
