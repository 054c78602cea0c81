//! The Deribit WebSocket JSON-RPC client, implementing `Venue`.
//!
//! Owns: the mapping of each `Venue` method to Deribit methods and params, idempotent order
//! placement through client labels, the session configuration.
//! Must not: write or parse JSON by hand (deribit-proto's types do), print credentials.
//!
//! # Layout
//! - `session`: connect, setup, reader, keepalive, reconnect (the supervisor).
//! - `rpc`: ids, pending table, timeouts, the write path.
//! - `books`: local books from `book.*` with gap detection.
//! - `limiter`: Deribit's credit buckets on our side.
//! - `convert`: Deribit objects ↔ venue types.

mod books;
mod convert;
pub mod limiter;
mod rpc;
mod session;

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub use crate::venue::Secret;
use ticktrade_core::Side;
use ticktrade_deribit_proto::api::{self, Num};
use ticktrade_deribit_proto::client::{BookLevels, CurrencyQuery};
use ticktrade_deribit_proto::instrument::parse_instrument;
use ticktrade_net::ConnectOptions;
use tokio::sync::broadcast;

use session::{Gate, Inner};
pub use ticktrade_deribit_proto::ratelimit::RateLimits;

use crate::venue::{
    Balance, BookSnapshot, CancelScope, ConnState, EditRequest, Fill, Filter, InstrumentInfo, OrderRef, OrderRequest,
    OrderView, Placed, PositionView, PublicTrade, RoundTrip, SessionInfo, Subscription, TickerView, Venue, VenueError,
    VenueEvent,
};

pub use crate::venue::Credentials;

/// How to authenticate.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum AuthMethod {
    /// HMAC signature; the secret never leaves the process.
    #[default]
    ClientSignature,
    ClientCredentials,
}

/// Session settings.
#[derive(Clone, Debug)]
pub struct DeribitConfig {
    pub url: String,
    pub credentials: Option<Credentials>,
    pub auth_method: AuthMethod,
    /// Ask the venue to cancel our orders if this connection drops (default on).
    pub cancel_on_disconnect: bool,
    /// `public/set_heartbeat` interval (Deribit's minimum is 10 s).
    pub heartbeat_s: u64,
    pub request_timeout: Duration,
    pub connect: ConnectOptions,
    pub limits: RateLimits,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
}

impl DeribitConfig {
    pub fn new(url: impl Into<String>) -> DeribitConfig {
        DeribitConfig {
            url: url.into(),
            credentials: None,
            auth_method: AuthMethod::default(),
            cancel_on_disconnect: true,
            heartbeat_s: 10,
            request_timeout: Duration::from_secs(10),
            connect: ConnectOptions::default(),
            limits: RateLimits::client_default(),
            backoff_base: Duration::from_millis(200),
            backoff_max: Duration::from_secs(10),
        }
    }
}

pub const PRODUCTION_URL: &str = "wss://www.deribit.com/ws/api/v2";
pub const TESTNET_URL: &str = "wss://test.deribit.com/ws/api/v2";

/// A Deribit session. Cheap to clone; all clones share one connection.
#[derive(Clone)]
pub struct Deribit {
    inner: Arc<Inner>,
}

impl fmt::Debug for Deribit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Deribit").field("url", &self.inner.config.url).finish_non_exhaustive()
    }
}

fn currency_of(instrument: &str) -> String {
    instrument.split(['-', '_']).next().unwrap_or_default().to_owned()
}

impl Deribit {
    pub fn new(config: DeribitConfig) -> Deribit {
        Deribit { inner: Arc::new(Inner::new(config)) }
    }

    /// Responses that matched no pending request (late answers after a timeout).
    pub fn unmatched_responses(&self) -> u64 {
        self.inner.rpc.unmatched.load(Ordering::Relaxed)
    }

    /// Drops the connection as if the network failed (tests, `reconnect` command).
    pub fn force_reconnect(&self) {
        self.inner.kill_connection();
    }

    /// The orders, fills and positions this session knows.
    pub fn tracker(&self) -> crate::oms::OrderTracker {
        self.inner.oms.lock().map(|o| o.clone()).unwrap_or_default()
    }

    /// The instrument's description, fetched once.
    pub async fn instrument(&self, name: &str) -> Result<InstrumentInfo, VenueError> {
        if let Some(info) = self.inner.instruments.lock().ok().and_then(|m| m.get(name).cloned()) {
            return Ok(info);
        }
        let params = api::InstrumentParams { instrument_name: name.to_owned(), ..Default::default() };
        let answer = self.inner.call_raw("public/get_instrument", &params, Gate::Ready).await?;
        let info = instrument_info(&answer.result, 0)?;
        if let Ok(mut map) = self.inner.instruments.lock() {
            map.insert(name.to_owned(), info.clone());
        }
        Ok(info)
    }

    fn next_label(&self) -> String {
        let n = self.inner.next_label.fetch_add(1, Ordering::Relaxed);
        format!("{}-{n}", self.inner.label_prefix)
    }

    /// After a timeout or disconnect: did the venue take the order with this label?
    async fn find_by_label(&self, instrument: &str, label: &str) -> Result<Option<OrderView>, VenueError> {
        if let Some(order) = self.inner.oms.lock().ok().and_then(|o| o.order_by_label(label).cloned()) {
            return Ok(Some(order));
        }
        let info = self.instrument(instrument).await?;
        let params = api::FilterParams {
            currency: Some(serde_json::Value::String(info.settlement.clone())),
            label: Some(label.to_owned()),
            ..Default::default()
        };
        let (open, _): (Vec<api::Order>, _) =
            self.inner.call("private/get_open_orders_by_label", &params, Gate::Ready).await?;
        if let Some(order) = open.into_iter().find(|o| o.label == label) {
            return Ok(Some(convert::order(order)));
        }
        let params =
            api::FilterParams { instrument_name: Some(instrument.to_owned()), count: Some(100), ..Default::default() };
        let (history, _): (Vec<api::Order>, _) =
            self.inner.call("private/get_order_history_by_instrument", &params, Gate::Ready).await?;
        Ok(history.into_iter().find(|o| o.label == label).map(convert::order))
    }

    fn record_placed(&self, result: api::OrderWithTrades, timing: RoundTrip) -> Placed {
        let order = convert::order(result.order);
        let fills: Vec<Fill> = result.trades.into_iter().map(convert::fill).collect();
        self.inner.track_order(order.clone());
        for fill in &fills {
            self.inner.track_fill(fill.clone());
        }
        Placed { order, fills, timing }
    }
}

fn instrument_info(json: &str, id: u32) -> Result<InstrumentInfo, VenueError> {
    let protocol = |reason: String| VenueError::Protocol { method: "public/get_instrument".into(), reason };
    let raw: api::Instrument = serde_json::from_str(json).map_err(|e| protocol(e.to_string()))?;
    let spec = parse_instrument(json, ticktrade_core::InstrumentId(id)).map_err(|e| protocol(e.to_string()))?;
    Ok(InstrumentInfo {
        name: raw.instrument_name,
        kind: raw.kind,
        base: raw.base_currency,
        quote: raw.quote_currency,
        settlement: raw.settlement_currency,
        tick_size: raw.tick_size.0,
        contract_size: raw.contract_size.0,
        min_trade_amount: raw.min_trade_amount.0,
        expiration_ms: raw.expiration_timestamp,
        spec,
    })
}

fn filter_params(filter: &Filter) -> (&'static str, api::FilterParams) {
    match filter {
        Filter::All => ("", api::FilterParams::default()),
        Filter::Instrument(i) => {
            ("_by_instrument", api::FilterParams { instrument_name: Some(i.clone()), ..Default::default() })
        }
        Filter::Currency(c) => (
            "_by_currency",
            api::FilterParams { currency: Some(serde_json::Value::String(c.to_uppercase())), ..Default::default() },
        ),
    }
}

impl Venue for Deribit {
    async fn connect(&self) -> Result<(), VenueError> {
        if *self.inner.state.borrow() == ConnState::Ready {
            return Ok(());
        }
        self.inner.closed.store(false, Ordering::Relaxed);
        tokio::spawn(session::supervise(self.inner.clone()));
        // One request timeout (10 s by default): a venue that cannot be reached fails within it.
        self.inner.wait_ready(self.inner.config.request_timeout).await
    }

    async fn authenticate(&self) -> Result<(), VenueError> {
        self.inner.authenticate(Gate::Ready, false).await
    }

    fn info(&self) -> SessionInfo {
        SessionInfo {
            venue: "deribit".into(),
            endpoint: self.inner.config.url.clone(),
            state: *self.inner.state.borrow(),
            authenticated: self.inner.authenticated.load(Ordering::Relaxed),
            connects: self.inner.connects.load(Ordering::Relaxed),
            subscriptions: self.inner.subs.lock().map(|s| s.keys().cloned().collect()).unwrap_or_default(),
            stale_books: self.inner.books.lock().map(|b| b.stale()).unwrap_or_default(),
            throttled: self.inner.throttled(),
        }
    }

    async fn instruments(&self, currency: Option<&str>, kind: Option<&str>) -> Result<Vec<InstrumentInfo>, VenueError> {
        let params = CurrencyQuery {
            currency: currency.map(str::to_uppercase).unwrap_or_else(|| "any".into()),
            kind: kind.map(str::to_owned),
        };
        let answer = self.inner.call_raw("public/get_instruments", &params, Gate::Ready).await?;
        let raws: Vec<Box<serde_json::value::RawValue>> = serde_json::from_str(&answer.result)
            .map_err(|e| VenueError::Protocol { method: "public/get_instruments".into(), reason: e.to_string() })?;
        let mut out = Vec::with_capacity(raws.len());
        for (i, raw) in raws.iter().enumerate() {
            let info = instrument_info(raw.get(), i as u32)?;
            if let Ok(mut map) = self.inner.instruments.lock() {
                map.entry(info.name.clone()).or_insert_with(|| info.clone());
            }
            out.push(info);
        }
        Ok(out)
    }

    async fn book_snapshot(&self, instrument: &str, depth: u32) -> Result<BookSnapshot, VenueError> {
        let params = api::InstrumentParams { instrument_name: instrument.to_owned(), depth: Some(depth), count: None };
        let (book, _): (BookLevels, _) = self.inner.call("public/get_order_book", &params, Gate::Ready).await?;
        Ok(BookSnapshot {
            instrument: book.instrument_name,
            change_id: u64::try_from(book.change_id).unwrap_or(0),
            timestamp_ms: book.timestamp,
            bids: book.bids.into_iter().map(|(p, q)| (p.0, q.0)).collect(),
            asks: book.asks.into_iter().map(|(p, q)| (p.0, q.0)).collect(),
        })
    }

    fn local_book(&self, instrument: &str, depth: usize) -> Option<BookSnapshot> {
        self.inner.books.lock().ok()?.snapshot(instrument, depth)
    }

    async fn ticker(&self, instrument: &str) -> Result<TickerView, VenueError> {
        let params = api::InstrumentParams { instrument_name: instrument.to_owned(), ..Default::default() };
        let (ticker, _): (api::Ticker, _) = self.inner.call("public/ticker", &params, Gate::Ready).await?;
        Ok(convert::ticker(ticker))
    }

    async fn place(&self, order: OrderRequest) -> Result<Placed, VenueError> {
        let label = order.label.clone().unwrap_or_else(|| self.next_label());
        let params = convert::order_params(&order, &label);
        let method = match order.side {
            Side::Buy => "private/buy",
            Side::Sell => "private/sell",
        };
        match self.inner.call::<api::OrderWithTrades>(method, &params, Gate::Ready).await {
            Ok((result, timing)) => Ok(self.record_placed(result, timing)),
            // No answer: the order may or may not exist. Never resend blindly — look it up
            // by its label, so a retry cannot create a duplicate.
            Err(err @ (VenueError::Timeout { .. } | VenueError::Disconnected(_))) => {
                match self.find_by_label(&order.instrument, &label).await {
                    Ok(Some(found)) => Ok(Placed { order: found, fills: Vec::new(), timing: RoundTrip::default() }),
                    Ok(None) => Err(err),
                    Err(_) => Err(err),
                }
            }
            Err(err) => Err(err),
        }
    }

    async fn edit(&self, edit: EditRequest) -> Result<Placed, VenueError> {
        let mut params =
            api::EditParams { amount: Some(Num(edit.amount)), price: edit.price.map(Num), ..Default::default() };
        let method = match &edit.order {
            OrderRef::Id(id) => {
                params.order_id = Some(id.clone());
                "private/edit"
            }
            OrderRef::Label(label) => {
                let instrument = self
                    .inner
                    .oms
                    .lock()
                    .ok()
                    .and_then(|o| o.order_by_label(label).map(|o| o.instrument.clone()))
                    .ok_or_else(|| VenueError::Invalid(format!("unknown label {label}")))?;
                params.label = Some(label.clone());
                params.instrument_name = Some(instrument);
                "private/edit_by_label"
            }
        };
        let (result, timing) = self.inner.call::<api::OrderWithTrades>(method, &params, Gate::Ready).await?;
        Ok(self.record_placed(result, timing))
    }

    async fn cancel(&self, order: OrderRef) -> Result<(OrderView, RoundTrip), VenueError> {
        let order_id = match order {
            OrderRef::Id(id) => id,
            OrderRef::Label(label) => self
                .inner
                .oms
                .lock()
                .ok()
                .and_then(|o| o.order_by_label(&label).map(|o| o.order_id.clone()))
                .ok_or_else(|| VenueError::Invalid(format!("unknown label {label}")))?,
        };
        let params = api::OrderIdParams { order_id };
        let (result, timing) = self.inner.call::<api::Order>("private/cancel", &params, Gate::Ready).await?;
        let view = convert::order(result);
        self.inner.track_order(view.clone());
        Ok((view, timing))
    }

    async fn cancel_all(&self, scope: CancelScope) -> Result<(u64, RoundTrip), VenueError> {
        let (method, params) = match scope {
            CancelScope::All => ("private/cancel_all", api::FilterParams::default()),
            CancelScope::Instrument(i) => (
                "private/cancel_all_by_instrument",
                api::FilterParams { instrument_name: Some(i), ..Default::default() },
            ),
            CancelScope::Currency(c) => (
                "private/cancel_all_by_currency",
                api::FilterParams { currency: Some(serde_json::Value::String(c.to_uppercase())), ..Default::default() },
            ),
        };
        let (count, timing): (u64, _) = self.inner.call(method, &params, Gate::Ready).await?;
        Ok((count, timing))
    }

    async fn open_orders(&self, filter: Filter) -> Result<Vec<OrderView>, VenueError> {
        let (suffix, params) = filter_params(&filter);
        let method = format!("private/get_open_orders{suffix}");
        let (orders, _): (Vec<api::Order>, _) = self.inner.call(&method, &params, Gate::Ready).await?;
        let views: Vec<OrderView> = orders.into_iter().map(convert::order).collect();
        if let Ok(mut oms) = self.inner.oms.lock() {
            for view in &views {
                oms.apply_order(view.clone());
            }
        }
        Ok(views)
    }

    async fn order_state(&self, order_id: &str) -> Result<OrderView, VenueError> {
        let params = api::OrderIdParams { order_id: order_id.to_owned() };
        let (order, _): (api::Order, _) = self.inner.call("private/get_order_state", &params, Gate::Ready).await?;
        let view = convert::order(order);
        if let Ok(mut oms) = self.inner.oms.lock() {
            oms.apply_order(view.clone());
        }
        Ok(view)
    }

    async fn positions(&self, filter: Filter) -> Result<Vec<PositionView>, VenueError> {
        let currency = match &filter {
            Filter::Currency(c) => c.to_uppercase(),
            Filter::Instrument(i) => currency_of(i),
            Filter::All => "any".into(),
        };
        let params = CurrencyQuery { currency, kind: None };
        let (positions, _): (Vec<api::Position>, _) =
            self.inner.call("private/get_positions", &params, Gate::Ready).await?;
        let views: Vec<PositionView> = positions
            .into_iter()
            .map(convert::position)
            .filter(|p| match &filter {
                Filter::Instrument(i) => &p.instrument == i,
                _ => true,
            })
            .collect();
        Ok(views)
    }

    async fn account(&self, currency: Option<&str>) -> Result<Vec<Balance>, VenueError> {
        let currencies: Vec<String> = match currency {
            Some(c) => vec![c.to_uppercase()],
            None => {
                let (list, _): (Vec<api::Currency>, _) =
                    self.inner.call("public/get_currencies", &serde_json::json!({}), Gate::Ready).await?;
                list.into_iter().map(|c| c.currency).collect()
            }
        };
        let mut out = Vec::new();
        for currency in currencies {
            let params = CurrencyQuery { currency, kind: None };
            let (summary, _): (api::AccountSummary, _) =
                self.inner.call("private/get_account_summary", &params, Gate::Ready).await?;
            out.push(convert::balance(summary));
        }
        Ok(out)
    }

    async fn user_trades(&self, filter: Filter) -> Result<Vec<Fill>, VenueError> {
        let (method, params) = match &filter {
            Filter::Instrument(i) => (
                "private/get_user_trades_by_instrument",
                api::FilterParams { instrument_name: Some(i.clone()), count: Some(100), ..Default::default() },
            ),
            Filter::Currency(c) => (
                "private/get_user_trades_by_currency",
                api::FilterParams {
                    currency: Some(serde_json::Value::String(c.to_uppercase())),
                    count: Some(100),
                    ..Default::default()
                },
            ),
            Filter::All => (
                "private/get_user_trades_by_currency",
                api::FilterParams { currency: Some("any".into()), count: Some(100), ..Default::default() },
            ),
        };
        let (trades, _): (api::UserTrades, _) = self.inner.call(method, &params, Gate::Ready).await?;
        Ok(trades.trades.into_iter().map(convert::fill).collect())
    }

    async fn recent_trades(&self, instrument: &str) -> Result<Vec<PublicTrade>, VenueError> {
        let params = api::InstrumentParams { instrument_name: instrument.to_owned(), depth: None, count: Some(20) };
        let (trades, _): (api::PublicTrades, _) =
            self.inner.call("public/get_last_trades_by_instrument", &params, Gate::Ready).await?;
        Ok(trades.trades.into_iter().map(convert::public_trade).collect())
    }

    async fn subscribe(&self, subs: &[Subscription]) -> Result<Vec<Subscription>, VenueError> {
        if subs.iter().any(Subscription::is_private) && !self.inner.authenticated.load(Ordering::Relaxed) {
            return Err(VenueError::NotAuthenticated("private channels need credentials".into()));
        }
        for sub in subs {
            if let Subscription::Book(name) = sub {
                let info = self.instrument(name).await?;
                if let Ok(mut books) = self.inner.books.lock() {
                    books.track(info.spec);
                }
            }
        }
        let channels: Vec<String> = subs.iter().map(|s| self.inner.channel_of(s)).collect();
        let confirmed = self.inner.subscribe_channels(&channels, Gate::Ready).await?;
        let mut done = Vec::new();
        if let Ok(mut map) = self.inner.subs.lock() {
            for (sub, channel) in subs.iter().zip(channels) {
                if confirmed.iter().any(|c| c.eq_ignore_ascii_case(&channel)) {
                    map.insert(sub.clone(), channel);
                    done.push(sub.clone());
                }
            }
        }
        if let Ok(mut books) = self.inner.books.lock() {
            for sub in subs.iter().filter(|s| !done.contains(s)) {
                if let Subscription::Book(name) = sub {
                    books.untrack(name);
                }
            }
        }
        Ok(done)
    }

    async fn unsubscribe(&self, subs: &[Subscription]) -> Result<Vec<Subscription>, VenueError> {
        // `user.changes` feeds order management for the whole authenticated session: it stays
        // subscribed (a caller that asked to drop it is told it is done; it only stops
        // listening).
        let keep_changes = self.inner.authenticated.load(Ordering::Relaxed);
        let dropped_changes = keep_changes && subs.contains(&Subscription::UserChanges);
        let targets: Vec<(Subscription, String)> = {
            let map = self.inner.subs.lock().map(|m| m.clone()).unwrap_or_default();
            map.into_iter()
                .filter(|(s, _)| subs.is_empty() || subs.contains(s))
                .filter(|(s, _)| !(keep_changes && *s == Subscription::UserChanges))
                .collect()
        };
        let channels: Vec<String> = targets.iter().map(|(_, c)| c.clone()).collect();
        if !channels.is_empty() {
            self.inner.unsubscribe_channels(&channels, Gate::Ready).await?;
        }
        if let (Ok(mut map), Ok(mut books)) = (self.inner.subs.lock(), self.inner.books.lock()) {
            for (sub, _) in &targets {
                map.remove(sub);
                if let Subscription::Book(name) = sub {
                    books.untrack(name);
                }
            }
        }
        let mut done: Vec<Subscription> = targets.into_iter().map(|(s, _)| s).collect();
        if dropped_changes {
            done.push(Subscription::UserChanges);
        }
        Ok(done)
    }

    fn events(&self) -> broadcast::Receiver<VenueEvent> {
        self.inner.events.subscribe()
    }

    async fn logout(&self) -> Result<(), VenueError> {
        self.inner.closed.store(true, Ordering::Relaxed);
        if self.inner.authenticated.load(Ordering::Relaxed) {
            let params = api::LogoutParams { invalidate_token: Some(true) };
            let _ = self.inner.rpc.notify("private/logout", &params).await;
        }
        self.inner.kill_connection();
        Ok(())
    }
}
