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
    let legend = (series.len() > 1).then(|| legend_rect(series));
    if let Some(rect) = legend {
        write_legend(out, series, rect)?;
    }
    write_markers(out, &place_markers(&scale, series, legend))?;
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
                let fill = if major { "" } else { r##" fill="#888""## };
                writeln!(
                    out,
                    r#"<text x="{:.1}" y="{:.1}" text-anchor="end"{fill}>{}</text>"#,
                    LEFT - 8.0,
                    y + 4.0,
                    Tick(ns)
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

/// An axis tick value: `1µs`, `20µs`, `500ms`; exact values print without decimals.
struct Tick(u64);

impl fmt::Display for Tick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (unit_ns, unit) in [(1_000_000_000, "s"), (1_000_000, "ms"), (1_000, "µs")] {
            if self.0 >= unit_ns && self.0.is_multiple_of(unit_ns) {
                return write!(f, "{}{unit}", self.0 / unit_ns);
            }
        }
        if self.0 < 1_000 { write!(f, "{}ns", self.0) } else { write!(f, "{}", Human(self.0)) }
    }
}

/// `0%`, `90%`, `99%`, `99.9%`, `99.99%` … for 0, 1, 2, 3, 4 … nines.
struct PercentLabel(u32);

impl fmt::Display for PercentLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            0 => f.write_str("0%"),
            1 => f.write_str("90%"),
            2 => f.write_str("99%"),
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

/// An axis-aligned box in pixels, for keeping labels apart.
#[derive(Clone, Copy, Debug)]
struct Rect {
    x0: f64,
    y0: f64,
    x1: f64,
    y1: f64,
}

impl Rect {
    fn overlaps(&self, other: &Rect) -> bool {
        self.x0 < other.x1 && other.x0 < self.x1 && self.y0 < other.y1 && other.y0 < self.y1
    }

    fn inside_plot(&self) -> bool {
        self.x0 >= LEFT + 2.0 && self.x1 <= RIGHT - 2.0 && self.y0 >= TOP + 2.0 && self.y1 <= BOTTOM - 2.0
    }
}

/// Approximate width of `text` at `font_px` in the plot's sans-serif font.
fn text_width(text: &str, font_px: f64) -> f64 {
    text.chars().count() as f64 * font_px * 0.62
}

/// A marker and its label, placed.
struct Marker {
    colour: &'static str,
    cx: f64,
    cy: f64,
    label: String,
    tx: f64,
    ty: f64,
    anchor: &'static str,
}

/// Markers at p50, p99, p99.9 and max of every series, with labels placed where they overlap
/// neither another label, a marker, the legend nor the plot's edge (first fit among eight
/// spots around the marker; the first spot if none fits).
fn place_markers(scale: &Scale, series: &[Series], legend: Option<Rect>) -> Vec<Marker> {
    let mut markers = Vec::new();
    for (idx, s) in series.iter().enumerate() {
        let p = &s.percentiles;
        if p.count == 0 {
            continue;
        }
        let points = [("p50", 0.5, p.p50), ("p99", 0.99, p.p99), ("p99.9", 0.999, p.p999), ("max", 1.0, p.max)];
        for (name, quantile, ns) in points {
            markers.push(Marker {
                colour: PALETTE[idx % PALETTE.len()],
                cx: scale.x(quantile),
                cy: scale.y(ns),
                label: format!("{name} {}", Human(ns)),
                tx: 0.0,
                ty: 0.0,
                anchor: "start",
            });
        }
    }
    let mut taken: Vec<Rect> = markers
        .iter()
        .map(|m| Rect { x0: m.cx - 5.0, y0: m.cy - 5.0, x1: m.cx + 5.0, y1: m.cy + 5.0 })
        .chain(legend)
        .collect();
    let n_per_series = 4;
    for (i, marker) in markers.iter_mut().enumerate() {
        // The first series prefers labels above its line, the second below, and so on.
        let prefer_below = (i / n_per_series) % 2 == 1;
        let (near, far) = if prefer_below { ([18.0, -9.0], [33.0, -24.0]) } else { ([-9.0, 18.0], [-24.0, 33.0]) };
        let width = text_width(&marker.label, 12.0);
        let candidates: Vec<(f64, f64, &'static str, Rect)> = near
            .into_iter()
            .chain(far)
            .flat_map(|dy| [(7.0, dy, "start"), (-7.0, dy, "end")])
            .map(|(dx, dy, anchor)| {
                let (tx, ty) = (marker.cx + dx, marker.cy + dy);
                let x0 = if anchor == "start" { tx } else { tx - width };
                (tx, ty, anchor, Rect { x0, y0: ty - 11.0, x1: x0 + width, y1: ty + 3.0 })
            })
            .collect();
        let free = |r: &Rect| r.inside_plot() && !taken.iter().any(|t| t.overlaps(r));
        let chosen = candidates
            .iter()
            .find(|c| free(&c.3))
            .or_else(|| candidates.iter().find(|c| c.3.inside_plot()))
            .unwrap_or(&candidates[0]);
        let (tx, ty, anchor, rect) = *chosen;
        marker.tx = tx;
        marker.ty = ty;
        marker.anchor = anchor;
        taken.push(rect);
    }
    markers
}

fn write_markers<W: fmt::Write + ?Sized>(out: &mut W, markers: &[Marker]) -> fmt::Result {
    for m in markers {
        writeln!(
            out,
            r#"<circle cx="{:.1}" cy="{:.1}" r="4.5" fill="{}" stroke="white" stroke-width="1.5"/>"#,
            m.cx, m.cy, m.colour
        )?;
    }
    // Labels after every marker, so no marker is drawn over a label.
    for m in markers {
        writeln!(
            out,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="{}" font-size="12" font-weight="bold" fill="{}" stroke="white" stroke-width="3" paint-order="stroke">{}</text>"#,
            m.tx,
            m.ty,
            m.anchor,
            m.colour,
            Escaped(&m.label)
        )?;
    }
    Ok(())
}

const LEGEND_ROW: f64 = 22.0;

fn legend_text(series: &Series) -> (String, String) {
    let p = &series.percentiles;
    (series.name.clone(), format!("n={} p50 {} p99 {}", p.count, Human(p.p50), Human(p.p99)))
}

/// Where the legend goes: the plot's top-left corner, which a rising latency curve leaves empty.
fn legend_rect(series: &[Series]) -> Rect {
    let width = series
        .iter()
        .map(legend_text)
        .map(|(name, stats)| 34.0 + text_width(&name, 13.0) + 6.0 + text_width(&stats, 12.0))
        .fold(0.0, f64::max)
        + 22.0;
    let (x0, y0) = (LEFT + 6.0, TOP + 8.0);
    Rect { x0, y0, x1: x0 + width, y1: y0 + LEGEND_ROW * series.len() as f64 + 8.0 }
}

fn write_legend<W: fmt::Write + ?Sized>(out: &mut W, series: &[Series], rect: Rect) -> fmt::Result {
    writeln!(
        out,
        r##"<rect x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" rx="4" fill="white" fill-opacity="0.92" stroke="#bbb"/>"##,
        rect.x0,
        rect.y0,
        rect.x1 - rect.x0,
        rect.y1 - rect.y0
    )?;
    let x = rect.x0 + 10.0;
    for (idx, s) in series.iter().enumerate() {
        let colour = PALETTE[idx % PALETTE.len()];
        let cy = rect.y0 + 4.0 + LEGEND_ROW * (idx as f64 + 0.5);
        let (name, stats) = legend_text(s);
        writeln!(
            out,
            r#"<line x1="{x:.1}" y1="{cy:.1}" x2="{:.1}" y2="{cy:.1}" stroke="{colour}" stroke-width="3"/>"#,
            x + 24.0
        )?;
        writeln!(
            out,
            r##"<text x="{:.1}" y="{:.1}" font-size="13" fill="#222">{} <tspan font-size="12" fill="#666">{}</tspan></text>"##,
            x + 32.0,
            cy + 4.5,
            Escaped(&name),
            Escaped(&stats)
        )?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Histogram, Percentiles};

    fn histogram(scale: u64) -> Histogram {
        let mut histogram = Histogram::new();
        for v in 1..=10_000u64 {
            histogram.record(v * scale);
        }
        histogram
    }

    /// Parses the SVG (failing on malformed XML) and returns every text node's content.
    fn texts(svg: &str) -> Vec<String> {
        let doc = roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("malformed SVG: {e}\n{svg}"));
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        assert_eq!(root.tag_name().namespace(), Some("http://www.w3.org/2000/svg"));
        doc.descendants()
            .filter(|n| n.has_tag_name("text"))
            .map(|n| n.descendants().filter(|d| d.is_text()).filter_map(|d| d.text()).collect::<String>())
            .collect()
    }

    #[test]
    fn single_series_has_title_axes_ticks_and_markers() {
        let series = [Series::from_histogram("tick_to_trade", &histogram(1))];
        let svg = svg_string("tick-to-trade <Deribit> & more", &series);
        let texts = texts(&svg);
        let has = |want: &str| texts.iter().any(|t| t == want);
        assert!(has("tick-to-trade <Deribit> & more"), "{texts:?}");
        assert!(texts.iter().any(|t| t.starts_with("percentile")), "{texts:?}");
        assert!(has("latency (log scale)"));
        for tick in ["0%", "90%", "99%", "99.9%", "99.99%", "1ns", "10ns", "100ns", "1µs", "10µs"] {
            assert!(has(tick), "tick {tick} missing: {texts:?}");
        }
        let p = series[0].percentiles;
        for (name, ns) in [("p50", p.p50), ("p99", p.p99), ("p99.9", p.p999), ("max", p.max)] {
            let label = format!("{name} {}", Human(ns));
            assert!(has(&label), "marker {label} missing: {texts:?}");
        }
        assert_eq!(svg.matches("<circle").count(), 4);
        assert_eq!(svg.matches("<polyline").count(), 1);
        // One series: no legend, the subtitle names it.
        assert!(texts.iter().any(|t| t.starts_with("tick_to_trade · 10000 samples")), "{texts:?}");
    }

    #[test]
    fn several_series_share_a_plot_with_a_legend() {
        let series = [
            Series::from_histogram("ticktrade", &histogram(1)),
            Series::from_histogram("serde_json \"baseline\"", &histogram(3)),
        ];
        let svg = svg_string("decode", &series);
        let texts = texts(&svg);
        assert!(texts.iter().any(|t| t.starts_with("ticktrade n=10000")), "{texts:?}");
        assert!(texts.iter().any(|t| t.starts_with("serde_json \"baseline\" n=10000")), "{texts:?}");
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert_eq!(svg.matches("<circle").count(), 8);
        assert_eq!(texts.iter().filter(|t| t.starts_with("p50 ")).count(), 2);
    }

    #[test]
    fn labels_do_not_overlap_when_there_is_room() {
        let series = [
            Series::from_histogram("a", &histogram(1)),
            Series::from_histogram("b", &histogram(1)).with_baseline_p50(1),
        ];
        let scale = Scale::fit(&series, &series.iter().map(Series::curve_or_percentiles).collect::<Vec<_>>());
        let legend = legend_rect(&series);
        let markers = place_markers(&scale, &series, Some(legend));
        let rects: Vec<Rect> = markers
            .iter()
            .map(|m| {
                let width = text_width(&m.label, 12.0);
                let x0 = if m.anchor == "start" { m.tx } else { m.tx - width };
                Rect { x0, y0: m.ty - 11.0, x1: x0 + width, y1: m.ty + 3.0 }
            })
            .collect();
        for (i, a) in rects.iter().enumerate() {
            assert!(a.inside_plot(), "{} outside the plot", markers[i].label);
            assert!(!a.overlaps(&legend), "{} over the legend", markers[i].label);
            for (j, b) in rects.iter().enumerate().skip(i + 1) {
                assert!(!a.overlaps(b), "{} overlaps {}", markers[i].label, markers[j].label);
            }
        }
    }

    #[test]
    fn percentiles_only_series_and_empty_series_render() {
        let coarse = Series::new(
            "coarse",
            Percentiles {
                count: 5,
                min: 900,
                p25: 950,
                p50: 1_000,
                p75: 1_100,
                p90: 1_500,
                p99: 3_000,
                p999: 9_000,
                max: 12_000,
            },
        );
        let texts_coarse = texts(&svg_string("coarse", &[coarse]));
        assert!(texts_coarse.iter().any(|t| t == "max 12.0µs"), "{texts_coarse:?}");

        let empty = texts(&svg_string("nothing yet", &[Series::new("empty", Percentiles::default())]));
        assert!(empty.iter().any(|t| t == "no samples"), "{empty:?}");
        let none = texts(&svg_string("no series", &[]));
        assert!(none.iter().any(|t| t == "no samples"), "{none:?}");
    }

    #[test]
    fn tick_and_percent_labels() {
        let ticks: Vec<String> =
            [1, 500, 1_000, 20_000, 1_000_000, 5_000_000_000, 1_500].map(|ns| Tick(ns).to_string()).into();
        assert_eq!(ticks, ["1ns", "500ns", "1µs", "20µs", "1ms", "5s", "1.50µs"]);
        let labels: Vec<String> = (0..6).map(|n| PercentLabel(n).to_string()).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
    }
}
