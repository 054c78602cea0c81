//! `ticktrade serve`'s grouped books (`book.{instrument}.{group}.{depth}.{interval}`), as a
//! user starts the server, against a naive regrouping of the full book.
//!
//! One client subscribes to the raw book and to grouped channels of several widths and depths.
//! It keeps the full book from the raw channel, remembering it at every `change_id`; each
//! grouped window must equal this test's own regrouping of the book at the window's
//! `change_id`: bids rounded down and asks rounded up to a multiple of the group (in price
//! units, `none` being one tick), amounts summed, best first, cut at the depth.

#![allow(clippy::unwrap_used, reason = "test code: a panic here is a failed test with its message")]

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use ticktrade_core::Decimal;
use ticktrade_testkit::WsClient;

const RAW: &str = "book.BTC-PERPETUAL.raw";
/// BTC-PERPETUAL's tick on the simulator.
const TICK: &str = "0.5";
/// `(group, depth)` of each grouped channel checked; `0` stands for `none`.
const GROUPED: [(i64, usize); 4] = [(0, 20), (1, 10), (5, 10), (25, 1)];
/// Windows to check per channel.
const WINDOWS: usize = 12;

/// A `ticktrade serve` process on the embedded simulator; killed when dropped.
struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `ticktrade serve` on a free port and returns it with its WebSocket URL.
fn start_serve() -> (Serve, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ticktrade"))
        .args(["serve", "--listen", "127.0.0.1:0", "--sim-rate", "400", "--stats-interval-s", "0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("ticktrade serve starts");
    let stdout = child.stdout.take().unwrap();
    let serve = Serve(child);
    let mut url = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        if url.is_none() {
            url = line.split_whitespace().find(|w| w.starts_with("ws://")).map(str::to_owned);
        }
        if line.contains("Ctrl-C") {
            break;
        }
    }
    (serve, url.expect("the banner names the WebSocket URL"))
}

fn channel_name(group: i64, depth: usize) -> String {
    let group = if group == 0 { "none".to_owned() } else { group.to_string() };
    format!("book.BTC-PERPETUAL.{group}.{depth}.100ms")
}

fn decimal(v: &Value) -> Decimal {
    Decimal::parse(&v.to_string()).unwrap()
}

/// One side of the full book: price in ticks → amount.
type Side = BTreeMap<i64, Decimal>;

#[derive(Clone, Default)]
struct Book {
    bids: Side,
    asks: Side,
}

impl Book {
    /// Applies a raw `snapshot` or `change` (`[action, price, amount]` entries).
    fn apply(&mut self, data: &Value, tick: Decimal) {
        if data["type"] == "snapshot" {
            *self = Book::default();
        }
        for (key, side) in [("bids", &mut self.bids), ("asks", &mut self.asks)] {
            for entry in data[key].as_array().unwrap() {
                let ticks = decimal(&entry[1]).to_units(tick).unwrap();
                match entry[0].as_str().unwrap() {
                    "delete" => {
                        side.remove(&ticks);
                    }
                    _ => {
                        side.insert(ticks, decimal(&entry[2]));
                    }
                }
            }
        }
    }

    /// The naive regrouping: every level into its bucket, then the best `depth` buckets.
    fn regrouped(&self, group_ticks: i64, depth: usize, tick: Decimal) -> Value {
        let side = |levels: &Side, bids: bool| -> Vec<Value> {
            let mut buckets: BTreeMap<i64, Decimal> = BTreeMap::new();
            for (&ticks, &amount) in levels {
                let bucket = if bids {
                    ticks.div_euclid(group_ticks) * group_ticks
                } else {
                    (ticks + group_ticks - 1).div_euclid(group_ticks) * group_ticks
                };
                let sum = buckets.entry(bucket).or_insert(Decimal::from_int(0));
                *sum = sum.checked_add(amount).unwrap();
            }
            let best_first: Vec<(i64, Decimal)> =
                if bids { buckets.into_iter().rev().collect() } else { buckets.into_iter().collect() };
            best_first
                .into_iter()
                .take(depth)
                .map(|(ticks, amount)| {
                    let price = Decimal::from_units(ticks, tick).unwrap();
                    json!([price.to_string(), amount.to_string()])
                })
                .collect()
        };
        json!({"bids": side(&self.bids, true), "asks": side(&self.asks, false)})
    }
}

/// A window's levels with exact numbers as text, comparable with `Book::regrouped`.
fn window_levels(data: &Value) -> Value {
    let side = |key: &str| -> Vec<Value> {
        data[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| json!([decimal(&l[0]).to_string(), decimal(&l[1]).to_string()]))
            .collect()
    };
    json!({"bids": side("bids"), "asks": side("asks")})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_windows_equal_a_naive_regrouping_of_the_full_book() {
    let tick = Decimal::parse(TICK).unwrap();
    let (_serve, url) = start_serve();
    let mut client = WsClient::connect(&url).await;
    client.set_wait(Duration::from_secs(20));
    let mut channels = vec![RAW.to_owned()];
    channels.extend(GROUPED.iter().map(|&(group, depth)| channel_name(group, depth)));
    let answer = client.call("public/subscribe", json!({ "channels": channels })).await;
    assert_eq!(answer["result"].as_array().map(Vec::len), Some(channels.len()), "{answer}");

    let mut book = Book::default();
    let mut synced = false;
    // The full book at each change_id seen on the raw channel (the last few hundred).
    let mut history: BTreeMap<u64, Book> = BTreeMap::new();
    let mut checked: HashMap<String, usize> = HashMap::new();
    let mut nonempty = 0;
    while checked.values().filter(|&&n| n >= WINDOWS).count() < GROUPED.len() {
        let frame = client.notification_method("subscription").await;
        let channel = frame["params"]["channel"].as_str().unwrap().to_owned();
        let data = &frame["params"]["data"];
        let change_id = data["change_id"].as_u64().unwrap();
        if channel == RAW {
            if data["type"] == "snapshot" {
                synced = true;
            } else if let Some(prev) = data["prev_change_id"].as_u64() {
                assert!(!synced || history.last_key_value().map(|(id, _)| *id) == Some(prev), "raw chain broken");
            }
            book.apply(data, tick);
            history.insert(change_id, book.clone());
            while history.len() > 512 {
                history.pop_first();
            }
            continue;
        }
        let Some(at) = history.get(&change_id) else {
            // A window from before the raw snapshot reached this client.
            assert!(history.first_key_value().is_none_or(|(first, _)| change_id < *first), "{channel} {change_id}");
            continue;
        };
        let (group, depth) = *GROUPED.iter().find(|&&(g, d)| channel_name(g, d) == channel).unwrap();
        let group_ticks = if group == 0 { 1 } else { Decimal::from_int(group).to_units(tick).unwrap() };
        let expected = at.regrouped(group_ticks, depth, tick);
        assert_eq!(window_levels(data), expected, "{channel} at change_id {change_id}");
        if !expected["bids"].as_array().unwrap().is_empty() {
            nonempty += 1;
        }
        *checked.entry(channel).or_default() += 1;
    }
    assert!(nonempty >= WINDOWS, "the windows checked had levels: {nonempty}");
}
