//! The `take` strategy on scripted books: it fires on imbalance over the top N levels, at the
//! best opposite price, immediate-or-cancel, and respects its cooldown and maximum position.

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{INST, Venue};
use ticktrade_core::{Price, Qty, Side};
use ticktrade_strategy::context::{Action, TimeInForce};
use ticktrade_strategy::risk::Limits;
use ticktrade_strategy::take::{Take, TakeParams};

fn venue() -> Venue<Take> {
    let params = TakeParams {
        instrument: INST,
        levels: 2,
        ratio_num: 3,
        ratio_den: 1,
        size: Qty::from_raw(5),
        max_position: Qty::from_raw(10),
        cooldown_ns: 500_000_000,
    };
    Venue::new(Take::new(params), Limits { instruments: vec![Default::default()], ..Limits::default() })
}

/// Two levels a side: bids at 99 and 98, asks at 101 and 102.
fn set(v: &mut Venue<Take>, bids: [i64; 2], asks: [i64; 2]) -> Vec<Action> {
    let book = &mut v.books[0];
    book.clear();
    for (i, q) in bids.iter().enumerate() {
        book.set_level(Side::Buy, Price::from_raw(99 - i as i64), Qty::from_raw(*q));
    }
    for (i, q) in asks.iter().enumerate() {
        book.set_level(Side::Sell, Price::from_raw(101 + i as i64), Qty::from_raw(*q));
    }
    v.book_levels().to_vec()
}

fn order(actions: &[Action]) -> Option<(Side, i64, i64, TimeInForce)> {
    match actions {
        [Action::Place { order, .. }] => Some((order.side, order.price.raw(), order.qty.raw(), order.time_in_force)),
        [] => None,
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn fires_on_imbalance_over_the_top_levels() {
    let mut v = venue();
    // 10 + 10 bids vs 5 + 5 asks: 2×, below 3×.
    assert_eq!(order(&set(&mut v, [10, 10], [5, 5])), None);
    // 10 + 20 vs 5 + 5: 3×: buy at the best ask.
    assert_eq!(order(&set(&mut v, [10, 20], [5, 5])), Some((Side::Buy, 101, 5, TimeInForce::ImmediateOrCancel)));
    v.advance_ms(1_000);
    // The other way: sell at the best bid.
    assert_eq!(order(&set(&mut v, [1, 1], [3, 3])), Some((Side::Sell, 99, 5, TimeInForce::ImmediateOrCancel)));
}

#[test]
fn respects_the_cooldown() {
    let mut v = venue();
    assert!(order(&set(&mut v, [30, 30], [1, 1])).is_some());
    // Each `book` step advances 1 ms: still inside 500 ms.
    for _ in 0..10 {
        assert_eq!(order(&set(&mut v, [30, 30], [1, 1])), None);
    }
    v.advance_ms(500);
    assert!(order(&set(&mut v, [30, 30], [1, 1])).is_some());
}

#[test]
fn stops_at_max_position() {
    let mut v = venue();
    for _ in 0..3 {
        let actions = set(&mut v, [30, 30], [1, 1]);
        if let [Action::Place { label, order }] = actions.as_slice() {
            v.sent = actions.clone();
            v.ack();
            v.fill(*label, order.qty.raw());
        }
        v.advance_ms(600);
    }
    assert_eq!(v.runner.orders().position(INST).qty, 10);
}
