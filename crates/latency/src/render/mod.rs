//! Reports rendered into a writer the caller owns: an aligned table, JSON lines, an SVG plot.
//!
//! Owns: the text formats and the human form of durations (`4.03µs`, `116ns`).
//! Must not: open files or print; the binary decides where the text goes. Nothing here is on
//! the hot path, so it formats and allocates freely.
//!
//! Table and SVG write into any `fmt::Write` (a `String`, or an `io::Write` through `IoFmt`);
//! JSON lines go to an `io::Write` through serde_json.

mod json;
mod svg;
mod table;

use std::fmt;
use std::io;

pub use json::{json_lines_string, write_json_lines};
pub use svg::{svg_string, write_svg};
pub use table::{table_string, write_table};

/// A duration in nanoseconds shown with 3 significant digits and the largest unit that keeps
/// the integer part under 1000: `116ns`, `4.03µs`, `40.3ms`, `1.00s`; beyond 999 s, whole
/// seconds. Integer arithmetic, so the same input always prints the same text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Human(pub u64);

impl fmt::Display for Human {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ns = u128::from(self.0);
        if ns < 1000 {
            return write!(f, "{ns}ns");
        }
        for (unit_ns, unit) in [(1_000u128, "µs"), (1_000_000, "ms"), (1_000_000_000, "s")] {
            for decimals in [2u32, 1, 0] {
                let scale = 10u128.pow(decimals);
                let scaled = (ns * scale + unit_ns / 2) / unit_ns;
                if scaled < 1000 {
                    let (int, frac) = (scaled / scale, scaled % scale);
                    return match decimals {
                        0 => write!(f, "{int}{unit}"),
                        _ => write!(f, "{int}.{frac:0width$}{unit}", width = decimals as usize),
                    };
                }
            }
        }
        write!(f, "{}s", (ns + 500_000_000) / 1_000_000_000)
    }
}

/// Lets the `fmt::Write` renderers write into an `io::Write` (a file, stdout). Keeps the first
/// I/O error, which `fmt::Error` cannot carry.
pub struct IoFmt<W: io::Write> {
    inner: W,
    error: Option<io::Error>,
}

impl<W: io::Write> IoFmt<W> {
    pub fn new(inner: W) -> IoFmt<W> {
        IoFmt { inner, error: None }
    }

    /// The writer back, or the I/O error that stopped the rendering.
    pub fn finish(self) -> io::Result<W> {
        match self.error {
            Some(error) => Err(error),
            None => Ok(self.inner),
        }
    }
}

impl<W: io::Write> fmt::Write for IoFmt<W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.inner.write_all(s.as_bytes()).map_err(|error| {
            self.error.get_or_insert(error);
            fmt::Error
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn check(ns: u64, expected: &str) {
        assert_eq!(Human(ns).to_string(), expected, "{ns} ns");
    }

    #[test]
    fn human_durations() {
        check(0, "0ns");
        check(116, "116ns");
        check(999, "999ns");
        check(1_000, "1.00µs");
        check(4_030, "4.03µs");
        check(4_034, "4.03µs");
        check(4_035, "4.04µs");
        check(9_995, "10.0µs");
        check(40_300, "40.3µs");
        check(403_000, "403µs");
        check(999_499, "999µs");
        check(999_500, "1.00ms");
        check(1_234_567, "1.23ms");
        check(60_000_000_000, "60.0s");
        check(999_400_000_000, "999s");
        check(1_234_567_000_000, "1235s");
        check(u64::MAX, "18446744074s");
    }

    #[test]
    fn io_adapter_writes_and_keeps_errors() {
        use std::fmt::Write as _;
        let mut out = IoFmt::new(Vec::new());
        write!(out, "{}", Human(4_030)).unwrap();
        assert_eq!(out.finish().unwrap(), "4.03µs".as_bytes());

        #[derive(Debug)]
        struct Broken;
        impl io::Write for Broken {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::Error::other("disk full"))
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let mut out = IoFmt::new(Broken);
        assert!(out.write_str("x").is_err());
        assert_eq!(out.finish().unwrap_err().to_string(), "disk full");
    }
}
