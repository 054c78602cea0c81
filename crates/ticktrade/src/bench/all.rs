//! `ticktrade bench all --report DIR [--quick]`: every benchmark in turn, in this process, with
//! a progress bar on stderr; then `DIR/REPORT.md` (machine, command, one section per benchmark
//! with its table, baseline and ratio, goals met or missed, and its plot `DIR/<bench>.svg`
//! linked) and `DIR/results.jsonl` (every benchmark's `--json` lines, each with a `bench` key).
//!
//! Owns: the list of benchmarks with their sizes (full and `--quick`) and goals (each named by
//! what it measures, as `docs/PERFORMANCE.md` names it), the machine description and the
//! report's layout.
//! Must not: measure anything itself: each benchmark runs through its own `run`, parsed from the
//! same command line a person would type (quoted in the report), and hands its `Outcome` over
//! through `report::capture`. A benchmark that fails is reported as failed; the others still run
//! (an error is caught always; a panic only in builds that unwind: release builds abort).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime};

use anyhow::Context as _;
use indicatif::{ProgressBar, ProgressStyle};
use ticktrade_core::time::civil::civil_from_days;
use ticktrade_latency::{Human, Series};

use super::report::{Outcome, capture, markdown_table, with_newline};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Directory for REPORT.md, results.jsonl and one SVG plot per benchmark (created if missing).
    #[arg(long, value_name = "DIR")]
    pub report: PathBuf,
    /// Small sizes, so the whole run takes seconds (for tests; the figures mean little).
    #[arg(long)]
    pub quick: bool,
    /// Only these benchmarks (comma-separated names, as in `ticktrade bench NAME`).
    #[arg(long, value_delimiter = ',', value_name = "NAME,…")]
    pub only: Vec<String>,
}

/// A target one run is checked against, named by what it measures.
#[derive(Clone, Copy, Debug)]
struct Goal {
    /// What is measured and the target, in words: the report's first column.
    what: &'static str,
    check: Check,
}

/// How a goal is checked against the series of one run.
#[derive(Clone, Copy, Debug)]
enum Check {
    /// p50 of the series < ns.
    P50Below(&'static str, u64),
    /// p50 of the series ≤ ns.
    P50AtMost(&'static str, u64),
    /// p99 of the series < ns.
    P99Below(&'static str, u64),
    /// baseline_p50 / p50 ≥ factor.
    RatioAtLeast(&'static str, f64),
    /// p50 of the first ≤ factor × p50 of the second.
    WithinFactor(&'static str, &'static str, f64),
    /// p99 of the first ≤ factor × p99 of the second.
    P99WithinFactor(&'static str, &'static str, f64),
    /// p50 of the first − p50 of the second ≤ ns.
    WithinNs(&'static str, &'static str, u64),
}

const fn goal(what: &'static str, check: Check) -> Goal {
    Goal { what, check }
}

/// One benchmark of the run.
struct Bench {
    name: &'static str,
    full: &'static [&'static str],
    quick: &'static [&'static str],
    goals: &'static [Goal],
}

const HL_BLOCK: &str = "hl block: ticktrade (2 threads)";
const HL_E2E_PROBE: &str = "hl e2e: block written -> probe received (BTC l2Book)";
const HL_E2E_LOAD: &str = "hl e2e: block written -> load client received (every l2Book frame)";

/// Every benchmark, in the order they run.
const BENCHES: &[Bench] = &[
    Bench {
        name: "book",
        full: &[],
        quick: &["--deltas", "20000", "--passes", "5"],
        goals: &[
            goal("book apply ≥ 3x faster than a BTreeMap book", Check::RatioAtLeast("book_apply", 3.0)),
            goal("book apply under 30 ns a delta", Check::P50Below("book_apply", 30)),
            goal(
                "all seven Hyperliquid aggregations of a book under 5 µs",
                Check::P50Below("book_aggregate_all_variants", 5_000),
            ),
            goal(
                "book apply on a 100 000-level book within 2x of a ~600-level one",
                Check::WithinFactor("book_apply_deep", "book_apply", 2.0),
            ),
        ],
    },
    Bench {
        name: "match",
        full: &[],
        quick: &["--ops", "5000", "--passes", "1", "--synth-seconds", "1"],
        goals: &[goal(
            "matching: 1,000,000 order operations a second on one core",
            Check::P50AtMost("match_op", 1_000),
        )],
    },
    Bench {
        name: "hl",
        full: &[],
        quick: &[
            "--coins",
            "8",
            "--orders-per-block",
            "40",
            "--blocks",
            "20",
            "--e2e-blocks",
            "20",
            "--block-ms",
            "10",
        ],
        goals: &[
            goal(
                "block processed (lines in → every frame queued) p99 under 1 ms",
                Check::P99Below(HL_BLOCK, 1_000_000),
            ),
            goal(
                "block written → one coin's l2Book received, p50 under 2 ms",
                Check::P50Below(HL_E2E_PROBE, 2_000_000),
            ),
            goal(
                "block written → one coin's l2Book received, p99 under 10 ms",
                Check::P99Below(HL_E2E_PROBE, 10_000_000),
            ),
            goal(
                "block written → every l2Book frame received, p50 under 2 ms",
                Check::P50Below(HL_E2E_LOAD, 2_000_000),
            ),
            goal(
                "block written → every l2Book frame received, p99 under 10 ms",
                Check::P99Below(HL_E2E_LOAD, 10_000_000),
            ),
        ],
    },
    Bench {
        name: "tick-to-trade",
        full: &["--tls"],
        quick: &["--ticks", "300", "--gap-us", "20", "--tls"],
        goals: &[
            goal(
                "tick to trade (risk checks and order state on) within 1.3x of a bare write of the same bytes",
                Check::WithinFactor("tick_to_trade", "write_floor", 1.3),
            ),
            goal(
                "over TLS, tick to trade at most 1.5 µs above plain",
                Check::WithinNs("tick_to_trade_tls", "tick_to_trade", 1_500),
            ),
            goal(
                "risk checks and order state cost at most 1.2x of the compute without the checks",
                Check::WithinFactor("tick_to_encoded", "tick_to_encoded_risk_off", 1.2),
            ),
            goal(
                "compute ≥ 7x faster than the tokio + serde_json baseline",
                Check::RatioAtLeast("tick_to_encoded", 7.0),
            ),
        ],
    },
    Bench {
        name: "order",
        full: &[],
        quick: &["--orders", "200", "--gap-us", "20"],
        goals: &[
            goal("order call → frame encoded, median under 250 ns", Check::P50Below("order_call_to_encoded", 250)),
            goal(
                "order call → write returned within 1.5 µs of a bare write",
                Check::WithinNs("order_call_to_write", "write_floor", 1_500),
            ),
        ],
    },
    Bench {
        name: "feed",
        full: &[],
        quick: &["--clients", "1,10", "--seconds", "1"],
        goals: &[
            goal("fan-out to 100 clients p99 under 1 ms", Check::P99Below("fanout_books_c100", 1_000_000)),
            goal(
                "fan-out to 1,000 clients within 1.5x of bare writes to as many sockets",
                Check::WithinFactor("fanout_books_c1000", "floor_c1000", 1.5),
            ),
        ],
    },
    Bench {
        name: "bus",
        full: &[],
        quick: &[
            "--clients",
            "5",
            "--seconds",
            "2",
            "--load-rates",
            "400",
            "--load-seconds",
            "2",
            "--slow-rate",
            "400",
            "--slow-seconds",
            "2",
        ],
        goals: &[
            goal(
                "upstream frame received → edge client frame written through NATS, median within 2x of direct fan-out",
                Check::WithinFactor("fanout_via_nats", "fanout_direct", 2.0),
            ),
            goal(
                "upstream frame received → edge client frame written through NATS, p99 within 3x of direct fan-out",
                Check::P99WithinFactor("fanout_via_nats", "fanout_direct", 3.0),
            ),
            goal(
                "edge delay with a stalled edge beside it, median within 1.5x of without (same run)",
                Check::WithinFactor("fanout_via_nats_slow_edge", "fanout_via_nats_no_slow_edge", 1.5),
            ),
            goal(
                "edge delay with a stalled edge beside it, p99 within 2x of without (same run)",
                Check::P99WithinFactor("fanout_via_nats_slow_edge", "fanout_via_nats_no_slow_edge", 2.0),
            ),
        ],
    },
];

/// The names `--only` accepts.
pub(crate) fn bench_names() -> Vec<&'static str> {
    BENCHES.iter().map(|b| b.name).collect()
}

impl Check {
    /// The target in series terms, what was measured, and whether it was met (`None`: not
    /// measured).
    fn check(&self, outcome: &Outcome) -> (String, String, Option<bool>) {
        let p50 = |name: &str| outcome.find(name).filter(|s| s.percentiles.count > 0).map(|s| s.percentiles.p50);
        let p99 = |name: &str| outcome.find(name).filter(|s| s.percentiles.count > 0).map(|s| s.percentiles.p99);
        let ns = |v: Option<u64>| v.map_or_else(|| "not measured".to_owned(), |v| Human(v).to_string());
        // `a` at percentile `at` no more than `factor` times `b` at the same percentile.
        let within = |a: &str, b: &str, factor: f64, at: &str, pair: Option<(u64, u64)>| {
            let pair = pair.filter(|&(_, y)| y > 0);
            (
                format!("`{a}` {at} ≤ {factor}x `{b}` {at}"),
                pair.map_or_else(
                    || "not measured".to_owned(),
                    |(x, y)| format!("{} / {} = {:.2}x", Human(x), Human(y), x as f64 / y as f64),
                ),
                pair.map(|(x, y)| x as f64 <= factor * y as f64),
            )
        };
        match *self {
            Check::P50Below(name, max) => {
                (format!("`{name}` p50 < {}", Human(max)), ns(p50(name)), p50(name).map(|v| v < max))
            }
            Check::P50AtMost(name, max) => {
                (format!("`{name}` p50 ≤ {}", Human(max)), ns(p50(name)), p50(name).map(|v| v <= max))
            }
            Check::P99Below(name, max) => {
                (format!("`{name}` p99 < {}", Human(max)), ns(p99(name)), p99(name).map(|v| v < max))
            }
            Check::RatioAtLeast(name, min) => {
                let ratio = outcome.find(name).and_then(Series::ratio);
                (
                    format!("`{name}` ≥ {min}x faster than its baseline (p50)"),
                    ratio.map_or_else(|| "not measured".to_owned(), |r| format!("{r:.2}x")),
                    ratio.map(|r| r >= min),
                )
            }
            Check::WithinFactor(a, b, factor) => within(a, b, factor, "p50", p50(a).zip(p50(b))),
            Check::P99WithinFactor(a, b, factor) => within(a, b, factor, "p99", p99(a).zip(p99(b))),
            Check::WithinNs(a, b, max) => {
                let pair = p50(a).zip(p50(b));
                (
                    format!("`{a}` p50 within {} of `{b}` p50", Human(max)),
                    pair.map_or_else(
                        || "not measured".to_owned(),
                        |(x, y)| format!("{} − {} = {} ns", Human(x), Human(y), i128::from(x) - i128::from(y)),
                    ),
                    pair.map(|(x, y)| x.saturating_sub(y) <= max),
                )
            }
        }
    }
}

/// How one benchmark ended.
struct Ran {
    bench: &'static Bench,
    command: String,
    plot: PathBuf,
    seconds: f64,
    result: Result<Outcome, String>,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    for name in &args.only {
        anyhow::ensure!(
            BENCHES.iter().any(|b| b.name == name),
            "--only {name:?}: expected one of {}",
            bench_names().join(", ")
        );
    }
    std::fs::create_dir_all(&args.report).with_context(|| format!("creating {}", args.report.display()))?;
    let command = std::env::args().collect::<Vec<_>>().join(" ");
    let machine_start = Machine::now();
    let chosen: Vec<&'static Bench> =
        BENCHES.iter().filter(|b| args.only.is_empty() || args.only.iter().any(|n| n == b.name)).collect();

    let bar = ProgressBar::new(chosen.len() as u64);
    bar.set_style(
        ProgressStyle::with_template("{spinner} bench all [{elapsed_precise}] {bar:30} {pos}/{len} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    bar.enable_steady_tick(Duration::from_millis(200));
    let mut runs = Vec::new();
    for bench in chosen {
        bar.set_message(bench.name);
        let ran = run_one(bench, &args);
        bar.suspend(|| match &ran.result {
            Ok(outcome) => eprintln!(
                "bench {}: done in {:.1} s, {} series; goals met {}",
                bench.name,
                ran.seconds,
                outcome.series.len(),
                goal_tally(bench, outcome)
            ),
            Err(error) => eprintln!("bench {}: FAILED after {:.1} s: {error}", bench.name, ran.seconds),
        });
        bar.inc(1);
        runs.push(ran);
    }
    bar.finish_and_clear();
    let machine_end = Machine::now();

    let report = render_report(&command, &args, &machine_start, &machine_end, &runs);
    let report_path = args.report.join("REPORT.md");
    std::fs::write(&report_path, report).with_context(|| format!("writing {}", report_path.display()))?;
    let results_path = args.report.join("results.jsonl");
    std::fs::write(&results_path, results_jsonl(&runs))
        .with_context(|| format!("writing {}", results_path.display()))?;
    let failed = runs.iter().filter(|r| r.result.is_err()).count();
    println!(
        "bench all: {} benchmarks, {failed} failed; report {} (results {})",
        runs.len(),
        report_path.display(),
        results_path.display()
    );
    Ok(if failed == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Runs one benchmark through its own command line, capturing its outcome.
fn run_one(bench: &'static Bench, args: &Args) -> Ran {
    let plot = args.report.join(format!("{}.svg", bench.name));
    let mut argv: Vec<String> = vec!["bench".into(), bench.name.into()];
    argv.extend((if args.quick { bench.quick } else { bench.full }).iter().map(|s| (*s).to_owned()));
    argv.push("--plot".into());
    argv.push(plot.display().to_string());
    let command = format!("ticktrade {}", argv.join(" "));
    let start = Instant::now();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| capture(|| super::run_argv(&argv))));
    let seconds = start.elapsed().as_secs_f64();
    let result = match caught {
        Err(panic) => Err(format!(
            "panicked: {}",
            panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)")
        )),
        Ok((Err(error), _)) => Err(format!("{error:#}")),
        Ok((Ok(_), mut outcomes)) => match outcomes.pop() {
            Some(outcome) if outcome.series.iter().any(|s| s.percentiles.count > 0) => Ok(outcome),
            Some(_) => Err("measured no samples".to_owned()),
            None => Err("produced no results".to_owned()),
        },
    };
    Ran { bench, command, plot, seconds, result }
}

fn goal_tally(bench: &Bench, outcome: &Outcome) -> String {
    let checks: Vec<Option<bool>> = bench.goals.iter().map(|g| g.check.check(outcome).2).collect();
    format!("{}/{}", checks.iter().filter(|c| **c == Some(true)).count(), checks.len())
}

/// What the report says about the machine, read at the start and at the end.
struct Machine {
    utc: String,
    load: String,
}

impl Machine {
    fn now() -> Machine {
        let load = std::fs::read_to_string("/proc/loadavg")
            .map(|t| t.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
            .unwrap_or_else(|_| "unknown".to_owned());
        Machine { utc: utc_now(), load }
    }
}

fn cpu_model() -> String {
    std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| {
            t.lines()
                .find(|l| l.starts_with("model name"))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_owned())
        })
        .unwrap_or_else(|| std::env::consts::ARCH.to_owned())
}

fn kernel() -> String {
    std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|t| format!("{} {}", std::env::consts::OS, t.trim()))
        .unwrap_or_else(|_| std::env::consts::OS.to_owned())
}

/// `YYYY-MM-DD HH:MM:SS` UTC from the system clock.
fn utc_now() -> String {
    let secs = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_secs()) as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rem / 3_600, rem % 3_600 / 60, rem % 60)
}

fn render_report(command: &str, args: &Args, start: &Machine, end: &Machine, runs: &[Ran]) -> String {
    let mut md = String::new();
    let _ = writeln!(md, "# ticktrade benchmark report\n");
    let _ = writeln!(md, "| | |\n| --- | --- |");
    let _ = writeln!(md, "| command | `{command}` |");
    let _ = writeln!(md, "| started | {} UTC |", start.utc);
    let _ = writeln!(md, "| finished | {} UTC |", end.utc);
    let _ = writeln!(md, "| CPU | {} |", cpu_model());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let _ = writeln!(md, "| cores | {cores} |");
    let _ = writeln!(md, "| kernel | {} |", kernel());
    let _ = writeln!(md, "| load average at start (1, 5, 15 min) | {} |", start.load);
    let _ = writeln!(md, "| load average at end (1, 5, 15 min) | {} |", end.load);
    let build = if cfg!(debug_assertions) { "debug (figures not representative)" } else { "release" };
    let _ = writeln!(md, "| build | {build} |");
    let mode = if args.quick { "quick: small sizes, figures not comparable with the goals" } else { "full sizes" };
    let _ = writeln!(md, "| sizes | {mode} |\n");
    let _ = writeln!(
        md,
        "Every figure is in nanoseconds of wall-clock time; each benchmark measures its baseline in the same \
         run, and `ratio` is baseline p50 / ticktrade p50 (higher is better). On a shared machine compare \
         ratios and medians, not single runs.\n"
    );

    let _ = writeln!(md, "## Summary\n");
    let _ = writeln!(md, "| benchmark | status | goals met | seconds |\n| --- | --- | --- | --- |");
    for run in runs {
        let (status, goals) = match &run.result {
            Ok(outcome) => ("ok".to_owned(), goal_tally(run.bench, outcome)),
            Err(_) => ("**failed**".to_owned(), "-".to_owned()),
        };
        let name = run.bench.name;
        let _ = writeln!(md, "| [{name}](#{name}) | {status} | {goals} | {:.1} |", run.seconds);
    }
    let _ = writeln!(md);

    for run in runs {
        let name = run.bench.name;
        let _ = writeln!(md, "## {name}\n");
        let _ = writeln!(md, "Command: `{}`\n", run.command);
        let outcome = match &run.result {
            Ok(outcome) => outcome,
            Err(error) => {
                let _ = writeln!(md, "**Failed** after {:.1} s: {}\n", run.seconds, error.replace('\n', " "));
                continue;
            }
        };
        let _ = writeln!(md, "```text\n{}```\n", with_newline(&outcome.notes));
        let _ = writeln!(md, "{}", markdown_table(&outcome.series));
        let _ = writeln!(md, "Baseline and ratio:\n");
        let mut any = false;
        for s in outcome.series.iter().filter(|s| s.baseline_p50.is_some()) {
            any = true;
            let _ = writeln!(
                md,
                "- `{}`: p50 {} against the baseline's {} → {}",
                s.name,
                Human(s.percentiles.p50),
                s.baseline_p50.map_or_else(String::new, |b| Human(b).to_string()),
                s.ratio().map_or_else(|| "no ratio (p50 is 0)".to_owned(), |r| format!("{r:.2}x"))
            );
        }
        if !any {
            let _ = writeln!(md, "- no series carries a baseline");
        }
        if let Some(summary) = &outcome.summary {
            let _ = writeln!(md, "- summary figures: `{summary}`");
        }
        let _ = writeln!(md);
        let _ = writeln!(md, "Goals:\n");
        if run.bench.goals.is_empty() {
            let _ = writeln!(md, "- none set\n");
        } else {
            let _ = writeln!(md, "| goal | target | measured | |\n| --- | --- | --- | --- |");
            for goal in run.bench.goals {
                let (target, measured, met) = goal.check.check(outcome);
                let verdict = match met {
                    Some(true) => "met",
                    Some(false) => "**missed**",
                    None => "not measured",
                };
                let _ = writeln!(md, "| {} | {target} | {measured} | {verdict} |", goal.what);
            }
            let _ = writeln!(md);
        }
        if run.plot.exists() {
            let file = file_name(&run.plot);
            let _ = writeln!(md, "![{name}: latency by percentile]({file})\n");
        }
    }
    md
}

fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(|| path.display().to_string(), |f| f.to_string_lossy().into_owned())
}

/// Every benchmark's `--json` lines with a `bench` key; a failed one as `{"bench", "error"}`.
fn results_jsonl(runs: &[Ran]) -> String {
    let mut out = String::new();
    for run in runs {
        let lines: Vec<serde_json::Value> = match &run.result {
            Ok(outcome) => outcome.json_lines().lines().filter_map(|l| serde_json::from_str(l).ok()).collect(),
            Err(error) => vec![serde_json::json!({"error": error})],
        };
        for mut line in lines {
            if let Some(object) = line.as_object_mut() {
                object.insert("bench".to_owned(), run.bench.name.into());
            }
            out.push_str(&line.to_string());
            out.push('\n');
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticktrade_latency::Percentiles;

    fn series(name: &str, p50: u64, p99: u64) -> Series {
        Series::new(
            name,
            Percentiles { count: 10, min: 1, p25: p50, p50, p75: p50, p90: p50, p99, p999: p99, max: p99 },
        )
    }

    #[test]
    fn goals_are_checked_against_the_named_series() {
        let outcome = Outcome {
            series: vec![series("a", 100, 400).with_baseline_p50(1_500), series("floor", 80, 90)],
            ..Outcome::default()
        };
        assert_eq!(Check::P50AtMost("a", 100).check(&outcome).2, Some(true));
        assert_eq!(Check::P50Below("a", 100).check(&outcome).2, Some(false));
        assert_eq!(Check::P99Below("a", 400).check(&outcome).2, Some(false));
        assert_eq!(Check::RatioAtLeast("a", 10.0).check(&outcome).2, Some(true));
        assert_eq!(Check::RatioAtLeast("a", 16.0).check(&outcome).2, Some(false));
        assert_eq!(Check::WithinFactor("a", "floor", 1.3).check(&outcome).2, Some(true));
        assert_eq!(Check::WithinFactor("a", "floor", 1.2).check(&outcome).2, Some(false));
        assert_eq!(Check::P99WithinFactor("a", "floor", 4.5).check(&outcome).2, Some(true));
        assert_eq!(Check::P99WithinFactor("a", "floor", 4.4).check(&outcome).2, Some(false));
        assert_eq!(Check::WithinNs("a", "floor", 19).check(&outcome).2, Some(false));
        assert_eq!(Check::WithinNs("a", "floor", 20).check(&outcome).2, Some(true));
        assert_eq!(Check::P50Below("missing", 1).check(&outcome).2, None);
        assert_eq!(Check::RatioAtLeast("floor", 1.0).check(&outcome).2, None);
    }

    #[test]
    fn every_bench_has_quick_sizes_and_unique_names() {
        let names = bench_names();
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
        assert!(BENCHES.iter().all(|b| !b.quick.is_empty()));
    }

    #[test]
    fn every_goal_says_what_it_measures_once() {
        for bench in BENCHES {
            let mut seen = Vec::new();
            for goal in bench.goals {
                let what = goal.what;
                assert!(!what.trim().is_empty(), "{}: a goal without words", bench.name);
                // A cell of the report's Markdown table; and named by what it measures, not by
                // where it was asked for.
                assert!(!what.contains('|') && !what.contains('\n'), "{}: {what:?}", bench.name);
                assert!(!what.to_lowercase().contains("issue"), "{}: {what:?}", bench.name);
                assert!(!seen.contains(&what), "{}: {what:?} twice", bench.name);
                seen.push(what);
            }
        }
    }

    #[test]
    fn utc_now_is_a_plausible_date() {
        let text = utc_now();
        assert_eq!(text.len(), 19, "{text}");
        assert!(text.starts_with("20"), "{text}");
    }
}
