//! Deribit's typed API objects (from `ticktrade_deribit_proto::api`) to the venue-neutral
//! types of `crate::venue`, and venue requests to Deribit params.
//!
//! Owns: the mapping of Deribit's strings (`direction`, `order_state`, `time_in_force`…) to
//! enums and back.
//! Must not: touch JSON text (deribit-proto does) or do I/O.

use ticktrade_core::{Decimal, Side};
use ticktrade_deribit_proto::api::{self, Num};

use crate::venue::{
    Balance, Fill, OrderRequest, OrderStatus, OrderView, PositionView, PublicTrade, TickerView, TimeInForce,
};

pub(crate) fn side(direction: &str) -> Side {
    if direction.eq_ignore_ascii_case("sell") { Side::Sell } else { Side::Buy }
}

pub(crate) fn status(state: &str) -> OrderStatus {
    match state {
        "open" => OrderStatus::Open,
        "filled" => OrderStatus::Filled,
        "cancelled" => OrderStatus::Cancelled,
        "rejected" => OrderStatus::Rejected,
        "untriggered" => OrderStatus::Untriggered,
        // `triggered` orders become regular ones; treat as open until the next report.
        _ => OrderStatus::Open,
    }
}

pub(crate) fn order(o: api::Order) -> OrderView {
    let is_market = o.order_type == "market" || o.order_type == "stop_market" || o.order_type == "take_market";
    OrderView {
        status: status(&o.order_state),
        side: side(&o.direction),
        price: o.price.value().filter(|_| !is_market),
        amount: o.amount.0,
        filled: o.filled_amount.0,
        average_price: o.average_price.0,
        trigger_price: o.trigger_price.map(|n| n.0),
        order_id: o.order_id,
        label: o.label,
        instrument: o.instrument_name,
        order_type: o.order_type,
        time_in_force: o.time_in_force,
        post_only: o.post_only,
        reduce_only: o.reduce_only,
        created_ms: o.creation_timestamp,
        updated_ms: o.last_update_timestamp,
    }
}

pub(crate) fn fill(t: api::UserTrade) -> Fill {
    Fill {
        side: side(&t.direction),
        price: t.price.0,
        amount: t.amount.0,
        fee: t.fee.0,
        trade_id: t.trade_id,
        order_id: t.order_id,
        instrument: t.instrument_name,
        fee_currency: t.fee_currency,
        liquidity: t.liquidity,
        timestamp_ms: t.timestamp,
    }
}

fn negate(value: Decimal) -> Decimal {
    Decimal::new(-value.mantissa(), value.scale()).unwrap_or(value)
}

pub(crate) fn position(p: api::Position) -> PositionView {
    // Deribit's `size` is already signed (negative when short); trust `direction` if not.
    let size = if p.direction == "sell" && !p.size.0.is_negative() { negate(p.size.0) } else { p.size.0 };
    PositionView {
        instrument: p.instrument_name,
        kind: p.kind,
        size,
        average_price: p.average_price.0,
        mark_price: p.mark_price.0,
        floating_pl: p.floating_profit_loss.0,
        realized_pl: p.realized_profit_loss.0,
    }
}

pub(crate) fn balance(a: api::AccountSummary) -> Balance {
    Balance {
        currency: a.currency,
        balance: a.balance.0,
        equity: a.equity.0,
        available_funds: a.available_funds.0,
        margin_balance: a.margin_balance.0,
        initial_margin: a.initial_margin.0,
        maintenance_margin: a.maintenance_margin.0,
        total_pl: a.total_pl.0,
    }
}

pub(crate) fn ticker(t: api::Ticker) -> TickerView {
    TickerView {
        best_bid: t.best_bid_price.map(|p| (p.0, t.best_bid_amount.0)),
        best_ask: t.best_ask_price.map(|p| (p.0, t.best_ask_amount.0)),
        last: t.last_price.map(|p| p.0),
        mark: Some(t.mark_price.0),
        index: Some(t.index_price.0),
        open_interest: Some(t.open_interest.0),
        timestamp_ms: t.timestamp,
        instrument: t.instrument_name,
    }
}

pub(crate) fn public_trade(t: api::PublicTrade) -> PublicTrade {
    PublicTrade {
        side: side(&t.direction),
        price: t.price.0,
        amount: t.amount.0,
        timestamp_ms: t.timestamp,
        trade_id: t.trade_id,
        instrument: t.instrument_name,
    }
}

pub(crate) fn tif(t: TimeInForce) -> &'static str {
    match t {
        TimeInForce::Gtc => "good_til_cancelled",
        TimeInForce::Gtd => "good_til_day",
        TimeInForce::Ioc => "immediate_or_cancel",
        TimeInForce::Fok => "fill_or_kill",
    }
}

/// `private/buy|sell` params for a request, with the label already decided.
pub(crate) fn order_params(req: &OrderRequest, label: &str) -> api::OrderParams {
    let order_type = match (&req.trigger, req.price) {
        (None, Some(_)) => "limit",
        (None, None) => "market",
        (Some(t), Some(_)) => {
            if t.take {
                "take_limit"
            } else {
                "stop_limit"
            }
        }
        (Some(t), None) => {
            if t.take {
                "take_market"
            } else {
                "stop_market"
            }
        }
    };
    api::OrderParams {
        instrument_name: req.instrument.clone(),
        amount: Some(Num(req.amount)),
        order_type: Some(order_type.to_owned()),
        label: Some(label.to_owned()),
        price: req.price.map(Num),
        time_in_force: Some(tif(req.time_in_force).to_owned()),
        post_only: req.post_only.then_some(true),
        reduce_only: req.reduce_only.then_some(true),
        trigger_price: req.trigger.map(|t| Num(t.price)),
        trigger: req.trigger.map(|t| format!("{}_price", t.source.as_str())),
        ..api::OrderParams::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::venue::{Trigger, TriggerSource};

    fn vector_result<T: serde::de::DeserializeOwned>(name: &str) -> T {
        let path = format!("{}/../../testdata/deribit/examples/{name}", env!("CARGO_MANIFEST_DIR"));
        let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        serde_json::from_value(value["result"].clone()).unwrap()
    }

    #[test]
    fn documented_objects_convert() {
        let placed: api::OrderWithTrades = vector_result("private_buy.response.json");
        let view = order(placed.order.clone());
        assert_eq!(view.order_id, placed.order.order_id);
        assert_eq!(view.side, side(&placed.order.direction));
        assert_eq!(view.amount, placed.order.amount.0);
        let pos: api::Position = vector_result("private_get_position.response.json");
        let view = position(pos.clone());
        assert_eq!(view.instrument, "BTC-PERPETUAL");
        assert_eq!(view.size, pos.size.0);
        let summary: api::AccountSummary = vector_result("private_get_account_summary.response.json");
        assert_eq!(balance(summary).currency, "BTC");
    }

    #[test]
    fn order_types_from_request() {
        let mut req = OrderRequest {
            instrument: "BTC-PERPETUAL".into(),
            side: Side::Buy,
            amount: Decimal::from_int(10),
            price: Some(Decimal::parse("50000.5").unwrap()),
            time_in_force: TimeInForce::Ioc,
            post_only: false,
            reduce_only: true,
            label: None,
            trigger: None,
        };
        let p = order_params(&req, "x");
        assert_eq!(p.order_type.as_deref(), Some("limit"));
        assert_eq!(p.time_in_force.as_deref(), Some("immediate_or_cancel"));
        assert_eq!(p.reduce_only, Some(true));
        assert_eq!(p.post_only, None);
        req.trigger = Some(Trigger { take: false, price: Decimal::from_int(1), source: TriggerSource::Mark });
        req.price = None;
        let p = order_params(&req, "x");
        assert_eq!(p.order_type.as_deref(), Some("stop_market"));
        assert_eq!(p.trigger.as_deref(), Some("mark_price"));
    }
}
