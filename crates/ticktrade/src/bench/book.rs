//! `ticktrade bench book`: L2 delta apply, ticktrade's `L2Book` against a `BTreeMap<i64, i64>`
//! per side on the same Deribit-shaped stream in the same run; the cost of all seven
//! Hyperliquid aggregations of the finished book; and apply on a 100 000-level book.
//!
//! Owns: timing (`Instant`, this is the I/O side), the baseline, the equality check, output.
//! Apply is timed per batch of `BATCH` deltas, so the table shows the spread of ns/delta over
//! every batch of every pass; the summary figures are the medians over all those batches
//! (whole-pass means are printed beside them in the notes).
//!
//! `--json` prints the one summary object first (`ticktrade_ns_per_delta`,
//! `baseline_ns_per_delta`, `ratio`, `aggregate_all_variants_ns`, `deep_book_ns_per_delta`),
//! then one line per series (`book_apply`, `book_apply_btreemap`, `book_apply_deep`,
//! `book_aggregate_all_variants`), as every benchmark does (`report`).
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

use super::report::{Outcome, Output, emit_outcome, series_of_samples};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    output: Output,
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
/// Deltas timed together for one ns/delta sample.
const BATCH: usize = 1024;

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let n_deltas = usize::try_from(args.deltas).context("--deltas")?;
    let passes = usize::try_from(args.passes).context("--passes")?;

    let shallow = Workload::generate(WorkloadParams::btc_perpetual(n_deltas));
    let (tt, finished) = time_ticktrade(&shallow, passes)?;
    let (base, baseline) = time_baseline(&shallow, passes)?;
    check_same(&finished, &baseline).context("ticktrade and the BTreeMap baseline disagree")?;
    let agg_samples = time_aggregation(&finished)?;
    let agg_ns = median(agg_samples.clone());

    let deep = Workload::generate(WorkloadParams::deep(n_deltas));
    let (deep, deep_book) = time_ticktrade(&deep, passes)?;
    let deep_depth = deep_book.depth(Side::Buy) + deep_book.depth(Side::Sell);

    // The summary is the median ns/delta over every batch of every pass: a pass's mean would
    // carry whatever preemption hit it (the machine is shared); the per-pass medians are in the
    // notes beside it.
    let (tt_ns, base_ns, deep_ns) =
        (median(tt.per_batch.clone()), median(base.per_batch.clone()), median(deep.per_batch.clone()));
    let ratio = base_ns / tt_ns;
    let summary = serde_json::json!({
        "ticktrade_ns_per_delta": tt_ns,
        "baseline_ns_per_delta": base_ns,
        "ratio": ratio,
        "aggregate_all_variants_ns": agg_ns,
        "deep_book_ns_per_delta": deep_ns,
    });
    let base_series = series_of_samples("book_apply_btreemap", &base.per_batch);
    let series = vec![
        series_of_samples("book_apply", &tt.per_batch).with_baseline_p50(base_series.percentiles.p50),
        base_series,
        series_of_samples("book_apply_deep", &deep.per_batch),
        series_of_samples("book_aggregate_all_variants", &agg_samples),
    ];

    let depth = |b: &L2Book| format!("{}/{}", b.depth(Side::Buy), b.depth(Side::Sell));
    let share = |a: Action| {
        100.0 * shallow.deltas.iter().filter(|u| u.action == a).count() as f64 / shallow.deltas.len() as f64
    };
    let mut notes = format!(
        "ticktrade bench book: {n_deltas} deltas per stream, BTC-PERPETUAL-shaped (tick 0.5), \
         {passes} passes, medians over every batch of {BATCH} deltas\n"
    );
    let mut line = |label: &str, value: String| notes.push_str(&format!("{label:<44} {value:>12}\n"));
    line("L2Book apply, per delta (~600 levels/side)", format!("{tt_ns:.1} ns"));
    line("BTreeMap<i64,i64> baseline, per delta", format!("{base_ns:.1} ns"));
    line("speed-up (baseline / ticktrade)", format!("{ratio:.2}x"));
    line(&format!("all 7 HL aggregations, top {AGG_LEVELS}/side"), format!("{agg_ns:.0} ns"));
    line("L2Book apply, per delta (100k levels/side)", format!("{deep_ns:.1} ns"));
    line("deep / 600-level cost", format!("{:.2}x", deep_ns / tt_ns));
    line(
        "whole-pass means (ticktrade / baseline / deep)",
        format!("{:.1} / {:.1} / {:.1} ns", tt.median_per_pass, base.median_per_pass, deep.median_per_pass),
    );
    notes.push_str(&format!(
        "stream: {:.1}% deletes, {:.1}% changes, {:.1}% new levels\n\
         end state: both books identical; levels bid/ask {} (600-level stream), {} total (deep stream)\n\
         table: ns per delta over batches of {BATCH} deltas (book_apply*), ns per aggregation of all 7 variants\n",
        share(Action::Delete),
        share(Action::Change),
        share(Action::New),
        depth(&finished),
        deep_depth
    ));
    let outcome =
        Outcome { title: "ticktrade bench book (ns per delta)".into(), notes, series, summary: Some(summary) };
    emit_outcome(outcome, &args.output)?;
    Ok(ExitCode::SUCCESS)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs.get(xs.len() / 2).copied().unwrap_or(f64::NAN)
}

/// Apply timings of one stream: the median over passes and every batch's ns/delta.
struct ApplyTimes {
    median_per_pass: f64,
    per_batch: Vec<f64>,
}

/// Times `apply` over the stream in batches of `BATCH`; returns the pass's total ns and adds
/// each batch's ns/delta to `per_batch`. `apply` returns false on a sequencing error.
fn time_pass(
    w: &Workload,
    per_batch: &mut Vec<f64>,
    mut apply: impl FnMut(u64, u64, &LevelUpdate) -> bool,
) -> anyhow::Result<f64> {
    let mut total = 0u128;
    let mut errors = 0usize;
    for (b, batch) in w.deltas.chunks(BATCH).enumerate() {
        let t = Instant::now();
        for (j, u) in batch.iter().enumerate() {
            let (cid, prev) = w.change_ids(b * BATCH + j);
            errors += usize::from(!apply(cid, prev, u));
        }
        let ns = t.elapsed().as_nanos();
        total += ns;
        per_batch.push(ns as f64 / batch.len() as f64);
    }
    anyhow::ensure!(errors == 0, "{errors} deltas refused: the workload is sequenced");
    Ok(total as f64)
}

/// Applies the stream to a fresh `L2Book` `passes` times; returns the timings and the final
/// book.
fn time_ticktrade(w: &Workload, passes: usize) -> anyhow::Result<(ApplyTimes, L2Book)> {
    let mut start_book = L2Book::new();
    start_book.apply_snapshot(w.snapshot_change_id, &w.snapshot);
    let mut samples = Vec::with_capacity(passes);
    let mut per_batch = Vec::with_capacity(passes * w.deltas.len().div_ceil(BATCH));
    let mut last = start_book.clone();
    for _ in 0..passes {
        let mut book = start_book.clone();
        let ns =
            time_pass(w, &mut per_batch, |cid, prev, u| book.apply_change(cid, prev, std::slice::from_ref(u)).is_ok())?;
        black_box(&book);
        samples.push(ns / w.deltas.len() as f64);
        last = book;
    }
    Ok((ApplyTimes { median_per_pass: median(samples), per_batch }, last))
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

fn time_baseline(w: &Workload, passes: usize) -> anyhow::Result<(ApplyTimes, Baseline)> {
    let mut start = Baseline { last_change_id: w.snapshot_change_id, ..Baseline::default() };
    for u in &w.snapshot {
        start.apply(w.snapshot_change_id, w.snapshot_change_id, u);
    }
    let mut samples = Vec::with_capacity(passes);
    let mut per_batch = Vec::with_capacity(passes * w.deltas.len().div_ceil(BATCH));
    let mut last = start.clone();
    for _ in 0..passes {
        let mut book = start.clone();
        let ns = time_pass(w, &mut per_batch, |cid, prev, u| book.apply(cid, prev, u))?;
        black_box(&book);
        samples.push(ns / w.deltas.len() as f64);
        last = book;
    }
    Ok((ApplyTimes { median_per_pass: median(samples), per_batch }, last))
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

/// ns to compute all seven Hyperliquid variants (top 20 per side) of `book`, one sample per
/// repetition, read as prices in whole units (a power-of-ten unit, as Hyperliquid's are).
fn time_aggregation(book: &L2Book) -> anyhow::Result<Vec<f64>> {
    let mut buf = AggregateBuf::new(Decimal::ONE, AGG_LEVELS).context("aggregation buffers")?;
    let mut samples = Vec::with_capacity(AGG_REPS);
    for _ in 0..AGG_REPS {
        let t = Instant::now();
        buf.aggregate_book(black_box(book));
        black_box(&buf);
        samples.push(t.elapsed().as_nanos() as f64);
    }
    Ok(samples)
}
