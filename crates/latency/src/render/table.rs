//! The aligned percentile table: a header row, one row per series, names left-aligned and
//! numbers right-aligned, and `baseline_p50`/`ratio` columns when any series has a baseline.

use std::fmt;

use super::Human;
use crate::Series;

const GAP: &str = "  ";

/// Writes the table, one line per row, each ending in `\n`, no trailing spaces.
///
/// ```text
/// name       count    min     p25     p50     p75     p90     p99   p99.9     max  baseline_p50  ratio
/// ticktrade  10000  116ns  3.60µs  4.03µs  4.50µs  5.10µs  9.80µs  25.0µs  31.2µs        12.9µs  3.20x
/// ```
pub fn write_table<W: fmt::Write + ?Sized>(out: &mut W, series: &[Series]) -> fmt::Result {
    let with_baseline = series.iter().any(|s| s.baseline_p50.is_some());
    let mut rows: Vec<Vec<String>> = Vec::with_capacity(series.len() + 1);

    let mut header: Vec<String> = ["name", "count", "min", "p25", "p50", "p75", "p90", "p99", "p99.9", "max"]
        .iter()
        .map(|h| h.to_string())
        .collect();
    if with_baseline {
        header.extend(["baseline_p50".to_string(), "ratio".to_string()]);
    }
    rows.push(header);

    for s in series {
        let mut row = vec![s.name.clone(), s.percentiles.count.to_string()];
        row.extend(s.percentiles.columns().iter().map(|(_, ns)| Human(*ns).to_string()));
        if with_baseline {
            row.push(s.baseline_p50.map_or_else(|| "-".to_string(), |b| Human(b).to_string()));
            row.push(s.ratio().map_or_else(|| "-".to_string(), |r| format!("{r:.2}x")));
        }
        rows.push(row);
    }

    let n_columns = rows[0].len();
    let widths: Vec<usize> =
        (0..n_columns).map(|col| rows.iter().map(|row| row[col].chars().count()).max().unwrap_or(0)).collect();

    for row in &rows {
        let mut line = String::new();
        for (col, (cell, width)) in row.iter().zip(&widths).enumerate() {
            let pad = width - cell.chars().count();
            if col == 0 {
                line.push_str(cell);
                line.extend(std::iter::repeat_n(' ', pad));
            } else {
                line.push_str(GAP);
                line.extend(std::iter::repeat_n(' ', pad));
                line.push_str(cell);
            }
        }
        out.write_str(line.trim_end())?;
        out.write_char('\n')?;
    }
    Ok(())
}

/// The table as a `String`.
pub fn table_string(series: &[Series]) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_table(&mut out, series);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Percentiles;

    fn percentiles(base: u64) -> Percentiles {
        Percentiles {
            count: 10_000,
            min: base / 40,
            p25: base - base / 8,
            p50: base,
            p75: base + base / 8,
            p90: base * 5 / 4,
            p99: base * 5 / 2,
            p999: base * 6,
            max: base * 8,
        }
    }

    #[test]
    fn golden_without_baseline() {
        let series = [
            Series::new("decode", percentiles(116)),
            Series::new("tick_to_trade", percentiles(4_030)),
            Series::new("empty", Percentiles::default()),
        ];
        let expected = "\
name           count    min     p25     p50     p75     p90     p99   p99.9     max
decode         10000    2ns   102ns   116ns   130ns   145ns   290ns   696ns   928ns
tick_to_trade  10000  100ns  3.53µs  4.03µs  4.53µs  5.04µs  10.1µs  24.2µs  32.2µs
empty              0    0ns     0ns     0ns     0ns     0ns     0ns     0ns     0ns
";
        assert_eq!(table_string(&series), expected);
    }

    #[test]
    fn golden_with_baseline() {
        let series = [
            Series::new("ticktrade", percentiles(4_030)).with_baseline_p50(12_896),
            Series::new("no_baseline", percentiles(800)),
        ];
        let expected = "\
name         count    min     p25     p50     p75     p90     p99   p99.9     max  baseline_p50  ratio
ticktrade    10000  100ns  3.53µs  4.03µs  4.53µs  5.04µs  10.1µs  24.2µs  32.2µs        12.9µs  3.20x
no_baseline  10000   20ns   700ns   800ns   900ns  1.00µs  2.00µs  4.80µs  6.40µs             -      -
";
        assert_eq!(table_string(&series), expected);
    }

    #[test]
    fn every_row_has_the_same_column_edges() {
        let series = [
            Series::new("a", percentiles(7)).with_baseline_p50(70),
            Series::new("a much longer name", percentiles(9_999_999)),
        ];
        let text = table_string(&series);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3);
        let width = lines[0].chars().count();
        assert!(lines.iter().all(|l| l.chars().count() == width), "{text}");
    }
}
