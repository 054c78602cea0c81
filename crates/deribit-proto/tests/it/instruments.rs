//! `get_instruments` replies recorded by cryptofeed (testdata/deribit/market_data/cryptofeed,
//! format in ORIGIN.md: `<url> -> <epoch>: <json>` per line) parse into exact specs.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap (working agreement).

use std::path::Path;

use ticktrade_core::{Decimal, InstrumentKind, OptionType, Settlement, Utc};
use ticktrade_deribit_proto::instrument::parse_instruments_response;

fn replies(file: &str) -> Vec<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/deribit/market_data/cryptofeed").join(file);
    let text = std::fs::read_to_string(path).unwrap();
    text.lines()
        .filter_map(|line| {
            let (_, after) = line.split_once(" -> ")?;
            let (_, json) = after.split_once(": ")?;
            Some(json.to_owned())
        })
        .collect()
}

fn d(text: &str) -> Decimal {
    Decimal::parse(text).unwrap()
}

#[test]
fn recorded_replies_parse_exactly() {
    for (file, n_replies, min_instruments) in [
        ("DERIBIT.0__2021-04-17_http_get_instruments.txt", 2, 900),
        ("DERIBIT.0__2021-07-22_http_get_instruments.txt", 4, 1000),
    ] {
        let replies = replies(file);
        assert_eq!(replies.len(), n_replies, "{file}");
        let mut specs = Vec::new();
        for reply in &replies {
            let first = u32::try_from(specs.len()).unwrap();
            specs.extend(parse_instruments_response(reply, first).unwrap());
        }
        assert!(specs.len() >= min_instruments, "{file}: {}", specs.len());
        for (i, spec) in specs.iter().enumerate() {
            assert_eq!(spec.id.0 as usize, i);
            // Every amount unit divides the minimum trade amount and the contract size.
            assert!(spec.min_trade_amount.to_units(spec.qty_unit).is_ok(), "{}", spec.name);
            assert!(spec.contract_size.to_units(spec.qty_unit).is_ok(), "{}", spec.name);
        }
        let perp = specs.iter().find(|s| s.name == "BTC-PERPETUAL").unwrap();
        assert_eq!(
            (perp.kind, perp.settlement, perp.tick(), perp.qty_unit),
            (InstrumentKind::Future, Settlement::Inverse, d("0.5"), d("10"))
        );
        assert_eq!(perp.expiry, None);
        assert_eq!(perp.parse_qty("1230"), Ok(ticktrade_core::Qty::from_raw(123)));
        let option = specs.iter().find(|s| s.name == "BTC-24SEP21-40000-P").unwrap();
        assert_eq!(option.kind, InstrumentKind::Option);
        assert_eq!(option.settlement, Settlement::Inverse);
        assert_eq!((option.tick(), option.qty_unit, option.strike), (d("0.0005"), d("0.1"), Some(d("40000"))));
        assert_eq!(option.option_type, Some(OptionType::Put));
        assert_eq!(option.expiry, Some(Utc::from_millis(1_632_470_400_000)));
    }
    let specs: Vec<_> = replies("DERIBIT.0__2021-07-22_http_get_instruments.txt")
        .iter()
        .flat_map(|r| parse_instruments_response(r, 0).unwrap())
        .collect();
    let linear = specs.iter().find(|s| s.name == "SOL_USDC-PERPETUAL").unwrap();
    assert_eq!((linear.settlement, linear.qty_unit, linear.tick()), (Settlement::Linear, d("0.1"), d("0.01")));
    assert_eq!(linear.settlement_currency, "USDC");
}
