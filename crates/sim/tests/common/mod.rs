//! What the simulator's loopback tests share: a simulator, and `auth` on the testkit's client.
#![allow(dead_code, clippy::unwrap_used)]

use serde_json::{Value, json};
use ticktrade_sim::{SimConfig, SimHandle};
pub use ticktrade_testkit::WsClient;

pub async fn sim() -> SimHandle {
    ticktrade_sim::spawn_loopback(SimConfig { rate_per_s: 200, ..SimConfig::default() }).await.unwrap()
}

/// Authenticates with the simulator's default key.
pub trait Auth {
    async fn auth(&mut self) -> Value;
}

impl Auth for WsClient {
    async fn auth(&mut self) -> Value {
        let v = self
            .call(
                "public/auth",
                json!({"grant_type": "client_credentials", "client_id": "ticktrade-sim", "client_secret": "ticktrade-sim-secret"}),
            )
            .await;
        assert!(v["result"]["access_token"].is_string(), "{v}");
        v
    }
}
