//! The recorder thread: drains the hot loop's stamp rings into histograms, off the hot thread.
//!
//! Owns: the consumer ends of the rings and the histograms they feed until the loop ends.
//! Must not: block the producer (rings are wait-free; when empty the recorder naps 1 ms, a
//! poll interval, not a synchronisation: it stops when both producers are gone and drained).

use std::thread::JoinHandle;
use std::time::Duration;

use ticktrade_latency::{Histogram, RingConsumer, Stage, StageRecorder, Stamps};

/// Everything the recorder saw.
#[derive(Clone, Debug, Default)]
pub struct Recorded {
    /// Per-stage spans, tick-to-decision, tick-to-trade, market-data latency.
    pub stages: StageRecorder,
    /// t0 → t4: read returned → order encoded and framed (only frames that led to an order).
    pub tick_to_encoded: Histogram,
    /// Bare writes of the last order's bytes (`FLOOR_PROBE`).
    pub write_floor: Histogram,
}

impl Recorded {
    pub fn record(&mut self, stamps: &Stamps) {
        self.stages.record(stamps);
        if let Some(ns) = stamps.span(Stage::Recv, Stage::Encoded) {
            self.tick_to_encoded.record(ns);
        }
    }
}

/// Starts the recorder thread; join it after the loop has ended (dropping the producers).
pub fn spawn_recorder(
    mut stamps_rx: RingConsumer<Stamps>,
    mut floor_rx: Option<RingConsumer<Stamps>>,
) -> std::io::Result<JoinHandle<Recorded>> {
    std::thread::Builder::new().name("tt-recorder".into()).spawn(move || {
        let mut recorded = Recorded::default();
        loop {
            let done = stamps_rx.is_abandoned() && floor_rx.as_ref().is_none_or(RingConsumer::is_abandoned);
            let mut n = stamps_rx.drain(|s| recorded.record(&s));
            if let Some(rx) = floor_rx.as_mut() {
                n += rx.drain(|s| {
                    if let Some(ns) = s.tick_to_trade_ns() {
                        recorded.write_floor.record(ns);
                    }
                });
            }
            if done {
                break recorded;
            }
            if n == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
    })
}
