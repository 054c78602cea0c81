//! The venue's own past prices, sampled from the exchange as the synthetic market steps:
//! what `get_mark_price_history`, `get_index_chart_data`, `get_funding_rate_history`,
//! `get_funding_chart_data`, `get_delivery_prices`, `get_historical_volatility` and
//! `get_volatility_index_data` answer from.
//!
//! Owns: three bounded rings of `(timestamp ms, price)` samples: each instrument's mark once
//! a second ([`MARK_SAMPLES`]), each index once a minute ([`MINUTE_SAMPLES`]) and once an
//! hour ([`HOUR_SAMPLES`]); and the realised volatility computed from the minute samples.
//! Must not: read a clock (the engine's step passes `now`), grow past its capacities (the
//! oldest sample is dropped), or hold a price as a float (volatility, a statistic, is
//! computed in `f64` and leaves as a rounded decimal).
//!
//! A sample is taken at the first step in a new second, minute or hour and stamped with the
//! time it was taken; the first step of the simulator takes all three. Where no sample was
//! taken (the simulator was not running, or the engine stalled) there is none: nothing is
//! interpolated.

use std::collections::VecDeque;

use ticktrade_core::{InstrumentId, Utc};
use ticktrade_exchange::{Exchange, IndexId, Money};

/// Mark samples kept per instrument: ten minutes at one a second (Deribit's mark price
/// history covers minutes, not days).
pub const MARK_SAMPLES: usize = 600;
/// Index samples kept per index at one a minute: a week.
pub const MINUTE_SAMPLES: usize = 7 * 1_440;
/// Index samples kept per index at one an hour: a year.
pub const HOUR_SAMPLES: usize = 365 * 24;

const SECOND_MS: i64 = 1_000;
const MINUTE_MS: i64 = 60_000;
const HOUR_MS: i64 = 3_600_000;
/// Minutes in a year of continuous trading: annualises minute returns.
const MINUTES_PER_YEAR: f64 = 365.0 * 1_440.0;

/// A ring of samples, oldest first.
#[derive(Debug, Default)]
pub struct Samples {
    ring: VecDeque<(i64, Money)>,
    capacity: usize,
}

impl Samples {
    fn new(capacity: usize) -> Samples {
        Samples { ring: VecDeque::new(), capacity }
    }

    fn push(&mut self, at_ms: i64, value: Money) {
        if self.ring.len() >= self.capacity {
            self.ring.pop_front();
        }
        self.ring.push_back((at_ms, value));
    }

    /// Samples taken in `[start, end]`, oldest first.
    pub fn between(&self, start: i64, end: i64) -> impl DoubleEndedIterator<Item = (i64, Money)> + '_ {
        self.ring.iter().copied().filter(move |(t, _)| (start..=end).contains(t))
    }

    pub fn len(&self) -> usize {
        self.ring.len()
    }

    /// The last sample taken at or before `at`.
    pub fn at_or_before(&self, at: i64) -> Option<(i64, Money)> {
        self.ring.iter().rev().find(|(t, _)| *t <= at).copied()
    }
}

/// The rings of every instrument and index.
#[derive(Debug)]
pub struct History {
    marks: Vec<Samples>,
    minutes: Vec<Samples>,
    hours: Vec<Samples>,
    /// The bucket (second, minute, hour number) of the last sample of each ring kind.
    last: [Option<i64>; 3],
}

impl History {
    pub fn new(instruments: usize, indexes: usize) -> History {
        History {
            marks: (0..instruments).map(|_| Samples::new(MARK_SAMPLES)).collect(),
            minutes: (0..indexes).map(|_| Samples::new(MINUTE_SAMPLES)).collect(),
            hours: (0..indexes).map(|_| Samples::new(HOUR_SAMPLES)).collect(),
            last: [None; 3],
        }
    }

    /// Takes the samples due at `now`.
    pub fn record(&mut self, now: Utc, ex: &Exchange) {
        let ms = now.as_millis();
        let mut due = |kind: usize, width: i64| {
            let bucket = ms.div_euclid(width);
            let is_due = self.last[kind].is_none_or(|b| bucket > b);
            if is_due {
                self.last[kind] = Some(bucket);
            }
            is_due
        };
        let (second, minute, hour) = (due(0, SECOND_MS), due(1, MINUTE_MS), due(2, HOUR_MS));
        if second {
            for (i, ring) in self.marks.iter_mut().enumerate() {
                ring.push(ms, ex.mark_price(InstrumentId(i as u32)));
            }
        }
        for (rings, take) in [(&mut self.minutes, minute), (&mut self.hours, hour)] {
            if take {
                for (i, ring) in rings.iter_mut().enumerate() {
                    ring.push(ms, ex.index_price(IndexId(i as u8)));
                }
            }
        }
    }

    pub fn marks(&self, instrument: InstrumentId) -> Option<&Samples> {
        self.marks.get(instrument.0 as usize)
    }

    pub fn index_minutes(&self, index: IndexId) -> Option<&Samples> {
        self.minutes.get(usize::from(index.0))
    }

    pub fn index_hours(&self, index: IndexId) -> Option<&Samples> {
        self.hours.get(usize::from(index.0))
    }
}

/// Annualised realised volatility in percent of the log returns between consecutive
/// samples, each return scaled to one minute; `None` below two returns.
pub fn realised_vol(samples: &[(i64, Money)]) -> Option<f64> {
    let returns: Vec<f64> = samples
        .windows(2)
        .filter_map(|w| {
            let (a, b) = (w[0].1.to_f64_lossy(), w[1].1.to_f64_lossy());
            let minutes = (w[1].0 - w[0].0) as f64 / MINUTE_MS as f64;
            (a > 0.0 && b > 0.0 && minutes > 0.0).then(|| (b / a).ln() / minutes.sqrt())
        })
        .collect();
    if returns.len() < 2 {
        return None;
    }
    let n = returns.len() as f64;
    let mean = returns.iter().sum::<f64>() / n;
    let variance = returns.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / (n - 1.0);
    Some(variance.sqrt() * MINUTES_PER_YEAR.sqrt() * 100.0)
}

/// The volatility at each minute sample over the `window_ms` before it (samples with fewer
/// than two returns in the window have none), oldest first.
pub fn vol_series(minutes: &Samples, window_ms: i64) -> Vec<(i64, f64)> {
    let all: Vec<(i64, Money)> = minutes.ring.iter().copied().collect();
    let mut out = Vec::new();
    let mut first = 0;
    for (i, &(t, _)) in all.iter().enumerate() {
        while all[first].0 < t - window_ms {
            first += 1;
        }
        if let Some(vol) = realised_vol(&all[first..=i]) {
            out.push((t, vol));
        }
    }
    out
}

/// A statistic as an exact decimal with six places.
pub fn stat(value: f64) -> ticktrade_deribit_proto::api::Num {
    crate::market::money(Money::from_f64_model((value * 1e6).round() / 1e6))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn rings_keep_their_capacity_and_order() {
        let mut s = Samples::new(3);
        for t in 0..5 {
            s.push(t, Money::from_int(t));
        }
        assert_eq!(s.len(), 3);
        assert_eq!(s.between(0, 10).map(|(t, _)| t).collect::<Vec<_>>(), vec![2, 3, 4]);
        assert_eq!(s.at_or_before(3).map(|(t, _)| t), Some(3));
        assert_eq!(s.at_or_before(1), None);
    }

    #[test]
    fn realised_vol_matches_a_naive_computation() {
        // Prices alternating ±1 % a minute: every log return is ±ln(1.01)-ish.
        let prices = [100.0, 101.0, 100.0, 101.0, 100.0];
        let samples: Vec<(i64, Money)> =
            prices.iter().enumerate().map(|(i, p)| (i as i64 * MINUTE_MS, Money::from_f64_model(*p))).collect();
        let returns: Vec<f64> = prices.windows(2).map(|w| (w[1] / w[0]).ln()).collect();
        let mean = returns.iter().sum::<f64>() / 4.0;
        let sd = (returns.iter().map(|r| (r - mean) * (r - mean)).sum::<f64>() / 3.0).sqrt();
        let expected = sd * (365.0f64 * 1_440.0).sqrt() * 100.0;
        let got = realised_vol(&samples).unwrap();
        assert!((got - expected).abs() < 1e-6 * expected, "{got} vs {expected}");
        assert_eq!(realised_vol(&samples[..2]), None);
        // A flat price has no volatility.
        let flat: Vec<(i64, Money)> = (0..5).map(|i| (i * MINUTE_MS, Money::from_int(100))).collect();
        assert_eq!(realised_vol(&flat), Some(0.0));
    }

    #[test]
    fn samples_are_taken_once_per_bucket() {
        let start = Utc::from_millis(1_767_254_400_000);
        let (catalogue, _) = crate::market::builtin_catalogue(start).unwrap();
        let ex = Exchange::new(catalogue, ticktrade_exchange::Config::default());
        let n_indexes = ex.catalogue().indexes().len();
        let mut h = History::new(ex.catalogue().iter().count(), n_indexes);
        // Every 250 ms for 2 h 1 min: 7 261 seconds, 122 minutes, 3 hours (with the first).
        let steps = (2 * 3_600 + 60) * 4;
        for k in 0..=steps {
            h.record(Utc::from_millis(start.as_millis() + k * 250), &ex);
        }
        assert_eq!(h.marks(InstrumentId(0)).unwrap().len(), MARK_SAMPLES);
        assert_eq!(h.index_minutes(IndexId(0)).unwrap().len(), 122);
        assert_eq!(h.index_hours(IndexId(0)).unwrap().len(), 3);
    }
}
