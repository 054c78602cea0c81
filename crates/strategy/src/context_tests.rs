//! Unit tests of the context rules through `Runner`: outbox, pause, kill switch, grid, PnL.

use super::*;
use crate::order::{OrdersConfig, VenueState};
use crate::pnl::PnlRule;
use crate::risk::{InstrumentLimits, Limits};
use ticktrade_core::Decimal;

fn spec() -> InstrumentSpec {
    InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::from_int(10)).unwrap()
}

fn books(bid: i64, ask: i64) -> Vec<L2Book> {
    let mut book = L2Book::new();
    book.set_level(Side::Buy, Price::from_raw(bid), Qty::from_raw(10));
    book.set_level(Side::Sell, Price::from_raw(ask), Qty::from_raw(10));
    vec![book]
}

/// Records what it was told; places one order per book update when `place` is set.
#[derive(Default)]
struct Probe {
    place: Option<OrderRequest>,
    results: Vec<Result<Label, Blocked>>,
    events: Vec<(Status, OrderEvent)>,
    fills: usize,
}

impl Strategy for Probe {
    fn on_book(&mut self, ctx: &mut Context<'_>, _: InstrumentId, _: &L2Book) {
        if let Some(order) = self.place {
            self.results.push(ctx.place(order));
        }
    }
    fn on_order(&mut self, _: &mut Context<'_>, order: &Order, event: OrderEvent) {
        self.events.push((order.status, event));
    }
    fn on_fill(&mut self, _: &mut Context<'_>, _: &FillReport) {
        self.fills += 1;
    }
}

fn runner(limits: Limits) -> Runner<Probe> {
    let rule = PnlRule::for_spec(&spec()).unwrap();
    Runner::new(
        Probe::default(),
        RunnerParts {
            orders: Orders::new(OrdersConfig { order_slots: 8, trade_memory: 8 }, vec![rule], b"tt-"),
            risk: Risk::new(limits),
            labels: LabelGen::new("tt", 7).unwrap(),
            specs: vec![spec()],
            band_reference: BandReference::Mid,
        },
    )
}

fn buy(price: i64, qty: i64) -> OrderRequest {
    OrderRequest::limit(InstrumentId(0), Side::Buy, Price::from_raw(price), Qty::from_raw(qty))
}

#[test]
fn place_goes_to_the_outbox_and_reports_reach_the_strategy() {
    let mut r = runner(Limits { instruments: vec![InstrumentLimits::default()], ..Limits::default() });
    r.strategy.place = Some(buy(99, 1));
    let mut out = Outbox::with_capacity(4);
    let b = books(99, 101);
    r.on_book(InstrumentId(0), &b, Mono(1), &mut out);
    let label = r.strategy().results[0].unwrap();
    assert_eq!(label.as_str(), "tt-7-1");
    assert_eq!(out.drain().collect::<Vec<_>>(), [Action::Place { label, order: buy(99, 1) }]);
    let report = OrderReport {
        label,
        venue_id: VenueId::try_from_str("BTC-1").unwrap(),
        instrument: InstrumentId(0),
        side: Side::Buy,
        price: Price::from_raw(99),
        qty: Qty::from_raw(1),
        filled: Qty::ZERO,
        avg_price: Decimal::ZERO,
        state: VenueState::Open,
        updated_ms: 5,
    };
    r.on_report(&report, &b, Mono(2), &mut out);
    r.on_report(&report, &b, Mono(2), &mut out);
    let fill = FillReport {
        trade_id: crate::label::TradeId::try_from_str("BTC-T1").unwrap(),
        label,
        instrument: InstrumentId(0),
        side: Side::Buy,
        price: Price::from_raw(99),
        qty: Qty::from_raw(1),
    };
    r.on_fill(&fill, &b, Mono(3), &mut out);
    r.on_fill(&fill, &b, Mono(3), &mut out);
    assert_eq!(r.strategy().events, [(Status::Open, OrderEvent::Accepted), (Status::Filled, OrderEvent::Filled)]);
    assert_eq!(r.strategy().fills, 1, "a duplicate fill reaches no callback");
    assert_eq!(r.orders().position(InstrumentId(0)).qty, 1);
}

#[test]
fn paused_blocks_places_and_edits_but_not_cancels() {
    let mut r = runner(Limits { instruments: vec![InstrumentLimits::default()], ..Limits::default() });
    let mut out = Outbox::with_capacity(4);
    let b = books(99, 101);
    r.strategy.place = Some(buy(99, 1));
    r.on_book(InstrumentId(0), &b, Mono(1), &mut out);
    let label = r.strategy().results[0].unwrap();
    out.clear();
    r.set_paused(true);
    r.on_book(InstrumentId(0), &b, Mono(2), &mut out);
    assert_eq!(r.strategy().results[1], Err(Blocked::Paused));
    let (_, mut ctx) = r.split(&b, &mut out, Mono(3));
    assert_eq!(ctx.edit(label, Price::from_raw(98), Qty::from_raw(1)), Err(Blocked::Paused));
    assert_eq!(ctx.cancel(label), Ok(()));
    assert_eq!(ctx.cancel(label), Ok(()), "second cancel queues nothing");
    assert_eq!(out.len(), 1);
}

#[test]
fn blocked_orders_never_reach_the_outbox_and_the_kill_switch_leaves_only_cancels() {
    let limits = Limits {
        instruments: vec![InstrumentLimits { max_order_qty: Some(Qty::from_raw(5)), ..Default::default() }],
        ..Limits::default()
    };
    let mut r = runner(limits);
    let mut out = Outbox::with_capacity(4);
    let b = books(99, 101);
    r.strategy.place = Some(buy(99, 6));
    r.on_book(InstrumentId(0), &b, Mono(1), &mut out);
    assert_eq!(r.strategy().results[0], Err(Blocked::OrderQty { limit: Qty::from_raw(5) }));
    assert!(out.is_empty());
    r.strategy.place = Some(buy(99, 5));
    r.on_book(InstrumentId(0), &b, Mono(2), &mut out);
    assert_eq!(out.len(), 1);
    r.kill(Blocked::Killed, &mut out);
    assert_eq!(out.as_slice(), [Action::CancelAll { instrument: None }]);
    r.on_book(InstrumentId(0), &b, Mono(3), &mut out);
    assert_eq!(r.strategy().results[2], Err(Blocked::Killed));
    assert_eq!(out.len(), 1);
}

#[test]
fn off_grid_and_full_outbox_are_refused() {
    let mut spec_steps = spec();
    spec_steps.tick_rule = ticktrade_core::TickRule::with_steps(
        Decimal::parse("0.5").unwrap(),
        &[ticktrade_core::TickStep { above_price: Decimal::from_int(100), tick: Decimal::from_int(1) }],
    )
    .unwrap();
    let mut r = runner(Limits::default());
    r.state.specs = vec![spec_steps];
    let mut out = Outbox::with_capacity(1);
    let b = books(99, 101);
    let (_, mut ctx) = r.split(&b, &mut out, Mono(1));
    assert_eq!(ctx.place(buy(201, 1)), Err(Blocked::OffGrid));
    assert!(ctx.place(buy(202, 1)).is_ok());
    assert_eq!(ctx.place(buy(202, 1)), Err(Blocked::OutboxFull));
    assert_eq!(ctx.mid(InstrumentId(0)), Some(Price::from_raw(100)));
    assert_eq!(ctx.open_orders().count(), 1, "the refused order left no state");
}

#[test]
fn edits_wait_for_the_venue_and_pnl_is_marked_at_the_mid() {
    let mut r = runner(Limits::default());
    let mut out = Outbox::with_capacity(4);
    let b = books(99, 101);
    let (_, mut ctx) = r.split(&b, &mut out, Mono(1));
    let label = ctx.place(buy(99, 1)).unwrap();
    assert_eq!(ctx.edit(label, Price::from_raw(98), Qty::from_raw(1)), Err(Blocked::NotOpen));
    assert_eq!(
        ctx.edit(Label::try_from_str("tt-7-99").unwrap(), Price::from_raw(98), Qty::from_raw(1)),
        Err(Blocked::UnknownOrder)
    );
    assert_eq!(ctx.pnl(InstrumentId(0)), Some(Decimal::ZERO));
    let fill = FillReport {
        trade_id: crate::label::TradeId::try_from_str("T1").unwrap(),
        label,
        instrument: InstrumentId(0),
        side: Side::Buy,
        price: Price::from_raw(99),
        qty: Qty::from_raw(1),
    };
    r.on_fill(&fill, &b, Mono(2), &mut out);
    // Long 10 USD from 49.5 USD, mid 50: 10 × (1/49.5 − 1/50) BTC, floored at 1e-12.
    let (_, ctx) = r.split(&b, &mut out, Mono(3));
    assert_eq!(ctx.pnl(InstrumentId(0)), Some(Decimal::parse("0.002020202020").unwrap()));
}

#[test]
fn trades_reach_on_trade() {
    struct Count(usize);
    impl Strategy for Count {
        fn on_trade(&mut self, _: &mut Context<'_>, trade: &Trade) {
            self.0 += trade.qty.raw() as usize;
        }
    }
    let rule = PnlRule::for_spec(&spec()).unwrap();
    let mut r = Runner::new(
        Count(0),
        RunnerParts {
            orders: Orders::new(OrdersConfig { order_slots: 1, trade_memory: 1 }, vec![rule], b"tt-"),
            risk: Risk::new(Limits::default()),
            labels: LabelGen::new("tt", 7).unwrap(),
            specs: vec![spec()],
            band_reference: BandReference::Mid,
        },
    );
    let trade =
        Trade { instrument: InstrumentId(0), side: Side::Sell, price: Price::from_raw(99), qty: Qty::from_raw(3) };
    r.on_trade(&trade, &books(99, 101), Mono(1), &mut Outbox::with_capacity(1));
    assert_eq!(r.strategy().0, 3);
}

#[test]
fn an_edit_is_checked_on_what_can_still_trade() {
    let limits = Limits {
        instruments: vec![InstrumentLimits { max_order_qty: Some(Qty::from_raw(10)), ..Default::default() }],
        ..Limits::default()
    };
    let mut r = runner(limits);
    r.strategy.place = Some(buy(99, 10));
    let mut out = Outbox::with_capacity(4);
    let b = books(99, 101);
    r.on_book(InstrumentId(0), &b, Mono(1), &mut out);
    r.strategy.place = None;
    let label = r.strategy().results[0].unwrap();
    out.clear();
    let report = |filled: i64, updated_ms: i64| OrderReport {
        label,
        venue_id: VenueId::try_from_str("BTC-1").unwrap(),
        instrument: InstrumentId(0),
        side: Side::Buy,
        price: Price::from_raw(99),
        qty: Qty::from_raw(10),
        filled: Qty::from_raw(filled),
        avg_price: Decimal::from_int(99),
        state: VenueState::Open,
        updated_ms,
    };
    r.on_report(&report(4, 5), &b, Mono(2), &mut out);
    assert_eq!(r.orders().get(&label).map(|o| o.status), Some(Status::PartlyFilled));
    let (state, books, now) = (&mut r.state, &b, Mono(3));
    let mut ctx = Context { state, books, out: &mut out, now };
    // 14 in total, 4 of them filled: 10 can still trade, which is the limit.
    assert_eq!(ctx.edit(label, Price::from_raw(98), Qty::from_raw(14)), Ok(()));
    assert_eq!(
        ctx.edit(label, Price::from_raw(98), Qty::from_raw(15)),
        Err(Blocked::OrderQty { limit: Qty::from_raw(10) })
    );
}
