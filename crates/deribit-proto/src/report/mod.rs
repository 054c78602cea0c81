//! Order and trade reports on the hot thread: the Deribit order object (`user.orders.*`
//! notifications, one object on `raw`, an array on `100ms`; the `order` of buy/sell/edit
//! results; cancel, get_order_state results) and the user trade object (`user.trades.*`
//! arrays, the `trades` of order results, `user.changes.*`), decoded into `Copy` structs that
//! borrow from the frame, with exact `Decimal` numbers.
//!
//! Owns: [`OrderReport`], [`TradeReport`], their enums, and two ways to read each object that
//! always agree (property-tested): a fixed-layout path that expects the members in the order
//! the simulator or Deribit writes them (one prefix comparison per member, no key search), and
//! a general path for any order, whitespace, unknown members or duplicates (last one wins).
//! Every decoder reports which path took each object ([`DecodePath`]).
//! Must not: allocate (arrays go to a visitor callback), panic on any input, or pass a number
//! through `f64`.
//!
//! Strings are the raw text between the quotes: escape sequences are left as written (labels
//! and ids Deribit and ticktrade write have none; a label with `\"` stays `\"`). Numbers stay
//! `Decimal` rather than ticks: one decoder serves currency-wide channels (`user.orders.any…`)
//! where the instrument, and so its tick, is only known from the object itself; the session
//! converts with the instrument's spec.
//!
//! Why: the serde objects of `api` allocate a `String` per text member and a `Box<RawValue>`
//! per number (≈2 µs per order object); `benches/reports.rs` compares them with these paths.

mod fields;
mod layouts;

use ticktrade_core::{Decimal, Side};

use crate::order::TimeInForce;
use crate::scan::{DecodeError, Scanner};
use fields::{OrderField, OrderFields, TradeField, TradeFields};

/// Which path decoded an object.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DecodePath {
    /// The members came in a known sender's order.
    Fixed,
    General,
}

/// `order_state` (and a trade's `state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderState {
    Open,
    Filled,
    Rejected,
    Cancelled,
    Untriggered,
    Triggered,
    /// A trade of an order that has since been archived.
    Archive,
    /// A trade's `state` in older API answers (today's `filled`).
    Closed,
}

impl OrderState {
    pub fn parse(text: &[u8]) -> Option<OrderState> {
        Some(match text {
            b"open" => OrderState::Open,
            b"filled" => OrderState::Filled,
            b"rejected" => OrderState::Rejected,
            b"cancelled" => OrderState::Cancelled,
            b"untriggered" => OrderState::Untriggered,
            b"triggered" => OrderState::Triggered,
            b"archive" => OrderState::Archive,
            b"closed" => OrderState::Closed,
            _ => return None,
        })
    }
}

/// `order_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderType {
    Limit,
    Market,
    StopLimit,
    StopMarket,
    TakeLimit,
    TakeMarket,
    MarketLimit,
    TrailingStop,
    Liquidation,
}

impl OrderType {
    pub fn parse(text: &[u8]) -> Option<OrderType> {
        Some(match text {
            b"limit" => OrderType::Limit,
            b"market" => OrderType::Market,
            b"stop_limit" => OrderType::StopLimit,
            b"stop_market" => OrderType::StopMarket,
            b"take_limit" => OrderType::TakeLimit,
            b"take_market" => OrderType::TakeMarket,
            b"market_limit" => OrderType::MarketLimit,
            b"trailing_stop" => OrderType::TrailingStop,
            b"liquidation" => OrderType::Liquidation,
            _ => return None,
        })
    }
}

/// A trade's `liquidity`: we added (`M`) or took (`T`) it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Liquidity {
    Maker,
    Taker,
}

/// The order object, as far as a session needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrderReport<'a> {
    pub order_id: &'a str,
    /// `""` when the order has none.
    pub label: &'a str,
    pub instrument_name: &'a str,
    pub order_state: OrderState,
    pub direction: Side,
    /// `None` for `"market_price"` (stop-market orders) or when absent.
    pub price: Option<Decimal>,
    pub amount: Decimal,
    /// 0 when absent (untriggered orders).
    pub filled_amount: Decimal,
    /// 0 when absent or nothing filled.
    pub average_price: Decimal,
    pub order_type: OrderType,
    pub time_in_force: TimeInForce,
    pub post_only: bool,
    pub reduce_only: bool,
    /// Milliseconds since the Unix epoch.
    pub creation_timestamp: u64,
    pub last_update_timestamp: u64,
    pub cancel_reason: Option<&'a str>,
    /// Present on post-only orders.
    pub reject_post_only: Option<bool>,
}

/// The user trade object (one fill of one of our orders).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradeReport<'a> {
    pub trade_id: &'a str,
    pub order_id: &'a str,
    /// `""` when the order has none.
    pub label: &'a str,
    pub instrument_name: &'a str,
    pub direction: Side,
    pub price: Decimal,
    pub amount: Decimal,
    pub fee: Decimal,
    pub fee_currency: &'a str,
    pub liquidity: Liquidity,
    /// Milliseconds since the Unix epoch.
    pub timestamp: u64,
    pub trade_seq: u64,
    /// The order's state after this trade.
    pub state: OrderState,
}

/// Decodes one order object (the whole of `json`, surrounding whitespace allowed).
pub fn decode_order(json: &[u8]) -> Result<(OrderReport<'_>, DecodePath), DecodeError> {
    whole(json, object::<OrderFields<'_>>)
}

/// [`decode_order`] by the general path only (for tests and benchmarks).
pub fn decode_order_general(json: &[u8]) -> Result<OrderReport<'_>, DecodeError> {
    whole(json, general::<OrderFields<'_>>)
}

/// Decodes one user trade object.
pub fn decode_trade(json: &[u8]) -> Result<(TradeReport<'_>, DecodePath), DecodeError> {
    whole(json, object::<TradeFields<'_>>)
}

/// [`decode_trade`] by the general path only.
pub fn decode_trade_general(json: &[u8]) -> Result<TradeReport<'_>, DecodeError> {
    whole(json, general::<TradeFields<'_>>)
}

/// Calls `f` with each order of an order object or an array of them (`user.orders.*` data of
/// either interval, cancel and get_order_state results); returns how many.
pub fn for_each_order<'a>(json: &'a [u8], f: impl FnMut(OrderReport<'a>, DecodePath)) -> Result<usize, DecodeError> {
    whole(json, |s| one_or_many::<OrderFields<'a>>(s, f))
}

/// Calls `f` with each trade of a trade array or object (`user.trades.*` data); returns how many.
pub fn for_each_trade<'a>(json: &'a [u8], f: impl FnMut(TradeReport<'a>, DecodePath)) -> Result<usize, DecodeError> {
    whole(json, |s| one_or_many::<TradeFields<'a>>(s, f))
}

/// The result of `private/buy`, `sell`, `edit`, `edit_by_label`: `{"order":{…},"trades":[…]}`
/// (members in any order); each trade goes to `on_trade`.
pub fn decode_order_result<'a>(
    json: &'a [u8],
    mut on_trade: impl FnMut(TradeReport<'a>, DecodePath),
) -> Result<(OrderReport<'a>, DecodePath), DecodeError> {
    whole(json, |s| {
        let mut order = None;
        if s.open(b'{', b'}', "an order result")? {
            loop {
                match s.key()? {
                    b"order" => order = Some(object::<OrderFields<'a>>(s)?),
                    b"trades" => {
                        list::<TradeFields<'a>>(s, &mut on_trade)?;
                    }
                    _ => s.skip_value()?,
                }
                if !s.next_item(b'}', "',' or '}'")? {
                    break;
                }
            }
        }
        order.ok_or(DecodeError::Missing("order"))
    })
}

/// `user.changes.*` data: `{"instrument_name":…,"orders":[…],"trades":[…],"positions":[…]}`;
/// orders and trades go to the callbacks (positions are skipped: the session reads them with
/// `get_position`). Returns the instrument name.
pub fn decode_user_changes<'a>(
    json: &'a [u8],
    mut on_order: impl FnMut(OrderReport<'a>, DecodePath),
    mut on_trade: impl FnMut(TradeReport<'a>, DecodePath),
) -> Result<&'a str, DecodeError> {
    whole(json, |s| {
        let mut instrument = None;
        if s.open(b'{', b'}', "a user.changes object")? {
            loop {
                match s.key()? {
                    b"instrument_name" => instrument = Some(s.raw_str()?),
                    b"orders" => {
                        list::<OrderFields<'a>>(s, &mut on_order)?;
                    }
                    b"trades" => {
                        list::<TradeFields<'a>>(s, &mut on_trade)?;
                    }
                    _ => s.skip_value()?,
                }
                if !s.next_item(b'}', "',' or '}'")? {
                    break;
                }
            }
        }
        instrument.ok_or(DecodeError::Missing("instrument_name"))
    })
}

/// The result of `get_user_trades_by_instrument` (and `…_by_currency`):
/// `{"trades":[…],"has_more":…}`; each trade goes to `f`. Returns `has_more` (false if absent).
pub fn decode_user_trades<'a>(
    json: &'a [u8],
    mut f: impl FnMut(TradeReport<'a>, DecodePath),
) -> Result<bool, DecodeError> {
    whole(json, |s| {
        let (mut has_more, mut trades) = (false, false);
        if s.open(b'{', b'}', "a user trades result")? {
            loop {
                match s.key()? {
                    b"trades" => {
                        list::<TradeFields<'a>>(s, &mut f)?;
                        trades = true;
                    }
                    b"has_more" => has_more = s.bool()?,
                    _ => s.skip_value()?,
                }
                if !s.next_item(b'}', "',' or '}'")? {
                    break;
                }
            }
        }
        if trades { Ok(has_more) } else { Err(DecodeError::Missing("trades")) }
    })
}

/// A bare count: the result of `cancel_all*` and `cancel_by_label`.
pub fn decode_count(json: &[u8]) -> Result<u64, DecodeError> {
    // The scanner needs a byte after a number to know it ended; a result span ends with the
    // number, so it is read from a copy with a space after it (a count has at most 20 digits).
    let mut buf = [b' '; 32];
    let text = json.trim_ascii();
    if text.is_empty() {
        return Err(DecodeError::Incomplete);
    }
    let copy = buf.get_mut(..text.len()).ok_or(DecodeError::Unexpected { at: 0, expected: "a count" })?;
    copy.copy_from_slice(text);
    whole(&buf[..=text.len()], |s| s.u64())
}

fn whole<'a, T>(json: &'a [u8], f: impl FnOnce(&mut Scanner<'a>) -> Result<T, DecodeError>) -> Result<T, DecodeError> {
    let mut s = Scanner::new(json);
    let out = f(&mut s)?;
    s.end()?;
    Ok(out)
}

/// One member of a fixed layout: `"name":` and what it fills.
pub(crate) struct Key<F> {
    text: &'static [u8],
    field: F,
}

const fn key<F>(text: &'static [u8], field: F) -> Key<F> {
    Key { text, field }
}

/// The members of one object type being collected.
trait Fields<'a>: Default {
    type Field: Copy + 'static;
    type Out;
    const LAYOUTS: &'static [&'static [Key<Self::Field>]];
    /// The field a key fills (`Skip` for any other).
    fn field(key: &[u8]) -> Self::Field;
    /// Reads the value of `field` (skips it for `Skip`).
    fn set(&mut self, field: Self::Field, s: &mut Scanner<'a>) -> Result<(), DecodeError>;
    fn finish(self) -> Result<Self::Out, DecodeError>;
}

fn object<'a, T: Fields<'a>>(s: &mut Scanner<'a>) -> Result<(T::Out, DecodePath), DecodeError> {
    s.ws();
    let start = s.pos();
    for layout in T::LAYOUTS {
        if let Some(out) = fixed::<T>(s, layout) {
            return Ok((out, DecodePath::Fixed));
        }
        s.seek(start);
    }
    general::<T>(s).map(|out| (out, DecodePath::General))
}

/// The members in `layout`'s order (any of them may be absent), no whitespace between them;
/// `None` for anything else, including any error (the general path then gives it).
fn fixed<'a, T: Fields<'a>>(s: &mut Scanner<'a>, layout: &[Key<T::Field>]) -> Option<T::Out> {
    if !s.eat_prefix(b"{") {
        return None;
    }
    let mut fields = T::default();
    let mut next = 0;
    loop {
        loop {
            let key = layout.get(next)?;
            next += 1;
            if s.eat_prefix(key.text) {
                fields.set(key.field, s).ok()?;
                break;
            }
        }
        if s.eat_prefix(b",") {
            continue;
        }
        if s.eat_prefix(b"}") {
            break;
        }
        return None;
    }
    fields.finish().ok()
}

fn general<'a, T: Fields<'a>>(s: &mut Scanner<'a>) -> Result<T::Out, DecodeError> {
    let mut fields = T::default();
    if s.open(b'{', b'}', "an object")? {
        loop {
            let key = s.raw_str()?;
            s.expect(b':', "':'")?;
            fields.set(T::field(key.as_bytes()), s)?;
            if !s.next_item(b'}', "',' or '}'")? {
                break;
            }
        }
    }
    fields.finish()
}

/// An array of objects (through its `]`), each to `f`; returns how many.
fn list<'a, T: Fields<'a>>(s: &mut Scanner<'a>, f: &mut impl FnMut(T::Out, DecodePath)) -> Result<usize, DecodeError> {
    let mut n = 0;
    if s.open(b'[', b']', "an array")? {
        loop {
            let (out, path) = object::<T>(s)?;
            f(out, path);
            n += 1;
            if !s.next_item(b']', "',' or ']'")? {
                break;
            }
        }
    }
    Ok(n)
}

fn one_or_many<'a, T: Fields<'a>>(
    s: &mut Scanner<'a>,
    mut f: impl FnMut(T::Out, DecodePath),
) -> Result<usize, DecodeError> {
    if s.peek() == Some(b'[') {
        return list::<T>(s, &mut f);
    }
    let (out, path) = object::<T>(s)?;
    f(out, path);
    Ok(1)
}

#[cfg(test)]
mod tests;
