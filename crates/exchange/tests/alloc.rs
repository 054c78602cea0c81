//! The engine allocates nothing per request in steady state: orders, fills, cancels and
//! edits reuse reserved maps, the history ring and the caller's event buffer.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use ticktrade_core::{Decimal, Side, Utc};
use ticktrade_exchange::{
    AccountId, Catalogue, CatalogueParams, Config, EditParams, Event, Exchange, Money, OrderType, PlaceParams, Request,
    TimeInForce,
};

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

fn price(ticks: u64) -> Decimal {
    Decimal::new(ticks as i64 * 5, 1).unwrap()
}

/// A deterministic mix of passive places, cancels, edits and IOC/market orders.
fn churn(ex: &mut Exchange, out: &mut Vec<Event>, next: &mut u64, rounds: u64) {
    let perp = ex.catalogue().lookup("BTC-PERPETUAL").unwrap();
    for _ in 0..rounds {
        let r = *next;
        *next += 1;
        let account = AccountId(1 + (r % 4) as u32);
        let side = if r.is_multiple_of(2) { Side::Buy } else { Side::Sell };
        let depth = 1 + (r * 7919) % 500;
        let px = if side == Side::Buy { 100_000 - depth } else { 100_000 + depth };
        let amount = Decimal::from_int(10 * (1 + (r % 7) as i64));
        out.clear();
        let request = match r % 6 {
            0..=2 => Request::Place(PlaceParams::limit(perp, side, amount, price(px))),
            3 => Request::Cancel { order_id: r.saturating_sub(4) },
            4 => Request::Edit(EditParams::new(r.saturating_sub(8), Decimal::from_int(500), Some(price(px)))),
            _ => Request::Place(PlaceParams {
                order_type: if r % 12 == 5 { OrderType::Market } else { OrderType::Limit },
                time_in_force: TimeInForce::ImmediateOrCancel,
                ..PlaceParams::limit(
                    perp,
                    side,
                    Decimal::from_int(200),
                    price(if side == Side::Buy { 100_010 } else { 99_990 }),
                )
            }),
        };
        let _ = ex.handle(Utc(r as i64 * 1_000), account, request, out);
    }
}

#[test]
fn steady_state_requests_allocate_nothing() {
    let catalogue = Catalogue::builtin(CatalogueParams::default()).unwrap();
    let perp = catalogue.lookup("BTC-PERPETUAL").unwrap();
    let config = Config {
        initial_balances: vec![("BTC".into(), Money::from_int(1_000_000_000))],
        first_order_id: 1,
        ..Config::default()
    };
    let mut ex = Exchange::new(catalogue, config);
    ex.reserve(perp, 16_384, 1_024);
    let mut out = Vec::with_capacity(4_096);
    let mut next = 1;
    // Warm up: accounts, positions, history ring, recent trades and candles reach their size.
    churn(&mut ex, &mut out, &mut next, 30_000);
    let trades_before = ex.ticker(perp).unwrap().volume;
    let n = ALLOC.count_in(|| churn(&mut ex, &mut out, &mut next, 30_000));
    assert!(ex.ticker(perp).unwrap().volume > trades_before, "the measured stretch must trade");
    assert_eq!(n, 0);
}
