//! `Orders` against a naive model: for a few labels, a true history (acknowledged, amended,
//! partly filled, then filled, cancelled or rejected) is delivered as reports, fills and
//! rejects in any order and with duplicates, optionally with a venue snapshot in the middle.
//! The final state and the position must be the model's: the last true report, and the sum of
//! the distinct fills.

#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use ticktrade_core::{Decimal, InstrumentId, InstrumentSpec, Price, Qty, Side};
use ticktrade_strategy::label::{Label, TradeId, VenueId};
use ticktrade_strategy::order::{FillReport, OrderReport, Orders, OrdersConfig, Reason, Request, Status, VenueState};
use ticktrade_strategy::pnl::PnlRule;

const QTY: i64 = 10;
const N_LABELS: usize = 3;

#[derive(Clone, Debug)]
enum Event {
    Report(OrderReport),
    /// A fill and the time it happened (just before the report that counts it).
    Fill(FillReport, i64),
    Reject(Label),
}

impl Event {
    fn ts(&self) -> i64 {
        match self {
            Event::Report(r) => r.updated_ms,
            Event::Fill(_, ts) => *ts,
            Event::Reject(_) => 0,
        }
    }
}

fn label(i: usize) -> Label {
    Label::try_from_str(&format!("tt-1-{i}")).unwrap()
}

fn report(i: usize, price: i64, filled: i64, state: VenueState, ts: i64) -> OrderReport {
    OrderReport {
        label: label(i),
        venue_id: VenueId::try_from_str(&format!("BTC-{i}")).unwrap(),
        instrument: InstrumentId(0),
        side: if i.is_multiple_of(2) { Side::Buy } else { Side::Sell },
        price: Price::from_raw(price),
        qty: Qty::from_raw(QTY),
        filled: Qty::from_raw(filled),
        avg_price: Decimal::ZERO,
        state,
        updated_ms: ts,
    }
}

/// One label's true history and its final state (status, filled, price).
#[derive(Clone, Debug)]
struct History {
    events: Vec<Event>,
    last: (Status, i64, i64),
    fills: i64,
}

fn history(i: usize) -> impl Strategy<Value = History> {
    (prop::collection::vec((any::<bool>(), 1i64..4), 0..6), 0u8..4).prop_map(move |(steps, end)| {
        if end == 3 {
            return History { events: vec![Event::Reject(label(i))], last: (Status::Rejected, 0, 100), fills: 0 };
        }
        let side = if i.is_multiple_of(2) { Side::Buy } else { Side::Sell };
        let step_ts = |k: i64| (k * N_LABELS as i64 + i as i64 + 1) * 10;
        let (mut k, mut price, mut filled, mut trade) = (0i64, 100i64, 0i64, 0);
        let mut events = vec![Event::Report(report(i, price, 0, VenueState::Open, step_ts(k)))];
        let mut fill = |events: &mut Vec<Event>, qty: i64, ts: i64, price: i64| {
            trade += 1;
            events.push(Event::Fill(
                FillReport {
                    trade_id: TradeId::try_from_str(&format!("T{i}-{trade}")).unwrap(),
                    label: label(i),
                    instrument: InstrumentId(0),
                    side,
                    price: Price::from_raw(price),
                    qty: Qty::from_raw(qty),
                },
                ts - 1,
            ));
        };
        for (is_fill, n) in steps {
            k += 1;
            if is_fill && filled + n < QTY {
                filled += n;
                fill(&mut events, n, step_ts(k), price);
            } else {
                price += n;
            }
            events.push(Event::Report(report(i, price, filled, VenueState::Open, step_ts(k))));
        }
        k += 1;
        let last = match end {
            0 => {
                events.push(Event::Report(report(i, price, filled, VenueState::Cancelled, step_ts(k))));
                (Status::Cancelled, filled, price)
            }
            1 => {
                fill(&mut events, QTY - filled, step_ts(k), price);
                filled = QTY;
                events.push(Event::Report(report(i, price, QTY, VenueState::Filled, step_ts(k))));
                (Status::Filled, QTY, price)
            }
            _ => (if filled > 0 { Status::PartlyFilled } else { Status::Open }, filled, price),
        };
        History { events, last, fills: filled }
    })
}

fn histories() -> impl Strategy<Value = Vec<History>> {
    (history(0), history(1), history(2)).prop_map(|(a, b, c)| vec![a, b, c])
}

fn orders() -> Orders {
    let spec = InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::from_int(10)).unwrap();
    let mut orders =
        Orders::new(OrdersConfig { order_slots: 8, trade_memory: 64 }, vec![PnlRule::for_spec(&spec).unwrap()], b"tt-");
    for i in 0..N_LABELS {
        let side = if i.is_multiple_of(2) { Side::Buy } else { Side::Sell };
        orders.insert_pending(label(i), InstrumentId(0), side, Price::from_raw(100), Qty::from_raw(QTY)).unwrap();
    }
    orders
}

fn apply(orders: &mut Orders, event: &Event) {
    match event {
        Event::Report(r) => {
            orders.apply_report(r);
        }
        Event::Fill(f, _) => {
            orders.apply_fill(f);
        }
        Event::Reject(l) => {
            orders.apply_reject(l, Request::Place, Reason::new(10009, "not_enough_funds"));
        }
    }
}

fn shuffle(events: &mut [Event], seed: u64) {
    let mut state = seed | 1;
    for i in (1..events.len()).rev() {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        events.swap(i, (state % (i as u64 + 1)) as usize);
    }
}

fn with_duplicates(events: &[Event], picks: &[prop::sample::Index]) -> Vec<Event> {
    let mut out = events.to_vec();
    if !events.is_empty() {
        out.extend(picks.iter().map(|p| events[p.index(events.len())].clone()));
    }
    out
}

fn check_final(orders: &Orders, hist: &[History]) -> Result<(), TestCaseError> {
    let mut position = 0;
    for (i, h) in hist.iter().enumerate() {
        let o = orders.get(&label(i)).unwrap();
        prop_assert_eq!((o.status, o.filled().raw(), o.price.raw()), h.last, "label {}", i);
        position += if i.is_multiple_of(2) { h.fills } else { -h.fills };
    }
    prop_assert_eq!(orders.position(InstrumentId(0)).qty, position);
    Ok(())
}

proptest! {
    #[test]
    fn any_interleaving_with_duplicates_converges(
        hist in histories(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..20),
        seed in any::<u64>(),
    ) {
        let all: Vec<Event> = hist.iter().flat_map(|h| h.events.clone()).collect();
        let mut delivered = with_duplicates(&all, &picks);
        shuffle(&mut delivered, seed);
        let mut o = orders();
        for event in &delivered {
            apply(&mut o, event);
        }
        check_final(&o, &hist)?;
    }

    /// A reconnect in the middle: every event up to `t` was applied (any order), the venue's
    /// snapshot at `t` comes in, then the rest and late duplicates of anything (any order).
    #[test]
    fn snapshot_in_the_middle_converges(
        hist in histories(),
        cut in 0.0f64..1.0,
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..20),
        seeds in any::<(u64, u64)>(),
    ) {
        let all: Vec<Event> = hist.iter().flat_map(|h| h.events.clone()).collect();
        let max_ts = all.iter().map(Event::ts).max().unwrap_or(0);
        // Every label is known to the venue by t: after each first report (ts ≤ 30).
        let t = 30 + ((max_ts - 30).max(0) as f64 * cut) as i64;
        let (mut before, mut after): (Vec<Event>, Vec<Event>) = all.iter().cloned().partition(|e| e.ts() <= t);
        // The venue's view at t: each label's latest report up to t, if still open.
        let mut open = Vec::new();
        let mut position = 0;
        for (i, h) in hist.iter().enumerate() {
            let latest = h.events.iter().filter_map(|e| match e { Event::Report(r) if r.updated_ms <= t => Some(*r), _ => None }).next_back();
            if let Some(r) = latest.filter(|r| r.state == VenueState::Open) {
                open.push(r);
            }
            let filled: i64 = h.events.iter().filter_map(|e| match e { Event::Fill(f, ts) if *ts <= t => Some(f.qty.raw()), _ => None }).sum();
            position += if i.is_multiple_of(2) { filled } else { -filled };
        }
        shuffle(&mut before, seeds.0);
        after.extend(with_duplicates(&all, &picks).into_iter().skip(all.len()));
        shuffle(&mut after, seeds.1);
        let mut o = orders();
        for event in &before {
            apply(&mut o, event);
        }
        o.apply_snapshot(&open, &[(InstrumentId(0), position, Decimal::from_int(100))], |_, _| {});
        prop_assert_eq!(o.position(InstrumentId(0)).qty, position);
        for event in &after {
            apply(&mut o, event);
        }
        check_final(&o, &hist)?;
    }
}
