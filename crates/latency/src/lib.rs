//! ticktrade's latency toolkit: stage timestamps, clocks, HDR histograms, and reports rendered
//! as an aligned table, JSON lines or an SVG plot.
//!
//! Owns: `Stamps` (one cache line per frame, after roq's `MessageInfo`), the wait-free ring that
//! carries them off the hot thread, the histograms they feed, and every report format.
//! Must not: do I/O or spawn threads; reports go into a writer the caller owns. Reading a clock is
//! allowed only in `clock` (the tidy test enforces it), because pure code takes time as values.
//!
//! Hot path: `stamps.set(Stage::Sent, clock.mono()); producer.push(stamps);` — no allocation,
//! no lock, never blocks. Histogram thread: `consumer.drain(|s| recorder.record(&s))`, then
//! `write_table(&mut out, &recorder.series())`.
//!
//! # Layout
//! - `stamps`: `Stamps`, `Stage`, spans between stages.
//! - `clock`: `TscClock` (quanta, `raw()` + `to_mono`), `SystemClock`; the only clock reads.
//! - `ring`: `spsc_ring`, `RingProducer`/`RingConsumer` (rtrb plus drop counting).
//! - `histogram`: `Histogram` (hdrhistogram, ns, 3 digits, clamped), `Percentiles`, `Series`.
//! - `recorder`: `StageRecorder`, per-stage histograms fed from `Stamps`.
//! - `render`: `write_table`, `write_json_lines`, `write_svg`, `Human` durations, `IoFmt`.

pub mod clock;
pub mod histogram;
pub mod recorder;
pub mod render;
pub mod ring;
pub mod stamps;

pub use clock::{RawTicks, SystemClock, TscClock};
pub use histogram::{CurvePoint, DEFAULT_MAX_NS, Histogram, HistogramError, Percentiles, Series};
pub use recorder::StageRecorder;
pub use render::{Human, IoFmt, json_lines_string, svg_string, table_string, write_json_lines, write_svg, write_table};
pub use ring::{RingConsumer, RingProducer, spsc_ring};
pub use stamps::{Stage, Stamps};
