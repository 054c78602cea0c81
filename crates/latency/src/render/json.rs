//! JSON lines: one object per series per line, for scripts and for comparing runs.
//!
//! Keys, in order: `name`, `unit` (always `"ns"`), `count`, `min`, `p25`, `p50`, `p75`, `p90`, `p99`,
//! `p999`, `max`; then, only when the series has a baseline, `baseline_p50` and `ratio`
//! (`baseline_p50 / p50`, `null` when `p50` is zero). Values are integer nanoseconds.

use std::io;

use serde::Serialize;

use crate::Series;

#[derive(Serialize)]
struct Line<'a> {
    name: &'a str,
    unit: &'a str,
    count: u64,
    min: u64,
    p25: u64,
    p50: u64,
    p75: u64,
    p90: u64,
    p99: u64,
    p999: u64,
    max: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    baseline_p50: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ratio: Option<Option<f64>>,
}

impl<'a> Line<'a> {
    fn new(series: &'a Series) -> Line<'a> {
        let p = &series.percentiles;
        Line {
            name: &series.name,
            unit: series.unit,
            count: p.count,
            min: p.min,
            p25: p.p25,
            p50: p.p50,
            p75: p.p75,
            p90: p.p90,
            p99: p.p99,
            p999: p.p999,
            max: p.max,
            baseline_p50: series.baseline_p50,
            ratio: series.baseline_p50.map(|_| series.ratio()),
        }
    }
}

/// Writes one JSON object per series, each followed by `\n`.
pub fn write_json_lines<W: io::Write>(mut out: W, series: &[Series]) -> io::Result<()> {
    for s in series {
        serde_json::to_writer(&mut out, &Line::new(s))?;
        out.write_all(b"\n")?;
    }
    Ok(())
}

/// The JSON lines as a `String`.
pub fn json_lines_string(series: &[Series]) -> String {
    let mut text = String::new();
    for s in series {
        // Serialising plain integers and strings into memory cannot fail.
        if let Ok(line) = serde_json::to_string(&Line::new(s)) {
            text.push_str(&line);
            text.push('\n');
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Percentiles;
    use serde_json::Value;

    fn percentiles() -> Percentiles {
        Percentiles { count: 3, min: 1, p25: 100, p50: 200, p75: 300, p90: 400, p99: 500, p999: 600, max: 700 }
    }

    fn keys(value: &Value) -> Vec<&str> {
        value.as_object().unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn keys_and_values_round_trip() {
        let series = [
            Series::new("tick \"to\" trade", percentiles()).with_baseline_p50(900),
            Series::new("decode", percentiles()),
        ];
        let mut bytes = Vec::new();
        write_json_lines(&mut bytes, &series).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert_eq!(text, json_lines_string(&series));
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2);
        assert!(text.ends_with('\n'));

        let base = ["name", "unit", "count", "min", "p25", "p50", "p75", "p90", "p99", "p999", "max"];
        let mut with_baseline = base.to_vec();
        with_baseline.extend(["baseline_p50", "ratio"]);
        let mut got = keys(&lines[0]);
        got.sort_unstable();
        with_baseline.sort_unstable();
        assert_eq!(got, with_baseline);
        let mut got = keys(&lines[1]);
        got.sort_unstable();
        let mut base = base.to_vec();
        base.sort_unstable();
        assert_eq!(got, base);

        let first = &lines[0];
        assert_eq!(first["name"], "tick \"to\" trade");
        assert_eq!(first["unit"], "ns");
        for (key, want) in [
            ("count", 3),
            ("min", 1),
            ("p25", 100),
            ("p50", 200),
            ("p75", 300),
            ("p90", 400),
            ("p99", 500),
            ("p999", 600),
            ("max", 700),
            ("baseline_p50", 900),
        ] {
            assert_eq!(first[key].as_u64(), Some(want), "{key}");
        }
        assert_eq!(first["ratio"].as_f64(), Some(4.5));
    }

    #[test]
    fn ratio_is_null_when_p50_is_zero() {
        let series = [Series::new("x", Percentiles::default()).with_baseline_p50(5)];
        let value: Value = serde_json::from_str(json_lines_string(&series).trim_end()).unwrap();
        assert!(value["ratio"].is_null());
        assert_eq!(value["baseline_p50"], 5);
    }
}
