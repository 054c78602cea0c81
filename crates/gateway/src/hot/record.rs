//! The recorder thread: drains the live session's stamp rings into histograms, off the hot
//! thread; the raw readings the timed path takes and their conversion.
//!
//! Owns: the consumer ends of the rings and the histograms they feed until the loop ends.
//! Must not: block the producer (rings are wait-free; when empty the recorder naps 1 ms, a
//! poll interval, not a synchronisation: it stops when both producers are gone and drained).

use std::thread::JoinHandle;
use std::time::Duration;

use ticktrade_core::Utc;
use ticktrade_latency::{Histogram, RawTicks, RingConsumer, Stage, StageRecorder, Stamps, TscClock};

/// Raw TSC readings of t0…t5 for one frame (index = `ticktrade_latency::Stage as usize`), 0
/// when the stage did not happen: read on the timed path, converted after t5 by [`to_stamps`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RawStamps {
    pub t: [u64; 6],
    /// Our wall-clock time at t0, ns since the epoch.
    pub recv_utc_ns: i64,
    /// The exchange's timestamp on the frame, ms since the epoch (0 if none).
    pub exch_ms: u64,
}

impl RawStamps {
    #[inline]
    pub fn received(t0: RawTicks, recv_utc_ns: i64) -> RawStamps {
        RawStamps { t: [t0.0, 0, 0, 0, 0, 0], recv_utc_ns, exch_ms: 0 }
    }
}

/// Converts one frame's raw readings into `Stamps` (after t5, off the timed path).
pub fn to_stamps(clock: &TscClock, raw: &RawStamps) -> Stamps {
    let mut stamps = Stamps::received(clock.to_mono(RawTicks(raw.t[0])), Utc(raw.recv_utc_ns));
    for (stage, &t) in Stage::ALL.iter().zip(&raw.t).skip(1) {
        if t != 0 {
            stamps.set(*stage, clock.to_mono(RawTicks(t)));
        }
    }
    if raw.exch_ms != 0 {
        stamps.exch_utc = Utc(i64::try_from(raw.exch_ms).unwrap_or(i64::MAX / 1_000_000).saturating_mul(1_000_000));
    }
    stamps
}

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
