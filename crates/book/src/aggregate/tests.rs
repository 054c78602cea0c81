use super::*;
use serde_json::Value;

fn unit() -> Decimal {
    Decimal::parse("0.01").unwrap()
}

fn ticks(text: &str) -> i64 {
    Decimal::parse(text).unwrap().to_units(unit()).unwrap()
}

fn agg(price: i64, qty: i64, n: u32) -> AggLevel {
    AggLevel { price: Price::from_raw(price), qty: Qty::from_raw(qty), n }
}

/// `testdata/hyperliquid/examples/l2_aggregation.test_vectors.json`: order_book_server's L2
/// vectors. Each book entry is `count` orders of `sz` each.
#[test]
fn hyperliquid_vectors() {
    let path =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/hyperliquid/examples/l2_aggregation.test_vectors.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let side_levels = |key: &str| -> Vec<AggLevel> {
        let mut v: Vec<AggLevel> = doc["book"][key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| {
                let count = l["count"].as_u64().unwrap();
                let sz: i64 = l["sz"].as_str().unwrap().parse().unwrap();
                agg(ticks(l["px"].as_str().unwrap()), sz * count as i64, count as u32)
            })
            .collect();
        v.sort_by_key(|l| l.price.raw());
        v
    };
    let bids: Vec<AggLevel> = side_levels("bids").into_iter().rev().collect();
    let asks = side_levels("asks");
    let cases = doc["cases"].as_array().unwrap();
    assert_eq!(cases.len(), 3);
    for case in cases {
        let n = case["nLevels"].as_u64().unwrap() as usize;
        let mantissa = case["mantissa"].as_u64().unwrap() as u8;
        let grouping = match case["nSigFigs"].as_u64() {
            None => Grouping::Ticks(1),
            Some(sig) => Grouping::SigFigs { sig_figs: sig as u8, mantissa },
        };
        for (side, levels, expect) in [(Side::Buy, &bids, &case["expect"][0]), (Side::Sell, &asks, &case["expect"][1])]
        {
            let want: Vec<AggLevel> = expect
                .as_array()
                .unwrap()
                .iter()
                .map(|l| {
                    let sz: i64 = l["sz"].as_str().unwrap().parse().unwrap();
                    agg(ticks(l["px"].as_str().unwrap()), sz, l["n"].as_u64().unwrap() as u32)
                })
                .collect();
            let mut out = Vec::new();
            aggregate(levels.iter().copied(), side, grouping, n, &mut out);
            assert_eq!(out, want, "{case} {side}");
        }
    }
    // The valid cases through the all-variants path too.
    let mut buf = AggregateBuf::new(unit(), 2).unwrap();
    buf.aggregate_side(Side::Buy, bids.iter().copied());
    buf.aggregate_side(Side::Sell, asks.iter().copied());
    assert_eq!(buf.get(Side::Buy, HlPrecision::Sig2), &[agg(3400, 1100, 7)]);
    assert_eq!(buf.get(Side::Sell, HlPrecision::Sig2), &[agg(3500, 400, 4), agg(3600, 700, 3)]);
    assert_eq!(buf.get(Side::Buy, HlPrecision::Full), &[agg(3460, 300, 1), agg(3450, 400, 2)]);
}

#[test]
fn magnitude_boundaries_round_away_from_the_inside() {
    // Asks just under a power of ten round up to it; bids just above round down to it.
    let g = HlPrecision::Sig2.grouping();
    assert_eq!(g.bucket(Side::Sell, Price::from_raw(9_999)), Price::from_raw(10_000));
    assert_eq!(g.bucket(Side::Sell, Price::from_raw(10_001)), Price::from_raw(11_000));
    assert_eq!(g.bucket(Side::Buy, Price::from_raw(10_999)), Price::from_raw(10_000));
    assert_eq!(g.bucket(Side::Buy, Price::from_raw(9_999)), Price::from_raw(9_900));
    // Finer than a tick: unchanged.
    assert_eq!(
        HlPrecision::Sig5 { mantissa: 5 }.grouping().bucket(Side::Buy, Price::from_raw(1234)),
        Price::from_raw(1234)
    );
    assert_eq!(
        HlPrecision::Sig5 { mantissa: 5 }.grouping().bucket(Side::Buy, Price::from_raw(12_347)),
        Price::from_raw(12_345)
    );
}

#[test]
fn deribit_group_in_price_units() {
    let tick = Decimal::parse("0.5").unwrap();
    let g = Grouping::deribit(Decimal::from_int(5), tick).unwrap();
    assert_eq!(g, Grouping::Ticks(10));
    assert_eq!(Grouping::deribit(Decimal::parse("0.25").unwrap(), tick), Err(AggregateError::BadGroup));
    assert_eq!(Grouping::deribit(Decimal::ZERO, tick), Err(AggregateError::BadGroup));
    let bids = [agg(129_999, 1, 1), agg(129_995, 2, 1), agg(129_989, 4, 1), agg(-7, 8, 1)];
    let mut out = Vec::new();
    aggregate(bids, Side::Buy, g, 10, &mut out);
    assert_eq!(out, vec![agg(129_990, 3, 2), agg(129_980, 4, 1), agg(-10, 8, 1)]);
    let asks = [agg(-7, 8, 1), agg(129_991, 1, 1), agg(130_000, 2, 1), agg(130_001, 4, 1)];
    aggregate(asks, Side::Sell, g, 2, &mut out);
    assert_eq!(out, vec![agg(0, 8, 1), agg(130_000, 3, 2)]);
}

#[test]
fn params_round_trip_and_validation() {
    for p in HlPrecision::ALL {
        let (sig, mantissa) = p.params();
        assert_eq!(HlPrecision::try_from_params(sig, mantissa), Ok(p));
        assert_eq!(HlPrecision::ALL[p.index()], p);
    }
    assert_eq!(HlPrecision::try_from_params(Some(5), Some(1)), Ok(HlPrecision::Sig5 { mantissa: 1 }));
    assert_eq!(HlPrecision::try_from_params(Some(4), Some(2)), Err(AggregateError::BadMantissa));
    assert_eq!(HlPrecision::try_from_params(None, Some(5)), Err(AggregateError::BadMantissa));
    assert_eq!(HlPrecision::try_from_params(Some(5), Some(3)), Err(AggregateError::BadMantissa));
    assert_eq!(HlPrecision::try_from_params(Some(6), None), Err(AggregateError::BadSigFigs(6)));
    assert!(AggregateBuf::new(Decimal::parse("0.001").unwrap(), 20).is_ok());
    assert!(AggregateBuf::new(Decimal::from_int(100), 20).is_ok());
    assert_eq!(AggregateBuf::new(Decimal::parse("0.5").unwrap(), 20).err(), Some(AggregateError::UnitNotPowerOfTen));
}

#[test]
fn all_variants_from_a_book() {
    let mut book = L2Book::new();
    for (i, p) in [106_217, 106_216, 106_210, 106_199, 105_000, 99_999, 9_000].into_iter().enumerate() {
        book.set_level(Side::Buy, Price::from_raw(p), Qty::from_raw(i as i64 + 1));
    }
    let mut buf = AggregateBuf::new(Decimal::ONE, 3).unwrap();
    buf.aggregate_book(&book);
    assert_eq!(buf.get(Side::Buy, HlPrecision::Full), &[agg(106_217, 1, 1), agg(106_216, 2, 1), agg(106_210, 3, 1)]);
    assert_eq!(
        buf.get(Side::Buy, HlPrecision::Sig5 { mantissa: 1 }),
        &[agg(106_210, 6, 3), agg(106_190, 4, 1), agg(105_000, 5, 1)]
    );
    assert_eq!(buf.get(Side::Buy, HlPrecision::Sig4), &[agg(106_200, 6, 3), agg(106_100, 4, 1), agg(105_000, 5, 1)]);
    assert_eq!(buf.get(Side::Buy, HlPrecision::Sig2), &[agg(100_000, 15, 5), agg(99_000, 6, 1), agg(9_000, 7, 1)]);
    assert!(buf.get(Side::Sell, HlPrecision::Sig2).is_empty());
}
