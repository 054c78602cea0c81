//! Node timestamps: `YYYY-MM-DDTHH:MM:SS[.fffffffff]`, UTC without a zone suffix.
//!
//! Owns: the exact conversion to `Utc` nanoseconds (dates by `ticktrade_core::time::civil`).
//! Must not: read a clock or accept a malformed timestamp silently.

use ticktrade_core::Utc;
use ticktrade_core::time::civil::{civil_from_days, days_from_civil};

/// A timestamp that is not in the node's format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad node timestamp")]
pub struct TimeError;

/// Parses `2026-04-30T20:46:43.304461819` (up to 9 fractional digits, optional `Z`).
pub fn parse_node_time(text: &str) -> Result<Utc, TimeError> {
    let b = text.as_bytes();
    let b = b.strip_suffix(b"Z").unwrap_or(b);
    if b.len() < 19
        || b[4] != b'-'
        || b[7] != b'-'
        || (b[10] != b'T' && b[10] != b' ')
        || b[13] != b':'
        || b[16] != b':'
    {
        return Err(TimeError);
    }
    let num = |range: std::ops::Range<usize>| -> Result<i64, TimeError> {
        let mut v = 0i64;
        for &c in &b[range] {
            if !c.is_ascii_digit() {
                return Err(TimeError);
            }
            v = v * 10 + i64::from(c - b'0');
        }
        Ok(v)
    };
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return Err(TimeError);
    }
    let mut nanos = 0i64;
    if b.len() > 19 {
        if b[19] != b'.' || b.len() == 20 || b.len() > 29 {
            return Err(TimeError);
        }
        let digits = b.len() - 20;
        nanos = num(20..b.len())? * 10i64.pow(9 - digits as u32);
    }
    let days = days_from_civil(year, month as u32, day as u32);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second;
    Ok(Utc::from_nanos(secs * 1_000_000_000 + nanos))
}

/// The `"block_time":"…"` of a node line, looked for in its first 256 bytes (every stream's
/// batch line starts with its block header), without decoding the line.
pub fn scan_block_time(line: &str) -> Option<Utc> {
    const KEY: &str = "\"block_time\":\"";
    let head = &line.as_bytes()[..line.len().min(256)];
    let at = head.windows(KEY.len()).position(|w| w == KEY.as_bytes())? + KEY.len();
    let rest = &line[at..];
    let end = rest.find('"')?;
    parse_node_time(&rest[..end]).ok()
}

/// Writes `utc` in the node's format with 9 fractional digits.
pub fn format_node_time(utc: Utc, out: &mut String) {
    use std::fmt::Write;
    let nanos = utc.as_nanos();
    let secs = nanos.div_euclid(1_000_000_000);
    let frac = nanos.rem_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let _ = write!(out, "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{frac:09}", rem / 3600, rem % 3600 / 60, rem % 60);
}

/// The UTC calendar date and hour of `utc`: `(yyyymmdd, hour)`, as hl-node names hourly files.
pub fn date_hour(utc: Utc) -> (u32, u32) {
    let secs = utc.as_nanos().div_euclid(1_000_000_000);
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    ((y * 10_000 + i64::from(m) * 100 + i64::from(d)) as u32, (rem / 3600) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scans_block_time_of_recorded_lines() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/hyperliquid/examples/");
        for (file, ms) in [
            ("node_raw_book_diffs_by_block.line.json", 1_777_582_003_304),
            ("node_fills_by_block.line.json", 1_777_582_006_008),
        ] {
            let line = std::fs::read_to_string(format!("{dir}{file}")).unwrap();
            assert_eq!(scan_block_time(&line).map(|t| t.as_millis()), Some(ms), "{file}");
        }
        // Not in the head, no closing quote, or not a node timestamp: nothing.
        let far = format!("{{\"pad\":\"{}\",\"block_time\":\"2026-04-30T20:46:43\"}}", "x".repeat(300));
        assert_eq!(scan_block_time(&far), None);
        assert_eq!(scan_block_time("{\"block_time\":\"2026-04-30T20:46:43"), None);
        assert_eq!(scan_block_time("{\"block_time\":\"yesterday\"}"), None);
        assert_eq!(
            scan_block_time("{\"block_time\":\"1970-01-01T00:00:01.5\",\"events\":[]}"),
            Some(Utc::from_millis(1500))
        );
    }

    #[test]
    fn parses_recorded_block_time() {
        // 1777582003304 ms is the order timestamp in the same recorded block.
        let t = parse_node_time("2026-04-30T20:46:43.304461819").unwrap();
        assert_eq!(t.as_millis(), 1_777_582_003_304);
        assert_eq!(t.as_nanos() % 1_000_000_000, 304_461_819);
        assert_eq!(parse_node_time("1970-01-01T00:00:00").unwrap(), Utc::from_nanos(0));
        assert_eq!(parse_node_time("1970-01-01T00:00:01.5").unwrap(), Utc::from_millis(1500));
    }

    #[test]
    fn rejects_garbage() {
        for bad in ["", "2026-04-30", "2026-13-30T00:00:00", "2026-04-30T20:46:43.", "2026-04-30T20:4x:43"] {
            assert!(parse_node_time(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn format_round_trips() {
        for ns in [0i64, 1_777_582_003_304_461_819, 951_782_400_000_000_001, 4_102_444_799_999_999_999] {
            let mut s = String::new();
            format_node_time(Utc::from_nanos(ns), &mut s);
            assert_eq!(parse_node_time(&s).unwrap().as_nanos(), ns, "{s}");
        }
        assert_eq!(date_hour(Utc::from_millis(1_777_582_003_304)), (20260430, 20));
    }
}
