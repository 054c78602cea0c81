//! Steady state allocates nothing: once the caller's buffers are warm, decoding a book
//! notification (both forms) and encoding one do not touch the allocator.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap (working agreement).

use ticktrade_core::{Decimal, InstrumentSpec};
use ticktrade_deribit_proto::book::{DecimalLevel, LevelUpdate, decode_book, decode_book_units, encode_book_units};

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

#[test]
fn book_codec_allocates_nothing_once_warm() {
    let frames: Vec<String> = ticktrade_testkit::recorded_frames("DERIBIT-5dd9ce.0__2021-04-05.frames.jsonl")
        .into_iter()
        .filter(|f| f.contains(r#""channel":"book."#))
        .collect();
    assert!(frames.len() > 150);
    // Every option in this recording is on a 0.0005 grid with amounts in 0.1 steps.
    let spec =
        InstrumentSpec::simple("any", Decimal::parse("0.0005").unwrap(), Decimal::parse("0.1").unwrap()).unwrap();
    let mut decimals: Vec<DecimalLevel> = Vec::new();
    let mut units: Vec<LevelUpdate> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let pass = |decimals: &mut Vec<DecimalLevel>, units: &mut Vec<LevelUpdate>, out: &mut Vec<u8>| {
        let mut n = 0;
        for frame in &frames {
            decode_book(frame.as_bytes(), decimals).unwrap();
            let header = decode_book_units(frame.as_bytes(), &spec, units).unwrap();
            out.clear();
            encode_book_units(out, &header, &spec, units);
            n += decimals.len() + units.len() + out.len();
        }
        n
    };
    let warm = pass(&mut decimals, &mut units, &mut out);
    let (again, count) = ALLOC.measure(|| pass(&mut decimals, &mut units, &mut out));
    assert_eq!(again, warm);
    assert_eq!(count.n_allocs, 0, "{count:?}");
    // The counter is live: this test could fail.
    assert_eq!(ALLOC.count_in(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(8)))), 1);
}

/// The order path: encoding every hot request and reading every frame kind a session receives.
#[test]
fn order_path_allocates_nothing_once_warm() {
    use ticktrade_core::{Price, Qty, Side};
    use ticktrade_deribit_proto::frame::{Frame, scan_frame};
    use ticktrade_deribit_proto::order::{
        Label, OrderEncoder, OrderKind, OrderLabel, OrderRequest, OrderTag, TimeInForce,
    };
    use ticktrade_deribit_proto::{report, requests};

    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/deribit/examples/");
    let frames: Vec<String> = [
        "private_buy.response.json",
        "private_edit.response.json",
        "private_cancel.response.json",
        "private_cancel_all.response.json",
        "private_get_order_state_by_label.response.json",
        "private_get_user_trades_by_instrument.response.json",
        "user.orders.instrument_name.raw.notification.docs_v2_1_1.json",
        "user.orders.kind.currency.raw.notification.real_ccxt.json",
        "user.trades.kind.currency.interval.notification.real_ccxt.json",
        "user.changes.instrument_name.interval.notification.docs_v2_1_1.json",
        "heartbeat.notification.test_request.real_probe.json",
        "error.11050_bad_request.docs_v2_1_1.json",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(format!("{dir}{f}")).unwrap())
    .collect();
    let spec =
        InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::parse("10").unwrap()).unwrap();
    let encoder = OrderEncoder::new(&spec);
    let label = Label::new(b"grid-7").unwrap();
    let origin = OrderTag::Origin(OrderLabel { recv_utc_ns: 1_700_000_000_123_456_789, change_id: 42 });
    let order = OrderRequest {
        side: Side::Buy,
        kind: OrderKind::Limit(Price::from_raw(128_501)),
        qty: Qty::from_raw(3),
        label: origin,
        time_in_force: TimeInForce::ImmediateOrCancel,
        post_only: true,
        reject_post_only: true,
        reduce_only: true,
    };
    let mut out: Vec<u8> = Vec::with_capacity(4096);
    let pass = |out: &mut Vec<u8>| {
        out.clear();
        encoder.encode_order(out, 1, &order);
        encoder.encode_order(out, 2, &OrderRequest { kind: OrderKind::Market, label: OrderTag::Text(label), ..order });
        encoder.encode_edit_by_label(out, 3, origin, Qty::from_raw(2), Price::from_raw(128_400), true);
        encoder.encode_edit(out, 4, "BTC-17", Qty::from_raw(2), Price::from_raw(128_400), false);
        requests::cancel_by_label(out, 5, OrderTag::Text(label), None);
        requests::cancel(out, 6, "BTC-17");
        requests::cancel_all(out, 7);
        requests::cancel_all_by_instrument(out, 8, "BTC-PERPETUAL");
        requests::test(out, 9);
        let mut n = out.len();
        for frame in &frames {
            match scan_frame(frame.as_bytes()).unwrap() {
                Frame::Result { result, .. } => {
                    let orders = report::for_each_order(result, |o, _| n += o.order_id.len());
                    let with_trades = report::decode_order_result(result, |t, _| n += t.trade_id.len());
                    let trades = report::decode_user_trades(result, |t, _| n += t.trade_id.len());
                    let count = report::decode_count(result);
                    assert!(orders.is_ok() || with_trades.is_ok() || trades.is_ok() || count.is_ok(), "{frame}");
                }
                Frame::Notification { data, .. } => {
                    let _ = report::for_each_order(data, |o, _| n += o.order_id.len());
                    let _ = report::for_each_trade(data, |t, _| n += t.trade_id.len());
                    let m = std::cell::Cell::new(0);
                    let _ = report::decode_user_changes(data, |_, _| m.set(m.get() + 1), |_, _| m.set(m.get() + 1));
                    n += m.get();
                }
                Frame::Error { error, .. } => n += error.message.len(),
                Frame::Heartbeat(_) => n += 1,
            }
        }
        n
    };
    let warm = pass(&mut out);
    let (again, count) = ALLOC.measure(|| pass(&mut out));
    assert_eq!(again, warm);
    assert!(warm > 1000);
    assert_eq!(count.n_allocs, 0, "{count:?}");
}
