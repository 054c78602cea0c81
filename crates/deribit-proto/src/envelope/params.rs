//! `ParamsWriter`: appends the members of a request's `params` object straight into the
//! output buffer, numbers from exact values (no `fmt`, no `f64`, no allocation).

use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty};

use super::write_json_str;

/// Writes `"key":value` members, inserting commas. Keys are written as given (they are
/// Deribit's parameter names, plain ASCII).
pub struct ParamsWriter<'o> {
    out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> ParamsWriter<'o> {
    pub(crate) fn new(out: &'o mut Vec<u8>) -> ParamsWriter<'o> {
        ParamsWriter { out, first: true }
    }

    fn key(&mut self, key: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    pub fn str(&mut self, key: &str, value: &str) -> &mut Self {
        let out = self.key(key);
        write_json_str(out, value);
        self
    }

    pub fn u64(&mut self, key: &str, value: u64) -> &mut Self {
        let out = self.key(key);
        out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        self
    }

    pub fn i64(&mut self, key: &str, value: i64) -> &mut Self {
        let out = self.key(key);
        out.extend_from_slice(itoa::Buffer::new().format(value).as_bytes());
        self
    }

    pub fn bool(&mut self, key: &str, value: bool) -> &mut Self {
        let out = self.key(key);
        out.extend_from_slice(if value { b"true" } else { b"false" });
        self
    }

    pub fn decimal(&mut self, key: &str, value: Decimal) -> &mut Self {
        let out = self.key(key);
        value.write(out);
        self
    }

    /// A price in `spec`'s ticks, written as its exact decimal.
    pub fn price(&mut self, key: &str, spec: &InstrumentSpec, price: Price) -> &mut Self {
        let out = self.key(key);
        spec.write_price(price, out);
        self
    }

    /// An amount in `spec`'s lots, written as its exact decimal.
    pub fn qty(&mut self, key: &str, spec: &InstrumentSpec, qty: Qty) -> &mut Self {
        let out = self.key(key);
        spec.write_qty(qty, out);
        self
    }

    /// An array of strings (e.g. `channels`).
    pub fn strs<'s>(&mut self, key: &str, values: impl IntoIterator<Item = &'s str>) -> &mut Self {
        let out = self.key(key);
        out.push(b'[');
        for (i, value) in values.into_iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_json_str(out, value);
        }
        out.push(b']');
        self
    }

    /// A member whose value is already JSON text (the caller vouches for it).
    pub fn raw(&mut self, key: &str, json: &str) -> &mut Self {
        let out = self.key(key);
        out.extend_from_slice(json.as_bytes());
        self
    }
}
