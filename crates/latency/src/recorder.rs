//! `StageRecorder`: the histogram thread's side: turns each `Stamps` into samples of every
//! stage span and of the end-to-end latencies, ready to print as `Series`.
//!
//! Owns: which spans a report shows and their names.
//! Must not: read clocks or own the thread; the I/O side drains a `RingConsumer` into it.

use crate::{Histogram, Series, Stage, Stamps};

/// Report names of the per-stage spans, indexed like `Stage::ALL[1..]`.
const STAGE_SPAN_NAMES: [&str; 5] = ["decode", "apply", "decide", "encode", "send"];

/// Histograms of every span of the `Stamps` it is given.
#[derive(Clone, Debug, Default)]
pub struct StageRecorder {
    /// t(i-1) → t(i) for i in 1..=5 (from the previous stage that happened).
    stages: [Histogram; 5],
    tick_to_decision: Histogram,
    tick_to_trade: Histogram,
    market_data: Histogram,
    /// Frames whose exchange timestamp is ahead of our receive time (clock skew).
    n_negative_market_data: u64,
}

impl StageRecorder {
    pub fn new() -> StageRecorder {
        StageRecorder::default()
    }

    /// Records every span present in `stamps`. Does not allocate.
    pub fn record(&mut self, stamps: &Stamps) {
        for (stage, ns) in stamps.stage_spans() {
            self.stages[stage as usize - 1].record(ns);
        }
        if let Some(ns) = stamps.tick_to_decision_ns() {
            self.tick_to_decision.record(ns);
        }
        if let Some(ns) = stamps.tick_to_trade_ns() {
            self.tick_to_trade.record(ns);
        }
        match stamps.market_data_ns() {
            Some(ns) if ns >= 0 => self.market_data.record(ns.unsigned_abs()),
            Some(_) => self.n_negative_market_data += 1,
            None => {}
        }
    }

    /// The histogram of the span ending at `stage` (`None` for `Stage::Recv`).
    pub fn stage(&self, stage: Stage) -> Option<&Histogram> {
        (stage as usize).checked_sub(1).map(|idx| &self.stages[idx])
    }

    pub fn tick_to_trade(&self) -> &Histogram {
        &self.tick_to_trade
    }

    pub fn tick_to_decision(&self) -> &Histogram {
        &self.tick_to_decision
    }

    pub fn market_data(&self) -> &Histogram {
        &self.market_data
    }

    /// Frames whose exchange time was after our receive time (not in `market_data`).
    pub fn n_negative_market_data(&self) -> u64 {
        self.n_negative_market_data
    }

    /// One series per non-empty histogram: the stages in order, then `tick_to_decision`,
    /// `tick_to_trade` and `market_data` (receive time minus exchange time).
    pub fn series(&self) -> Vec<Series> {
        let named = STAGE_SPAN_NAMES.iter().zip(&self.stages).map(|(name, h)| (*name, h)).chain([
            ("tick_to_decision", &self.tick_to_decision),
            ("tick_to_trade", &self.tick_to_trade),
            ("market_data", &self.market_data),
        ]);
        named.filter(|(_, h)| !h.is_empty()).map(|(name, h)| Series::from_histogram(name, h)).collect()
    }

    pub fn reset(&mut self) {
        for histogram in
            self.stages.iter_mut().chain([&mut self.tick_to_decision, &mut self.tick_to_trade, &mut self.market_data])
        {
            histogram.reset();
        }
        self.n_negative_market_data = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticktrade_core::{Mono, Utc};

    fn stamps(recv: u64, steps: &[(Stage, u64)]) -> Stamps {
        let mut stamps = Stamps::received(Mono(recv), Utc(2_000));
        stamps.exch_utc = Utc(1_500);
        for (stage, offset) in steps {
            stamps.set(*stage, Mono(recv + offset));
        }
        stamps
    }

    #[test]
    fn records_each_span() {
        let mut recorder = StageRecorder::new();
        let all = [
            (Stage::Decoded, 100),
            (Stage::Applied, 150),
            (Stage::Decided, 170),
            (Stage::Encoded, 300),
            (Stage::Sent, 3_300),
        ];
        for _ in 0..10 {
            recorder.record(&stamps(1_000, &all));
        }
        // A frame that led to no order.
        recorder.record(&stamps(9_000, &all[..3]));

        assert_eq!(recorder.stage(Stage::Recv).map(Histogram::count), None);
        assert_eq!(recorder.stage(Stage::Decoded).map(Histogram::count), Some(11));
        assert_eq!(recorder.stage(Stage::Sent).map(Histogram::count), Some(10));
        // Above 2048 ns buckets are 2 ns wide; HdrHistogram reports a bucket's top.
        assert_eq!(recorder.tick_to_trade().percentiles().p50, 3_301);
        assert_eq!(recorder.tick_to_decision().count(), 11);
        assert_eq!(recorder.market_data().percentiles().max, 500);

        let names: Vec<String> = recorder.series().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            ["decode", "apply", "decide", "encode", "send", "tick_to_decision", "tick_to_trade", "market_data"]
        );
        let send = &recorder.series()[4];
        assert_eq!(send.percentiles.p50, 3_001);
    }

    #[test]
    fn negative_market_data_is_counted_not_recorded() {
        let mut recorder = StageRecorder::new();
        let mut s = stamps(1, &[]);
        s.exch_utc = Utc(3_000);
        recorder.record(&s);
        assert_eq!(recorder.n_negative_market_data(), 1);
        assert!(recorder.market_data().is_empty());
        recorder.reset();
        assert_eq!(recorder.n_negative_market_data(), 0);
        assert!(recorder.series().is_empty());
    }
}
