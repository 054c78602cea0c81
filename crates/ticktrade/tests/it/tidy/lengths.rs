//! No Rust source file grows past about 600 lines without saying why: a file that long usually
//! holds several concerns, and a newcomer reads a file's structure from its module list.
//!
//! The aim is about 600 lines; the check fails past [`LIMIT`] (650), so a file near the aim
//! that gains a function is not split mid-change. A file over the limit passes only if its
//! module doc carries a line starting with [`MARKER`] followed by the reason (a hand-tuned
//! decoder kept in one piece so its fast and general paths can be read side by side, say).
//! Tests count too: a long test file is split by the behaviour it covers.

use super::pointers::checked_files;
use super::{Workspace, report};

/// Lines a source file may have before it must state why it is one file.
const LIMIT: usize = 650;

/// Starts the module-doc line that states the reason.
const MARKER: &str = "//! Why one file:";

/// The shortest reason accepted: a few words, not a placeholder.
const MIN_REASON: usize = 24;

#[test]
fn long_source_files_state_why() {
    let root = Workspace::load().root;
    let mut violations = Vec::new();
    for rel in checked_files(&root).into_iter().filter(|f| f.ends_with(".rs")) {
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else { continue };
        if let Some(problem) = length_problem(&text) {
            violations.push(format!("{rel}: {problem}"));
        }
    }
    report(&format!("source files over {LIMIT} lines (split them, or state why with `{MARKER} …`)"), &violations);
}

/// Why `text` fails the check, if it does.
fn length_problem(text: &str) -> Option<String> {
    let lines = text.lines().count();
    if lines <= LIMIT {
        return None;
    }
    let reason = text
        .lines()
        .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
        .find_map(|l| l.strip_prefix(MARKER))
        .map(str::trim);
    match reason {
        Some(reason) if reason.len() >= MIN_REASON => None,
        Some(_) => Some(format!("{lines} lines, and the reason after `{MARKER}` is too short to say anything")),
        None => Some(format!("{lines} lines and no `{MARKER}` line in the module doc")),
    }
}

#[test]
fn the_length_check_fires_on_long_files_without_a_reason() {
    let body = "fn f() {}\n".repeat(LIMIT);
    assert_eq!(length_problem(&body), None, "exactly the limit passes");
    let long = format!("{body}fn g() {{}}\n");
    assert!(length_problem(&long).unwrap().contains("no `"));
    let short_reason = format!("//! Docs.\n{MARKER} long.\n{long}");
    assert!(length_problem(&short_reason).unwrap().contains("too short"));
    let stated = format!("//! Docs.\n//!\n{MARKER} one state machine whose arms read best together.\n\n{long}");
    assert_eq!(length_problem(&stated), None);
    let after_code = format!("//! Docs.\nuse x;\n{MARKER} one state machine whose arms read best together.\n{long}");
    assert!(length_problem(&after_code).is_some(), "the reason belongs in the module doc");
}
