//! The hot path's order encoder: `private/buy` / `private/sell` limit orders written straight
//! into a caller-owned buffer from integer ticks and lots, with a label that carries the
//! triggering tick's origin (our receive time and the book's `change_id`) to the exchange.
//!
//! Owns: the byte layout of a hot-path order request, the `OrderLabel` format (`tt.<t0 UTC ns>.
//! <change_id>`, at most 46 bytes, within Deribit's 64-byte label limit) and its parser.
//! Must not: allocate once `out` has capacity, format through `fmt`, or pass a number through
//! `f64`. The bytes equal what [`crate::envelope::encode_request`] writes for the same members
//! (tested), so the simulator and Deribit read them like any other request.
//!
//! Why a separate encoder: `encode_request` + `ParamsWriter` escapes the instrument name and
//! writes every key on each call, and the generic decimal printer divides in `i128`. Here the
//! constant parts are built once per instrument (`OrderEncoder::new`) and the price is printed
//! with `u64` arithmetic and `itoa` (research/limits.md §4: ≈30 ns per order; the gateway's
//! `hot_pipeline` bench measures this encoder).

use ticktrade_core::{InstrumentSpec, Price, Qty, Side};

use crate::envelope::write_json_str;

/// Origin of an order: the tick that caused it. Deribit echoes `label` in every order
/// notification and `get_order_state`, so the exchange side can compute wire-to-wire.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderLabel {
    /// t0 of the triggering frame, nanoseconds since the Unix epoch (our clock).
    pub recv_utc_ns: i64,
    /// `change_id` of the book update that triggered the order.
    pub change_id: u64,
}

const LABEL_PREFIX: &[u8] = b"tt.";

impl OrderLabel {
    /// Appends the label text (no quotes): `tt.<recv_utc_ns>.<change_id>`.
    #[inline]
    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(LABEL_PREFIX);
        out.extend_from_slice(itoa::Buffer::new().format(self.recv_utc_ns).as_bytes());
        out.push(b'.');
        out.extend_from_slice(itoa::Buffer::new().format(self.change_id).as_bytes());
    }

    /// Parses a label written by [`OrderLabel::write`]; `None` for any other label.
    pub fn parse(label: &str) -> Option<OrderLabel> {
        let rest = label.strip_prefix("tt.")?;
        let (utc, change) = rest.split_once('.')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let utc_digits = utc.strip_prefix('-').unwrap_or(utc);
        if !digits(utc_digits) || !digits(change) {
            return None;
        }
        Some(OrderLabel { recv_utc_ns: utc.parse().ok()?, change_id: change.parse().ok()? })
    }
}

/// Finds the label in a request or notification frame without parsing the rest: the first
/// `"label":"…"` member. For the exchange side of benchmarks and tests, not the hot path.
pub fn find_label(frame: &[u8]) -> Option<OrderLabel> {
    const KEY: &[u8] = b"\"label\":\"";
    let start = frame.windows(KEY.len()).position(|w| w == KEY)? + KEY.len();
    let len = frame[start..].iter().position(|&b| b == b'"')?;
    OrderLabel::parse(std::str::from_utf8(&frame[start..start + len]).ok()?)
}

/// Encodes limit orders for one instrument. Built once at startup; `encode` does not allocate
/// beyond `out`'s growth.
#[derive(Clone, Debug)]
pub struct OrderEncoder {
    /// `,"method":"private/buy","params":{"instrument_name":"…","amount":`
    buy_prefix: Vec<u8>,
    /// The same for `private/sell`.
    sell_prefix: Vec<u8>,
    /// Price = ticks × `tick_mantissa` / 10^`tick_scale`.
    tick_mantissa: i64,
    tick_scale: u8,
    qty_mantissa: i64,
    qty_scale: u8,
    /// The spec, for the exact slow path when a product does not fit in `i64`.
    spec: InstrumentSpec,
}

/// Everything that varies between two orders of one instrument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LimitOrder {
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
    pub post_only: bool,
    pub label: OrderLabel,
}

impl OrderEncoder {
    pub fn new(spec: &InstrumentSpec) -> OrderEncoder {
        let prefix = |method: &str| {
            let mut out = Vec::with_capacity(96);
            out.extend_from_slice(b",\"method\":");
            write_json_str(&mut out, method);
            out.extend_from_slice(b",\"params\":{\"instrument_name\":");
            write_json_str(&mut out, &spec.name);
            out.extend_from_slice(b",\"amount\":");
            out
        };
        let tick = spec.tick();
        OrderEncoder {
            buy_prefix: prefix("private/buy"),
            sell_prefix: prefix("private/sell"),
            tick_mantissa: tick.mantissa(),
            tick_scale: tick.scale(),
            qty_mantissa: spec.qty_unit.mantissa(),
            qty_scale: spec.qty_unit.scale(),
            spec: spec.clone(),
        }
    }

    /// Starts loading the encoder's constant runs (see `FastBookDecoder::touch`); returns a
    /// value for `std::hint::black_box`.
    #[inline]
    pub fn touch(&self) -> u8 {
        crate::book_fast::touch_lines(&self.buy_prefix) ^ crate::book_fast::touch_lines(&self.sell_prefix)
    }

    /// Appends `{"jsonrpc":"2.0","id":ID,"method":"private/buy","params":{"instrument_name":…,
    /// "amount":…,"type":"limit","price":…,"label":"tt.…"[,"post_only":true]}}` to `out`.
    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>, id: u64, order: &LimitOrder) {
        out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
        out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
        out.extend_from_slice(match order.side {
            Side::Buy => &self.buy_prefix,
            Side::Sell => &self.sell_prefix,
        });
        match order.qty.raw().checked_mul(self.qty_mantissa) {
            Some(m) => write_fixed(m, self.qty_scale, out),
            None => self.spec.write_qty(order.qty, out),
        }
        out.extend_from_slice(b",\"type\":\"limit\",\"price\":");
        match order.price.raw().checked_mul(self.tick_mantissa) {
            Some(m) => write_fixed(m, self.tick_scale, out),
            None => self.spec.write_price(order.price, out),
        }
        out.extend_from_slice(b",\"label\":\"");
        order.label.write(out);
        out.push(b'"');
        if order.post_only {
            out.extend_from_slice(b",\"post_only\":true");
        }
        out.extend_from_slice(b"}}");
    }
}

use crate::scan::POW10_U64 as POW10;

/// Appends `mantissa / 10^scale` as the shortest exact decimal (`64250.5`, `10`, `0.0001`).
#[inline]
fn write_fixed(mantissa: i64, scale: u8, out: &mut Vec<u8>) {
    if mantissa < 0 {
        out.push(b'-');
    }
    let magnitude = mantissa.unsigned_abs();
    let scale = usize::from(scale).min(18);
    if scale == 0 {
        out.extend_from_slice(itoa::Buffer::new().format(magnitude).as_bytes());
        return;
    }
    let pow = POW10[scale];
    let (int_part, mut frac) = (magnitude / pow, magnitude % pow);
    out.extend_from_slice(itoa::Buffer::new().format(int_part).as_bytes());
    if frac == 0 {
        return;
    }
    let mut digits = scale;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    out.push(b'.');
    let mut buf = [b'0'; 18];
    let mut pos = digits;
    while pos > 0 {
        pos -= 1;
        buf[pos] = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    out.extend_from_slice(&buf[..digits]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::encode_request;
    use proptest::prelude::*;
    use ticktrade_core::Decimal;

    fn spec(tick: &str, qty_unit: &str) -> InstrumentSpec {
        InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse(tick).unwrap(), Decimal::parse(qty_unit).unwrap())
            .unwrap()
    }

    /// The slow, obviously right encoding: the generic request writer.
    fn naive(spec: &InstrumentSpec, id: u64, o: &LimitOrder) -> Vec<u8> {
        let mut label = Vec::new();
        o.label.write(&mut label);
        let label = String::from_utf8(label).unwrap();
        let method = match o.side {
            Side::Buy => "private/buy",
            Side::Sell => "private/sell",
        };
        let mut out = Vec::new();
        encode_request(&mut out, id, method, |p| {
            p.str("instrument_name", &spec.name).qty("amount", spec, o.qty).str("type", "limit");
            p.price("price", spec, o.price).str("label", &label);
            if o.post_only {
                p.bool("post_only", true);
            }
        });
        out
    }

    fn order(side: Side, price: i64, qty: i64) -> LimitOrder {
        LimitOrder {
            side,
            price: Price::from_raw(price),
            qty: Qty::from_raw(qty),
            post_only: true,
            label: OrderLabel { recv_utc_ns: 1_700_000_000_123_456_789, change_id: 42 },
        }
    }

    #[test]
    fn buy_at_half_tick() {
        let spec = spec("0.5", "10");
        let mut out = Vec::new();
        OrderEncoder::new(&spec).encode(&mut out, 7, &order(Side::Buy, 128_501, 3));
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"jsonrpc":"2.0","id":7,"method":"private/buy","params":{"instrument_name":"BTC-PERPETUAL","amount":30,"type":"limit","price":64250.5,"label":"tt.1700000000123456789.42","post_only":true}}"#
        );
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value["params"]["price"], serde_json::json!(64250.5));
    }

    #[test]
    fn label_round_trips_and_rejects_others() {
        let label = OrderLabel { recv_utc_ns: -5, change_id: u64::MAX };
        let mut out = Vec::new();
        label.write(&mut out);
        assert!(out.len() <= 64);
        assert_eq!(OrderLabel::parse(std::str::from_utf8(&out).unwrap()), Some(label));
        for bad in ["", "tt.", "tt.1", "tt.1.", "tt..1", "xx.1.2", "tt.1.2x", "tt.1.-2"] {
            assert_eq!(OrderLabel::parse(bad), None, "{bad}");
        }
        let mut frame = Vec::new();
        OrderEncoder::new(&spec("0.5", "10")).encode(&mut frame, 1, &order(Side::Sell, 2, 1));
        assert_eq!(find_label(&frame).map(|l| l.change_id), Some(42));
        assert_eq!(find_label(b"{\"label\":\"mine\"}"), None);
    }

    proptest! {
        #[test]
        fn matches_generic_request_writer(
            tick in prop::sample::select(vec!["0.5", "1", "0.0001", "25", "0.05"]),
            unit in prop::sample::select(vec!["10", "1", "0.001", "0.1"]),
            price in -1_000_000_000i64..1_000_000_000,
            qty in 0i64..1_000_000_000,
            buy: bool, post_only: bool, id: u64, utc: i64, change_id: u64,
        ) {
            let spec = spec(tick, unit);
            let mut o = order(if buy { Side::Buy } else { Side::Sell }, price, qty);
            o.post_only = post_only;
            o.label = OrderLabel { recv_utc_ns: utc, change_id };
            let mut out = Vec::new();
            OrderEncoder::new(&spec).encode(&mut out, id, &o);
            prop_assert_eq!(String::from_utf8(out).unwrap(), String::from_utf8(naive(&spec, id, &o)).unwrap());
        }

        #[test]
        fn huge_values_take_the_exact_slow_path(price in prop::sample::select(vec![i64::MAX, i64::MIN + 1, i64::MAX / 3])) {
            let spec = spec("0.5", "10");
            let o = order(Side::Buy, price, i64::MAX);
            let mut out = Vec::new();
            OrderEncoder::new(&spec).encode(&mut out, 1, &o);
            prop_assert_eq!(out, naive(&spec, 1, &o));
        }
    }
}
