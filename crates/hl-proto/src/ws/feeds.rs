//! The frames of the feeds beyond books and trades: `allMids`, `bbo`, `orderUpdates` and
//! `userFills`, in Hyperliquid's documented shapes.
//!
//! Owns: writing each frame into a caller's buffer (reused from block to block, so a frame
//! costs no allocation beyond the buffer's growth).
//! Must not: decide when a frame is due (the engine does) or format a number through `f64`:
//! prices and sizes arrive as integer units or as the node's own decimal text.

use serde::Serialize;
use serde_json::value::RawValue;

use super::{UnitLevel, Units, write_hl_decimal, write_json_str};
use crate::node::NodeOrder;

/// Starts an `allMids` frame: `{"channel":"allMids","data":{"mids":{` (then [`push_mid`] per
/// coin and [`end_all_mids`]).
pub fn begin_all_mids(out: &mut Vec<u8>) {
    out.extend_from_slice(br#"{"channel":"allMids","data":{"mids":{"#);
}

/// One `"coin":"mid"` entry of an `allMids` frame; `first` for the first entry.
pub fn push_mid(out: &mut Vec<u8>, first: bool, coin: &str, mid: &str) {
    if !first {
        out.push(b',');
    }
    write_json_str(out, coin);
    out.push(b':');
    write_json_str(out, mid);
}

/// Ends an `allMids` frame.
pub fn end_all_mids(out: &mut Vec<u8>) {
    out.extend_from_slice(b"}}}");
}

/// A `bbo` frame, `{"coin","time","bbo":[bid|null, ask|null]}` (`WsBbo`).
pub fn write_bbo(out: &mut Vec<u8>, coin: &str, time_ms: u64, units: Units, bbo: [Option<UnitLevel>; 2]) {
    out.extend_from_slice(br#"{"channel":"bbo","data":{"coin":"#);
    write_json_str(out, coin);
    out.extend_from_slice(br#","time":"#);
    out.extend_from_slice(itoa::Buffer::new().format(time_ms).as_bytes());
    out.extend_from_slice(br#","bbo":["#);
    for (i, level) in bbo.iter().enumerate() {
        if i == 1 {
            out.push(b',');
        }
        match level {
            None => out.extend_from_slice(b"null"),
            Some(level) => {
                out.extend_from_slice(br#"{"px":""#);
                write_hl_decimal(level.px, units.px, out);
                out.extend_from_slice(br#"","sz":""#);
                write_hl_decimal(level.sz, units.sz, out);
                out.extend_from_slice(br#"","n":"#);
                out.extend_from_slice(itoa::Buffer::new().format(level.n).as_bytes());
                out.push(b'}');
            }
        }
    }
    out.extend_from_slice(b"]}}");
}

/// `WsBasicOrder`: the order inside an `orderUpdates` entry.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WsBasicOrder<'a> {
    pub coin: &'a str,
    pub side: &'a str,
    pub limit_px: &'a str,
    pub sz: &'a str,
    pub oid: u64,
    pub timestamp: u64,
    pub orig_sz: &'a str,
    /// Absent when the order has none (`string | undefined`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cloid: Option<&'a str>,
}

impl<'a> WsBasicOrder<'a> {
    /// The order of a node status (`origSz` falls back to `sz` when the node omits it).
    pub fn from_node(order: &'a NodeOrder<'a>) -> WsBasicOrder<'a> {
        WsBasicOrder {
            coin: &order.coin,
            side: order.side,
            limit_px: order.limit_px,
            sz: order.sz,
            oid: order.oid,
            timestamp: order.timestamp,
            orig_sz: order.orig_sz.unwrap_or(order.sz),
            cloid: order.cloid,
        }
    }
}

/// `WsOrder`: one entry of an `orderUpdates` frame.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct WsOrder<'a> {
    pub order: WsBasicOrder<'a>,
    pub status: &'a str,
    pub status_timestamp: u64,
}

/// Starts an `orderUpdates` frame (then [`push_order_update`] per entry and [`end_array_frame`]).
pub fn begin_order_updates(out: &mut Vec<u8>) {
    out.extend_from_slice(br#"{"channel":"orderUpdates","data":["#);
}

/// One entry of an `orderUpdates` frame; `first` for the first entry.
pub fn push_order_update(out: &mut Vec<u8>, first: bool, order: &WsOrder<'_>) {
    if !first {
        out.push(b',');
    }
    let _ = serde_json::to_writer(&mut *out, order);
}

/// Ends a frame whose data is an array.
pub fn end_array_frame(out: &mut Vec<u8>) {
    out.extend_from_slice(b"]}");
}

/// Starts a `userFills` frame, `{"isSnapshot","user","fills":[` (then [`push_fill`] per fill
/// and [`end_user_fills`]).
pub fn begin_user_fills(out: &mut Vec<u8>, user: &str, is_snapshot: bool) {
    out.extend_from_slice(br#"{"channel":"userFills","data":{"isSnapshot":"#);
    out.extend_from_slice(if is_snapshot { b"true" } else { b"false" });
    out.extend_from_slice(br#","user":"#);
    write_json_str(out, user);
    out.extend_from_slice(br#","fills":["#);
}

/// One fill of a `userFills` frame: the node's fill object verbatim (hl-node writes fills in
/// the API's fill format); `first` for the first fill.
pub fn push_fill(out: &mut Vec<u8>, first: bool, fill: &RawValue) {
    if !first {
        out.push(b',');
    }
    out.extend_from_slice(fill.get().as_bytes());
}

/// Ends a `userFills` frame.
pub fn end_user_fills(out: &mut Vec<u8>) {
    out.extend_from_slice(b"]}}");
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use ticktrade_core::Decimal;

    fn value(bytes: &[u8]) -> serde_json::Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn all_mids_and_bbo_frames() {
        let mut out = Vec::new();
        begin_all_mids(&mut out);
        push_mid(&mut out, true, "BTC", "76450.5");
        push_mid(&mut out, false, "@107", "18.62");
        end_all_mids(&mut out);
        assert_eq!(
            value(&out),
            serde_json::json!({"channel": "allMids", "data": {"mids": {"BTC": "76450.5", "@107": "18.62"}}})
        );
        let units = Units { px: Decimal::new(1, 1).unwrap(), sz: Decimal::new(1, 5).unwrap() };
        let mut out = Vec::new();
        let bid = UnitLevel { px: 764_500, sz: 153, n: 2 };
        write_bbo(&mut out, "BTC", 1_777_582_003_304, units, [Some(bid), None]);
        assert_eq!(
            value(&out),
            serde_json::json!({"channel": "bbo", "data": {"coin": "BTC", "time": 1_777_582_003_304u64,
                "bbo": [{"px": "76450.0", "sz": "0.00153", "n": 2}, null]}})
        );
    }

    #[test]
    fn order_update_and_user_fills_frames() {
        let order = NodeOrder {
            coin: "BTC".into(),
            side: "B",
            limit_px: "76450.0",
            sz: "0.5",
            oid: 7,
            timestamp: 1,
            trigger_condition: "N/A".into(),
            is_trigger: false,
            trigger_px: "0.0",
            is_position_tpsl: false,
            reduce_only: false,
            order_type: "Limit".into(),
            orig_sz: Some("0.6"),
            tif: Some("Alo"),
            cloid: None,
        };
        let mut out = Vec::new();
        begin_order_updates(&mut out);
        let update = WsOrder { order: WsBasicOrder::from_node(&order), status: "open", status_timestamp: 2 };
        push_order_update(&mut out, true, &update);
        end_array_frame(&mut out);
        assert_eq!(
            value(&out),
            serde_json::json!({"channel": "orderUpdates", "data": [{"order": {"coin": "BTC", "side": "B",
                "limitPx": "76450.0", "sz": "0.5", "oid": 7, "timestamp": 1, "origSz": "0.6"},
                "status": "open", "statusTimestamp": 2}]})
        );
        let fill: &RawValue = serde_json::from_str(r#"{"coin":"BTC","tid":3}"#).unwrap();
        let mut out = Vec::new();
        begin_user_fills(&mut out, "0xab", false);
        push_fill(&mut out, true, fill);
        push_fill(&mut out, false, fill);
        end_user_fills(&mut out);
        assert_eq!(
            value(&out),
            serde_json::json!({"channel": "userFills", "data": {"isSnapshot": false, "user": "0xab",
                "fills": [{"coin": "BTC", "tid": 3}, {"coin": "BTC", "tid": 3}]}})
        );
    }
}
