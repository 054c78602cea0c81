//! The downstream front end: the listener, the WebSocket upgrade at `/ws/api/v2` (with the
//! connection and message-size limits), `GET /metrics`, and one task per client that writes its queue and
//! passes its requests to the hub.
//!
//! Owns: the client sockets.
//! Must not: interpret requests (the hub does, so replies and notifications keep one order).

use std::sync::Arc;
use std::sync::atomic::Ordering;

use axum::Router;
use axum::extract::State;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::{mpsc, oneshot, watch};

use crate::hub::{HubMsg, Out};
use crate::{ServeConfig, Shared, bump, now_us};

#[derive(Clone)]
struct AppState {
    cfg: Arc<ServeConfig>,
    hub: mpsc::Sender<HubMsg>,
    shared: Arc<Shared>,
}

pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    cfg: ServeConfig,
    hub: mpsc::Sender<HubMsg>,
    shared: Arc<Shared>,
    mut shutdown: watch::Receiver<bool>,
) {
    let state = AppState { cfg: Arc::new(cfg), hub, shared };
    let app = Router::new().route("/ws/api/v2", get(upgrade)).route("/metrics", get(metrics)).with_state(state);
    let stop = async move {
        let _ = shutdown.wait_for(|s| *s).await;
    };
    if let Err(e) = axum::serve(listener, app).with_graceful_shutdown(stop).await {
        tracing::warn!("serve: {e}");
    }
}

async fn metrics(State(state): State<AppState>) -> Response {
    let (tx, rx) = oneshot::channel();
    if state.hub.send(HubMsg::Totals(tx)).await.is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "hub stopped").into_response();
    }
    let Ok(totals) = rx.await else { return (StatusCode::SERVICE_UNAVAILABLE, "hub stopped").into_response() };
    let text = match state.shared.fanout_ns.lock() {
        Ok(guard) => guard.as_ref().map(|h| crate::metrics::render(&totals, h)).unwrap_or_default(),
        Err(_) => String::new(),
    };
    ([(axum::http::header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn upgrade(State(state): State<AppState>, ws: WebSocketUpgrade) -> Response {
    let limit = state.cfg.max_connections;
    if bump(&state.shared.connections, 1) > limit {
        bump(&state.shared.connections, -1);
        let body = format!("too many connections (limit {limit})");
        return (StatusCode::SERVICE_UNAVAILABLE, body).into_response();
    }
    let max = state.cfg.max_message_bytes;
    ws.max_message_size(max).max_frame_size(max).on_upgrade(move |socket| async move {
        run_client(socket, &state).await;
        bump(&state.shared.connections, -1);
    })
}

async fn run_client(socket: WebSocket, state: &AppState) {
    let id = state.shared.next_client.fetch_add(1, Ordering::Relaxed) + 1;
    let (tx, mut rx) = mpsc::channel::<Out>(state.cfg.queue_capacity.max(1));
    let (kill_tx, mut kill_rx) = oneshot::channel::<String>();
    if state.hub.send(HubMsg::Join { id, tx, kill: kill_tx }).await.is_err() {
        return;
    }
    let (mut sink, mut stream) = socket.split();
    loop {
        tokio::select! {
            biased;
            reason = &mut kill_rx => {
                let reason = reason.unwrap_or_else(|_| "server closing".to_owned());
                let frame = CloseFrame { code: 1008, reason: reason.into() };
                let _ = sink.send(Message::Close(Some(frame))).await;
                break;
            }
            out = rx.recv() => match out {
                Some(out) => {
                    if sink.send(Message::Text(out.text)).await.is_err() {
                        break;
                    }
                    if let Some(at) = out.upstream_at {
                        let ns = u64::try_from(at.elapsed().as_nanos()).unwrap_or(u64::MAX);
                        if let Ok(mut guard) = state.shared.fanout_ns.lock()
                            && let Some(h) = guard.as_mut()
                        {
                            h.saturating_record(ns.max(1));
                        }
                    }
                }
                None => break,
            },
            msg = stream.next() => match msg {
                Some(Ok(Message::Text(text))) => {
                    let request = HubMsg::Request { id, text: text.to_string(), us_in: now_us() };
                    if state.hub.send(request).await.is_err() {
                        break;
                    }
                }
                Some(Ok(Message::Close(_))) | None => break,
                Some(Ok(_)) => {}
                Some(Err(e)) => {
                    let mut reason = e.to_string();
                    reason.truncate(120);
                    let frame = CloseFrame { code: 1009, reason: reason.into() };
                    let _ = sink.send(Message::Close(Some(frame))).await;
                    break;
                }
            },
        }
    }
    let _ = state.hub.send(HubMsg::Leave { id }).await;
}
