//! `ticktrade bench all --quick --report DIR` and `--json`, through the real binary: the
//! report's structure, every plot an SVG with axis labels, every benchmark's JSON lines and key
//! sets, and a failing benchmark reported as failed while the others still run.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use std::sync::Mutex;

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_ticktrade");

/// Every benchmark with small sizes (the same ones `bench all --quick` uses).
const BENCHES: &[(&str, &[&str])] = &[
    ("book", &["--deltas", "20000", "--passes", "5"]),
    ("match", &["--ops", "5000", "--passes", "1", "--synth-seconds", "1"]),
    ("hl", &["--coins", "8", "--orders-per-block", "40", "--blocks", "20", "--e2e-blocks", "20", "--block-ms", "10"]),
    ("tick-to-trade", &["--ticks", "300", "--gap-us", "20"]),
    ("order", &["--orders", "200", "--gap-us", "20"]),
    ("feed", &["--clients", "1,10", "--seconds", "1"]),
    (
        "bus",
        &[
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
    ),
];

const SERIES_KEYS: [&str; 11] = ["name", "unit", "count", "min", "p25", "p50", "p75", "p90", "p99", "p999", "max"];
const BOOK_SUMMARY_KEYS: [&str; 5] =
    ["ticktrade_ns_per_delta", "baseline_ns_per_delta", "ratio", "aggregate_all_variants_ns", "deep_book_ns_per_delta"];

/// The benchmarks measure loopback latency on a 2-core machine: one run at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn run(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn keys(value: &Value) -> BTreeSet<String> {
    value.as_object().expect("a JSON object").keys().cloned().collect()
}

/// A series line has exactly the common keys, plus `baseline_p50` and `ratio` together or not
/// at all; numbers are integers in order.
fn check_series_line(line: &Value, context: &str) {
    let mut want: BTreeSet<String> = SERIES_KEYS.iter().map(|k| (*k).to_owned()).collect();
    if line.get("baseline_p50").is_some() {
        want.extend(["baseline_p50".to_owned(), "ratio".to_owned()]);
    }
    assert_eq!(keys(line), want, "{context}: {line}");
    assert_eq!(line["unit"], "ns", "{context}");
    let n = |k: &str| line[k].as_u64().unwrap_or_else(|| panic!("{context}: {k} not an integer in {line}"));
    assert!(n("count") > 0, "{context}: {line}");
    let ordered = ["min", "p25", "p50", "p75", "p90", "p99", "p999", "max"].map(n);
    assert!(ordered.windows(2).all(|w| w[0] <= w[1]), "{context}: percentiles out of order in {line}");
    if let Some(ratio) = line["ratio"].as_f64() {
        let expected = n("baseline_p50") as f64 / n("p50") as f64;
        assert!((ratio - expected).abs() < 1e-6 * expected.max(1.0), "{context}: ratio in {line}");
    }
}

fn check_svg(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let doc = roxmltree::Document::parse(&text).unwrap_or_else(|e| panic!("{}: not XML: {e}", path.display()));
    assert_eq!(doc.root_element().tag_name().name(), "svg", "{}", path.display());
    let texts: Vec<String> = doc
        .descendants()
        .filter(|n| n.has_tag_name("text"))
        .map(|n| n.descendants().filter_map(|d| d.text()).collect::<String>())
        .collect();
    assert!(texts.iter().any(|t| t.starts_with("percentile")), "{}: no x-axis label in {texts:?}", path.display());
    assert!(texts.iter().any(|t| t.starts_with("latency")), "{}: no y-axis label in {texts:?}", path.display());
    assert!(doc.descendants().any(|n| n.has_tag_name("path") || n.has_tag_name("polyline")), "{}", path.display());
}

#[test]
fn bench_all_quick_writes_the_report() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let out = run(&["bench", "all", "--quick", "--report", dir.path().to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench all failed: {stderr}\n{}", String::from_utf8_lossy(&out.stdout));
    for (name, _) in BENCHES {
        assert!(stderr.contains(&format!("bench {name}: done")), "no progress line for {name}: {stderr}");
    }

    let report = std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap();
    assert!(report.starts_with("# ticktrade benchmark report\n"), "{report}");
    for row in
        ["| command | `", "| CPU | ", "| cores | ", "| kernel | ", "| load average at start", "| load average at end"]
    {
        assert!(report.contains(row), "machine row {row:?} missing:\n{report}");
    }
    assert!(report.contains("bench all --quick --report"), "the command is missing");
    assert!(report.contains("## Summary"));
    let sections: Vec<&str> = report.split("\n## ").skip(1).collect();
    let names: Vec<&str> = sections.iter().map(|s| s.lines().next().unwrap()).collect();
    let mut expected = vec!["Summary"];
    expected.extend(BENCHES.iter().map(|(n, _)| *n));
    assert_eq!(names, expected);
    for (section, (name, _)) in sections[1..].iter().zip(BENCHES) {
        assert!(section.contains(&format!("Command: `ticktrade bench {name} ")), "{name}: no command");
        assert!(
            section.contains("| name | count | min | p25 | p50 | p75 | p90 | p99 | p99.9 | max |"),
            "{name}: no percentile table:\n{section}"
        );
        let table_rows = section.lines().filter(|l| l.starts_with("| `")).count();
        assert!(table_rows >= 2, "{name}: {table_rows} series rows");
        assert!(section.contains("Baseline and ratio:"), "{name}");
        assert!(section.contains(" → ") && section.contains("x\n"), "{name}: no baseline ratio line:\n{section}");
        assert!(section.contains("Goals:\n\n| goal | target | measured | |"), "{name}: no goal table:\n{section}");
        assert!(!section.to_lowercase().contains("issue"), "{name}: goals are named by what they measure");
        assert!(
            ["| met |", "| **missed** |", "| not measured |"].iter().any(|v| section.contains(v)),
            "{name}: no goal verdict"
        );
        let link = format!("]({name}.svg)");
        assert!(section.contains(&link), "{name}: plot not linked");
        check_svg(&dir.path().join(format!("{name}.svg")));
    }
    // The summary table has a row per benchmark, each ok.
    for (name, _) in BENCHES {
        assert!(report.contains(&format!("| [{name}](#{name}) | ok | ")), "{name} not ok in the summary");
    }

    let results = std::fs::read_to_string(dir.path().join("results.jsonl")).unwrap();
    let lines: Vec<Value> = results.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    for (name, _) in BENCHES {
        let mine: Vec<Value> = lines
            .iter()
            .filter(|l| l["bench"] == *name)
            .map(|l| {
                let mut line = l.clone();
                line.as_object_mut().unwrap().remove("bench");
                line
            })
            .collect();
        let series = mine.iter().filter(|l| l.get("name").is_some()).count();
        assert!(series >= 2, "{name}: {series} series in results.jsonl");
        check_bench_lines(name, &mine);
    }
}

/// `--json` prints the lines on stdout and moves the table to stderr (one cheap benchmark; the
/// lines of every benchmark are checked in `bench all`'s `results.jsonl`, which holds exactly
/// what each one prints with `--json`).
#[test]
fn bench_json_prints_the_lines_and_moves_the_table_to_stderr() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let (name, args) = BENCHES[0];
    let mut argv = vec!["bench", name];
    argv.extend_from_slice(args);
    argv.push("--json");
    let out = run(&argv);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench {name} --json failed: {stderr}");
    assert!(stderr.contains("p99.9"), "bench {name}: the table goes to stderr with --json: {stderr}");
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<Value> =
        stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bench {name}: {e}: {l}"))).collect();
    check_bench_lines(name, &lines);
}

/// One benchmark's `--json` lines: series in the common format, at least one with a baseline,
/// and the summary object first where the benchmark has one.
fn check_bench_lines(name: &str, lines: &[Value]) {
    let mut series = lines.iter().filter(|l| l.get("name").is_some()).peekable();
    assert!(series.peek().is_some(), "bench {name}: no series lines");
    let mut with_baseline = 0;
    for line in series {
        check_series_line(line, name);
        with_baseline += usize::from(line.get("baseline_p50").is_some());
    }
    assert!(with_baseline > 0, "bench {name}: no series has a baseline");
    if name == "book" {
        let want: BTreeSet<String> = BOOK_SUMMARY_KEYS.iter().map(|k| (*k).to_owned()).collect();
        assert_eq!(keys(&lines[0]), want, "bench book's summary object must come first, exactly");
        let ratio = lines[0]["ratio"].as_f64().unwrap();
        let quotient =
            lines[0]["baseline_ns_per_delta"].as_f64().unwrap() / lines[0]["ticktrade_ns_per_delta"].as_f64().unwrap();
        assert!((ratio - quotient).abs() < 1e-9 * quotient, "{}", lines[0]);
    } else if name == "bus" {
        for key in ["via_nats_over_direct_p50", "via_nats_over_direct_p99", "load", "slow_edge"] {
            assert!(lines[0].get(key).is_some(), "bench bus: summary first, with {key}: {}", lines[0]);
        }
    } else if name != "match" {
        assert!(lines.iter().all(|l| l.get("name").is_some()), "bench {name}: only series lines expected");
    }
}

/// `bench bus --venue hl` (not in `bench all`): both delay series measured, and the load run's
/// messages published by `hl --publish` and received by the `hl --upstream` edge.
#[test]
fn bench_bus_venue_hl_measures_both_paths_and_the_load() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let argv = [
        "bench",
        "bus",
        "--venue",
        "hl",
        "--clients",
        "3",
        "--seconds",
        "2",
        "--coins",
        "12",
        "--orders-per-block",
        "60",
        "--load-rates",
        "10",
        "--load-seconds",
        "2",
        "--slow-seconds",
        "1",
        "--json",
    ];
    let out = run(&argv);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "bench bus --venue hl failed: {stderr}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<Value> = stdout.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let summary = &lines[0];
    assert_eq!(summary["venue"], "hl", "{summary}");
    assert_eq!(summary["load_unit"], "blocks/s", "{summary}");
    let load = &summary["load"][0];
    // 12 coins × (7 l2Book variants, trades, bbo) + allMids.
    assert_eq!(load["channels"], 12 * 9 + 1, "{load}");
    assert!(load["published_msgs_per_s"].as_f64().unwrap() > 0.0, "{load}");
    assert!(load["edge_received_msgs_per_s"].as_f64().unwrap() > 0.0, "{load}");
    assert!(load["upstream_per_s"].as_f64().unwrap() > 5.0, "{load}");
    assert_eq!(load["sustained"], load["dropped"] == 0, "{load}");
    // The slow-edge run: its phases ran against the server the bench configured.
    let slow = &summary["slow_edge"];
    assert_eq!(slow["rate"], 10, "{slow}");
    assert_eq!(slow["nats_stalls"], 0, "no_fast_producer_stall: the publisher is never stalled: {slow}");
    assert_eq!(slow["good_edge_gaps"], 0, "{slow}");
    let names: Vec<&str> = lines[1..].iter().map(|l| l["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["hl_direct", "hl_via_nats", "hl_via_nats_no_slow_edge", "hl_via_nats_slow_edge"]);
    for line in &lines[1..] {
        check_series_line(line, "bench bus --venue hl");
    }
}

#[test]
fn a_failing_bench_is_reported_and_the_others_still_run() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    // book's plot cannot be written (a directory stands where the file goes): book fails.
    std::fs::create_dir(dir.path().join("book.svg")).unwrap();
    let out = run(&["bench", "all", "--quick", "--only", "book,order", "--report", dir.path().to_str().unwrap()]);
    assert!(!out.status.success(), "a failed benchmark must fail the run");
    let report = std::fs::read_to_string(dir.path().join("REPORT.md")).unwrap();
    assert!(report.contains("| [book](#book) | **failed** |"), "{report}");
    assert!(report.contains("| [order](#order) | ok |"), "{report}");
    assert!(report.contains("**Failed** after") && report.contains("book.svg"), "{report}");
    check_svg(&dir.path().join("order.svg"));
    let results = std::fs::read_to_string(dir.path().join("results.jsonl")).unwrap();
    let lines: Vec<Value> = results.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert!(lines.iter().any(|l| l["bench"] == "book" && l["error"].is_string()), "{results}");
    assert!(lines.iter().any(|l| l["bench"] == "order" && l["name"] == "order_call_to_write"), "{results}");

    let out = run(&["bench", "all", "--only", "nope", "--report", dir.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("expected one of book, match, hl, tick-to-trade, order, feed")
    );
}
