//! The HTTP front end: `GET|POST /api/v2/{public,private}/{method}` and `POST /api/v2`.
//!
//! Owns: turning a query string or body into a JSON-RPC call (query values become JSON
//! numbers/booleans/arrays when they parse as such, strings otherwise), the `Authorization`
//! header (Bearer, Basic, `deri-hmac-sha256` over `METHOD\nURI\nBODY\n`), and the HTTP status
//! (200, 400 for JSON-RPC errors as Deribit does, 429 for 10028, 413 for big bodies).
//! Must not: keep state between requests beyond the shared credit buckets.

use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::value::RawValue;

use crate::rpc::{self, RpcError, Timing};
use crate::session::{MAX_REQUEST_BYTES, Reply, Session, Shared, handle_call};

/// A JSON-RPC body as HTTP accepts it: the path may name the method, and the id is optional.
#[derive(serde::Deserialize)]
struct Request<'a> {
    #[serde(default, borrow)]
    id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    #[serde(default, borrow)]
    params: Option<&'a RawValue>,
}

/// A query string as a JSON object text.
pub fn query_to_json(query: &str) -> String {
    let mut out = String::from("{");
    for (i, (key, value)) in form_urlencoded::parse(query.as_bytes()).enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::Value::String(key.into_owned()).to_string());
        out.push(':');
        let raw_ok = serde_json::from_str::<&RawValue>(&value).is_ok() && !value.starts_with('"');
        if raw_ok {
            out.push_str(&value);
        } else {
            out.push_str(&serde_json::Value::String(value.into_owned()).to_string());
        }
    }
    out.push('}');
    out
}

fn respond(reply: Reply) -> Response {
    let status = match reply.error_code {
        None => StatusCode::OK,
        Some(10028) => StatusCode::TOO_MANY_REQUESTS,
        Some(-32600) => StatusCode::PAYLOAD_TOO_LARGE,
        Some(_) => StatusCode::BAD_REQUEST,
    };
    let body = reply.text.unwrap_or_default();
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

fn error(shared: &Shared, id: Option<&str>, err: RpcError, us_in: i64) -> Response {
    let timing = Timing { us_in, us_out: shared.clock.micros() };
    respond(Reply {
        text: Some(rpc::error(id, &err, timing, shared.testnet)),
        error_code: Some(err.code),
        ..Reply::default()
    })
}

/// Serves any `/api/v2…` request.
pub async fn serve(
    State(shared): State<Arc<Shared>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let us_in = shared.clock.micros();
    if body.len() > MAX_REQUEST_BYTES {
        return error(&shared, None, RpcError::new(-32600, "request entity too large"), us_in);
    }
    let Ok(body_text) = std::str::from_utf8(&body) else {
        return error(&shared, None, RpcError::bad_request("invalid json"), us_in);
    };
    let path = uri.path().trim_end_matches('/');
    let path_method = path.strip_prefix("/api/v2/").filter(|m| m.starts_with("public/") || m.starts_with("private/"));
    // Params from the query string, or from a JSON-RPC body.
    let query_params = uri.query().map(query_to_json);
    let request: Option<Request<'_>> = if body_text.trim().is_empty() {
        None
    } else {
        match serde_json::from_str(body_text) {
            Ok(request) => Some(request),
            Err(_) => return error(&shared, None, RpcError::bad_request("invalid json"), us_in),
        }
    };
    let id = request.as_ref().and_then(|r| r.id).map(|raw| raw.get().to_owned());
    let Some(rpc_method) = path_method
        .map(str::to_owned)
        .or_else(|| request.as_ref().and_then(|r| r.method.as_deref().map(str::to_owned)))
    else {
        return error(&shared, id.as_deref(), RpcError::method_not_found(), us_in);
    };
    let query_raw = match query_params.map(RawValue::from_string).transpose() {
        Ok(raw) => raw,
        Err(_) => return error(&shared, id.as_deref(), RpcError::bad_request("invalid query"), us_in),
    };
    let params: Option<&RawValue> = request.as_ref().and_then(|r| r.params).or(query_raw.as_deref());

    let mut session = Session::new(0, false, shared.limits, shared.clock.mono());
    if let Some(auth) = headers.get(header::AUTHORIZATION).and_then(|v| v.to_str().ok()) {
        let uri_text = uri.path_and_query().map_or(uri.path(), |pq| pq.as_str());
        let checked = shared.tokens.lock().unwrap_or_else(|e| e.into_inner()).check_header(
            shared.clock.utc(),
            auth,
            method.as_str(),
            uri_text,
            body_text,
        );
        match checked {
            Ok(grant) => session.grant = Some(grant),
            Err(err) if rpc_method.starts_with("private/") => return error(&shared, id.as_deref(), err, us_in),
            Err(_) => {}
        }
    }
    let reply = handle_call(&shared, &mut session, id.as_deref(), &rpc_method, params, us_in).await;
    if reply.delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(reply.delay_ms)).await;
    }
    respond(reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_values_become_json() {
        let json =
            query_to_json("instrument_name=BTC-PERPETUAL&amount=10&post_only=true&label=007&channels=%5B%22a%22%5D");
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(value["instrument_name"], "BTC-PERPETUAL");
        assert_eq!(value["amount"], 10);
        assert_eq!(value["post_only"], true);
        assert_eq!(value["label"], "007");
        assert_eq!(value["channels"][0], "a");
    }
}
