//! `ticktrade bench tick-to-trade`: a venue publishes Deribit `book.BTC-PERPETUAL.raw` changes
//! over a real WebSocket on 127.0.0.1 and reads the orders back; ticktrade's live session
//! (`ticktrade_gateway::live`, what `ticktrade run` runs) answers each tick with an order. Then
//! the same pipeline written the plain way (`baseline`: tokio task, tokio-tungstenite, serde_json
//! `Value`, `BTreeMap` book, `format!` request) runs against a fresh exchange side on the same
//! frames, in the same process.
//!
//! Owns: the run's wiring, the series it reports and their names (`tick_to_trade` = t5 − t0,
//! `tick_to_encoded` = t4 − t0, `write_floor` = a bare write of the last order's bytes on the
//! same socket, per-stage spans, `exchange_tick_to_order` = the exchange's view); the output is
//! the common `report::emit` (table, `--json` lines, `--plot` SVG).
//! Must not: time anything itself on the hot side; the stamps come from the session's rings.
//!
//! The hot side is the live session `ticktrade run` uses (`session`: order state and risk checks
//! on, a strategy that edits its resting bid on every tick), against an in-process venue
//! (`venue`: it answers the session's control requests, acknowledges every order and sends
//! the floor probes), closed-loop by default (`--pace reply`: the next tick as soon as the
//! order for the previous one is read), or gap-paced (`--pace sleep|spin`); then once more with
//! the risk checks off, and with `--tls` over TLS. The baseline runs against
//! `exchange::ExchangeSide`. `--exchange sim` runs the same session
//! against the embedded simulator instead (`sim`), without `write_floor`, venue view or
//! baseline.

mod baseline;
pub(crate) mod exchange;
mod in_memory;
mod session;
mod sim;
mod venue;

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};
use exchange::{ExchangeConfig, ExchangeReport, Pace};
use ticktrade_gateway::hot::Recorded;
use ticktrade_gateway::hot::feed::{SyntheticFeed, btc_perpetual};
use ticktrade_latency::{Histogram, Series, Stage, TscClock};

/// The per-stage series, each the span from the previous stamp to its own.
const STAGE_SERIES: [(Stage, &str); 5] = [
    (Stage::Decoded, "stage_decode"),
    (Stage::Applied, "stage_apply"),
    (Stage::Decided, "stage_decide"),
    (Stage::Encoded, "stage_encode"),
    (Stage::Sent, "stage_write"),
];

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Book change frames to publish (each is one tick).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(100..=10_000_000))]
    pub ticks: u64,
    /// The other end: `in-process` (default), the exchange side of `exchange` speaking the
    /// simulator's bytes with exact pacing; `sim`, the embedded simulator on loopback, whose
    /// market publishes book changes at `--sim-rate` and acknowledges the orders (no
    /// `write_floor`, no exchange-side view, no baseline; see docs/PERFORMANCE.md).
    #[arg(long, value_enum, default_value_t = ExchangeArg::InProcess)]
    pub exchange: ExchangeArg,
    /// With `--exchange sim`: the simulated market's events per second.
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub sim_rate: u32,
    /// How the exchange side paces ticks. `reply` (default): closed loop, the next tick is
    /// written as soon as the order for the previous one has been read; `sleep`: a `thread::sleep(--gap-us)` before each tick
    /// (the hot thread idles and wakes cold, as on a quiet feed); `spin`: the same gaps spun
    /// out on the TSC (one core busy). See docs/PERFORMANCE.md.
    #[arg(long, value_enum, default_value_t = PaceArg::Reply)]
    pub pace: PaceArg,
    /// Pause before each tick, in µs, with `--pace sleep|spin` (a `thread::sleep`; Linux adds
    /// ≈50 µs of timer slack).
    #[arg(long, default_value_t = 50)]
    pub gap_us: u64,
    /// With `--pace reply`: the longest wait for an order before the next tick goes out anyway
    /// (a tick the strategy does not answer), in µs; Linux rounds it up to its timer tick.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..=10_000_000))]
    pub reply_timeout_us: u64,
    /// Level updates per change frame (3 gives ≈300-byte frames, like Deribit's).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=100))]
    pub levels_per_frame: u64,
    /// The strategy answers every N-th two-sided tick.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub every: u32,
    /// Ask for a bare write of the last order's bytes after every N ticks (`write_floor`).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub floor_every: u32,
    /// Also run the compute (t0 → t4) over the same frames from memory, warm (`mem_*`) and
    /// after evicting the caches before each frame (`mem_cold_*`).
    #[arg(long)]
    pub in_memory: bool,
    /// KiB written between two frames in the cold in-memory pass.
    #[arg(long, default_value_t = 2048, value_parser = clap::value_parser!(u64).range(1..=1_048_576))]
    pub evict_kb: u64,
    /// Pin the hot thread to this core index.
    #[arg(long)]
    pub pin_core: Option<usize>,
    /// Pin the exchange side's threads to this core index (with `--pin-core` on the same
    /// index, a loopback write wakes its peer without a cross-CPU interrupt; see
    /// docs/PERFORMANCE.md).
    #[arg(long)]
    pub exchange_core: Option<usize>,
    /// The session polls its socket in a loop instead of blocking (`ticktrade run
    /// --busy-poll`): one vCPU stays busy, and each frame finds the loop's caches warm.
    #[arg(long)]
    pub busy_poll: bool,
    /// Skip the plain baseline (for profiling the hot loop alone).
    #[arg(long)]
    pub no_baseline: bool,
    /// Also run the session over TLS against the same venue (`tick_to_trade_tls`,
    /// `write_floor_tls`, `tick_to_encoded_tls`).
    #[arg(long)]
    pub tls: bool,
    /// Print one JSON object per series per line on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Write a latency-vs-percentile plot of the main series to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
}

/// `--exchange`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExchangeArg {
    InProcess,
    Sim,
}

/// `--pace`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum PaceArg {
    Reply,
    Sleep,
    Spin,
}

/// The exchange side's pacing, shared by the hot loop's run and the baseline's.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pacing {
    pace: Pace,
    gap: Duration,
    reply_timeout: Duration,
    pin_core: Option<usize>,
}

impl Pacing {
    pub(crate) fn config(self, floor_every: u32, ticks: usize) -> ExchangeConfig {
        ExchangeConfig {
            pace: self.pace,
            gap: self.gap,
            reply_timeout: self.reply_timeout,
            floor_every,
            ticks,
            pin_core: self.pin_core,
        }
    }

    fn describe(self) -> String {
        match self.pace {
            Pace::Reply => format!("closed loop (next tick when the order is read, timeout {:?})", self.reply_timeout),
            Pace::Sleep => format!("gap {}µs (sleep)", self.gap.as_micros()),
            Pace::Spin => format!("gap {}µs (spin)", self.gap.as_micros()),
        }
    }
}

/// What one side of the comparison measured.
pub(crate) struct SideResult {
    pub(crate) recorded: Recorded,
    pub(crate) exchange: ExchangeReport,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let spec = btc_perpetual().map_err(|e| anyhow!("spec: {e}"))?;
    if args.exchange == ExchangeArg::Sim {
        return run_sim(&args, &spec);
    }
    let ticks = usize::try_from(args.ticks).context("--ticks")?;
    let per = usize::try_from(args.levels_per_frame).context("--levels-per-frame")?;
    let feed = Arc::new(SyntheticFeed::generate(&spec, ticks, per));
    let clock = TscClock::new();
    let pacing = Pacing {
        pace: match args.pace {
            PaceArg::Reply => Pace::Reply,
            PaceArg::Sleep => Pace::Sleep,
            PaceArg::Spin => Pace::Spin,
        },
        gap: Duration::from_micros(args.gap_us),
        reply_timeout: Duration::from_micros(args.reply_timeout_us),
        pin_core: args.exchange_core,
    };

    let options = session::RunOptions {
        tls: false,
        risk: true,
        every: args.every,
        floor_every: args.floor_every,
        reply_timeout: pacing.reply_timeout,
        pin_core: args.pin_core,
        pause: pacing.pace,
        gap: pacing.gap,
        busy_poll: args.busy_poll,
    };
    let plain = session::run(&spec, &feed, &clock, options)?;
    let risk_off = session::run(&spec, &feed, &clock, session::RunOptions { risk: false, ..options })?;
    let tls = if args.tls {
        Some(session::run(&spec, &feed, &clock, session::RunOptions { tls: true, ..options })?)
    } else {
        None
    };
    let base = if args.no_baseline { None } else { Some(baseline::run(&spec, &feed, &clock, pacing, args.every)?) };

    let mut series = build_series(&plain, base.as_ref());
    let r = &risk_off.recorded;
    series.push(Series::from_histogram("tick_to_trade_risk_off", r.stages.tick_to_trade()));
    series.push(Series::from_histogram("tick_to_encoded_risk_off", &r.tick_to_encoded));
    if let Some(tls) = &tls {
        let r = &tls.recorded;
        series.push(Series::from_histogram("tick_to_trade_tls", r.stages.tick_to_trade()));
        series.push(Series::from_histogram("tick_to_encoded_tls", &r.tick_to_encoded));
        series.push(Series::from_histogram("write_floor_tls", &r.write_floor));
    }
    series.retain(|s| s.percentiles.count > 0);
    if args.in_memory {
        let evict_kb = usize::try_from(args.evict_kb).context("--evict-kb")?;
        series.extend(in_memory::run(&spec, &feed, &clock, options, evict_kb)?);
    }
    let mean_frame = feed.changes.iter().map(Vec::len).sum::<usize>() / feed.changes.len().max(1);
    let mut notes = format!(
        "ticktrade bench tick-to-trade: {ticks} ticks of {per} levels (mean {mean_frame} B) on 127.0.0.1, \
         {}, every {} tick(s); the live session (ticktrade run's), risk checks and order state on{}: {} reads{}{}\n",
        pacing.describe(),
        args.every,
        if args.tls { ", plain then TLS" } else { "" },
        if args.busy_poll { "busy-polling" } else { "blocking" },
        match (args.pin_core, plain.pinned) {
            (Some(core), true) => format!(", pinned to core {core}"),
            (Some(core), false) => format!(", pinning to core {core} FAILED"),
            (None, _) => String::new(),
        } + &args.exchange_core.map(|core| format!(", exchange side on core {core}")).unwrap_or_default(),
        if base.is_some() { "; baseline: tokio + tungstenite + serde_json Value + BTreeMap + format!" } else { "" },
    );
    for (name, run) in [("plain", Some(&plain)), ("risk off", Some(&risk_off)), ("tls", tls.as_ref())] {
        let Some(run) = run else { continue };
        let _ = writeln!(
            notes,
            "{name}: places {} edits {} rejects {} (venue saw {} orders, waits timed out {}), gaps {}, floor probes {}",
            run.stats.places,
            run.stats.edits,
            run.stats.rejects,
            run.venue.orders,
            run.venue.unanswered,
            run.stats.gaps,
            run.venue.floor_probes,
        );
    }
    let p50 = |name: &str| series.iter().find(|s| s.name == name).map(|s| s.percentiles.p50);
    if let (Some(t2t), Some(floor)) = (p50("tick_to_trade"), p50("write_floor"))
        && floor > 0
    {
        let _ = writeln!(notes, "tick_to_trade p50 / write_floor p50 = {:.2}", t2t as f64 / floor as f64);
    }
    if let (Some(on), Some(off)) = (p50("tick_to_encoded"), p50("tick_to_encoded_risk_off"))
        && off > 0
    {
        let _ = writeln!(notes, "tick_to_encoded p50, risk on / off = {:.2}", on as f64 / off as f64);
    }
    if let (Some(tls), Some(plain)) = (p50("tick_to_trade_tls"), p50("tick_to_trade")) {
        let _ = writeln!(notes, "tick_to_trade p50, TLS - plain = {} ns", tls as i64 - plain as i64);
    }
    emit(&notes, &series, args.json, args.plot.as_deref(), "ticktrade bench tick-to-trade (loopback)")?;
    Ok(ExitCode::SUCCESS)
}

/// `--exchange sim`: the live session against the embedded simulator until `--ticks` orders
/// (plain, then TLS with `--tls`).
fn run_sim(args: &Args, spec: &ticktrade_core::InstrumentSpec) -> anyhow::Result<ExitCode> {
    let options = session::RunOptions {
        tls: false,
        risk: true,
        every: args.every,
        floor_every: 0,
        reply_timeout: Duration::from_micros(args.reply_timeout_us),
        pin_core: args.pin_core,
        pause: Pace::Reply,
        gap: Duration::ZERO,
        busy_poll: args.busy_poll,
    };
    let plain = sim::run(spec, args.ticks, args.sim_rate, options)?;
    let tls = if args.tls {
        Some(sim::run(spec, args.ticks, args.sim_rate, session::RunOptions { tls: true, ..options })?)
    } else {
        None
    };
    let mut series = Vec::new();
    for (suffix, run) in [("", Some(&plain)), ("_tls", tls.as_ref())] {
        let Some(run) = run else { continue };
        let r = &run.recorded;
        series.push(Series::from_histogram(format!("tick_to_trade{suffix}"), r.stages.tick_to_trade()));
        series.push(Series::from_histogram(format!("tick_to_encoded{suffix}"), &r.tick_to_encoded));
        if suffix.is_empty() {
            for (stage, name) in STAGE_SERIES {
                if let Some(h) = r.stages.stage(stage) {
                    series.push(Series::from_histogram(name, h));
                }
            }
        }
    }
    series.retain(|s| s.percentiles.count > 0);
    let mut notes = format!(
        "ticktrade bench tick-to-trade --exchange sim: the live session against the embedded simulator on 127.0.0.1 \
         ({} market events/s){}, book.BTC-PERPETUAL.raw, every {} tick(s); no write_floor, exchange view or baseline \
         (the simulator cannot give them)\n",
        args.sim_rate,
        if args.tls { ", plain then TLS" } else { "" },
        args.every,
    );
    for (name, run) in [("plain", Some(&plain)), ("tls", tls.as_ref())] {
        let Some(run) = run else { continue };
        let s = &run.stats;
        let _ = writeln!(
            notes,
            "{name}: places {} edits {} rejects {} (simulator counted {} orders), book frames {}, gaps {}, malformed {}",
            s.places, s.edits, s.rejects, run.sim_orders, s.book_frames, s.gaps, s.malformed
        );
    }
    emit(&notes, &series, args.json, args.plot.as_deref(), "ticktrade bench tick-to-trade (simulator, loopback)")?;
    Ok(ExitCode::SUCCESS)
}

fn build_series(hot: &session::SessionRun, base: Option<&SideResult>) -> Vec<Series> {
    let with = |series: Series, baseline: Option<&Histogram>| match baseline {
        Some(h) if !h.is_empty() => series.with_baseline_p50(h.percentiles().p50),
        _ => series,
    };
    let r = &hot.recorded;
    let b = base.map(|b| &b.recorded);
    let mut out = vec![
        with(Series::from_histogram("tick_to_trade", r.stages.tick_to_trade()), b.map(|b| b.stages.tick_to_trade())),
        with(Series::from_histogram("tick_to_encoded", &r.tick_to_encoded), b.map(|b| &b.tick_to_encoded)),
        Series::from_histogram("write_floor", &r.write_floor),
        with(
            Series::from_histogram("exchange_tick_to_order", &hot.venue.tick_to_order),
            base.map(|b| &b.exchange.tick_to_order),
        ),
    ];
    for (stage, name) in STAGE_SERIES {
        if let Some(h) = r.stages.stage(stage) {
            out.push(with(Series::from_histogram(name, h), b.and_then(|b| b.stages.stage(stage))));
        }
    }
    if let Some(b) = b {
        out.push(Series::from_histogram("baseline_tick_to_trade", b.stages.tick_to_trade()));
        out.push(Series::from_histogram("baseline_tick_to_encoded", &b.tick_to_encoded));
    }
    out.retain(|s| s.percentiles.count > 0);
    out
}

/// The common output (table, `--json` lines, `--plot` SVG), shared by every benchmark
/// (`bench order` reaches it through here).
pub(crate) use super::report::emit;
