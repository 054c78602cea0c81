//! `ticktrade serve`'s command-line module (crates/ticktrade/src/serve.rs), compiled here so
//! it is tested before the binary wires it: flags build the config, and that config serves.
#![allow(clippy::unwrap_used)]

#[allow(dead_code)]
#[path = "../../ticktrade/src/serve.rs"]
mod serve;
// serve.rs uses the binary's banner/runtime helpers (`crate::status`).
#[allow(dead_code)]
#[path = "../../ticktrade/src/status.rs"]
mod status;

use clap::Parser;
use serde_json::json;
use ticktrade_serve::{SlowPolicy, UpstreamSource};
use ticktrade_testkit::WsClient;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    args: serve::Args,
}

#[test]
fn flags_build_a_config() {
    let cli = Cli::parse_from([
        "serve",
        "--upstream",
        "deribit-testnet",
        "--instruments",
        "BTC-PERPETUAL, ETH-PERPETUAL",
        "--listen",
        "127.0.0.1:0",
        "--raw",
        "--slow",
        "disconnect",
        "--queue",
        "16",
    ]);
    let upstream = serve::upstream(&cli.args).unwrap();
    assert!(
        matches!(&upstream, serve::Upstream::Source(UpstreamSource::Url(u)) if u == "wss://test.deribit.com/ws/api/v2")
    );
    let serve::Upstream::Source(source) = upstream else { unreachable!() };
    let config = serve::config(&cli.args, source).unwrap();
    assert_eq!(config.instruments, Some(vec!["BTC-PERPETUAL".to_owned(), "ETH-PERPETUAL".to_owned()]));
    assert!(config.raw);
    assert_eq!(config.slow_policy, SlowPolicy::Disconnect);
    assert_eq!(config.queue_capacity, 16);
    let default_args = Cli::parse_from(["serve"]).args;
    assert!(matches!(serve::upstream(&default_args).unwrap(), serve::Upstream::Sim(_)));
    let defaults = serve::config(&default_args, UpstreamSource::Url(String::new())).unwrap();
    assert_eq!(defaults.instruments, None);
    assert_eq!(defaults.slow_policy, SlowPolicy::Conflate);
    let bad = Cli::parse_from(["serve", "--upstream", "ftp://x"]);
    assert!(serve::upstream(&bad.args).is_err());
    assert!(Cli::try_parse_from(["serve", "--slow", "sometimes"]).is_err());
}

#[tokio::test]
async fn filtered_config_serves_only_its_instruments() {
    let cli = Cli::parse_from(["serve", "--listen", "127.0.0.1:0", "--instruments", "ETH-PERPETUAL"]);
    let running = serve::start(&cli.args).await.unwrap();
    assert!(running.sim.is_some(), "--upstream sim starts the embedded simulator");
    let handle = &running.serve;
    let mut ws = WsClient::connect(&handle.ws_url()).await;
    let channels = json!(["book.BTC-PERPETUAL.100ms", "book.ETH-PERPETUAL.100ms", "nonsense.x"]);
    ws.request_with_id(3, "public/subscribe", json!({ "channels": channels })).await;
    // The reply first, then the snapshot.
    let reply = ws.next_json().await;
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["result"], json!(["book.ETH-PERPETUAL.100ms"]));
    let snapshot = ws.next_json().await;
    assert_eq!(snapshot["params"]["channel"], "book.ETH-PERPETUAL.100ms");
    assert_eq!(snapshot["params"]["data"]["type"], "snapshot");
    // get_order_book answers from the same book, on the same chain.
    let book = ws.call("public/get_order_book", json!({"instrument_name": "ETH-PERPETUAL", "depth": 5})).await;
    let result = &book["result"];
    assert_eq!(result["instrument_name"], "ETH-PERPETUAL");
    assert!(result["change_id"].as_u64().unwrap() >= snapshot["params"]["data"]["change_id"].as_u64().unwrap());
    assert!(!result["bids"].as_array().unwrap().is_empty() && result["bids"].as_array().unwrap().len() <= 5, "{book}");
    assert_eq!(result["best_bid_price"], result["bids"][0][0]);
    running.shutdown().await;
}
