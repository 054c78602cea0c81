//! The downstream front end's HTTP side: the axum router (`GET /metrics`, …) behind the
//! listener in `conn`, which serves WebSocket upgrades at `/ws/api/v2` itself (with the
//! connection and message-size limits) and hands every other request here.
//!
//! Owns: the HTTP routes.
//! Must not: interpret JSON-RPC requests (the hub does, so replies and notifications keep one order).

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, State};
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
    let app = Router::new()
        .route("/metrics", get(metrics))
        .merge(crate::web::routes())
        .route("/api/v2/public/{method}", get(rest))
        .with_state(state);
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

/// `GET /api/v2/public/{method}?a=1&b=x`: the query becomes the JSON params (numbers and
/// booleans as such), answered by the hub (locally or relayed upstream).
async fn rest(
    State(state): State<AppState>,
    Path(method): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
) -> Response {
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return (StatusCode::BAD_REQUEST, "bad method name").into_response();
    }
    let mut params = serde_json::Map::new();
    for (key, value) in query {
        let value = match value.as_str() {
            "true" => serde_json::Value::Bool(true),
            "false" => serde_json::Value::Bool(false),
            v => match serde_json::from_str::<serde_json::Number>(v) {
                Ok(n) if !v.starts_with('+') => serde_json::Value::Number(n),
                _ => serde_json::Value::String(value),
            },
        };
        params.insert(key, value);
    }
    let params = serde_json::Value::Object(params).to_string();
    let (tx, rx) = oneshot::channel();
    if state.hub.send(HubMsg::Rest { method, params, reply: tx }).await.is_err() {
        return (StatusCode::SERVICE_UNAVAILABLE, "hub stopped").into_response();
    }
    match tokio::time::timeout(std::time::Duration::from_secs(10), rx).await {
        Ok(Ok(text)) => {
            let status =
                if text.starts_with(r#"{"jsonrpc":"2.0","error""#) { StatusCode::BAD_REQUEST } else { StatusCode::OK };
            (status, [(axum::http::header::CONTENT_TYPE, "application/json")], text).into_response()
        }
        _ => (StatusCode::GATEWAY_TIMEOUT, "upstream did not answer").into_response(),
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
