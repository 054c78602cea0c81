//! One client's view of the simulator: authentication, rate credits, heartbeat and
//! cancel-on-disconnect state, and the dispatch of one request to its handler.
//!
//! Owns: the private-method gate (token, scope), the per-request faults (delay, 10028) and the
//! routing of a method to its family. Both the WebSocket and the HTTP front ends call
//! [`handle_text`]/[`handle_call`].
//! Must not: touch the venue (the engine task does) or write to a socket (callers do).
//!
//! # Layout
//! - `connection`: auth, test/hello/status/time, heartbeats, cancel-on-disconnect, logout.
//! - `subscribe`: the subscribe/unsubscribe family, handed to the engine task.
//! - The engine's methods (market data, trading, account reads) are `engine::methods`; what is
//!   neither is answered by `coverage::not_served`.

mod connection;
mod subscribe;

pub use connection::METHODS as CONNECTION_METHODS;
pub use subscribe::METHODS as SUBSCRIBE_METHODS;

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use crate::auth::{Grant, Tokens};
use crate::clock::SimClock;
use crate::engine::{Command, FAMILIES};
use crate::fault::{FaultLog, Faults};
use crate::market::AccountId;
use crate::rpc::{self, RpcError, Timing};
use ticktrade_core::Mono;
use ticktrade_deribit_proto::ratelimit::{Class, Credits, RateLimits, class_of};

/// Deribit's API version string, as `public/test` and `public/hello` report it.
pub const API_VERSION: &str = "1.2.26";
pub use ticktrade_deribit_proto::requests::MAX_REQUEST_BYTES;

/// State shared by every connection.
pub struct Shared {
    pub engine: mpsc::Sender<Command>,
    pub clock: SimClock,
    pub tokens: Mutex<Tokens>,
    pub limits: RateLimits,
    pub testnet: bool,
    pub min_heartbeat_s: u64,
    pub queue_capacity: usize,
    /// Per-response faults (delay, 10028); book/session faults live in the engine.
    pub response_faults: Mutex<Faults>,
    pub fault_log: std::sync::Arc<FaultLog>,
    pub next_session: AtomicU64,
    /// HTTP has no session: its credits are kept per client id ("" = unauthenticated).
    pub http_credits: Mutex<HashMap<String, Credits>>,
    /// Each account's cancel-on-disconnect default (`scope: "account"`), which a connection
    /// takes when it authenticates. One entry per account that set it, so bounded by the
    /// configured API keys.
    pub cancel_on_disconnect_defaults: Mutex<HashMap<AccountId, bool>>,
}

/// One WebSocket connection (or one HTTP request).
#[derive(Debug)]
pub struct Session {
    pub id: u64,
    pub websocket: bool,
    pub grant: Option<Grant>,
    pub token: Option<String>,
    pub credits: Credits,
    /// This connection's cancel-on-disconnect (`scope: "connection"`): when it closes, the
    /// orders it placed are cancelled.
    pub cancel_on_disconnect: bool,
    pub heartbeat: Option<Duration>,
    /// A `test_request` was sent and no `public/test` has arrived since.
    pub awaiting_test: bool,
    pub logged_out: bool,
}

impl Session {
    pub fn new(id: u64, websocket: bool, limits: RateLimits, now: Mono) -> Session {
        Session {
            id,
            websocket,
            grant: None,
            token: None,
            credits: Credits::venue(limits, now.0),
            cancel_on_disconnect: false,
            heartbeat: None,
            awaiting_test: false,
            logged_out: false,
        }
    }

    /// Records the grant the connection now acts under (`public/auth` or an `access_token`
    /// param). Deribit starts "every newly opened connection" at the account's
    /// cancel-on-disconnect default; a connection has no account until it authenticates, so
    /// the default is taken then. Re-authenticating for the same account keeps what the
    /// connection has set since.
    pub fn authenticate(&mut self, shared: &Shared, grant: Grant, token: String) {
        if self.grant.as_ref().map(|g| g.account) != Some(grant.account) {
            let defaults = shared.cancel_on_disconnect_defaults.lock().unwrap_or_else(|e| e.into_inner());
            self.cancel_on_disconnect = defaults.get(&grant.account).copied().unwrap_or(false);
        }
        self.grant = Some(grant);
        self.token = Some(token);
    }
}

/// What to do after a request.
#[derive(Debug, Default)]
pub struct Reply {
    /// The response frame, if any (subscribe responses are written by the engine; logout has none).
    pub text: Option<String>,
    /// Close the session afterwards with this code and reason.
    pub close: Option<(u16, String)>,
    /// Fault: hold the response this long.
    pub delay_ms: u64,
    /// The error code, for the HTTP status.
    pub error_code: Option<i64>,
}

const WEBSOCKET_ONLY: &[&str] = &[
    "public/set_heartbeat",
    "public/disable_heartbeat",
    "public/hello",
    "public/subscribe",
    "public/unsubscribe",
    "public/unsubscribe_all",
    "private/subscribe",
    "private/unsubscribe",
    "private/unsubscribe_all",
    "private/logout",
];

/// Handles one text frame / request body.
pub async fn handle_text(shared: &Shared, session: &mut Session, text: &str) -> Reply {
    let us_in = shared.clock.micros();
    if text.len() > MAX_REQUEST_BYTES {
        return error_reply(shared, None, RpcError::new(-32600, "request entity too large"), us_in);
    }
    // Deribit's envelope rules (no batches, named params, non-JSON → 11050 without an id).
    let request = match ticktrade_deribit_proto::envelope::decode_request(text) {
        Ok(request) => request,
        Err(refused) => {
            tracing::debug!(session = session.id, code = refused.code, "bad request");
            let mut id_text = Vec::new();
            if let Some(id) = refused.id {
                id.write(&mut id_text);
            }
            let id = (!id_text.is_empty()).then(|| String::from_utf8_lossy(&id_text).into_owned());
            let data = refused.data.and_then(|d| serde_json::from_str(d).ok());
            let err = RpcError { code: i64::from(refused.code), message: refused.message.to_owned(), data };
            return error_reply(shared, id.as_deref(), err, us_in);
        }
    };
    let mut id_text = Vec::new();
    request.id.write(&mut id_text);
    let id = String::from_utf8_lossy(&id_text).into_owned();
    handle_call(shared, session, Some(&id), &request.method, request.params, us_in).await
}

fn error_reply(shared: &Shared, id: Option<&str>, err: RpcError, us_in: i64) -> Reply {
    let timing = Timing { us_in, us_out: shared.clock.micros() };
    Reply { text: Some(rpc::error(id, &err, timing, shared.testnet)), error_code: Some(err.code), ..Reply::default() }
}

#[derive(Deserialize)]
struct TokenParam {
    #[serde(default)]
    access_token: Option<String>,
}

/// Handles one decoded call.
pub async fn handle_call(
    shared: &Shared,
    session: &mut Session,
    id: Option<&str>,
    method: &str,
    params: Option<&RawValue>,
    us_in: i64,
) -> Reply {
    // Credits first: a flood is answered 10028 and the session ends, as on Deribit.
    let class = class_of(method);
    let now_ns = shared.clock.mono().0;
    let granted = if session.websocket {
        session.credits.try_take(class, now_ns).is_ok()
    } else {
        let key = session.grant.as_ref().map(|g| g.client_id.clone()).unwrap_or_default();
        let mut all = shared.http_credits.lock().unwrap_or_else(|e| e.into_inner());
        all.entry(key).or_insert_with(|| Credits::venue(shared.limits, now_ns)).try_take(class, now_ns).is_ok()
    };
    let (delay_ms, forced_10028) = shared.response_faults.lock().map(|mut f| f.on_response()).unwrap_or((0, false));
    if forced_10028 {
        shared.fault_log.record("too_many_requests", format!("session {} method {method}", session.id));
    }
    if !granted || forced_10028 {
        let mut reply = error_reply(shared, id, RpcError::too_many_requests(), us_in);
        reply.close = Some((4029, "too_many_requests: request credits exhausted".to_owned()));
        return reply;
    }
    if delay_ms > 0 {
        shared.fault_log.record("delay", format!("session {} method {method} delay_ms {delay_ms}", session.id));
    }
    let mut reply = match dispatch(shared, session, id, method, params, us_in).await {
        Ok(Some(result)) => Reply {
            text: Some(rpc::response(id, &result, Timing { us_in, us_out: shared.clock.micros() }, shared.testnet)),
            ..Reply::default()
        },
        Ok(None) => Reply::default(),
        Err(err) => error_reply(shared, id, err, us_in),
    };
    if method == "private/logout" && session.logged_out {
        reply.close = Some((1000, "logout".to_owned()));
    }
    reply.delay_ms = delay_ms;
    reply
}

fn scope_allows(grant: &Grant, method: &str) -> bool {
    // MMP settings, the currency-pair cancel, combo creation and the self-trading mode change
    // what orders do: Deribit asks `trade:read_write`.
    let writes = matches!(class_of(method), Class::Matching)
        || matches!(
            method,
            "private/set_mmp_config"
                | "private/reset_mmp"
                | "private/cancel_all_by_currency_pair"
                | "private/create_combo"
                | "private/set_self_trading_config"
        );
    if writes {
        return grant.scope.trade_write;
    }
    if method == "private/get_account_summary" {
        return grant.scope.account_read;
    }
    true
}

async fn engine_call(
    shared: &Shared,
    account: Option<u32>,
    connection: Option<u64>,
    method: &str,
    params: Option<&RawValue>,
) -> Result<String, RpcError> {
    let (reply, rx) = oneshot::channel();
    let params = params.map(|p| p.to_owned());
    let command = Command::Call { account, connection, method: method.to_owned(), params, reply };
    shared.engine.send(command).await.map_err(|_| RpcError::new(11094, "internal_server_error"))?;
    rx.await.map_err(|_| RpcError::new(11094, "internal_server_error"))?
}

fn ok() -> Result<Option<String>, RpcError> {
    Ok(Some("\"ok\"".to_owned()))
}

fn text<T: serde::Serialize>(value: &T) -> Result<Option<String>, RpcError> {
    serde_json::to_string(value).map(Some).map_err(|_| RpcError::new(11094, "internal_server_error"))
}

async fn dispatch(
    shared: &Shared,
    session: &mut Session,
    id: Option<&str>,
    method: &str,
    params: Option<&RawValue>,
    us_in: i64,
) -> Result<Option<String>, RpcError> {
    if !session.websocket && WEBSOCKET_ONLY.contains(&method) {
        return Err(RpcError::with_data(
            11050,
            "bad_request",
            serde_json::Value::String("method is available on WebSocket only".into()),
        ));
    }
    let private = method.starts_with("private/");
    // An access_token in params authenticates this request (and, on WS, the connection).
    if private && let Some(token) = rpc::params::<TokenParam>(params).ok().and_then(|p| p.access_token) {
        let connection = session.websocket.then_some(session.id);
        let grant =
            shared.tokens.lock().unwrap_or_else(|e| e.into_inner()).check(shared.clock.utc(), &token, connection)?;
        session.authenticate(shared, grant, token);
    }
    if private {
        let grant = session.grant.as_ref().ok_or_else(RpcError::unauthorized)?;
        // A connection token that expired stops working mid-session too.
        if session.websocket
            && let Some(token) = &session.token
        {
            shared.tokens.lock().unwrap_or_else(|e| e.into_inner()).check(
                shared.clock.utc(),
                token,
                Some(session.id),
            )?;
        }
        if !scope_allows(grant, method) {
            return Err(RpcError::new(13021, "forbidden"));
        }
    }
    let account = session.grant.as_ref().map(|g| g.account);
    if connection::METHODS.contains(&method) {
        return connection::call(shared, session, method, params).await;
    }
    if subscribe::METHODS.contains(&method) {
        return subscribe::call(shared, session, account, id, method, params, us_in).await;
    }
    if FAMILIES.iter().any(|list| list.contains(&method)) {
        // Only a WebSocket session is a connection whose orders cancel-on-disconnect cancels.
        let connection = session.websocket.then_some(session.id);
        return engine_call(shared, account, connection, method, params).await.map(Some);
    }
    Err(crate::coverage::not_served(method))
}
