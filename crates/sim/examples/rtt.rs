//! Loopback round trips through the simulator: `public/test` and limit `private/buy` +
//! `private/cancel`, sequential, one WebSocket client. Prints client-measured and server-side
//! (`usOut - usIn`) percentiles in µs. `cargo run -p ticktrade-sim --example rtt [--release]`.

#![allow(clippy::unwrap_used)]

use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

fn pct(mut v: Vec<u64>, label: &str) {
    v.sort_unstable();
    let at = |p: f64| v[((v.len() as f64 - 1.0) * p) as usize];
    println!(
        "{label:<28} n={:<5} p50 {:>6}  p90 {:>6}  p99 {:>6}  max {:>6}",
        v.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        v[v.len() - 1]
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sim = ticktrade_sim::spawn_loopback(ticktrade_sim::SimConfig {
        limits: ticktrade_sim::RateLimits::unlimited(),
        ..Default::default()
    })
    .await
    .unwrap();
    let (mut ws, _) = tokio_tungstenite::connect_async(sim.ws_url()).await.unwrap();
    let mut id = 0u64;
    let mut call =
        async |ws: &mut tokio_tungstenite::WebSocketStream<_>, method: &str, params: Value| -> (u64, Value) {
            id += 1;
            let start = Instant::now();
            ws.send(Message::Text(json!({"jsonrpc":"2.0","id":id,"method":method,"params":params}).to_string().into()))
                .await
                .unwrap();
            loop {
                if let Some(Ok(Message::Text(t))) = ws.next().await {
                    let v: Value = serde_json::from_str(t.as_str()).unwrap();
                    if v["id"] == json!(id) {
                        return (start.elapsed().as_micros() as u64, v);
                    }
                }
            }
        };
    call(
        &mut ws,
        "public/auth",
        json!({"grant_type":"client_credentials","client_id":"ticktrade-sim","client_secret":"ticktrade-sim-secret"}),
    )
    .await;
    let (mut client, mut server) = (Vec::new(), Vec::new());
    for _ in 0..2_000 {
        let (us, v) = call(&mut ws, "public/test", json!({})).await;
        client.push(us);
        server.push(v["usDiff"].as_u64().unwrap_or(0));
    }
    pct(client, "public/test client µs");
    pct(server, "public/test server µs");
    let (mut client, mut server) = (Vec::new(), Vec::new());
    for _ in 0..1_000 {
        let (us, v) =
            call(&mut ws, "private/buy", json!({"instrument_name":"BTC-PERPETUAL","amount":10,"price":1000})).await;
        client.push(us);
        server.push(v["usDiff"].as_u64().unwrap_or(0));
        let order_id = v["result"]["order"]["order_id"].as_str().unwrap().to_owned();
        call(&mut ws, "private/cancel", json!({"order_id": order_id})).await;
    }
    pct(client, "private/buy client µs");
    pct(server, "private/buy server µs");
    sim.shutdown().await;
}
