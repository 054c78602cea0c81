//! Venue unit tests and a property test against a simple model of the book.

use proptest::prelude::*;
use ticktrade_core::{Decimal, Price, Qty, Side, Utc};
use ticktrade_deribit_proto::api::{self, Num};

use super::{Event, OrderState, Venue};

const A: u32 = 10;
const B: u32 = 11;
const C: u32 = 12;

fn venue() -> Venue {
    let (info, start) = crate::instruments::default_instruments().remove(0);
    let spec = crate::instruments::spec_of(&info, 0).unwrap();
    Venue::new(vec![(spec, info, start)], 1, Utc::from_millis(1_700_000_000_000))
}

fn now() -> Utc {
    Utc::from_millis(1_700_000_000_000)
}

/// A limit order at `ticks` (0.5 USD each) for `lots` lots of 10 USD.
fn limit(ticks: i64, lots: i64) -> api::OrderParams {
    api::OrderParams {
        instrument_name: "BTC-PERPETUAL".to_owned(),
        amount: Some(Num::int(lots * 10)),
        price: Some(Num(Decimal::new(ticks * 5, 1).unwrap())),
        ..api::OrderParams::default()
    }
}

fn place(
    v: &mut Venue,
    account: u32,
    side: Side,
    params: &api::OrderParams,
) -> Result<api::OrderWithTrades, super::Reject> {
    v.place(now(), account, side, params, &mut Vec::new())
}

#[test]
fn price_time_priority_at_the_makers_price() {
    let mut v = venue();
    let first = place(&mut v, A, Side::Sell, &limit(200, 1)).unwrap().order.order_id;
    let second = place(&mut v, B, Side::Sell, &limit(200, 1)).unwrap().order.order_id;
    let taker = place(&mut v, C, Side::Buy, &limit(210, 3)).unwrap();
    let makers: Vec<_> = taker.trades.iter().map(|t| t.price).collect();
    assert_eq!(makers, vec![Num::int(100), Num::int(100)], "fills at the maker's price");
    assert_eq!(v.order_state(A, &first).unwrap().order_state, "filled");
    assert_eq!(v.order_state(B, &second).unwrap().order_state, "filled");
    // The remaining 10 USD rests as the best bid at 105.
    assert_eq!(v.best(0, Side::Buy), Some((Price::from_raw(210), Qty::from_raw(1))));
    assert_eq!(v.best(0, Side::Sell), None);
}

#[test]
fn ioc_and_fok() {
    let mut v = venue();
    place(&mut v, A, Side::Sell, &limit(200, 1)).unwrap();
    let mut fok = limit(200, 2);
    fok.time_in_force = Some("fill_or_kill".into());
    let r = place(&mut v, B, Side::Buy, &fok).unwrap();
    assert_eq!((r.order.order_state.as_str(), r.trades.len()), ("cancelled", 0));
    let mut ioc = limit(200, 2);
    ioc.time_in_force = Some("immediate_or_cancel".into());
    let r = place(&mut v, B, Side::Buy, &ioc).unwrap();
    assert_eq!((r.order.order_state.as_str(), r.trades.len()), ("cancelled", 1));
    assert_eq!(r.order.filled_amount, Num::int(10));
    assert_eq!(v.best(0, Side::Buy), None, "IOC remainder does not rest");
}

#[test]
fn post_only_reprices_or_rejects() {
    let mut v = venue();
    place(&mut v, A, Side::Sell, &limit(200, 1)).unwrap();
    let mut p = limit(205, 1);
    p.post_only = Some(true);
    let r = place(&mut v, B, Side::Buy, &p).unwrap();
    assert_eq!(r.order.price, Num(v.spec(0).price_to_decimal(Price::from_raw(199))), "one tick below the best ask");
    assert!(r.trades.is_empty());
    p.reject_post_only = Some(true);
    assert_eq!(place(&mut v, B, Side::Buy, &p).unwrap_err().code, 11054);
}

#[test]
fn reduce_only_needs_and_clamps_to_a_position() {
    let mut v = venue();
    let mut r = limit(100, 5);
    r.reduce_only = Some(true);
    assert_eq!(place(&mut v, A, Side::Sell, &r).unwrap_err().code, 11030);
    place(&mut v, B, Side::Sell, &limit(100, 2)).unwrap();
    place(&mut v, A, Side::Buy, &limit(100, 2)).unwrap();
    let order = place(&mut v, A, Side::Sell, &r).unwrap().order;
    assert_eq!(order.amount, Num::int(20), "clamped to the 20 USD position");
}

#[test]
fn edit_keeps_priority_only_when_size_goes_down() {
    let mut v = venue();
    let first = place(&mut v, A, Side::Sell, &limit(200, 3)).unwrap().order.order_id;
    place(&mut v, B, Side::Sell, &limit(200, 1)).unwrap();
    let down = api::EditParams { amount: Some(Num::int(20)), price: Some(Num::int(100)), ..Default::default() };
    v.edit(now(), A, &first, &down, &mut Vec::new()).unwrap();
    let r = place(&mut v, C, Side::Buy, &limit(200, 1)).unwrap();
    assert_eq!(r.trades[0].amount, Num::int(10));
    assert_eq!(v.order_state(A, &first).unwrap().filled_amount, Num::int(10), "A kept its place");
    let up = api::EditParams { amount: Some(Num::int(40)), price: Some(Num::int(100)), ..Default::default() };
    v.edit(now(), A, &first, &up, &mut Vec::new()).unwrap();
    place(&mut v, C, Side::Buy, &limit(200, 1)).unwrap();
    assert_eq!(v.order_state(A, &first).unwrap().filled_amount, Num::int(10), "size up: B is first now");
    assert_eq!(v.edit(now(), B, &first, &down, &mut Vec::new()).unwrap_err().code, 10004, "not the owner");
}

#[derive(Clone, Debug)]
enum Op {
    Place { account: u32, buy: bool, ticks: i64, lots: i64, ioc: bool },
    Cancel { pick: usize },
    Step,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (10u32..13, any::<bool>(), 190i64..210, 1i64..5, any::<bool>())
            .prop_map(|(account, buy, ticks, lots, ioc)| Op::Place { account, buy, ticks, lots, ioc }),
        3 => (0usize..64).prop_map(|pick| Op::Cancel { pick }),
        1 => Just(Op::Step),
    ]
}

proptest! {
    /// After any sequence: every level's size is the sum of its open orders' remaining sizes,
    /// the book is never crossed, positions net to zero, and book changes chain.
    #[test]
    fn book_matches_open_orders(ops in proptest::collection::vec(op(), 1..150)) {
        let mut v = venue();
        let mut events = Vec::new();
        let mut ids: Vec<(u32, String)> = Vec::new();
        for op in ops {
            match op {
                Op::Place { account, buy, ticks, lots, ioc } => {
                    let mut p = limit(ticks, lots);
                    if ioc { p.time_in_force = Some("immediate_or_cancel".into()); }
                    let side = if buy { Side::Buy } else { Side::Sell };
                    if let Ok(r) = v.place(now(), account, side, &p, &mut events) {
                        ids.push((account, r.order.order_id));
                    }
                }
                Op::Cancel { pick } => {
                    if let Some((account, id)) = ids.get(pick % ids.len().max(1)).cloned() {
                        let _ = v.cancel(now(), account, &id, &mut events);
                    }
                }
                Op::Step => v.step(now(), 5, &mut events),
            }
        }
        for side in [Side::Buy, Side::Sell] {
            for (price, qty) in v.levels(0, side, usize::MAX) {
                let model: i64 = v.orders.values()
                    .filter(|o| o.state == OrderState::Open && o.side == side && o.price == price && !o.market)
                    .map(|o| o.remaining().raw()).sum();
                prop_assert_eq!(qty.raw(), model, "level {:?} {:?}", side, price);
            }
        }
        if let (Some((bid, _)), Some((ask, _))) = (v.best(0, Side::Buy), v.best(0, Side::Sell)) {
            prop_assert!(bid < ask, "crossed book {:?} {:?}", bid, ask);
        }
        let net: i64 = v.accounts.values().filter_map(|a| a.positions.get(&0)).map(|p| p.size).sum();
        prop_assert_eq!(net, 0);
        let mut last = None;
        for event in &events {
            if let Event::Book { change_id, prev_change_id, .. } = event {
                if let Some(last) = last { prop_assert_eq!(*prev_change_id, last); }
                last = Some(*change_id);
            }
        }
    }
}
