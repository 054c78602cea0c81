//! Unit tests of `Orders`: the lifecycle and its events, refusals, slot reuse, reconciliation.

use super::*;
use crate::pnl::PnlRule;
use ticktrade_core::InstrumentSpec;

fn rules() -> Vec<PnlRule> {
    let spec = InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::from_int(10)).unwrap();
    vec![PnlRule::for_spec(&spec).unwrap()]
}

fn orders(slots: usize) -> Orders {
    Orders::new(OrdersConfig { order_slots: slots, trade_memory: 16 }, rules(), b"tt-")
}

fn label(s: &str) -> Label {
    Label::try_from_str(s).unwrap()
}

fn report(l: &str, state: VenueState, filled: i64, ts: i64) -> OrderReport {
    OrderReport {
        label: label(l),
        venue_id: VenueId::try_from_str("ETH-1").unwrap(),
        instrument: InstrumentId(0),
        side: Side::Buy,
        price: Price::from_raw(100),
        qty: Qty::from_raw(10),
        filled: Qty::from_raw(filled),
        avg_price: Decimal::ZERO,
        state,
        updated_ms: ts,
    }
}

fn fill(id: &str, l: &str, qty: i64) -> FillReport {
    FillReport {
        trade_id: TradeId::try_from_str(id).unwrap(),
        label: label(l),
        instrument: InstrumentId(0),
        side: Side::Buy,
        price: Price::from_raw(100),
        qty: Qty::from_raw(qty),
    }
}

#[test]
fn lifecycle_with_events() {
    let mut o = orders(4);
    o.insert_pending(label("tt-1-1"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10)).unwrap();
    assert_eq!(o.get(&label("tt-1-1")).map(|o| o.status), Some(Status::PendingNew));
    let (_, e) = o.apply_report(&report("tt-1-1", VenueState::Open, 0, 1)).unwrap();
    assert_eq!(e, OrderEvent::Accepted);
    assert_eq!(o.apply_report(&report("tt-1-1", VenueState::Open, 0, 1)), None, "duplicate");
    let (order, e) = o.apply_fill(&fill("T1", "tt-1-1", 4)).unwrap().unwrap();
    assert_eq!((order.status, order.filled(), e), (Status::PartlyFilled, Qty::from_raw(4), OrderEvent::PartlyFilled));
    assert_eq!(o.apply_fill(&fill("T1", "tt-1-1", 4)), None, "duplicate fill");
    assert_eq!(o.position(InstrumentId(0)).qty, 4);
    // The order report for the same fill adds nothing.
    assert_eq!(o.apply_report(&report("tt-1-1", VenueState::Open, 4, 2)), None);
    let (order, e) = o.apply_report(&report("tt-1-1", VenueState::Cancelled, 4, 3)).unwrap();
    assert_eq!((order.status, e), (Status::Cancelled, OrderEvent::Cancelled));
    assert_eq!(o.apply_report(&report("tt-1-1", VenueState::Open, 0, 9)), None, "a late open never revives");
    assert_eq!(o.live().count(), 0);
}

#[test]
fn refusals_of_place_edit_and_cancel() {
    let mut o = orders(4);
    o.insert_pending(label("tt-1-1"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10)).unwrap();
    let (order, e) = o.apply_reject(&label("tt-1-1"), Request::Place, Reason::new(10009, "not_enough_funds")).unwrap();
    assert_eq!((order.status, e), (Status::Rejected, OrderEvent::Rejected));
    assert_eq!(
        order.reason.map(|r| (r.code, r.text.as_str().to_owned())),
        Some((10009, "not_enough_funds".to_owned()))
    );

    o.insert_pending(label("tt-1-2"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10)).unwrap();
    o.apply_report(&report("tt-1-2", VenueState::Open, 0, 1));
    o.note_request(&label("tt-1-2"), Request::Edit, Price::from_raw(101), Qty::from_raw(10));
    assert_eq!(o.get(&label("tt-1-2")).and_then(|o| o.pending_edit), Some((Price::from_raw(101), Qty::from_raw(10))));
    let (order, e) = o.apply_reject(&label("tt-1-2"), Request::Edit, Reason::new(11044, "not_open_order")).unwrap();
    assert_eq!((order.status, order.pending_edit, e), (Status::Open, None, OrderEvent::RequestRejected(Request::Edit)));
}

#[test]
fn slots_are_reused_oldest_terminal_first_and_full_is_an_error() {
    let mut o = orders(2);
    o.insert_pending(label("tt-1-1"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10)).unwrap();
    o.insert_pending(label("tt-1-2"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10)).unwrap();
    let third = o.insert_pending(label("tt-1-3"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10));
    assert_eq!(third, Err(SlotsFull(2)));
    o.apply_report(&report("tt-1-1", VenueState::Cancelled, 0, 1));
    o.insert_pending(label("tt-1-3"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10)).unwrap();
    assert!(o.get(&label("tt-1-1")).is_none());
    assert!(o.get(&label("tt-1-3")).is_some());
}

#[test]
fn snapshot_cancels_missing_adopts_ours_and_sets_positions() {
    let mut o = orders(4);
    o.insert_pending(label("tt-1-1"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10)).unwrap();
    o.insert_pending(label("tt-1-2"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(10)).unwrap();
    o.mark_unknown(|_, _| {});
    assert_eq!(o.get(&label("tt-1-1")).map(|o| o.status), Some(Status::Unknown));
    let venue = [
        report("tt-1-2", VenueState::Open, 3, 5),
        report("tt-0-9", VenueState::Open, 0, 5),
        report("x-9", VenueState::Open, 0, 5),
    ];
    let mut events = Vec::new();
    o.apply_snapshot(&venue, &[(InstrumentId(0), 30, Decimal::from_int(50))], |order, e| {
        events.push((order.label.as_str().to_owned(), e))
    });
    assert_eq!(
        events,
        [
            ("tt-1-2".to_owned(), OrderEvent::PartlyFilled),
            ("tt-0-9".to_owned(), OrderEvent::Adopted),
            ("tt-1-1".to_owned(), OrderEvent::Cancelled),
        ]
    );
    assert!(o.get(&label("x-9")).is_none(), "not our prefix");
    assert_eq!(o.position(InstrumentId(0)).qty, 30);
    // The venue's final word on the missing order (it had filled) beats the inferred cancel.
    let (order, _) = o.apply_report(&report("tt-1-1", VenueState::Filled, 10, 6)).unwrap();
    assert_eq!(order.status, Status::Filled);
}

#[test]
fn ours_is_what_we_track_or_what_carries_the_run_prefix() {
    let mut o = orders(4);
    o.insert_pending(label("x-7"), InstrumentId(0), Side::Buy, Price::from_raw(100), Qty::from_raw(1)).unwrap();
    assert!(o.is_ours(&label("x-7")), "tracked");
    assert!(o.is_ours(&label("tt-abcd-3")), "a previous run's, adoptable");
    assert!(!o.is_ours(&label("manual-1")), "another client's");
    assert!(!o.is_ours(&label("tt")), "the prefix is `tt-`, separator included");
    let unprefixed = Orders::new(OrdersConfig { order_slots: 2, trade_memory: 4 }, rules(), b"");
    assert!(!unprefixed.is_ours(&label("tt-abcd-3")), "no prefix adopts nothing");
}
