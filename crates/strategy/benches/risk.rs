//! The pre-trade risk stage per order: every check on (size, notional, price band, open orders,
//! position with open orders, self-cross, rate) beside every check off, on the same order and
//! the same order state (eight live orders of ours), so the session can report the stage's
//! cost. Also the whole `Context::place` (checks, label, order slot, outbox) on and off.
//!
//! `cargo bench -p ticktrade-strategy --bench risk`.

#![allow(clippy::unwrap_used)]

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ticktrade_book::L2Book;
use ticktrade_core::{Decimal, InstrumentId, InstrumentSpec, Mono, Price, Qty, Side};
use ticktrade_strategy::context::{Context, OrderRequest, Outbox, Runner, RunnerParts, Strategy};
use ticktrade_strategy::label::{Label, LabelGen};
use ticktrade_strategy::order::{OrderReport, Orders, OrdersConfig, Reason, Request, VenueState};
use ticktrade_strategy::pnl::PnlRule;
use ticktrade_strategy::risk::{
    BandReference, Blocked, Candidate, InstrumentLimits, Limits, Notional, PriceBand, RateLimit, Risk,
};

const INST: InstrumentId = InstrumentId(0);

fn spec() -> InstrumentSpec {
    InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::from_int(10)).unwrap()
}

fn limits_on() -> Limits {
    let spec = spec();
    let big = Decimal::from_int(1_000_000);
    let notional = Notional::for_spec(&spec);
    Limits {
        instruments: vec![InstrumentLimits {
            max_order_qty: Some(Qty::from_raw(1_000)),
            max_order_notional: Some((notional.units_of(&spec, big), big)),
            max_position: Some(Qty::from_raw(10_000)),
            max_loss: None,
            notional,
        }],
        max_open_orders: Some(100),
        rate: Some(RateLimit { max_orders: 10_000, window_ns: 1_000_000_000 }),
        price_band: Some(PriceBand { band_bps: 500, reference: BandReference::Mid }),
        self_cross: true,
    }
}

/// Eight live orders of ours, four a side, around a mid of 100 000 ticks.
fn orders() -> Orders {
    let rule = PnlRule::for_spec(&spec()).unwrap();
    let mut orders = Orders::new(OrdersConfig { order_slots: 256, trade_memory: 1024 }, vec![rule], b"tt-");
    for i in 0..8i64 {
        let label = Label::try_from_str(&format!("tt-0-{i}")).unwrap();
        let (side, price) = if i < 4 { (Side::Buy, 99_990 - i) } else { (Side::Sell, 100_010 + i) };
        orders.insert_pending(label, INST, side, Price::from_raw(price), Qty::from_raw(5)).unwrap();
        orders.apply_report(&OrderReport {
            label,
            venue_id: Default::default(),
            instrument: INST,
            side,
            price: Price::from_raw(price),
            qty: Qty::from_raw(5),
            filled: Qty::ZERO,
            avg_price: Decimal::ZERO,
            state: VenueState::Open,
            updated_ms: 1,
        });
    }
    orders
}

fn check(c: &mut Criterion) {
    let orders = orders();
    let order = Candidate {
        instrument: INST,
        side: Side::Buy,
        price: Price::from_raw(99_995),
        qty: Qty::from_raw(5),
        replaces: None,
        filled: Qty::ZERO,
    };
    let reference = Some(Price::from_raw(100_000));
    let mut group = c.benchmark_group("risk_check");
    group.throughput(Throughput::Elements(1));
    for (name, limits) in [("all_on", limits_on()), ("all_off", Limits::default())] {
        let risk = Risk::new(limits);
        assert!(risk.check(&order, &orders, reference, Mono(1)).is_ok());
        group
            .bench_function(name, |b| b.iter(|| black_box(risk.check(black_box(&order), &orders, reference, Mono(1)))));
    }
    group.finish();
}

/// Places one order on each timer call.
struct PlaceOne {
    request: OrderRequest,
    last: Option<Result<Label, Blocked>>,
}

impl Strategy for PlaceOne {
    fn on_timer(&mut self, ctx: &mut Context<'_>) {
        self.last = Some(ctx.place(black_box(self.request)));
    }
}

fn place(c: &mut Criterion) {
    let mut book = L2Book::new();
    book.set_level(Side::Buy, Price::from_raw(99_999), Qty::from_raw(10));
    book.set_level(Side::Sell, Price::from_raw(100_001), Qty::from_raw(10));
    let books = [book];
    let reason = Reason::new(10_009, "not_enough_funds");
    let mut group = c.benchmark_group("context_place");
    group.throughput(Throughput::Elements(1));
    for (name, limits) in [("checks_on", limits_on()), ("checks_off", Limits::default())] {
        let parts = RunnerParts {
            orders: orders(),
            risk: Risk::new(limits),
            labels: LabelGen::new("tt", 1).unwrap(),
            specs: vec![spec()],
            band_reference: BandReference::Mid,
        };
        let request = OrderRequest::limit(INST, Side::Buy, Price::from_raw(99_995), Qty::from_raw(5));
        let mut runner = Runner::new(PlaceOne { request, last: None }, parts);
        let mut out = Outbox::with_capacity(8);
        let mut now = 1u64;
        group.bench_function(name, |b| {
            b.iter(|| {
                // 1 ms apart: 1 000 orders a window, well under the rate limit.
                now += 1_000_000;
                runner.on_timer(&books, Mono(now), &mut out);
                out.clear();
                // Refused at once (as the venue might), so the order count stays at eight.
                if let Some(Ok(label)) = runner.strategy().last {
                    runner.on_reject(&label, Request::Place, reason, &books, Mono(now), &mut out);
                }
            })
        });
        assert!(matches!(runner.strategy().last, Some(Ok(_))), "{:?}", runner.strategy().last);
    }
    group.finish();
}

criterion_group!(benches, check, place);
criterion_main!(benches);
