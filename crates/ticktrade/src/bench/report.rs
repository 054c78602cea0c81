//! The one output path every benchmark uses: notes and the aligned percentile table, `--json`
//! lines, the `--plot` SVG; and the capture that lets `bench all` collect what a benchmark
//! measured instead of printing it.
//!
//! Owns: the `--json`/`--plot` flags (`Output`), what a benchmark hands over (`Outcome`), where
//! its text goes, and the Markdown form of the table for `REPORT.md`.
//! Must not: measure anything or format numbers its own way: the table, JSON lines and SVG are
//! `ticktrade_latency::render`'s. The notes' last line, the host's steal during the benchmark,
//! is `host`'s.
//!
//! With `--json`, a benchmark that has a summary object (`bench book`'s ns per delta and ratio,
//! `bench match`'s operations a second) prints it as the first line, then one object per
//! series; the table and the notes go to stderr.

use std::cell::RefCell;
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ticktrade_latency::{Human, Series, json_lines_string, svg_string, table_string};

/// `--json` and `--plot FILE.svg`, shared by every benchmark.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Output {
    /// Print one JSON object per series per line on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Write a latency-vs-percentile plot of the main series to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
}

/// What one benchmark run measured.
#[derive(Clone, Debug, Default)]
pub(crate) struct Outcome {
    /// The plot's title.
    pub(crate) title: String,
    /// Lines printed above the table (what ran, on what, counts, derived figures).
    pub(crate) notes: String,
    pub(crate) series: Vec<Series>,
    /// A benchmark's own one-object summary, printed first with `--json`.
    pub(crate) summary: Option<serde_json::Value>,
}

impl Outcome {
    /// The series drawn in the plot: all but the per-stage spans.
    pub(crate) fn plotted(&self) -> Vec<Series> {
        self.series.iter().filter(|s| !s.name.starts_with("stage_")).cloned().collect()
    }

    /// The `--json` text: the summary line (if any), then one line per series.
    pub(crate) fn json_lines(&self) -> String {
        let mut text = String::new();
        if let Some(summary) = &self.summary {
            text.push_str(&summary.to_string());
            text.push('\n');
        }
        text.push_str(&json_lines_string(&self.series));
        text
    }

    pub(crate) fn find(&self, name: &str) -> Option<&Series> {
        self.series.iter().find(|s| s.name == name)
    }
}

thread_local! {
    /// Set by `capture`: `emit` hands the outcome over here instead of printing it.
    static CAPTURED: RefCell<Option<Vec<Outcome>>> = const { RefCell::new(None) };
}

/// Runs `f` (a benchmark's `run`) and returns what it emitted on this thread, unprinted; its
/// `--plot` file is still written.
pub(crate) fn capture<T>(f: impl FnOnce() -> T) -> (T, Vec<Outcome>) {
    CAPTURED.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let result = f();
    let outcomes = CAPTURED.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (result, outcomes)
}

/// Prints `notes` and the table (stdout, or stderr with `json`), the JSON lines (stdout), and
/// writes the plot of the series that are not per-stage spans.
pub(crate) fn emit(notes: &str, series: &[Series], json: bool, plot: Option<&Path>, title: &str) -> anyhow::Result<()> {
    let outcome = Outcome { title: title.to_owned(), notes: notes.to_owned(), series: series.to_vec(), summary: None };
    emit_outcome(outcome, &Output { json, plot: plot.map(Path::to_path_buf) })
}

/// `emit` for an `Outcome` (with its summary object).
pub(crate) fn emit_outcome(mut outcome: Outcome, output: &Output) -> anyhow::Result<()> {
    if let Some(line) = super::host::run_note() {
        outcome.notes = format!("{}{line}\n", with_newline(&outcome.notes));
    }
    if let Some(path) = &output.plot {
        std::fs::write(path, svg_string(&outcome.title, &outcome.plotted()))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    let outcome = match CAPTURED.with(|c| c.borrow_mut().as_mut().map(|v| v.push(outcome.clone()))) {
        Some(()) => return Ok(()),
        None => outcome,
    };
    let mut text = with_newline(&outcome.notes);
    text.push_str(&table_string(&outcome.series));
    if output.json {
        eprint!("{text}");
        let mut out = std::io::stdout().lock();
        out.write_all(outcome.json_lines().as_bytes()).context("writing JSON lines")?;
        out.flush().context("writing JSON lines")?;
    } else {
        print!("{text}");
    }
    Ok(())
}

/// `text` ending with a newline (unless empty): notes, before the table or the next line.
pub(crate) fn with_newline(text: &str) -> String {
    if text.is_empty() || text.ends_with('\n') { text.to_owned() } else { format!("{text}\n") }
}

/// The percentile table as Markdown (same columns and units as the aligned table).
pub(crate) fn markdown_table(series: &[Series]) -> String {
    let with_baseline = series.iter().any(|s| s.baseline_p50.is_some());
    let mut header = vec!["name", "count", "min", "p25", "p50", "p75", "p90", "p99", "p99.9", "max"];
    if with_baseline {
        header.extend(["baseline p50", "ratio"]);
    }
    let mut out = format!("| {} |\n|{}\n", header.join(" | "), " --- |".repeat(header.len()));
    for s in series {
        let mut row = vec![format!("`{}`", s.name.replace('|', "\\|")), s.percentiles.count.to_string()];
        row.extend(s.percentiles.columns().iter().map(|(_, ns)| Human(*ns).to_string()));
        if with_baseline {
            row.push(s.baseline_p50.map_or_else(|| "-".to_owned(), |b| Human(b).to_string()));
            row.push(s.ratio().map_or_else(|| "-".to_owned(), |r| format!("{r:.2}x")));
        }
        out.push_str(&format!("| {} |\n", row.join(" | ")));
    }
    out
}

/// Per-batch costs (ns per item, rounded) as a histogram series: what `bench book` and
/// `bench match` record, one sample per batch of items timed together.
pub(crate) fn series_of_samples(name: &str, samples_ns: &[f64]) -> Series {
    let mut histogram = ticktrade_latency::Histogram::new();
    for &ns in samples_ns {
        if ns.is_finite() && ns >= 0.0 {
            histogram.record(ns.round() as u64);
        }
    }
    Series::from_histogram(name, &histogram)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticktrade_latency::Percentiles;

    fn p(base: u64) -> Percentiles {
        Percentiles {
            count: 4,
            min: base,
            p25: base * 3 / 2,
            p50: base * 2,
            p75: base * 3,
            p90: base * 4,
            p99: base * 5,
            p999: base * 6,
            max: base * 7,
        }
    }

    #[test]
    fn markdown_table_has_a_row_per_series_and_baseline_columns() {
        let series = [Series::new("a|b", p(10)).with_baseline_p50(60), Series::new("plain", p(1000))];
        let text = markdown_table(&series);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 4, "{text}");
        assert!(lines[0].starts_with("| name | count |") && lines[0].ends_with("| baseline p50 | ratio |"));
        assert_eq!(lines[1].matches("---").count(), 12);
        assert_eq!(lines[2], "| `a\\|b` | 4 | 10ns | 15ns | 20ns | 30ns | 40ns | 50ns | 60ns | 70ns | 60ns | 3.00x |");
        assert!(lines[3].ends_with("| 7.00µs | - | - |"), "{}", lines[3]);
    }

    #[test]
    fn capture_collects_instead_of_printing_and_summary_comes_first() {
        let outcome = Outcome {
            title: "t".into(),
            notes: "n".into(),
            series: vec![Series::new("x", p(5))],
            summary: Some(serde_json::json!({"ratio": 2.0})),
        };
        let (result, got) = capture(|| emit_outcome(outcome, &Output::default()));
        assert!(result.is_ok());
        assert_eq!(got.len(), 1);
        let lines: Vec<serde_json::Value> =
            got[0].json_lines().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert_eq!(lines[0]["ratio"], 2.0);
        assert_eq!(lines[1]["name"], "x");
        // Outside `capture` nothing is collected.
        let (_, none) = capture(|| ());
        assert!(none.is_empty());
    }

    #[test]
    fn samples_become_rounded_percentiles() {
        let s = series_of_samples("s", &[10.4, 10.6, 12.0, f64::NAN]);
        assert_eq!(s.percentiles.count, 3);
        assert_eq!(s.percentiles.min, 10);
        assert_eq!(s.percentiles.max, 12);
    }
}
