//! The simulator's exchange: instruments, books, orders, matching, positions, synthetic market.
//!
//! Owns: every order and trade of the simulated venue, per-account positions and order
//! history, public trade tapes, and the book change sequence (`change_id`) per instrument.
//! Must not: do I/O, read a clock (time comes in as `Utc`), or know about sessions and JSON
//! text. It returns typed `api` objects and [`Event`]s the engine task fans out.
//!
//! Why a private venue and not `ticktrade-exchange`: that crate was still being written when
//! this server was built; this stand-in is kept to what the protocol needs (limit/market,
//! GTC/IOC/FOK, post-only, reduce-only, edit, cancel, positions) so it can be swapped out.

mod book;
mod orders;
mod query;
mod render;
mod synth;
#[cfg(test)]
mod tests;

use std::collections::{HashMap, VecDeque};

use ticktrade_core::{Decimal, InstrumentSpec, Price, Qty, Side, Utc};
use ticktrade_deribit_proto::api;

pub use book::LevelChange;
pub use orders::Filter;
pub use render::div as render_div;
pub use synth::Rng;

use book::Book;

/// An account of the simulated venue. `MAKER` and `TAKER` are the synthetic participants.
pub type AccountId = u32;
pub const MAKER: AccountId = 0;
pub const TAKER: AccountId = 1;

/// A request the venue refuses, with Deribit's code and message.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{code} {message}")]
pub struct Reject {
    pub code: i64,
    pub message: String,
    /// For `-32602`: the parameter at fault and why.
    pub param: Option<(&'static str, &'static str)>,
}

impl Reject {
    pub fn new(code: i64, message: &str) -> Reject {
        Reject { code, message: message.to_owned(), param: None }
    }
    pub fn param(param: &'static str, reason: &'static str) -> Reject {
        Reject { code: -32602, message: "Invalid params".to_owned(), param: Some((param, reason)) }
    }
    pub fn not_found() -> Reject {
        Reject::new(10004, "order_not_found")
    }
    pub fn instrument() -> Reject {
        Reject::new(10020, "invalid_or_unsupported_instrument")
    }
}

/// What the engine publishes after an operation.
#[derive(Clone, Debug)]
pub enum Event {
    /// Level changes of one instrument under one new `change_id`.
    Book { instr: usize, change_id: i64, prev_change_id: i64, timestamp_ms: i64, changes: Vec<LevelChange> },
    /// Public trades of one matching event.
    Trades { instr: usize, trades: Vec<api::PublicTrade> },
    /// The book was rebuilt without publishing changes: subscribers need a new snapshot.
    Restart { instr: usize },
    /// Everything one operation changed for one account on one instrument.
    User {
        account: AccountId,
        instr: usize,
        orders: Vec<api::Order>,
        trades: Vec<api::UserTrade>,
        position: Box<api::Position>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OrderState {
    Open,
    Filled,
    Cancelled,
}

impl OrderState {
    const fn as_str(self) -> &'static str {
        match self {
            OrderState::Open => "open",
            OrderState::Filled => "filled",
            OrderState::Cancelled => "cancelled",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tif {
    Gtc,
    Gtd,
    Ioc,
    Fok,
}

impl Tif {
    fn parse(text: Option<&str>) -> Result<Tif, Reject> {
        match text.unwrap_or("good_til_cancelled") {
            "good_til_cancelled" => Ok(Tif::Gtc),
            "good_til_day" => Ok(Tif::Gtd),
            "immediate_or_cancel" => Ok(Tif::Ioc),
            "fill_or_kill" => Ok(Tif::Fok),
            _ => Err(Reject::param("time_in_force", "invalid value")),
        }
    }
    const fn as_str(self) -> &'static str {
        match self {
            Tif::Gtc => "good_til_cancelled",
            Tif::Gtd => "good_til_day",
            Tif::Ioc => "immediate_or_cancel",
            Tif::Fok => "fill_or_kill",
        }
    }
}

#[derive(Clone, Debug)]
struct OrderRec {
    id: String,
    account: AccountId,
    instr: usize,
    side: Side,
    price: Price,
    market: bool,
    amount: Qty,
    filled: Qty,
    /// Σ price·qty of the fills (raw ticks × raw lots), for `average_price`.
    fill_notional: i128,
    state: OrderState,
    tif: Tif,
    post_only: bool,
    reject_post_only: bool,
    reduce_only: bool,
    label: String,
    created_ms: i64,
    updated_ms: i64,
    replaced: bool,
    cancel_reason: Option<&'static str>,
}

impl OrderRec {
    fn remaining(&self) -> Qty {
        self.amount - self.filled
    }
}

/// A position: signed size in lots and the notional of the open part, for `average_price`.
#[derive(Clone, Copy, Debug, Default)]
struct Pos {
    size: i64,
    open_notional: i128,
}

#[derive(Debug, Default)]
struct Account {
    positions: HashMap<usize, Pos>,
    /// Every order id of the account, oldest first (open and closed).
    orders: Vec<String>,
    trades: Vec<api::UserTrade>,
    /// Balances by currency after fees; absent = the starting balance.
    balances: HashMap<String, Decimal>,
}

/// What every account starts with (the simulator has no deposits).
pub fn initial_balance(currency: &str) -> Decimal {
    match currency.to_ascii_uppercase().as_str() {
        "BTC" => Decimal::from_int(10),
        "ETH" => Decimal::from_int(100),
        _ => Decimal::from_int(1_000_000),
    }
}

/// One instrument's live state.
#[derive(Debug)]
struct Instr {
    spec: InstrumentSpec,
    info: api::Instrument,
    book: Book,
    change_id: i64,
    trade_seq: i64,
    tape: VecDeque<api::PublicTrade>,
    last_price: Option<Price>,
    /// Index price in ticks (the synthetic market's fair value).
    index: Price,
    high: Option<Price>,
    low: Option<Price>,
    volume: Qty,
    last_change_ms: i64,
}

const TAPE_LEN: usize = 1_000;

/// The venue. See the module header.
#[derive(Debug)]
pub struct Venue {
    instrs: Vec<Instr>,
    by_name: HashMap<String, usize>,
    orders: HashMap<String, OrderRec>,
    /// Book key (numeric tail of the order id) → order id.
    keys: HashMap<u64, String>,
    accounts: HashMap<AccountId, Account>,
    next_order: u64,
    next_trade: u64,
    rng: Rng,
    started_ms: i64,
}

impl Venue {
    /// A venue over `instruments` (with their `get_instruments` description), each seeded around
    /// `start_prices[i]` (a decimal price) by the synthetic market.
    pub fn new(instruments: Vec<(InstrumentSpec, api::Instrument, Decimal)>, seed: u64, now: Utc) -> Venue {
        let mut venue = Venue {
            instrs: Vec::new(),
            by_name: HashMap::new(),
            orders: HashMap::new(),
            keys: HashMap::new(),
            accounts: HashMap::new(),
            next_order: 1,
            next_trade: 1,
            rng: Rng::new(seed),
            started_ms: now.as_millis(),
        };
        for (spec, info, start) in instruments {
            let index = spec.price_from_decimal(start).unwrap_or(Price::from_raw(1_000));
            venue.by_name.insert(spec.name.clone(), venue.instrs.len());
            venue.instrs.push(Instr {
                spec,
                info,
                book: Book::default(),
                change_id: 1_000 + venue.rng.below(1_000) as i64,
                trade_seq: 0,
                tape: VecDeque::new(),
                last_price: None,
                index,
                high: None,
                low: None,
                volume: Qty::from_raw(0),
                last_change_ms: now.as_millis(),
            });
        }
        venue
    }

    pub fn instrument_count(&self) -> usize {
        self.instrs.len()
    }

    pub fn find(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    pub fn find_by_id(&self, id: u32) -> Option<usize> {
        self.instrs.iter().position(|i| i.info.instrument_id == id)
    }

    pub fn spec(&self, instr: usize) -> &InstrumentSpec {
        &self.instrs[instr].spec
    }

    pub fn info(&self, instr: usize) -> &api::Instrument {
        &self.instrs[instr].info
    }

    pub fn instruments(&self) -> impl Iterator<Item = (usize, &api::Instrument)> {
        self.instrs.iter().enumerate().map(|(i, s)| (i, &s.info))
    }

    pub fn change_id(&self, instr: usize) -> i64 {
        self.instrs[instr].change_id
    }

    pub fn last_change_ms(&self, instr: usize) -> i64 {
        self.instrs[instr].last_change_ms
    }

    /// Levels of one side, best first, at most `depth`.
    pub fn levels(&self, instr: usize, side: Side, depth: usize) -> Vec<(Price, Qty)> {
        self.instrs[instr].book.levels(side).take(depth).collect()
    }

    pub fn best(&self, instr: usize, side: Side) -> Option<(Price, Qty)> {
        self.instrs[instr].book.best(side)
    }

    pub fn index_price(&self, instr: usize) -> Price {
        self.instrs[instr].index
    }

    /// Recent public trades, newest last.
    pub fn tape(&self, instr: usize) -> impl DoubleEndedIterator<Item = &api::PublicTrade> {
        self.instrs[instr].tape.iter()
    }

    /// The account's balance in `currency` (start balance minus fees paid).
    pub fn balance(&self, account: AccountId, currency: &str) -> Decimal {
        let currency = currency.to_ascii_uppercase();
        self.accounts
            .get(&account)
            .and_then(|a| a.balances.get(&currency))
            .copied()
            .unwrap_or_else(|| initial_balance(&currency))
    }

    pub fn tape_len(&self, instr: usize) -> usize {
        self.instrs[instr].tape.len()
    }

    fn account(&mut self, account: AccountId) -> &mut Account {
        self.accounts.entry(account).or_default()
    }

    fn next_change(&mut self, instr: usize, now_ms: i64, changes: Vec<LevelChange>, out: &mut Vec<Event>) {
        if changes.is_empty() {
            return;
        }
        let state = &mut self.instrs[instr];
        let prev = state.change_id;
        // Deribit's change ids are not +1 per instrument; jump by a small random step too.
        state.change_id += 1 + self.rng.below(3) as i64;
        state.last_change_ms = now_ms;
        out.push(Event::Book {
            instr,
            change_id: state.change_id,
            prev_change_id: prev,
            timestamp_ms: now_ms,
            changes,
        });
    }
}
