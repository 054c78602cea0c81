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

/// The vector file `name` under `testdata/deribit/examples/`.
pub fn vector(name: &str) -> Value {
    let path = format!("{}/../../testdata/deribit/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))).unwrap()
}

/// The response vector of `method` (the first of its recorded sources that exists).
pub fn method_vector(method: &str) -> Value {
    let base = method.replace('/', "_");
    for suffix in [".response.json", ".response.docs_v2_1_1.json", ".response.official_2019.json"] {
        let path = format!("{}/../../testdata/deribit/examples/{base}{suffix}", env!("CARGO_MANIFEST_DIR"));
        if std::path::Path::new(&path).exists() {
            return vector(&format!("{base}{suffix}"));
        }
    }
    panic!("no vector for {method}");
}
