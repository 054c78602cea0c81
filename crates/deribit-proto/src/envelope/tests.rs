use proptest::prelude::*;
use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty};

use super::*;

#[test]
fn classifies_responses_errors_notifications_heartbeats() {
    let ok = r#"{"jsonrpc":"2.0","id":5239,"testnet":false,"result":[1,2],"usIn":1535043730126248,"usOut":1535043730126250,"usDiff":2}"#;
    let Incoming::Response(r) = classify(ok).unwrap() else { panic!("not a response") };
    assert_eq!(r.id, Some(Id::Num(5239)));
    assert_eq!(r.outcome.unwrap().get(), "[1,2]");
    assert_eq!(
        (r.us_in, r.us_out, r.us_diff, r.testnet),
        (Some(1535043730126248), Some(1535043730126250), Some(2), Some(false))
    );

    let null_result = r#"{"jsonrpc":"2.0","id":"abc","result":null}"#;
    let Incoming::Response(r) = classify(null_result).unwrap() else { panic!() };
    assert_eq!(r.id, Some(Id::Str("abc")));
    assert_eq!(r.outcome.unwrap().get(), "null");

    let err =
        r#"{"jsonrpc":"2.0","error":{"code":11050,"data":"invalid json","message":"bad_request"},"testnet":false}"#;
    let Incoming::Response(r) = classify(err).unwrap() else { panic!() };
    assert_eq!(r.id, None);
    let e = r.outcome.unwrap_err();
    assert_eq!((e.code, e.message.as_ref(), e.data.map(|d| d.get())), (11050, "bad_request", Some("\"invalid json\"")));

    let note = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"user.orders.any.any.raw","label":"mine","data":{"a":1}}}"#;
    let Incoming::Notification(n) = classify(note).unwrap() else { panic!() };
    assert_eq!((n.channel, n.data.get(), n.label), ("user.orders.any.any.raw", r#"{"a":1}"#, Some("mine")));

    let hb = r#"{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}"#;
    assert!(matches!(classify(hb).unwrap(), Incoming::Heartbeat(Heartbeat::TestRequest)));
    assert!(classify(r#"{"jsonrpc":"2.0","id":1,"method":"public/test","params":{}}"#).is_err());
    assert!(classify("not json").is_err());
    assert!(classify(r#"{"jsonrpc":"2.0"}"#).is_err());
}

#[test]
fn encodes_requests_byte_exact() {
    let spec =
        InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::parse("10").unwrap()).unwrap();
    let mut out = Vec::new();
    encode_request(&mut out, 42, "private/buy", |p| {
        p.str("instrument_name", "BTC-PERPETUAL")
            .qty("amount", &spec, Qty::from_raw(4))
            .price("price", &spec, Price::from_raw(128_501))
            .str("type", "limit")
            .bool("post_only", true);
    });
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"jsonrpc":"2.0","id":42,"method":"private/buy","params":{"instrument_name":"BTC-PERPETUAL","amount":40,"price":64250.5,"type":"limit","post_only":true}}"#
    );
    out.clear();
    encode_request(&mut out, 1, "public/subscribe", |p| {
        p.strs("channels", ["book.BTC-PERPETUAL.raw", "a\"b"]);
    });
    let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(value["params"]["channels"][1], "a\"b");
    out.clear();
    encode_request(&mut out, 2, "public/test", |_| {});
    assert_eq!(std::str::from_utf8(&out).unwrap(), r#"{"jsonrpc":"2.0","id":2,"method":"public/test","params":{}}"#);
    out.clear();
    encode_request_serde(&mut out, 3, "public/get_time", &serde_json::json!({})).unwrap();
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"jsonrpc":"2.0","id":3,"method":"public/get_time","params":{}}"#
    );
}

#[test]
fn server_decodes_requests_and_refuses_per_deribit() {
    let r = decode_request(
        r#"{"jsonrpc":"2.0","id":8066,"method":"public/ticker","params":{"instrument_name":"BTC-PERPETUAL"}}"#,
    )
    .unwrap();
    assert_eq!((r.id, r.method.as_ref()), (Id::Num(8066), "public/ticker"));
    assert_eq!(r.params.unwrap().get(), r#"{"instrument_name":"BTC-PERPETUAL"}"#);
    let r = decode_request(r#"{"jsonrpc":"2.0","id":"x","method":"public/test"}"#).unwrap();
    assert_eq!((r.id, r.params.is_none()), (Id::Str("x"), true));

    let e = decode_request("hello").unwrap_err();
    assert_eq!((e.id, e.code, e.data), (None, 11050, Some("\"invalid json\"")));
    let e = decode_request(r#"[{"jsonrpc":"2.0","id":1,"method":"public/test"}]"#).unwrap_err();
    assert_eq!(e.code, 11050);
    let e = decode_request(r#"{"jsonrpc":"2.0","id":7,"method":"public/test","params":[1]}"#).unwrap_err();
    assert_eq!((e.id, e.code), (Some(Id::Num(7)), -32602));
    let e = decode_request(r#"{"jsonrpc":"2.0","id":7}"#).unwrap_err();
    assert_eq!((e.id, e.code), (Some(Id::Num(7)), 11050));
}

#[test]
fn server_encodes_what_the_client_classifies() {
    let stamps = ServerStamps { us_in: 1_535_037_392_434_763, us_out: 1_535_037_392_448_119, testnet: false };
    let mut out = Vec::new();
    encode_error(&mut out, Some(Id::Num(8163)), 11050, "bad_request", None, stamps);
    assert_eq!(
        std::str::from_utf8(&out).unwrap(),
        r#"{"jsonrpc":"2.0","id":8163,"error":{"code":11050,"message":"bad_request"},"testnet":false,"usIn":1535037392434763,"usOut":1535037392448119,"usDiff":13356}"#
    );
    out.clear();
    encode_result(&mut out, Id::Str("q"), r#"{"version":"1.2.26"}"#, stamps);
    let text = std::str::from_utf8(&out).unwrap().to_owned();
    let Incoming::Response(r) = classify(&text).unwrap() else { panic!() };
    assert_eq!(
        (r.id, r.outcome.unwrap().get(), r.us_diff),
        (Some(Id::Str("q")), r#"{"version":"1.2.26"}"#, Some(13356))
    );
    out.clear();
    decode_request("nope").unwrap_err().encode(&mut out, stamps);
    let text = std::str::from_utf8(&out).unwrap().to_owned();
    let Incoming::Response(r) = classify(&text).unwrap() else { panic!() };
    assert_eq!((r.id, r.outcome.unwrap_err().code), (None, 11050));
    out.clear();
    encode_notification(&mut out, "deribit_price_index.btc_usd", r#"{"price":1}"#, Some("l"));
    let text = std::str::from_utf8(&out).unwrap().to_owned();
    let Incoming::Notification(n) = classify(&text).unwrap() else { panic!() };
    assert_eq!((n.channel, n.label, n.data.get()), ("deribit_price_index.btc_usd", Some("l"), r#"{"price":1}"#));
    for kind in [Heartbeat::Heartbeat, Heartbeat::TestRequest] {
        out.clear();
        encode_heartbeat(&mut out, kind);
        let text = std::str::from_utf8(&out).unwrap().to_owned();
        assert!(matches!(classify(&text).unwrap(), Incoming::Heartbeat(k) if k == kind));
    }
}

proptest! {
    #[test]
    fn json_strings_round_trip(text in "\\PC*|[\\x00-\\x1f\"\\\\]{0,8}") {
        let mut out = Vec::new();
        write_json_str(&mut out, &text);
        let back: String = serde_json::from_slice(&out).unwrap();
        prop_assert_eq!(back, text);
    }

    #[test]
    fn classify_and_decode_request_never_panic(text in "\\PC{0,200}") {
        let _ = classify(&text);
        let _ = decode_request(&text);
    }
}
