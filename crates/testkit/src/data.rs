//! Loaders for the repository's `testdata/`: JSON vectors, recordings and their listings.
//!
//! Owns: where `testdata/` is (`../../testdata` from this crate's manifest, so every crate's
//! tests find the same files in a clean clone) and the `*.frames.jsonl` recording format: one
//! line per frame, `{"t": <receive epoch seconds>, "dir": "client->server"|"server->client",
//! "msg": <frame JSON>}`.
//! Must not: read anything outside the repository's `testdata/`.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::value::RawValue;

/// The path of `rel` inside the repository's `testdata/`.
pub fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata").join(rel)
}

/// The bytes of `testdata/<rel>`. Panics with the path if it cannot be read.
pub fn read_testdata(rel: &str) -> Vec<u8> {
    let path = testdata(rel);
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// A Deribit JSON vector from `testdata/deribit/examples/`.
pub fn deribit_vector(name: &str) -> Vec<u8> {
    read_testdata(&format!("deribit/examples/{name}"))
}

/// A Hyperliquid vector from `testdata/hyperliquid/examples/`.
pub fn hl_vector(name: &str) -> Vec<u8> {
    read_testdata(&format!("hyperliquid/examples/{name}"))
}

/// Names of the files (not directories) directly in `testdata/<dir>`, sorted.
pub fn vector_names(dir: &str) -> Vec<String> {
    let path = testdata(dir);
    let entries = std::fs::read_dir(&path).unwrap_or_else(|e| panic!("cannot list {}: {e}", path.display()));
    let mut names: Vec<String> = entries
        .filter_map(|entry| {
            let entry = entry.unwrap_or_else(|e| panic!("cannot list {}: {e}", path.display()));
            let is_file = entry.file_type().is_ok_and(|t| t.is_file());
            is_file.then(|| entry.file_name().to_string_lossy().into_owned())
        })
        .collect();
    names.sort_unstable();
    names
}

/// Which way a recorded frame went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    ClientToServer,
    ServerToClient,
}

/// One line of a `*.frames.jsonl` recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedFrame {
    /// Receive time, nanoseconds since the Unix epoch, exact from the recorded decimal seconds.
    pub recv_utc_ns: i64,
    pub direction: Direction,
    /// The frame's JSON text exactly as recorded.
    pub msg: String,
}

#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    t: &'a RawValue,
    dir: &'a str,
    #[serde(borrow)]
    msg: &'a RawValue,
}

/// The frames the server sent (what a client decodes), in order, as JSON text. `file` is a
/// path under `testdata/` or the bare name of a recording anywhere in it.
pub fn recorded_frames(file: &str) -> Vec<String> {
    recorded_frame_lines(file)
        .into_iter()
        .filter(|frame| frame.direction == Direction::ServerToClient)
        .map(|frame| frame.msg)
        .collect()
}

/// Every line of a recording, both directions, with receive times.
pub fn recorded_frame_lines(file: &str) -> Vec<RecordedFrame> {
    let path = find_recording(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .map(|(idx, line)| parse_line(line).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), idx + 1)))
        .collect()
}

fn parse_line(line: &str) -> Result<RecordedFrame, String> {
    let line: Line<'_> = serde_json::from_str(line).map_err(|e| e.to_string())?;
    let direction = match line.dir {
        "client->server" => Direction::ClientToServer,
        "server->client" => Direction::ServerToClient,
        other => return Err(format!("unknown dir {other:?}")),
    };
    let recv_utc_ns = epoch_seconds_to_nanos(line.t.get()).ok_or_else(|| format!("bad t {}", line.t.get()))?;
    Ok(RecordedFrame { recv_utc_ns, direction, msg: line.msg.get().to_string() })
}

/// "1618677848.8235142" → 1_618_677_848_823_514_200, exactly (digits past nanoseconds dropped).
fn epoch_seconds_to_nanos(text: &str) -> Option<i64> {
    let (secs, frac) = text.split_once('.').unwrap_or((text, ""));
    if secs.is_empty() || !secs.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut nanos: i64 = 0;
    for idx in 0..9 {
        let digit = frac.as_bytes().get(idx).map_or(0, |b| i64::from(b - b'0'));
        nanos = nanos * 10 + digit;
    }
    secs.parse::<i64>().ok()?.checked_mul(1_000_000_000)?.checked_add(nanos)
}

/// `file` as a path under `testdata/`, or else the one recording anywhere under it with that name.
fn find_recording(file: &str) -> PathBuf {
    let direct = testdata(file);
    if direct.is_file() {
        return direct;
    }
    let mut found = Vec::new();
    find_named(&testdata(""), file, &mut found);
    match found.len() {
        1 => found.remove(0),
        0 => panic!("no recording named {file} under {}", testdata("").display()),
        _ => panic!("several recordings named {file}: {found:?}"),
    }
}

fn find_named(dir: &Path, name: &str, found: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            find_named(&path, name, found);
        } else if entry.file_name().to_str() == Some(name) {
            found.push(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_seconds_are_exact() {
        assert_eq!(epoch_seconds_to_nanos("1618677848.8235142"), Some(1_618_677_848_823_514_200));
        assert_eq!(epoch_seconds_to_nanos("1618677848"), Some(1_618_677_848_000_000_000));
        assert_eq!(epoch_seconds_to_nanos("1.0000000019"), Some(1_000_000_001));
        assert_eq!(epoch_seconds_to_nanos("-1.5"), None);
        assert_eq!(epoch_seconds_to_nanos("1e9"), None);
        assert_eq!(epoch_seconds_to_nanos(".5"), None);
    }

    #[test]
    fn parse_line_keeps_the_frame_text() {
        let frame = parse_line(r#"{"t":12.5,"dir":"server->client","msg":{"a": [1, 2.50]}}"#).unwrap();
        assert_eq!(
            frame,
            RecordedFrame {
                recv_utc_ns: 12_500_000_000,
                direction: Direction::ServerToClient,
                msg: r#"{"a": [1, 2.50]}"#.to_string()
            }
        );
        assert!(parse_line(r#"{"t":1,"dir":"sideways","msg":{}}"#).is_err());
        assert!(parse_line("not json").is_err());
    }
}
