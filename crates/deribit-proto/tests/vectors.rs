//! Every file in `testdata/deribit/examples/` is either decoded by one of this crate's
//! decoders or named, with a reason, in `tests/vectors_skip.txt`. A file nobody claims fails.
//! Later work (typed `api` decoders) claims more files here and shrinks the skip-list.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap (working agreement).

use std::path::{Path, PathBuf};

use ticktrade_deribit_proto::book::{BookKind, DecimalLevel, decode_book, decode_book_data};
use ticktrade_deribit_proto::channel::Channel;
use ticktrade_deribit_proto::envelope::{Incoming, classify, decode_request};
use ticktrade_deribit_proto::instrument::parse_instruments_response;
use ticktrade_deribit_proto::signature::{Secret, client_signature};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/deribit/examples")
}

fn files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, base, out);
        } else {
            out.push(path.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}

/// `*` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.starts_with(head) && (0..=text.len() - head.len()).any(|i| glob(tail, &text[head.len() + i..]))
        }
    }
}

fn skip_list() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors_skip.txt")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (pattern, reason) = l.split_once(char::is_whitespace).expect("pattern then reason");
            assert!(!reason.trim().is_empty(), "skip-list entry {pattern} has no reason");
            (pattern.to_owned(), reason.trim().to_owned())
        })
        .collect()
}

/// Channels whose templates `channel::Channel` knows: their names must parse.
const KNOWN_CHANNEL_PREFIXES: [&str; 8] = [
    "book.",
    "ticker.",
    "quote.",
    "deribit_price_index.",
    "perpetual.",
    "incremental_ticker.",
    "user.portfolio.",
    "user.orders.",
];

fn expected_book_kind(name: &str) -> BookKind {
    if name.contains("group.depth") || name.contains("grouped") {
        BookKind::Window
    } else if name.contains("snapshot") || name.contains(".first.") {
        BookKind::Snapshot
    } else {
        BookKind::Change
    }
}

/// Decodes `name` with every decoder that claims it; `Ok(false)` when none does.
fn decode(name: &str, text: &str) -> Result<bool, String> {
    let file = name.rsplit('/').next().unwrap_or(name);
    let mut claimed = false;
    let mut levels: Vec<DecimalLevel> = Vec::new();

    if file == "rpc_error_codes.v2_1_1.json" {
        let rows: Vec<serde_json::Value> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        for row in rows {
            let code = row["code"].as_i64().ok_or("code")? as i32;
            ticktrade_deribit_proto::error::lookup(code).ok_or(format!("code {code} not in the table"))?;
        }
        return Ok(true);
    }
    if file.contains(".request") {
        let request = decode_request(text).map_err(|e| e.to_string())?;
        if file.starts_with("public_auth.request.client_signature") {
            let params: serde_json::Value = serde_json::from_str(request.params.ok_or("params")?.get()).unwrap();
            // The secret of REFERENCE §3.1's verified vector.
            let sig = client_signature(
                &Secret::new("AMANDASECRECT"),
                params["timestamp"].as_u64().ok_or("timestamp")?,
                params["nonce"].as_str().ok_or("nonce")?,
                params["data"].as_str().unwrap_or(""),
            );
            if params["signature"].as_str() != Some(sig.as_str()) {
                return Err(format!("signature mismatch: computed {sig}"));
            }
        }
        claimed = true;
    }
    let is_frame = file.contains(".response")
        || file.contains(".notification")
        || file.starts_with("notification.")
        || file.starts_with("error.")
        || name.starts_with("nautilus_test_data/");
    if is_frame {
        match classify(text).map_err(|e| format!("envelope: {e}"))? {
            Incoming::Response(response) => {
                if let Some(code) = file.strip_prefix("error.").and_then(|r| r.split('_').next()) {
                    let error = response.outcome.as_ref().err().ok_or("error vector without an error")?;
                    if error.code.to_string() != code {
                        return Err(format!("error code {} but file says {code}", error.code));
                    }
                }
                let instruments =
                    ["public_get_instruments.response", "public_get_instrument.response", "http_get_instrument"];
                if instruments.iter().any(|p| file.starts_with(p)) {
                    let specs = parse_instruments_response(text, 0).map_err(|e| e.to_string())?;
                    if specs.is_empty() {
                        return Err("no instruments".into());
                    }
                }
            }
            Incoming::Notification(note) => {
                if KNOWN_CHANNEL_PREFIXES.iter().any(|p| note.channel.starts_with(p))
                    && Channel::parse(note.channel).is_none()
                {
                    return Err(format!("channel {} does not parse", note.channel));
                }
                if note.channel.starts_with("book.") {
                    let header = decode_book(text.as_bytes(), &mut levels).map_err(|e| format!("book: {e}"))?;
                    if header.kind != expected_book_kind(file) {
                        return Err(format!("book kind {:?}", header.kind));
                    }
                }
            }
            Incoming::Heartbeat(_) => {}
        }
        claimed = true;
    }
    if file.starts_with("book.") && file.contains(".data.") {
        let header = decode_book_data(text.as_bytes(), &mut levels).map_err(|e| format!("book data: {e}"))?;
        if header.kind != expected_book_kind(file) {
            return Err(format!("book kind {:?}", header.kind));
        }
        claimed = true;
    }
    Ok(claimed)
}

#[test]
fn every_vector_is_decoded_or_skipped_with_a_reason() {
    let base = examples_dir();
    let mut names = Vec::new();
    files(&base, &base, &mut names);
    names.sort();
    assert!(names.len() > 600, "examples missing? found {}", names.len());
    let skips = skip_list();
    let mut used = vec![false; skips.len()];
    let (mut failures, mut unclaimed, mut decoded) = (Vec::new(), Vec::new(), 0);
    for name in &names {
        let text = std::fs::read_to_string(base.join(name)).unwrap();
        match decode(name, &text) {
            Ok(true) => decoded += 1,
            Ok(false) => match skips.iter().position(|(pattern, _)| glob(pattern, name)) {
                Some(i) => used[i] = true,
                None => unclaimed.push(name.clone()),
            },
            Err(error) => failures.push(format!("{name}: {error}")),
        }
    }
    assert!(failures.is_empty(), "{} vectors fail to decode:\n{}", failures.len(), failures.join("\n"));
    assert!(
        unclaimed.is_empty(),
        "vectors nobody claims (decode them or add a skip-list entry):\n{}",
        unclaimed.join("\n")
    );
    let stale: Vec<_> = skips.iter().zip(&used).filter(|(_, used)| !**used).map(|((p, _), _)| p.as_str()).collect();
    assert!(stale.is_empty(), "skip-list entries that match nothing left unclaimed: {stale:?}");
    assert!(decoded > 450, "only {decoded} vectors decoded");
}

#[test]
fn glob_matches() {
    assert!(glob("*.data.*.json", "ticker.instrument_name.interval.data.repeated.json"));
    assert!(glob("INDEX.md", "INDEX.md"));
    assert!(!glob("book.*.data.*", "ticker.x.data.y"));
    assert!(glob("*", ""));
}
