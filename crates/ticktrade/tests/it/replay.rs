//! `ticktrade replay` end to end: the binary on the recorded sessions of
//! `testdata/deribit/market_data/cryptofeed/`, checked against a naive rebuild written here
//! (serde_json `Value`s and `BTreeMap`s keyed by exact decimals), plus corrupted copies and an
//! injected gap.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap (working agreement).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use ticktrade_core::Decimal;

const RECORDINGS: [&str; 4] = [
    "DERIBIT-5dd9ce.0__2021-04-05.txt",
    "DERIBIT-5dd9ce.0__2021-04-05.frames.jsonl",
    "DERIBIT.ws.30.0__2021-04-17.txt",
    "DERIBIT.ws.30.0__2021-04-17.frames.jsonl",
];

fn recording(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/deribit/market_data/cryptofeed").join(name)
}

fn ticktrade(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ticktrade")).args(args).output().unwrap()
}

fn replay_json(path: &Path) -> (Output, BTreeMap<String, Value>) {
    let output = ticktrade(&["replay", path.to_str().unwrap(), "--json", "--depth", "1000000"]);
    let stdout = String::from_utf8(output.stdout.clone()).unwrap();
    let rows = stdout
        .lines()
        .map(|line| {
            let row: Value = serde_json::from_str(line).unwrap();
            (row["instrument"].as_str().unwrap().to_owned(), row)
        })
        .collect();
    (output, rows)
}

/// Exact decimal of a JSON number (serde_json prints the shortest text that round-trips,
/// which is the recorded text for every number Deribit writes).
fn num(value: &Value) -> Decimal {
    assert!(value.is_number(), "{value}");
    Decimal::parse(&value.to_string()).unwrap()
}

/// One side, best first: `(price, amount)`.
type Side = Vec<(Decimal, Decimal)>;

#[derive(Default, Debug, PartialEq)]
struct NaiveBook {
    bids: BTreeMap<Decimal, Decimal>,
    asks: BTreeMap<Decimal, Decimal>,
    changes: u64,
}

impl NaiveBook {
    /// Best first, as the binary prints them.
    fn sides(&self) -> (Side, Side) {
        (self.bids.iter().rev().map(|(p, a)| (*p, *a)).collect(), self.asks.iter().map(|(p, a)| (*p, *a)).collect())
    }
}

/// The received frames of a recording, read independently of the binary's reader.
fn received(text: &str) -> Vec<Value> {
    let mut frames = Vec::new();
    for line in text.lines() {
        if line.starts_with('{') {
            let record: Value = serde_json::from_str(line).unwrap();
            if record["dir"] == "server->client" {
                frames.push(record["msg"].clone());
            }
        } else if !(line.is_empty() || line.starts_with("wss://") || line.starts_with("configuration:")) {
            let (_, json) = line.split_once(": ").unwrap();
            frames.push(serde_json::from_str(json).unwrap());
        }
    }
    frames
}

fn naive_rebuild(frames: &[Value]) -> BTreeMap<String, NaiveBook> {
    let mut books: BTreeMap<String, NaiveBook> = BTreeMap::new();
    for frame in frames {
        let channel = frame["params"]["channel"].as_str().unwrap_or("");
        if frame["method"] != "subscription" || !channel.starts_with("book.") {
            continue;
        }
        let data = &frame["params"]["data"];
        let book = books.entry(data["instrument_name"].as_str().unwrap().to_owned()).or_default();
        if data["type"] == "snapshot" {
            book.bids.clear();
            book.asks.clear();
        } else {
            book.changes += 1;
        }
        for (key, side) in [("bids", &mut book.bids), ("asks", &mut book.asks)] {
            for entry in data[key].as_array().unwrap() {
                let (price, amount) = (num(&entry[1]), num(&entry[2]));
                if entry[0] == "delete" || amount.is_zero() {
                    side.remove(&price);
                } else {
                    side.insert(price, amount);
                }
            }
        }
    }
    books
}

fn sides_of(row: &Value) -> (Side, Side) {
    let side = |key: &str| row[key].as_array().unwrap().iter().map(|l| (num(&l[0]), num(&l[1]))).collect();
    (side("bids"), side("asks"))
}

#[test]
fn recordings_replay_without_gaps_and_match_a_naive_rebuild() {
    for name in RECORDINGS {
        let path = recording(name);
        let (output, rows) = replay_json(&path);
        assert!(output.status.success(), "{name}: {}", String::from_utf8_lossy(&output.stderr));
        let naive = naive_rebuild(&received(&std::fs::read_to_string(&path).unwrap()));
        assert_eq!(rows.len(), 10, "{name}");
        assert_eq!(rows.keys().collect::<Vec<_>>(), naive.keys().collect::<Vec<_>>(), "{name}");
        for (instrument, row) in &rows {
            assert_eq!(
                (row["gaps"].as_u64(), row["resyncs"].as_u64(), row["snapshots"].as_u64()),
                (Some(0), Some(0), Some(1))
            );
            assert_eq!(row["changes"].as_u64(), Some(naive[instrument].changes), "{name} {instrument}");
            assert_eq!(sides_of(row), naive[instrument].sides(), "{name} {instrument}");
        }
        let total_changes: u64 = rows.values().map(|r| r["changes"].as_u64().unwrap()).sum();
        assert!(total_changes >= 46, "{name}: {total_changes}");
    }
}

#[test]
fn both_formats_of_a_session_give_the_same_books() {
    for (txt, jsonl) in [(RECORDINGS[0], RECORDINGS[1]), (RECORDINGS[2], RECORDINGS[3])] {
        assert_eq!(replay_json(&recording(txt)).0.stdout, replay_json(&recording(jsonl)).0.stdout);
    }
}

#[test]
fn tables_depth_and_demo() {
    let path = recording(RECORDINGS[0]);
    let output = ticktrade(&["replay", path.to_str().unwrap(), "--depth", "2"]);
    assert!(output.status.success());
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(stdout.contains("ETH-16APR21-1600-C: 1 snapshot, 26 changes, 0 gaps, 0 resyncs"), "{stdout}");
    assert!(stdout.contains("bid amount"));
    // Depth 2: no instrument block has more than two level rows.
    for block in stdout.split("\n\n").filter(|b| !b.trim().is_empty()) {
        assert!(block.lines().count() <= 4, "{block}");
    }

    let demo = ticktrade(&["replay", "--demo"]);
    assert!(demo.status.success());
    let demo = String::from_utf8(demo.stdout).unwrap();
    let first = demo.lines().next().unwrap();
    assert!(first.contains("demo replay") && first.contains("--help"), "{first}");
    assert!(demo.contains("ETH-16APR21-1600-C: 1 snapshot, 26 changes, 0 gaps, 0 resyncs"));
}

/// Writes `lines` to a temp file named like `name` (the reader does not care about names).
fn write_copy(dir: &tempfile::TempDir, name: &str, lines: &[String]) -> PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    path
}

fn lines_of(name: &str) -> Vec<String> {
    std::fs::read_to_string(recording(name)).unwrap().lines().map(str::to_owned).collect()
}

#[test]
fn corrupted_lines_are_reported_and_skipped() {
    let dir = tempfile::tempdir().unwrap();
    for (name, garbage) in [
        (
            RECORDINGS[1],
            ["garbage", r#"{"t":1,"dir":"server->client","msg":{"jsonrpc":"2.0","method":"subscr"#, "\u{1}"],
        ),
        (RECORDINGS[0], ["garbage", "1617644857.1: {\"jsonrpc\":\"2.0\",\"method\":", "wss://x"]),
    ] {
        let mut lines = lines_of(name);
        // Insert from the back so the earlier positions stay valid; 1-based line numbers after.
        let positions = [300usize, 100, 5];
        for (pos, bad) in positions.iter().zip(garbage) {
            lines.insert(*pos, bad.to_owned());
        }
        let expected_lines = [6usize, 102, 303];
        let path = write_copy(&dir, name, &lines);
        let (output, rows) = replay_json(&path);
        assert_eq!(output.status.code(), Some(2), "{name}");
        let stderr = String::from_utf8(output.stderr).unwrap();
        for line in expected_lines {
            assert!(stderr.contains(&format!(":{line}: error:")), "{name}: line {line} not reported in\n{stderr}");
        }
        assert_eq!(stderr.matches(": error:").count(), 3, "{stderr}");
        let (_, clean) = replay_json(&recording(name));
        assert_eq!(rows, clean, "{name}: the books differ from the clean replay");
    }
}

/// The index of the `nth` (0-based) change frame of `instrument` in `lines`.
fn nth_change(lines: &[String], instrument: &str, nth: usize) -> usize {
    let needle = format!(r#""channel":"book.{instrument}.raw","data":{{"type":"change""#);
    lines.iter().enumerate().filter(|(_, l)| l.contains(&needle)).nth(nth).unwrap().0
}

#[test]
fn a_broken_book_frame_makes_only_its_book_stale() {
    let name = RECORDINGS[1];
    let instrument = "ETH-16APR21-1600-C";
    let mut lines = lines_of(name);
    let at = nth_change(&lines, instrument, 3);
    lines[at] = lines[at].replacen(r#"["change","#, r#"["remove","#, 1).replacen(r#"["new","#, r#"["remove","#, 1);
    let dir = tempfile::tempdir().unwrap();
    let path = write_copy(&dir, name, &lines);
    let output = ticktrade(&["replay", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains(&format!(":{}: error: bad book.{instrument}.raw notification", at + 1)), "{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let stale: Vec<_> = stdout.lines().filter(|l| l.contains("STALE")).collect();
    assert_eq!(stale.len(), 1, "{stdout}");
    assert!(stale[0].starts_with(instrument));
}

#[test]
fn an_injected_gap_is_counted_and_a_later_snapshot_resyncs() {
    let name = RECORDINGS[1];
    let instrument = "ETH-16APR21-1600-C";
    let mut lines = lines_of(name);
    let removed = nth_change(&lines, instrument, 5);
    lines.remove(removed);
    let dir = tempfile::tempdir().unwrap();
    let path = write_copy(&dir, name, &lines);
    let (output, rows) = replay_json(&path);
    assert!(output.status.success(), "a gap is not an unreadable line");
    let stderr = String::from_utf8(output.stderr).unwrap();
    // Detected at the instrument's next change, which now holds the removed one's place.
    let detected_at = nth_change(&lines, instrument, 5) + 1;
    assert!(stderr.contains(&format!(":{detected_at}: {instrument}: sequence gap")), "{stderr}");
    for (name, row) in &rows {
        let expected_gaps = u64::from(name == instrument);
        assert_eq!(row["gaps"].as_u64(), Some(expected_gaps), "{name}");
        assert_eq!(row["resyncs"].as_u64(), Some(0), "{name}");
    }

    // The same instrument's snapshot again at the end: the stale book resyncs to it.
    let snapshot = lines
        .iter()
        .find(|l| l.contains(&format!(r#""channel":"book.{instrument}.raw","data":{{"type":"snapshot""#)))
        .unwrap()
        .clone();
    lines.push(snapshot.clone());
    let path = write_copy(&dir, name, &lines);
    let (output, rows) = replay_json(&path);
    assert!(output.status.success());
    let row = &rows[instrument];
    assert_eq!((row["gaps"].as_u64(), row["resyncs"].as_u64(), row["snapshots"].as_u64()), (Some(1), Some(1), Some(2)));
    let record: Value = serde_json::from_str(&snapshot).unwrap();
    let naive = naive_rebuild(&[record["msg"].clone()]);
    assert_eq!(sides_of(row), naive[instrument].sides());
}

#[test]
fn instruments_file_gives_the_same_books_and_unknown_instruments_fall_back() {
    let instruments = recording("DERIBIT.0__2021-04-17_http_get_instruments.txt");
    // The 2021-04-17 session: every instrument is in the same day's get_instruments reply.
    let path = recording(RECORDINGS[2]);
    let output = ticktrade(&[
        "replay",
        path.to_str().unwrap(),
        "--json",
        "--depth",
        "1000000",
        "--instruments",
        instruments.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.stderr.is_empty(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(output.stdout, replay_json(&path).0.stdout);

    // The 2021-04-05 session's options had expired by 2021-04-17: they are reported, and their
    // units are inferred from the recording instead.
    let path = recording(RECORDINGS[1]);
    let output =
        ticktrade(&["replay", path.to_str().unwrap(), "--json", "--instruments", instruments.to_str().unwrap()]);
    assert!(output.status.success());
    let stderr = String::from_utf8(output.stderr).unwrap();
    assert!(stderr.contains("ETH-6APR21-2400-P: not in"), "{stderr}");
    let missing = ticktrade(&["replay", path.to_str().unwrap(), "--instruments", "/nonexistent/instruments.json"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8(missing.stderr).unwrap().contains("/nonexistent/instruments.json"));
}

#[test]
fn one_instrument_on_two_book_channels_gives_two_books() {
    let name = RECORDINGS[1];
    let instrument = "ETH-16APR21-1600-C";
    let mut lines = lines_of(name);
    let raw = format!("book.{instrument}.raw");
    let snapshot =
        lines.iter().find(|l| l.contains(&format!(r#""channel":"{raw}","data":{{"type":"snapshot""#))).unwrap();
    // The same snapshot on the 100ms channel, whose book then never changes.
    lines.push(snapshot.replace(&raw, &format!("book.{instrument}.100ms")));
    let dir = tempfile::tempdir().unwrap();
    let path = write_copy(&dir, name, &lines);
    let (output, rows) = replay_json(&path);
    assert!(output.status.success());
    assert_eq!(rows.len(), 11);
    let raw_row = &rows[&raw];
    let agg_row = &rows[&format!("book.{instrument}.100ms")];
    assert_eq!((raw_row["changes"].as_u64(), agg_row["changes"].as_u64()), (Some(26), Some(0)));
    let (_, clean) = replay_json(&recording(name));
    assert_eq!(sides_of(raw_row), sides_of(&clean[instrument]));
}
