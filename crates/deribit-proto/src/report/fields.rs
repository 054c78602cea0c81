//! The members of the order and trade objects: which key fills which field, how each value is
//! read, and the checks that turn the collected fields into a report.
//!
//! Owns: `OrderFields`, `TradeFields` and their `Fields` impls.
//! Must not: allocate or pass a number through `f64`.

use super::*;

fn enum_value<'a, E>(
    s: &mut Scanner<'a>,
    parse: impl FnOnce(&[u8]) -> Option<E>,
    expected: &'static str,
) -> Result<E, DecodeError> {
    s.ws();
    let at = crate::scan::offset(s.pos());
    let text = s.raw_bytes()?;
    parse(text).ok_or(DecodeError::Unexpected { at, expected })
}

pub(super) fn side(text: &[u8]) -> Option<Side> {
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
pub(super) enum OrderField {
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
pub(super) struct OrderFields<'a> {
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
pub(super) enum TradeField {
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
pub(super) struct TradeFields<'a> {
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
