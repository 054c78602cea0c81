//! Instrument specs for a replay: loaded from a `get_instruments` reply, or inferred exactly
//! from the recording.
//!
//! Inference: one pass over every book notification takes, per instrument, the greatest common
//! divisor of all prices seen as the price unit and of all non-zero amounts as the amount
//! unit. Every value in the recording is then an exact multiple of its unit, so the replay
//! never rounds, and the units are exact decimals (`0.0005`, `10`), not floats. The inferred
//! unit can be coarser than the venue's tick (a book that only ever quoted whole dollars
//! infers `1`); that changes nothing in the replayed books or their printed prices.
//! An instrument the `--instruments` file does not know falls back to inference.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use ticktrade_core::{Decimal, InstrumentId, InstrumentSpec};
use ticktrade_deribit_proto::book::{DecimalLevel, decode_book};
use ticktrade_deribit_proto::instrument::{decimal_gcd, parse_instruments, parse_instruments_response};

use super::recording::Frame;

/// The running GCDs of one instrument's prices and amounts.
#[derive(Clone, Copy, Debug, Default)]
struct Units {
    price: Option<Decimal>,
    amount: Option<Decimal>,
}

fn fold(acc: Option<Decimal>, value: Decimal) -> Option<Decimal> {
    if value.is_zero() {
        return acc;
    }
    match acc {
        None => value.mantissa().checked_abs().and_then(|m| Decimal::new(m, value.scale()).ok()),
        // Overflow keeps the old unit; the value is then reported off-grid when applied.
        Some(acc) => decimal_gcd(acc, value).or(Some(acc)),
    }
}

/// Specs inferred from the recording's book notifications (undecodable frames are skipped
/// here; the replay reports them).
pub fn infer(frames: &[Frame<'_>]) -> BTreeMap<String, InstrumentSpec> {
    let mut units: BTreeMap<String, Units> = BTreeMap::new();
    let mut levels: Vec<DecimalLevel> = Vec::new();
    for frame in frames {
        let Ok(header) = decode_book(frame.text.as_bytes(), &mut levels) else {
            continue;
        };
        let entry = units.entry(header.instrument.to_owned()).or_default();
        for level in &levels {
            entry.price = fold(entry.price, level.price);
            entry.amount = fold(entry.amount, level.amount);
        }
    }
    let mut specs = BTreeMap::new();
    for (name, units) in units {
        let price = units.price.unwrap_or(Decimal::ONE);
        let amount = units.amount.unwrap_or(Decimal::ONE);
        if let Ok(mut spec) = InstrumentSpec::simple(&name, price, amount) {
            spec.id = InstrumentId(u32::try_from(specs.len()).unwrap_or(u32::MAX));
            specs.insert(name, spec);
        }
    }
    specs
}

/// Specs from a `public/get_instruments` (or `get_instrument`) reply, a bare result array, or
/// a cryptofeed HTTP recording (`<url> -> <epoch>: <json>` lines).
pub fn load(path: &Path) -> anyhow::Result<BTreeMap<String, InstrumentSpec>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut specs = Vec::new();
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') {
        specs = parse_instruments(trimmed).with_context(|| format!("instruments in {}", path.display()))?;
    } else if trimmed.starts_with('{') {
        specs = parse_instruments_response(trimmed, 0).with_context(|| format!("instruments in {}", path.display()))?;
    } else {
        for (idx, line) in text.lines().enumerate() {
            let Some((_, after)) = line.split_once(" -> ") else { continue };
            let Some((_, json)) = after.split_once(": ") else { continue };
            let first = u32::try_from(specs.len()).unwrap_or(u32::MAX);
            let parsed = parse_instruments_response(json, first)
                .with_context(|| format!("{}:{}: instruments", path.display(), idx + 1))?;
            specs.extend(parsed);
        }
    }
    anyhow::ensure!(!specs.is_empty(), "{}: no instruments found", path.display());
    Ok(specs.into_iter().map(|spec| (spec.name.clone(), spec)).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infers_exact_units() {
        let frames = [
            r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.X.raw","data":{"type":"snapshot","timestamp":1,"instrument_name":"X","change_id":1,"bids":[["new",0.0795,4.0],["new",0.079,10.0]],"asks":[["new",0.0945,5.0]]}}}"#,
            r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.X.raw","data":{"type":"change","timestamp":1,"instrument_name":"X","change_id":2,"prev_change_id":1,"bids":[["delete",0.0795,0]],"asks":[]}}}"#,
            r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.Y.raw","data":{"type":"snapshot","timestamp":1,"instrument_name":"Y","change_id":1,"bids":[],"asks":[]}}}"#,
            "not json",
        ];
        let frames: Vec<_> = frames.iter().enumerate().map(|(i, text)| Frame { line: i + 1, text }).collect();
        let specs = infer(&frames);
        let x = &specs["X"];
        assert_eq!((x.tick(), x.qty_unit), (Decimal::parse("0.0005").unwrap(), Decimal::parse("1").unwrap()));
        assert_eq!((specs["Y"].tick(), specs["Y"].qty_unit), (Decimal::ONE, Decimal::ONE));
    }
}
