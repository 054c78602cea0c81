//! A small JSON-RPC WebSocket client for the loopback tests (tokio-tungstenite).
#![allow(dead_code, clippy::unwrap_used)]

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use ticktrade_sim::{SimConfig, SimHandle};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

pub const WAIT: Duration = Duration::from_secs(10);

pub async fn sim() -> SimHandle {
    ticktrade_sim::spawn_loopback(SimConfig { rate_per_s: 200, ..SimConfig::default() }).await.unwrap()
}

pub struct Client {
    pub ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// Frames read while waiting for something else.
    pub backlog: VecDeque<Value>,
    pub closed: Option<(u16, String)>,
}

impl Client {
    pub async fn connect(url: &str) -> Client {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap();
        Client { ws, next_id: 1, backlog: VecDeque::new(), closed: None }
    }

    /// Connects with a tiny socket receive buffer, so a client that stops reading backs the
    /// server up quickly (slow-consumer tests).
    pub async fn connect_small_buffer(addr: std::net::SocketAddr, url: &str) -> Client {
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(2048).unwrap();
        let stream = socket.connect(addr).await.unwrap();
        let (ws, _) = tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(stream)).await.unwrap();
        Client { ws, next_id: 1, backlog: VecDeque::new(), closed: None }
    }

    pub async fn send_text(&mut self, text: &str) {
        self.ws.send(Message::Text(text.into())).await.unwrap();
    }

    /// Next JSON frame (from the backlog first); `None` when the socket closed.
    pub async fn next(&mut self) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        self.read().await
    }

    async fn read(&mut self) -> Option<Value> {
        loop {
            let msg = tokio::time::timeout(WAIT, self.ws.next()).await.expect("timed out waiting for a frame");
            match msg {
                Some(Ok(Message::Text(t))) => match serde_json::from_str(t.as_str()) {
                    Ok(v) => return Some(v),
                    Err(_) => return Some(json!({"__malformed": t.as_str()})),
                },
                Some(Ok(Message::Close(frame))) => {
                    self.closed = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                    return None;
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    }

    pub async fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let text = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        self.send_text(&text).await;
        id
    }

    /// Sends a request and returns its response, keeping other frames in the backlog.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        self.response(id).await
    }

    pub async fn response(&mut self, id: u64) -> Value {
        if let Some(pos) = self.backlog.iter().position(|v| v["id"] == json!(id)) {
            return self.backlog.remove(pos).unwrap();
        }
        loop {
            let v = self.read().await.expect("socket closed before the response");
            if v["id"] == json!(id) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Next notification on `channel` (others stay in the backlog).
    pub async fn notification(&mut self, channel: &str) -> Value {
        if let Some(pos) = self.backlog.iter().position(|v| v["params"]["channel"] == json!(channel)) {
            return self.backlog.remove(pos).unwrap();
        }
        loop {
            let v = self.read().await.expect("socket closed before the notification");
            if v["params"]["channel"] == json!(channel) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// Reads until the server closes the socket; returns the close code and reason.
    pub async fn wait_closed(&mut self) -> Option<(u16, String)> {
        while self.read().await.is_some() {}
        self.closed.clone()
    }

    pub async fn auth(&mut self) -> Value {
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

impl Client {
    /// Next frame whose `method` is `method` (e.g. "heartbeat").
    pub async fn notification_method(&mut self, method: &str) -> Value {
        if let Some(pos) = self.backlog.iter().position(|v| v["method"] == json!(method)) {
            return self.backlog.remove(pos).unwrap();
        }
        loop {
            let v = self.read().await.expect("socket closed");
            if v["method"] == json!(method) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }
}
