use proptest::prelude::*;
use ticktrade_core::Decimal;

use super::*;
use crate::book::encode_book_units;

fn spec(tick: &str, unit: &str) -> InstrumentSpec {
    InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse(tick).unwrap(), Decimal::parse(unit).unwrap()).unwrap()
}

/// The model: the general decoder. Both results, errors included, must be equal.
#[track_caller]
fn check(spec: &InstrumentSpec, frame: &[u8]) -> Result<(BookHeader<'static>, Vec<LevelUpdate>), DecodeError> {
    let frame: &'static [u8] = Box::leak(frame.to_vec().into_boxed_slice());
    let mut want = Vec::new();
    let expected = decode_book_units(frame, spec, &mut want);
    let mut got =
        vec![LevelUpdate { side: Side::Buy, action: Action::New, price: Price::from_raw(9), qty: Qty::from_raw(9) }];
    let decoder = FastBookDecoder::new(spec);
    let actual = decoder.decode(frame, &mut got);
    assert_eq!(actual, expected, "{}", String::from_utf8_lossy(frame));
    if expected.is_ok() {
        assert_eq!(got, want, "{}", String::from_utf8_lossy(frame));
    }
    expected.map(|h| (h, want))
}

#[test]
fn takes_the_fast_path_on_both_key_orders() {
    let spec = spec("0.5", "10");
    let ours = br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-PERPETUAL.raw","data":{"type":"change","timestamp":1626993724318,"prev_change_id":33195894164,"instrument_name":"BTC-PERPETUAL","change_id":33195894355,"bids":[["new",64250.5,1200.0],["delete",64250,0]],"asks":[["change",64251.0,30]]}}}"#;
    let deribit = br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-PERPETUAL.raw","data":{"timestamp":1626993724318,"type":"change","change_id":33195894355,"instrument_name":"BTC-PERPETUAL","bids":[["new",64250.5,1200.0],["delete",64250,0]],"asks":[["change",64251.0,30]],"prev_change_id":33195894164}}}"#;
    let decoder = FastBookDecoder::new(&spec);
    for frame in [&ours[..], &deribit[..]] {
        let mut out = Vec::new();
        assert!(decoder.fast(frame, &mut out).is_some(), "fast path refused {}", String::from_utf8_lossy(frame));
        let (header, levels) = check(&spec, frame).unwrap();
        assert_eq!(header.change_id, 33_195_894_355);
        assert_eq!(levels.len(), 3);
        assert_eq!(levels[0].price, Price::from_raw(128_501));
        assert_eq!(levels[0].qty, Qty::from_raw(120));
    }
}

#[test]
fn recorded_vectors_agree_with_the_general_decoder() {
    let mut n = 0;
    for name in ticktrade_testkit::vector_names("deribit/examples") {
        if !name.starts_with("book.") || !name.contains("notification") {
            continue;
        }
        let frame = ticktrade_testkit::deribit_vector(&name);
        for (tick, unit) in [("0.5", "10"), ("0.00001", "0.1"), ("0.01", "1"), ("0.0001", "0.0001")] {
            let _ = check(&spec(tick, unit), &frame);
        }
        n += 1;
    }
    assert!(n >= 8, "{n} vectors");
}

#[test]
fn off_grid_exponents_and_escapes_fall_back() {
    let spec = spec("0.5", "10");
    let base = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.X.raw","data":{"type":"snapshot","timestamp":1,"instrument_name":"X","change_id":2,"bids":[["new",PRICE,AMOUNT]],"asks":[]}}}"#;
    for (price, amount) in
        [("1.25", "10"), ("1e3", "10"), ("1.5", "15"), ("-1.5", "10"), ("01", "10"), ("1.", "10"), ("1.5", "1E1")]
    {
        let frame = base.replace("PRICE", price).replace("AMOUNT", amount);
        let _ = check(&spec, frame.as_bytes());
    }
    let escaped =
        base.replace("PRICE", "1").replace("AMOUNT", "10").replace(r#""X","change_id""#, r#""\u0058","change_id""#);
    let _ = check(&spec, escaped.as_bytes());
}

fn level_strategy() -> impl Strategy<Value = LevelUpdate> {
    (any::<bool>(), 0u8..3, -2_000_000i64..2_000_000, 0i64..1_000_000).prop_map(|(buy, action, price, qty)| {
        LevelUpdate {
            side: if buy { Side::Buy } else { Side::Sell },
            action: [Action::New, Action::Change, Action::Delete][usize::from(action)],
            price: Price::from_raw(price),
            qty: Qty::from_raw(qty),
        }
    })
}

/// The obvious digit run: what the SWAR helpers must agree with.
fn naive_digits(bytes: &[u8]) -> (usize, u64) {
    let n = bytes.iter().take(8).take_while(|b| b.is_ascii_digit()).count();
    (n, bytes[..n].iter().fold(0u64, |v, &b| v * 10 + u64::from(b - b'0')))
}

#[test]
fn fixed_layout_is_only_for_the_own_instrument_and_raw_channel() {
    let spec = spec("0.5", "10");
    let frame = br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-PERPETUAL.raw","data":{"type":"change","timestamp":1626993724318,"prev_change_id":33195894164,"instrument_name":"BTC-PERPETUAL","change_id":33195894355,"bids":[["new",64250.5,1200.0],["delete",64250,0]],"asks":[["change",64251.0,30]]}}}"#;
    let decoder = FastBookDecoder::new(&spec);
    let mut out = Vec::new();
    let header = decoder.fixed(frame, &mut out).expect("fixed layout");
    assert_eq!((header.channel, header.instrument), ("book.BTC-PERPETUAL.raw", "BTC-PERPETUAL"));
    assert_eq!((header.prev_change_id, header.timestamp_ms), (Some(33_195_894_164), 1_626_993_724_318));
    let text = std::str::from_utf8(frame).unwrap();
    for other in [
        text.replace("book.BTC-PERPETUAL.raw", "book.BTC-PERPETUAL.100ms"),
        text.replace(r#""instrument_name":"BTC-PERPETUAL""#, r#""instrument_name":"ETH-PERPETUAL""#),
    ] {
        assert!(decoder.fixed(other.as_bytes(), &mut out).is_none(), "{other}");
        let _ = check(&spec, other.as_bytes());
    }
}

#[test]
fn short_numbers_take_one_word() {
    for (text, want) in [
        ("64250.5,", (642_505, 1, 7)),
        ("1200.0]", (12_000, 1, 6)),
        ("30]", (30, 0, 2)),
        ("0.5,", (5, 1, 3)),
        ("0,", (0, 0, 1)),
        ("9.00001]", (900_001, 5, 7)),
        ("1234567]", (1_234_567, 0, 7)),
    ] {
        assert_eq!(Cursor { buf: text.as_bytes(), pos: 0 }.short(), Some(want), "{text}");
    }
    // A sign, a leading zero, an exponent, no fraction digit, or no room for the byte after it:
    // the any-length path decides.
    for text in ["-1.5,", "012.5,", "00,", "1.5e3,", "15E3,", "1.,", "1234567.5,", "12345678,", "123.4567,", ".5,"] {
        assert_eq!(Cursor { buf: text.as_bytes(), pos: 0 }.short(), None, "{text}");
    }
}

proptest! {
    #[test]
    fn short_numbers_agree_with_the_any_length_path(
        text in "-?[0-9]{0,9}(\\.[0-9]{0,9})?([eE][-+]?[0-9])?[,\\]x]?",
        tick in prop::sample::select(vec!["0.5", "1", "0.0001", "25", "2.5"]),
        unit in prop::sample::select(vec!["10", "1", "0.001"]),
    ) {
        let decoder = FastBookDecoder::new(&spec(tick, unit));
        for units in [decoder.price, decoder.qty] {
            let mut short = Cursor { buf: text.as_bytes(), pos: 0 };
            let mut any = Cursor { buf: text.as_bytes(), pos: 0 };
            let got = short.units(units);
            prop_assert_eq!(got, any.units_any(units), "{}", text);
            if got.is_some() {
                prop_assert_eq!(short.pos, any.pos, "{}", text);
            }
        }
        // And inside a whole frame, against the general decoder.
        let frame = format!(
            r#"{{"jsonrpc":"2.0","method":"subscription","params":{{"channel":"book.BTC-PERPETUAL.raw","data":{{"type":"change","timestamp":1626993724318,"prev_change_id":33195894164,"instrument_name":"BTC-PERPETUAL","change_id":33195894355,"bids":[["new",{text},{text}]],"asks":[]}}}}}}"#
        );
        let _ = check(&spec(tick, unit), frame.as_bytes());
    }

    #[test]
    fn swar_digits_match_the_naive_scan(bytes in prop::collection::vec(prop::sample::select(b"0123456789/:.,]a\0".to_vec()), 8)) {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes);
        let word = u64::from_le_bytes(word);
        let (n, value) = naive_digits(&bytes);
        prop_assert_eq!(leading_digits(word), n);
        if n > 0 {
            prop_assert_eq!(parse_digits(word, n), value);
        }
    }

    #[test]
    fn swar_runs_match_the_naive_scan(text in "[0-9]{0,24}[,\\]}x]?") {
        let mut c = Cursor { buf: text.as_bytes(), pos: 0 };
        let n = text.bytes().take(20).take_while(u8::is_ascii_digit).count();
        let want = (n > 0 && n <= 19).then(|| (text[..n].parse::<u64>().unwrap(), n));
        prop_assert_eq!(c.run_of_digits(), want);
        prop_assert_eq!(c.pos, want.map_or(0, |(_, n)| n));
    }

    #[test]
    fn two_word_integers_match_the_digit_rule(text in "0?[0-9]{0,21}[,\\]}x]?") {
        let (mut fast, mut rule) = (Cursor { buf: text.as_bytes(), pos: 0 }, Cursor { buf: text.as_bytes(), pos: 0 });
        let got = fast.u64();
        prop_assert_eq!(got, rule.digits().map(|(v, _)| v));
        // After a refusal the frame goes to the general decoder, wherever the cursor is.
        if got.is_some() {
            prop_assert_eq!(fast.pos, rule.pos);
        }
    }

    #[test]
    fn encoded_frames_round_trip_like_the_general_decoder(
        levels in prop::collection::vec(level_strategy(), 0..20),
        tick in prop::sample::select(vec!["0.5", "1", "0.0001", "25", "2.5"]),
        unit in prop::sample::select(vec!["10", "1", "0.001"]),
        snapshot: bool, change_id in 0u64..9_999_999_999_999_999_999, prev in 0u64..1 << 62, ts in 0u64..1 << 62,
    ) {
        let spec = spec(tick, unit);
        let header = BookHeader {
            channel: "book.BTC-PERPETUAL.raw",
            instrument: "BTC-PERPETUAL",
            kind: if snapshot { BookKind::Snapshot } else { BookKind::Change },
            change_id,
            prev_change_id: (!snapshot).then_some(prev),
            timestamp_ms: ts,
        };
        let mut frame = Vec::new();
        encode_book_units(&mut frame, &header, &spec, &levels);
        let mut out = Vec::new();
        prop_assert!(FastBookDecoder::new(&spec).fast(&frame, &mut out).is_some());
        let mut fixed = Vec::new();
        prop_assert!(FastBookDecoder::new(&spec).fixed(&frame, &mut fixed).is_some(), "fixed layout refused");
        prop_assert_eq!(&fixed, &out);
        let (decoded, _) = check(&spec, &frame).unwrap();
        prop_assert_eq!(decoded, header);
    }

    #[test]
    fn mutated_frames_agree_with_the_general_decoder(at in 0usize..400, byte in prop::sample::select(b"0123456789.-e,[]{}\"x ".to_vec()), cut: bool) {
        let spec = spec("0.5", "10");
        let mut frame = br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-PERPETUAL.raw","data":{"type":"change","timestamp":1626993724318,"prev_change_id":33195894164,"instrument_name":"BTC-PERPETUAL","change_id":33195894355,"bids":[["new",64250.5,1200.0],["delete",64250,0]],"asks":[["change",64251.0,30]]}}}"#.to_vec();
        let at = at % frame.len();
        if cut { frame.truncate(at) } else { frame[at] = byte }
        let _ = check(&spec, &frame);
    }
}

/// Every book notification of the recorded sessions in `testdata/deribit/market_data/`
/// (cryptofeed's, Deribit's own key order), decoded by the fast decoder for the instrument of
/// its channel (so the fixed layout is tried first) and for another one, under several units:
/// the same result as the general decoder each time, errors included.
#[test]
fn recorded_sessions_agree_with_the_general_decoder() {
    let mut n = 0;
    for file in ["DERIBIT-5dd9ce.0__2021-04-05.frames.jsonl", "DERIBIT.ws.30.0__2021-04-17.frames.jsonl"] {
        for frame in ticktrade_testkit::recorded_frames(file) {
            let Some(at) = frame.find(r#""channel":"book."#) else { continue };
            let rest = &frame[at + r#""channel":"book."#.len()..];
            let Some(end) = rest.find('"') else { continue };
            let channel = &rest[..end];
            let name = channel.rsplit_once('.').map_or(channel, |(name, _)| name);
            for (tick, unit) in [("0.5", "10"), ("0.0005", "0.1"), ("0.01", "1"), ("0.0001", "0.0001")] {
                let own =
                    InstrumentSpec::simple(name, Decimal::parse(tick).unwrap(), Decimal::parse(unit).unwrap()).unwrap();
                let _ = check(&own, frame.as_bytes());
                let _ = check(&spec(tick, unit), frame.as_bytes());
            }
            n += 1;
        }
    }
    assert!(n >= 200, "{n} recorded book frames");
}

proptest! {
    /// The inverse-multiply division agrees with `%` and `/` for every divisor shape (odd, powers
    /// of two, both) and every numerator, multiples or not.
    #[test]
    fn exact_division_by_inverse_matches_div(d in 1u64..1_000_000, k in 0u32..20, q in any::<u64>(), off in 0u64..3) {
        let d = d << (k % 12);
        let units = Units::new(d, 0);
        for n in [q, (q / d).wrapping_mul(d), (q / d).wrapping_mul(d).wrapping_add(off), d, 0, u64::MAX] {
            let want = (n % d == 0).then(|| n / d);
            prop_assert_eq!(units.divide_exact(n), want, "n {} d {}", n, d);
        }
    }
}
