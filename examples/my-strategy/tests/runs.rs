//! The template runs: `my-strategy` with its own config trades on the embedded simulator for
//! a few seconds, stops cleanly on its own, and journals what it sent. A bad `[custom]` table
//! is refused at start, naming the key.

#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};

const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/my-strategy.toml");

#[test]
fn my_strategy_trades_on_the_embedded_simulator_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let journal = dir.path().join("journal.jsonl");
    let output = Command::new(env!("CARGO_BIN_EXE_my-strategy"))
        .args(["--config", CONFIG, "--duration", "3", "--quiet", "--journal"])
        .arg(&journal)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "{printed}");
    assert!(printed.contains("stopped cleanly"), "{printed}");
    let text = std::fs::read_to_string(&journal).unwrap();
    assert!(text.lines().any(|l| l.contains(r#""request":"place""#) && l.contains(r#""label":"mine-"#)), "{text}");
}

#[test]
fn a_bad_custom_table_is_refused_naming_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bad.toml");
    let text = std::fs::read_to_string(CONFIG).unwrap().replace(r#"amount = "10""#, r#"amount = "10.5""#);
    std::fs::write(&config, text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_my-strategy"))
        .arg("--config")
        .arg(&config)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(printed.contains("custom.amount"), "{printed}");
}
