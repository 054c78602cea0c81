#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The trading shell (library side) scripted against the embedded simulator on loopback:
//! every command, JSON output, final positions and balances equal to the venue's own
//! account, and no secret in any output.

use std::time::Duration;

use serde_json::Value;
use ticktrade_core::Decimal;
use ticktrade_gateway::deribit::{Credentials, Deribit, DeribitConfig, Secret};
use ticktrade_gateway::shell::Shell;
use ticktrade_gateway::venue::{Filter, Venue};
use ticktrade_sim::{ApiKey, SimConfig, SimHandle};

const INSTRUMENT: &str = "BTC-PERPETUAL";

async fn sim(keys: Vec<ApiKey>) -> SimHandle {
    ticktrade_sim::spawn_loopback(SimConfig { rate_per_s: 200, min_heartbeat_s: 1, keys, ..SimConfig::default() })
        .await
        .unwrap()
}

fn venue(sim: &SimHandle, key: &ApiKey) -> Deribit {
    let mut config = DeribitConfig::new(sim.ws_url());
    config.credentials =
        Some(Credentials { client_id: key.client_id.clone(), client_secret: Secret::new(key.client_secret.expose()) });
    config.heartbeat_s = 1;
    config.request_timeout = Duration::from_secs(5);
    Deribit::new(config)
}

/// A price well below the market on the tick grid (half the best bid, whole dollars).
async fn far_bid(sim: &SimHandle) -> String {
    let top = sim.book_top(INSTRUMENT, 1).await.unwrap();
    let best = top.bids.first().map(|l| l.0).unwrap_or(Decimal::from_int(40_000));
    let whole = best.mantissa() / 10i64.pow(u32::from(best.scale()));
    (whole / 2).to_string()
}

fn script(price: &str) -> String {
    format!(
        "# a whole session\n\
         help buy\n\
         status\n\
         instruments BTC future\n\
         ticker {INSTRUMENT}\n\
         book {INSTRUMENT} 5\n\
         buy {INSTRUMENT} 100 market label=s-buy\n\
         sell {INSTRUMENT} 30 market ioc\n\
         buy {INSTRUMENT} 10 @ {price} post-only label=rest1\n\
         edit rest1 20 @ {price}\n\
         orders\n\
         orders BTC\n\
         cancel rest1\n\
         sell {INSTRUMENT} 10 @ 999999 post-only label=rest2\n\
         cancel-all {INSTRUMENT}\n\
         positions\n\
         account BTC\n\
         trades {INSTRUMENT}\n\
         sub book:{INSTRUMENT} ticker:{INSTRUMENT} trades:{INSTRUMENT} orders user-trades\n\
         book {INSTRUMENT} 3\n\
         watch {INSTRUMENT}\n\
         unsub\n\
         latency\n"
    )
}

async fn run(shell: &mut Shell<Deribit>, text: &str, json: bool) -> (u64, String) {
    let mut out = Vec::new();
    let failures = shell.run_script(text.as_bytes(), &mut out, json).await.unwrap();
    (failures, String::from_utf8(out).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_session_matches_the_venue_account() {
    let key = ApiKey { client_id: "alice".into(), client_secret: ticktrade_sim::Secret::new("alice-secret-7f3a9c") };
    let sim = sim(vec![key.clone()]).await;
    let trader = venue(&sim, &key);
    trader.connect().await.unwrap();
    let mut shell = Shell::new(trader);
    assert!(shell.load_instruments().await.unwrap() > 0);
    let price = far_bid(&sim).await;

    let (failures, text) = run(&mut shell, &script(&price), false).await;
    assert_eq!(failures, 0, "{text}");
    assert!(text.contains("latency: local"), "{text}");
    assert!(text.contains("order_id"), "{text}");

    let (failures, json) = run(&mut shell, "positions\naccount BTC\norders\n", true).await;
    assert_eq!(failures, 0, "{json}");
    let lines: Vec<Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l["ok"] == true));

    // The venue's own view, from a second session on the same account.
    let auditor = venue(&sim, &key);
    auditor.connect().await.unwrap();
    let positions = auditor.positions(Filter::All).await.unwrap();
    let pos = positions.iter().find(|p| p.instrument == INSTRUMENT).unwrap();
    assert_eq!(pos.size, Decimal::from_int(70));
    let rows = lines[0]["rows"].as_array().unwrap();
    let row = rows.iter().find(|r| r["instrument"] == INSTRUMENT).unwrap();
    assert_eq!(row["size"], pos.size.to_string());
    assert_eq!(row["average_price"], pos.average_price.to_string());
    let balance = &auditor.account(Some("BTC")).await.unwrap()[0];
    assert_eq!(lines[1]["rows"][0]["balance"], balance.balance.to_string());
    assert_eq!(lines[1]["rows"][0]["equity"], balance.equity.to_string());
    assert!(lines[2]["rows"].as_array().unwrap().is_empty(), "everything was cancelled");

    // No secret anywhere a person or a log could see.
    let debug = format!("{:?} {:?}", shell.venue(), shell.venue().info());
    for haystack in [&text, &json, &debug] {
        assert!(!haystack.contains("alice-secret-7f3a9c"), "secret leaked");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_one_line_with_code_and_counted() {
    let sim = sim(Vec::new()).await;
    let trader = venue(&sim, &ApiKey::default_key());
    trader.connect().await.unwrap();
    let mut shell = Shell::new(trader);
    shell.load_instruments().await.unwrap();
    let input = format!(
        "frobnicate\nbuy {INSTRUMENT} 10 @ 1.3\nbuy NOPE-X 10\ncancel no-such-order\norder 424242\nsub bogus\nquit\nstatus\n"
    );
    let (failures, text) = run(&mut shell, &input, false).await;
    assert_eq!(failures, 6, "{text}");
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 6, "{text}");
    assert!(errors[0].contains("unknown command"), "{text}");
    assert!(errors[1].contains("tick grid"), "{text}");
    assert!(errors[2].contains("unknown instrument"), "{text}");
    // Venue rejections carry Deribit's code and its meaning.
    assert!(errors[4].contains("10004") || errors[4].contains("order_not_found"), "{text}");
    assert!(!text.contains("authenticated"), "nothing after quit runs: {text}");

    let (failures, json) = run(&mut shell, "order 424242\n", true).await;
    assert_eq!(failures, 1);
    let value: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(value["ok"], false);
    assert!(value["error"]["code"].is_i64(), "{json}");
    sim.shutdown().await;
}
