//! A user's resting orders as `POST /info` shows them: `openOrders`, `frontendOpenOrders` and
//! `orderStatus`.
//!
//! Owns: the three documented answer shapes and the `oid` of an `orderStatus` request (an
//! order id, or a client order id as `0x` + 32 hex digits).
//! Must not: find the orders (the engine reads them off its books) or format numbers: prices
//! and sizes arrive as text.

use serde::{Deserialize, Serialize};

/// A resting order with everything the three answers print.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RestingOrder<'a> {
    pub coin: &'a str,
    pub side: &'a str,
    pub limit_px: &'a str,
    pub sz: &'a str,
    pub orig_sz: &'a str,
    pub oid: u64,
    pub timestamp: u64,
    pub trigger_condition: &'a str,
    pub is_position_tpsl: bool,
    pub reduce_only: bool,
    pub order_type: &'a str,
    pub tif: Option<&'a str>,
    pub cloid: Option<&'a str>,
}

/// `orderStatus`'s `oid`: a number, or a cloid string.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(untagged)]
pub enum OrderRef {
    Oid(u64),
    Cloid(String),
}

/// One entry of `openOrders`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Open<'a> {
    coin: &'a str,
    limit_px: &'a str,
    oid: u64,
    side: &'a str,
    sz: &'a str,
    timestamp: u64,
}

/// One `frontendOpenOrders` entry, and the order inside an `orderStatus` answer. A resting
/// order is never an untriggered trigger order (those are not on the book), so `isTrigger` is
/// false and `triggerPx` `"0.0"`; it has no children.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Full<'a> {
    coin: &'a str,
    side: &'a str,
    limit_px: &'a str,
    sz: &'a str,
    oid: u64,
    timestamp: u64,
    trigger_condition: &'a str,
    is_trigger: bool,
    trigger_px: &'a str,
    children: [(); 0],
    is_position_tpsl: bool,
    reduce_only: bool,
    order_type: &'a str,
    orig_sz: &'a str,
    tif: Option<&'a str>,
    cloid: Option<&'a str>,
}

impl<'a> Full<'a> {
    fn of(o: &RestingOrder<'a>) -> Full<'a> {
        Full {
            coin: o.coin,
            side: o.side,
            limit_px: o.limit_px,
            sz: o.sz,
            oid: o.oid,
            timestamp: o.timestamp,
            trigger_condition: o.trigger_condition,
            is_trigger: false,
            trigger_px: "0.0",
            children: [],
            is_position_tpsl: o.is_position_tpsl,
            reduce_only: o.reduce_only,
            order_type: o.order_type,
            orig_sz: o.orig_sz,
            tif: o.tif,
            cloid: o.cloid,
        }
    }
}

/// The `openOrders` answer.
pub fn open_orders_json(orders: &[RestingOrder<'_>]) -> String {
    let list: Vec<Open<'_>> = orders
        .iter()
        .map(|o| Open {
            coin: o.coin,
            limit_px: o.limit_px,
            oid: o.oid,
            side: o.side,
            sz: o.sz,
            timestamp: o.timestamp,
        })
        .collect();
    serde_json::to_string(&list).unwrap_or_default()
}

/// The `frontendOpenOrders` answer.
pub fn frontend_open_orders_json(orders: &[RestingOrder<'_>]) -> String {
    let list: Vec<Full<'_>> = orders.iter().map(Full::of).collect();
    serde_json::to_string(&list).unwrap_or_default()
}

/// The `orderStatus` answer: `{"status":"order","order":{"order":…,"status","statusTimestamp"}}`
/// for a known order, `{"status":"unknownOid"}` otherwise.
pub fn order_status_json(found: Option<(&RestingOrder<'_>, &str, u64)>) -> String {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Inner<'a> {
        order: Full<'a>,
        status: &'a str,
        status_timestamp: u64,
    }
    match found {
        None => r#"{"status":"unknownOid"}"#.to_owned(),
        Some((order, status, status_timestamp)) => serde_json::json!({
            "status": "order",
            "order": Inner { order: Full::of(order), status, status_timestamp },
        })
        .to_string(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::{Value, json};

    fn order() -> RestingOrder<'static> {
        RestingOrder {
            coin: "ETH",
            side: "A",
            limit_px: "2412.7",
            sz: "0.5",
            orig_sz: "0.75",
            oid: 1,
            timestamp: 1_724_361_546_645,
            trigger_condition: "N/A",
            is_position_tpsl: false,
            reduce_only: true,
            order_type: "Limit",
            tif: Some("Gtc"),
            cloid: None,
        }
    }

    fn value(text: &str) -> Value {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn documented_shapes() {
        let o = order();
        assert_eq!(
            value(&open_orders_json(std::slice::from_ref(&o))),
            json!([{"coin": "ETH", "limitPx": "2412.7", "oid": 1, "side": "A", "sz": "0.5", "timestamp": 1_724_361_546_645u64}])
        );
        let full = json!({"coin": "ETH", "side": "A", "limitPx": "2412.7", "sz": "0.5", "oid": 1,
            "timestamp": 1_724_361_546_645u64, "triggerCondition": "N/A", "isTrigger": false, "triggerPx": "0.0",
            "children": [], "isPositionTpsl": false, "reduceOnly": true, "orderType": "Limit", "origSz": "0.75",
            "tif": "Gtc", "cloid": null});
        assert_eq!(value(&frontend_open_orders_json(std::slice::from_ref(&o))), json!([full.clone()]));
        assert_eq!(
            value(&order_status_json(Some((&o, "open", 5)))),
            json!({"status": "order", "order": {"order": full, "status": "open", "statusTimestamp": 5}})
        );
        assert_eq!(value(&order_status_json(None)), json!({"status": "unknownOid"}));
    }

    #[test]
    fn order_ref_is_an_oid_or_a_cloid() {
        assert_eq!(serde_json::from_str::<OrderRef>("91490942").unwrap(), OrderRef::Oid(91_490_942));
        let cloid = "\"0x000000000000000018ab012def14f141\"";
        assert_eq!(
            serde_json::from_str::<OrderRef>(cloid).unwrap(),
            OrderRef::Cloid("0x000000000000000018ab012def14f141".into())
        );
    }
}
