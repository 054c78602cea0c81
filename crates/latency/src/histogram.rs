//! `Histogram` of nanosecond latencies, the `Percentiles` read from it and the `Series` a report
//! prints (one line of the table, one JSON object, one curve of the plot).
//!
//! Owns: the histogram's fixed bounds (1 ns … `max_ns`, 3 significant digits, no auto-resize)
//! and the clamping of larger values, counted so a report can say how many there were.
//! Must not: read a clock or print. Recording never allocates: the buckets are sized up front.

/// Default upper bound: 60 s. Anything slower is clamped to this and counted.
pub const DEFAULT_MAX_NS: u64 = 60_000_000_000;

/// Significant decimal digits kept for every value (0.1% relative error).
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Why a histogram could not be built or merged.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HistogramError {
    #[error("histogram bound must be at least 2 ns, got {0}")]
    BadBound(u64),
    #[error("cannot merge histograms: {0}")]
    Merge(String),
}

/// Latencies in nanoseconds, 3 significant digits, fixed range 0 ..= `max_ns`.
#[derive(Clone, Debug)]
pub struct Histogram {
    inner: hdrhistogram::Histogram<u64>,
    max_ns: u64,
    n_clamped: u64,
}

impl Histogram {
    /// A histogram for 0 ..= 60 s.
    pub fn new() -> Histogram {
        // DEFAULT_MAX_NS is a valid bound, so this cannot fail; fall back to a tiny one anyway
        // rather than panic.
        match Histogram::with_max(DEFAULT_MAX_NS) {
            Ok(histogram) => histogram,
            Err(_) => unreachable!("DEFAULT_MAX_NS is a valid bound"),
        }
    }

    /// A histogram for 0 ..= `max_ns`; larger values are recorded as `max_ns` and counted.
    pub fn with_max(max_ns: u64) -> Result<Histogram, HistogramError> {
        let mut inner = hdrhistogram::Histogram::new_with_bounds(1, max_ns, SIGNIFICANT_DIGITS)
            .map_err(|_| HistogramError::BadBound(max_ns))?;
        inner.auto(false);
        Ok(Histogram { inner, max_ns, n_clamped: 0 })
    }

    /// Records one value. Never allocates, never fails: values above the bound are clamped.
    #[inline]
    pub fn record(&mut self, ns: u64) {
        self.record_n(ns, 1);
    }

    /// Records `count` occurrences of `ns`.
    #[inline]
    pub fn record_n(&mut self, ns: u64, count: u64) {
        let value = if ns > self.max_ns {
            self.n_clamped += count;
            self.max_ns
        } else {
            ns
        };
        // In range by construction; `saturating_record` would hide a bug, so count it instead.
        if self.inner.record_n(value, count).is_err() {
            self.n_clamped += count;
        }
    }

    /// Adds every value of `other`. Both must have the same bound.
    pub fn merge(&mut self, other: &Histogram) -> Result<(), HistogramError> {
        if other.max_ns != self.max_ns {
            return Err(HistogramError::Merge(format!("bounds differ: {} ns and {} ns", self.max_ns, other.max_ns)));
        }
        self.inner.add(&other.inner).map_err(|e| HistogramError::Merge(format!("{e:?}")))?;
        self.n_clamped += other.n_clamped;
        Ok(())
    }

    /// Forgets every value, keeping the buckets.
    pub fn reset(&mut self) {
        self.inner.reset();
        self.n_clamped = 0;
    }

    pub fn count(&self) -> u64 {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.is_empty()
    }

    /// The upper bound; larger values were recorded as this.
    pub fn max_ns(&self) -> u64 {
        self.max_ns
    }

    /// How many recorded values were above the bound.
    pub fn n_clamped(&self) -> u64 {
        self.n_clamped
    }

    /// The value at quantile `q` (0.0 ..= 1.0), rounded up to its bucket's highest value as
    /// HdrHistogram reports it; 0 when empty.
    pub fn value_at_quantile(&self, q: f64) -> u64 {
        if self.is_empty() { 0 } else { self.inner.value_at_quantile(q) }
    }

    pub fn percentiles(&self) -> Percentiles {
        Percentiles::from_histogram(self)
    }

    /// The "latency vs percentile" curve of HdrHistogram's plots: one point per quantile step,
    /// denser towards the tail (`ticks_per_half` points each time the remaining fraction halves),
    /// ending at the maximum.
    pub fn curve(&self, ticks_per_half: u32) -> Vec<CurvePoint> {
        let mut points = Vec::new();
        if self.is_empty() {
            return points;
        }
        for step in self.inner.iter_quantiles(ticks_per_half.max(1)) {
            let quantile = step.quantile_iterated_to();
            if quantile >= 1.0 {
                break;
            }
            points.push(CurvePoint { quantile, value_ns: step.value_iterated_to() });
        }
        points.push(CurvePoint { quantile: 1.0, value_ns: self.inner.max() });
        points
    }

    /// The underlying HdrHistogram, for anything this wrapper does not offer.
    pub fn inner(&self) -> &hdrhistogram::Histogram<u64> {
        &self.inner
    }
}

impl Default for Histogram {
    fn default() -> Histogram {
        Histogram::new()
    }
}

/// One point of a "latency vs percentile" curve: `quantile` of the values are ≤ `value_ns`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CurvePoint {
    pub quantile: f64,
    pub value_ns: u64,
}

/// The summary a report prints, in nanoseconds. All zero for an empty histogram.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Percentiles {
    pub count: u64,
    pub min: u64,
    pub p25: u64,
    pub p50: u64,
    pub p75: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Percentiles {
    pub fn from_histogram(histogram: &Histogram) -> Percentiles {
        if histogram.is_empty() {
            return Percentiles::default();
        }
        let inner = &histogram.inner;
        Percentiles {
            count: inner.len(),
            min: inner.min(),
            p25: inner.value_at_quantile(0.25),
            p50: inner.value_at_quantile(0.50),
            p75: inner.value_at_quantile(0.75),
            p90: inner.value_at_quantile(0.90),
            p99: inner.value_at_quantile(0.99),
            p999: inner.value_at_quantile(0.999),
            max: inner.max(),
        }
    }

    /// `(label, value)` for the table's value columns, in order.
    pub fn columns(&self) -> [(&'static str, u64); 8] {
        [
            ("min", self.min),
            ("p25", self.p25),
            ("p50", self.p50),
            ("p75", self.p75),
            ("p90", self.p90),
            ("p99", self.p99),
            ("p99.9", self.p999),
            ("max", self.max),
        ]
    }
}

/// One measured thing: a row of the table, a JSON line, a line of the plot.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub name: String,
    /// Always `"ns"`: every value is in nanoseconds.
    pub unit: &'static str,
    pub percentiles: Percentiles,
    /// The baseline's median measured in the same run, if there is one.
    pub baseline_p50: Option<u64>,
    /// The latency curve for plots; empty when only percentiles are known.
    pub curve: Vec<CurvePoint>,
}

/// Points per halving of the tail in `Series::from_histogram` curves.
pub const CURVE_TICKS_PER_HALF: u32 = 5;

impl Series {
    pub fn new(name: impl Into<String>, percentiles: Percentiles) -> Series {
        Series { name: name.into(), unit: "ns", percentiles, baseline_p50: None, curve: Vec::new() }
    }

    /// Percentiles and curve of `histogram`.
    pub fn from_histogram(name: impl Into<String>, histogram: &Histogram) -> Series {
        Series { curve: histogram.curve(CURVE_TICKS_PER_HALF), ..Series::new(name, histogram.percentiles()) }
    }

    pub fn with_baseline_p50(mut self, baseline_p50: u64) -> Series {
        self.baseline_p50 = Some(baseline_p50);
        self
    }

    /// How many times faster than the baseline at the median: `baseline_p50 / p50`.
    /// `None` without a baseline or when `p50` is zero.
    pub fn ratio(&self) -> Option<f64> {
        let baseline = self.baseline_p50?;
        (self.percentiles.p50 != 0).then(|| baseline as f64 / self.percentiles.p50 as f64)
    }

    /// The curve to draw: the recorded one, or a coarse one through the percentiles.
    pub fn curve_or_percentiles(&self) -> Vec<CurvePoint> {
        if !self.curve.is_empty() {
            return self.curve.clone();
        }
        let p = &self.percentiles;
        if p.count == 0 {
            return Vec::new();
        }
        [
            (0.0, p.min),
            (0.25, p.p25),
            (0.5, p.p50),
            (0.75, p.p75),
            (0.9, p.p90),
            (0.99, p.p99),
            (0.999, p.p999),
            (1.0, p.max),
        ]
        .into_iter()
        .map(|(quantile, value_ns)| CurvePoint { quantile, value_ns })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn uniform(n: u64) -> Histogram {
        let mut histogram = Histogram::new();
        for v in 1..=n {
            histogram.record(v);
        }
        histogram
    }

    #[test]
    fn uniform_1_to_1000_is_exact() {
        // Below 2048 every value has its own bucket at 3 significant digits.
        let p = uniform(1000).percentiles();
        assert_eq!(
            p,
            Percentiles { count: 1000, min: 1, p25: 250, p50: 500, p75: 750, p90: 900, p99: 990, p999: 999, max: 1000 }
        );
    }

    #[test]
    fn constant_distribution() {
        let mut histogram = Histogram::new();
        histogram.record_n(116, 10_000);
        let p = histogram.percentiles();
        assert_eq!((p.count, p.min, p.p50, p.p999, p.max), (10_000, 116, 116, 116, 116));
    }

    #[test]
    fn bimodal_tail_shows_in_p99_only() {
        let mut histogram = Histogram::new();
        histogram.record_n(1_000, 985);
        histogram.record_n(1_000_000, 15);
        let p = histogram.percentiles();
        assert_eq!(p.p50, 1_000);
        assert_eq!(p.p90, 1_000);
        // 1_000_000 has 3 significant digits: bucket 1_000_000 ..= 1_000_447 (2^9 wide at this
        // magnitude), so HdrHistogram reports the bucket's top.
        assert!((1_000_000..=1_001_000).contains(&p.p99), "{}", p.p99);
        assert_eq!(p.p99, p.max);
    }

    #[test]
    fn empty_is_all_zero() {
        let histogram = Histogram::new();
        assert_eq!(histogram.percentiles(), Percentiles::default());
        assert!(histogram.curve(5).is_empty());
        assert_eq!(histogram.value_at_quantile(0.5), 0);
    }

    #[test]
    fn values_above_bound_are_clamped_and_counted() {
        let mut histogram = Histogram::with_max(1_000_000).unwrap();
        histogram.record(5);
        histogram.record(2_000_000);
        histogram.record_n(u64::MAX, 3);
        assert_eq!(histogram.count(), 5);
        assert_eq!(histogram.n_clamped(), 4);
        let max = histogram.percentiles().max;
        assert!((1_000_000..=1_001_000).contains(&max), "{max}");
    }

    #[test]
    fn zero_is_recordable() {
        let mut histogram = Histogram::new();
        histogram.record(0);
        histogram.record(10);
        assert_eq!(histogram.percentiles().min, 0);
        assert_eq!(histogram.n_clamped(), 0);
    }

    #[test]
    fn bad_bound_is_an_error() {
        assert_eq!(Histogram::with_max(1).unwrap_err(), HistogramError::BadBound(1));
    }

    #[test]
    fn merge_adds_counts_and_checks_bounds() {
        let mut a = uniform(500);
        let b = uniform(1000);
        a.merge(&b).unwrap();
        assert_eq!(a.count(), 1500);
        let other = Histogram::with_max(1_000).unwrap();
        assert!(a.merge(&other).is_err());
    }

    #[test]
    fn curve_is_monotonic_and_ends_at_max() {
        let curve = uniform(100_000).curve(5);
        assert!(curve.len() > 20, "{}", curve.len());
        assert!(curve.windows(2).all(|w| w[0].quantile <= w[1].quantile && w[0].value_ns <= w[1].value_ns));
        let last = curve.last().unwrap();
        assert_eq!(last.quantile, 1.0);
        assert!(last.value_ns >= 100_000);
    }

    #[test]
    fn series_ratio() {
        let series = Series::new("x", Percentiles { count: 1, p50: 200, ..Percentiles::default() });
        assert_eq!(series.ratio(), None);
        let series = series.with_baseline_p50(900);
        assert_eq!(series.ratio(), Some(4.5));
        let zero = Series::new("z", Percentiles::default()).with_baseline_p50(10);
        assert_eq!(zero.ratio(), None);
    }

    /// Naive model: sort the samples and take the ceil(q·n)-th one.
    fn naive_quantile(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    proptest! {
        #[test]
        fn percentiles_match_sorted_model_within_precision(mut values in proptest::collection::vec(0u64..10_000_000_000, 1..2_000)) {
            let mut histogram = Histogram::new();
            for &v in &values {
                histogram.record(v);
            }
            values.sort_unstable();
            let p = histogram.percentiles();
            prop_assert_eq!(p.count, values.len() as u64);
            for (q, got) in [(0.25, p.p25), (0.5, p.p50), (0.75, p.p75), (0.9, p.p90), (0.99, p.p99), (0.999, p.p999), (1.0, p.max)] {
                let want = naive_quantile(&values, q);
                // Reported as the top of the bucket holding `want`: never below, at most 0.1% above.
                prop_assert!(got >= want && got - want <= want / 1000 + 1, "q={} got={} want={}", q, got, want);
            }
            let min = values[0];
            prop_assert!(p.min <= min && min - p.min <= min / 1000 + 1, "min {} vs {}", p.min, min);
        }
    }
}
