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

mod layouts;

use ticktrade_core::{Decimal, Side};

use crate::order::TimeInForce;
use crate::scan::{DecodeError, Scanner};

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

fn enum_value<'a, E>(
    s: &mut Scanner<'a>,
    parse: impl FnOnce(&[u8]) -> Option<E>,
    expected: &'static str,
) -> Result<E, DecodeError> {
    s.ws();
    let at = crate::scan::offset(s.pos());
    let text = s.raw_str()?;
    parse(text.as_bytes()).ok_or(DecodeError::Unexpected { at, expected })
}

fn side(text: &[u8]) -> Option<Side> {
    match text {
        b"buy" => Some(Side::Buy),
        b"sell" => Some(Side::Sell),
        _ => None,
    }
}

fn liquidity(text: &[u8]) -> Option<Liquidity> {
    match text {
        b"M" => Some(Liquidity::Maker),
        b"T" => Some(Liquidity::Taker),
        _ => None,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OrderField {
    OrderId,
    Label,
    Instrument,
    State,
    Direction,
    Price,
    Amount,
    Filled,
    AveragePrice,
    OrderType,
    TimeInForce,
    PostOnly,
    ReduceOnly,
    Created,
    Updated,
    CancelReason,
    RejectPostOnly,
    Skip,
}

#[derive(Default)]
struct OrderFields<'a> {
    order_id: Option<&'a str>,
    label: Option<&'a str>,
    instrument_name: Option<&'a str>,
    order_state: Option<OrderState>,
    direction: Option<Side>,
    price: Option<Decimal>,
    amount: Option<Decimal>,
    filled_amount: Option<Decimal>,
    average_price: Option<Decimal>,
    order_type: Option<OrderType>,
    time_in_force: Option<TimeInForce>,
    post_only: Option<bool>,
    reduce_only: Option<bool>,
    creation_timestamp: Option<u64>,
    last_update_timestamp: Option<u64>,
    cancel_reason: Option<&'a str>,
    reject_post_only: Option<bool>,
}

impl<'a> Fields<'a> for OrderFields<'a> {
    type Field = OrderField;
    type Out = OrderReport<'a>;
    const LAYOUTS: &'static [&'static [Key<OrderField>]] = &[layouts::ORDER_SIM, layouts::ORDER_DERIBIT];

    fn field(key: &[u8]) -> OrderField {
        match key {
            b"order_id" => OrderField::OrderId,
            b"label" => OrderField::Label,
            b"instrument_name" => OrderField::Instrument,
            b"order_state" => OrderField::State,
            b"direction" => OrderField::Direction,
            b"price" => OrderField::Price,
            b"amount" => OrderField::Amount,
            b"filled_amount" => OrderField::Filled,
            b"average_price" => OrderField::AveragePrice,
            b"order_type" => OrderField::OrderType,
            b"time_in_force" => OrderField::TimeInForce,
            b"post_only" => OrderField::PostOnly,
            b"reduce_only" => OrderField::ReduceOnly,
            b"creation_timestamp" => OrderField::Created,
            b"last_update_timestamp" => OrderField::Updated,
            b"cancel_reason" => OrderField::CancelReason,
            b"reject_post_only" => OrderField::RejectPostOnly,
            _ => OrderField::Skip,
        }
    }

    fn set(&mut self, field: OrderField, s: &mut Scanner<'a>) -> Result<(), DecodeError> {
        match field {
            OrderField::OrderId => self.order_id = Some(s.raw_str()?),
            OrderField::Label => self.label = Some(s.raw_str()?),
            OrderField::Instrument => self.instrument_name = Some(s.raw_str()?),
            OrderField::State => self.order_state = Some(enum_value(s, OrderState::parse, "an order state")?),
            OrderField::Direction => self.direction = Some(enum_value(s, side, "buy or sell")?),
            OrderField::Price => {
                self.price = match s.peek() {
                    Some(b'"') => {
                        enum_value(s, |t| (t == b"market_price").then_some(()), "a price or \"market_price\"")?;
                        None
                    }
                    _ if s.null() => None,
                    _ => Some(s.decimal()?),
                }
            }
            OrderField::Amount => self.amount = Some(s.decimal()?),
            OrderField::Filled => self.filled_amount = Some(s.decimal()?),
            OrderField::AveragePrice => self.average_price = Some(s.decimal()?),
            OrderField::OrderType => self.order_type = Some(enum_value(s, OrderType::parse, "an order type")?),
            OrderField::TimeInForce => {
                self.time_in_force = Some(enum_value(s, TimeInForce::parse, "a time in force")?);
            }
            OrderField::PostOnly => self.post_only = Some(s.bool()?),
            OrderField::ReduceOnly => self.reduce_only = Some(s.bool()?),
            OrderField::Created => self.creation_timestamp = Some(s.u64()?),
            OrderField::Updated => self.last_update_timestamp = Some(s.u64()?),
            OrderField::CancelReason => self.cancel_reason = Some(s.raw_str()?),
            OrderField::RejectPostOnly => self.reject_post_only = Some(s.bool()?),
            OrderField::Skip => s.skip_value()?,
        }
        Ok(())
    }

    fn finish(self) -> Result<OrderReport<'a>, DecodeError> {
        Ok(OrderReport {
            order_id: self.order_id.ok_or(DecodeError::Missing("order_id"))?,
            label: self.label.unwrap_or(""),
            instrument_name: self.instrument_name.ok_or(DecodeError::Missing("instrument_name"))?,
            order_state: self.order_state.ok_or(DecodeError::Missing("order_state"))?,
            direction: self.direction.ok_or(DecodeError::Missing("direction"))?,
            price: self.price,
            amount: self.amount.ok_or(DecodeError::Missing("amount"))?,
            filled_amount: self.filled_amount.unwrap_or(Decimal::ZERO),
            average_price: self.average_price.unwrap_or(Decimal::ZERO),
            order_type: self.order_type.ok_or(DecodeError::Missing("order_type"))?,
            time_in_force: self.time_in_force.ok_or(DecodeError::Missing("time_in_force"))?,
            post_only: self.post_only.unwrap_or(false),
            reduce_only: self.reduce_only.unwrap_or(false),
            creation_timestamp: self.creation_timestamp.ok_or(DecodeError::Missing("creation_timestamp"))?,
            last_update_timestamp: self.last_update_timestamp.ok_or(DecodeError::Missing("last_update_timestamp"))?,
            cancel_reason: self.cancel_reason,
            reject_post_only: self.reject_post_only,
        })
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TradeField {
    TradeId,
    OrderId,
    Label,
    Instrument,
    Direction,
    Price,
    Amount,
    Fee,
    FeeCurrency,
    Liquidity,
    Timestamp,
    TradeSeq,
    State,
    Skip,
}

#[derive(Default)]
struct TradeFields<'a> {
    trade_id: Option<&'a str>,
    order_id: Option<&'a str>,
    label: Option<&'a str>,
    instrument_name: Option<&'a str>,
    direction: Option<Side>,
    price: Option<Decimal>,
    amount: Option<Decimal>,
    fee: Option<Decimal>,
    fee_currency: Option<&'a str>,
    liquidity: Option<Liquidity>,
    timestamp: Option<u64>,
    trade_seq: Option<u64>,
    state: Option<OrderState>,
}

impl<'a> Fields<'a> for TradeFields<'a> {
    type Field = TradeField;
    type Out = TradeReport<'a>;
    const LAYOUTS: &'static [&'static [Key<TradeField>]] = &[layouts::TRADE_SIM, layouts::TRADE_DERIBIT];

    fn field(key: &[u8]) -> TradeField {
        match key {
            b"trade_id" => TradeField::TradeId,
            b"order_id" => TradeField::OrderId,
            b"label" => TradeField::Label,
            b"instrument_name" => TradeField::Instrument,
            b"direction" => TradeField::Direction,
            b"price" => TradeField::Price,
            b"amount" => TradeField::Amount,
            b"fee" => TradeField::Fee,
            b"fee_currency" => TradeField::FeeCurrency,
            b"liquidity" => TradeField::Liquidity,
            b"timestamp" => TradeField::Timestamp,
            b"trade_seq" => TradeField::TradeSeq,
            b"state" => TradeField::State,
            _ => TradeField::Skip,
        }
    }

    fn set(&mut self, field: TradeField, s: &mut Scanner<'a>) -> Result<(), DecodeError> {
        match field {
            TradeField::TradeId => self.trade_id = Some(s.raw_str()?),
            TradeField::OrderId => self.order_id = Some(s.raw_str()?),
            TradeField::Label => self.label = Some(s.raw_str()?),
            TradeField::Instrument => self.instrument_name = Some(s.raw_str()?),
            TradeField::Direction => self.direction = Some(enum_value(s, side, "buy or sell")?),
            TradeField::Price => self.price = Some(s.decimal()?),
            TradeField::Amount => self.amount = Some(s.decimal()?),
            TradeField::Fee => self.fee = Some(s.decimal()?),
            TradeField::FeeCurrency => self.fee_currency = Some(s.raw_str()?),
            TradeField::Liquidity => self.liquidity = Some(enum_value(s, liquidity, "M or T")?),
            TradeField::Timestamp => self.timestamp = Some(s.u64()?),
            TradeField::TradeSeq => self.trade_seq = Some(s.u64()?),
            TradeField::State => self.state = Some(enum_value(s, OrderState::parse, "an order state")?),
            TradeField::Skip => s.skip_value()?,
        }
        Ok(())
    }

    fn finish(self) -> Result<TradeReport<'a>, DecodeError> {
        Ok(TradeReport {
            trade_id: self.trade_id.ok_or(DecodeError::Missing("trade_id"))?,
            order_id: self.order_id.ok_or(DecodeError::Missing("order_id"))?,
            label: self.label.unwrap_or(""),
            instrument_name: self.instrument_name.ok_or(DecodeError::Missing("instrument_name"))?,
            direction: self.direction.ok_or(DecodeError::Missing("direction"))?,
            price: self.price.ok_or(DecodeError::Missing("price"))?,
            amount: self.amount.ok_or(DecodeError::Missing("amount"))?,
            fee: self.fee.ok_or(DecodeError::Missing("fee"))?,
            fee_currency: self.fee_currency.ok_or(DecodeError::Missing("fee_currency"))?,
            liquidity: self.liquidity.ok_or(DecodeError::Missing("liquidity"))?,
            timestamp: self.timestamp.ok_or(DecodeError::Missing("timestamp"))?,
            trade_seq: self.trade_seq.ok_or(DecodeError::Missing("trade_seq"))?,
            state: self.state.ok_or(DecodeError::Missing("state"))?,
        })
    }
}

#[cfg(test)]
mod tests;
