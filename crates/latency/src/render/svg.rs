//! The SVG plot: "latency by percentile", HdrHistogram's classic chart, drawn by hand.
//!
//! x is the percentile on a log scale of 1/(1−p), so 90%, 99%, 99.9%… are evenly spaced and the
//! tail gets the room; y is the latency on a log scale with decade ticks. Each series is one
//! line with markers and labels at p50, p99, p99.9 and max; a legend appears when several series
//! (ticktrade and its baseline) share the plot. The text is plain SVG 1.1, readable by browsers
//! and `rsvg-convert`.

use std::fmt::{self, Write as _};

use super::Human;
use crate::{CurvePoint, Series};

const WIDTH: f64 = 960.0;
const HEIGHT: f64 = 560.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = WIDTH - 40.0;
const TOP: f64 = 78.0;
const BOTTOM: f64 = HEIGHT - 70.0;
const FONT: &str = "DejaVu Sans, Helvetica, Arial, sans-serif";
const PALETTE: [&str; 6] = ["#1f6fb4", "#d9482b", "#2e9e44", "#8e5bbf", "#e0a100", "#4d4d4d"];

/// Writes a complete SVG document plotting `series` under `title`.
pub fn write_svg<W: fmt::Write + ?Sized>(out: &mut W, title: &str, series: &[Series]) -> fmt::Result {
    let curves: Vec<Vec<CurvePoint>> = series.iter().map(Series::curve_or_percentiles).collect();
    let scale = Scale::fit(series, &curves);

    writeln!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="{FONT}">"#
    )?;
    writeln!(out, r#"<rect width="100%" height="100%" fill="white"/>"#)?;
    writeln!(
        out,
        r##"<text x="{:.1}" y="30" text-anchor="middle" font-size="19" font-weight="bold" fill="#222">{}</text>"##,
        WIDTH / 2.0,
        Escaped(title)
    )?;
    write_subtitle(out, series)?;
    write_axes(out, &scale)?;

    if series.iter().all(|s| s.percentiles.count == 0) {
        writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="16" fill="#888">no samples</text>"##,
            (LEFT + RIGHT) / 2.0,
            (TOP + BOTTOM) / 2.0
        )?;
    }

    for (idx, (s, curve)) in series.iter().zip(&curves).enumerate() {
        write_curve(out, &scale, PALETTE[idx % PALETTE.len()], s, curve)?;
    }
    for (idx, s) in series.iter().enumerate() {
        write_markers(out, &scale, PALETTE[idx % PALETTE.len()], idx, series.len(), s)?;
    }
    if series.len() > 1 {
        write_legend(out, series)?;
    }
    writeln!(out, "</svg>")
}

/// The SVG as a `String`.
pub fn svg_string(title: &str, series: &[Series]) -> String {
    let mut out = String::new();
    // Writing into a String cannot fail.
    let _ = write_svg(&mut out, title, series);
    out
}

/// Maps quantiles and nanoseconds to pixels.
struct Scale {
    /// Number of "nines" on the x axis: the right edge is 1 − 10^-x_decades.
    x_decades: u32,
    /// Decades of the y axis: 10^y_lo ns at the bottom, 10^y_hi ns at the top.
    y_lo: u32,
    y_hi: u32,
}

impl Scale {
    fn fit(series: &[Series], curves: &[Vec<CurvePoint>]) -> Scale {
        let max_count = series.iter().map(|s| s.percentiles.count).max().unwrap_or(0);
        // Enough nines to show every sample, and at least four so p99.9 and max stay apart.
        let x_decades = decimal_digits(max_count.saturating_sub(1)).clamp(4, 9);

        let values = curves.iter().flatten().map(|p| p.value_ns).filter(|&v| v > 0);
        let lo = values.clone().min().unwrap_or(100);
        let hi = values.max().unwrap_or(10_000);
        let y_lo = decimal_digits(lo) - 1; // floor(log10(lo))
        let mut y_hi = decimal_digits(hi); // ceil-ish: 10^y_hi > hi
        if is_power_of_ten(hi) && y_hi - 1 > y_lo {
            y_hi -= 1;
        }
        Scale { x_decades, y_lo, y_hi: y_hi.max(y_lo + 1) }
    }

    fn x(&self, quantile: f64) -> f64 {
        let max = f64::from(self.x_decades);
        let nines = if quantile >= 1.0 { max } else { (-(1.0 - quantile).log10()).clamp(0.0, max) };
        LEFT + (RIGHT - LEFT) * nines / max
    }

    fn y(&self, ns: u64) -> f64 {
        let lo = f64::from(self.y_lo);
        let hi = f64::from(self.y_hi);
        let decades = (ns.max(1) as f64).log10().clamp(lo, hi);
        BOTTOM - (BOTTOM - TOP) * (decades - lo) / (hi - lo)
    }
}

/// Digits of `n` in base 10 (1 for 0..=9).
fn decimal_digits(n: u64) -> u32 {
    n.checked_ilog10().unwrap_or(0) + 1
}

fn is_power_of_ten(n: u64) -> bool {
    n > 0 && 10u64.checked_pow(n.ilog10()) == Some(n)
}

fn write_subtitle<W: fmt::Write + ?Sized>(out: &mut W, series: &[Series]) -> fmt::Result {
    let mut text = String::new();
    if let [only] = series {
        let p = &only.percentiles;
        let _ = write!(
            text,
            "{} · {} samples · p50 {} · p99 {} · max {}",
            only.name,
            p.count,
            Human(p.p50),
            Human(p.p99),
            Human(p.max)
        );
    } else {
        text.push_str("latency by percentile, lower is better");
    }
    writeln!(
        out,
        r##"<text x="{:.1}" y="52" text-anchor="middle" font-size="13" fill="#555">{}</text>"##,
        WIDTH / 2.0,
        Escaped(&text)
    )
}

fn write_axes<W: fmt::Write + ?Sized>(out: &mut W, scale: &Scale) -> fmt::Result {
    writeln!(out, r##"<g font-size="12" fill="#444">"##)?;
    // Horizontal grid and y tick labels: every decade, plus 2× and 5× when there is room.
    let n_decades = scale.y_hi - scale.y_lo;
    for decade in scale.y_lo..=scale.y_hi {
        let base = 10u64.pow(decade);
        for (mult, major) in [(1u64, true), (2, false), (5, false)] {
            let ns = base * mult;
            if decade == scale.y_hi && mult > 1 {
                break;
            }
            let y = scale.y(ns);
            let (stroke, width) = if major { ("#c8c8c8", 1.0) } else { ("#ececec", 1.0) };
            writeln!(
                out,
                r#"<line x1="{LEFT}" y1="{y:.1}" x2="{RIGHT}" y2="{y:.1}" stroke="{stroke}" stroke-width="{width}"/>"#
            )?;
            if major || n_decades <= 3 {
                let weight = if major { "" } else { r##" fill="#888""## };
                writeln!(
                    out,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="end"{weight}>{}</text>"#,
                    LEFT - 8.0,
                    y + 4.0,
                    Human(ns)
                )?;
            }
        }
    }
    // Vertical grid and x tick labels at 0%, 90%, 99%, 99.9%, …
    for nines in 0..=scale.x_decades {
        let quantile = 1.0 - 10f64.powi(-(nines as i32));
        let x = scale.x(quantile);
        writeln!(out, r##"<line x1="{x:.1}" y1="{TOP}" x2="{x:.1}" y2="{BOTTOM}" stroke="#dddddd"/>"##)?;
        writeln!(
            out,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            BOTTOM + 18.0,
            PercentLabel(nines)
        )?;
    }
    writeln!(
        out,
        r##"<rect x="{LEFT}" y="{TOP}" width="{:.1}" height="{:.1}" fill="none" stroke="#666"/>"##,
        RIGHT - LEFT,
        BOTTOM - TOP
    )?;
    writeln!(out, "</g>")?;
    writeln!(
        out,
        r##"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="14" fill="#222">percentile (log scale: 90%, 99%, 99.9% … evenly spaced)</text>"##,
        (LEFT + RIGHT) / 2.0,
        BOTTOM + 46.0
    )?;
    let mid_y = (TOP + BOTTOM) / 2.0;
    writeln!(
        out,
        r##"<text x="24" y="{mid_y:.1}" text-anchor="middle" font-size="14" fill="#222" transform="rotate(-90 24 {mid_y:.1})">latency (log scale)</text>"##
    )
}

/// `0%`, `90%`, `99%`, `99.9%`, `99.99%` … for 0, 1, 2, 3, 4 … nines.
struct PercentLabel(u32);

impl fmt::Display for PercentLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("0%"),
            1 => f.write_str("90%"),
            n => {
                f.write_str("99.")?;
                for _ in 2..n {
                    f.write_str("9")?;
                }
                f.write_str("%")
            }
        }
    }
}

fn write_curve<W: fmt::Write + ?Sized>(
    out: &mut W,
    scale: &Scale,
    colour: &str,
    series: &Series,
    curve: &[CurvePoint],
) -> fmt::Result {
    if curve.is_empty() {
        return Ok(());
    }
    let mut points = String::new();
    for point in curve {
        let _ = write!(points, "{:.1},{:.1} ", scale.x(point.quantile), scale.y(point.value_ns));
    }
    writeln!(
        out,
        r#"<polyline fill="none" stroke="{colour}" stroke-width="2.2" stroke-linejoin="round" points="{}"><title>{}</title></polyline>"#,
        points.trim_end(),
        Escaped(&series.name)
    )
}

fn write_markers<W: fmt::Write + ?Sized>(
    out: &mut W,
    scale: &Scale,
    colour: &str,
    idx: usize,
    n_series: usize,
    series: &Series,
) -> fmt::Result {
    let p = &series.percentiles;
    if p.count == 0 {
        return Ok(());
    }
    for (label, quantile, ns) in
        [("p50", 0.5, p.p50), ("p99", 0.99, p.p99), ("p99.9", 0.999, p.p999), ("max", 1.0, p.max)]
    {
        let (x, y) = (scale.x(quantile), scale.y(ns));
        writeln!(
            out,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="4.5" fill="{colour}" stroke="white" stroke-width="1.5"/>"#
        )?;
        // Labels sit above the line for the first series and below it for the second, so two
        // curves that run close together do not print over each other.
        let below = n_series > 1 && idx % 2 == 1;
        let ty = if below { y + 18.0 } else { y - 9.0 };
        let (tx, anchor) = if x > RIGHT - 110.0 { (x - 7.0, "end") } else { (x + 7.0, "start") };
        writeln!(
            out,
            r#"<text x="{tx:.1}" y="{ty:.1}" text-anchor="{anchor}" font-size="12" font-weight="bold" fill="{colour}" stroke="white" stroke-width="3" paint-order="stroke">{label} {}</text>"#,
            Human(ns)
        )?;
    }
    Ok(())
}

fn write_legend<W: fmt::Write + ?Sized>(out: &mut W, series: &[Series]) -> fmt::Result {
    let x = LEFT + 14.0;
    let mut y = TOP + 14.0;
    let height = 22.0 * series.len() as f64 + 8.0;
    writeln!(
        out,
        r##"<rect x="{:.1}" y="{:.1}" width="330" height="{height:.1}" rx="4" fill="white" fill-opacity="0.9" stroke="#bbb"/>"##,
        x - 8.0,
        y - 6.0
    )?;
    for (idx, s) in series.iter().enumerate() {
        let colour = PALETTE[idx % PALETTE.len()];
        let cy = y + 10.0;
        writeln!(
            out,
            r#"<line x1="{x:.1}" y1="{cy:.1}" x2="{:.1}" y2="{cy:.1}" stroke="{colour}" stroke-width="3"/>"#,
            x + 26.0
        )?;
        writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="13" fill="#222">{} <tspan fill="#666">n={} p50 {}</tspan></text>"##,
            x + 34.0,
            cy + 4.5,
            Escaped(&s.name),
            s.percentiles.count,
            Human(s.percentiles.p50)
        )?;
        y += 22.0;
    }
    Ok(())
}

/// Text with `&`, `<`, `>` and quotes escaped for XML.
struct Escaped<'a>(&'a str);

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in self.0.chars() {
            match c {
                '&' => f.write_str("&amp;")?,
                '<' => f.write_str("&lt;")?,
                '>' => f.write_str("&gt;")?,
                '"' => f.write_str("&quot;")?,
                '\'' => f.write_str("&apos;")?,
                c => f.write_char(c)?,
            }
        }
        Ok(())
    }
}
