//! `HotLoop`: the one-thread tick-to-trade loop on a blocking socket.
//! read (t0) → decode (t1) → book (t2) → decide (t3) → encode + frame (t4) → write (t5).
//!
//! Owns: the socket, the WebSocket reader and writers, the `Pipeline`, the clock readings and
//! the producer ends of the stamp rings. Answers pings and closes; ignores other frames.
//! Must not: allocate, lock, log or format between t0 and t5. Raw TSC readings are converted
//! and pushed to the SPSC ring after t5 (a push never blocks; a full ring drops and counts).
//!
//! Blocking reads by default: busy-polling was measured slower at the median and far worse in
//! the tail on a 2-vCPU VM (it takes a vCPU from the kernel's packet delivery). `busy_poll` and `pin_core` are there for
//! hosts with isolated cores; docs/PERFORMANCE.md has the measured trade-offs.
//!
//! Wall-clock time at t0 (carried in the order's label) is derived from the TSC reading and an
//! anchor pair taken outside the timed path, re-anchored every `REANCHOR_FRAMES` frames: a
//! `SystemTime::now` costs ≈21 ns, the conversion ≈2 ns.

use std::io::Write;
use std::net::TcpStream;

use ticktrade_core::{Clock, Mono, Utc};
use ticktrade_latency::{RawTicks, RingProducer, Stage, Stamps, TscClock};

use super::pipeline::{Outcome, Pipeline, PipelineStats, RawStamps};
use super::strategy::Strategy;
use ticktrade_net::frame::{Opcode, Role, WsError, WsReader, WsWriter};

/// A text frame that asks the loop to re-send its last order frame and time only the write:
/// the same bytes on the same socket, in the same run (the benchmarks' `write_floor`).
pub const FLOOR_PROBE: &[u8] = br#"{"jsonrpc":"2.0","method":"ticktrade/write_floor"}"#;

/// Frames between two wall-clock anchor refreshes.
const REANCHOR_FRAMES: u64 = 4096;

/// How the loop waits for data and where it runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HotConfig {
    /// Spin on a non-blocking socket instead of blocking in `read`.
    pub busy_poll: bool,
    /// Pin the loop's thread to this core (by index in `core_affinity::get_core_ids`).
    pub pin_core: Option<usize>,
    /// Answer [`FLOOR_PROBE`] frames (benchmarks only).
    pub floor_probe: bool,
    /// Return `Exit::Stopped` once the pipeline has written this many orders in all (counting
    /// any warm-up pass), e.g. for tests and bounded runs.
    pub stop_after_orders: Option<u64>,
    /// After each book frame's write, run the decoder and encoder once more over scratch
    /// buffers before blocking in `read` (`Pipeline::prewarm`), to start the next frame warm.
    pub prewarm: bool,
}

/// Why the loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// The peer sent a close frame (answered).
    Closed,
    /// The peer closed the TCP connection.
    Eof,
    /// `stop_after_orders` orders were written; the connection is still open (`into_parts`).
    Stopped,
}

/// What the loop did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoopReport {
    pub pipeline: PipelineStats,
    pub pings: u64,
    pub floor_writes: u64,
    /// Stamps the ring could not take (the recorder fell behind).
    pub dropped: u64,
    /// Whether `pin_core` took effect.
    pub pinned: bool,
}

/// Why the loop failed.
#[derive(Debug, thiserror::Error)]
pub enum HotError {
    #[error("websocket: {0}")]
    Ws(#[from] WsError),
    #[error("socket setup: {0}")]
    Setup(#[from] std::io::Error),
}

/// The hot loop for one connection and one instrument.
pub struct HotLoop<S> {
    stream: TcpStream,
    reader: WsReader,
    writer: WsWriter,
    control: WsWriter,
    pipeline: Pipeline<S>,
    clock: TscClock,
    stamps_tx: RingProducer<Stamps>,
    floor_tx: Option<RingProducer<Stamps>>,
    config: HotConfig,
}

impl<S: Strategy> HotLoop<S> {
    /// A loop over a connected WebSocket (`ticktrade_net::handshake::connect` gives `stream` and `reader`).
    /// `stamps_tx` receives one `Stamps` per book frame; `floor_tx` one per floor probe.
    pub fn new(
        stream: TcpStream,
        reader: WsReader,
        pipeline: Pipeline<S>,
        clock: TscClock,
        stamps_tx: RingProducer<Stamps>,
        floor_tx: Option<RingProducer<Stamps>>,
        config: HotConfig,
    ) -> HotLoop<S> {
        HotLoop {
            stream,
            reader,
            writer: WsWriter::new(Role::Client, 1024, 0x9E37_79B9),
            control: WsWriter::new(Role::Client, 256, 0x85EB_CA6B),
            pipeline,
            clock,
            stamps_tx,
            floor_tx,
            config,
        }
    }

    pub fn pipeline(&self) -> &Pipeline<S> {
        &self.pipeline
    }

    /// The connection back, e.g. to read the acks after `Exit::Stopped`.
    pub fn into_parts(self) -> (TcpStream, WsReader, Pipeline<S>) {
        (self.stream, self.reader, self.pipeline)
    }

    /// Runs until the peer closes. Pins the thread first if asked.
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub fn run(&mut self) -> Result<(LoopReport, Exit), HotError> {
        let mut report = LoopReport::default();
        if let Some(index) = self.config.pin_core {
            report.pinned = pin_current_thread(index);
        }
        self.stream.set_nonblocking(self.config.busy_poll)?;
        let mut anchor = Anchor::take(&self.clock);
        let mut t0 = RawTicks(0);
        let mut since_anchor = 0u64;
        // Raw ticks from t0 to t4 of the last order (the floor probe waits as long).
        let mut last_compute = 0u64;
        let exit = loop {
            let message = match self.reader.next_message() {
                Ok(Some(message)) => message,
                Ok(None) => {
                    let filled = if self.config.busy_poll {
                        self.reader.try_fill(&mut self.stream)
                    } else {
                        self.reader.fill(&mut self.stream)
                    };
                    match filled {
                        Ok(0) => continue,
                        Ok(_) => {
                            t0 = self.clock.raw();
                            continue;
                        }
                        Err(WsError::Eof) => break Exit::Eof,
                        Err(error) => return Err(error.into()),
                    }
                }
                Err(error) => return Err(error.into()),
            };
            match message.opcode {
                Opcode::Text | Opcode::Binary => {}
                Opcode::Ping => {
                    report.pings += 1;
                    self.control.frame_of(Opcode::Pong, message.payload);
                    self.control.write_to(&mut self.stream)?;
                    continue;
                }
                Opcode::Close => {
                    self.control.frame_of(Opcode::Close, &[0x03, 0xE8]);
                    // The peer may already be gone; a failed close reply changes nothing.
                    let _ = self.control.write_to(&mut self.stream);
                    break Exit::Closed;
                }
                Opcode::Pong | Opcode::Continuation => continue,
            }
            if self.config.floor_probe && message.payload == FLOOR_PROBE {
                if self.pipeline.stats().orders > 0 {
                    // Write at the same distance from t0 as the last order did, so the bare write
                    // meets the same peer state (an order's write comes ~1 µs after the read; one
                    // made at once often finds the sender's vCPU still awake and is cheaper).
                    while self.clock.raw().0.saturating_sub(t0.0) < last_compute {
                        std::hint::spin_loop();
                    }
                    let frame = self.pipeline.order_frame(&self.writer);
                    let start = self.clock.raw();
                    self.stream.write_all(frame).map_err(WsError::from)?;
                    let end = self.clock.raw();
                    report.floor_writes += 1;
                    if let Some(tx) = self.floor_tx.as_mut() {
                        let mut stamps = Stamps::received(self.clock.to_mono(start), Utc(0));
                        stamps.set(Stage::Sent, self.clock.to_mono(end));
                        tx.push(stamps);
                    }
                }
                continue;
            }
            let mut raw = RawStamps::received(t0, anchor.utc_at(&self.clock, t0));
            let outcome = self.pipeline.on_frame(message.payload, &self.clock, &mut raw, &mut self.writer);
            if outcome == Outcome::Order {
                self.stream.write_all(self.pipeline.order_frame(&self.writer)).map_err(WsError::from)?;
                raw.t[5] = self.clock.raw().0;
                last_compute = raw.t[4].saturating_sub(raw.t[0]);
            }
            // After t5: convert and record, outside the timed path.
            if raw.t[1] != 0 {
                self.stamps_tx.push(to_stamps(&self.clock, &raw));
            }
            if self.config.prewarm && matches!(outcome, Outcome::Order | Outcome::NoOrder) {
                self.pipeline.prewarm(message.payload);
            }
            since_anchor += 1;
            if since_anchor >= REANCHOR_FRAMES {
                anchor = Anchor::take(&self.clock);
                since_anchor = 0;
            }
            if self.config.stop_after_orders.is_some_and(|n| self.pipeline.stats().orders >= n) {
                break Exit::Stopped;
            }
        };
        // Leave the socket as the caller expects to use it next.
        if self.config.busy_poll {
            self.stream.set_nonblocking(false)?;
        }
        report.pipeline = self.pipeline.stats();
        report.dropped = self.stamps_tx.dropped();
        Ok((report, exit))
    }
}

/// Converts raw readings into `Stamps` (after t5).
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

/// A (TSC reading, wall-clock time) pair to turn later readings into wall-clock time.
#[derive(Clone, Copy, Debug)]
struct Anchor {
    mono: Mono,
    utc: i64,
}

impl Anchor {
    fn take(clock: &TscClock) -> Anchor {
        Anchor { mono: clock.mono(), utc: clock.utc().0 }
    }

    #[inline]
    fn utc_at(&self, clock: &TscClock, at: RawTicks) -> i64 {
        let since = clock.to_mono(at).0 as i64 - self.mono.0 as i64;
        self.utc.saturating_add(since)
    }
}

/// Pins the calling thread to the core at `index` of `core_affinity::get_core_ids()`. Returns
/// whether it worked (false on an unknown index or where affinity is not supported).
pub fn pin_current_thread(index: usize) -> bool {
    core_affinity::get_core_ids().and_then(|ids| ids.get(index).copied()).is_some_and(core_affinity::set_for_current)
}
