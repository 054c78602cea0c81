//! The exchange-agnostic `Venue` trait: the async control plane that the shell, the tests and
//! order management code against. Typed parameters in, typed results and events out; no JSON
//! (or any other wire format) crosses it.
//!
//! Owns: `Venue`, its parameter types (`OrderRequest`, `EditRequest`, `OrderRef`,
//! `CancelScope`, `Subscription`), its result and event types (`OrderView`, `Fill`,
//! `PositionView`, `Balance`, `InstrumentInfo`, `BookSnapshot`, `TickerView`, `VenueEvent`),
//! the order-path timing (`RoundTrip`) and `VenueError`.
//! Must not: know any venue's protocol. A new venue is a new module implementing this trait;
//! nothing here changes.
//!
//! Numbers are exact `Decimal`s as the venue quotes them (never `f64`); a venue converts to
//! `Price`/`Qty` with the instrument's spec where it keeps books.

use std::fmt;
use std::future::Future;

use ticktrade_core::{Decimal, InstrumentSpec, Side};
/// The workspace's secret newtype (`Debug`/`Display` print `***`); it lives with the signing
/// code in deribit-proto but is not Deribit-specific.
pub use ticktrade_deribit_proto::signature::Secret;
use tokio::sync::broadcast;

/// An API key. `Debug` never shows the secret.
#[derive(Clone)]
pub struct Credentials {
    pub client_id: String,
    pub client_secret: Secret,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials").field("client_id", &self.client_id).field("client_secret", &"***").finish()
    }
}

/// Why a venue call failed, split by what the caller should do.
#[derive(Debug, Clone, thiserror::Error)]
pub enum VenueError {
    /// The connection is down or was lost while waiting; the session reconnects by itself.
    #[error("disconnected: {0}")]
    Disconnected(String),
    /// No answer in time. For an order, the client label decides whether it exists (query it).
    #[error("{method} timed out after {timeout_ms} ms")]
    Timeout { method: String, timeout_ms: u64 },
    /// The venue answered with an error: show it, do not resend unchanged.
    #[error("{method}: {code} {message}{}", meaning_suffix(.meaning))]
    Rejected { method: String, code: i64, message: String, meaning: Option<String> },
    /// The request was rejected locally before it was sent (bad instrument, off-grid price…).
    #[error("invalid request: {0}")]
    Invalid(String),
    /// Private call without credentials, or the venue refused them.
    #[error("not authenticated: {0}")]
    NotAuthenticated(String),
    /// The answer could not be understood.
    #[error("unexpected answer to {method}: {reason}")]
    Protocol { method: String, reason: String },
}

fn meaning_suffix(meaning: &Option<String>) -> String {
    meaning.as_deref().filter(|m| !m.is_empty()).map(|m| format!(" ({m})")).unwrap_or_default()
}

impl VenueError {
    /// The venue's error code, when the venue answered with one.
    pub fn code(&self) -> Option<i64> {
        match self {
            VenueError::Rejected { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// Time in force.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TimeInForce {
    #[default]
    Gtc,
    Gtd,
    Ioc,
    Fok,
}

impl TimeInForce {
    pub fn as_str(self) -> &'static str {
        match self {
            TimeInForce::Gtc => "gtc",
            TimeInForce::Gtd => "gtd",
            TimeInForce::Ioc => "ioc",
            TimeInForce::Fok => "fok",
        }
    }
}

/// Which price a stop/take order watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum TriggerSource {
    #[default]
    Last,
    Mark,
    Index,
}

impl TriggerSource {
    pub fn as_str(self) -> &'static str {
        match self {
            TriggerSource::Last => "last",
            TriggerSource::Mark => "mark",
            TriggerSource::Index => "index",
        }
    }
}

/// A stop or take-profit trigger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Trigger {
    /// `true` for take-profit, `false` for stop.
    pub take: bool,
    pub price: Decimal,
    pub source: TriggerSource,
}

/// A new order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderRequest {
    pub instrument: String,
    pub side: Side,
    pub amount: Decimal,
    /// `None` is a market order (or stop-market with a trigger).
    pub price: Option<Decimal>,
    pub time_in_force: TimeInForce,
    pub post_only: bool,
    pub reduce_only: bool,
    /// Client label: makes a retried request idempotent (see `oms`).
    pub label: Option<String>,
    pub trigger: Option<Trigger>,
}

/// Which order: by venue id, or by client label (on an instrument when the venue needs one).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OrderRef {
    Id(String),
    Label(String),
}

impl fmt::Display for OrderRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OrderRef::Id(id) => f.write_str(id),
            OrderRef::Label(label) => write!(f, "label={label}"),
        }
    }
}

/// An amend.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditRequest {
    pub order: OrderRef,
    pub amount: Decimal,
    pub price: Option<Decimal>,
}

/// What `cancel_all` covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CancelScope {
    All,
    Instrument(String),
    Currency(String),
}

/// Which orders/positions a query covers.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Filter {
    #[default]
    All,
    Instrument(String),
    Currency(String),
}

/// The life-cycle state of an order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OrderStatus {
    /// Sent, not yet acknowledged (local only).
    Pending,
    /// A stop/take waiting for its trigger.
    Untriggered,
    Open,
    Filled,
    Cancelled,
    Rejected,
}

impl OrderStatus {
    pub fn is_terminal(self) -> bool {
        matches!(self, OrderStatus::Filled | OrderStatus::Cancelled | OrderStatus::Rejected)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            OrderStatus::Pending => "pending",
            OrderStatus::Untriggered => "untriggered",
            OrderStatus::Open => "open",
            OrderStatus::Filled => "filled",
            OrderStatus::Cancelled => "cancelled",
            OrderStatus::Rejected => "rejected",
        }
    }
}

/// An order as the venue last reported it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderView {
    pub order_id: String,
    pub label: String,
    pub instrument: String,
    pub side: Side,
    pub order_type: String,
    pub status: OrderStatus,
    pub amount: Decimal,
    pub filled: Decimal,
    /// `None` for market orders.
    pub price: Option<Decimal>,
    pub average_price: Decimal,
    pub time_in_force: String,
    pub post_only: bool,
    pub reduce_only: bool,
    pub trigger_price: Option<Decimal>,
    pub created_ms: i64,
    pub updated_ms: i64,
}

/// One execution of one of our orders.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    pub trade_id: String,
    pub order_id: String,
    pub instrument: String,
    pub side: Side,
    pub price: Decimal,
    pub amount: Decimal,
    pub fee: Decimal,
    pub fee_currency: String,
    /// "M" maker, "T" taker.
    pub liquidity: String,
    pub timestamp_ms: i64,
}

/// A position. `size` is signed (negative = short).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PositionView {
    pub instrument: String,
    pub kind: String,
    pub size: Decimal,
    pub average_price: Decimal,
    pub mark_price: Decimal,
    pub floating_pl: Decimal,
    pub realized_pl: Decimal,
}

/// Balances of one currency.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Balance {
    pub currency: String,
    pub balance: Decimal,
    pub equity: Decimal,
    pub available_funds: Decimal,
    pub margin_balance: Decimal,
    pub initial_margin: Decimal,
    pub maintenance_margin: Decimal,
    pub total_pl: Decimal,
}

/// A tradable instrument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentInfo {
    pub name: String,
    pub kind: String,
    pub base: String,
    pub quote: String,
    pub settlement: String,
    pub tick_size: Decimal,
    pub contract_size: Decimal,
    pub min_trade_amount: Decimal,
    pub expiration_ms: i64,
    pub spec: InstrumentSpec,
}

/// Both sides of a book, best first, exact decimals.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct BookSnapshot {
    pub instrument: String,
    pub change_id: u64,
    pub timestamp_ms: i64,
    pub bids: Vec<(Decimal, Decimal)>,
    pub asks: Vec<(Decimal, Decimal)>,
}

/// Best prices and marks.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct TickerView {
    pub instrument: String,
    pub timestamp_ms: i64,
    pub best_bid: Option<(Decimal, Decimal)>,
    pub best_ask: Option<(Decimal, Decimal)>,
    pub last: Option<Decimal>,
    pub mark: Option<Decimal>,
    pub index: Option<Decimal>,
    pub open_interest: Option<Decimal>,
}

/// A public trade.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublicTrade {
    pub trade_id: String,
    pub instrument: String,
    pub side: Side,
    pub price: Decimal,
    pub amount: Decimal,
    pub timestamp_ms: i64,
}

/// A stream the venue pushes.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Subscription {
    /// Full-depth book, kept locally with gap detection and resync.
    Book(String),
    Trades(String),
    Ticker(String),
    /// Our orders, fills and positions on every instrument.
    UserOrders,
    UserTrades,
    UserChanges,
}

impl Subscription {
    /// `book:BTC-PERPETUAL`, `trades:…`, `ticker:…`, `orders`, `user-trades`, `changes`.
    pub fn parse(text: &str) -> Option<Subscription> {
        let (kind, arg) = match text.split_once(':') {
            Some((kind, arg)) if !arg.is_empty() => (kind, Some(arg)),
            Some(_) => return None,
            None => (text, None),
        };
        match (kind, arg) {
            ("book", Some(i)) => Some(Subscription::Book(i.to_owned())),
            ("trades", Some(i)) => Some(Subscription::Trades(i.to_owned())),
            ("ticker", Some(i)) => Some(Subscription::Ticker(i.to_owned())),
            ("orders", None) => Some(Subscription::UserOrders),
            ("user-trades", None) => Some(Subscription::UserTrades),
            ("changes", None) => Some(Subscription::UserChanges),
            _ => None,
        }
    }

    pub fn is_private(&self) -> bool {
        matches!(self, Subscription::UserOrders | Subscription::UserTrades | Subscription::UserChanges)
    }
}

impl fmt::Display for Subscription {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Subscription::Book(i) => write!(f, "book:{i}"),
            Subscription::Trades(i) => write!(f, "trades:{i}"),
            Subscription::Ticker(i) => write!(f, "ticker:{i}"),
            Subscription::UserOrders => f.write_str("orders"),
            Subscription::UserTrades => f.write_str("user-trades"),
            Subscription::UserChanges => f.write_str("changes"),
        }
    }
}

/// The connection's state as the session sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnState {
    Connecting,
    /// Connected, authenticated (when credentials exist), resubscribed, books resynced and
    /// orders reconciled.
    Ready,
    Disconnected,
    Closed,
}

/// Something the venue pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VenueEvent {
    /// The local book changed (`BookSnapshot` is not sent per change; read it with `book`).
    BookUpdated {
        instrument: String,
        change_id: u64,
    },
    /// A sequence gap: the local book is stale until a fresh snapshot arrives.
    BookStale {
        instrument: String,
    },
    /// A snapshot replaced a stale (or new) book.
    BookSynced {
        instrument: String,
        change_id: u64,
    },
    Trade(PublicTrade),
    Ticker(TickerView),
    Order(OrderView),
    Fill(Fill),
    Position(PositionView),
    Connection(ConnState),
    /// The venue asked us to slow down (e.g. Deribit 10028); the session backs off.
    Throttled {
        retry_after_ms: u64,
    },
}

/// Times of one order-path request. The round trip splits into the local part (ours, up
/// to the write), the exchange's part (`usOut − usIn`, by its own clock) and the network
/// (the rest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RoundTrip {
    /// Request handed to the venue (command parsed) → bytes written to the socket.
    pub local_ns: u64,
    /// Request handed to the venue → answer received (µs); includes `local_ns`.
    pub round_trip_us: u64,
    /// The venue's own processing time (`usOut − usIn`), when it reports it.
    pub exchange_us: Option<u64>,
    /// Answer received → result decoded and handed back (ns).
    pub decode_ns: u64,
}

impl RoundTrip {
    /// The part of the round trip spent on the wire: round trip − local − exchange. `None`
    /// without the exchange's times, or when they do not fit inside the measured round trip
    /// (the write returned late, e.g. the writing thread was preempted after the syscall):
    /// better no figure than a wrong one.
    pub fn network_us(&self) -> Option<u64> {
        let exchange_ns = self.exchange_us?.checked_mul(1_000)?;
        let rest = self.round_trip_us.checked_mul(1_000)?.checked_sub(self.local_ns)?.checked_sub(exchange_ns)?;
        Some(rest / 1_000)
    }

    /// Our own share: encode/write plus decode.
    pub fn client_ns(&self) -> u64 {
        self.local_ns + self.decode_ns
    }
}

/// An order result with the fills it caused and its timing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placed {
    pub order: OrderView,
    pub fills: Vec<Fill>,
    pub timing: RoundTrip,
}

/// A session summary for `status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionInfo {
    pub venue: String,
    pub endpoint: String,
    pub state: ConnState,
    pub authenticated: bool,
    pub connects: u64,
    pub subscriptions: Vec<Subscription>,
    pub stale_books: Vec<String>,
    pub throttled: u64,
}

/// The trading control plane of one venue. Every method is cancel-safe to drop.
pub trait Venue: Send + Sync + 'static {
    /// Connects (and authenticates when credentials are configured); waits until ready.
    fn connect(&self) -> impl Future<Output = Result<(), VenueError>> + Send;
    /// (Re-)authenticates the running session.
    fn authenticate(&self) -> impl Future<Output = Result<(), VenueError>> + Send;
    fn info(&self) -> SessionInfo;
    fn instruments(
        &self,
        currency: Option<&str>,
        kind: Option<&str>,
    ) -> impl Future<Output = Result<Vec<InstrumentInfo>, VenueError>> + Send;
    /// A fresh book from the venue (not the local one).
    fn book_snapshot(
        &self,
        instrument: &str,
        depth: u32,
    ) -> impl Future<Output = Result<BookSnapshot, VenueError>> + Send;
    /// The locally kept book of a `Subscription::Book`, `None` if not subscribed or stale.
    fn local_book(&self, instrument: &str, depth: usize) -> Option<BookSnapshot>;
    fn ticker(&self, instrument: &str) -> impl Future<Output = Result<TickerView, VenueError>> + Send;
    fn place(&self, order: OrderRequest) -> impl Future<Output = Result<Placed, VenueError>> + Send;
    fn edit(&self, edit: EditRequest) -> impl Future<Output = Result<Placed, VenueError>> + Send;
    fn cancel(&self, order: OrderRef) -> impl Future<Output = Result<(OrderView, RoundTrip), VenueError>> + Send;
    /// Returns how many orders were cancelled.
    fn cancel_all(&self, scope: CancelScope) -> impl Future<Output = Result<(u64, RoundTrip), VenueError>> + Send;
    fn open_orders(&self, filter: Filter) -> impl Future<Output = Result<Vec<OrderView>, VenueError>> + Send;
    fn order_state(&self, order_id: &str) -> impl Future<Output = Result<OrderView, VenueError>> + Send;
    fn positions(&self, filter: Filter) -> impl Future<Output = Result<Vec<PositionView>, VenueError>> + Send;
    fn account(&self, currency: Option<&str>) -> impl Future<Output = Result<Vec<Balance>, VenueError>> + Send;
    fn user_trades(&self, filter: Filter) -> impl Future<Output = Result<Vec<Fill>, VenueError>> + Send;
    fn recent_trades(&self, instrument: &str) -> impl Future<Output = Result<Vec<PublicTrade>, VenueError>> + Send;
    fn subscribe(&self, subs: &[Subscription]) -> impl Future<Output = Result<Vec<Subscription>, VenueError>> + Send;
    /// Empty `subs` unsubscribes everything.
    fn unsubscribe(&self, subs: &[Subscription]) -> impl Future<Output = Result<Vec<Subscription>, VenueError>> + Send;
    fn events(&self) -> broadcast::Receiver<VenueEvent>;
    /// Logs out and closes the session (no reconnect afterwards).
    fn logout(&self) -> impl Future<Output = Result<(), VenueError>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscriptions_round_trip_through_text() {
        for text in ["book:BTC-PERPETUAL", "trades:ETH-PERPETUAL", "ticker:X", "orders", "user-trades", "changes"] {
            let sub = Subscription::parse(text).unwrap();
            assert_eq!(sub.to_string(), text);
        }
        for bad in ["book", "book:", "nope:x", "orders:x", ""] {
            assert_eq!(Subscription::parse(bad), None, "{bad}");
        }
        assert!(Subscription::UserOrders.is_private());
        assert!(!Subscription::Book("X".into()).is_private());
    }

    #[test]
    fn round_trip_split() {
        let rt = RoundTrip { local_ns: 5_000, round_trip_us: 120, exchange_us: Some(20), decode_ns: 1_000 };
        assert_eq!(rt.network_us(), Some(95));
        assert_eq!(rt.client_ns(), 6_000);
        // Times that do not add up give no network figure rather than a wrong one.
        let skewed = RoundTrip { local_ns: 100_000, round_trip_us: 150, exchange_us: Some(100), decode_ns: 0 };
        assert_eq!(skewed.network_us(), None);
        assert_eq!(RoundTrip { exchange_us: None, ..rt }.network_us(), None);
        let err = VenueError::Rejected {
            method: "private/buy".into(),
            code: 10009,
            message: "not_enough_funds".into(),
            meaning: Some("Not enough funds".into()),
        };
        assert_eq!(err.to_string(), "private/buy: 10009 not_enough_funds (Not enough funds)");
        assert_eq!(err.code(), Some(10009));
    }
}
