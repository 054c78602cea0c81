//! A WebSocket client written against Hyperliquid's documented message formats (serde_json
//! Values only) talks to an in-process server on loopback fed by the generator writing files.

#![allow(clippy::unwrap_used)]

use crate::common;

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use ticktrade_testkit::WsClient;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use common::*;
use ticktrade_core::Decimal;
use ticktrade_hl_node::synth::writer::GenWriter;

/// A client of the in-process server (20 s a frame: the generator writes real files).
async fn connect(url: &str) -> WsClient {
    let mut ws = WsClient::connect(url).await;
    ws.set_wait(Duration::from_secs(20));
    ws
}

/// Hyperliquid's bucketing on decimal text, independent of the server's integer code.
fn naive_levels(
    levels: &[(i64, i64, u32)],
    px_scale: u32,
    sz_scale: u32,
    bid: bool,
    n_sig: Option<u32>,
    mantissa: u32,
    n: usize,
) -> Vec<Value> {
    let scale18 = |units: i64, scale: u32| i128::from(units) * 10i128.pow(18 - scale);
    let mut out: Vec<(i128, i128, u32)> = Vec::new();
    for &(px, sz, count) in levels {
        let real = scale18(px, px_scale);
        let key = match n_sig {
            None => real,
            Some(sig) => {
                let d = real.to_string().len() as i32 - 18;
                let exp = d - sig as i32 + 18;
                if exp < 0 {
                    real
                } else {
                    let w = i128::from(mantissa) * 10i128.pow(exp as u32);
                    let floor = real.div_euclid(w) * w;
                    if bid || floor == real { floor } else { floor + w }
                }
            }
        };
        match out.last_mut() {
            Some(last) if last.0 == key => {
                last.1 += scale18(sz, sz_scale);
                last.2 += count;
            }
            _ => out.push((key, scale18(sz, sz_scale), count)),
        }
    }
    let text = |v: i128| {
        let d = Decimal::new(i64::try_from(v / 10i128.pow(8)).unwrap(), 10).unwrap();
        let s = d.to_string();
        if s.contains('.') { s } else { format!("{s}.0") }
    };
    out.into_iter().take(n).map(|(px, sz, count)| json!({"px": text(px), "sz": text(sz), "n": count})).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyperliquid_client_gets_l2_at_every_variant_trades_and_l4() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut generator, mut writer, server) = served(tmp.path(), 40, 400).await;
    let mut ws = connect(&format!("ws://{}/ws", server.addr)).await;

    // One connection per l2Book variant (frames carry no variant, and unchanged views are not
    // re-sent), plus one for trades, l4Book, errors and heartbeats.
    let url = format!("ws://{}/ws", server.addr);
    let mut variant_ws = Vec::new();
    for (sig, m) in VARIANTS {
        let mut conn = connect(&url).await;
        conn.send_json(&json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC", "nSigFigs": sig, "mantissa": m}})).await;
        let ack = conn.next_json().await;
        assert_eq!(ack["channel"], "subscriptionResponse");
        assert_eq!(ack["data"]["subscription"]["nSigFigs"], json!(sig));
        let first = conn.next_json().await;
        assert_eq!(first["channel"], "l2Book", "current book right after the ack");
        assert_eq!(first["data"]["coin"], "BTC");
        variant_ws.push(conn);
    }
    ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "trades", "coin": "BTC"}})).await;
    assert_eq!(ws.next_json().await["channel"], "subscriptionResponse");
    ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "l4Book", "coin": "BTC"}})).await;
    assert_eq!(ws.next_json().await["channel"], "subscriptionResponse");
    let snapshot = ws.next_json().await;
    let body = &snapshot["data"]["Snapshot"];
    assert_eq!(body["height"], json!(generator.height()));
    let btc = generator.coin("BTC").unwrap();
    let n_orders = body["levels"][0].as_array().unwrap().len() + body["levels"][1].as_array().unwrap().len();
    assert_eq!(n_orders, btc.n_orders());

    // Errors and heartbeats, in Hyperliquid's wording.
    ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "trades", "coin": "BTC"}})).await;
    let err = ws.next_json().await;
    assert_eq!(err, json!({"channel": "error", "data": "Already subscribed: {\"type\":\"trades\",\"coin\":\"BTC\"}"}));
    ws.send_json(&json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC", "nSigFigs": 4, "mantissa": 2}}))
        .await;
    assert!(ws.next_json().await["data"].as_str().unwrap().starts_with("Invalid subscription: "));
    ws.send_text(r#"{"method":"subscribe","subscription":{"type":"l2Book"}}"#).await;
    assert!(
        ws.next_json().await["data"].as_str().unwrap().starts_with("Error parsing JSON into valid websocket request: ")
    );
    ws.send_json(&json!({"method": "ping"})).await;
    assert_eq!(ws.next_json().await, json!({"channel": "pong"}));

    // The node writes blocks; l4Book must show every one, in order.
    let n_blocks = 6u64;
    let first_height = generator.height() + 1;
    write_blocks(&mut generator, &mut writer, n_blocks);
    let mut l4_heights = Vec::new();
    let mut n_trades = 0;
    // Fills are a stream of their own, not joined to the block: their trades may arrive
    // after the block's l4Book update, so wait for both (next_json bounds the wait).
    while l4_heights.last() != Some(&generator.height()) || n_trades == 0 {
        let msg = ws.next_json().await;
        match msg["channel"].as_str().unwrap() {
            "l4Book" => l4_heights.push(msg["data"]["Updates"]["height"].as_u64().unwrap()),
            "trades" => {
                for t in msg["data"].as_array().unwrap() {
                    assert_eq!(t["coin"], "BTC");
                    assert!(t["users"].as_array().unwrap().len() == 2 && (t["side"] == "A" || t["side"] == "B"));
                    n_trades += 1;
                }
            }
            other => panic!("unexpected {other}: {msg}"),
        }
    }
    assert_eq!(
        l4_heights,
        (first_height..=generator.height()).collect::<Vec<_>>(),
        "l4Book updates strictly in block order"
    );
    assert!(n_trades > 0, "BTC traded in {n_blocks} blocks");

    // Each variant connection: a `post` is answered in order after every frame queued before
    // it, so the last l2Book before the reply is the current view; both must equal a naive
    // re-aggregation of the generator's own book.
    let mut full_levels = Value::Null;
    for (i, (sig, m)) in VARIANTS.iter().enumerate() {
        let conn = &mut variant_ws[i];
        conn.send_json(&json!({"method": "post", "id": 7, "request": {"type": "info", "payload": {"type": "l2Book", "coin": "BTC", "nSigFigs": sig, "mantissa": m}}})).await;
        let mut last = None;
        let reply = loop {
            let msg = conn.next_json().await;
            match msg["channel"].as_str().unwrap() {
                "l2Book" => last = Some(msg["data"].clone()),
                "post" => break msg,
                other => panic!("unexpected {other}"),
            }
        };
        assert_eq!(reply["data"]["id"], 7);
        let last = last.expect("at least one update over six blocks");
        for (side, bid) in [(0, true), (1, false)] {
            let expect = naive_levels(&btc_levels(&generator, bid), 1, 5, bid, *sig, m.unwrap_or(1), 20);
            assert_eq!(last["levels"][side].as_array().unwrap(), &expect, "variant {sig:?}/{m:?} side {side}");
            assert_eq!(reply["data"]["response"]["payload"]["data"]["levels"][side].as_array().unwrap(), &expect);
        }
        if i == 0 {
            full_levels = last["levels"].clone();
        }
    }

    let (status, body) = http_post(server.addr, r#"{"type":"meta"}"#).await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["universe"][0]["name"], "BTC");
    let (status, body) = http_post(server.addr, r#"{"type":"spotMeta"}"#).await;
    assert_eq!(
        (status, serde_json::from_str::<Value>(&body).unwrap()["universe"][0]["name"].clone()),
        (200, json!("PURR/USDC"))
    );
    let (status, body) = http_post(server.addr, r#"{"type":"l2Book","coin":"BTC"}"#).await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()["levels"], full_levels);
    let (status, body) = http_post(server.addr, r#"{"type":"allMids"}"#).await;
    assert_eq!(status, 200);
    assert!(serde_json::from_str::<Value>(&body).unwrap()["BTC"].is_string());
    // What the Python SDK asks at start-up when perp dexes are passed: `[null, …]`.
    let (status, body) = http_post(server.addr, r#"{"type":"perpDexs"}"#).await;
    assert_eq!(status, 200);
    assert_eq!(serde_json::from_str::<Value>(&body).unwrap()[0], Value::Null);
    let (status, body) = http_post(server.addr, r#"{"type":"clearinghouseState","user":"0x0"}"#).await;
    assert_eq!(status, 422);
    assert!(body.starts_with("Failed to deserialize the JSON body into the target type"), "{body}");

    server.stop();
}

fn btc_levels(generator: &ticktrade_hl_node::synth::Generator, bid: bool) -> Vec<(i64, i64, u32)> {
    generator.coin("BTC").unwrap().levels(bid)
}

#[test]
fn a_client_that_does_not_read_is_disconnected_with_a_reason() {
    use ticktrade_hl_node::server::engine::EngineMsg;
    use ticktrade_hl_proto::ws::ClientMessage;
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(20, 600);
    let mut writer = GenWriter::new(tmp.path());
    let mut engine = engine(tmp.path(), &generator);
    let tx = ticktrade_hl_node::server::publish::client_queue(4);
    let (kill, mut killed) = tokio::sync::oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 1, tx, kill });
    for coin in ["BTC", "ETH"] {
        let text = json!({"method": "subscribe", "subscription": {"type": "l4Book", "coin": coin}}).to_string();
        engine.handle(EngineMsg::Request { id: 1, message: ClientMessage::parse(&text).unwrap(), text });
    }
    assert!(killed.try_recv().is_err(), "four items fit");
    assert_eq!(engine.n_clients(), 1);
    write_blocks(&mut generator, &mut writer, 2);
    engine.poll_files();
    let reason = killed.try_recv().unwrap();
    assert!(reason.starts_with("slow client"), "{reason}");
    assert_eq!(engine.n_clients(), 0, "its subscriptions are gone");
    // The other clients' blocks keep flowing: the engine is at the node's height.
    assert_eq!(engine.books().height(), generator.height());
}

/// The queue bound counts items, and a coin's `l2Book` frames for a client are one item: a
/// client on the seven variants of BTC (an ack and a frame each: 14 items) with room for 16
/// holds two blocks of BTC updates (one item each, however many variants changed), is
/// disconnected on the third, and is told why.
#[test]
fn a_slow_clients_queue_counts_a_coins_l2_frames_as_one_item() {
    use ticktrade_hl_node::server::engine::EngineMsg;
    use ticktrade_hl_proto::ws::ClientMessage;
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(20, 600);
    let mut writer = GenWriter::new(tmp.path());
    let mut engine = engine(tmp.path(), &generator);
    let rx = ticktrade_hl_node::server::publish::client_queue(16);
    let tx = std::sync::Arc::clone(&rx);
    let (kill, mut killed) = tokio::sync::oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 1, tx, kill });
    for (sig, m) in VARIANTS {
        let text = json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC", "nSigFigs": sig, "mantissa": m}})
            .to_string();
        engine.handle(EngineMsg::Request { id: 1, message: ClientMessage::parse(&text).unwrap(), text });
    }
    let mut n_blocks = 0;
    let reason = loop {
        if let Ok(reason) = killed.try_recv() {
            break reason;
        }
        assert!(n_blocks < 3, "still connected after {n_blocks} blocks");
        write_blocks(&mut generator, &mut writer, 1);
        engine.poll_files();
        n_blocks += 1;
    };
    assert_eq!(n_blocks, 3, "two blocks fit");
    assert!(reason.starts_with("slow client: 16 queue items unread"), "{reason}");
    assert_eq!(engine.n_clients(), 0);
    // What it had: 14 one-frame items, then two blocks of BTC's changed variants (more than
    // one frame in at least one of them).
    let mut items = Vec::new();
    for item in rx.take_queued() {
        items.push(item.len());
    }
    assert_eq!(items.len(), 16, "{items:?}");
    assert!(items[..14].iter().all(|&n| n == 1) && items[14..].iter().all(|&n| (1..=7).contains(&n)), "{items:?}");
    assert!(items[14] + items[15] > 2, "{items:?}");
}

#[test]
fn subscribers_of_a_coin_that_goes_stale_are_told() {
    use ticktrade_hl_node::server::engine::EngineMsg;
    use ticktrade_hl_proto::ws::ClientMessage;
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(20, 300);
    let mut writer = GenWriter::new(tmp.path());
    let mut engine = engine(tmp.path(), &generator);
    let rx = ticktrade_hl_node::server::publish::client_queue(1 << 16);
    let tx = std::sync::Arc::clone(&rx);
    let (kill, _killed) = tokio::sync::oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 1, tx, kill });
    let text = json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC"}}).to_string();
    engine.handle(EngineMsg::Request { id: 1, message: ClientMessage::parse(&text).unwrap(), text });
    let mut block = generator.next_block(ticktrade_core::Utc::from_millis(T0_MS));
    let at = block.diffs.find("\"coin\":\"BTC\"").expect("a BTC diff");
    let px = at + block.diffs[at..].find("\"px\":\"").unwrap() + 6;
    block.diffs.insert(px, 'x');
    writer.write_block(&block, order(0)).unwrap();
    engine.poll_files();
    let mut frames = Vec::new();
    for item in rx.take_queued() {
        for t in item.frames() {
            frames.push(serde_json::from_slice::<Value>(t).unwrap_or(Value::Null));
        }
    }
    let errors: Vec<&Value> = frames.iter().filter(|f| f["channel"] == "error").collect();
    assert_eq!(errors.len(), 1, "{frames:?}");
    assert!(errors[0]["data"].as_str().unwrap().starts_with("Order book for BTC is stale"));
}

/// Every `l2Book` frame a connection receives until the reply to a `post` sent now (the engine
/// answers after every frame queued before it), grouped by block time in the order received.
async fn l2_frames_until_post(ws: &mut WsClient) -> Vec<(u64, Vec<Value>)> {
    ws.send_json(&json!({"method": "post", "id": 1, "request": {"type": "info", "payload": {"type": "allMids"}}}))
        .await;
    let mut by_time: Vec<(u64, Vec<Value>)> = Vec::new();
    loop {
        let msg = ws.next_json().await;
        match msg["channel"].as_str().unwrap() {
            "post" => return by_time,
            "l2Book" => {
                let time = msg["data"]["time"].as_u64().unwrap();
                match by_time.last_mut() {
                    Some((t, frames)) if *t == time => frames.push(msg),
                    _ => by_time.push((time, vec![msg])),
                }
            }
            _ => {}
        }
    }
}

/// Over the socket, a connection on 14 `l2Book` keys of BTC (its frames of a block: two queue
/// items) receives, per block, exactly the frames that 14 connections of one key each receive,
/// in key order, each as its own text frame: the writer drops, merges or reorders none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coins_frames_of_a_block_reach_the_socket_in_key_order() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut generator, mut writer, server) = served(tmp.path(), 10, 400).await;
    let url = format!("ws://{}/ws", server.addr);
    // Keys in the server's order: variant, then nLevels.
    let keys: Vec<(Option<u32>, Option<u32>, u32)> =
        VARIANTS.iter().flat_map(|&(sig, m)| [(sig, m, 5), (sig, m, 20)]).collect();
    let subscribe = |(sig, m, n): (Option<u32>, Option<u32>, u32)| json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC", "nSigFigs": sig, "mantissa": m, "nLevels": n}});
    let mut all = connect(&url).await;
    let mut singles = Vec::new();
    for &key in &keys {
        all.send_json(&subscribe(key)).await;
        let mut conn = connect(&url).await;
        conn.send_json(&subscribe(key)).await;
        singles.push(conn);
    }
    // Every subscription answered (ack and current book) before the blocks.
    let before = l2_frames_until_post(&mut all).await;
    assert_eq!(before.iter().map(|(_, f)| f.len()).sum::<usize>(), keys.len());
    let t0 = before[0].0;
    for conn in &mut singles {
        l2_frames_until_post(conn).await;
    }
    write_blocks(&mut generator, &mut writer, 8);
    let last_ms = T0_MS as u64 + (generator.height() - 1 - 5_000) * 1_500;
    // Until the engine has published the last block (BTC changes in every block here).
    let mut got: Vec<(u64, Vec<Value>)> = Vec::new();
    for _ in 0..400 {
        got.extend(l2_frames_until_post(&mut all).await);
        if got.last().is_some_and(|(t, _)| *t >= last_ms) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(got.last().map(|(t, _)| *t), Some(last_ms), "the last block's frames");
    assert!(got.len() >= 8 && got.iter().all(|(t, _)| *t > t0), "{:?}", got.iter().map(|g| g.0).collect::<Vec<_>>());
    // The same blocks on the one-key connections, joined in key order.
    let mut expected: std::collections::BTreeMap<u64, Vec<Value>> = std::collections::BTreeMap::new();
    for conn in &mut singles {
        for (t, frames) in l2_frames_until_post(conn).await {
            assert_eq!(frames.len(), 1, "one frame per block and key");
            expected.entry(t).or_default().extend(frames);
        }
    }
    let got: std::collections::BTreeMap<u64, Vec<Value>> = got.into_iter().collect();
    assert_eq!(got.keys().collect::<Vec<_>>(), expected.keys().collect::<Vec<_>>());
    for (t, frames) in &got {
        assert!(frames == &expected[t], "block time {t}: {} frames, {} expected", frames.len(), expected[t].len());
    }
    assert!(got.values().any(|f| f.len() > 8), "a block with two items");
    server.stop();
}

/// The handshake answer's `Sec-WebSocket-Extensions` for a request offering `offer` (if any).
async fn negotiated_extensions(addr: std::net::SocketAddr, offer: Option<&str>) -> Option<String> {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let ext = offer.map(|o| format!("Sec-WebSocket-Extensions: {o}\r\n")).unwrap_or_default();
    let request = format!(
        "GET /ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{ext}\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        tokio::time::timeout(Duration::from_secs(10), stream.read_exact(&mut byte)).await.unwrap().unwrap();
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    head.lines()
        .find(|l| l.to_ascii_lowercase().starts_with("sec-websocket-extensions:"))
        .map(|l| l.split_once(':').unwrap().1.trim().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permessage_deflate_only_when_the_client_offers_it() {
    use yawc::frame::OpCode;
    let tmp = tempfile::tempdir().unwrap();
    let (_generator, _writer, server) = served(tmp.path(), 10, 100).await;

    let agreed = negotiated_extensions(server.addr, Some("permessage-deflate; client_max_window_bits")).await;
    assert!(agreed.as_deref().is_some_and(|e| e.starts_with("permessage-deflate")), "{agreed:?}");
    assert_eq!(negotiated_extensions(server.addr, None).await, None, "no offer, no deflate");

    // A client that offers deflate gets compressed frames it can read as Hyperliquid's.
    let url = format!("ws://{}/ws", server.addr).parse().unwrap();
    let options = yawc::Options::default().with_compression_level(yawc::CompressionLevel::fast());
    let mut ws = yawc::WebSocket::connect(url).with_options(options).await.unwrap();
    let subscribe = json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": "BTC"}}).to_string();
    ws.send(yawc::frame::Frame::text(subscribe)).await.unwrap();
    let mut channels = Vec::new();
    while channels.len() < 2 {
        let frame = tokio::time::timeout(Duration::from_secs(20), ws.next()).await.unwrap().unwrap();
        if frame.opcode() == OpCode::Text {
            let value: Value = serde_json::from_slice(frame.payload()).unwrap();
            channels.push(value["channel"].as_str().unwrap().to_owned());
            if value["channel"] == "l2Book" {
                assert_eq!(value["data"]["coin"], "BTC");
                assert!(value["data"]["levels"][0][0]["px"].is_string());
            }
        }
    }
    assert_eq!(channels, ["subscriptionResponse", "l2Book"]);
    server.stop();
}

/// One naive candle: `(t, T, o, c, h, l, v, n)`, prices and size in the coin's units.
type NaiveCandle = (i64, i64, i64, i64, i64, i64, i64, u64);

/// Every BTC trade of the fills lines (one per `tid`), then candles of `len_ms` buckets: the
/// first trade opens, the last closes (a trade's time is its fill's `time`).
fn naive_candles(fills_lines: &[String], len_ms: i64, px_scale: u32, sz_scale: u32) -> Vec<NaiveCandle> {
    let units = |v: &Value, scale: u32| {
        Decimal::parse(v.as_str().unwrap()).unwrap().to_units(Decimal::new(1, scale as u8).unwrap()).unwrap()
    };
    let mut seen = std::collections::HashSet::new();
    let mut out: Vec<NaiveCandle> = Vec::new();
    for line in fills_lines {
        let line: Value = serde_json::from_str(line).unwrap();
        for event in line["events"].as_array().unwrap() {
            let fill = &event[1];
            if fill["coin"] != "BTC" || !seen.insert(fill["tid"].as_u64().unwrap()) {
                continue;
            }
            let (t, px, sz) =
                (fill["time"].as_i64().unwrap(), units(&fill["px"], px_scale), units(&fill["sz"], sz_scale));
            let start = t - t.rem_euclid(len_ms);
            match out.last_mut() {
                Some(c) if c.0 == start => {
                    (c.3, c.4, c.5, c.6, c.7) = (px, c.4.max(px), c.5.min(px), c.6 + sz, c.7 + 1);
                }
                _ => out.push((start, start + len_ms - 1, px, px, px, px, sz, 1)),
            }
        }
    }
    out
}

fn candle_of(c: &Value, px_scale: u32, sz_scale: u32) -> NaiveCandle {
    let keys: Vec<&str> = c.as_object().unwrap().keys().map(String::as_str).collect();
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    assert_eq!(sorted, ["T", "c", "h", "i", "l", "n", "o", "s", "t", "v"], "{c}");
    let units = |key: &str, scale: u32| {
        Decimal::parse(c[key].as_str().unwrap()).unwrap().to_units(Decimal::new(1, scale as u8).unwrap()).unwrap()
    };
    (
        c["t"].as_i64().unwrap(),
        c["T"].as_i64().unwrap(),
        units("o", px_scale),
        units("c", px_scale),
        units("h", px_scale),
        units("l", px_scale),
        units("v", sz_scale),
        c["n"].as_u64().unwrap(),
    )
}

/// `candle` frames and `candleSnapshot` against candles built naively from the fills lines
/// the generator wrote, across a minute and an hour boundary.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hyperliquid_client_gets_candles_built_from_the_trades() {
    let tmp = tempfile::tempdir().unwrap();
    let (mut generator, mut writer, server) = served(tmp.path(), 8, 300).await;
    let (px_scale, sz_scale) = {
        let btc = generator.coin("BTC").unwrap();
        (btc.px_scale, btc.sz_decimals)
    };
    let mut ws = connect(&format!("ws://{}/ws", server.addr)).await;
    for sub in [
        json!({"type": "candle", "coin": "BTC", "interval": "1m"}),
        json!({"type": "candle", "coin": "BTC", "interval": "1h"}),
        json!({"type": "trades", "coin": "BTC"}),
    ] {
        ws.send_json(&json!({"method": "subscribe", "subscription": sub})).await;
        let ack = ws.next_json().await;
        assert_eq!(
            ack,
            json!({"channel": "subscriptionResponse", "data": {"method": "subscribe", "subscription": sub}})
        );
    }
    for bad in [
        json!({"type": "candle", "coin": "BTC", "interval": "2m"}),
        json!({"type": "candle", "coin": "NOPE", "interval": "1m"}),
    ] {
        ws.send_json(&json!({"method": "subscribe", "subscription": bad})).await;
        let err = ws.next_json().await;
        assert!(err["data"].as_str().unwrap().starts_with("Invalid subscription: "), "{err}");
    }
    // 60 blocks 1.5 s apart from ten seconds before an hour: two hours, two minutes at least.
    let mut lines = Vec::new();
    for _ in 0..60 {
        let i = generator.height();
        let block = generator.next_block(ticktrade_core::Utc::from_millis(T0_MS + (i as i64 - 5_000) * 1_500));
        writer.write_block(&block, order(i)).unwrap();
        lines.push(block.fills);
    }
    let want_1m = naive_candles(&lines, 60_000, px_scale, sz_scale);
    let want_1h = naive_candles(&lines, 3_600_000, px_scale, sz_scale);
    assert!(want_1m.len() >= 3 && want_1h.len() == 2, "{want_1m:?}");
    let n_trades: u64 = want_1h.iter().map(|c| c.7).sum();

    // Until every trade is in: a line's candle frames come before its trades frame.
    let (mut got_trades, mut last_1m, mut last_1h) = (0u64, Vec::<NaiveCandle>::new(), Vec::<NaiveCandle>::new());
    while got_trades < n_trades {
        let msg = ws.next_json().await;
        match msg["channel"].as_str().unwrap() {
            "trades" => got_trades += msg["data"].as_array().unwrap().len() as u64,
            "candle" => {
                let data = &msg["data"];
                assert_eq!(data["s"], "BTC");
                let candle = candle_of(data, px_scale, sz_scale);
                let last = match data["i"].as_str().unwrap() {
                    "1m" => &mut last_1m,
                    "1h" => &mut last_1h,
                    other => panic!("interval {other}: {data}"),
                };
                // Each frame is the bucket's candle so far: the same bucket again, or the next.
                match last.last_mut() {
                    Some(prev) if prev.0 == candle.0 => {
                        assert!(candle.7 > prev.7, "{data}");
                        *prev = candle;
                    }
                    prev => {
                        assert!(prev.is_none_or(|p| p.0 < candle.0), "{data}");
                        last.push(candle);
                    }
                }
            }
            other => panic!("unexpected {other}: {msg}"),
        }
    }
    assert_eq!(last_1m, want_1m, "1m frames: each bucket's last frame is the naive candle");
    assert_eq!(last_1h, want_1h);

    // The snapshot: every candle overlapping the window, oldest first.
    for (interval, want) in [("1m", &want_1m), ("1h", &want_1h)] {
        let body = json!({"type": "candleSnapshot", "req": {"coin": "BTC", "interval": interval,
            "startTime": T0_MS - 3_600_000, "endTime": T0_MS + 3_600_000}});
        let (status, text) = http_post(server.addr, &body.to_string()).await;
        assert_eq!(status, 200, "{text}");
        let got: Vec<NaiveCandle> = serde_json::from_str::<Value>(&text)
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .inspect(|c| assert_eq!((&c["s"], &c["i"]), (&json!("BTC"), &json!(interval))))
            .map(|c| candle_of(c, px_scale, sz_scale))
            .collect();
        assert_eq!(&got, want, "{interval}");
    }
    // A window after the first minute leaves it out; an unknown coin has none; a bad interval
    // is refused as the info server refuses a body it cannot decode.
    let start = want_1m[1].0;
    let body = json!({"type": "candleSnapshot", "req": {"coin": "BTC", "interval": "1m", "startTime": start}});
    let (_, text) = http_post(server.addr, &body.to_string()).await;
    assert_eq!(serde_json::from_str::<Value>(&text).unwrap().as_array().unwrap().len(), want_1m.len() - 1);
    let body = json!({"type": "candleSnapshot", "req": {"coin": "NOPE", "interval": "1m", "startTime": 0}});
    assert_eq!(http_post(server.addr, &body.to_string()).await, (200, "[]".to_owned()));
    let body = json!({"type": "candleSnapshot", "req": {"coin": "BTC", "interval": "2m", "startTime": 0}});
    assert_eq!(http_post(server.addr, &body.to_string()).await.0, 422);
    server.stop();
}
