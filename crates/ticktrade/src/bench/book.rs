//! `ticktrade bench book`: L2 delta apply, ticktrade's `L2Book` against a `BTreeMap<i64, i64>`
//! per side on the same Deribit-shaped stream in the same run; the cost of all seven
//! Hyperliquid aggregations of the finished book; and apply on a 100 000-level book.
//!
//! Owns: timing (`Instant`, this is the I/O side), the baseline, the equality check, output.
//! Must not: change what it measures between runs: the stream is seeded (`workload`).

use std::collections::BTreeMap;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use ticktrade_book::aggregate::AggregateBuf;
use ticktrade_book::l2::{Action, L2Book, Level, LevelUpdate};
use ticktrade_book::workload::{Workload, WorkloadParams};
use ticktrade_core::{Decimal, Side};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Deltas per stream (each delta is one level update).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    deltas: u64,
    /// Timed passes over each stream; the median is reported.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u64).range(5..))]
    passes: u64,
}

/// Levels per side and variant in the aggregation figure (Hyperliquid's default `nLevels`).
const AGG_LEVELS: usize = 20;
/// Timed repetitions of the aggregation.
const AGG_REPS: usize = 2001;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let n_deltas = usize::try_from(args.deltas).context("--deltas")?;
    let passes = usize::try_from(args.passes).context("--passes")?;

    let shallow = Workload::generate(WorkloadParams::btc_perpetual(n_deltas));
    let (tt_ns, finished) = time_ticktrade(&shallow, passes);
    let (base_ns, baseline) = time_baseline(&shallow, passes);
    check_same(&finished, &baseline).context("ticktrade and the BTreeMap baseline disagree")?;
    let agg_ns = time_aggregation(&finished)?;

    let deep = Workload::generate(WorkloadParams::deep(n_deltas));
    let (deep_ns, deep_book) = time_ticktrade(&deep, passes);
    let deep_depth = deep_book.depth(Side::Buy) + deep_book.depth(Side::Sell);

    let ratio = base_ns / tt_ns;
    if args.json {
        let out = serde_json::json!({
            "ticktrade_ns_per_delta": tt_ns,
            "baseline_ns_per_delta": base_ns,
            "ratio": ratio,
            "aggregate_all_variants_ns": agg_ns,
            "deep_book_ns_per_delta": deep_ns,
        });
        println!("{out}");
    } else {
        let depth = |b: &L2Book| format!("{}/{}", b.depth(Side::Buy), b.depth(Side::Sell));
        println!(
            "ticktrade bench book: {n_deltas} deltas per stream, BTC-PERPETUAL-shaped (tick 0.5), \
             median of {passes} passes"
        );
        println!("{:<44} {:>12}", "measure", "median");
        println!("{:<44} {:>9.1} ns", "L2Book apply, per delta (~600 levels/side)", tt_ns);
        println!("{:<44} {:>9.1} ns", "BTreeMap<i64,i64> baseline, per delta", base_ns);
        println!("{:<44} {:>10.2}x", "speed-up (baseline / ticktrade)", ratio);
        println!("{:<44} {:>9.0} ns", format!("all 7 HL aggregations, top {AGG_LEVELS}/side"), agg_ns);
        println!("{:<44} {:>9.1} ns", "L2Book apply, per delta (100k levels/side)", deep_ns);
        println!("{:<44} {:>10.2}x", "deep / 600-level cost", deep_ns / tt_ns);
        let share = |a: Action| {
            100.0 * shallow.deltas.iter().filter(|u| u.action == a).count() as f64 / shallow.deltas.len() as f64
        };
        println!(
            "stream: {:.1}% deletes, {:.1}% changes, {:.1}% new levels",
            share(Action::Delete),
            share(Action::Change),
            share(Action::New)
        );
        println!(
            "end state: both books identical; levels bid/ask {} (600-level stream), {} total (deep stream)",
            depth(&finished),
            deep_depth
        );
    }
    Ok(ExitCode::SUCCESS)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// Applies the stream to a fresh `L2Book` `passes` times; returns the median ns per delta
/// and the final book.
fn time_ticktrade(w: &Workload, passes: usize) -> (f64, L2Book) {
    let mut start_book = L2Book::new();
    start_book.apply_snapshot(w.snapshot_change_id, &w.snapshot);
    let mut samples = Vec::with_capacity(passes);
    let mut last = start_book.clone();
    for _ in 0..passes {
        let mut book = start_book.clone();
        let t = Instant::now();
        let mut errors = 0usize;
        for (i, u) in w.deltas.iter().enumerate() {
            let (cid, prev) = w.change_ids(i);
            errors += usize::from(book.apply_change(cid, prev, std::slice::from_ref(u)).is_err());
        }
        black_box(&book);
        samples.push(t.elapsed().as_nanos() as f64 / w.deltas.len() as f64);
        assert_eq!(errors, 0, "the workload is sequenced");
        last = book;
    }
    (median(samples), last)
}

/// The baseline: one `BTreeMap<price, qty>` per side and the same sequence check.
#[derive(Clone, Default)]
struct Baseline {
    bids: BTreeMap<i64, i64>,
    asks: BTreeMap<i64, i64>,
    last_change_id: u64,
}

impl Baseline {
    #[inline]
    fn apply(&mut self, change_id: u64, prev: u64, u: &LevelUpdate) -> bool {
        if prev != self.last_change_id {
            return false;
        }
        let side = match u.side {
            Side::Buy => &mut self.bids,
            Side::Sell => &mut self.asks,
        };
        match u.action {
            Action::Delete => {
                side.remove(&u.price.raw());
            }
            Action::New | Action::Change if u.qty.raw() > 0 => {
                side.insert(u.price.raw(), u.qty.raw());
            }
            Action::New | Action::Change => {
                side.remove(&u.price.raw());
            }
        }
        self.last_change_id = change_id;
        true
    }
}

fn time_baseline(w: &Workload, passes: usize) -> (f64, Baseline) {
    let mut start = Baseline { last_change_id: w.snapshot_change_id, ..Baseline::default() };
    for u in &w.snapshot {
        start.apply(w.snapshot_change_id, w.snapshot_change_id, u);
    }
    let mut samples = Vec::with_capacity(passes);
    let mut last = start.clone();
    for _ in 0..passes {
        let mut book = start.clone();
        let t = Instant::now();
        let mut errors = 0usize;
        for (i, u) in w.deltas.iter().enumerate() {
            let (cid, prev) = w.change_ids(i);
            errors += usize::from(!book.apply(cid, prev, u));
        }
        black_box(&book);
        samples.push(t.elapsed().as_nanos() as f64 / w.deltas.len() as f64);
        assert_eq!(errors, 0, "the workload is sequenced");
        last = book;
    }
    (median(samples), last)
}

fn check_same(book: &L2Book, baseline: &Baseline) -> anyhow::Result<()> {
    let tt_bids: Vec<Level> = book.levels(Side::Buy).collect();
    let tt_asks: Vec<Level> = book.levels(Side::Sell).collect();
    let to_levels =
        |it: &mut dyn Iterator<Item = (&i64, &i64)>| -> Vec<(i64, i64)> { it.map(|(&p, &q)| (p, q)).collect() };
    let base_bids = to_levels(&mut baseline.bids.iter().rev());
    let base_asks = to_levels(&mut baseline.asks.iter());
    let raw = |v: &[Level]| v.iter().map(|l| (l.price.raw(), l.qty.raw())).collect::<Vec<_>>();
    if raw(&tt_bids) != base_bids {
        bail!("bids differ: {} levels vs {}", tt_bids.len(), base_bids.len());
    }
    if raw(&tt_asks) != base_asks {
        bail!("asks differ: {} levels vs {}", tt_asks.len(), base_asks.len());
    }
    if book.last_change_id() != Some(baseline.last_change_id) {
        bail!("last change ids differ");
    }
    Ok(())
}

/// Median ns to compute all seven Hyperliquid variants (top 20 per side) of `book`, read as
/// prices in whole units (a power-of-ten unit, as Hyperliquid's are).
fn time_aggregation(book: &L2Book) -> anyhow::Result<f64> {
    let mut buf = AggregateBuf::new(Decimal::ONE, AGG_LEVELS).context("aggregation buffers")?;
    let mut samples = Vec::with_capacity(AGG_REPS);
    for _ in 0..AGG_REPS {
        let t = Instant::now();
        buf.aggregate_book(black_box(book));
        black_box(&buf);
        samples.push(t.elapsed().as_nanos() as f64);
    }
    Ok(median(samples))
}
