//! Request/response correlation: monotonically increasing ids, the pending-request table, the
//! write path, timeouts, and turning Deribit error objects into `VenueError`s.
//!
//! Owns: `Rpc` (ids, pending table, the socket's write half), `Reply`.
//! Must not: interpret results (callers decode them with deribit-proto's types) or log inside
//! the timed region (request handed over → bytes written).
//!
//! A response is matched to its request by id, never to "the latest message"; a response
//! whose id is unknown (answered after its timeout) is counted and dropped.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::SinkExt;
use futures_util::stream::SplitSink;
use ticktrade_deribit_proto::envelope::encode_request_serde;
use ticktrade_deribit_proto::error;
use ticktrade_net::{Message, WsStream};
use tokio::sync::oneshot;

use crate::venue::{RoundTrip, VenueError};

/// An answer, owned (the frame buffer is reused by the reader).
#[derive(Debug)]
pub(crate) struct Reply {
    pub outcome: Result<String, RpcFailure>,
    pub us_in: Option<u64>,
    pub us_out: Option<u64>,
    pub received: Instant,
}

#[derive(Debug)]
pub(crate) struct RpcFailure {
    pub code: i64,
    pub message: String,
    pub data: Option<String>,
}

type Sink = SplitSink<WsStream, Message>;

pub(crate) struct Rpc {
    next_id: AtomicU64,
    pending: Mutex<HashMap<u64, oneshot::Sender<Reply>>>,
    writer: tokio::sync::Mutex<Option<Sink>>,
    pub(crate) unmatched: AtomicU64,
}

/// Result of a call: the result JSON and the times.
pub(crate) struct Answer {
    pub result: String,
    pub timing: RoundTrip,
}

impl Rpc {
    pub(crate) fn new() -> Rpc {
        Rpc {
            next_id: AtomicU64::new(1),
            pending: Mutex::new(HashMap::new()),
            writer: tokio::sync::Mutex::new(None),
            unmatched: AtomicU64::new(0),
        }
    }

    pub(crate) async fn install(&self, sink: Sink) {
        *self.writer.lock().await = Some(sink);
    }

    /// Drops the write half and fails every pending request with `Disconnected`.
    pub(crate) async fn disconnect(&self) {
        if let Some(mut sink) = self.writer.lock().await.take() {
            let _ = sink.close().await;
        }
        if let Ok(mut pending) = self.pending.lock() {
            pending.clear();
        }
    }

    /// Hands a response to its waiting request.
    pub(crate) fn resolve(&self, id: u64, reply: Reply) {
        let waiter = self.pending.lock().ok().and_then(|mut p| p.remove(&id));
        match waiter {
            Some(tx) => {
                let _ = tx.send(reply);
            }
            None => {
                self.unmatched.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Sends a request without waiting for its answer (the answer is dropped as unmatched).
    pub(crate) async fn notify(&self, method: &str, params: &impl serde::Serialize) -> Result<(), VenueError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut buf = Vec::with_capacity(128);
        encode(&mut buf, id, method, params)?;
        self.write(buf, method).await
    }

    async fn write(&self, buf: Vec<u8>, method: &str) -> Result<(), VenueError> {
        let text = String::from_utf8(buf).map_err(|_| VenueError::Invalid(format!("{method}: non-UTF-8 params")))?;
        let mut writer = self.writer.lock().await;
        let sink = writer.as_mut().ok_or_else(|| VenueError::Disconnected("not connected".into()))?;
        sink.send(Message::Text(text.into())).await.map_err(|e| VenueError::Disconnected(e.to_string()))
    }

    /// Sends `method` and waits up to `timeout` for its answer. `started` is when the caller
    /// handed the request over (the start of the local-path timing).
    pub(crate) async fn call(
        &self,
        method: &str,
        params: &impl serde::Serialize,
        timeout: Duration,
        started: Instant,
    ) -> Result<Answer, VenueError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut buf = Vec::with_capacity(256);
        encode(&mut buf, id, method, params)?;
        let (tx, rx) = oneshot::channel();
        if let Ok(mut pending) = self.pending.lock() {
            pending.insert(id, tx);
        }
        if let Err(err) = self.write(buf, method).await {
            self.forget(id);
            return Err(err);
        }
        let written = Instant::now();
        let reply = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => return Err(VenueError::Disconnected(format!("connection lost while waiting for {method}"))),
            Err(_) => {
                self.forget(id);
                return Err(VenueError::Timeout { method: method.to_owned(), timeout_ms: timeout.as_millis() as u64 });
            }
        };
        let exchange_us = match (reply.us_in, reply.us_out) {
            (Some(i), Some(o)) => Some(o.saturating_sub(i)),
            _ => None,
        };
        let timing = RoundTrip {
            local_ns: nanos(written.saturating_duration_since(started)),
            round_trip_us: reply.received.saturating_duration_since(started).as_micros() as u64,
            exchange_us,
            decode_ns: 0,
        };
        match reply.outcome {
            Ok(result) => Ok(Answer { result, timing }),
            Err(failure) => Err(rejected(method, failure)),
        }
    }

    fn forget(&self, id: u64) {
        if let Ok(mut pending) = self.pending.lock() {
            pending.remove(&id);
        }
    }
}

fn encode(buf: &mut Vec<u8>, id: u64, method: &str, params: &impl serde::Serialize) -> Result<(), VenueError> {
    encode_request_serde(buf, id, method, params).map_err(|e| VenueError::Invalid(format!("{method}: {e}")))
}

pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// A Deribit error object as a `VenueError`, with the documented meaning of the code.
pub(crate) fn rejected(method: &str, failure: RpcFailure) -> VenueError {
    let meaning = i32::try_from(failure.code).ok().and_then(error::lookup).map(|info| info.description.to_owned());
    let message = match failure.data {
        Some(data) if data != "null" => format!("{} {}", failure.message, data),
        _ => failure.message,
    };
    VenueError::Rejected { method: method.to_owned(), code: failure.code, message, meaning }
}
