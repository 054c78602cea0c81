//! HTTP JSON-RPC on loopback: GET with a query string, POST with a body, POST /api/v2 with the
//! method in the body, and the three REST authorisations (Bearer, Basic, deri-hmac-sha256).

#![allow(clippy::unwrap_used)]

use serde_json::{Value, json};
use ticktrade_sim::auth::{Secret, sign};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

async fn http(addr: std::net::SocketAddr, method: &str, uri: &str, auth: Option<&str>, body: &str) -> (u16, Value) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let auth = auth.map(|a| format!("Authorization: {a}\r\n")).unwrap_or_default();
    let request = format!(
        "{method} {uri} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{auth}\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8(response).unwrap();
    let status: u16 =
        text.split_whitespace().nth(1).unwrap_or_else(|| panic!("{method} {uri}: {text:?}")).parse().unwrap();
    let body = text.split("\r\n\r\n").nth(1).unwrap();
    // Bodies may be chunked; take the JSON object.
    let start = body.find('{').unwrap_or_else(|| panic!("{method} {uri}: {text:?}"));
    let end = body.rfind('}').unwrap();
    (status, serde_json::from_str(&body[start..=end]).unwrap())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

#[tokio::test]
async fn http_json_rpc_forms_and_auth() {
    let sim = ticktrade_sim::spawn_loopback(Default::default()).await.unwrap();
    let addr = sim.addr();
    let (status, v) = http(addr, "GET", "/api/v2/public/get_time", None, "").await;
    assert_eq!(status, 200);
    assert!(v["result"].is_i64() && v.get("usIn").is_some(), "{v}");
    let (_, v) = http(addr, "GET", "/api/v2/public/ticker?instrument_name=BTC-PERPETUAL", None, "").await;
    assert_eq!(v["result"]["instrument_name"], "BTC-PERPETUAL");
    let (_, v) = http(addr, "GET", "/api/v2/public/get_instruments?currency=BTC&kind=future", None, "").await;
    let list = v["result"].as_array().unwrap();
    assert!(list.len() >= 2 && list.iter().all(|i| i["kind"] == "future" && i["base_currency"] == "BTC"), "{v}");
    assert!(list.iter().any(|i| i["instrument_name"] == "BTC-PERPETUAL"), "{v}");

    let (status, v) = http(addr, "GET", "/api/v2/private/get_positions", None, "").await;
    assert_eq!(status, 400);
    assert_eq!(v["error"]["code"], 13009, "{v}");
    let (_, v) = http(addr, "GET", "/api/v2/public/subscribe?channels=%5B%22x%22%5D", None, "").await;
    assert_eq!(v["error"]["code"], 11050, "websocket only: {v}");

    // POST /api/v2 with the method in the body.
    let body = json!({"jsonrpc": "2.0", "id": 3, "method": "public/auth", "params": {"grant_type": "client_credentials", "client_id": "ticktrade-sim", "client_secret": "ticktrade-sim-secret", "scope": "session:http"}}).to_string();
    let (_, v) = http(addr, "POST", "/api/v2", None, &body).await;
    assert_eq!(v["id"], 3);
    let token = v["result"]["access_token"].as_str().unwrap().to_owned();
    let (_, v) =
        http(addr, "GET", "/api/v2/private/get_account_summary?currency=BTC", Some(&format!("Bearer {token}")), "")
            .await;
    assert_eq!(v["result"]["currency"], "BTC", "{v}");

    // deri-hmac-sha256 over METHOD\nURI\nBODY\n.
    let uri = "/api/v2/private/get_open_orders_by_currency?currency=BTC";
    let ts = now_ms();
    let sig = sign(&Secret::new("ticktrade-sim-secret"), &format!("{ts}\nabc\nGET\n{uri}\n\n"));
    let header = format!("deri-hmac-sha256 id=ticktrade-sim,ts={ts},sig={sig},nonce=abc");
    let (status, v) = http(addr, "GET", uri, Some(&header), "").await;
    assert_eq!(status, 200, "{v}");
    assert!(v["result"].is_array());
    let (_, v) = http(addr, "GET", uri, Some(&header), "").await;
    assert_eq!(v["error"]["code"], 13004, "nonce reuse refused: {v}");
    assert_eq!(v["error"]["message"], "invalid_credentials", "{v}");
    assert_eq!(v["error"]["data"], json!({"invalid": "nonce"}), "{v}");

    // POST a JSON-RPC body to the method path, Basic auth.
    let basic = format!("Basic {}", base64_of("ticktrade-sim:ticktrade-sim-secret"));
    let body = json!({"jsonrpc": "2.0", "id": 9, "method": "private/buy", "params": {"instrument_name": "BTC-PERPETUAL", "amount": 10, "type": "market"}}).to_string();
    let (status, v) = http(addr, "POST", "/api/v2/private/buy", Some(&basic), &body).await;
    assert_eq!(status, 200, "{v}");
    assert_eq!(v["result"]["order"]["order_state"], "filled", "{v}");
    // Query-string numbers and labels that look like numbers.
    let (_, v) = http(
        addr,
        "GET",
        "/api/v2/private/sell?instrument_name=BTC-PERPETUAL&amount=10&price=1000000&label=123",
        Some(&basic),
        "",
    )
    .await;
    assert_eq!(v["result"]["order"]["label"], "123", "{v}");
    sim.shutdown().await;
}

fn base64_of(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text)
}
