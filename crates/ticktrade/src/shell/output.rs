//! What a command produced, and how it is printed: aligned text tables for people, one JSON
//! object per result for scripts.
//!
//! Owns: `Output`, `Table`, the text and JSON renderings.
//! Must not: reformat numbers — cells hold the exact decimal text the venue quoted.

use std::fmt::Write as _;

use serde_json::{Map, Value, json};

use ticktrade_gateway::venue::RoundTrip;

/// Rows of text cells under a header. Numbers are right-aligned.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Table {
    pub columns: Vec<&'static str>,
    pub rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(columns: &[&'static str]) -> Table {
        Table { columns: columns.to_vec(), rows: Vec::new() }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }
}

/// The result of one command.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Output {
    pub command: String,
    /// A one-line summary ("order 123 open", "3 orders cancelled").
    pub message: Option<String>,
    pub table: Option<Table>,
    /// Order-path timing, for order commands.
    pub latency: Option<RoundTrip>,
}

impl Output {
    pub fn message(command: &str, message: impl Into<String>) -> Output {
        Output { command: command.to_owned(), message: Some(message.into()), ..Output::default() }
    }

    pub fn table(command: &str, table: Table) -> Output {
        Output { command: command.to_owned(), table: Some(table), ..Output::default() }
    }
}

fn is_numeric(cell: &str) -> bool {
    !cell.is_empty()
        && cell.bytes().all(|b| b.is_ascii_digit() || b == b'.' || b == b'-' || b == b'e' || b == b'E')
        && cell.bytes().any(|b| b.is_ascii_digit())
}

/// µs with one decimal from ns.
pub fn micros(ns: u64) -> String {
    format!("{}.{}", ns / 1_000, (ns % 1_000) / 100)
}

/// The latency line printed under an order result:
/// `round trip = local (parsed → written) + network + exchange (usOut − usIn)`.
pub fn latency_line(rt: &RoundTrip) -> String {
    let mut line =
        format!("latency: round trip {} µs = local {} µs (parsed → written)", rt.round_trip_us, micros(rt.local_ns));
    match (rt.exchange_us, rt.network_us()) {
        (Some(exchange), Some(network)) => {
            let _ = write!(line, " + network {network} µs + exchange {exchange} µs");
        }
        (Some(exchange), None) => {
            let _ = write!(line, " + network ? + exchange {exchange} µs (venue times exceed the measured rest)");
        }
        (None, _) => line.push_str(" + network and exchange (venue sent no usIn/usOut)"),
    }
    let _ = write!(line, "; decode {} µs", micros(rt.decode_ns));
    line
}

/// Renders for a person.
pub fn render_text(output: &Output) -> String {
    let mut out = String::new();
    if let Some(message) = &output.message {
        out.push_str(message);
        out.push('\n');
    }
    if let Some(table) = &output.table {
        let mut widths: Vec<usize> = table.columns.iter().map(|c| c.chars().count()).collect();
        for row in &table.rows {
            for (i, cell) in row.iter().enumerate() {
                if let Some(w) = widths.get_mut(i) {
                    *w = (*w).max(cell.chars().count());
                }
            }
        }
        let numeric: Vec<bool> = (0..table.columns.len())
            .map(|i| {
                !table.rows.is_empty()
                    && table.rows.iter().all(|r| r.get(i).is_none_or(|c| c.is_empty() || is_numeric(c)))
            })
            .collect();
        let line = |cells: &mut dyn Iterator<Item = &str>, out: &mut String| {
            let mut parts = Vec::new();
            for (i, cell) in cells.enumerate() {
                let width = widths.get(i).copied().unwrap_or(0);
                if numeric.get(i).copied().unwrap_or(false) {
                    parts.push(format!("{cell:>width$}"));
                } else {
                    parts.push(format!("{cell:<width$}"));
                }
            }
            out.push_str(parts.join("  ").trim_end());
            out.push('\n');
        };
        line(&mut table.columns.iter().copied(), &mut out);
        line(&mut widths.iter().map(|w| "─".repeat(*w)).collect::<Vec<_>>().iter().map(String::as_str), &mut out);
        for row in &table.rows {
            line(&mut row.iter().map(String::as_str), &mut out);
        }
        if table.rows.is_empty() {
            out.push_str("(none)\n");
        }
    }
    if let Some(rt) = &output.latency {
        out.push_str(&latency_line(rt));
        out.push('\n');
    }
    out
}

fn latency_json(rt: &RoundTrip) -> Value {
    json!({
        "local_ns": rt.local_ns,
        "round_trip_us": rt.round_trip_us,
        "exchange_us": rt.exchange_us,
        "network_us": rt.network_us(),
        "client_ns": rt.client_ns(),
    })
}

/// One JSON object (one line) for a script. Cells stay strings: exact decimals.
pub fn render_json(output: &Output) -> String {
    let mut object = Map::new();
    object.insert("command".into(), Value::String(output.command.clone()));
    object.insert("ok".into(), Value::Bool(true));
    if let Some(message) = &output.message {
        object.insert("message".into(), Value::String(message.clone()));
    }
    if let Some(table) = &output.table {
        let rows = table
            .rows
            .iter()
            .map(|row| {
                Value::Object(
                    table.columns.iter().zip(row).map(|(c, v)| ((*c).to_owned(), Value::String(v.clone()))).collect(),
                )
            })
            .collect();
        object.insert("rows".into(), Value::Array(rows));
    }
    if let Some(rt) = &output.latency {
        object.insert("latency".into(), latency_json(rt));
    }
    Value::Object(object).to_string()
}

/// A failed command as one JSON line.
pub fn render_json_error(command: &str, code: Option<i64>, message: &str) -> String {
    json!({"command": command, "ok": false, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Output {
        let mut table = Table::new(&["instrument", "price", "amount"]);
        table.push(vec!["BTC-PERPETUAL".into(), "50000.5".into(), "10".into()]);
        table.push(vec!["ETH-PERPETUAL".into(), "3000.05".into(), "1000".into()]);
        Output { command: "orders".into(), message: None, table: Some(table), latency: None }
    }

    #[test]
    fn text_is_aligned_and_exact() {
        let text = render_text(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "instrument       price  amount");
        assert_eq!(lines[2], "BTC-PERPETUAL  50000.5      10");
        assert_eq!(lines[3], "ETH-PERPETUAL  3000.05    1000");
    }

    #[test]
    fn json_is_one_parseable_line() {
        let mut output = sample();
        output.latency = Some(RoundTrip { local_ns: 1_500, round_trip_us: 91, exchange_us: Some(10), decode_ns: 100 });
        let line = render_json(&output);
        assert!(!line.contains('\n'));
        let value: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(value["rows"][0]["price"], "50000.5");
        assert_eq!(value["latency"]["network_us"], 79);
        let err: Value = serde_json::from_str(&render_json_error("buy", Some(10009), "not_enough_funds")).unwrap();
        assert_eq!(err["ok"], false);
        assert_eq!(err["error"]["code"], 10009);
    }
}
