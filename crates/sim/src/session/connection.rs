//! The session's own methods: authentication, liveness, heartbeats, cancel-on-disconnect and
//! logout. They change only this connection's state (and the token table).
//!
//! Owns: `public/auth`, `public/test`, `public/get_time`, `public/hello`, `public/status`,
//! `public/set_heartbeat`, `public/disable_heartbeat`, the cancel-on-disconnect trio and
//! `private/logout`.
//! Must not: touch the venue or write to a socket.

use std::time::Duration;

use serde_json::value::RawValue;
use ticktrade_deribit_proto::api;

use super::{API_VERSION, Session, Shared, ok, text};
use crate::rpc::{self, RpcError};

/// The methods answered here.
pub const METHODS: &[&str] = &[
    "public/auth",
    "public/test",
    "public/get_time",
    "public/hello",
    "public/status",
    "public/set_heartbeat",
    "public/disable_heartbeat",
    "private/enable_cancel_on_disconnect",
    "private/disable_cancel_on_disconnect",
    "private/get_cancel_on_disconnect",
    "private/logout",
];

/// Answers one of [`METHODS`]; the caller has already applied the private-method gate.
pub async fn call(
    shared: &Shared,
    session: &mut Session,
    method: &str,
    params: Option<&RawValue>,
) -> Result<Option<String>, RpcError> {
    match method {
        "public/auth" => auth(shared, session, params),
        "public/test" => {
            let p: api::TestParams = rpc::params(params)?;
            session.awaiting_test = false;
            if p.expected_result.as_deref() == Some("exception") {
                return Err(RpcError::new(11094, "internal_server_error"));
            }
            text(&api::VersionResult { version: API_VERSION.to_owned() })
        }
        "public/get_time" => Ok(Some(shared.clock.utc().as_millis().to_string())),
        "public/hello" => {
            let _: api::HelloParams = rpc::params(params)?;
            text(&api::VersionResult { version: API_VERSION.to_owned() })
        }
        "public/status" => text(&api::StatusResult { locked: false, locked_currencies: Vec::new() }),
        "public/set_heartbeat" => {
            let p: api::HeartbeatParams = rpc::params(params)?;
            let secs = p.interval.0.to_units(ticktrade_core::Decimal::ONE).unwrap_or(0);
            if secs < shared.min_heartbeat_s as i64 || secs > 3_600 {
                return Err(RpcError::invalid_param("interval", "must be between 10 and 3600"));
            }
            session.heartbeat = Some(Duration::from_secs(secs as u64));
            session.awaiting_test = false;
            ok()
        }
        "public/disable_heartbeat" => {
            session.heartbeat = None;
            session.awaiting_test = false;
            ok()
        }
        "private/enable_cancel_on_disconnect" | "private/disable_cancel_on_disconnect" => {
            let p: api::CancelOnDisconnectParams = rpc::params(params)?;
            let scope = CodScope::of(session, p.scope.as_deref())?;
            let enabled = method == "private/enable_cancel_on_disconnect";
            if scope == CodScope::Account {
                let account = session.grant.as_ref().map(|g| g.account).ok_or_else(RpcError::unauthorized)?;
                shared.cancel_on_disconnect_defaults.lock().unwrap_or_else(|e| e.into_inner()).insert(account, enabled);
            }
            // The account scope is the default of connections opened later, and the method
            // still changes "the connection" it is called on (Deribit's description of both
            // methods), so the current connection follows either scope.
            session.cancel_on_disconnect = enabled;
            ok()
        }
        "private/get_cancel_on_disconnect" => {
            let p: api::CancelOnDisconnectParams = rpc::params(params)?;
            let scope = CodScope::of(session, p.scope.as_deref())?;
            let enabled = match scope {
                CodScope::Connection => session.cancel_on_disconnect,
                CodScope::Account => {
                    let account = session.grant.as_ref().map(|g| g.account).ok_or_else(RpcError::unauthorized)?;
                    let defaults = shared.cancel_on_disconnect_defaults.lock().unwrap_or_else(|e| e.into_inner());
                    // An account that never set it has it off, as a new Deribit account does.
                    defaults.get(&account).copied().unwrap_or(false)
                }
            };
            text(&api::CancelOnDisconnectResult { scope: scope.as_str().to_owned(), enabled })
        }
        "private/logout" => {
            let p: api::LogoutParams = rpc::params(params)?;
            if p.invalidate_token.unwrap_or(true)
                && let Some(token) = &session.token
            {
                shared.tokens.lock().unwrap_or_else(|e| e.into_inner()).revoke(token);
            }
            session.logged_out = true;
            Ok(None)
        }
        _ => Err(RpcError::method_not_found()),
    }
}

/// The `scope` of the cancel-on-disconnect methods.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum CodScope {
    /// This connection's setting (the default).
    Connection,
    /// The account's default for the connections opened after.
    Account,
}

impl CodScope {
    /// Parses `scope`; Deribit's "Scope `connection` can be used only when working via
    /// Websocket" refuses it over HTTP (with the error of the other WebSocket-only calls).
    fn of(session: &Session, scope: Option<&str>) -> Result<CodScope, RpcError> {
        let scope = match scope {
            None | Some("connection") => CodScope::Connection,
            Some("account") => CodScope::Account,
            Some(_) => return Err(RpcError::invalid_param("scope", "invalid value")),
        };
        if scope == CodScope::Connection && !session.websocket {
            return Err(RpcError::with_data(
                11050,
                "bad_request",
                serde_json::Value::String("scope connection is available on WebSocket only".into()),
            ));
        }
        Ok(scope)
    }

    fn as_str(self) -> &'static str {
        match self {
            CodScope::Connection => "connection",
            CodScope::Account => "account",
        }
    }
}

fn auth(shared: &Shared, session: &mut Session, params: Option<&RawValue>) -> Result<Option<String>, RpcError> {
    let p: api::AuthParams = rpc::params(params)?;
    let connection = session.websocket.then_some(session.id);
    let outcome =
        shared.tokens.lock().unwrap_or_else(|e| e.into_inner()).authenticate(shared.clock.utc(), &p, connection)?;
    let result = api::AuthResult {
        access_token: outcome.access_token.clone(),
        expires_in: outcome.expires_in,
        refresh_token: outcome.refresh_token.clone(),
        scope: outcome.grant.scope.render(),
        token_type: "bearer".to_owned(),
        enabled_features: Vec::new(),
        state: p.state.clone(),
        sid: None,
    };
    if session.websocket {
        session.authenticate(shared, outcome.grant, outcome.access_token);
    }
    text(&result)
}
