//! Each check against a naive re-statement of its rule, on random orders and random books of
//! our own live orders.

use super::*;
use crate::order::{OrderReport, Orders, OrdersConfig, VenueState};
use crate::pnl::PnlRule;
use proptest::prelude::*;
use ticktrade_core::InstrumentId;

fn spec() -> InstrumentSpec {
    InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::from_int(10)).unwrap()
}

fn inst() -> InstrumentId {
    InstrumentId(0)
}

/// Our live orders: (buy?, price, qty); all acknowledged as open.
fn orders_with(live: &[(bool, i64, i64)], position: i64) -> Orders {
    let rule = PnlRule::for_spec(&spec()).unwrap();
    let mut orders = Orders::new(OrdersConfig { order_slots: 64, trade_memory: 64 }, vec![rule], b"tt-");
    for (i, (buy, price, qty)) in live.iter().enumerate() {
        let label = Label::try_from_str(&format!("tt-1-{i}")).unwrap();
        let side = if *buy { Side::Buy } else { Side::Sell };
        orders.insert_pending(label, inst(), side, Price::from_raw(*price), Qty::from_raw(*qty)).unwrap();
        orders.apply_report(&OrderReport {
            label,
            venue_id: Default::default(),
            instrument: inst(),
            side,
            price: Price::from_raw(*price),
            qty: Qty::from_raw(*qty),
            filled: Qty::ZERO,
            avg_price: Decimal::ZERO,
            state: VenueState::Open,
            updated_ms: 1,
        });
    }
    if position != 0 {
        // A fill of an order not in the book sets the position without touching the live ones.
        orders.apply_fill(&crate::order::FillReport {
            trade_id: crate::label::TradeId::try_from_str("T-position").unwrap(),
            label: Label::try_from_str("other").unwrap(),
            instrument: inst(),
            side: if position > 0 { Side::Buy } else { Side::Sell },
            price: Price::from_raw(100),
            qty: Qty::from_raw(position.abs()),
        });
    }
    orders
}

fn candidate(buy: bool, price: i64, qty: i64) -> Candidate {
    Candidate {
        instrument: inst(),
        side: if buy { Side::Buy } else { Side::Sell },
        price: Price::from_raw(price),
        qty: Qty::from_raw(qty),
        replaces: None,
        filled: Qty::ZERO,
    }
}

fn risk(instrument: InstrumentLimits, f: impl FnOnce(&mut Limits)) -> Risk {
    let mut limits = Limits { instruments: vec![instrument], ..Limits::default() };
    f(&mut limits);
    Risk::new(limits)
}

fn live_orders() -> impl Strategy<Value = Vec<(bool, i64, i64)>> {
    prop::collection::vec((any::<bool>(), 90i64..110, 1i64..20), 0..8)
}

proptest! {
    #[test]
    fn order_qty(qty in 1i64..200, limit in 1i64..200) {
        let r = risk(InstrumentLimits { max_order_qty: Some(Qty::from_raw(limit)), ..Default::default() }, |_| {});
        let got = r.check(&candidate(true, 100, qty), &orders_with(&[], 0), None, Mono(1));
        let naive = if qty > limit { Err(Blocked::OrderQty { limit: Qty::from_raw(limit) }) } else { Ok(()) };
        prop_assert_eq!(got, naive);
    }

    #[test]
    fn notional_linear_and_inverse(price in 1i64..1_000, qty in 1i64..1_000, limit in 1i64..100_000, inverse in any::<bool>()) {
        let mut s = spec();
        if !inverse { s.settlement = Settlement::Linear; }
        let notional = Notional::for_spec(&s);
        let limit_dec = Decimal::from_int(limit);
        let units = notional.units_of(&s, limit_dec);
        let r = risk(InstrumentLimits { max_order_notional: Some((units, limit_dec)), notional, ..Default::default() }, |_| {});
        let got = r.check(&candidate(true, price, qty), &orders_with(&[], 0), None, Mono(1));
        // Naive: in currency, inverse amount = qty × 10 USD; linear = price × 0.5 × qty × 10.
        // Compare doubled to stay in integers (price × 0.5 × 10 × qty ≤ limit ⇔ price × 5 × qty ≤ limit).
        let value = if inverse { qty * 10 } else { price * qty * 5 };
        let naive = if value > limit { Err(Blocked::Notional { limit: limit_dec }) } else { Ok(()) };
        prop_assert_eq!(got, naive);
    }

    #[test]
    fn price_band(price in 1i64..2_000, reference in 1i64..2_000, bps in 0u32..3_000) {
        let r = risk(InstrumentLimits::default(), |l| l.price_band = Some(PriceBand { band_bps: bps, reference: BandReference::Mid }));
        let got = r.check(&candidate(false, price, 1), &orders_with(&[], 0), Some(Price::from_raw(reference)), Mono(1));
        // |price/reference − 1| ≤ bps/10 000, as rationals.
        let naive_ok = (price - reference).abs() as i128 * 10_000 <= bps as i128 * reference as i128;
        prop_assert_eq!(got.is_ok(), naive_ok);
        prop_assert_eq!(r.check(&candidate(false, price, 1), &orders_with(&[], 0), None, Mono(1)), Err(Blocked::NoReference));
    }

    #[test]
    fn position_counts_orders_on_the_increasing_side(
        live in live_orders(), position in -50i64..50, buy in any::<bool>(), qty in 1i64..40, limit in 0i64..100,
    ) {
        let r = risk(InstrumentLimits { max_position: Some(Qty::from_raw(limit)), ..Default::default() }, |_| {});
        let orders = orders_with(&live, position);
        let got = r.check(&candidate(buy, 100, qty), &orders, None, Mono(1));
        let open: i64 = orders.live().filter(|o| (o.side == Side::Buy) == buy).map(|o| o.remaining().raw()).sum();
        let worst = if buy { position + open + qty } else { -position + open + qty };
        let naive = if worst > limit { Err(Blocked::Position { limit: Qty::from_raw(limit) }) } else { Ok(()) };
        prop_assert_eq!(got, naive);
    }

    #[test]
    fn open_orders(live in live_orders(), limit in 0u32..10) {
        let r = risk(InstrumentLimits::default(), |l| l.max_open_orders = Some(limit));
        let orders = orders_with(&live, 0);
        let got = r.check(&candidate(true, 100, 1), &orders, None, Mono(1));
        let naive = if orders.live().count() as u32 >= limit { Err(Blocked::OpenOrders { limit }) } else { Ok(()) };
        prop_assert_eq!(got, naive);
    }

    #[test]
    fn self_cross(live in live_orders(), buy in any::<bool>(), price in 85i64..115) {
        let r = risk(InstrumentLimits::default(), |l| l.self_cross = true);
        let orders = orders_with(&live, 0);
        let got = r.check(&candidate(buy, price, 1), &orders, None, Mono(1));
        let crossed = orders.live().filter(|o| (o.side == Side::Buy) != buy).map(|o| o.price.raw()).filter(|p| if buy { price >= *p } else { price <= *p });
        let naive = if buy { crossed.min() } else { crossed.max() };
        prop_assert_eq!(got, naive.map_or(Ok(()), |p| Err(Blocked::SelfCross { resting: Price::from_raw(p) })));
    }

    /// At most `max_orders` in any window of `window_ns`: a sliding-window count over all sends.
    #[test]
    fn rate(gaps in prop::collection::vec(0u64..400, 1..60), max_orders in 1u32..6, window_ns in 1u64..1_000) {
        let mut r = risk(InstrumentLimits::default(), |l| l.rate = Some(RateLimit { max_orders, window_ns }));
        let orders = orders_with(&[], 0);
        let mut sent: Vec<u64> = Vec::new();
        let mut now = 1u64;
        for gap in gaps {
            now += gap;
            let in_window = sent.iter().filter(|t| now - **t < window_ns).count();
            let naive_ok = in_window < max_orders as usize;
            let got = r.check(&candidate(true, 100, 1), &orders, None, Mono(now));
            prop_assert_eq!(got.is_ok(), naive_ok);
            if got.is_ok() {
                r.record_sent(Mono(now));
                sent.push(now);
            }
        }
    }
}

#[test]
fn edits_do_not_count_the_edited_order_twice() {
    let r = risk(InstrumentLimits { max_position: Some(Qty::from_raw(10)), ..Default::default() }, |l| {
        l.max_open_orders = Some(1);
    });
    let orders = orders_with(&[(true, 100, 8)], 0);
    let label = orders.live().next().unwrap().label;
    let mut edit = candidate(true, 101, 10);
    edit.replaces = Some(label);
    assert_eq!(r.check(&edit, &orders, None, Mono(1)), Ok(()));
    edit.qty = Qty::from_raw(11);
    assert_eq!(r.check(&edit, &orders, None, Mono(1)), Err(Blocked::Position { limit: Qty::from_raw(10) }));
    assert_eq!(r.check(&candidate(true, 100, 1), &orders, None, Mono(1)), Err(Blocked::OpenOrders { limit: 1 }));
}

#[test]
fn loss_trips_the_kill_switch_once() {
    let s = spec();
    let rule = PnlRule::for_spec(&s).unwrap();
    let limit = Decimal::parse("0.01").unwrap();
    let mut r = risk(InstrumentLimits { max_loss: Some((rule.units_of(limit), limit)), ..Default::default() }, |_| {});
    // Long 10 000 USD from 50 000 (100 000 ticks).
    let mut orders = orders_with(&[], 0);
    orders.apply_snapshot(&[], &[(inst(), 1_000, Decimal::from_int(50_000))], |_, _| {});
    // At 49 000: 10 000 × (1/50 000 − 1/49 000) ≈ −0.00408 BTC: within the limit.
    assert_eq!(r.check_loss(&orders, inst(), Price::from_raw(98_000)), None);
    // At 40 000: −0.05 BTC: trips.
    assert_eq!(r.check_loss(&orders, inst(), Price::from_raw(80_000)), Some(Blocked::MaxLoss { limit }));
    assert_eq!(r.check_loss(&orders, inst(), Price::from_raw(80_000)), None, "already tripped");
    assert_eq!(r.check(&candidate(true, 100, 1), &orders, None, Mono(1)), Err(Blocked::Killed));
}
