//! Fault injection is visible to a client, and every injected fault is in the log with the
//! details a client can match (channel, change id, session).

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{Auth, WsClient, sim};
use serde_json::{Value, json};
use ticktrade_sim::Fault;

const CHANNEL: &str = "book.BTC-PERPETUAL.raw";

async fn subscribed() -> (ticktrade_sim::SimHandle, WsClient, i64) {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    c.call("public/subscribe", json!({"channels": [CHANNEL]})).await;
    let snapshot = c.notification(CHANNEL).await;
    let last = snapshot["params"]["data"]["change_id"].as_i64().unwrap();
    (sim, c, last)
}

fn ids(frame: &Value) -> (i64, i64) {
    let data = &frame["params"]["data"];
    (data["prev_change_id"].as_i64().unwrap_or(-1), data["change_id"].as_i64().unwrap())
}

#[tokio::test]
async fn dropped_change_shows_as_a_gap() {
    let (sim, mut c, mut last) = subscribed().await;
    sim.inject(Fault::DropChange { instrument: Some("BTC-PERPETUAL".into()) });
    let gap_prev = loop {
        let (prev, id) = ids(&c.notification(CHANNEL).await);
        if prev != last {
            break prev;
        }
        last = id;
    };
    let log = sim.fault_log();
    let record = log.iter().find(|r| r.kind == "drop_change").expect("logged");
    assert_eq!(
        record.detail,
        format!("{CHANNEL} change_id {gap_prev}"),
        "the client's missing change is the logged one"
    );
    sim.shutdown().await;
}

#[tokio::test]
async fn duplicated_and_reordered_changes_are_seen() {
    let (sim, mut c, mut last) = subscribed().await;
    sim.inject(Fault::DuplicateChange { instrument: None });
    let duplicated = loop {
        let (_, id) = ids(&c.notification(CHANNEL).await);
        if id == last {
            break id;
        }
        last = id;
    };
    assert!(
        sim.fault_log()
            .iter()
            .any(|r| r.kind == "duplicate_change" && r.detail.ends_with(&format!("change_id {duplicated}")))
    );

    sim.inject(Fault::ReorderChange { instrument: None });
    // The held frame arrives after its successor: its change_id is below the one before it.
    let mut previous = last;
    let late = loop {
        let (_, id) = ids(&c.notification(CHANNEL).await);
        if id < previous {
            break id;
        }
        previous = id;
    };
    assert!(
        sim.fault_log().iter().any(|r| r.kind == "reorder_change" && r.detail.ends_with(&format!("change_id {late}")))
    );
    sim.shutdown().await;
}

/// A `book.*.raw` price as a key: hundredths of the quote unit (BTC-PERPETUAL's prices are
/// halves, exact in binary).
fn price_key(price: f64) -> i64 {
    (price * 100.0).round() as i64
}

/// A client's book of one side: price key to amount.
type Side = std::collections::BTreeMap<i64, f64>;

/// Applies a `book.*.raw` frame as a client does: a snapshot replaces the book, a change
/// applies its `[action, price, amount]` entries.
fn apply(book: &mut [Side; 2], frame: &Value) {
    let data = &frame["params"]["data"];
    if data["type"] == "snapshot" {
        book.iter_mut().for_each(Side::clear);
    }
    for (side, key) in book.iter_mut().zip(["bids", "asks"]) {
        for entry in data[key].as_array().unwrap() {
            let price = price_key(entry[1].as_f64().unwrap());
            match entry[0].as_str().unwrap() {
                "new" | "change" => side.insert(price, entry[2].as_f64().unwrap()),
                "delete" => side.remove(&price),
                other => panic!("action {other}: {frame}"),
            };
        }
    }
}

#[tokio::test]
async fn restarted_book_sends_a_snapshot_without_the_removed_levels() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    c.call("public/subscribe", json!({"channels": [CHANNEL]})).await;
    let mut book: [Side; 2] = Default::default();
    // The client's book from its snapshot and a few changes, then the restart.
    for _ in 0..5 {
        apply(&mut book, &c.notification(CHANNEL).await);
    }
    sim.inject(Fault::RestartBook { instrument: Some("BTC-PERPETUAL".into()), levels: 2 });
    let snapshot = loop {
        let frame = c.notification(CHANNEL).await;
        if frame["params"]["data"]["type"] == "snapshot" {
            break frame;
        }
        // Changes published before the restart are part of the book it restarts.
        apply(&mut book, &frame);
    };
    let before = book.clone();
    apply(&mut book, &snapshot);
    let record = sim.fault_log().into_iter().find(|r| r.kind == "restart_book").expect("logged");
    let change_id = snapshot["params"]["data"]["change_id"].as_i64().unwrap();
    assert!(record.detail.contains(&format!("change_id {change_id}")), "{} vs {change_id}", record.detail);
    // `... removed [bid 60000.5, bid 60000, ask 60001, ask 60001.5]`: two levels a side.
    let removed = record.detail.split_once("removed [").unwrap().1.trim_end_matches(']');
    let removed: Vec<(usize, i64)> = removed
        .split(", ")
        .map(|level| {
            let (side, price) = level.split_once(' ').unwrap();
            (usize::from(side == "ask"), price_key(price.parse().unwrap()))
        })
        .collect();
    assert_eq!(removed.iter().filter(|(side, _)| *side == 0).count(), 2, "{}", record.detail);
    assert_eq!(removed.iter().filter(|(side, _)| *side == 1).count(), 2, "{}", record.detail);
    for &(side, price) in &removed {
        assert!(before[side].contains_key(&price), "level {price} of side {side} was in the client's book");
        assert!(!book[side].contains_key(&price), "level {price} of side {side} is gone after the restart");
    }
    // What the restart left is still there: the snapshot is the old book less the removed levels.
    for side in 0..2 {
        let mut kept = before[side].clone();
        kept.retain(|price, _| !removed.contains(&(side, *price)));
        assert_eq!(book[side], kept, "side {side}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn session_faults_reach_the_client() {
    let sim = sim().await;
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.call("public/test", json!({})).await;
    sim.inject(Fault::MalformedFrame { session: None });
    let frame = loop {
        let v = c.next().await.unwrap();
        if v.get("__malformed").is_some() {
            break v;
        }
    };
    assert!(frame["__malformed"].as_str().unwrap().starts_with('{'));

    sim.inject(Fault::Delay { ms: 50, responses: 1 });
    assert_eq!(c.call("public/test", json!({})).await["result"]["version"], "1.2.26");
    assert!(sim.fault_log().iter().any(|r| r.kind == "delay"));

    sim.inject(Fault::TooManyRequests { responses: 1 });
    let v = c.call("public/test", json!({})).await;
    assert_eq!(v["error"]["code"], 10028);
    assert_eq!(c.wait_closed().await.map(|c| c.0), Some(4029));

    let mut d = WsClient::connect(&sim.ws_url()).await;
    d.call("public/test", json!({})).await;
    sim.inject(Fault::Disconnect { session: None });
    assert_eq!(d.wait_closed().await, Some((4002, "fault injection: disconnect".to_owned())));
    let kinds: Vec<_> = sim.fault_log().into_iter().map(|r| r.kind).collect();
    for kind in ["malformed_frame", "delay", "too_many_requests", "disconnect"] {
        assert!(kinds.contains(&kind), "{kind} missing from {kinds:?}");
    }
    sim.shutdown().await;
}

#[tokio::test]
async fn rules_from_the_command_line_fire_with_a_seed() {
    let rules = vec!["duplicate_change:every=2".parse().unwrap()];
    let sim = ticktrade_sim::spawn_loopback(ticktrade_sim::SimConfig {
        faults: rules,
        rate_per_s: 200,
        ..Default::default()
    })
    .await
    .unwrap();
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    c.call("public/subscribe", json!({"channels": [CHANNEL]})).await;
    c.notification(CHANNEL).await;
    let mut seen = Vec::new();
    for _ in 0..8 {
        seen.push(ids(&c.notification(CHANNEL).await).1);
    }
    let duplicates = seen.windows(2).filter(|w| w[0] == w[1]).count();
    assert!(duplicates >= 2, "every second change is duplicated: {seen:?}");
    assert!(sim.fault_log().iter().filter(|r| r.kind == "duplicate_change").count() >= duplicates);
    sim.shutdown().await;
}
