#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Adding a venue needs no change outside its own module: the shell, order management, the
//! `trade` command and the shell's tests reach a venue only through the `Venue` trait and
//! `venues::open`. This fails if any of them names a type, constant or path of the Deribit
//! module (or its protocol crate), so a second venue can be added beside it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Code lines only (comments explain, they do not couple).
fn code(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines().enumerate().filter(|(_, l)| !l.trim_start().starts_with("//")).map(|(i, l)| (i + 1, l))
}

fn words(line: &str) -> impl Iterator<Item = &str> {
    line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')).filter(|w| !w.is_empty())
}

/// Names the Deribit module exports (`pub struct/enum/const/fn/type/mod X`, and re-exports from
/// `ticktrade_deribit_proto`), except what it merely re-exports from the venue-neutral `venue`
/// module.
fn deribit_exports() -> BTreeSet<String> {
    let mut files = Vec::new();
    rust_files(&root().join("crates/gateway/src/deribit"), &mut files);
    let mut names = BTreeSet::from(["Deribit".to_owned()]);
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        for (_, line) in code(&text) {
            let line = line.trim_start();
            // A re-export of Deribit's own crate names Deribit as much as a local type does.
            if let Some(path) = line.strip_prefix("pub use ticktrade_deribit_proto::") {
                let last = path.rsplit("::").next().unwrap_or("");
                names.extend(words(last).filter(|w| w.len() > 3).map(str::to_owned));
                continue;
            }
            let Some(rest) = line.strip_prefix("pub ") else { continue };
            let mut it = rest.split_whitespace();
            if let (Some("struct" | "enum" | "const" | "type" | "mod" | "trait" | "fn"), Some(name)) =
                (it.next(), it.next())
            {
                let name: String = name.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if name.len() > 3 {
                    names.insert(name);
                }
            }
        }
    }
    // Deribit's method names (`instrument`, `tracker`…) are ordinary words; only types,
    // constants and modules identify the venue.
    names.retain(|n| n.chars().next().is_some_and(|c| c.is_ascii_uppercase()));
    names
}

#[test]
fn nothing_outside_the_venue_module_names_it() {
    let exports = deribit_exports();
    for expected in ["Deribit", "DeribitConfig", "AuthMethod", "PRODUCTION_URL", "TESTNET_URL", "RateLimits"] {
        assert!(exports.contains(expected), "export scan broken: {expected} not found in {exports:?}");
    }
    let mut guarded = Vec::new();
    let root = root();
    rust_files(&root.join("crates/ticktrade/src/shell"), &mut guarded);
    for file in [
        "crates/gateway/src/oms.rs",
        "crates/gateway/src/venue.rs",
        "crates/ticktrade/tests/it/shell_sim.rs",
        "crates/ticktrade/src/trade.rs",
        "crates/ticktrade/tests/it/trade_script.rs",
    ] {
        guarded.push(root.join(file));
    }
    rust_files(&root.join("crates/ticktrade/src/trade"), &mut guarded);
    assert!(guarded.len() >= 10, "{guarded:?}");

    let mut leaks = Vec::new();
    for file in &guarded {
        let text = std::fs::read_to_string(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
        let is_venue_rs = file.ends_with("venue.rs");
        for (n, line) in code(&text) {
            let named = words(line).find(|w| exports.contains(*w));
            let path = line.contains("deribit::");
            // venue.rs re-exports the workspace's `Secret` newtype from the protocol crate.
            let proto = line.contains("deribit_proto") && !(is_venue_rs && line.contains("signature::Secret"));
            if named.is_some() || path || proto {
                leaks.push(format!("{}:{n}: {}", file.strip_prefix(&root).unwrap_or(file).display(), line.trim()));
            }
        }
    }
    assert!(leaks.is_empty(), "venue-specific names outside the venue module:\n{}", leaks.join("\n"));
}
