//! The generator's JSON: node lines, snapshot and metadata, written the way hl-node and the
//! info server write them (field order and number style included).
//!
//! Owns: text only. Must not: change the model.

use std::fmt::Write;

use ticktrade_core::{Decimal, Utc};
use ticktrade_hl_proto::info::CoinKind;
use ticktrade_hl_proto::time::format_node_time;
use ticktrade_hl_proto::ws::write_hl_decimal;

use super::market::{GenCoin, ModelOrder};

/// How a status's order looks.
#[derive(Clone, Copy)]
pub enum Kind {
    Alo,
    Ioc,
    Trigger,
}

/// The three lines of the block being generated.
#[derive(Default)]
pub struct Buffers {
    /// The record of one user's events, when one is watched (`Generator::watch_user`).
    pub log: Option<super::UserLog>,
    statuses: String,
    diffs: String,
    fills: String,
    n: [usize; 3],
    time_text: String,
    scratch: Vec<u8>,
}

pub fn user(u: u16) -> String {
    format!("0x{:040x}", 0xabc_0000u64 + u64::from(u))
}

fn num(units: i64, scale: u32, scratch: &mut Vec<u8>) -> &str {
    scratch.clear();
    write_hl_decimal(units, Decimal::new(1, scale as u8).unwrap_or(Decimal::ONE), scratch);
    std::str::from_utf8(scratch).unwrap_or("0")
}

impl Buffers {
    pub fn begin(&mut self, height: u64, time: Utc) {
        self.time_text.clear();
        format_node_time(time, &mut self.time_text);
        for (i, s) in [&mut self.statuses, &mut self.diffs, &mut self.fills].into_iter().enumerate() {
            s.clear();
            let _ = write!(
                s,
                r#"{{"local_time":"{t}","block_time":"{t}","block_number":{height},"events":["#,
                t = self.time_text
            );
            self.n[i] = 0;
        }
    }

    pub fn finish(&mut self) -> (String, String, String) {
        for s in [&mut self.statuses, &mut self.diffs, &mut self.fills] {
            s.push_str("]}");
        }
        (std::mem::take(&mut self.statuses), std::mem::take(&mut self.diffs), std::mem::take(&mut self.fills))
    }

    fn sep(&mut self, i: usize) {
        if self.n[i] > 0 {
            [&mut self.statuses, &mut self.diffs, &mut self.fills][i].push(',');
        }
        self.n[i] += 1;
    }

    pub fn status(&mut self, coin: &GenCoin, bid: bool, px: i64, order: &ModelOrder, status: &str, kind: Kind) {
        self.sep(0);
        if let Some(log) = self.log.as_mut().filter(|log| log.user == order.user) {
            log.statuses.push((order.oid, status.to_owned()));
        }
        let hash = if status == "open" {
            format!("\"0x{:064x}\"", order.oid.wrapping_mul(0x9E37_79B9))
        } else {
            "null".to_owned()
        };
        let px_text = num(px, coin.px_scale, &mut self.scratch).to_owned();
        let sz_text = num(order.sz, coin.sz_decimals, &mut self.scratch).to_owned();
        let (cond, is_trigger, trigger_px, order_type, tif) = match kind {
            Kind::Alo => ("N/A".to_owned(), false, "0.0".to_owned(), "Limit", "\"Alo\""),
            Kind::Ioc => ("N/A".to_owned(), false, "0.0".to_owned(), "Limit", "\"Ioc\""),
            Kind::Trigger => (format!("Price below {px_text}"), true, px_text.clone(), "Stop Market", "null"),
        };
        let cloid = match order.cloid {
            Some(c) => format!("\"0x{c:032x}\""),
            None => "null".to_owned(),
        };
        let _ = write!(
            self.statuses,
            r#"{{"time":"{t}","user":"{u}","hash":{hash},"builder":null,"status":"{status}","order":{{"coin":"{c}","side":"{s}","limitPx":"{px_text}","sz":"{sz_text}","oid":{oid},"timestamp":{ts},"triggerCondition":"{cond}","isTrigger":{is_trigger},"triggerPx":"{trigger_px}","children":[],"isPositionTpsl":false,"reduceOnly":false,"orderType":"{order_type}","origSz":"{sz_text}","tif":{tif},"cloid":{cloid}}}}}"#,
            t = self.time_text,
            u = user(order.user),
            c = coin.name,
            s = if bid { "B" } else { "A" },
            oid = order.oid,
            ts = order.timestamp,
        );
    }

    fn diff(&mut self, coin: &GenCoin, bid: bool, px: i64, order: &ModelOrder, body: &str) {
        self.sep(1);
        let px_text = num(px, coin.px_scale, &mut self.scratch).to_owned();
        let _ = write!(
            self.diffs,
            r#"{{"user":"{u}","oid":{oid},"coin":"{c}","side":"{s}","px":"{px_text}","raw_book_diff":{body}}}"#,
            u = user(order.user),
            oid = order.oid,
            c = coin.name,
            s = if bid { "B" } else { "A" },
        );
    }

    pub fn diff_new(&mut self, coin: &GenCoin, bid: bool, px: i64, order: &ModelOrder, sz: i64) {
        let body = format!(r#"{{"new":{{"sz":"{}"}}}}"#, num(sz, coin.sz_decimals, &mut self.scratch));
        self.diff(coin, bid, px, order, &body);
    }

    pub fn diff_update(&mut self, coin: &GenCoin, bid: bool, px: i64, order: &ModelOrder, before: i64, after: i64) {
        let orig = num(before, coin.sz_decimals, &mut self.scratch).to_owned();
        let body = format!(
            r#"{{"update":{{"origSz":"{orig}","newSz":"{}"}}}}"#,
            num(after, coin.sz_decimals, &mut self.scratch)
        );
        self.diff(coin, bid, px, order, &body);
    }

    pub fn diff_remove(&mut self, coin: &GenCoin, bid: bool, px: i64, order: &ModelOrder) {
        self.diff(coin, bid, px, order, "\"remove\"");
    }

    /// Taker fill then maker fill, as recorded files have them.
    #[allow(clippy::too_many_arguments)]
    pub fn fill_pair(
        &mut self,
        coin: &GenCoin,
        taker_bid: bool,
        px: i64,
        qty: i64,
        taker: &ModelOrder,
        maker: &ModelOrder,
        tid: u64,
        ms: u64,
    ) {
        let px_text = num(px, coin.px_scale, &mut self.scratch).to_owned();
        let sz_text = num(qty, coin.sz_decimals, &mut self.scratch).to_owned();
        let hash = format!("0x{:064x}", taker.oid.wrapping_mul(0x9E37_79B9));
        for (order, bid, crossed) in [(taker, taker_bid, true), (maker, !taker_bid, false)] {
            self.sep(2);
            if let Some(log) = self.log.as_mut().filter(|log| log.user == order.user) {
                log.fills.push((tid, order.oid));
            }
            let _ = write!(
                self.fills,
                r#"["{u}",{{"coin":"{c}","px":"{px_text}","sz":"{sz_text}","side":"{s}","time":{ms},"startPosition":"0.0","dir":"{dir}","closedPnl":"0.0","hash":"{hash}","oid":{oid},"crossed":{crossed},"fee":"0.0","tid":{tid},"feeToken":"USDC","twapId":null}}]"#,
                u = user(order.user),
                c = coin.name,
                s = if bid { "B" } else { "A" },
                dir = if bid { "Open Long" } else { "Open Short" },
                oid = order.oid,
            );
        }
    }
}

fn order_json(out: &mut String, coin: &GenCoin, bid: bool, px: i64, order: &ModelOrder, scratch: &mut Vec<u8>) {
    let px_text = num(px, coin.px_scale, scratch).to_owned();
    let sz_text = num(order.sz, coin.sz_decimals, scratch).to_owned();
    let cloid = match order.cloid {
        Some(c) => format!("\"0x{c:032x}\""),
        None => "null".to_owned(),
    };
    let _ = write!(
        out,
        r#"["{u}",{{"coin":"{c}","side":"{s}","limitPx":"{px_text}","sz":"{sz_text}","oid":{oid},"timestamp":{ts},"triggerCondition":"N/A","isTrigger":false,"triggerPx":"0.0","children":[],"isPositionTpsl":false,"reduceOnly":false,"orderType":"Limit","origSz":"{sz_text}","tif":"Alo","cloid":{cloid}}}]"#,
        u = user(order.user),
        c = coin.name,
        s = if bid { "B" } else { "A" },
        oid = order.oid,
        ts = order.timestamp,
    );
}

/// `[height, [[coin, [bids, asks]], …]]`.
pub fn snapshot(height: u64, coins: &[GenCoin]) -> String {
    let mut out = format!("[{height},[");
    let mut scratch = Vec::new();
    for (i, coin) in coins.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "[\"{}\",[[", coin.name);
        let mut first = true;
        for (&px, queue) in coin.bids.iter().rev() {
            for order in queue {
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
                order_json(&mut out, coin, true, px, order, &mut scratch);
            }
        }
        out.push_str("],[");
        first = true;
        for (&px, queue) in coin.asks.iter() {
            for order in queue {
                if !std::mem::take(&mut first) {
                    out.push(',');
                }
                order_json(&mut out, coin, false, px, order, &mut scratch);
            }
        }
        out.push_str("]]]");
    }
    out.push_str("]]");
    out
}

/// `(meta, spotMeta)`.
pub fn meta(coins: &[GenCoin]) -> (String, String) {
    let perps: Vec<serde_json::Value> = coins
        .iter()
        .filter(|c| c.kind == CoinKind::Perp)
        .map(|c| serde_json::json!({"name": c.name, "szDecimals": c.sz_decimals, "maxLeverage": 20, "marginTableId": 20}))
        .collect();
    let mut tokens = vec![
        serde_json::json!({"name": "USDC", "szDecimals": 8, "weiDecimals": 8, "index": 0, "tokenId": format!("0x{:032x}", 0), "isCanonical": true, "evmContract": null, "fullName": null}),
    ];
    let mut universe = Vec::new();
    for (j, c) in coins.iter().filter(|c| c.kind == CoinKind::Spot).enumerate() {
        let token = j + 1;
        let name = if j == 0 { "PURR".to_owned() } else { format!("T{token}") };
        tokens.push(serde_json::json!({"name": name, "szDecimals": c.sz_decimals, "weiDecimals": 8, "index": token, "tokenId": format!("0x{token:032x}"), "isCanonical": j == 0, "evmContract": null, "fullName": null}));
        universe.push(serde_json::json!({"tokens": [token, 0], "name": c.name, "index": j, "isCanonical": j == 0}));
    }
    let meta = serde_json::json!({"universe": perps, "marginTables": []});
    let spot = serde_json::json!({"universe": universe, "tokens": tokens});
    (meta.to_string(), spot.to_string())
}

/// `(metaAndAssetCtxs, spotMetaAndAssetCtxs)` at the start: every price the coin's mid, funding
/// at Hyperliquid's baseline hourly rate, no volume yet. The server takes from these only what
/// its books do not determine.
pub fn asset_ctxs(coins: &[GenCoin]) -> (String, String) {
    let (meta, spot) = meta(coins);
    let mut scratch = Vec::new();
    let mut perps = Vec::new();
    let mut spots = Vec::new();
    for c in coins {
        let mid = num(c.mid, c.px_scale, &mut scratch).to_owned();
        match c.kind {
            CoinKind::Perp => perps.push(serde_json::json!({
                "funding": "0.0000125", "openInterest": num(c.weight as i64 * 1000, 0, &mut scratch),
                "prevDayPx": mid, "dayNtlVlm": "0.0", "premium": "0.0", "oraclePx": mid, "markPx": mid,
                "midPx": mid, "impactPxs": null, "dayBaseVlm": "0.0"
            })),
            CoinKind::Spot => spots.push(serde_json::json!({
                "prevDayPx": mid, "dayNtlVlm": "0.0", "markPx": mid, "midPx": mid,
                "circulatingSupply": "1000000000.0", "coin": c.name, "totalSupply": "1000000000.0", "dayBaseVlm": "0.0"
            })),
        }
    }
    let wrap = |doc: String, ctxs: Vec<serde_json::Value>| {
        let doc: serde_json::Value = serde_json::from_str(&doc).unwrap_or(serde_json::Value::Null);
        serde_json::Value::Array(vec![doc, serde_json::Value::Array(ctxs)]).to_string()
    };
    (wrap(meta, perps), wrap(spot, spots))
}
