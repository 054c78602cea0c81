//! The live session: connect, set up (hello, heartbeat, auth, cancel-on-disconnect,
//! resubscribe, reconcile), read frames, keep alive, and reconnect with backoff when anything
//! breaks.
//!
//! Owns: `Inner` (all shared session state), its setup, reconciliation and frame handling;
//! `connection` owns the supervisor, reader and keepalive tasks of each connection.
//! Must not: print or log a secret or token (they live in `Secret`), or block the reader on a
//! request (anything that needs an answer is spawned).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::StreamExt;
use futures_util::stream::SplitStream;
use serde::de::DeserializeOwned;
use ticktrade_deribit_proto::api;
use ticktrade_deribit_proto::client::CurrencyQuery;
use ticktrade_deribit_proto::envelope::{Heartbeat, Id, Incoming, classify};
use ticktrade_deribit_proto::error::code;
use ticktrade_deribit_proto::ratelimit::{Class, class_of};
use ticktrade_deribit_proto::signature::{Secret, client_signature};
use ticktrade_net::{Backoff, Message, WsStream, connect_ws};
use tokio::sync::{Notify, broadcast, watch};

use super::books::{BookOutcome, LocalBooks};
use super::limiter::Limiter;
use super::rpc::{Answer, Reply, Rpc, RpcFailure};
use super::{AuthMethod, DeribitConfig, convert};
use crate::oms::OrderTracker;
use crate::venue::{ConnState, Fill, InstrumentInfo, OrderView, Subscription, VenueError, VenueEvent};

mod connection;

pub(crate) use connection::supervise;

/// Whether a call waits for the session to be ready (user calls) or runs during setup.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    Ready,
    Setup,
}

struct Token {
    refresh: Secret,
    /// On tokio's clock, like the keepalive timer that checks it (tests pause that clock).
    expires_at: tokio::time::Instant,
    lifetime: Duration,
}

pub(crate) struct Inner {
    pub(crate) config: DeribitConfig,
    pub(crate) rpc: Rpc,
    pub(crate) state: watch::Sender<ConnState>,
    pub(crate) events: broadcast::Sender<VenueEvent>,
    pub(crate) subs: Mutex<BTreeMap<Subscription, String>>,
    pub(crate) books: Mutex<LocalBooks>,
    pub(crate) instruments: Mutex<HashMap<String, InstrumentInfo>>,
    pub(crate) oms: Mutex<OrderTracker>,
    limiter: Mutex<Limiter>,
    token: Mutex<Option<Token>>,
    /// Bumped by every successful `public/auth`: a request that failed with 13009 re-auths
    /// only if nobody else has since it was sent.
    auth_epoch: AtomicU64,
    /// One re-authentication at a time.
    reauth: tokio::sync::Mutex<()>,
    pub(crate) authenticated: AtomicBool,
    pub(crate) closed: AtomicBool,
    pub(crate) connects: AtomicU64,
    pub(crate) last_error: Mutex<Option<VenueError>>,
    kill: Mutex<Option<Arc<Notify>>>,
    resyncing: Mutex<HashSet<String>>,
    origin: Instant,
    pub(crate) label_prefix: String,
    pub(crate) next_label: AtomicU64,
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0));
    h.finish()
}

impl Inner {
    pub(crate) fn new(config: DeribitConfig) -> Inner {
        let (state, _) = watch::channel(ConnState::Disconnected);
        let (events, _) = broadcast::channel(4_096);
        Inner {
            limiter: Mutex::new(Limiter::new(config.limits)),
            config,
            rpc: Rpc::new(),
            state,
            events,
            subs: Mutex::new(BTreeMap::new()),
            books: Mutex::new(LocalBooks::default()),
            instruments: Mutex::new(HashMap::new()),
            oms: Mutex::new(OrderTracker::new()),
            token: Mutex::new(None),
            auth_epoch: AtomicU64::new(0),
            reauth: tokio::sync::Mutex::new(()),
            authenticated: AtomicBool::new(false),
            closed: AtomicBool::new(false),
            connects: AtomicU64::new(0),
            last_error: Mutex::new(None),
            kill: Mutex::new(None),
            resyncing: Mutex::new(HashSet::new()),
            origin: Instant::now(),
            label_prefix: format!("tt{:08x}", random_u64() as u32),
            next_label: AtomicU64::new(1),
        }
    }

    pub(crate) fn emit(&self, event: VenueEvent) {
        let _ = self.events.send(event);
    }

    fn set_state(&self, state: ConnState) {
        // The event first: whoever sees the new state (e.g. `connect` returning) has a
        // receiver that either got the event or was created after it.
        self.emit(VenueEvent::Connection(state));
        self.state.send_replace(state);
    }

    pub(crate) fn throttled(&self) -> u64 {
        self.limiter.lock().map(|l| l.throttled()).unwrap_or(0)
    }

    /// Waits until the session is ready (or closed, or `timeout` passes).
    pub(crate) async fn wait_ready(&self, timeout: Duration) -> Result<(), VenueError> {
        let mut rx = self.state.subscribe();
        let wait = rx.wait_for(|s| matches!(s, ConnState::Ready | ConnState::Closed));
        match tokio::time::timeout(timeout, wait).await {
            Ok(Ok(state)) if *state == ConnState::Ready => Ok(()),
            Ok(_) => Err(self
                .last_error
                .lock()
                .ok()
                .and_then(|e| e.clone())
                .unwrap_or_else(|| VenueError::Disconnected("session closed".into()))),
            Err(_) => {
                // Say why the attempts so far failed (DNS, refused, TLS…), not only that they did.
                let last = self.last_error.lock().ok().and_then(|e| e.clone());
                let why = last.map_or_else(|| "no answer".to_owned(), |e| e.to_string());
                Err(VenueError::Disconnected(format!("not connected after {} ms: {why}", timeout.as_millis())))
            }
        }
    }

    async fn take_credits(&self, class: Class) {
        loop {
            let now_ns = self.origin.elapsed().as_nanos() as u64;
            let wait = match self.limiter.lock() {
                Ok(mut limiter) => limiter.try_take(class, now_ns),
                Err(_) => Ok(()),
            };
            match wait {
                Ok(()) => return,
                Err(wait_ns) => tokio::time::sleep(Duration::from_nanos(wait_ns)).await,
            }
        }
    }

    /// One request: wait for readiness (user calls), take credits, send, await the answer.
    /// A private call refused with 13009 (the access token expired or was revoked
    /// mid-session) re-authenticates on the same connection and is sent once more: the
    /// venue refused it before acting on it, so the retry cannot duplicate anything.
    pub(crate) async fn call_raw(
        &self,
        method: &str,
        params: &impl serde::Serialize,
        gate: Gate,
    ) -> Result<Answer, VenueError> {
        if gate == Gate::Ready && *self.state.borrow() != ConnState::Ready {
            self.wait_ready(self.config.request_timeout * 2).await?;
        }
        let epoch = self.auth_epoch.load(Ordering::Acquire);
        let answer = self.send(method, params).await;
        match &answer {
            Err(VenueError::Rejected { code: c, .. })
                if *c == i64::from(code::UNAUTHORIZED)
                    && gate == Gate::Ready
                    && method.starts_with("private/")
                    && method != "private/logout"
                    && self.config.credentials.is_some() =>
            {
                tracing::info!(method, "access token refused (13009); re-authenticating and retrying once");
                Box::pin(self.reauthenticate(epoch)).await?;
                self.send(method, params).await
            }
            _ => answer,
        }
    }

    /// Re-authenticates after a 13009 unless another request already did since `epoch`.
    async fn reauthenticate(&self, epoch: u64) -> Result<(), VenueError> {
        let _one = self.reauth.lock().await;
        if self.auth_epoch.load(Ordering::Acquire) != epoch {
            return Ok(());
        }
        self.authenticate(Gate::Setup, false).await?;
        // The new token starts a new authorization; ask again for cancel-on-disconnect.
        self.set_cancel_on_disconnect().await
    }

    async fn set_cancel_on_disconnect(&self) -> Result<(), VenueError> {
        let scope = api::CancelOnDisconnectParams { scope: Some("connection".into()) };
        let method = if self.config.cancel_on_disconnect {
            "private/enable_cancel_on_disconnect"
        } else {
            "private/disable_cancel_on_disconnect"
        };
        let _: (serde_json::Value, _) = self.call(method, &scope, Gate::Setup).await?;
        Ok(())
    }

    /// Takes credits, sends, awaits the answer; notes a 10028.
    async fn send(&self, method: &str, params: &impl serde::Serialize) -> Result<Answer, VenueError> {
        self.take_credits(class_of(method)).await;
        let started = Instant::now();
        let answer = self.rpc.call(method, params, self.config.request_timeout, started).await;
        if let Err(VenueError::Rejected { code: c, .. }) = &answer
            && *c == i64::from(code::TOO_MANY_REQUESTS)
        {
            self.on_too_many_requests();
        }
        answer
    }

    /// Typed call.
    pub(crate) async fn call<T: DeserializeOwned>(
        &self,
        method: &str,
        params: &impl serde::Serialize,
        gate: Gate,
    ) -> Result<(T, crate::venue::RoundTrip), VenueError> {
        let answer = self.call_raw(method, params, gate).await?;
        let decode_start = Instant::now();
        let value = serde_json::from_str(&answer.result)
            .map_err(|e| VenueError::Protocol { method: method.to_owned(), reason: e.to_string() })?;
        let mut timing = answer.timing;
        timing.decode_ns = super::rpc::nanos(decode_start.elapsed());
        Ok((value, timing))
    }

    fn on_too_many_requests(&self) {
        let now_ns = self.origin.elapsed().as_nanos() as u64;
        if let Ok(mut limiter) = self.limiter.lock() {
            limiter.on_too_many_requests(now_ns);
        }
        let rule = self.config.limits.non_matching;
        let refill_ms = rule.cost * 1_000 / rule.refill_per_s.max(1);
        tracing::warn!(retry_after_ms = refill_ms, "venue answered 10028 too_many_requests; backing off");
        self.emit(VenueEvent::Throttled { retry_after_ms: refill_ms });
        // Deribit ends the session after 10028; the supervisor reconnects after its backoff.
    }

    /// Forces the current connection down (the supervisor reconnects).
    pub(crate) fn kill_connection(&self) {
        if let Some(kill) = self.kill.lock().ok().and_then(|k| k.clone()) {
            kill.notify_one();
        }
    }

    /// The channel name of a subscription on this session.
    pub(crate) fn channel_of(&self, sub: &Subscription) -> String {
        let authed = self.authenticated.load(Ordering::Relaxed);
        let interval = if authed { "raw" } else { "100ms" };
        match sub {
            Subscription::Book(i) => format!("book.{i}.{interval}"),
            Subscription::Trades(i) => format!("trades.{i}.{interval}"),
            Subscription::Ticker(i) => format!("ticker.{i}.100ms"),
            Subscription::UserOrders => "user.orders.any.any.raw".to_owned(),
            Subscription::UserTrades => "user.trades.any.any.raw".to_owned(),
            Subscription::UserChanges => "user.changes.any.any.raw".to_owned(),
        }
    }

    /// Subscribes channels (split by public/private) and returns those the venue confirmed.
    pub(crate) async fn subscribe_channels(&self, channels: &[String], gate: Gate) -> Result<Vec<String>, VenueError> {
        let (private, public): (Vec<String>, Vec<String>) =
            channels.iter().cloned().partition(|c| c.starts_with("user."));
        let mut confirmed = Vec::new();
        for (method, list) in [("public/subscribe", public), ("private/subscribe", private)] {
            if list.is_empty() {
                continue;
            }
            let params = api::SubscribeParams { channels: list, label: None };
            let (got, _): (Vec<String>, _) = self.call(method, &params, gate).await?;
            confirmed.extend(got);
        }
        Ok(confirmed)
    }

    pub(crate) async fn unsubscribe_channels(
        &self,
        channels: &[String],
        gate: Gate,
    ) -> Result<Vec<String>, VenueError> {
        let (private, public): (Vec<String>, Vec<String>) =
            channels.iter().cloned().partition(|c| c.starts_with("user."));
        let mut done = Vec::new();
        for (method, list) in [("public/unsubscribe", public), ("private/unsubscribe", private)] {
            if list.is_empty() {
                continue;
            }
            let params = api::SubscribeParams { channels: list, label: None };
            let (got, _): (Vec<String>, _) = self.call(method, &params, gate).await?;
            done.extend(got);
        }
        Ok(done)
    }

    /// `public/auth`: `client_signature` by default, `client_credentials` on request, or
    /// `refresh_token` when refreshing.
    pub(crate) async fn authenticate(&self, gate: Gate, refresh: bool) -> Result<(), VenueError> {
        let Some(creds) = &self.config.credentials else {
            return Err(VenueError::NotAuthenticated("no credentials configured".into()));
        };
        let refresh_token =
            if refresh { self.token.lock().ok().and_then(|t| t.as_ref().map(|t| t.refresh.clone())) } else { None };
        let params = match (refresh_token, self.config.auth_method) {
            (Some(token), _) => api::AuthParams {
                grant_type: "refresh_token".into(),
                refresh_token: Some(token.expose().to_owned()),
                ..Default::default()
            },
            (None, AuthMethod::ClientSignature) => {
                let timestamp = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0);
                let nonce = format!("{:016x}", random_u64());
                let signature = client_signature(&creds.client_secret, timestamp, &nonce, "");
                api::AuthParams {
                    grant_type: "client_signature".into(),
                    client_id: Some(creds.client_id.clone()),
                    timestamp: Some(timestamp as i64),
                    signature: Some(signature),
                    nonce: Some(nonce),
                    data: Some(String::new()),
                    ..Default::default()
                }
            }
            (None, AuthMethod::ClientCredentials) => api::AuthParams {
                grant_type: "client_credentials".into(),
                client_id: Some(creds.client_id.clone()),
                client_secret: Some(creds.client_secret.expose().to_owned()),
                ..Default::default()
            },
        };
        let result: Result<(api::AuthResult, _), _> = self.call("public/auth", &params, gate).await;
        let auth = match result {
            Ok((auth, _)) => auth,
            Err(err) => {
                self.authenticated.store(false, Ordering::Relaxed);
                return Err(match err {
                    VenueError::Rejected { code, message, meaning, .. } => VenueError::NotAuthenticated(format!(
                        "{code} {message}{}",
                        meaning.map(|m| format!(" ({m})")).unwrap_or_default()
                    )),
                    other => other,
                });
            }
        };
        if auth.access_token.is_empty() {
            self.authenticated.store(false, Ordering::Relaxed);
            return Err(VenueError::NotAuthenticated("venue returned no access token".into()));
        }
        let lifetime = Duration::from_secs(u64::try_from(auth.expires_in).unwrap_or(0).max(1));
        if let Ok(mut token) = self.token.lock() {
            *token = Some(Token {
                refresh: Secret::new(auth.refresh_token),
                expires_at: tokio::time::Instant::now() + lifetime,
                lifetime,
            });
        }
        self.authenticated.store(true, Ordering::Relaxed);
        self.auth_epoch.fetch_add(1, Ordering::AcqRel);
        tracing::debug!(refresh, expires_in_s = lifetime.as_secs(), "authenticated");
        Ok(())
    }

    /// Everything a fresh connection needs before it is `Ready`.
    async fn setup(self: &Arc<Self>) -> Result<(), VenueError> {
        let hello =
            api::HelloParams { client_name: "ticktrade".into(), client_version: env!("CARGO_PKG_VERSION").into() };
        let _: (api::VersionResult, _) = self.call("public/hello", &hello, Gate::Setup).await?;
        let hb = api::HeartbeatParams { interval: api::Num::int(self.config.heartbeat_s as i64) };
        let _: (serde_json::Value, _) = self.call("public/set_heartbeat", &hb, Gate::Setup).await?;
        if self.config.credentials.is_some() {
            self.authenticate(Gate::Setup, false).await?;
            self.set_cancel_on_disconnect().await?;
            if let Ok(mut subs) = self.subs.lock() {
                subs.entry(Subscription::UserChanges).or_default();
            }
        }
        // Resubscribe everything (books start stale and resync from the first snapshot).
        let subs: Vec<Subscription> = self.subs.lock().map(|s| s.keys().cloned().collect()).unwrap_or_default();
        let channels: Vec<String> = subs.iter().map(|s| self.channel_of(s)).collect();
        if let Ok(mut map) = self.subs.lock() {
            for (sub, channel) in subs.iter().zip(&channels) {
                map.insert(sub.clone(), channel.clone());
            }
        }
        if !channels.is_empty() {
            self.subscribe_channels(&channels, Gate::Setup).await?;
        }
        if self.authenticated.load(Ordering::Relaxed) {
            self.reconcile().await?;
        }
        Ok(())
    }

    /// Brings orders and positions up to date with the venue after a (re)connect.
    async fn reconcile(&self) -> Result<(), VenueError> {
        let (open, _): (Vec<api::Order>, _) =
            self.call("private/get_open_orders", &api::FilterParams::default(), Gate::Setup).await?;
        let open: Vec<OrderView> = open.into_iter().map(convert::order).collect();
        let missing = self.oms.lock().map(|mut oms| oms.reconcile_open(open)).unwrap_or_default();
        for order_id in missing {
            let params = api::OrderIdParams { order_id };
            let (order, _): (api::Order, _) = self.call("private/get_order_state", &params, Gate::Setup).await?;
            let view = convert::order(order);
            if let Ok(mut oms) = self.oms.lock() {
                oms.apply_order(view.clone());
            }
            self.emit(VenueEvent::Order(view));
        }
        let params = CurrencyQuery { currency: "any".into(), kind: None };
        let (positions, _): (Vec<api::Position>, _) = self.call("private/get_positions", &params, Gate::Setup).await?;
        if let Ok(mut oms) = self.oms.lock() {
            oms.reset_positions(positions.into_iter().map(convert::position));
        }
        Ok(())
    }

    /// Refetches a stale book: unsubscribe + subscribe, whose first notification is a
    /// fresh snapshot (a second subscribe alone does not resend one).
    fn resync(self: &Arc<Self>, instrument: String) {
        let first = self.resyncing.lock().map(|mut r| r.insert(instrument.clone())).unwrap_or(false);
        if !first {
            return;
        }
        tracing::info!(%instrument, "book sequence gap; resyncing from a fresh snapshot");
        let inner = self.clone();
        tokio::spawn(async move {
            let channel = inner.channel_of(&Subscription::Book(instrument.clone()));
            let _ = inner.unsubscribe_channels(std::slice::from_ref(&channel), Gate::Ready).await;
            let _ = inner.subscribe_channels(std::slice::from_ref(&channel), Gate::Ready).await;
            if let Ok(mut r) = inner.resyncing.lock() {
                r.remove(&instrument);
            }
        });
    }

    fn on_text(self: &Arc<Self>, text: &str, received: Instant) {
        match classify(text) {
            Ok(Incoming::Response(response)) => {
                let Some(Id::Num(id)) = response.id else {
                    self.rpc.unmatched.fetch_add(1, Ordering::Relaxed);
                    return;
                };
                let outcome = match response.outcome {
                    Ok(raw) => Ok(raw.get().to_owned()),
                    Err(e) => Err(RpcFailure {
                        code: e.code,
                        message: e.message.into_owned(),
                        data: e.data.map(|d| d.get().to_owned()),
                    }),
                };
                let reply = Reply { outcome, us_in: response.us_in, us_out: response.us_out, received };
                self.rpc.resolve(u64::try_from(id).unwrap_or(0), reply);
            }
            Ok(Incoming::Heartbeat(Heartbeat::TestRequest)) => {
                let inner = self.clone();
                tokio::spawn(async move {
                    let _ = inner.rpc.notify("public/test", &api::TestParams::default()).await;
                });
            }
            Ok(Incoming::Heartbeat(Heartbeat::Heartbeat)) => {}
            Ok(Incoming::Notification(n)) => self.on_notification(n.channel, n.data.get(), text),
            // A malformed frame is dropped; the session keeps going (books detect any loss).
            Err(_) => {
                self.rpc.unmatched.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    fn on_notification(self: &Arc<Self>, channel: &str, data: &str, frame: &str) {
        let mut parts = channel.split('.');
        let kind = parts.next().unwrap_or_default();
        if kind == "book" {
            let instrument = parts.next().unwrap_or_default();
            let outcome = match self.books.lock() {
                Ok(mut books) => books.on_frame(instrument, frame.as_bytes()),
                Err(_) => BookOutcome::Ignored,
            };
            match outcome {
                BookOutcome::Applied { instrument, change_id } => {
                    self.emit(VenueEvent::BookUpdated { instrument, change_id })
                }
                BookOutcome::Synced { instrument, change_id } => {
                    self.emit(VenueEvent::BookSynced { instrument, change_id })
                }
                BookOutcome::Stale { instrument } => {
                    self.emit(VenueEvent::BookStale { instrument: instrument.clone() });
                    self.resync(instrument);
                }
                BookOutcome::Ignored => {}
            }
            return;
        }
        match (kind, parts.next()) {
            ("trades", _) => {
                if let Ok(trades) = serde_json::from_str::<Vec<api::PublicTrade>>(data) {
                    for trade in trades {
                        self.emit(VenueEvent::Trade(convert::public_trade(trade)));
                    }
                }
            }
            ("ticker", _) => {
                if let Ok(ticker) = serde_json::from_str::<api::Ticker>(data) {
                    self.emit(VenueEvent::Ticker(convert::ticker(ticker)));
                }
            }
            ("user", Some("orders")) => {
                let orders = serde_json::from_str::<Vec<api::Order>>(data)
                    .or_else(|_| serde_json::from_str::<api::Order>(data).map(|o| vec![o]))
                    .unwrap_or_default();
                self.on_orders(orders);
            }
            ("user", Some("trades")) => {
                let trades = serde_json::from_str::<Vec<api::UserTrade>>(data).unwrap_or_default();
                self.on_fills(trades);
            }
            ("user", Some("changes")) => {
                if let Ok(changes) = serde_json::from_str::<api::UserChanges>(data) {
                    self.on_orders(changes.orders);
                    self.on_fills(changes.trades);
                    for position in changes.positions {
                        let view = convert::position(position);
                        if let Ok(mut oms) = self.oms.lock() {
                            oms.apply_position(view.clone());
                        }
                        self.emit(VenueEvent::Position(view));
                    }
                }
            }
            _ => {}
        }
    }

    pub(crate) fn on_orders(&self, orders: Vec<api::Order>) {
        for order in orders {
            self.track_order(convert::order(order));
        }
    }

    pub(crate) fn on_fills(&self, trades: Vec<api::UserTrade>) {
        for trade in trades {
            self.track_fill(convert::fill(trade));
        }
    }

    /// Merges an order state into the tracker and emits it when it changed anything, whether
    /// it came from a notification or from an RPC result: whichever of the two arrives first
    /// produces the one event, the other is a duplicate.
    pub(crate) fn track_order(&self, view: OrderView) {
        let changed = self.oms.lock().map(|mut oms| oms.apply_order(view.clone())).unwrap_or(false);
        if changed {
            self.emit(VenueEvent::Order(view));
        }
    }

    /// Like `track_order`, for a fill.
    pub(crate) fn track_fill(&self, fill: Fill) {
        let new = self.oms.lock().map(|mut oms| oms.apply_fill(fill.clone())).unwrap_or(false);
        if new {
            self.emit(VenueEvent::Fill(fill));
        }
    }
}
