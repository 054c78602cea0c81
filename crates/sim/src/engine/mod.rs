//! The engine task: the one owner of the venue, fed by a bounded queue of commands.
//!
//! Owns: the `Market` (the exchange and its synthetic market; single-threaded, no locks on
//! the matching path), the synthetic market timer, the one reading of the clock per command or
//! tick, the session registry with each session's subscriptions and bounded outbound queue
//! (`ticktrade_net::outbound`), fan-out of events as Deribit notifications, and book-change
//! faults.
//! Must not: block or await on a session: notifications are offered to the session's queue; a
//! full queue disconnects that session ("slow consumer") instead of buffering without limit.
//!
//! # Layout
//! - `methods`: the RPC methods answered here: trading, account reads, books and tickers.
//! - `books`: instruments, books, tickers, indexes, summaries, charts (public).
//! - `market_data`: the other public market-data reads (trade history, indexes, volumes).
//! - `margins`: margin reads and `cancel_all_by_currency_pair`.
//! - `quotes`: mass quotes and market maker protection.
//! - `trigger_history`: `get_trigger_order_history`.
//! - `history_data`: funding, mark, delivery, volatility and index history.
//! - `settlements`: settlements and the transaction log.
//! - `account_reads`: subaccounts, locks, self-trading config, announcements.
//! - `combo_methods`: combos and leg prices.
//! - `publish`: subscriptions, snapshots, aggregation (100ms/agg2), fan-out.

mod account_reads;
mod books;
mod combo_methods;
mod history_data;
mod margins;
mod market_data;
mod methods;
mod publish;
mod quotes;
mod settlements;
mod trigger_history;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::value::RawValue;
use ticktrade_core::{InstrumentId, Utc};
use tokio::sync::{mpsc, oneshot, watch};

use ticktrade_exchange::{ConnectionId, Event, Request};

use crate::clock::SimClock;
use crate::fault::{Fault, FaultLog, Faults};
use crate::market::{AccountId, Market};
use crate::rpc::RpcError;

pub use account_reads::METHODS as ACCOUNT_METHODS;
pub use combo_methods::METHODS as COMBO_METHODS;
pub use history_data::METHODS as HISTORY_METHODS;
pub use margins::METHODS as MARGIN_METHODS;
pub use market_data::METHODS as MARKET_DATA_METHODS;
pub use methods::{BOOK_METHODS, ORDER_READ_METHODS, TRADING_METHODS};
use publish::Subscriptions;

/// Every method family the engine answers: the session sends these methods here, and the
/// coverage table lists them as served.
pub const FAMILIES: [&[&str]; 11] = [
    BOOK_METHODS,
    TRADING_METHODS,
    ORDER_READ_METHODS,
    MARKET_DATA_METHODS,
    QUOTE_METHODS,
    TRIGGER_HISTORY_METHODS,
    MARGIN_METHODS,
    HISTORY_METHODS,
    SETTLEMENT_METHODS,
    ACCOUNT_METHODS,
    COMBO_METHODS,
];
pub use quotes::METHODS as QUOTE_METHODS;
pub use settlements::METHODS as SETTLEMENT_METHODS;
use ticktrade_deribit_proto::channel::Interval;
pub use trigger_history::METHODS as TRIGGER_HISTORY_METHODS;

/// A frame for a session's writer (an item of its `ticktrade_net::outbound` queue).
#[derive(Clone, Debug)]
pub enum SessionFrame {
    Text(Arc<str>),
    /// Close with a WebSocket close code and a reason.
    Close(u16, String),
}

/// A session's outbound queue: bounded, `SlowPolicy::Disconnect` (a full queue ends the
/// session with a reason), drained by the session's writer task.
pub type SessionQueue = ticktrade_net::outbound::Outbound<SessionFrame>;

/// A session's kill switch: the engine (or a fault, or the reader) sets a close code and
/// reason once; the reader and the writer both watch it, so the socket closes with that
/// reason even when the outbound queue is full.
#[derive(Debug)]
pub struct Kill {
    tx: watch::Sender<Option<(u16, String)>>,
}

impl Default for Kill {
    fn default() -> Kill {
        Kill { tx: watch::channel(None).0 }
    }
}

impl Kill {
    /// Sets the close reason (the first one wins).
    pub fn fire(&self, code: u16, reason: &str) {
        self.tx.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some((code, reason.to_owned()));
                true
            } else {
                false
            }
        });
    }

    pub fn reason(&self) -> Option<(u16, String)> {
        self.tx.borrow().clone()
    }

    pub fn watch(&self) -> watch::Receiver<Option<(u16, String)>> {
        self.tx.subscribe()
    }
}

/// How the engine reaches a session.
#[derive(Clone, Debug)]
pub struct SessionTx {
    pub out: Arc<SessionQueue>,
    pub kill: Arc<Kill>,
}

/// A subscribe/unsubscribe request from a WebSocket session.
#[derive(Debug)]
pub struct SubscribeRequest {
    pub session: u64,
    pub account: Option<AccountId>,
    pub channels: Vec<String>,
    pub label: Option<String>,
    /// The request id and arrival time, so the engine writes the response into the session's
    /// queue before the first snapshot.
    pub id: Option<String>,
    pub us_in: i64,
}

/// Work for the engine task.
pub enum Command {
    Register {
        session: u64,
        tx: SessionTx,
    },
    /// The session ended. With cancel-on-disconnect on, `cancel_orders_of` names its account:
    /// the orders that session placed are cancelled (the account's other connections' stay).
    Unregister {
        session: u64,
        cancel_orders_of: Option<AccountId>,
    },
    Call {
        account: Option<AccountId>,
        /// The WebSocket session sending it (`None` over HTTP): recorded on the orders it
        /// places, so its cancel-on-disconnect finds them.
        connection: Option<u64>,
        method: String,
        params: Option<Box<RawValue>>,
        reply: oneshot::Sender<Result<String, RpcError>>,
    },
    Subscribe {
        request: SubscribeRequest,
        reply: oneshot::Sender<Result<(), RpcError>>,
    },
    Unsubscribe {
        session: u64,
        channels: Option<Vec<String>>,
        id: Option<String>,
        us_in: i64,
        reply: oneshot::Sender<()>,
    },
    Inject(Fault),
    Inspect(Box<dyn FnOnce(&Market) + Send>),
    Shutdown,
}

/// Counters the status line and tests read.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections: AtomicU64,
    pub orders: AtomicU64,
    pub book_changes: AtomicU64,
}

/// What the engine needs besides the venue.
pub struct EngineConfig {
    pub rate_per_s: u32,
    pub testnet: bool,
    pub faults: Faults,
    pub fault_log: Arc<FaultLog>,
    pub stats: Arc<Stats>,
    /// Every reading of time: one per command and per tick.
    pub clock: SimClock,
}

const TICK: Duration = Duration::from_millis(10);

struct Engine {
    market: Market,
    subs: Subscriptions,
    config: EngineConfig,
    events: Vec<Event>,
    ticks: u64,
}

/// Runs the engine until `Shutdown` or every sender is gone.
pub async fn run(market: Market, config: EngineConfig, mut rx: mpsc::Receiver<Command>) {
    let mut engine = Engine { market, subs: Subscriptions::default(), config, events: Vec::new(), ticks: 0 };
    // The first step builds every book (nobody is subscribed yet: nothing to publish).
    let mut seed_events = Vec::new();
    engine.market.step(engine.config.clock.utc(), &mut seed_events);
    let mut timer = tokio::time::interval(TICK);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            command = rx.recv() => match command {
                None | Some(Command::Shutdown) => break,
                Some(command) => engine.handle(command),
            },
            _ = timer.tick() => engine.tick(),
        }
    }
    engine.subs.close_all(1001, "simulator shutting down");
}

impl Engine {
    fn handle(&mut self, command: Command) {
        let now = self.config.clock.utc();
        match command {
            Command::Register { session, tx } => self.subs.register(session, tx),
            Command::Unregister { session, cancel_orders_of } => {
                self.subs.unregister(session);
                if let Some(account) = cancel_orders_of {
                    let request = Request::CancelOnDisconnect { connection: ConnectionId(session) };
                    let cancelled = self.market.handle(now, account, request, &mut self.events);
                    tracing::info!(session, account, ?cancelled, "cancel-on-disconnect");
                    self.publish(now);
                }
            }
            Command::Call { account, connection, method, params, reply } => {
                if matches!(method.as_str(), "private/buy" | "private/sell" | "private/edit" | "private/edit_by_label")
                {
                    self.config.stats.orders.fetch_add(1, Ordering::Relaxed);
                }
                let connection = connection.map(ConnectionId);
                let result = methods::call(
                    &mut self.market,
                    now,
                    account,
                    connection,
                    &method,
                    params.as_deref(),
                    &mut self.events,
                );
                let _ = reply.send(result);
                self.publish(now);
            }
            Command::Subscribe { request, reply } => {
                let result = self.subs.subscribe(&self.market, now, &self.config.clock, request, self.config.testnet);
                let _ = reply.send(result);
            }
            Command::Unsubscribe { session, channels, id, us_in, reply } => {
                self.subs.unsubscribe(session, channels, id, us_in, &self.config.clock, self.config.testnet);
                let _ = reply.send(());
            }
            Command::Inject(fault) => {
                tracing::info!(fault = fault.name(), "fault queued");
                self.config.faults.inject(fault);
                self.apply_due_faults(now, false);
            }
            Command::Inspect(f) => f(&self.market),
            Command::Shutdown => {}
        }
    }

    fn tick(&mut self) {
        let now = self.config.clock.utc();
        self.ticks += 1;
        // The synthetic market performs the actions due since its last step (`rate_per_s`).
        if self.config.rate_per_s > 0 {
            self.market.step(now, &mut self.events);
            self.publish(now);
        }
        let every = |interval: Interval| self.ticks.is_multiple_of(interval.period_ms() / TICK.as_millis() as u64);
        let every_100ms = every(Interval::Ms100);
        let every_2s = every(Interval::Agg2);
        let every_1s = self.ticks.is_multiple_of(100);
        if every_100ms {
            self.subs.flush_aggregated(
                &self.market,
                now,
                Interval::Ms100,
                &mut self.config.faults,
                &self.config.fault_log,
            );
        }
        if every_2s {
            self.subs.flush_aggregated(
                &self.market,
                now,
                Interval::Agg2,
                &mut self.config.faults,
                &self.config.fault_log,
            );
        }
        self.config.stats.connections.store(self.subs.session_count() as u64, Ordering::Relaxed);
        if every_1s {
            self.subs.publish_index(&self.market, now);
            self.apply_due_faults(now, true);
        }
        self.apply_due_faults(now, false);
    }

    fn publish(&mut self, now: Utc) {
        let mut events = std::mem::take(&mut self.events);
        let batches = events.iter().filter(|e| matches!(e, Event::BookBatch(_))).count();
        self.config.stats.book_changes.fetch_add(batches as u64, Ordering::Relaxed);
        self.subs.publish(&self.market, now, &events, &mut self.config.faults, &self.config.fault_log);
        events.clear();
        self.events = events;
    }

    fn apply_due_faults(&mut self, now: Utc, second: bool) {
        let mut due = self.config.faults.take_due();
        if second {
            due.extend(self.config.faults.tick_second());
        }
        for fault in due {
            match fault {
                Fault::Disconnect { session } => {
                    for id in self.subs.session_ids(session) {
                        self.config.fault_log.record("disconnect", format!("session {id}"));
                        self.subs.kill(id, 4002, "fault injection: disconnect");
                    }
                }
                Fault::MalformedFrame { session } => {
                    for id in self.subs.session_ids(session) {
                        self.config.fault_log.record("malformed_frame", format!("session {id}"));
                        self.subs.send_text(id, Arc::from(MALFORMED));
                    }
                }
                Fault::RestartBook { instrument, levels } => {
                    let targets: Vec<InstrumentId> = match instrument.as_deref() {
                        Some(name) => self.market.find(name).into_iter().collect(),
                        None => (0..self.market.instrument_count()).map(|i| InstrumentId(i as u32)).collect(),
                    };
                    // Whatever is pending goes out first, so the restart is the last word.
                    self.publish(now);
                    for instr in targets {
                        let removed = self.market.restart_book(now, instr, levels);
                        self.subs.restart(&self.market, instr, now);
                        let name = self.market.name(instr).to_owned();
                        self.config.fault_log.record(
                            "restart_book",
                            format!(
                                "{name} change_id {} removed [{}]",
                                self.market.change_id(instr),
                                removed.join(", ")
                            ),
                        );
                    }
                }
                other => self.config.faults.inject(other),
            }
        }
    }
}

/// A truncated notification: valid UTF-8, invalid JSON.
pub const MALFORMED: &str = r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book."#;
