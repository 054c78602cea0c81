//! The downstream front end's HTTP side: the axum router (`GET /metrics`, …) behind the
//! listener in `conn`, which serves WebSocket upgrades at `/ws/api/v2` itself (with the
//! connection and message-size limits) and hands every other request here.
//!
//! Owns: the HTTP routes.
//! Must not: interpret JSON-RPC requests (the hub does, so replies and notifications keep one order).

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use tokio::sync::{mpsc, oneshot, watch};

use crate::hub::HubMsg;
use crate::{ServeConfig, Shared};

#[derive(Clone)]
struct AppState {
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
    let (accept, handoff) =
        match crate::conn::split(listener, Arc::new(cfg), hub.clone(), Arc::clone(&shared), shutdown.clone()) {
            Ok(split) => split,
            Err(e) => {
                tracing::warn!("serve: {e}");
                return;
            }
        };
    let state = AppState { hub, shared };
    let app = Router::new().route("/metrics", get(metrics)).with_state(state);
    let stop = async move {
        let _ = shutdown.wait_for(|s| *s).await;
    };
    let http = async move {
        if let Err(e) = axum::serve(handoff, app).with_graceful_shutdown(stop).await {
            tracing::warn!("serve: {e}");
        }
    };
    tokio::join!(accept, http);
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
