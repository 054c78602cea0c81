//! `ticktrade bench hl`: the Hyperliquid server's per-block cost and end-to-end latency, beside
//! the way the well-known order_book_server does the same work, in the same run.
//!
//! Owns: the workload (the generator: 229 coins by default, realistic block sizes), the
//! subscriptions (all seven `l2Book` variants for every coin), timing (`Instant`: I/O side),
//! and the output in the common table/JSON format.
//! Must not: compare different inputs: ticktrade and the baseline process the same lines.
//!
//! * **block**: per block, from "both lines in memory" to "every frame queued": decode, apply
//!   to the L4 books, L2 only for coins that changed and only for subscribed variants, encode
//!   (a view whose top levels did not change is skipped; unchanged levels are copied from the
//!   view's previous frame), `try_send` into the bounded per-client queues. Not included: reading
//!   the files and the socket writes, which run on the connection tasks.
//!   The block is also reported by stage (`engine::PHASES`: decode, apply, l2, encode, queue),
//!   as means and as each stage's own p99. Timed on 1 and on 2 threads, 1000 blocks each by
//!   default (so the p99 is the tenth slowest block), with the three slowest blocks and their
//!   stages (one stage inflated by a millisecond is a preempted thread, not a heavier block).
//!   `--rt-priority N` runs each block on the engine's threads under `SCHED_FIFO` as the
//!   server does (`sched::BlockClass`; the generator between blocks stays in the normal class).
//! * **baseline**: per block, decode and apply the same lines to per-coin order maps, clone
//!   every book, and recompute and encode all seven variants for every coin (OBS's
//!   `compute_l2_snapshots` over a cloned `OrderBooks`).
//! * **e2e**: a real server on loopback; a writer thread appends blocks to hourly files every
//!   `--block-ms`; clients (each on its own thread and runtime, as separate processes would
//!   be; `--e2e-shared-runtime` puts them on the server's runtime) receive `l2Book` frames;
//!   latency = start of the block's write → frame received, matched by the block time each
//!   frame carries. The server's own marks split it: both lines in the engine, first and last
//!   frame of the block queued. The file-level floor (start of the write → both lines read by
//!   a notified reader) runs as its own pass afterwards.
//!
//! The host's steal is given by part (1 thread, 2 threads, baseline, e2e).

mod baseline;
pub(crate) mod e2e;

use std::process::ExitCode;

use anyhow::Context;
use ticktrade_core::Utc;
use ticktrade_hl_node::books::Books;
use ticktrade_hl_node::follow::Follower;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::sched;
use ticktrade_hl_node::server::engine::{Engine, EngineConfig, EngineMsg, PHASES};
use ticktrade_hl_node::synth::writer::GenWriter;
use ticktrade_hl_node::synth::{GenBlock, GenConfig, Generator};
use ticktrade_hl_proto::info::{Meta, SpotMeta, coins_from_meta};
use ticktrade_hl_proto::snapshot::Snapshot;
use ticktrade_hl_proto::ws::{ClientMessage, L2Variant};
use ticktrade_latency::{Histogram, Series};

use super::host::StealByPart;
use super::report::{Outcome, Output, emit_outcome};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Coins in the generated market.
    #[arg(long, default_value_t = 229)]
    coins: usize,
    /// Order actions per block (see `ticktrade hl gen`).
    #[arg(long, default_value_t = 600)]
    orders_per_block: usize,
    /// Timed blocks for the per-block figures. 1000 so that their p99 is the tenth slowest
    /// block, not the third of 300 (one host hiccup more or less moved it by half a millisecond).
    #[arg(long, default_value_t = 1000)]
    blocks: u64,
    /// Blocks written in the end-to-end run.
    #[arg(long, default_value_t = 300)]
    e2e_blocks: u64,
    /// Interval between blocks in the end-to-end run.
    #[arg(long, default_value_t = 50)]
    block_ms: u64,
    /// Run the end-to-end clients as tasks on the server's runtime (the earlier layout) instead
    /// of each on its own thread like separate client processes.
    #[arg(long)]
    e2e_shared_runtime: bool,
    /// Run each block on the engine's threads under `SCHED_FIFO` at this priority (1-99; needs
    /// root or CAP_SYS_NICE), as `ticktrade hl --rt-priority` does: the engine thread and its
    /// helper switch to it at the start of each block and back to the normal class at its end
    /// (per-block runs: the generator between blocks stays in the normal class).
    #[arg(long, value_name = "1-99", value_parser = clap::value_parser!(u8).range(1..=99))]
    rt_priority: Option<u8>,
    #[command(flatten)]
    output: Output,
    #[arg(long, default_value_t = 7)]
    seed: u64,
}

pub(crate) fn generator(args: &Args) -> Generator {
    Generator::new(&GenConfig {
        seed: args.seed,
        n_coins: args.coins,
        orders_per_block: args.orders_per_block,
        ..GenConfig::default()
    })
}

/// Books loaded from the generator's snapshot, with its metadata.
pub(crate) fn books_of(generator: &Generator) -> anyhow::Result<Books> {
    let (meta, spot) = generator.meta_json();
    let meta: Meta = serde_json::from_str(&meta)?;
    let spot: SpotMeta = serde_json::from_str(&spot)?;
    let mut books = Books::new(&coins_from_meta(&meta, Some(&spot)));
    let text = generator.snapshot_json();
    books.load_snapshot(&Snapshot::parse(text.as_bytes())?, Utc::from_nanos(0))?;
    Ok(books)
}

/// Every coin × every variant, as `subscribe` requests.
pub(crate) fn all_subscriptions(generator: &Generator) -> Vec<String> {
    let mut out = Vec::new();
    for coin in generator.coins() {
        for v in L2Variant::ALL {
            let mantissa = (v.mantissa() > 1).then_some(v.mantissa());
            out.push(serde_json::json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": coin.name, "nSigFigs": v.n_sig_figs(), "mantissa": mantissa}}).to_string());
        }
    }
    out
}

pub(crate) const T0_NS: i64 = 1_777_582_800_000_000_000;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let tmp = std::env::temp_dir().join(format!("ticktrade-bench-hl-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    let result = run_in(&args, &tmp);
    let _ = std::fs::remove_dir_all(&tmp);
    result
}

/// Per-block figures of one engine configuration (`bench hl`'s step 1).
struct PerBlock {
    hist: Histogram,
    /// Stage means and each stage's own p99 (`engine::PHASES`).
    phases: [u64; 5],
    phase_p99: [u64; 5],
    views_aggregated: f64,
    coins_changed: f64,
    n_frames: u64,
    n_statuses: u64,
    n_diffs: u64,
    /// Every block processed (warm-up included), for the baseline.
    blocks: Vec<GenBlock>,
    /// With two threads: when the helper started its half of the decode and of the coins, and
    /// how far apart the two threads finished the coins.
    helper: String,
    /// The three slowest timed blocks, each with its stages and size, to tell a heavier block
    /// from a slower host (every stage up) or one late thread (one stage up).
    slowest: String,
}

const WARMUP: u64 = 20;

/// ticktrade's engine on `threads` threads, driven synchronously (this thread is its engine
/// thread) over the generator's blocks written under `tmp`.
fn per_block(args: &Args, tmp: &std::path::Path, threads: usize) -> anyhow::Result<PerBlock> {
    let mut generator = generator(args);
    let books = books_of(&generator)?;
    let followers = Stream::ALL.iter().map(|&s| {
        let mut f = Follower::new(tmp, s);
        f.seek_height(books.height()).map(|()| f)
    });
    let followers = followers.collect::<Result<Vec<_>, _>>().context("followers")?;
    let mut engine = Engine::new(EngineConfig { threads, ..EngineConfig::default() }, books, followers);
    engine.record_timings(true);
    if let Some(priority) = args.rt_priority {
        let class = sched::BlockClass::new(priority).context("--rt-priority")?;
        class.probe().context("--rt-priority")?;
        engine.realtime_blocks(class);
    }
    let rx = ticktrade_hl_node::server::publish::client_queue(1 << 20);
    let tx = std::sync::Arc::clone(&rx);
    let (kill, _killed) = tokio::sync::oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 1, tx, kill });
    for text in all_subscriptions(&generator) {
        let message = ClientMessage::parse(&text)?;
        engine.handle(EngineMsg::Request { id: 1, message, text });
    }
    rx.take_queued();
    let mut writer = GenWriter::new(tmp);
    let warmup = WARMUP;
    let mut blocks: Vec<GenBlock> = Vec::new();
    let (mut n_frames, mut n_statuses, mut n_diffs) = (0u64, 0u64, 0u64);
    for i in 0..warmup + args.blocks {
        let block = generator.next_block(Utc::from_nanos(T0_NS + i as i64 * 100_000_000));
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills])?;
        engine.poll_files();
        let mut frames = 0;
        for item in rx.take_queued() {
            frames += item.len() as u64;
        }
        if i >= warmup {
            n_frames += frames;
            n_statuses += block.statuses.matches("\"status\":").count() as u64;
            n_diffs += block.diffs.matches("\"raw_book_diff\":").count() as u64;
        }
        blocks.push(block);
    }
    let stats = engine.stats();
    let stats = stats.lock().map_err(|_| anyhow::anyhow!("stats poisoned"))?;
    // Every block's engine thread ran real-time, and the helper in every timed block (it records
    // itself as it starts, during the first block).
    let (raised, helper_raised) = stats.realtime_blocks;
    anyhow::ensure!(
        args.rt_priority.is_none()
            || (raised == warmup + args.blocks && (threads == 1 || helper_raised + warmup >= raised)),
        "--rt-priority: {raised} blocks of {} ran real-time, {helper_raised} with the helper",
        warmup + args.blocks
    );
    anyhow::ensure!(
        engine.threads_used() == threads,
        "the engine ran on {} threads, not {threads}",
        engine.threads_used()
    );
    anyhow::ensure!(
        stats.reports.is_empty(),
        "engine reported problems: {:?}",
        &stats.reports[..stats.reports.len().min(3)]
    );
    let mut hist = Histogram::new();
    for &ns in stats.block_ns.iter().skip(warmup as usize) {
        hist.record(ns);
    }
    let timed = stats.phase_ns.get(warmup as usize..).unwrap_or(&[]);
    let n = timed.len().max(1) as u64;
    let mut sum = [0u64; 5];
    for p in timed {
        for (s, x) in sum.iter_mut().zip(p) {
            *s += x;
        }
    }
    let mut phase_p99 = [0u64; 5];
    for (i, p99) in phase_p99.iter_mut().enumerate() {
        let mut h = Histogram::new();
        for p in timed {
            h.record(p[i]);
        }
        *p99 = h.percentiles().p99;
    }
    let aggregated = stats.views_aggregated.get(warmup as usize..).unwrap_or(&[]);
    let changed = stats.coins_changed.get(warmup as usize..).unwrap_or(&[]);
    let starts = stats.helper_start_ns.get(warmup as usize..).unwrap_or(&[]);
    let helper = ["decode", "coins"]
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let mut h = Histogram::new();
            for s in starts.iter().filter(|s| s[i] != u64::MAX) {
                h.record(s[i]);
            }
            let p = h.percentiles();
            let (p50, p99) = (ticktrade_latency::Human(p.p50), ticktrade_latency::Human(p.p99));
            format!("{name}: in {} of {} blocks, after p50 {p50} p99 {p99}", h.count(), starts.len())
        })
        .collect::<Vec<_>>()
        .join("; ");
    let gaps = stats.coins_end_gap_ns.get(warmup as usize..).unwrap_or(&[]);
    let mut h = Histogram::new();
    for &g in gaps.iter().filter(|&&g| g != u64::MAX) {
        h.record(g);
    }
    let p = h.percentiles();
    let helper = format!(
        "{helper}; the two threads ran out of coins apart by p50 {} p99 {} (in {} blocks)",
        ticktrade_latency::Human(p.p50),
        ticktrade_latency::Human(p.p99),
        h.count()
    );
    let block_ns = stats.block_ns.get(warmup as usize..).unwrap_or(&[]);
    let mut order: Vec<usize> = (0..block_ns.len()).collect();
    order.sort_unstable_by_key(|&i| std::cmp::Reverse(block_ns[i]));
    let slowest = order
        .iter()
        .take(3)
        .map(|&i| {
            let split = timed.get(i).map_or(String::new(), |p| {
                p.iter().map(|&ns| ticktrade_latency::Human(ns).to_string()).collect::<Vec<_>>().join("/")
            });
            format!(
                "{} ({split}; {} coins, {} views{})",
                ticktrade_latency::Human(block_ns[i]),
                changed.get(i).copied().unwrap_or(0),
                aggregated.get(i).copied().unwrap_or(0),
                starts.get(i).map_or(String::new(), |&s| format!("; {}", helper_part(s)))
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    // A block over 1 ms that the helper took no part in was done by the engine thread alone:
    // the helper's CPU was taken when it started (see `hl_node::sched`).
    let over: Vec<usize> = (0..block_ns.len()).filter(|&i| block_ns[i] > 1_000_000).collect();
    let alone = over.iter().filter(|&&i| starts.get(i).is_some_and(|&s| took_no_part(s))).count();
    let slowest = if threads == 2 {
        format!("{slowest}; {} blocks over 1 ms, {alone} of them without the helper", over.len())
    } else {
        slowest
    };
    Ok(PerBlock {
        slowest,
        hist,
        phases: sum.map(|s| s / n),
        phase_p99,
        views_aggregated: aggregated.iter().sum::<u64>() as f64 / aggregated.len().max(1) as f64,
        coins_changed: changed.iter().sum::<u64>() as f64 / changed.len().max(1) as f64,
        n_frames,
        n_statuses,
        n_diffs,
        blocks,
        helper,
    })
}

/// When the helper started its share of a block's decode and of its coins
/// (`EngineStats::helper_start_ns`), or that it took no part.
fn helper_part(starts @ [decode, coins]: [u64; 2]) -> String {
    let at = |ns: u64| if ns == u64::MAX { "-".to_owned() } else { ticktrade_latency::Human(ns).to_string() };
    if took_no_part(starts) {
        "the helper took no part".to_owned()
    } else {
        format!("helper in after {}/{}", at(decode), at(coins))
    }
}

/// The helper started neither its share of the decode nor of the coins (the engine thread ran
/// the block alone).
fn took_no_part(starts: [u64; 2]) -> bool {
    starts == [u64::MAX; 2]
}

fn run_in(args: &Args, tmp: &std::path::Path) -> anyhow::Result<ExitCode> {
    // 1. Per-block processing, ticktrade's engine driven synchronously: on one thread, then
    // on two (the same lines: the generator is seeded).
    // The host's steal is read around each run (`host`): the tail of a run is read beside it.
    let mut steal = StealByPart::default();
    let one = steal.during("1-thread run", || per_block(args, &tmp.join("one"), 1))?;
    let two = steal.during("2-thread run", || per_block(args, &tmp.join("two"), 2))?;
    let mut baseline = baseline::Baseline::new(&books_of(&generator(args))?);
    let warmup = WARMUP;
    let blocks = &one.blocks;
    anyhow::ensure!(one.n_frames == two.n_frames, "1 thread sent {} frames, 2 threads {}", one.n_frames, two.n_frames);
    // 2. The baseline on the same lines.
    let base = steal.during("baseline", || -> anyhow::Result<Histogram> {
        let mut base = Histogram::new();
        for (i, block) in blocks.iter().enumerate() {
            let ns = baseline.block(block)?;
            if i >= warmup as usize {
                base.record(ns);
            }
        }
        Ok(base)
    })?;
    // 3. End to end through a real server.
    let e2e = steal.during("e2e", || e2e::run(args, &tmp.join("e2e")))?;

    let per = |n: u64| n as f64 / args.blocks.max(1) as f64;
    let base_p50 = base.percentiles().p50;
    let mut series = vec![
        Series::from_histogram("hl block: ticktrade (1 thread)", &one.hist).with_baseline_p50(base_p50),
        Series::from_histogram("hl block: ticktrade (2 threads)", &two.hist).with_baseline_p50(base_p50),
        Series::from_histogram("hl block: baseline (clone all books, 7 variants x all coins)", &base),
    ];
    series.extend(e2e.series);
    let default = EngineConfig::default_threads();
    let (main, other) = if default == 2 { (&two, &one) } else { (&one, &two) };
    let stages = |v: [u64; 5]| {
        PHASES
            .iter()
            .zip(v)
            .map(|(name, ns)| format!("{name} {}", ticktrade_latency::Human(ns)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let notes = format!(
        "hl block covers: both lines of the block in memory -> every l2Book frame queued (decode, apply to L4, L2 of changed coins x subscribed variants, encode, try_send); not the file read, not the socket writes (connection tasks)\n\
         engine threads scheduled: {}\n\
         hl block: ticktrade on 1 thread, and on 2 (the engine's and one helper: the two lines decoded at once, then each takes the next changed coin until none is left); the e2e server runs the default ({} threads here)\n\
         ticktrade per block, stage mean, {default} thread(s): {}\n\
         ticktrade per block, stage p99 (each on its own), {default} thread(s): {}\n\
         ticktrade per block, stage mean, the other: {}; with 2 threads apply/l2/encode/queue are summed over both threads\n\
         2 threads, the helper started its half of {}\n\
         slowest blocks, {default} thread(s) (decode/apply/l2/encode/queue; coins changed, views aggregated; when the helper started its decode/coins): {}\n\
         host steal by part of this benchmark (the whole run below): {}\n\
         {} coins, {} l2Book subscriptions; per block: {:.0} statuses, {:.0} diffs, {:.1} coins changed ({:.0} views of theirs subscribed), {:.0} views aggregated (the others kept by the touched-range rule), {:.0} l2Book frames (ticktrade) vs {} (baseline); e2e: {} blocks every {} ms, {} frames\n",
        match args.rt_priority {
            Some(p) => format!(
                "SCHED_FIFO priority {p} during each block, the normal class between blocks (--rt-priority; the baseline and the generator in the normal class)"
            ),
            None => "normal class (no --rt-priority)".to_owned(),
        },
        EngineConfig::default_threads(),
        stages(main.phases),
        stages(main.phase_p99),
        stages(other.phases),
        two.helper,
        main.slowest,
        steal,
        args.coins,
        args.coins * 7,
        per(main.n_statuses),
        per(main.n_diffs),
        main.coins_changed,
        main.coins_changed * 7.0,
        main.views_aggregated,
        per(main.n_frames),
        args.coins * 7,
        args.e2e_blocks,
        args.block_ms,
        e2e.n_frames,
    );
    let outcome = Outcome { title: "ticktrade bench hl".into(), notes, series, summary: None };
    emit_outcome(outcome, &args.output)?;
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::helper_part;

    #[test]
    fn a_block_says_when_its_helper_started_or_that_it_took_no_part() {
        assert_eq!(helper_part([u64::MAX, u64::MAX]), "the helper took no part");
        assert_eq!(helper_part([3_000, 900]), "helper in after 3.00µs/900ns");
        assert_eq!(helper_part([u64::MAX, 450_000]), "helper in after -/450µs");
    }
}
