//! `allMids`, `bbo`, `orderUpdates` and `userFills`, and a user's orders on `/info`
//! (`openOrders`, `frontendOpenOrders`, `orderStatus`), as a client written against
//! Hyperliquid's documented formats (serde_json Values only) sees them, checked against the
//! generator's own books and its record of one user's orders and fills.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use serde_json::{Value, json};
use ticktrade_core::{Decimal, Utc};
use ticktrade_hl_node::synth::market::GenCoin;
use ticktrade_hl_node::synth::{Generator, user_address};
use ticktrade_testkit::WsClient;

use common::*;

/// The user whose orders and fills are followed.
const USER: u16 = 7;

/// `text` in units of `10^-scale` (exact; panics if it is not on that grid).
fn units(text: &str, scale: u32) -> i64 {
    Decimal::parse(text).unwrap().to_units(Decimal::new(1, scale as u8).unwrap()).unwrap()
}

/// The model's mids of every coin with two sides, in units of `10^-(px_scale + 1)`.
fn model_mids(generator: &Generator) -> Vec<(String, i64)> {
    let mut mids: Vec<(String, i64)> =
        generator.coins().iter().filter_map(|c| Some((c.name.clone(), (c.best(true)? + c.best(false)?) * 5))).collect();
    mids.sort();
    mids
}

fn mids_of(data: &Value, generator: &Generator) -> Vec<(String, i64)> {
    let mut mids: Vec<(String, i64)> = data["mids"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(coin, mid)| {
            let scale = generator.coin(coin).unwrap().px_scale + 1;
            (coin.clone(), units(mid.as_str().unwrap(), scale))
        })
        .collect();
    mids.sort();
    mids
}

/// The model's best bid and ask of `coin` as `(px, sz, n)` in units.
fn model_bbo(coin: &GenCoin) -> [Option<(i64, i64, u32)>; 2] {
    [coin.levels(true).first().copied(), coin.levels(false).first().copied()]
}

fn bbo_of(data: &Value, coin: &GenCoin) -> [Option<(i64, i64, u32)>; 2] {
    let level = |v: &Value| {
        (!v.is_null()).then(|| {
            (
                units(v["px"].as_str().unwrap(), coin.px_scale),
                units(v["sz"].as_str().unwrap(), coin.sz_decimals),
                v["n"].as_u64().unwrap() as u32,
            )
        })
    };
    [level(&data["bbo"][0]), level(&data["bbo"][1])]
}

/// The model's resting orders of `user`: `(coin, oid, side, px, sz)` in units.
fn model_orders(generator: &Generator, user: u16) -> BTreeSet<(String, u64, String, i64, i64)> {
    let mut out = BTreeSet::new();
    for coin in generator.coins() {
        for (bid, ladder) in [(true, &coin.bids), (false, &coin.asks)] {
            for (&px, queue) in ladder {
                for o in queue.iter().filter(|o| o.user == user) {
                    out.insert((coin.name.clone(), o.oid, if bid { "B" } else { "A" }.to_owned(), px, o.sz));
                }
            }
        }
    }
    out
}

fn orders_of(answer: &Value, generator: &Generator) -> BTreeSet<(String, u64, String, i64, i64)> {
    answer
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            let coin = generator.coin(o["coin"].as_str().unwrap()).unwrap();
            (
                coin.name.clone(),
                o["oid"].as_u64().unwrap(),
                o["side"].as_str().unwrap().to_owned(),
                units(o["limitPx"].as_str().unwrap(), coin.px_scale),
                units(o["sz"].as_str().unwrap(), coin.sz_decimals),
            )
        })
        .collect()
}

fn keys(v: &Value) -> BTreeSet<&str> {
    v.as_object().unwrap().keys().map(String::as_str).collect()
}

fn set(names: &[&'static str]) -> BTreeSet<&'static str> {
    names.iter().copied().collect()
}

async fn info(addr: std::net::SocketAddr, body: Value) -> Value {
    let (status, text) = http_post(addr, &body.to_string()).await;
    assert_eq!(status, 200, "{body}: {text}");
    serde_json::from_str(&text).unwrap()
}

/// An `activeAssetCtx`/`activeSpotAssetCtx` frame: the documented fields, the mid of the
/// generator's book, and the base fields of the `hl gen` contexts the server was given.
fn check_ctx(msg: &Value, generator: &Generator) {
    let coin = generator.coin(msg["data"]["coin"].as_str().unwrap()).unwrap();
    let ctx = &msg["data"]["ctx"];
    if coin.kind == ticktrade_hl_proto::info::CoinKind::Spot {
        assert_eq!(msg["channel"], "activeSpotAssetCtx");
        let want = set(&[
            "prevDayPx",
            "dayNtlVlm",
            "markPx",
            "midPx",
            "circulatingSupply",
            "coin",
            "totalSupply",
            "dayBaseVlm",
        ]);
        assert_eq!(keys(ctx), want, "{msg}");
    } else {
        assert_eq!(msg["channel"], "activeAssetCtx");
        let want = set(&[
            "funding",
            "openInterest",
            "prevDayPx",
            "dayNtlVlm",
            "premium",
            "oraclePx",
            "markPx",
            "midPx",
            "impactPxs",
            "dayBaseVlm",
        ]);
        assert_eq!(keys(ctx), want, "{msg}");
        assert!(ctx["funding"].is_string() && ctx["oraclePx"].is_string(), "base fields given: {msg}");
        let [bid, ask] = [0, 1].map(|i| units(ctx["impactPxs"][i].as_str().unwrap(), coin.px_scale));
        assert!(bid <= coin.best(true).unwrap() && ask >= coin.best(false).unwrap(), "{msg}");
    }
    let mid = (coin.best(true).unwrap() + coin.best(false).unwrap()) * 5;
    assert_eq!(units(ctx["midPx"].as_str().unwrap(), coin.px_scale + 1), mid, "{msg}");
}

/// Each coin's `[notional, base]` volume over the fills lines (one trade per `(coin, tid)`), in
/// units of `10^-(px_scale + sz_decimals)` and `10^-sz_decimals`.
fn naive_volumes(generator: &Generator, lines: &[String]) -> std::collections::BTreeMap<String, [i128; 2]> {
    let mut seen = BTreeSet::new();
    let mut out = std::collections::BTreeMap::<String, [i128; 2]>::new();
    for line in lines {
        let line: Value = serde_json::from_str(line).unwrap();
        for event in line["events"].as_array().unwrap() {
            let fill = &event[1];
            let name = fill["coin"].as_str().unwrap();
            if !seen.insert((name.to_owned(), fill["tid"].as_u64().unwrap())) {
                continue;
            }
            let coin = generator.coin(name).unwrap();
            let px = i128::from(units(fill["px"].as_str().unwrap(), coin.px_scale));
            let sz = i128::from(units(fill["sz"].as_str().unwrap(), coin.sz_decimals));
            let sums = out.entry(name.to_owned()).or_default();
            sums[0] += px * sz;
            sums[1] += sz;
        }
    }
    out
}

/// `dayNtlVlm`/`dayBaseVlm` of every context are the volumes of the trades since the server
/// started (it started before the first block), exact; `0.0` for a coin without trades. The
/// server reads the last fills line on its own time: asked again until it has.
async fn check_volumes(addr: std::net::SocketAddr, generator: &Generator, lines: &[String]) {
    let want = naive_volumes(generator, lines);
    assert!(want.len() >= 5, "trades in several coins: {want:?}");
    let mut got = std::collections::BTreeMap::new();
    for _ in 0..100 {
        let perps = info(addr, json!({"type": "metaAndAssetCtxs"})).await;
        let spots = info(addr, json!({"type": "spotMetaAndAssetCtxs"})).await;
        let universe = perps[0]["universe"].as_array().unwrap().iter().map(|a| a["name"].as_str().unwrap().to_owned());
        let spot_names = spots[1].as_array().unwrap().iter().map(|c| c["coin"].as_str().unwrap().to_owned());
        let ctxs = perps[1].as_array().unwrap().iter().chain(spots[1].as_array().unwrap());
        got.clear();
        for (name, ctx) in universe.chain(spot_names).zip(ctxs) {
            let Some(coin) = generator.coin(&name) else { continue };
            let ntl = Decimal::parse(ctx["dayNtlVlm"].as_str().unwrap()).unwrap();
            let base = Decimal::parse(ctx["dayBaseVlm"].as_str().unwrap()).unwrap();
            let scale = (coin.px_scale + coin.sz_decimals) as u8;
            let sums = [
                i128::from(ntl.to_units(Decimal::new(1, scale).unwrap()).unwrap()),
                i128::from(base.to_units(Decimal::new(1, coin.sz_decimals as u8).unwrap()).unwrap()),
            ];
            if sums != [0, 0] {
                got.insert(name, sums);
            }
        }
        if got == want {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(got, want, "volumes since start: the contexts against the fills lines");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn feeds_and_user_channels_follow_the_generator() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut generator, mut writer, server) = served(tmp.path(), 40, 400).await;
    let mut ws = WsClient::connect(&format!("ws://{}/ws", server.addr)).await;
    ws.set_wait(Duration::from_secs(20));
    let user = user_address(USER);

    // Acks, then the current state: mids, BTC's best levels, an empty fill snapshot.
    for sub in [
        json!({"type": "l4Book", "coin": "BTC"}),
        json!({"type": "allMids"}),
        json!({"type": "bbo", "coin": "BTC"}),
        json!({"type": "activeAssetCtx", "coin": "BTC"}),
        json!({"type": "activeAssetCtx", "coin": "PURR/USDC"}),
        json!({"type": "orderUpdates", "user": user}),
        json!({"type": "userFills", "user": user.to_uppercase().replace("0X", "0x")}),
    ] {
        ws.send_json(&json!({"method": "subscribe", "subscription": sub})).await;
        let ack = ws.next_json().await;
        assert_eq!(ack["channel"], "subscriptionResponse", "{ack}");
        match sub["type"].as_str().unwrap() {
            "l4Book" => assert!(ws.next_json().await["data"]["Snapshot"].is_object()),
            "allMids" => assert_eq!(mids_of(&ws.next_json().await["data"], &generator), model_mids(&generator)),
            "bbo" => {
                let msg = ws.next_json().await;
                assert_eq!(keys(&msg["data"]), set(&["coin", "time", "bbo"]));
                assert_eq!(
                    bbo_of(&msg["data"], generator.coin("BTC").unwrap()),
                    model_bbo(generator.coin("BTC").unwrap())
                );
            }
            "userFills" => {
                let msg = ws.next_json().await;
                assert_eq!(
                    msg,
                    json!({"channel": "userFills", "data": {"isSnapshot": true, "user": user, "fills": []}})
                );
            }
            "activeAssetCtx" => check_ctx(&ws.next_json().await, &generator),
            _ => {}
        }
    }
    for bad in [json!({"type": "orderUpdates", "user": "0x12"}), json!({"type": "bbo", "coin": "NOPE"})] {
        ws.send_json(&json!({"method": "subscribe", "subscription": bad})).await;
        let err = ws.next_json().await;
        assert!(err["data"].as_str().unwrap().starts_with("Invalid subscription: "), "{err}");
    }

    // Blocks one at a time, the model's state after each: `bbo` and `allMids` must be sent
    // exactly when they change.
    generator.watch_user(USER);
    let (mut want_bbo, mut want_mids) = (vec![model_bbo(generator.coin("BTC").unwrap())], vec![model_mids(&generator)]);
    let n_blocks = 12u64;
    let mut fills_lines = Vec::new();
    for _ in 0..n_blocks {
        fills_lines.extend(write_blocks(&mut generator, &mut writer, 1));
        let bbo = model_bbo(generator.coin("BTC").unwrap());
        if want_bbo.last() != Some(&bbo) {
            want_bbo.push(bbo);
        }
        let mids = model_mids(&generator);
        if want_mids.last() != Some(&mids) {
            want_mids.push(mids);
        }
    }
    let log = generator.user_log().unwrap().clone();
    assert!(!log.statuses.is_empty() && !log.fills.is_empty(), "user {USER} active: {log:?}");

    let (mut got_bbo, mut got_mids) = (want_bbo[..1].to_vec(), want_mids[..1].to_vec());
    let (mut statuses, mut fills) = (Vec::new(), Vec::new());
    let mut height = 0;
    let mut ctxs = Vec::new();
    let t_last = Utc::from_millis(T0_MS + (generator.height() as i64 - 5_000 - 1) * 1_500).as_millis() as u64;
    // Until every expected frame is in (a missing one times the read out and fails).
    while height < generator.height()
        || fills.len() < log.fills.len()
        || statuses.len() < log.statuses.len()
        || got_bbo.len() < want_bbo.len()
        || got_mids.len() < want_mids.len()
    {
        let msg = ws.next_json().await;
        let data = &msg["data"];
        match msg["channel"].as_str().unwrap() {
            "l4Book" => height = data["Updates"]["height"].as_u64().unwrap(),
            "bbo" => {
                assert!(data["time"].as_u64().unwrap() <= t_last);
                got_bbo.push(bbo_of(data, generator.coin("BTC").unwrap()));
            }
            "allMids" => got_mids.push(mids_of(data, &generator)),
            "activeAssetCtx" | "activeSpotAssetCtx" => ctxs.push(msg),
            "orderUpdates" => {
                for entry in data.as_array().unwrap() {
                    assert_eq!(keys(entry), set(&["order", "status", "statusTimestamp"]), "{entry}");
                    let order = &entry["order"];
                    let mut documented = set(&["coin", "side", "limitPx", "sz", "oid", "timestamp", "origSz"]);
                    if order.get("cloid").is_some() {
                        documented.insert("cloid");
                    }
                    assert_eq!(keys(order), documented, "{entry}");
                    assert!(entry["statusTimestamp"].as_u64().unwrap() > 0);
                    statuses.push((order["oid"].as_u64().unwrap(), entry["status"].as_str().unwrap().to_owned()));
                }
            }
            "userFills" => {
                assert_eq!((&data["user"], &data["isSnapshot"]), (&json!(user), &json!(false)));
                for fill in data["fills"].as_array().unwrap() {
                    for key in ["coin", "px", "sz", "side", "time", "startPosition", "dir", "closedPnl", "hash"] {
                        assert!(fill.get(key).is_some(), "{key} missing: {fill}");
                    }
                    assert!(fill["crossed"].is_boolean() && fill["fee"].is_string() && fill["feeToken"].is_string());
                    fills.push((fill["tid"].as_u64().unwrap(), fill["oid"].as_u64().unwrap()));
                }
            }
            other => panic!("unexpected {other}: {msg}"),
        }
    }
    // A `post` is answered after every frame queued before it: the last block's contexts are in.
    ws.send_json(
        &json!({"method": "post", "id": 1, "request": {"type": "info", "payload": {"type": "l2Book", "coin": "BTC"}}}),
    )
    .await;
    loop {
        let msg = ws.next_json().await;
        match msg["channel"].as_str().unwrap() {
            "post" => break,
            "activeAssetCtx" | "activeSpotAssetCtx" => ctxs.push(msg),
            "trades" | "l4Book" | "userFills" | "orderUpdates" | "bbo" | "allMids" => {
                panic!("after the last block: {msg}")
            }
            other => panic!("unexpected {other}: {msg}"),
        }
    }
    let last_btc = ctxs.iter().rev().find(|m| m["data"]["coin"] == "BTC").expect("BTC's context changed");
    check_ctx(last_btc, &generator);
    check_volumes(server.addr, &generator, &fills_lines).await;
    assert_eq!(got_bbo, want_bbo, "bbo: the subscribe-time levels, then each change");
    assert_eq!(got_mids.len(), want_mids.len());
    assert_eq!(got_mids, want_mids, "allMids: the subscribe-time mids, then each change");
    assert_eq!(statuses, log.statuses, "orderUpdates: every status of the user, in order");
    assert_eq!(fills, log.fills, "userFills: every fill of the user, in order");

    // The user's resting orders on /info, as the generator's books hold them.
    let want = model_orders(&generator, USER);
    assert!(!want.is_empty());
    let open = info(server.addr, json!({"type": "openOrders", "user": user})).await;
    for o in open.as_array().unwrap() {
        assert_eq!(keys(o), set(&["coin", "limitPx", "oid", "side", "sz", "timestamp"]));
    }
    assert_eq!(orders_of(&open, &generator), want);
    let frontend = info(server.addr, json!({"type": "frontendOpenOrders", "user": user, "dex": ""})).await;
    assert_eq!(orders_of(&frontend, &generator), want);
    let full = set(&[
        "coin",
        "side",
        "limitPx",
        "sz",
        "oid",
        "timestamp",
        "triggerCondition",
        "isTrigger",
        "triggerPx",
        "children",
        "isPositionTpsl",
        "reduceOnly",
        "orderType",
        "origSz",
        "tif",
        "cloid",
    ]);
    for o in frontend.as_array().unwrap() {
        assert_eq!(keys(o), full);
        let coin = generator.coin(o["coin"].as_str().unwrap()).unwrap();
        let (sz, orig) = (
            units(o["sz"].as_str().unwrap(), coin.sz_decimals),
            units(o["origSz"].as_str().unwrap(), coin.sz_decimals),
        );
        assert!(orig >= sz, "{o}");
        assert_eq!((&o["isTrigger"], &o["triggerPx"]), (&json!(false), &json!("0.0")));
    }
    let (coin, oid, ..) = want.iter().next().unwrap().clone();
    let status = info(server.addr, json!({"type": "orderStatus", "user": user, "oid": oid})).await;
    assert_eq!((&status["status"], &status["order"]["status"]), (&json!("order"), &json!("open")), "{status}");
    assert_eq!(keys(&status["order"]["order"]), full);
    assert_eq!((&status["order"]["order"]["oid"], &status["order"]["order"]["coin"]), (&json!(oid), &json!(coin)));
    // Another user's order, or one that is not on the book: unknown.
    let other = user_address(USER + 1);
    let status = info(server.addr, json!({"type": "orderStatus", "user": other, "oid": oid})).await;
    assert_eq!(status, json!({"status": "unknownOid"}));
    let gone = log.fills.iter().map(|f| f.1).find(|oid| !want.iter().any(|w| w.1 == *oid)).unwrap();
    let status = info(server.addr, json!({"type": "orderStatus", "user": user, "oid": gone})).await;
    assert_eq!(status, json!({"status": "unknownOid"}));
    // By cloid: every resting order of the user that has one is found by it.
    for o in frontend.as_array().unwrap().iter().filter(|o| o["cloid"].is_string()) {
        let status = info(server.addr, json!({"type": "orderStatus", "user": user, "oid": o["cloid"]})).await;
        assert_eq!(status["order"]["order"]["oid"], o["oid"], "{status}");
    }
    assert_eq!(
        info(server.addr, json!({"type": "openOrders", "user": other})).await.as_array().unwrap().len(),
        model_orders(&generator, USER + 1).len()
    );
    server.stop();
}
