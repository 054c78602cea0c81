//! What the simulator's loopback tests share: a simulator, `auth` on the testkit's client, the
//! Deribit vectors and the shape comparison against them (`shape`).
#![allow(dead_code, clippy::unwrap_used)]

pub mod shape;

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

/// A JSON value's type name, for shape comparisons against the vectors.
pub fn type_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// `testdata/deribit/examples/`.
pub fn examples_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/deribit/examples")
}

/// The vector file `name` under `testdata/deribit/examples/`.
pub fn vector(name: &str) -> Value {
    let path = examples_dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}
