//! The one WebSocket test client: JSON frames both ways, JSON-RPC calls matched by id, and the
//! close code and reason when the server closes.
//!
//! Owns: connecting (plain, TLS through the caller's `Connector`, or with a small receive buffer
//! for slow-consumer tests), the frames read while waiting for something else (kept in
//! `backlog`, handed out first), and the deadline on every read.
//! Must not: know any venue's messages beyond the JSON-RPC envelope (`id`, `method`,
//! `params.channel`); Hyperliquid tests use `send_json`/`next_where` with their own fields.
//!
//! Every read waits at most [`WAIT`] (or what `set_wait` chose, for servers that are whole
//! processes) and panics after that, naming what it waited for: a test
//! waits on the event it expects, never on a fixed sleep. Under paused tokio time the deadline
//! is virtual too, so it only fires when nothing else can happen.

use std::collections::VecDeque;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
pub use tokio_tungstenite::Connector;
pub use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// The socket type the client wraps.
pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// Longest wait for one frame before the test fails.
pub const WAIT: Duration = Duration::from_secs(10);

/// A connected test client. `ws` is public for tests that send raw frames.
pub struct WsClient {
    pub ws: Ws,
    next_id: u64,
    /// Frames read while waiting for something else, oldest first.
    pub backlog: VecDeque<Value>,
    closed: Option<(u16, String)>,
    wait: Duration,
}

impl WsClient {
    pub async fn connect(url: &str) -> WsClient {
        let (ws, _) = tokio_tungstenite::connect_async(url).await.unwrap_or_else(|e| panic!("connect {url}: {e}"));
        WsClient::from_stream(ws)
    }

    /// Connects over TLS with the caller's connector (e.g. trusting a simulator's certificate).
    pub async fn connect_tls(url: &str, connector: Connector) -> WsClient {
        let (ws, _) = tokio_tungstenite::connect_async_tls_with_config(url, None, false, Some(connector))
            .await
            .unwrap_or_else(|e| panic!("connect {url}: {e}"));
        WsClient::from_stream(ws)
    }

    /// Connects with a tiny socket receive buffer, so a client that stops reading backs the
    /// server up quickly (slow-consumer tests).
    pub async fn connect_small_buffer(addr: std::net::SocketAddr, url: &str) -> WsClient {
        let socket = tokio::net::TcpSocket::new_v4().unwrap_or_else(|e| panic!("socket: {e}"));
        socket.set_recv_buffer_size(2048).unwrap_or_else(|e| panic!("SO_RCVBUF: {e}"));
        let stream = socket.connect(addr).await.unwrap_or_else(|e| panic!("connect {addr}: {e}"));
        let (ws, _) = tokio_tungstenite::client_async(url, MaybeTlsStream::Plain(stream))
            .await
            .unwrap_or_else(|e| panic!("handshake {url}: {e}"));
        WsClient::from_stream(ws)
    }

    pub fn from_stream(ws: Ws) -> WsClient {
        WsClient { ws, next_id: 1, backlog: VecDeque::new(), closed: None, wait: WAIT }
    }

    /// Longest wait for one frame from now on (default [`WAIT`]).
    pub fn set_wait(&mut self, wait: Duration) {
        self.wait = wait;
    }

    pub async fn send_text(&mut self, text: &str) {
        self.ws.send(Message::text(text)).await.unwrap_or_else(|e| panic!("send: {e}"));
    }

    pub async fn send_json(&mut self, value: &Value) {
        self.send_text(&value.to_string()).await;
    }

    /// Sends a JSON-RPC request with the next id; returns the id.
    pub async fn request(&mut self, method: &str, params: Value) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        self.request_with_id(id, method, params).await;
        id
    }

    /// Sends a JSON-RPC request with the caller's id (later `request` ids continue above it).
    pub async fn request_with_id(&mut self, id: u64, method: &str, params: Value) {
        self.next_id = self.next_id.max(id + 1);
        self.send_json(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})).await;
    }

    /// Sends a request and returns its response; other frames stay in the backlog.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.request(method, params).await;
        self.response(id).await
    }

    /// Sends a request and returns its response's text exactly as the server sent it (tests
    /// that decode the bytes themselves); other frames stay in the backlog.
    pub async fn call_text(&mut self, method: &str, params: Value) -> String {
        let id = self.request(method, params).await;
        loop {
            let Some(text) = self.next_text().await else {
                panic!("socket closed ({:?}) while waiting for the response to {method}", self.closed);
            };
            let v = serde_json::from_str(&text).unwrap_or_else(|_| json!({"__malformed": text.as_str()}));
            if v["id"] == json!(id) {
                return text;
            }
            self.backlog.push_back(v);
        }
    }

    /// The response to request `id`; other frames stay in the backlog.
    pub async fn response(&mut self, id: u64) -> Value {
        self.next_where(&format!("the response to request {id}"), |v| v["id"] == json!(id)).await
    }

    /// The next notification on `channel` (`params.channel`); others stay in the backlog.
    pub async fn notification(&mut self, channel: &str) -> Value {
        self.next_where(&format!("a notification on {channel}"), |v| v["params"]["channel"] == json!(channel)).await
    }

    /// The next frame whose `method` is `method` (e.g. "heartbeat"); others stay in the backlog.
    pub async fn notification_method(&mut self, method: &str) -> Value {
        self.next_where(&format!("a {method} frame"), |v| v["method"] == json!(method)).await
    }

    /// The next frame `pred` accepts (from the backlog first); the others stay in the backlog.
    /// Panics, naming `what`, if the socket closes first.
    pub async fn next_where(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(pos) = self.backlog.iter().position(&pred)
            && let Some(v) = self.backlog.remove(pos)
        {
            return v;
        }
        loop {
            let Some(v) = self.read().await else {
                panic!("socket closed ({:?}) while waiting for {what}", self.closed);
            };
            if pred(&v) {
                return v;
            }
            self.backlog.push_back(v);
        }
    }

    /// The next JSON frame (from the backlog first); `None` when the socket closed. A text frame
    /// that is not JSON comes back as `{"__malformed": text}`.
    pub async fn next(&mut self) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        self.read().await
    }

    /// Like [`next`](Self::next), but the socket must still be open.
    pub async fn next_json(&mut self) -> Value {
        match self.next().await {
            Some(v) => v,
            None => panic!("socket closed ({:?}) while waiting for a frame", self.closed),
        }
    }

    /// The next frame if one arrives within `wait`, `None` if none did (or the socket closed).
    pub async fn try_next(&mut self, wait: Duration) -> Option<Value> {
        if let Some(v) = self.backlog.pop_front() {
            return Some(v);
        }
        tokio::time::timeout(wait, self.read_untimed()).await.ok().flatten()
    }

    /// The next text frame exactly as the server sent it (tests of the bytes themselves); the
    /// backlog is not consulted. `None` when the socket closed.
    pub async fn next_text(&mut self) -> Option<String> {
        let read = async {
            loop {
                match self.ws.next().await {
                    Some(Ok(Message::Text(t))) => return Some(t.as_str().to_owned()),
                    Some(Ok(Message::Close(frame))) => {
                        self.closed = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                        return None;
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => return None,
                }
            }
        };
        let wait = self.wait;
        match tokio::time::timeout(wait, read).await {
            Ok(text) => text,
            Err(_) => panic!("no frame within {wait:?}"),
        }
    }

    async fn read(&mut self) -> Option<Value> {
        let wait = self.wait;
        match tokio::time::timeout(wait, self.read_untimed()).await {
            Ok(v) => v,
            Err(_) => panic!("no frame within {wait:?}"),
        }
    }

    async fn read_untimed(&mut self) -> Option<Value> {
        loop {
            match self.ws.next().await {
                Some(Ok(Message::Text(t))) => {
                    return Some(
                        serde_json::from_str(t.as_str()).unwrap_or_else(|_| json!({"__malformed": t.as_str()})),
                    );
                }
                Some(Ok(Message::Close(frame))) => {
                    self.closed = frame.map(|f| (u16::from(f.code), f.reason.to_string()));
                    return None;
                }
                Some(Ok(_)) => continue,
                Some(Err(_)) | None => return None,
            }
        }
    }

    /// Reads until the server closes the socket; returns the close code and reason.
    pub async fn wait_closed(&mut self) -> Option<(u16, String)> {
        while self.read().await.is_some() {}
        self.closed.clone()
    }

    /// The close code and reason the server sent, once the socket closed.
    pub fn close_frame(&self) -> Option<(u16, String)> {
        self.closed.clone()
    }

    /// Closes from the client side.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}
