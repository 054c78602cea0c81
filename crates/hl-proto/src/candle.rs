//! Candles built from trades: the `candle` subscription's frames and the `candleSnapshot`
//! answer of `POST /info`, in Hyperliquid's documented shape
//! `{"t","T","s","i","o","c","h","l","v","n"}` (open and close times in ms, coin, interval,
//! open/close/high/low price and base volume as decimal text, number of trades).
//!
//! Owns: the fourteen intervals Hyperliquid documents (`1m` … `1M`) and their buckets, one
//! coin's candles of every interval ([`CoinCandles`]: the last [`KEEP`] of each, as the API
//! keeps), and writing a candle.
//! Must not: read a clock (a trade goes into the bucket of its own time), do I/O, or turn a
//! price into `f64`: prices and sizes are the coin's integer units, written exactly.
//!
//! Buckets are aligned in UTC: minutes, hours and days on multiples of their length since the
//! epoch (so `3d` on every third day since 1970-01-01), weeks on Mondays 00:00, months on the
//! first of the month. A trade older than its series' open candle (a late line) still lands
//! in its own bucket: the candle's open is the price of its earliest trade and its close that
//! of its latest, whatever order they arrive in (trades of equal time: the first to arrive
//! opens, the last closes).

use std::collections::VecDeque;

use crate::ws::{Units, write_hl_decimal, write_json_str};

/// Candles kept per coin and interval: the API serves only the most recent 5000.
pub const KEEP: usize = 5000;

/// One of Hyperliquid's candle intervals.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Interval {
    M1,
    M3,
    M5,
    M15,
    M30,
    H1,
    H2,
    H4,
    H8,
    H12,
    D1,
    D3,
    W1,
    Month1,
}

const MINUTE_MS: i64 = 60_000;
const DAY_MS: i64 = 86_400_000;

impl Interval {
    /// Every interval, finest first.
    pub const ALL: [Interval; 14] = [
        Interval::M1,
        Interval::M3,
        Interval::M5,
        Interval::M15,
        Interval::M30,
        Interval::H1,
        Interval::H2,
        Interval::H4,
        Interval::H8,
        Interval::H12,
        Interval::D1,
        Interval::D3,
        Interval::W1,
        Interval::Month1,
    ];

    /// The interval's name on the wire (`1m`, `15m`, `1h`, `1d`, `1w`, `1M`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            Interval::M1 => "1m",
            Interval::M3 => "3m",
            Interval::M5 => "5m",
            Interval::M15 => "15m",
            Interval::M30 => "30m",
            Interval::H1 => "1h",
            Interval::H2 => "2h",
            Interval::H4 => "4h",
            Interval::H8 => "8h",
            Interval::H12 => "12h",
            Interval::D1 => "1d",
            Interval::D3 => "3d",
            Interval::W1 => "1w",
            Interval::Month1 => "1M",
        }
    }

    /// The interval named `text` (case matters: `1m` is a minute, `1M` a month).
    pub fn parse(text: &str) -> Option<Interval> {
        Interval::ALL.into_iter().find(|i| i.as_str() == text)
    }

    /// Position in [`Interval::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The length of a fixed-length interval in ms (`None` for a month).
    fn fixed_ms(self) -> Option<i64> {
        Some(match self {
            Interval::M1 => MINUTE_MS,
            Interval::M3 => 3 * MINUTE_MS,
            Interval::M5 => 5 * MINUTE_MS,
            Interval::M15 => 15 * MINUTE_MS,
            Interval::M30 => 30 * MINUTE_MS,
            Interval::H1 => 60 * MINUTE_MS,
            Interval::H2 => 120 * MINUTE_MS,
            Interval::H4 => 240 * MINUTE_MS,
            Interval::H8 => 480 * MINUTE_MS,
            Interval::H12 => 720 * MINUTE_MS,
            Interval::D1 => DAY_MS,
            Interval::D3 => 3 * DAY_MS,
            Interval::W1 => 7 * DAY_MS,
            Interval::Month1 => return None,
        })
    }

    /// `[start, end)` of the bucket holding `t_ms` (UTC, ms since the epoch).
    pub fn bucket(self, t_ms: i64) -> (i64, i64) {
        match (self, self.fixed_ms()) {
            // 1970-01-01 was a Thursday: weeks start 4 days later than the epoch's multiples.
            (Interval::W1, Some(len)) => {
                let offset = 4 * DAY_MS;
                let start = t_ms - (t_ms - offset).rem_euclid(len);
                (start, start + len)
            }
            (_, Some(len)) => {
                let start = t_ms - t_ms.rem_euclid(len);
                (start, start + len)
            }
            (_, None) => {
                let (year, month, _) = civil_from_days(t_ms.div_euclid(DAY_MS));
                let (next_year, next_month) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
                (days_from_civil(year, month, 1) * DAY_MS, days_from_civil(next_year, next_month, 1) * DAY_MS)
            }
        }
    }
}

/// An interval is read by its wire name; another name is a decode error (the info server's
/// 422 answer).
impl<'de> serde::Deserialize<'de> for Interval {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Interval, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Interval::parse(&text).ok_or_else(|| {
            serde::de::Error::unknown_variant(
                &text,
                &["1m", "3m", "5m", "15m", "30m", "1h", "2h", "4h", "8h", "12h", "1d", "3d", "1w", "1M"],
            )
        })
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// One trade as candles see it: its time and its price and size in the coin's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitTrade {
    pub time_ms: i64,
    pub px: i64,
    pub sz: i64,
}

/// One candle, prices and volume in the coin's units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candle {
    /// Open time (the bucket's start), ms.
    pub t: i64,
    /// The next bucket's start, ms (`T` on the wire is one less).
    pub end: i64,
    pub o: i64,
    pub c: i64,
    pub h: i64,
    pub l: i64,
    /// Base volume: the sum of the trades' sizes.
    pub v: i64,
    /// Number of trades.
    pub n: u64,
    /// Times of the trades that set `o` and `c`.
    first_ms: i64,
    last_ms: i64,
}

impl Candle {
    fn new(bucket: (i64, i64), trade: UnitTrade) -> Candle {
        let UnitTrade { time_ms, px, sz } = trade;
        Candle {
            t: bucket.0,
            end: bucket.1,
            o: px,
            c: px,
            h: px,
            l: px,
            v: sz,
            n: 1,
            first_ms: time_ms,
            last_ms: time_ms,
        }
    }

    fn add(&mut self, trade: UnitTrade) {
        let UnitTrade { time_ms, px, sz } = trade;
        self.h = self.h.max(px);
        self.l = self.l.min(px);
        self.v = self.v.saturating_add(sz);
        self.n += 1;
        if time_ms < self.first_ms {
            (self.o, self.first_ms) = (px, time_ms);
        }
        if time_ms >= self.last_ms {
            (self.c, self.last_ms) = (px, time_ms);
        }
    }
}

/// The candles of one interval, oldest first, at most [`KEEP`].
#[derive(Clone, Debug, Default)]
pub struct Series {
    candles: VecDeque<Candle>,
}

impl Series {
    /// Adds `trade` to its bucket's candle (a new one for a new bucket); false when the
    /// trade is older than every kept candle and the series is full (its bucket was dropped).
    fn record(&mut self, interval: Interval, trade: UnitTrade) -> bool {
        if let Some(last) = self.candles.back_mut() {
            if (last.t..last.end).contains(&trade.time_ms) {
                last.add(trade);
                return true;
            }
            if trade.time_ms < last.t {
                return self.record_late(interval, trade);
            }
        }
        if self.candles.len() == KEEP {
            self.candles.pop_front();
        }
        self.candles.push_back(Candle::new(interval.bucket(trade.time_ms), trade));
        true
    }

    #[cold]
    fn record_late(&mut self, interval: Interval, trade: UnitTrade) -> bool {
        let at = self.candles.partition_point(|c| c.end <= trade.time_ms);
        if let Some(candle) = self.candles.get_mut(at).filter(|c| c.t <= trade.time_ms) {
            candle.add(trade);
            return true;
        }
        if at == 0 && self.candles.len() == KEEP {
            return false;
        }
        self.candles.insert(at, Candle::new(interval.bucket(trade.time_ms), trade));
        if self.candles.len() > KEEP {
            self.candles.pop_front();
        }
        true
    }

    /// Every kept candle, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &Candle> + '_ {
        self.candles.iter()
    }

    /// The candles that overlap `[start_ms, end_ms]`, oldest first.
    pub fn between(&self, start_ms: i64, end_ms: i64) -> impl Iterator<Item = &Candle> + '_ {
        let from = self.candles.partition_point(|c| c.end <= start_ms);
        self.candles.range(from..).take_while(move |c| c.t <= end_ms)
    }

    /// The candles that end after `t_ms` (those a trade at `t_ms` or later may have changed),
    /// oldest first.
    pub fn since(&self, t_ms: i64) -> impl Iterator<Item = &Candle> + '_ {
        let from = self.candles.partition_point(|c| c.end <= t_ms);
        self.candles.range(from..)
    }

    pub fn len(&self) -> usize {
        self.candles.len()
    }

    pub fn is_empty(&self) -> bool {
        self.candles.is_empty()
    }
}

/// One coin's candles of every interval.
#[derive(Clone, Debug, Default)]
pub struct CoinCandles {
    series: [Series; 14],
}

impl CoinCandles {
    /// Adds one trade to every interval. Allocates only when it opens a bucket (a new candle
    /// in a series not yet at its allocation's size), never for a trade in an open bucket.
    pub fn record(&mut self, trade: UnitTrade) {
        for (series, interval) in self.series.iter_mut().zip(Interval::ALL) {
            series.record(interval, trade);
        }
    }

    pub fn series(&self, interval: Interval) -> &Series {
        &self.series[interval.index()]
    }
}

/// Writes one candle object `{"t","T","s","i","o","c","h","l","v","n"}`.
pub fn write_candle(out: &mut Vec<u8>, coin: &str, interval: Interval, units: Units, candle: &Candle) {
    let mut num = itoa::Buffer::new();
    out.extend_from_slice(br#"{"t":"#);
    out.extend_from_slice(num.format(candle.t).as_bytes());
    out.extend_from_slice(br#","T":"#);
    out.extend_from_slice(num.format(candle.end - 1).as_bytes());
    out.extend_from_slice(br#","s":"#);
    write_json_str(out, coin);
    out.extend_from_slice(br#","i":""#);
    out.extend_from_slice(interval.as_str().as_bytes());
    for (key, px) in [
        (&br#"","o":""#[..], candle.o),
        (br#"","c":""#, candle.c),
        (br#"","h":""#, candle.h),
        (br#"","l":""#, candle.l),
    ] {
        out.extend_from_slice(key);
        write_hl_decimal(px, units.px, out);
    }
    out.extend_from_slice(br#"","v":""#);
    write_hl_decimal(candle.v, units.sz, out);
    out.extend_from_slice(br#"","n":"#);
    out.extend_from_slice(num.format(candle.n).as_bytes());
    out.push(b'}');
}

/// A `candle` frame: `{"channel":"candle","data":{candle}}`.
pub fn write_candle_frame(out: &mut Vec<u8>, coin: &str, interval: Interval, units: Units, candle: &Candle) {
    out.extend_from_slice(br#"{"channel":"candle","data":"#);
    write_candle(out, coin, interval, units, candle);
    out.push(b'}');
}

/// The `candleSnapshot` answer: the candles of `series` overlapping `[start_ms, end_ms]`, as
/// a JSON array, oldest first.
pub fn write_candle_snapshot(
    out: &mut Vec<u8>,
    coin: &str,
    interval: Interval,
    units: Units,
    series: Option<&Series>,
    start_ms: i64,
    end_ms: i64,
) {
    out.push(b'[');
    for (i, candle) in series.into_iter().flat_map(|s| s.between(start_ms, end_ms)).enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_candle(out, coin, interval, units, candle);
    }
    out.push(b']');
}

#[cfg(test)]
mod tests;
