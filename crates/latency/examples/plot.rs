//! Renders a sample plot, table and JSON lines from synthetic latencies, so a person can look
//! at the formats: `cargo run -p ticktrade-latency --example plot > /tmp/latency.svg`.
//! The table and JSON go to stderr.

use std::io::Write as _;

use ticktrade_latency::{Histogram, IoFmt, Series, write_json_lines, write_svg, write_table};

/// A deterministic long-tailed distribution: a body around `median_ns` and a sparse tail.
fn synthetic(median_ns: u64, n: u64, seed: u64) -> Histogram {
    let mut histogram = Histogram::new();
    let mut state = seed;
    for _ in 0..n {
        // xorshift64: reproducible without a rand dependency.
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        let u = state % 1_000_000;
        let body = median_ns * (900 + u % 200) / 1000;
        let tail = match u {
            0..=989_999 => 0,
            990_000..=998_999 => median_ns * (u % 5 + 1),
            _ => median_ns * (u % 50 + 10),
        };
        histogram.record(body + tail);
    }
    histogram
}

fn main() -> std::io::Result<()> {
    let ticktrade = synthetic(4_030, 100_000, 0x9E37_79B9_7F4A_7C15);
    let baseline = synthetic(12_900, 100_000, 0xD1B5_4A32_D192_ED03);
    let series = [
        Series::from_histogram("ticktrade", &ticktrade).with_baseline_p50(baseline.percentiles().p50),
        Series::from_histogram("serde_json + BTreeMap baseline", &baseline),
    ];
    let mut err = IoFmt::new(std::io::stderr().lock());
    let _ = write_table(&mut err, &series);
    let mut err = err.finish()?;
    write_json_lines(&mut err, &series)?;
    let single = std::env::args().any(|a| a == "--single");
    let shown = if single { &series[..1] } else { &series[..] };
    let mut out = IoFmt::new(std::io::stdout().lock());
    let _ = write_svg(&mut out, "tick-to-trade latency (synthetic)", shown);
    out.finish()?.flush()
}
