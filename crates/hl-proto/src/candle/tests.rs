#![allow(clippy::unwrap_used)]

use proptest::prelude::*;
use ticktrade_core::Decimal;

use super::*;

fn units(px_scale: u8, sz_scale: u8) -> Units {
    Units { px: Decimal::new(1, px_scale).unwrap(), sz: Decimal::new(1, sz_scale).unwrap() }
}

#[test]
fn intervals_by_name() {
    for interval in Interval::ALL {
        assert_eq!(Interval::parse(interval.as_str()), Some(interval));
        assert_eq!(Interval::ALL[interval.index()], interval);
    }
    assert_eq!(Interval::parse("1M"), Some(Interval::Month1));
    assert_eq!(Interval::parse("1m"), Some(Interval::M1));
    assert_eq!(Interval::parse("2m"), None);
    assert_eq!(Interval::parse("1H"), None);
}

#[test]
fn buckets_in_utc() {
    // 2023-04-19T17:14:59.999Z and the docs' 15-minute candle around it.
    assert_eq!(Interval::M15.bucket(1_681_924_499_999), (1_681_923_600_000, 1_681_924_500_000));
    assert_eq!(Interval::M1.bucket(-1), (-60_000, 0));
    // 2024-02-29T12:00Z: its month is February of a leap year, its week starts on Monday the 26th.
    let t = 1_709_208_000_000;
    assert_eq!(Interval::Month1.bucket(t), (1_706_745_600_000, 1_709_251_200_000));
    assert_eq!(Interval::W1.bucket(t), (1_708_905_600_000, 1_708_905_600_000 + 7 * DAY_MS));
    // December rolls into January of the next year.
    assert_eq!(Interval::Month1.bucket(1_703_980_800_000), (1_701_388_800_000, 1_704_067_200_000));
    assert_eq!(Interval::D3.bucket(3 * DAY_MS + 5), (3 * DAY_MS, 6 * DAY_MS));
}

#[test]
fn civil_dates_round_trip() {
    for days in (-800_000..800_000).step_by(97) {
        let (y, m, d) = civil_from_days(days);
        assert_eq!(days_from_civil(y, m, d), days, "{y}-{m}-{d}");
    }
}

/// The documented `candleSnapshot` answer, written from the same values.
#[test]
fn writes_the_documented_shape() {
    let path =
        format!("{}/../../testdata/hyperliquid/docs/info.candleSnapshot.response.json", env!("CARGO_MANIFEST_DIR"));
    let want: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut series = Series::default();
    let t0 = 1_681_923_600_000;
    // 189 trades: open 29295.0, high 29309.0, low 29250.0, close 29258.0, 0.98639 in all.
    let mut trades = vec![(t0 + 1, 292_950, 1), (t0 + 2, 293_090, 1), (t0 + 3, 292_500, 1)];
    trades.extend((0..185).map(|i| (t0 + 10 + i, 292_600, 1)));
    trades.push((t0 + 899_000, 292_580, 98_639 - 188));
    for (time_ms, px, sz) in trades {
        assert!(series.record(Interval::M15, UnitTrade { time_ms, px, sz }));
    }
    let mut out = Vec::new();
    write_candle_snapshot(&mut out, "BTC", Interval::M15, units(1, 5), Some(&series), t0, t0 + 899_999);
    let got: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(got, want);
    out.clear();
    write_candle_frame(&mut out, "BTC", Interval::M15, units(1, 5), series.iter().next().unwrap());
    let frame: serde_json::Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(frame["channel"], "candle");
    assert_eq!(frame["data"], want[0]);
    // Outside the window: nothing; no series: an empty list.
    out.clear();
    write_candle_snapshot(&mut out, "BTC", Interval::M15, units(1, 5), Some(&series), t0 + 900_000, t0 + 1_000_000);
    assert_eq!(out, b"[]");
    out.clear();
    write_candle_snapshot(&mut out, "BTC", Interval::M15, units(1, 5), None, 0, i64::MAX);
    assert_eq!(out, b"[]");
}

#[test]
fn keeps_the_last_candles() {
    let mut series = Series::default();
    for i in 0..KEEP as i64 + 10 {
        series.record(Interval::M1, UnitTrade { time_ms: i * MINUTE_MS, px: 1, sz: 1 });
    }
    assert_eq!(series.len(), KEEP);
    assert_eq!(series.iter().next().unwrap().t, 10 * MINUTE_MS);
    // A trade of a dropped bucket is refused, one of a kept bucket lands in it.
    assert!(!series.record(Interval::M1, UnitTrade { time_ms: 0, px: 1, sz: 1 }));
    assert!(series.record(Interval::M1, UnitTrade { time_ms: 10 * MINUTE_MS + 1, px: 1, sz: 1 }));
    assert_eq!(series.iter().next().unwrap().n, 2);
}

/// A model candle: `(t, end, o, c, h, l, v, n)`.
type ModelCandle = (i64, i64, i64, i64, i64, i64, i64, u64);

/// The naive model: every trade, stably sorted by time, grouped by bucket; the last `KEEP`.
fn model(interval: Interval, trades: &[UnitTrade]) -> Vec<ModelCandle> {
    let mut sorted = trades.to_vec();
    sorted.sort_by_key(|t| t.time_ms);
    let mut out: Vec<ModelCandle> = Vec::new();
    for t in sorted {
        let (start, end) = interval.bucket(t.time_ms);
        match out.last_mut() {
            Some(c) if c.0 == start => {
                c.3 = t.px;
                c.4 = c.4.max(t.px);
                c.5 = c.5.min(t.px);
                c.6 += t.sz;
                c.7 += 1;
            }
            _ => out.push((start, end, t.px, t.px, t.px, t.px, t.sz, 1)),
        }
    }
    let skip = out.len().saturating_sub(KEEP);
    out.split_off(skip)
}

fn trade() -> impl Strategy<Value = UnitTrade> {
    // Times over about 70 days around a month end, some equal, prices and sizes small.
    (0i64..6_000_000, 1i64..1_000, 0i64..100).prop_map(|(t, px, sz)| UnitTrade {
        time_ms: 1_706_000_000_000 + t * 1_000 - (t % 7) * 999,
        px,
        sz,
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Mostly in time order (as blocks come), sometimes late: every interval equals the model.
    #[test]
    fn candles_match_the_naive_model(mut trades in proptest::collection::vec(trade(), 0..400), late in 0usize..20) {
        let n = trades.len();
        trades[..n.saturating_sub(late)].sort_by_key(|t| t.time_ms);
        let mut candles = CoinCandles::default();
        for &t in &trades {
            candles.record(t);
        }
        for interval in Interval::ALL {
            let got: Vec<_> =
                candles.series(interval).iter().map(|c| (c.t, c.end, c.o, c.c, c.h, c.l, c.v, c.n)).collect();
            prop_assert_eq!(got, model(interval, &trades), "{}", interval.as_str());
        }
    }

    /// `between` and `since` are the model's candles filtered by time.
    #[test]
    fn windows_filter_by_time(trades in proptest::collection::vec(trade(), 0..200), a in 0i64..6_000_000, b in 0i64..6_000_000) {
        let mut series = Series::default();
        let mut sorted = trades.clone();
        sorted.sort_by_key(|t| t.time_ms);
        for &t in &sorted {
            series.record(Interval::H1, t);
        }
        let (start, end) = (1_706_000_000_000 + a.min(b) * 1_000, 1_706_000_000_000 + a.max(b) * 1_000);
        let all: Vec<Candle> = series.iter().copied().collect();
        let want: Vec<Candle> = all.iter().filter(|c| c.end > start && c.t <= end).copied().collect();
        prop_assert_eq!(series.between(start, end).copied().collect::<Vec<_>>(), want);
        let want: Vec<Candle> = all.iter().filter(|c| c.end > start).copied().collect();
        prop_assert_eq!(series.since(start).copied().collect::<Vec<_>>(), want);
    }
}
