//! Every file in `testdata/deribit/examples/` is either decoded by one of this crate's
//! decoders or named, with a reason, in `tests/vectors_skip.txt`. A file nobody claims fails.
//! Later work (typed `api` decoders) claims more files here and shrinks the skip-list.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap (working agreement).

use std::path::{Path, PathBuf};

use serde_json::Value;
use ticktrade_core::{Decimal, Side};
use ticktrade_deribit_proto::book::{BookKind, DecimalLevel, decode_book, decode_book_data};
use ticktrade_deribit_proto::channel::Channel;
use ticktrade_deribit_proto::envelope::{Incoming, classify, decode_request};
use ticktrade_deribit_proto::frame::{Frame, scan_frame};
use ticktrade_deribit_proto::instrument::parse_instruments_response;
use ticktrade_deribit_proto::order::TimeInForce;
use ticktrade_deribit_proto::report::{
    self, Liquidity, OrderReport, OrderState, OrderType, TradeReport, decode_order_general, decode_trade_general,
};
use ticktrade_deribit_proto::signature::{Secret, client_signature};

fn examples_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/deribit/examples")
}

fn files(dir: &Path, base: &Path, out: &mut Vec<String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files(&path, base, out);
        } else {
            out.push(path.strip_prefix(base).unwrap().to_string_lossy().into_owned());
        }
    }
}

/// `*` matches any run of characters.
fn glob(pattern: &str, text: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == text,
        Some((head, tail)) => {
            text.starts_with(head) && (0..=text.len() - head.len()).any(|i| glob(tail, &text[head.len() + i..]))
        }
    }
}

fn skip_list() -> Vec<(String, String)> {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors_skip.txt")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (pattern, reason) = l.split_once(char::is_whitespace).expect("pattern then reason");
            assert!(!reason.trim().is_empty(), "skip-list entry {pattern} has no reason");
            (pattern.to_owned(), reason.trim().to_owned())
        })
        .collect()
}

/// Channels whose templates `channel::Channel` knows: their names must parse.
const KNOWN_CHANNEL_PREFIXES: [&str; 8] = [
    "book.",
    "ticker.",
    "quote.",
    "deribit_price_index.",
    "perpetual.",
    "incremental_ticker.",
    "user.portfolio.",
    "user.orders.",
];

fn expected_book_kind(name: &str) -> BookKind {
    if name.contains("group.depth") || name.contains("grouped") {
        BookKind::Window
    } else if name.contains("snapshot") || name.contains(".first.") {
        BookKind::Snapshot
    } else {
        BookKind::Change
    }
}

/// Decodes `name` with every decoder that claims it; `Ok(false)` when none does.
fn decode(name: &str, text: &str) -> Result<bool, String> {
    let file = name.rsplit('/').next().unwrap_or(name);
    let mut claimed = false;
    let mut levels: Vec<DecimalLevel> = Vec::new();

    if file == "rpc_error_codes.v2_1_1.json" {
        let rows: Vec<serde_json::Value> = serde_json::from_str(text).map_err(|e| e.to_string())?;
        for row in rows {
            let code = row["code"].as_i64().ok_or("code")? as i32;
            ticktrade_deribit_proto::error::lookup(code).ok_or(format!("code {code} not in the table"))?;
        }
        return Ok(true);
    }
    if file.contains(".request") {
        let request = decode_request(text).map_err(|e| e.to_string())?;
        if file.starts_with("public_auth.request.client_signature") {
            let params: serde_json::Value = serde_json::from_str(request.params.ok_or("params")?.get()).unwrap();
            // The secret of Deribit's documented signature example (see `signature.rs`).
            let sig = client_signature(
                &Secret::new("AMANDASECRECT"),
                params["timestamp"].as_u64().ok_or("timestamp")?,
                params["nonce"].as_str().ok_or("nonce")?,
                params["data"].as_str().unwrap_or(""),
            );
            if params["signature"].as_str() != Some(sig.as_str()) {
                return Err(format!("signature mismatch: computed {sig}"));
            }
        }
        claimed = true;
    }
    let is_frame = file.contains(".response")
        || file.contains(".notification")
        || file.starts_with("notification.")
        || file.starts_with("error.")
        || name.starts_with("nautilus_test_data/");
    if is_frame {
        same_as_classify(text)?;
        reports(file, text)?;
        match classify(text).map_err(|e| format!("envelope: {e}"))? {
            Incoming::Response(response) => {
                if let Some(code) = file.strip_prefix("error.").and_then(|r| r.split('_').next()) {
                    let error = response.outcome.as_ref().err().ok_or("error vector without an error")?;
                    if error.code.to_string() != code {
                        return Err(format!("error code {} but file says {code}", error.code));
                    }
                }
                let instruments =
                    ["public_get_instruments.response", "public_get_instrument.response", "http_get_instrument"];
                if instruments.iter().any(|p| file.starts_with(p)) {
                    let specs = parse_instruments_response(text, 0).map_err(|e| e.to_string())?;
                    if specs.is_empty() {
                        return Err("no instruments".into());
                    }
                }
            }
            Incoming::Notification(note) => {
                if KNOWN_CHANNEL_PREFIXES.iter().any(|p| note.channel.starts_with(p))
                    && Channel::parse(note.channel).is_none()
                {
                    return Err(format!("channel {} does not parse", note.channel));
                }
                if note.channel.starts_with("book.") {
                    let header = decode_book(text.as_bytes(), &mut levels).map_err(|e| format!("book: {e}"))?;
                    if header.kind != expected_book_kind(file) {
                        return Err(format!("book kind {:?}", header.kind));
                    }
                }
            }
            Incoming::Heartbeat(_) => {}
        }
        claimed = true;
    }
    if file.contains(".data.") {
        let data = text.trim().as_bytes();
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let claimed_here = if file.starts_with("user.orders.") {
            orders(data, &value)?
        } else if file.starts_with("user.trades.") {
            trades(data, &value)?
        } else if file.starts_with("user.changes.") {
            changes(data, &value)?
        } else {
            false
        };
        claimed |= claimed_here;
    }
    if file.starts_with("book.") && file.contains(".data.") {
        let header = decode_book_data(text.as_bytes(), &mut levels).map_err(|e| format!("book data: {e}"))?;
        if header.kind != expected_book_kind(file) {
            return Err(format!("book kind {:?}", header.kind));
        }
        claimed = true;
    }
    Ok(claimed)
}

/// `scan_frame` gives what `classify` gives.
fn same_as_classify(text: &str) -> Result<(), String> {
    let frame = scan_frame(text.as_bytes()).map_err(|e| format!("scan_frame: {e}"))?;
    let incoming = classify(text).map_err(|e| format!("envelope: {e}"))?;
    let num_id = |id: Option<ticktrade_deribit_proto::Id<'_>>| match id {
        None => Ok(None),
        Some(ticktrade_deribit_proto::Id::Num(n)) => Ok(u64::try_from(n).ok()),
        Some(other) => Err(format!("id {other:?}")),
    };
    let same = match (frame, incoming) {
        (Frame::Result { id, result }, Incoming::Response(r)) => {
            Some(id) == num_id(r.id).ok() && r.outcome.as_ref().ok().map(|v| v.get().as_bytes()) == Some(result)
        }
        (Frame::Error { id, error }, Incoming::Response(r)) => {
            let e = r.outcome.as_ref().err().ok_or("error vs result")?;
            let message_same = error.message.contains('\\') || error.message == e.message;
            Some(id) == num_id(r.id).ok()
                && error.code == e.code
                && message_same
                && error.data == e.data.map(|d| d.get().as_bytes())
        }
        (Frame::Notification { channel, label, data, .. }, Incoming::Notification(n)) => {
            channel == n.channel && label == n.label && data == n.data.get().as_bytes()
        }
        (Frame::Heartbeat(a), Incoming::Heartbeat(b)) => a == b,
        _ => false,
    };
    if same { Ok(()) } else { Err(format!("scan_frame gives {frame:?}")) }
}

/// Order and trade reports in responses and notifications, checked against serde's reading.
fn reports(file: &str, text: &str) -> Result<(), String> {
    let frame = scan_frame(text.as_bytes()).map_err(|e| e.to_string())?;
    let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    match frame {
        Frame::Notification { channel, data, .. } => {
            let data_value = &value["params"]["data"];
            if channel.starts_with("user.orders.") {
                orders(data, data_value)?;
            } else if channel.starts_with("user.trades.") {
                trades(data, data_value)?;
            } else if channel.starts_with("user.changes.") {
                changes(data, data_value)?;
            }
        }
        Frame::Result { result, .. } => {
            let method = file.split('.').next().unwrap_or("");
            let result_value = &value["result"];
            match method {
                "private_buy"
                | "private_sell"
                | "private_edit"
                | "private_edit_by_label"
                | "private_close_position" => {
                    let mut n = 0;
                    let mut failure = Ok(());
                    let (order, _) = report::decode_order_result(result, |t, _| {
                        failure = failure.clone().and(check_trade(&t, &result_value["trades"][n]));
                        n += 1;
                    })
                    .map_err(|e| format!("order result: {e}"))?;
                    failure?;
                    check_order(&order, &result_value["order"])?;
                    if Some(n) != result_value["trades"].as_array().map(Vec::len) {
                        return Err(format!("{n} trades"));
                    }
                }
                "private_cancel"
                | "private_get_order_state"
                | "private_get_order_state_by_label"
                | "private_get_open_orders"
                | "private_get_open_orders_by_instrument"
                | "private_get_open_orders_by_currency"
                | "private_get_open_orders_by_label" => {
                    orders(result, result_value)?;
                }
                "private_cancel_by_label"
                | "private_cancel_all"
                | "private_cancel_all_by_instrument"
                | "private_cancel_all_by_currency"
                | "private_cancel_all_by_currency_pair"
                | "private_cancel_all_by_kind_or_type" => {
                    if let Some(n) = result_value.as_u64()
                        && report::decode_count(result) != Ok(n)
                    {
                        return Err(format!("count {:?}", report::decode_count(result)));
                    }
                }
                "private_get_user_trades_by_instrument"
                | "private_get_user_trades_by_currency"
                | "private_get_user_trades_by_instrument_and_time"
                | "private_get_user_trades_by_currency_and_time" => {
                    let mut n = 0;
                    let mut failure = Ok(());
                    let has_more = report::decode_user_trades(result, |t, _| {
                        failure = failure.clone().and(check_trade(&t, &result_value["trades"][n]));
                        n += 1;
                    })
                    .map_err(|e| format!("user trades: {e}"))?;
                    failure?;
                    if has_more != result_value["has_more"].as_bool().unwrap_or(false) {
                        return Err("has_more".into());
                    }
                }
                _ => {}
            }
        }
        _ => {}
    }
    Ok(())
}

/// An order object or array: each decoded, the same on the general path, checked field by field.
fn orders(json: &[u8], value: &Value) -> Result<bool, String> {
    let list = match value {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    let mut n = 0;
    let mut failure = Ok(());
    report::for_each_order(json, |o, _| {
        failure = failure.clone().and(check_order(&o, list.get(n).unwrap_or(&Value::Null)));
        n += 1;
    })
    .map_err(|e| format!("orders: {e}"))?;
    failure?;
    if n != list.len() {
        return Err(format!("{n} of {} orders", list.len()));
    }
    // The typed object the gateway's request path decodes, with the same price (a number, or
    // none for "market_price").
    for (i, item) in list.iter().enumerate() {
        let order: ticktrade_deribit_proto::api::Order =
            serde_json::from_value(item.clone()).map_err(|e| format!("api::Order {i}: {e}"))?;
        if order.price.value() != number(&item["price"]) {
            return Err(format!("api::Order {i} price {} vs {}", order.price, item["price"]));
        }
    }
    Ok(true)
}

fn trades(json: &[u8], value: &Value) -> Result<bool, String> {
    let list = match value {
        Value::Array(items) => items.clone(),
        other => vec![other.clone()],
    };
    let mut n = 0;
    let mut failure = Ok(());
    report::for_each_trade(json, |t, _| {
        failure = failure.clone().and(check_trade(&t, list.get(n).unwrap_or(&Value::Null)));
        n += 1;
    })
    .map_err(|e| format!("trades: {e}"))?;
    failure?;
    if n != list.len() {
        return Err(format!("{n} of {} trades", list.len()));
    }
    Ok(true)
}

fn changes(json: &[u8], value: &Value) -> Result<bool, String> {
    let (mut orders, mut trades) = (Vec::new(), Vec::new());
    let name = report::decode_user_changes(json, |o, _| orders.push(o), |t, _| trades.push(t))
        .map_err(|e| format!("user.changes: {e}"))?;
    if Some(name) != value["instrument_name"].as_str() {
        return Err("instrument_name".into());
    }
    for (i, o) in orders.iter().enumerate() {
        check_order(o, &value["orders"][i])?;
    }
    for (i, t) in trades.iter().enumerate() {
        check_trade(t, &value["trades"][i])?;
    }
    let len = |k: &str| value[k].as_array().map_or(0, Vec::len);
    if orders.len() != len("orders") || trades.len() != len("trades") {
        return Err("user.changes counts".into());
    }
    Ok(true)
}

fn number(value: &Value) -> Option<Decimal> {
    value.as_number().map(|n| Decimal::parse(&n.to_string()).expect("a decimal"))
}

fn text_or<'v>(value: &'v Value, default: &'v str) -> &'v str {
    value.as_str().unwrap_or(default)
}

fn check_order(o: &OrderReport<'_>, v: &Value) -> Result<(), String> {
    let object_text = serde_json::to_string(v).unwrap();
    if decode_order_general(object_text.as_bytes()) != Ok(*o) {
        return Err(format!("general path differs on {object_text}"));
    }
    let checks = [
        ("order_id", o.order_id == text_or(&v["order_id"], "?")),
        ("label", o.label == text_or(&v["label"], "")),
        ("instrument_name", o.instrument_name == text_or(&v["instrument_name"], "?")),
        ("order_state", Some(o.order_state) == OrderState::parse(text_or(&v["order_state"], "").as_bytes())),
        ("direction", o.direction == if v["direction"] == "buy" { Side::Buy } else { Side::Sell }),
        ("price", o.price == number(&v["price"])),
        ("amount", Some(o.amount) == number(&v["amount"])),
        ("filled_amount", o.filled_amount == number(&v["filled_amount"]).unwrap_or(Decimal::ZERO)),
        ("average_price", o.average_price == number(&v["average_price"]).unwrap_or(Decimal::ZERO)),
        ("order_type", Some(o.order_type) == OrderType::parse(text_or(&v["order_type"], "").as_bytes())),
        ("time_in_force", Some(o.time_in_force) == TimeInForce::parse(text_or(&v["time_in_force"], "").as_bytes())),
        ("post_only", o.post_only == v["post_only"].as_bool().unwrap_or(false)),
        ("reduce_only", o.reduce_only == v["reduce_only"].as_bool().unwrap_or(false)),
        ("creation_timestamp", Some(o.creation_timestamp) == v["creation_timestamp"].as_u64()),
        ("last_update_timestamp", Some(o.last_update_timestamp) == v["last_update_timestamp"].as_u64()),
        ("cancel_reason", o.cancel_reason == v["cancel_reason"].as_str()),
        ("reject_post_only", o.reject_post_only == v["reject_post_only"].as_bool()),
    ];
    match checks.iter().find(|(_, ok)| !ok) {
        Some((field, _)) => Err(format!("order {field}: {o:?} vs {v}")),
        None => Ok(()),
    }
}

fn check_trade(t: &TradeReport<'_>, v: &Value) -> Result<(), String> {
    let object_text = serde_json::to_string(v).unwrap();
    if decode_trade_general(object_text.as_bytes()) != Ok(*t) {
        return Err(format!("general path differs on {object_text}"));
    }
    let checks = [
        ("trade_id", t.trade_id == text_or(&v["trade_id"], "?")),
        ("order_id", t.order_id == text_or(&v["order_id"], "?")),
        ("label", t.label == text_or(&v["label"], "")),
        ("instrument_name", t.instrument_name == text_or(&v["instrument_name"], "?")),
        ("direction", t.direction == if v["direction"] == "buy" { Side::Buy } else { Side::Sell }),
        ("price", Some(t.price) == number(&v["price"])),
        ("amount", Some(t.amount) == number(&v["amount"])),
        ("fee", Some(t.fee) == number(&v["fee"])),
        ("fee_currency", t.fee_currency == text_or(&v["fee_currency"], "?")),
        ("liquidity", t.liquidity == if v["liquidity"] == "M" { Liquidity::Maker } else { Liquidity::Taker }),
        ("timestamp", Some(t.timestamp) == v["timestamp"].as_u64()),
        ("trade_seq", Some(t.trade_seq) == v["trade_seq"].as_u64()),
        ("state", Some(t.state) == OrderState::parse(text_or(&v["state"], "").as_bytes())),
    ];
    match checks.iter().find(|(_, ok)| !ok) {
        Some((field, _)) => Err(format!("trade {field}: {t:?} vs {v}")),
        None => Ok(()),
    }
}

#[test]
fn every_vector_is_decoded_or_skipped_with_a_reason() {
    let base = examples_dir();
    let mut names = Vec::new();
    files(&base, &base, &mut names);
    names.sort();
    assert!(names.len() > 600, "examples missing? found {}", names.len());
    let skips = skip_list();
    let mut used = vec![false; skips.len()];
    let (mut failures, mut unclaimed, mut decoded) = (Vec::new(), Vec::new(), 0);
    for name in &names {
        let text = std::fs::read_to_string(base.join(name)).unwrap();
        match decode(name, &text) {
            Ok(true) => decoded += 1,
            Ok(false) => match skips.iter().position(|(pattern, _)| glob(pattern, name)) {
                Some(i) => used[i] = true,
                None => unclaimed.push(name.clone()),
            },
            Err(error) => failures.push(format!("{name}: {error}")),
        }
    }
    assert!(failures.is_empty(), "{} vectors fail to decode:\n{}", failures.len(), failures.join("\n"));
    assert!(
        unclaimed.is_empty(),
        "vectors nobody claims (decode them or add a skip-list entry):\n{}",
        unclaimed.join("\n")
    );
    let stale: Vec<_> = skips.iter().zip(&used).filter(|(_, used)| !**used).map(|((p, _), _)| p.as_str()).collect();
    assert!(stale.is_empty(), "skip-list entries that match nothing left unclaimed: {stale:?}");
    assert!(decoded > 450, "only {decoded} vectors decoded");
}

#[test]
fn glob_matches() {
    assert!(glob("*.data.*.json", "ticker.instrument_name.interval.data.repeated.json"));
    assert!(glob("INDEX.md", "INDEX.md"));
    assert!(!glob("book.*.data.*", "ticker.x.data.y"));
    assert!(glob("*", ""));
}
