//! The hot path's order encoder: `private/buy` / `private/sell` (limit or market, with time in
//! force, `post_only`, `reject_post_only`, `reduce_only` and a label), `private/edit_by_label`
//! and `private/edit`, written straight into a caller-owned buffer from integer ticks and lots.
//! The origin label carries the triggering tick (our receive time and the book's `change_id`)
//! to the exchange.
//!
//! Owns: the byte layout of the hot-path order requests, the `OrderLabel` format (`tt.<t0 UTC
//! ns>.<change_id>`, at most 46 bytes, within Deribit's 64-byte label limit) and its parser,
//! the caller-chosen [`Label`] (ASCII, ≤ 64 bytes, checked once), [`TimeInForce`].
//! Must not: allocate once `out` has capacity, format through `fmt`, or pass a number through
//! `f64`. The bytes equal what [`crate::envelope::encode_request`] writes for the same members
//! in the same order (property-tested), so the simulator and Deribit read them like any other
//! request. Members equal to Deribit's default (`good_til_cancelled`, `false` flags) are left
//! out, as the generic writer's callers do.
//!
//! Why a separate encoder: `encode_request` + `ParamsWriter` escapes the instrument name and
//! writes every key on each call, and the generic decimal printer divides in `i128`. Here the
//! constant parts are built once per instrument (`OrderEncoder::new`) and the price is printed
//! with `u64` arithmetic and `itoa` (≈30 ns per order; the gateway's `hot_compute` bench,
//! `encode_order`, measures it beside `format!`).

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

/// Deribit's `time_in_force`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TimeInForce {
    #[default]
    GoodTilCancelled,
    GoodTilDay,
    FillOrKill,
    ImmediateOrCancel,
}

impl TimeInForce {
    pub const fn as_str(self) -> &'static str {
        match self {
            TimeInForce::GoodTilCancelled => "good_til_cancelled",
            TimeInForce::GoodTilDay => "good_til_day",
            TimeInForce::FillOrKill => "fill_or_kill",
            TimeInForce::ImmediateOrCancel => "immediate_or_cancel",
        }
    }

    pub fn parse(text: &[u8]) -> Option<TimeInForce> {
        Some(match text {
            b"good_til_cancelled" => TimeInForce::GoodTilCancelled,
            b"good_til_day" => TimeInForce::GoodTilDay,
            b"fill_or_kill" => TimeInForce::FillOrKill,
            b"immediate_or_cancel" => TimeInForce::ImmediateOrCancel,
            _ => return None,
        })
    }
}

/// A label chosen by the caller: ASCII and at most [`Label::MAX_LEN`] bytes (Deribit's limit),
/// checked once by [`Label::new`] so that encoding cannot fail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Label<'a> {
    /// ASCII, hence UTF-8 (checked in [`Label::new`]).
    text: &'a [u8],
    /// No byte needs escaping in a JSON string (found once, when the label is made, so the
    /// encoder copies it without looking at it again).
    plain: bool,
}

/// Why bytes are not a [`Label`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LabelError {
    #[error("label is {0} bytes long; Deribit allows 64")]
    TooLong(usize),
    #[error("label byte {0} is not ASCII")]
    NotAscii(usize),
}

impl<'a> Label<'a> {
    pub const MAX_LEN: usize = 64;

    pub fn new(bytes: &'a [u8]) -> Result<Label<'a>, LabelError> {
        if bytes.len() > Self::MAX_LEN {
            return Err(LabelError::TooLong(bytes.len()));
        }
        // One word-wise pass for the usual label: a label is built for every order the hot
        // thread sends.
        if crate::words::plain_ascii(bytes) {
            return Ok(Label { text: bytes, plain: true });
        }
        if let Some(at) = bytes.iter().position(|b| !b.is_ascii()) {
            return Err(LabelError::NotAscii(at));
        }
        Ok(Label { text: bytes, plain: false })
    }

    pub fn as_bytes(&self) -> &'a [u8] {
        self.text
    }

    pub fn as_str(&self) -> &'a str {
        // ASCII was checked in `new`, so this never falls back.
        std::str::from_utf8(self.text).unwrap_or_default()
    }
}

/// The `label` of an order request: none, the origin format, or the caller's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderTag<'a> {
    None,
    Origin(OrderLabel),
    Text(Label<'a>),
}

/// `type` and, for limit orders, `price`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderKind {
    Limit(Price),
    Market,
}

/// Everything that varies between two `private/buy` / `private/sell` requests of one instrument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderRequest<'a> {
    pub side: Side,
    pub kind: OrderKind,
    pub qty: Qty,
    pub label: OrderTag<'a>,
    pub time_in_force: TimeInForce,
    pub post_only: bool,
    pub reject_post_only: bool,
    pub reduce_only: bool,
}

impl From<&LimitOrder> for OrderRequest<'static> {
    fn from(order: &LimitOrder) -> OrderRequest<'static> {
        OrderRequest {
            side: order.side,
            kind: OrderKind::Limit(order.price),
            qty: order.qty,
            label: OrderTag::Origin(order.label),
            time_in_force: TimeInForce::GoodTilCancelled,
            post_only: order.post_only,
            reject_post_only: false,
            reduce_only: false,
        }
    }
}

/// Encodes order requests for one instrument. Built once at startup; the `encode*` methods do
/// not allocate beyond `out`'s growth.
#[derive(Clone, Debug)]
pub struct OrderEncoder {
    /// `,"method":"private/buy","params":{"instrument_name":"…","amount":`
    buy_prefix: Vec<u8>,
    /// The same for `private/sell`.
    sell_prefix: Vec<u8>,
    /// `,"method":"private/edit_by_label","params":{"instrument_name":"…","label":`
    edit_by_label_prefix: Vec<u8>,
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

const HEAD: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":";

impl OrderEncoder {
    pub fn new(spec: &InstrumentSpec) -> OrderEncoder {
        let prefix = |method: &str, next: &[u8]| {
            let mut out = Vec::with_capacity(96);
            out.extend_from_slice(b",\"method\":");
            write_json_str(&mut out, method);
            out.extend_from_slice(b",\"params\":{\"instrument_name\":");
            write_json_str(&mut out, &spec.name);
            out.extend_from_slice(next);
            out
        };
        let tick = spec.tick();
        OrderEncoder {
            buy_prefix: prefix("private/buy", b",\"amount\":"),
            sell_prefix: prefix("private/sell", b",\"amount\":"),
            edit_by_label_prefix: prefix("private/edit_by_label", b",\"label\":"),
            tick_mantissa: tick.mantissa(),
            tick_scale: tick.scale(),
            qty_mantissa: spec.qty_unit.mantissa(),
            qty_scale: spec.qty_unit.scale(),
            spec: spec.clone(),
        }
    }

    pub fn spec(&self) -> &InstrumentSpec {
        &self.spec
    }

    /// Starts loading the encoder's constant runs (see `FastBookDecoder::touch`); returns a
    /// value for `std::hint::black_box`.
    #[inline]
    pub fn touch(&self) -> u8 {
        crate::book_fast::touch_lines(&self.buy_prefix) ^ crate::book_fast::touch_lines(&self.sell_prefix)
    }

    #[inline]
    fn head(out: &mut Vec<u8>, id: u64) {
        out.extend_from_slice(HEAD);
        out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    }

    #[inline]
    fn write_qty(&self, qty: Qty, out: &mut Vec<u8>) {
        match qty.raw().checked_mul(self.qty_mantissa) {
            Some(m) => write_fixed(m, self.qty_scale, out),
            None => self.spec.write_qty(qty, out),
        }
    }

    #[inline]
    fn write_price(&self, price: Price, out: &mut Vec<u8>) {
        match price.raw().checked_mul(self.tick_mantissa) {
            Some(m) => write_fixed(m, self.tick_scale, out),
            None => self.spec.write_price(price, out),
        }
    }

    /// Appends `{"jsonrpc":"2.0","id":ID,"method":"private/buy","params":{"instrument_name":…,
    /// "amount":…,"type":"limit","price":…,"label":"tt.…"[,"post_only":true]}}` to `out`.
    /// The same bytes as [`Self::encode_order`] for the equivalent [`OrderRequest`] (tested).
    #[inline]
    pub fn encode(&self, out: &mut Vec<u8>, id: u64, order: &LimitOrder) {
        Self::head(out, id);
        out.extend_from_slice(match order.side {
            Side::Buy => &self.buy_prefix,
            Side::Sell => &self.sell_prefix,
        });
        self.write_qty(order.qty, out);
        out.extend_from_slice(b",\"type\":\"limit\",\"price\":");
        self.write_price(order.price, out);
        out.extend_from_slice(b",\"label\":\"");
        order.label.write(out);
        out.push(b'"');
        if order.post_only {
            out.extend_from_slice(b",\"post_only\":true");
        }
        out.extend_from_slice(b"}}");
    }

    /// Appends a `private/buy` or `private/sell` request with the members, in this order:
    /// `instrument_name`, `amount`, `type`, `price` (limit only), `label` (unless none),
    /// `time_in_force` (unless `good_til_cancelled`), then `post_only`, `reject_post_only`,
    /// `reduce_only` when true.
    #[inline]
    pub fn encode_order(&self, out: &mut Vec<u8>, id: u64, order: &OrderRequest<'_>) {
        Self::head(out, id);
        out.extend_from_slice(match order.side {
            Side::Buy => &self.buy_prefix,
            Side::Sell => &self.sell_prefix,
        });
        self.write_qty(order.qty, out);
        match order.kind {
            OrderKind::Limit(price) => {
                out.extend_from_slice(b",\"type\":\"limit\",\"price\":");
                self.write_price(price, out);
            }
            OrderKind::Market => out.extend_from_slice(b",\"type\":\"market\""),
        }
        write_tag(order.label, out);
        if order.time_in_force != TimeInForce::GoodTilCancelled {
            out.extend_from_slice(b",\"time_in_force\":\"");
            out.extend_from_slice(order.time_in_force.as_str().as_bytes());
            out.push(b'"');
        }
        write_flags(
            out,
            &[
                (b",\"post_only\":true", order.post_only),
                (b",\"reject_post_only\":true", order.reject_post_only),
                (b",\"reduce_only\":true", order.reduce_only),
            ],
        );
        out.extend_from_slice(b"}}");
    }

    /// Appends `private/edit_by_label`: `instrument_name`, `label`, `amount`, `price`, and
    /// `post_only` when true.
    #[inline]
    pub fn encode_edit_by_label(
        &self,
        out: &mut Vec<u8>,
        id: u64,
        label: OrderTag<'_>,
        qty: Qty,
        price: Price,
        post_only: bool,
    ) {
        Self::head(out, id);
        out.extend_from_slice(&self.edit_by_label_prefix);
        out.push(b'"');
        write_tag_text(label, out);
        out.extend_from_slice(b"\",\"amount\":");
        self.write_edit_tail(out, qty, price, post_only);
    }

    /// Appends `private/edit` of `order_id` (an id Deribit gave, written escaped): `order_id`,
    /// `amount`, `price`, and `post_only` when true.
    #[inline]
    pub fn encode_edit(&self, out: &mut Vec<u8>, id: u64, order_id: &str, qty: Qty, price: Price, post_only: bool) {
        Self::head(out, id);
        out.extend_from_slice(b",\"method\":\"private/edit\",\"params\":{\"order_id\":");
        write_json_str(out, order_id);
        out.extend_from_slice(b",\"amount\":");
        self.write_edit_tail(out, qty, price, post_only);
    }

    #[inline]
    fn write_edit_tail(&self, out: &mut Vec<u8>, qty: Qty, price: Price, post_only: bool) {
        self.write_qty(qty, out);
        out.extend_from_slice(b",\"price\":");
        self.write_price(price, out);
        write_flags(out, &[(b",\"post_only\":true", post_only)]);
        out.extend_from_slice(b"}}");
    }
}

#[inline]
fn write_flags(out: &mut Vec<u8>, flags: &[(&[u8], bool)]) {
    for &(text, on) in flags {
        if on {
            out.extend_from_slice(text);
        }
    }
}

/// The label's text, unescaped: `""` for none, the origin label written into `buf`, or the
/// caller's text (for the generic writer, which escapes it).
pub(crate) fn write_tag_plain<'b>(tag: OrderTag<'b>, buf: &'b mut [u8; 64]) -> &'b str {
    match tag {
        OrderTag::None => "",
        OrderTag::Text(label) => label.as_str(),
        OrderTag::Origin(label) => {
            let mut at = 0;
            let mut put = |bytes: &[u8]| {
                let end = (at + bytes.len()).min(buf.len());
                buf[at..end].copy_from_slice(&bytes[..end - at]);
                at = end;
            };
            put(LABEL_PREFIX);
            put(itoa::Buffer::new().format(label.recv_utc_ns).as_bytes());
            put(b".");
            put(itoa::Buffer::new().format(label.change_id).as_bytes());
            // At most 44 ASCII bytes were written, so this is whole and UTF-8.
            std::str::from_utf8(&buf[..at]).unwrap_or("")
        }
    }
}

/// `,"label":"…"` unless the tag is `None`.
#[inline]
fn write_tag(tag: OrderTag<'_>, out: &mut Vec<u8>) {
    if tag == OrderTag::None {
        return;
    }
    out.extend_from_slice(b",\"label\":\"");
    write_tag_text(tag, out);
    out.push(b'"');
}

/// The label's text inside its quotes, escaped as `write_json_str` does (`None` is `""`).
#[inline]
fn write_tag_text(tag: OrderTag<'_>, out: &mut Vec<u8>) {
    match tag {
        OrderTag::None => {}
        OrderTag::Origin(label) => label.write(out),
        OrderTag::Text(label) => {
            if label.plain {
                out.extend_from_slice(label.as_bytes());
            } else {
                let text = label.as_str();
                // Rare: the generic escaper, without its quotes.
                let start = out.len();
                write_json_str(out, text);
                out.remove(start);
                out.pop();
            }
        }
    }
}

/// Appends `mantissa / 10^scale` as the shortest exact decimal (`64250.5`, `10`, `0.0001`).
#[inline]
fn write_fixed(mantissa: i64, scale: u8, out: &mut Vec<u8>) {
    if mantissa < 0 {
        out.push(b'-');
    }
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(mantissa.unsigned_abs()).as_bytes();
    let scale = usize::from(scale).min(18);
    if scale == 0 {
        out.extend_from_slice(digits);
        return;
    }
    // The point goes `scale` digits from the right of the mantissa's digits (zeros in front
    // when there are fewer): no division, one copy out.
    let mut text = [b'0'; 41];
    let width = digits.len().max(scale + 1);
    text[width - digits.len()..width].copy_from_slice(digits);
    let int_len = width - scale;
    let mut end = width;
    while end > int_len && text[end - 1] == b'0' {
        end -= 1;
    }
    if end == int_len {
        out.extend_from_slice(&text[..int_len]);
        return;
    }
    text.copy_within(int_len..end, int_len + 1);
    text[int_len] = b'.';
    out.extend_from_slice(&text[..end + 1]);
}

#[cfg(test)]
#[path = "order_tests.rs"]
mod tests;
