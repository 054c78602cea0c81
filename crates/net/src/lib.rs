//! Network plumbing shared by ticktrade's clients and servers: the one RFC 6455 framer (both
//! roles), WebSocket connect (plain on loopback, rustls with certificate verification elsewhere)
//! and reconnect backoff with jitter.
//!
//! Owns: WebSocket frames and the opening handshake, TCP connect with `TCP_NODELAY`, the TLS
//! client configuration (webpki roots, no "accept any certificate" switch), WebSocket frame
//! limits, the backoff schedule, and the outbound queue and policies every server publishes
//! through.
//! Must not: know any venue's protocol, log payloads, or hold credentials.
//!
//! # Layout
//! - `frame`: RFC 6455 frames both ways ([`frame::parse_header`], [`frame::push_frame`],
//!   masking, close codes) and [`frame::WsReader`]/[`frame::WsWriter`] over any byte stream.
//! - `handshake`: the opening handshake's pieces and its blocking exchange, both ends.
//! - `hot`: the hot loop's blocking connection: [`hot::HotStream`] (plain loopback TCP or
//!   rustls), [`hot::TlsRoots`], [`hot::connect`] with a deadline and an error per step.
//! - `ws`: [`connect_ws`], [`WsStream`], [`ConnectOptions`] (async, tokio-tungstenite).
//! - `outbound`: every server's per-client bounded queue, its slow-client policies (conflate,
//!   disconnect), the direct write and the fan-out loop ([`outbound::Outbound`]).
//! - `backoff`: [`Backoff`], exponential backoff with full jitter.

mod backoff;
pub mod frame;
pub mod handshake;
pub mod hot;
pub mod outbound;
mod ws;

pub use backoff::Backoff;
pub use tokio_tungstenite::tungstenite::Message;
pub use ws::{ConnectOptions, WsStream, connect_ws, is_loopback_url};

/// Why a connection could not be made or was lost.
#[derive(Debug, thiserror::Error)]
pub enum NetError {
    #[error("invalid url {url}: {reason}")]
    Url { url: String, reason: &'static str },
    #[error("plain ws:// to non-loopback host {host} refused (use wss://)")]
    PlainRemote { host: String },
    #[error("connect to {addr}: {source}")]
    Connect { addr: String, source: std::io::Error },
    #[error("connect to {addr} timed out")]
    ConnectTimeout { addr: String },
    #[error("tls: {0}")]
    Tls(String),
    #[error("websocket: {0}")]
    Ws(#[from] tokio_tungstenite::tungstenite::Error),
    #[error("connection closed{}", .reason.as_deref().map(|r| format!(": {r}")).unwrap_or_default())]
    Closed { reason: Option<String> },
}
