//! No test waits on the wall clock for more than [`LIMIT_MS`]: a test that needs time to pass
//! moves a manual clock or runs on tokio's paused clock (`#[tokio::test(start_paused = true)]`),
//! and a test that waits for something to happen polls for it with a deadline.
//!
//! Checked in test code (the files under a crate's `tests/`, and `#[cfg(test)]` items): a call
//! to a `sleep` whose argument is a literal `Duration::from_secs(N)` or `from_millis(N)` over
//! the limit fails, unless the nearest test attribute above it starts the test paused. A sleep
//! on a computed duration is not checked; benchmark code (not test code) is free to sleep.

use super::pointers::checked_files;
use super::scan::scan;
use super::{Workspace, report};

/// The longest literal sleep a test may take on the wall clock.
const LIMIT_MS: u64 = 200;

#[test]
fn no_test_sleeps_on_the_wall_clock_past_the_limit() {
    let root = Workspace::load().root;
    let mut violations = Vec::new();
    for rel in checked_files(&root).into_iter().filter(|f| f.ends_with(".rs")) {
        let Ok(text) = std::fs::read_to_string(root.join(&rel)) else { continue };
        let in_tests_dir = rel.contains("/tests/");
        let mut paused = false;
        for line in scan(&text) {
            let code = line.code.trim();
            if code.starts_with("#[test]") || code.starts_with("#[tokio::test") {
                paused = code.contains("start_paused = true");
            }
            if !(in_tests_dir || line.test_only) {
                continue;
            }
            if let Some(ms) = literal_sleep_ms(&line.code)
                && ms > LIMIT_MS
                && !paused
            {
                violations.push(format!("{rel}:{}: sleeps {ms} ms: {}", line.number, line.text.trim()));
            }
        }
    }
    report(
        &format!(
            "tests sleeping over {LIMIT_MS} ms of wall time (poll with a deadline, or use a manual or paused clock)"
        ),
        &violations,
    );
}

/// The milliseconds of a `sleep(Duration::from_secs(N))` or `…from_millis(N)` call in `code`.
fn literal_sleep_ms(code: &str) -> Option<u64> {
    let call = &code[code.find("sleep(")? + "sleep(".len()..];
    for (unit, factor) in [("from_secs(", 1000), ("from_millis(", 1)] {
        if let Some(at) = call.find(unit) {
            let digits: String =
                call[at + unit.len()..].chars().take_while(|c| c.is_ascii_digit() || *c == '_').collect();
            let value: u64 = digits.replace('_', "").parse().ok()?;
            return Some(value * factor);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::literal_sleep_ms;

    #[test]
    fn literal_durations_are_read_in_milliseconds() {
        assert_eq!(literal_sleep_ms("tokio::time::sleep(Duration::from_millis(2_600)).await;"), Some(2600));
        assert_eq!(literal_sleep_ms("std::thread::sleep(Duration::from_secs(1));"), Some(1000));
        assert_eq!(literal_sleep_ms("sleep(std::time::Duration::from_millis(20))"), Some(20));
        assert_eq!(literal_sleep_ms("sleep(gap)"), None);
        assert_eq!(literal_sleep_ms("let d = Duration::from_secs(5);"), None);
    }
}
