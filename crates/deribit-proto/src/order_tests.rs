use super::*;
use crate::envelope::encode_request;
use proptest::prelude::*;
use ticktrade_core::Decimal;

fn spec(tick: &str, qty_unit: &str) -> InstrumentSpec {
    InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse(tick).unwrap(), Decimal::parse(qty_unit).unwrap()).unwrap()
}

/// The slow, obviously right encoding: the generic request writer.
fn naive(spec: &InstrumentSpec, id: u64, o: &LimitOrder) -> Vec<u8> {
    let mut label = Vec::new();
    o.label.write(&mut label);
    let label = String::from_utf8(label).unwrap();
    let method = match o.side {
        Side::Buy => "private/buy",
        Side::Sell => "private/sell",
    };
    let mut out = Vec::new();
    encode_request(&mut out, id, method, |p| {
        p.str("instrument_name", &spec.name).qty("amount", spec, o.qty).str("type", "limit");
        p.price("price", spec, o.price).str("label", &label);
        if o.post_only {
            p.bool("post_only", true);
        }
    });
    out
}

fn order(side: Side, price: i64, qty: i64) -> LimitOrder {
    LimitOrder {
        side,
        price: Price::from_raw(price),
        qty: Qty::from_raw(qty),
        post_only: true,
        label: OrderLabel { recv_utc_ns: 1_700_000_000_123_456_789, change_id: 42 },
    }
}

#[test]
fn buy_at_half_tick() {
    let spec = spec("0.5", "10");
    let mut out = Vec::new();
    OrderEncoder::new(&spec).encode(&mut out, 7, &order(Side::Buy, 128_501, 3));
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"jsonrpc":"2.0","id":7,"method":"private/buy","params":{"instrument_name":"BTC-PERPETUAL","amount":30,"type":"limit","price":64250.5,"label":"tt.1700000000123456789.42","post_only":true}}"#
    );
    let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(value["params"]["price"], serde_json::json!(64250.5));
}

#[test]
fn label_round_trips_and_rejects_others() {
    let label = OrderLabel { recv_utc_ns: -5, change_id: u64::MAX };
    let mut out = Vec::new();
    label.write(&mut out);
    assert!(out.len() <= 64);
    assert_eq!(OrderLabel::parse(std::str::from_utf8(&out).unwrap()), Some(label));
    for bad in ["", "tt.", "tt.1", "tt.1.", "tt..1", "xx.1.2", "tt.1.2x", "tt.1.-2"] {
        assert_eq!(OrderLabel::parse(bad), None, "{bad}");
    }
    let mut frame = Vec::new();
    OrderEncoder::new(&spec("0.5", "10")).encode(&mut frame, 1, &order(Side::Sell, 2, 1));
    assert_eq!(find_label(&frame).map(|l| l.change_id), Some(42));
    assert_eq!(find_label(b"{\"label\":\"mine\"}"), None);
}

proptest! {
    #[test]
    fn matches_generic_request_writer(
        tick in prop::sample::select(vec!["0.5", "1", "0.0001", "25", "0.05"]),
        unit in prop::sample::select(vec!["10", "1", "0.001", "0.1"]),
        price in -1_000_000_000i64..1_000_000_000,
        qty in 0i64..1_000_000_000,
        buy: bool, post_only: bool, id: u64, utc: i64, change_id: u64,
    ) {
        let spec = spec(tick, unit);
        let mut o = order(if buy { Side::Buy } else { Side::Sell }, price, qty);
        o.post_only = post_only;
        o.label = OrderLabel { recv_utc_ns: utc, change_id };
        let mut out = Vec::new();
        OrderEncoder::new(&spec).encode(&mut out, id, &o);
        prop_assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(naive(&spec, id, &o)).unwrap());
    }

    #[test]
    fn huge_values_take_the_exact_slow_path(price in prop::sample::select(vec![i64::MAX, i64::MIN + 1, i64::MAX / 3])) {
        let spec = spec("0.5", "10");
        let o = order(Side::Buy, price, i64::MAX);
        let mut out = Vec::new();
        OrderEncoder::new(&spec).encode(&mut out, 1, &o);
        prop_assert_eq!(out, naive(&spec, 1, &o));
    }
}

/// The generic writer with the members `encode_order` documents.
fn naive_request(spec: &InstrumentSpec, id: u64, o: &OrderRequest<'_>) -> Vec<u8> {
    let mut label = Vec::new();
    write_tag_text(o.label, &mut label);
    let label = match o.label {
        OrderTag::Text(text) => text.as_str().to_owned(),
        _ => String::from_utf8(label).unwrap(),
    };
    let method = match o.side {
        Side::Buy => "private/buy",
        Side::Sell => "private/sell",
    };
    let mut out = Vec::new();
    encode_request(&mut out, id, method, |p| {
        p.str("instrument_name", &spec.name).qty("amount", spec, o.qty);
        match o.kind {
            OrderKind::Limit(price) => p.str("type", "limit").price("price", spec, price),
            OrderKind::Market => p.str("type", "market"),
        };
        if o.label != OrderTag::None {
            p.str("label", &label);
        }
        if o.time_in_force != TimeInForce::GoodTilCancelled {
            p.str("time_in_force", o.time_in_force.as_str());
        }
        for (key, on) in
            [("post_only", o.post_only), ("reject_post_only", o.reject_post_only), ("reduce_only", o.reduce_only)]
        {
            if on {
                p.bool(key, true);
            }
        }
    });
    out
}

fn text(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap()
}

#[test]
fn labels_are_checked_once() {
    assert_eq!(Label::new(&[b'a'; 64]).map(|l| l.as_str().len()), Ok(64));
    assert_eq!(Label::new(&[b'a'; 65]), Err(LabelError::TooLong(65)));
    assert_eq!(Label::new("ab\u{e9}".as_bytes()), Err(LabelError::NotAscii(2)));
    assert_eq!(Label::new(b"").map(|l| l.as_str()), Ok(""));
}

#[test]
fn market_ioc_reduce_only_sell() {
    let spec = spec("0.5", "10");
    let label = Label::new(b"exit-1").unwrap();
    let o = OrderRequest {
        side: Side::Sell,
        kind: OrderKind::Market,
        qty: Qty::from_raw(2),
        label: OrderTag::Text(label),
        time_in_force: TimeInForce::ImmediateOrCancel,
        post_only: false,
        reject_post_only: false,
        reduce_only: true,
    };
    let mut out = Vec::new();
    OrderEncoder::new(&spec).encode_order(&mut out, 9, &o);
    assert_eq!(
        text(out),
        r#"{"jsonrpc":"2.0","id":9,"method":"private/sell","params":{"instrument_name":"BTC-PERPETUAL","amount":20,"type":"market","label":"exit-1","time_in_force":"immediate_or_cancel","reduce_only":true}}"#
    );
}

#[test]
fn edits_match_the_generic_writer() {
    let spec = spec("0.5", "10");
    let encoder = OrderEncoder::new(&spec);
    let label = Label::new(b"q\"1").unwrap();
    for post_only in [false, true] {
        let mut out = Vec::new();
        encoder.encode_edit_by_label(
            &mut out,
            3,
            OrderTag::Text(label),
            Qty::from_raw(15),
            Price::from_raw(100_223),
            post_only,
        );
        let mut want = Vec::new();
        encode_request(&mut want, 3, "private/edit_by_label", |p| {
            p.str("instrument_name", &spec.name).str("label", "q\"1").qty("amount", &spec, Qty::from_raw(15));
            p.price("price", &spec, Price::from_raw(100_223));
            if post_only {
                p.bool("post_only", true);
            }
        });
        assert_eq!(text(out), text(want));
        let mut out = Vec::new();
        encoder.encode_edit(&mut out, 4, "ETH-584864807", Qty::from_raw(1), Price::from_raw(-3), post_only);
        let mut want = Vec::new();
        encode_request(&mut want, 4, "private/edit", |p| {
            p.str("order_id", "ETH-584864807").qty("amount", &spec, Qty::from_raw(1));
            p.price("price", &spec, Price::from_raw(-3));
            if post_only {
                p.bool("post_only", true);
            }
        });
        assert_eq!(text(out), text(want));
    }
}

fn tif() -> impl Strategy<Value = TimeInForce> {
    prop::sample::select(vec![
        TimeInForce::GoodTilCancelled,
        TimeInForce::GoodTilDay,
        TimeInForce::FillOrKill,
        TimeInForce::ImmediateOrCancel,
    ])
}

proptest! {
    #[test]
    fn order_requests_match_the_generic_writer(
        tick in prop::sample::select(vec!["0.5", "1", "0.0001", "25"]),
        unit in prop::sample::select(vec!["10", "1", "0.001"]),
        price in prop_oneof![-1_000_000_000i64..1_000_000_000, any::<i64>()],
        qty in prop_oneof![0i64..1_000_000_000, any::<i64>()],
        market: bool, buy: bool, flags in any::<[bool; 3]>(), tif in tif(),
        label in prop_oneof![Just(None), "[ -~]{0,64}".prop_map(Some), "[\\x00-\\x7f]{0,64}".prop_map(Some)],
        origin: Option<(i64, u64)>, id: u64,
    ) {
        let spec = spec(tick, unit);
        let tag = match (&label, origin) {
            (Some(text), _) => OrderTag::Text(Label::new(text.as_bytes()).unwrap()),
            (None, Some((utc, change_id))) => OrderTag::Origin(OrderLabel { recv_utc_ns: utc, change_id }),
            (None, None) => OrderTag::None,
        };
        let o = OrderRequest {
            side: if buy { Side::Buy } else { Side::Sell },
            kind: if market { OrderKind::Market } else { OrderKind::Limit(Price::from_raw(price)) },
            qty: Qty::from_raw(qty),
            label: tag,
            time_in_force: tif,
            post_only: flags[0],
            reject_post_only: flags[1],
            reduce_only: flags[2],
        };
        let mut out = Vec::new();
        OrderEncoder::new(&spec).encode_order(&mut out, id, &o);
        let want = naive_request(&spec, id, &o);
        prop_assert_eq!(text(out), text(want));
    }

    #[test]
    fn limit_orders_encode_as_their_requests(price: i64, qty: i64, buy: bool, post_only: bool, utc: i64, change_id: u64) {
        let spec = spec("0.5", "10");
        let mut o = order(if buy { Side::Buy } else { Side::Sell }, price, qty);
        o.post_only = post_only;
        o.label = OrderLabel { recv_utc_ns: utc, change_id };
        let encoder = OrderEncoder::new(&spec);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        encoder.encode(&mut a, 5, &o);
        encoder.encode_order(&mut b, 5, &OrderRequest::from(&o));
        prop_assert_eq!(a, b);
    }
}

proptest! {
    /// The encoder's number text is the decimal's own shortest text.
    #[test]
    fn fixed_numbers_are_the_decimals_shortest_text(m in prop_oneof![any::<i64>(), -100_000i64..100_000], scale in 0u8..=18) {
        let mut fast = Vec::new();
        write_fixed(m, scale, &mut fast);
        let mut want = Vec::new();
        Decimal::new(m, scale).unwrap().write(&mut want);
        prop_assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(want).unwrap());
    }
}
