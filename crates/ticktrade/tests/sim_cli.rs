//! `ticktrade sim`'s module, compiled and unit-tested here until the lead wires it into
//! `main.rs` (its own `#[cfg(test)]` tests run in this test binary), plus a loopback check
//! that the library the subcommand starts serves both protocols.

#![allow(clippy::unwrap_used, dead_code)]

#[path = "../src/sim.rs"]
mod sim;

#[tokio::test]
async fn the_simulator_the_cli_starts_serves_ws_and_http() {
    let handle = ticktrade_sim::spawn_loopback(ticktrade_sim::SimConfig::default()).await.unwrap();
    assert!(handle.ws_url().starts_with("ws://127.0.0.1:"));
    assert!(handle.http_url().ends_with("/api/v2"));
    assert_eq!(handle.keys()[0].client_id, "ticktrade-sim");
    assert_eq!(format!("{:?}", handle.keys()[0].client_secret), "***");
    handle.shutdown().await;
}
