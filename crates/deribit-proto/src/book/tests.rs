use proptest::prelude::*;
use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty, Side};

use super::*;

const CHANGE: &str = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-PERPETUAL.raw","data":{"type":"change","timestamp":1626993724318,"prev_change_id":33195894164,"instrument_name":"BTC-PERPETUAL","change_id":33195894355,"bids":[["new",64250.5,1200.0],["delete",64250,0]],"asks":[["change",64251.0,30]]}}}"#;
const SNAPSHOT_V211: &str = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-PERPETUAL.100ms","data":{"asks":[["new",5042.64,40],["new",5043.3,40]],"bids":[["new",5042.34,30],["new",5041.94,20]],"change_id":297217,"instrument_name":"BTC-PERPETUAL","timestamp":1554373962454,"type":"snapshot"}}}"#;
const GROUPED: &str = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.ETH-PERPETUAL.100.1.100ms","data":{"asks":[[161,20]],"bids":[[160,40]],"change_id":109615,"instrument_name":"ETH-PERPETUAL","timestamp":1554375447971}}}"#;

fn d(text: &str) -> Decimal {
    Decimal::parse(text).unwrap()
}

fn level(side: Side, action: Action, price: &str, amount: &str) -> DecimalLevel {
    DecimalLevel { side, action, price: d(price), amount: d(amount) }
}

#[test]
fn change_in_deribit_key_order() {
    let mut out = Vec::new();
    let header = decode_book(CHANGE.as_bytes(), &mut out).unwrap();
    assert_eq!(
        header,
        BookHeader {
            channel: "book.BTC-PERPETUAL.raw",
            instrument: "BTC-PERPETUAL",
            kind: BookKind::Change,
            change_id: 33_195_894_355,
            prev_change_id: Some(33_195_894_164),
            timestamp_ms: 1_626_993_724_318,
        }
    );
    assert_eq!(
        out,
        [
            level(Side::Buy, Action::New, "64250.5", "1200"),
            level(Side::Buy, Action::Delete, "64250", "0"),
            level(Side::Sell, Action::Change, "64251", "30"),
        ]
    );
}

#[test]
fn snapshot_in_any_key_order_and_whitespace() {
    let mut out = Vec::new();
    let header = decode_book(SNAPSHOT_V211.as_bytes(), &mut out).unwrap();
    assert_eq!(header.kind, BookKind::Snapshot);
    assert_eq!(header.prev_change_id, None);
    assert_eq!(out.len(), 4);
    assert_eq!(out[0], level(Side::Sell, Action::New, "5042.64", "40"));
    let pretty =
        serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(SNAPSHOT_V211).unwrap()).unwrap();
    let mut again = Vec::new();
    assert_eq!(decode_book(pretty.as_bytes(), &mut again).unwrap(), header);
    // serde_json's Value sorts keys, so the order differs; compare per side.
    let side = |v: &[DecimalLevel], s: Side| v.iter().filter(|l| l.side == s).copied().collect::<Vec<_>>();
    assert_eq!(side(&again, Side::Buy), side(&out, Side::Buy));
    assert_eq!(side(&again, Side::Sell), side(&out, Side::Sell));
}

#[test]
fn grouped_window() {
    let mut out = Vec::new();
    let header = decode_book(GROUPED.as_bytes(), &mut out).unwrap();
    assert_eq!(header.kind, BookKind::Window);
    assert_eq!(header.channel, "book.ETH-PERPETUAL.100.1.100ms");
    assert_eq!(out, [level(Side::Sell, Action::New, "161", "20"), level(Side::Buy, Action::New, "160", "40")]);
}

#[test]
fn units_with_a_spec() {
    let spec = InstrumentSpec::simple("BTC-PERPETUAL", d("0.5"), d("10")).unwrap();
    let mut out = Vec::new();
    decode_book_units(CHANGE.as_bytes(), &spec, &mut out).unwrap();
    assert_eq!(
        out[0],
        LevelUpdate { side: Side::Buy, action: Action::New, price: Price::from_raw(128_501), qty: Qty::from_raw(120) }
    );
    let off_tick = CHANGE.replace("64250.5", "64250.25");
    let err = decode_book_units(off_tick.as_bytes(), &spec, &mut out).unwrap_err();
    let at = CHANGE.find("64250.5").unwrap() as u32;
    assert_eq!(err, DecodeError::Number { at, error: NumberError::OffGrid });
}

#[test]
fn refusals_carry_an_offset() {
    let mut out = Vec::new();
    let bad_action = CHANGE.replace("\"delete\"", "\"remove\"");
    assert!(matches!(decode_book(bad_action.as_bytes(), &mut out), Err(DecodeError::Unexpected { .. })));
    let not_book = CHANGE.replace("book.BTC", "ticker.BTC");
    assert!(matches!(decode_book(not_book.as_bytes(), &mut out), Err(DecodeError::Unexpected { .. })));
    let heartbeat = r#"{"params":{"type":"heartbeat"},"method":"heartbeat","jsonrpc":"2.0"}"#;
    assert!(decode_book(heartbeat.as_bytes(), &mut out).is_err());
    let no_type = CHANGE.replace(r#""type":"change","#, "");
    assert_eq!(decode_book(no_type.as_bytes(), &mut out), Err(DecodeError::Missing("type")));
    let mixed = CHANGE.replace(r#"["change",64251.0,30]"#, "[64251.0,30]");
    assert!(decode_book(mixed.as_bytes(), &mut out).is_err());
    let trailing = format!("{CHANGE}x");
    assert!(decode_book(trailing.as_bytes(), &mut out).is_err());
}

#[test]
fn every_truncation_is_incomplete() {
    let mut out = Vec::new();
    for frame in [CHANGE, SNAPSHOT_V211, GROUPED] {
        for cut in 0..frame.len() {
            let result = decode_book(&frame.as_bytes()[..cut], &mut out);
            assert_eq!(result, Err(DecodeError::Incomplete), "cut at {cut}");
        }
    }
}

#[test]
fn encode_decode_round_trip() {
    for frame in [CHANGE, SNAPSHOT_V211, GROUPED] {
        let mut levels = Vec::new();
        let header = decode_book(frame.as_bytes(), &mut levels).unwrap();
        let mut encoded = Vec::new();
        encode_book(&mut encoded, &header, &levels);
        let mut again = Vec::new();
        assert_eq!(decode_book(&encoded, &mut again).unwrap(), header);
        let by_side = |v: &[DecimalLevel], s: Side| v.iter().filter(|l| l.side == s).copied().collect::<Vec<_>>();
        assert_eq!(by_side(&again, Side::Buy), by_side(&levels, Side::Buy));
        assert_eq!(by_side(&again, Side::Sell), by_side(&levels, Side::Sell));
        // The encoder writes Deribit's own layout, so the JSON values agree too.
        let ours: serde_json::Value = serde_json::from_slice(&encoded).unwrap();
        assert_eq!(ours["params"]["data"]["change_id"], header.change_id);
    }
    // Deribit's own raw frame (integer-valued amounts aside) is reproduced byte for byte.
    let mut levels = Vec::new();
    let header = decode_book(CHANGE.as_bytes(), &mut levels).unwrap();
    let mut encoded = Vec::new();
    encode_book(&mut encoded, &header, &levels);
    let expected = CHANGE.replace("1200.0", "1200").replace("64251.0", "64251");
    assert_eq!(std::str::from_utf8(&encoded).unwrap(), expected);
}

#[test]
fn units_encoder_matches_decimal_encoder() {
    let spec = InstrumentSpec::simple("BTC-PERPETUAL", d("0.5"), d("10")).unwrap();
    let mut units = Vec::new();
    let header = decode_book_units(CHANGE.as_bytes(), &spec, &mut units).unwrap();
    let mut decimals = Vec::new();
    decode_book(CHANGE.as_bytes(), &mut decimals).unwrap();
    let (mut a, mut b) = (Vec::new(), Vec::new());
    encode_book_units(&mut a, &header, &spec, &units);
    encode_book(&mut b, &header, &decimals);
    assert_eq!(a, b);
}

fn arb_level() -> impl Strategy<Value = DecimalLevel> {
    (any::<bool>(), 0u8..3, 0i64..10_000_000_000, 0u8..8, 0i64..1_000_000_000, 0u8..6).prop_map(
        |(buy, action, price, price_scale, amount, amount_scale)| DecimalLevel {
            side: if buy { Side::Buy } else { Side::Sell },
            action: [Action::New, Action::Change, Action::Delete][usize::from(action)],
            price: Decimal::new(price, price_scale).unwrap(),
            amount: Decimal::new(amount, amount_scale).unwrap(),
        },
    )
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let mut out = Vec::new();
        let _ = decode_book(&bytes, &mut out);
        let _ = decode_book_data(&bytes, &mut out);
    }

    #[test]
    fn mutated_frames_never_panic(pos in 0usize..CHANGE.len(), byte in any::<u8>(), cut in 0usize..CHANGE.len() + 1) {
        let mut frame = CHANGE.as_bytes().to_vec();
        frame[pos] = byte;
        frame.truncate(cut);
        let mut out = Vec::new();
        let _ = decode_book(&frame, &mut out);
    }

    #[test]
    fn encoded_frames_decode_to_their_levels(
        levels in proptest::collection::vec(arb_level(), 0..40),
        change_id in any::<u64>(),
        prev in proptest::option::of(any::<u64>()),
        kind in 0u8..3,
    ) {
        let kind = [BookKind::Snapshot, BookKind::Change, BookKind::Window][usize::from(kind)];
        let mut levels = levels;
        if kind == BookKind::Window {
            levels.iter_mut().for_each(|l| l.action = Action::New);
        }
        let header = BookHeader {
            channel: "book.X.raw",
            instrument: "X",
            kind,
            change_id,
            prev_change_id: if kind == BookKind::Window { None } else { prev },
            timestamp_ms: 1,
        };
        let mut frame = Vec::new();
        encode_book(&mut frame, &header, &levels);
        let mut out = Vec::new();
        prop_assert_eq!(decode_book(&frame, &mut out), Ok(header));
        let mut expected: Vec<_> = levels.iter().filter(|l| l.side == Side::Buy).copied().collect();
        expected.extend(levels.iter().filter(|l| l.side == Side::Sell));
        prop_assert_eq!(out, expected);
    }
}
