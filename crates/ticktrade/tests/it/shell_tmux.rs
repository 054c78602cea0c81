//! The interactive shell in a real terminal: `tests/shell/tmux_session.sh` drives `ticktrade`
//! (no subcommand: embedded simulator + shell) under tmux through tab completion, history
//! across sessions and `watch`. Needs tmux (`apt-get install -y tmux`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

#[test]
fn shell_works_in_a_real_terminal() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/shell/tmux_session.sh");
    let output = std::process::Command::new("bash")
        .arg(script)
        .arg(env!("CARGO_BIN_EXE_ticktrade"))
        .output()
        .expect("running tests/shell/tmux_session.sh");
    assert!(
        output.status.success(),
        "tmux session failed ({}):\n{}\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}
