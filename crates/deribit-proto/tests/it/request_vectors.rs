//! Every request vector of a method the session sends, re-encoded by this crate's encoders from
//! the vector's own values and compared member by member (numbers as exact decimals, key order
//! free). Vectors using what the encoders do not offer (trigger orders, `advanced`) are named
//! and counted, not silently passed.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap (working agreement).

use std::path::Path;

use serde_json::{Map, Value};
use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty, Side};
use ticktrade_deribit_proto::order::{Label, OrderEncoder, OrderKind, OrderRequest, OrderTag, TimeInForce};
use ticktrade_deribit_proto::requests::{self, CancelScope, Scope};
use ticktrade_deribit_proto::signature::Secret;

fn examples() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/deribit/examples");
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.contains(".request") && path.is_file() {
            let value: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
            out.push((name, value));
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn dec(v: &Value) -> Decimal {
    Decimal::parse(&v.to_string()).unwrap()
}

/// A spec whose tick and amount unit are the vector's own last digit, so any of its numbers
/// is a whole number of ticks and lots.
fn spec_for(name: &str, price: Option<Decimal>, amount: Decimal) -> InstrumentSpec {
    let unit = |d: Decimal| Decimal::new(1, d.scale()).unwrap();
    InstrumentSpec::simple(name, price.map_or(Decimal::ONE, unit), unit(amount)).unwrap()
}

fn same_members(ours: &Map<String, Value>, theirs: &Map<String, Value>) -> bool {
    ours.len() == theirs.len()
        && ours.iter().all(|(k, a)| {
            theirs.get(k).is_some_and(|b| match (a, b) {
                (Value::Number(_), Value::Number(_)) => dec(a) == dec(b),
                _ => a == b,
            })
        })
}

fn text<'v>(params: &'v Map<String, Value>, key: &str) -> &'v str {
    params.get(key).and_then(Value::as_str).unwrap()
}

/// Our encoding of the vector's request; `None` when it uses what the encoders do not offer.
fn encode(method: &str, id: u64, params: &Map<String, Value>) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    let label = params.get("label").and_then(Value::as_str).map(|l| OrderTag::Text(Label::new(l.as_bytes()).unwrap()));
    let allowed = |keys: &[&str]| params.keys().all(|k| keys.contains(&k.as_str()));
    match method {
        "private/buy" | "private/sell" => {
            let keys = ["instrument_name", "amount", "type", "price", "label", "time_in_force", "post_only"];
            let kind = params.get("type").and_then(Value::as_str).unwrap_or("limit");
            if !allowed(&keys) || !matches!(kind, "limit" | "market") {
                return None;
            }
            let price = params.get("price").map(dec);
            let amount = dec(&params["amount"]);
            let spec = spec_for(text(params, "instrument_name"), price, amount);
            let order = OrderRequest {
                side: if method == "private/buy" { Side::Buy } else { Side::Sell },
                kind: match price {
                    Some(p) if kind == "limit" => OrderKind::Limit(Price::from_raw(p.to_units(spec.tick()).unwrap())),
                    _ => OrderKind::Market,
                },
                qty: Qty::from_raw(amount.to_units(spec.qty_unit).unwrap()),
                label: label.unwrap_or(OrderTag::None),
                time_in_force: params.get("time_in_force").map_or(TimeInForce::GoodTilCancelled, |t| {
                    TimeInForce::parse(t.as_str().unwrap().as_bytes()).unwrap()
                }),
                post_only: params.get("post_only").is_some_and(|v| v == true),
                reject_post_only: false,
                reduce_only: false,
            };
            OrderEncoder::new(&spec).encode_order(&mut out, id, &order);
        }
        "private/edit" | "private/edit_by_label" => {
            let keys = ["instrument_name", "order_id", "label", "amount", "price", "post_only"];
            if !allowed(&keys) {
                return None;
            }
            let (price, amount) = (dec(&params["price"]), dec(&params["amount"]));
            let name = params.get("instrument_name").and_then(Value::as_str).unwrap_or("ANY");
            let spec = spec_for(name, Some(price), amount);
            let encoder = OrderEncoder::new(&spec);
            let (qty, price) = (
                Qty::from_raw(amount.to_units(spec.qty_unit).unwrap()),
                Price::from_raw(price.to_units(spec.tick()).unwrap()),
            );
            let post_only = params.get("post_only").is_some_and(|v| v == true);
            if method == "private/edit" {
                encoder.encode_edit(&mut out, id, text(params, "order_id"), qty, price, post_only);
            } else {
                encoder.encode_edit_by_label(&mut out, id, label.unwrap(), qty, price, post_only);
            }
        }
        "private/cancel" => requests::cancel(&mut out, id, text(params, "order_id")),
        "private/cancel_by_label" => {
            requests::cancel_by_label(&mut out, id, label.unwrap(), params.get("currency").and_then(Value::as_str))
        }
        "private/cancel_all" if params.is_empty() => requests::cancel_all(&mut out, id),
        "private/cancel_all_by_instrument" if allowed(&["instrument_name", "type"]) && params["type"] == "all" => {
            requests::cancel_all_by_instrument(&mut out, id, text(params, "instrument_name"));
        }
        "public/auth" => match text(params, "grant_type") {
            "client_credentials" => requests::auth_client_credentials(
                &mut out,
                id,
                text(params, "client_id"),
                &Secret::new(text(params, "client_secret")),
            ),
            // The documented signature vector's secret.
            "client_signature" => requests::auth_client_signature(
                &mut out,
                id,
                text(params, "client_id"),
                &Secret::new("AMANDASECRECT"),
                params["timestamp"].as_u64().unwrap(),
                text(params, "nonce"),
                text(params, "data"),
            ),
            _ => return None,
        },
        "public/set_heartbeat" => {
            requests::set_heartbeat(&mut out, id, dec(&params["interval"]).to_units(Decimal::ONE).unwrap() as u32);
        }
        "public/test" if params.is_empty() => requests::test(&mut out, id),
        "private/enable_cancel_on_disconnect" => {
            let scope = match params.get("scope").and_then(Value::as_str) {
                Some("account") => CancelScope::Account,
                _ => CancelScope::Connection,
            };
            requests::enable_cancel_on_disconnect(&mut out, id, scope);
        }
        "public/subscribe" | "private/subscribe" if allowed(&["channels"]) => {
            let channels: Vec<&str> =
                params["channels"].as_array().unwrap().iter().map(|c| c.as_str().unwrap()).collect();
            let scope = if method.starts_with("public") { Scope::Public } else { Scope::Private };
            requests::subscribe(&mut out, id, scope, channels);
        }
        "private/get_open_orders_by_instrument" if allowed(&["instrument_name"]) => {
            requests::get_open_orders_by_instrument(&mut out, id, text(params, "instrument_name"));
        }
        "private/get_position" => requests::get_position(&mut out, id, text(params, "instrument_name")),
        "private/get_order_state" => requests::get_order_state(&mut out, id, text(params, "order_id")),
        "private/get_order_state_by_label" => {
            requests::get_order_state_by_label(&mut out, id, text(params, "currency"), label.unwrap());
        }
        "private/get_user_trades_by_instrument" if allowed(&["instrument_name", "start_seq", "count", "sorting"]) => {
            requests::get_user_trades_by_instrument(
                &mut out,
                id,
                text(params, "instrument_name"),
                params.get("start_seq").and_then(Value::as_u64),
                params.get("count").and_then(Value::as_u64).map(|c| c as u32),
                params.get("sorting").is_some_and(|s| s == "asc"),
            );
        }
        _ => return None,
    }
    Some(out)
}

const SESSION_METHODS: [&str; 19] = [
    "private/buy",
    "private/sell",
    "private/edit",
    "private/edit_by_label",
    "private/cancel",
    "private/cancel_by_label",
    "private/cancel_all",
    "private/cancel_all_by_instrument",
    "public/auth",
    "public/set_heartbeat",
    "public/test",
    "private/enable_cancel_on_disconnect",
    "public/subscribe",
    "private/subscribe",
    "private/get_open_orders_by_instrument",
    "private/get_position",
    "private/get_order_state",
    "private/get_order_state_by_label",
    "private/get_user_trades_by_instrument",
];

#[test]
fn session_request_vectors_match_the_encoders() {
    let (mut compared, mut not_offered) = (0, Vec::new());
    for (name, vector) in examples() {
        let method = vector["method"].as_str().unwrap();
        if !SESSION_METHODS.contains(&method) {
            continue;
        }
        let id = vector["id"].as_u64().unwrap();
        let params = vector["params"].as_object().unwrap();
        let Some(ours) = encode(method, id, params) else {
            not_offered.push(name);
            continue;
        };
        let ours: Value = serde_json::from_slice(&ours).unwrap();
        assert_eq!(ours["method"], vector["method"], "{name}");
        assert_eq!(ours["id"], vector["id"], "{name}");
        assert_eq!(ours["jsonrpc"], "2.0", "{name}");
        assert!(same_members(ours["params"].as_object().unwrap(), params), "{name}: ours {ours}, vector {vector}");
        compared += 1;
    }
    // Trigger orders (stop_limit with trigger/stop_price) and `advanced` edits of options.
    assert_eq!(
        not_offered,
        [
            "private_edit.request.json",
            "private_edit.request.official_2019.json",
            "private_sell.request.json",
            "private_sell.request.official_2019.json"
        ],
        "vectors the encoders do not cover changed"
    );
    assert!(compared >= 30, "only {compared} request vectors compared");
}
