//! The subscription methods: they hand the channel list to the engine task, which owns every
//! session's subscriptions and writes the reply itself (so the reply precedes the first
//! notification on the socket).
//!
//! Owns: `public|private/subscribe`, `…/unsubscribe`, `…/unsubscribe_all`.
//! Must not: keep subscription state of its own or write to a socket.

use serde_json::value::RawValue;
use tokio::sync::oneshot;

use super::{Session, Shared};
use crate::engine::{Command, SubscribeRequest};
use crate::market::AccountId;
use crate::rpc::{self, RpcError};
use ticktrade_deribit_proto::api;

/// The methods answered here.
pub const METHODS: &[&str] = &[
    "public/subscribe",
    "private/subscribe",
    "public/unsubscribe",
    "private/unsubscribe",
    "public/unsubscribe_all",
    "private/unsubscribe_all",
];

fn engine_gone() -> RpcError {
    RpcError::new(11094, "internal_server_error")
}

/// Answers one of [`METHODS`]; `Ok(None)`: the engine wrote the reply.
pub async fn call(
    shared: &Shared,
    session: &Session,
    account: Option<AccountId>,
    id: Option<&str>,
    method: &str,
    params: Option<&RawValue>,
    us_in: i64,
) -> Result<Option<String>, RpcError> {
    if method.ends_with("/subscribe") {
        let p: api::SubscribeParams = rpc::params(params)?;
        let (reply, rx) = oneshot::channel();
        let request = SubscribeRequest {
            session: session.id,
            account,
            channels: p.channels,
            label: p.label,
            id: id.map(str::to_owned),
            us_in,
        };
        shared.engine.send(Command::Subscribe { request, reply }).await.map_err(|_| engine_gone())?;
        rx.await.map_err(|_| engine_gone())??;
        return Ok(None);
    }
    let channels =
        if method.ends_with("_all") { None } else { Some(rpc::params::<api::SubscribeParams>(params)?.channels) };
    let (reply, rx) = oneshot::channel();
    let command = Command::Unsubscribe { session: session.id, channels, id: id.map(str::to_owned), us_in, reply };
    shared.engine.send(command).await.map_err(|_| engine_gone())?;
    let _ = rx.await;
    Ok(None)
}
