//! Printing the replayed books: an aligned table per instrument, or one JSON object per
//! instrument per line. Prices and amounts are written from the books' exact integer units
//! through the instrument spec, never through `f64` (`0.0795`, `64250.5`; trailing zeros
//! Deribit sometimes writes, as in `4.0`, are not kept: the value is the same).

use std::io::{self, Write};

use ticktrade_book::l2::Level;
use ticktrade_core::{InstrumentSpec, Side};
use ticktrade_deribit_proto::envelope::write_json_str;

use super::books::InstrumentBook;

fn text(write: impl FnOnce(&mut Vec<u8>)) -> String {
    let mut buf = Vec::with_capacity(24);
    write(&mut buf);
    String::from_utf8(buf).unwrap_or_default()
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The table for one instrument: a summary line, then bids and asks side by side, best first.
pub fn write_table(out: &mut impl Write, name: &str, state: &InstrumentBook, depth: usize) -> io::Result<()> {
    let spec = &state.spec;
    let stale = if state.book.is_stale() { "  [STALE: waiting for a snapshot]" } else { "" };
    writeln!(
        out,
        "{name}: {}, {}, {}, {}{stale}",
        plural(state.snapshots, "snapshot", "snapshots"),
        plural(state.changes, "change", "changes"),
        plural(state.gaps, "gap", "gaps"),
        plural(state.resyncs, "resync", "resyncs"),
    )?;
    let column = |side: Side| -> Vec<(String, String)> {
        state
            .book
            .top(side, depth)
            .map(|l| (text(|b| spec.write_price(l.price, b)), text(|b| spec.write_qty(l.qty, b))))
            .collect()
    };
    let (mut bids, mut asks) = (column(Side::Buy), column(Side::Sell));
    for rows in [&mut bids, &mut asks] {
        let (prices, amounts): (Vec<String>, Vec<String>) = rows.drain(..).unzip();
        rows.extend(align_points(&prices).into_iter().zip(align_points(&amounts)));
    }
    if bids.is_empty() && asks.is_empty() {
        return writeln!(out, "  (empty book)\n");
    }
    let width = |rows: &[(String, String)], pick: fn(&(String, String)) -> &String, title: &str| {
        rows.iter().map(|r| pick(r).len()).max().unwrap_or(0).max(title.len())
    };
    let bid_amount_w = width(&bids, |r| &r.1, "bid amount");
    let bid_w = width(&bids, |r| &r.0, "bid");
    let ask_w = width(&asks, |r| &r.0, "ask");
    let ask_amount_w = width(&asks, |r| &r.1, "ask amount");
    writeln!(
        out,
        "  {:>bid_amount_w$}  {:>bid_w$} | {:<ask_w$}  {:>ask_amount_w$}",
        "bid amount", "bid", "ask", "ask amount"
    )?;
    let empty = (String::new(), String::new());
    for i in 0..bids.len().max(asks.len()) {
        let bid = bids.get(i).unwrap_or(&empty);
        let ask = asks.get(i).unwrap_or(&empty);
        let line =
            format!("  {:>bid_amount_w$}  {:>bid_w$} | {:<ask_w$}  {:>ask_amount_w$}", bid.1, bid.0, ask.0, ask.1);
        writeln!(out, "{}", line.trim_end())?;
    }
    writeln!(out)
}

/// Pads decimal texts so their decimal points line up (`64250.5`, `64251  `, `0.25`).
fn align_points(column: &[String]) -> Vec<String> {
    let split = |text: &str| match text.split_once('.') {
        Some((int, frac)) => (int.len(), frac.len() + 1),
        None => (text.len(), 0),
    };
    let int_w = column.iter().map(|t| split(t).0).max().unwrap_or(0);
    let frac_w = column.iter().map(|t| split(t).1).max().unwrap_or(0);
    column
        .iter()
        .map(|text| {
            let (int, frac) = split(text);
            format!("{}{text}{}", " ".repeat(int_w - int), " ".repeat(frac_w - frac))
        })
        .collect()
}

fn write_levels(buf: &mut Vec<u8>, spec: &InstrumentSpec, levels: impl Iterator<Item = Level>) {
    buf.push(b'[');
    for (i, level) in levels.enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        buf.push(b'[');
        spec.write_price(level.price, buf);
        buf.push(b',');
        spec.write_qty(level.qty, buf);
        buf.push(b']');
    }
    buf.push(b']');
}

/// One JSON object for one instrument, on one line.
pub fn write_json(out: &mut impl Write, name: &str, state: &InstrumentBook, depth: usize) -> io::Result<()> {
    let mut buf = Vec::with_capacity(256);
    buf.extend_from_slice(br#"{"instrument":"#);
    write_json_str(&mut buf, name);
    write!(
        buf,
        r#","snapshots":{},"changes":{},"gaps":{},"resyncs":{},"bids":"#,
        state.snapshots, state.changes, state.gaps, state.resyncs
    )?;
    write_levels(&mut buf, &state.spec, state.book.top(Side::Buy, depth));
    buf.extend_from_slice(br#","asks":"#);
    write_levels(&mut buf, &state.spec, state.book.top(Side::Sell, depth));
    buf.extend_from_slice(b"}\n");
    out.write_all(&buf)
}
