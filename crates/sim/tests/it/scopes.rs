//! Token scopes on the real simulator: a `trade:read` token reads but may not trade or change
//! MMP settings (`13021 forbidden`); a `session:NAME` token works on another connection, a
//! connection-scoped one is refused there (`13009 unauthorized`).

#![allow(clippy::unwrap_used)]

use crate::common;

use common::{WsClient, sim};
use serde_json::{Value, json};

async fn auth(c: &mut WsClient, scope: &str) -> String {
    let v = c
        .call(
            "public/auth",
            json!({"grant_type": "client_credentials", "client_id": "ticktrade-sim",
                   "client_secret": "ticktrade-sim-secret", "scope": scope}),
        )
        .await;
    assert!(v["result"]["access_token"].is_string(), "{v}");
    v["result"]["access_token"].as_str().unwrap().to_owned()
}

fn code(v: &Value) -> i64 {
    v["error"]["code"].as_i64().unwrap_or(0)
}

#[tokio::test]
async fn read_only_and_session_tokens_are_refused_where_they_must_be() {
    let sim = sim().await;
    let mut a = WsClient::connect(&sim.ws_url()).await;
    let session_token = auth(&mut a, "trade:read session:scopes").await;
    let buy = json!({"instrument_name": "BTC-PERPETUAL", "amount": 10, "type": "market"});
    assert_eq!(code(&a.call("private/buy", buy.clone()).await), 13021);
    let mmp = json!({"index_name": "btc_usd", "interval": 1, "frozen_time": 0, "quantity_limit": 1});
    assert_eq!(code(&a.call("private/set_mmp_config", mmp).await), 13021);
    assert_eq!(
        code(&a.call("private/mass_quote", json!({"quote_id": "1", "mmp_group": "g", "quotes": []})).await),
        13021
    );
    assert!(a.call("private/get_open_orders", json!({})).await["result"].is_array());
    assert!(a.call("private/get_mmp_config", json!({})).await["result"].is_array());

    // A session token works on a second connection; a connection token does not.
    let mut b = WsClient::connect(&sim.ws_url()).await;
    let v = b.call("private/get_open_orders", json!({"access_token": session_token})).await;
    assert!(v["result"].is_array(), "{v}");
    let mut c = WsClient::connect(&sim.ws_url()).await;
    let connection_token = auth(&mut c, "trade:read_write").await;
    assert!(c.call("private/buy", buy).await["result"]["order"].is_object());
    let mut d = WsClient::connect(&sim.ws_url()).await;
    let v = d.call("private/get_open_orders", json!({"access_token": connection_token})).await;
    assert_eq!(code(&v), 13009, "{v}");
    sim.shutdown().await;
}
