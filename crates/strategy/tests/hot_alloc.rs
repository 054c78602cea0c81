//! The strategy side of the hot path allocates nothing in steady state: 100 000 book updates
//! through the `quote` strategy with every risk check on, each answered by acknowledgements,
//! amendments and (every few steps) fills, counted by the testkit's per-thread allocator.

#![allow(clippy::unwrap_used)]

mod common;

use common::{INST, Venue, spec};
use ticktrade_core::{Decimal, Qty};
use ticktrade_strategy::pnl::PnlRule;
use ticktrade_strategy::quote::{Distance, Quote, QuoteParams};
use ticktrade_strategy::risk::{BandReference, InstrumentLimits, Limits, Notional, PriceBand, RateLimit};

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

const STEPS: usize = 100_000;

fn venue() -> Venue<Quote> {
    let spec = spec();
    let rule = PnlRule::for_spec(&spec).unwrap();
    let notional = Notional::for_spec(&spec);
    let big = Decimal::from_int(1_000_000);
    let limits = Limits {
        instruments: vec![InstrumentLimits {
            max_order_qty: Some(Qty::from_raw(1_000)),
            max_order_notional: Some((notional.units_of(&spec, big), big)),
            max_position: Some(Qty::from_raw(60)),
            max_loss: Some((rule.units_of(big), big)),
            notional,
        }],
        max_open_orders: Some(10),
        rate: Some(RateLimit { max_orders: 1_000, window_ns: 1_000_000 }),
        price_band: Some(PriceBand { band_bps: 500, reference: BandReference::Mid }),
        self_cross: true,
    };
    let params = QuoteParams {
        instrument: INST,
        distance: Distance::Ticks(3),
        size: Qty::from_raw(5),
        max_position: Qty::from_raw(50),
        skew_ticks: 4,
        requote_ticks: 1,
    };
    Venue::new(Quote::new(params), limits)
}

/// One step: a book move, the venue's answers, and every 7th step a fill of the bid or ask.
/// Returns the number of actions answered.
fn step(v: &mut Venue<Quote>, i: usize) -> usize {
    // A mid that wanders over ±20 ticks around 100 000 ticks, deterministic.
    let mid = 100_000 + ((i * 7919) % 41) as i64 - 20;
    v.book((mid - 2, 10 + (i % 5) as i64), (mid + 2, 10 + (i % 3) as i64));
    let mut n = v.ack();
    if i.is_multiple_of(7) {
        let label = if i.is_multiple_of(14) { v.runner.strategy().bid() } else { v.runner.strategy().ask() };
        if let Some(order) = label.and_then(|l| v.runner.orders().get(&l).copied()).filter(|o| o.status.is_live())
            && order.remaining().is_positive()
        {
            v.fill(order.label, order.remaining().raw().min(3));
            n += 1 + v.ack();
        }
    }
    n
}

#[test]
fn strategy_path_allocates_nothing_in_steady_state() {
    let mut v = venue();
    for i in 0..2_000 {
        step(&mut v, i);
    }
    let mut answered = 0;
    let allocs = ALLOC.count_in(|| {
        for i in 2_000..2_000 + STEPS {
            answered += step(&mut v, i);
        }
    });
    assert_eq!(allocs, 0, "allocations in {STEPS} steady-state steps");
    // The loop did real work: orders, edits, cancels and fills through every check.
    assert!(answered > STEPS / 2, "only {answered} actions in {STEPS} steps");
    assert!(v.runner.strategy().last_blocked.is_none(), "{:?}", v.runner.strategy().last_blocked);
    assert!(v.runner.risk().killed().is_none());
}
