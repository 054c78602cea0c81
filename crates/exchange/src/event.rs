//! What the engine reports: replies to requests and events for subscribers.
//!
//! Owns: `Reply`, `Event` and the records events carry (`UserTrade`, `PublicTrade`,
//! `BookLevel`, `BookBatch`). All are `Copy` and carry ids, ticks and lots, so pushing one
//! into the caller's `Vec` never allocates once the `Vec` has grown.
//! Must not: know channel names or JSON (the simulator maps events to `user.orders.*`,
//! `user.trades.*`, `trades.*`, `book.*`, `ticker.*`, `user.portfolio.*`,
//! `user.mmp_trigger.*`).

use ticktrade_core::{InstrumentId, Price, Qty, Side, Utc};

use crate::catalogue::{CurrencyId, IndexId};
use crate::mmp::Frozen;
use crate::money::Money;
use crate::order::{AccountId, Label, Liquidity, Order, OrderState, OrderType, Tag};

/// The result of a successful request.
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // Copy and heap-free on purpose: boxing would allocate per request.
pub enum Reply {
    /// buy/sell/edit/cancel/close_position: the order after the request. Its own immediate
    /// fills (Deribit's `trades` array) are the `Event::UserTrade`s in `out` with
    /// `order_id == order.id`.
    Order(Order),
    /// cancel_all*/cancel_by_label: how many orders were cancelled.
    Count(u32),
}

/// A user's side of one fill (`user.trades.*`, `get_user_trades_*`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UserTrade {
    pub account: AccountId,
    pub instrument: InstrumentId,
    /// Unique per settlement currency (`ETH-2696083` once prefixed).
    pub trade_id: u64,
    /// Sequence number within the instrument.
    pub trade_seq: u64,
    pub timestamp: Utc,
    pub order_id: u64,
    pub order_type: OrderType,
    /// The user's own direction.
    pub side: Side,
    pub price: Price,
    pub qty: Qty,
    pub liquidity: Liquidity,
    /// Fee in the settlement currency (negative = rebate).
    pub fee: Money,
    pub fee_currency: CurrencyId,
    /// The order's state after this fill.
    pub state: OrderState,
    pub reduce_only: bool,
    pub post_only: bool,
    pub label: Label,
    /// PnL this fill realised on the position, settlement currency.
    pub profit_loss: Money,
    pub index_price: Money,
    pub mark_price: Money,
    /// 0 plus tick, 1 zero-plus, 2 minus, 3 zero-minus.
    pub tick_direction: u8,
}

/// One public trade (`trades.*`, `get_last_trades_by_instrument`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PublicTrade {
    pub instrument: InstrumentId,
    pub trade_id: u64,
    pub trade_seq: u64,
    pub timestamp: Utc,
    pub price: Price,
    pub qty: Qty,
    /// The taker's direction.
    pub direction: Side,
    pub tick_direction: u8,
    pub index_price: Money,
    pub mark_price: Money,
}

/// `new`/`change`/`delete` of Deribit's `book.*` changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BookAction {
    New,
    Change,
    Delete,
}

impl BookAction {
    pub const fn as_str(self) -> &'static str {
        match self {
            BookAction::New => "new",
            BookAction::Change => "change",
            BookAction::Delete => "delete",
        }
    }
}

/// One L2 level that changed (qty 0 with `Delete`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookLevel {
    pub instrument: InstrumentId,
    pub side: Side,
    pub action: BookAction,
    pub price: Price,
    pub qty: Qty,
}

/// Closes a run of `BookLevel` events of one instrument: one `book.*` notification.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookBatch {
    pub instrument: InstrumentId,
    pub change_id: u64,
    pub prev_change_id: u64,
    pub timestamp: Utc,
}

/// Something subscribers may want to hear about.
#[derive(Clone, Copy, Debug, PartialEq)]
#[allow(clippy::large_enum_variant)] // Copy and heap-free on purpose: boxing would allocate per event.
pub enum Event {
    /// An order changed (`user.orders.*`): placed, filled, cancelled, edited, triggered.
    Order(Order),
    UserTrade(UserTrade),
    PublicTrade(PublicTrade),
    /// A changed level; the `BookBatch` that follows closes the notification.
    BookLevel(BookLevel),
    BookBatch(BookBatch),
    /// An account's position in an instrument changed (query `Exchange::position`).
    Position {
        account: AccountId,
        instrument: InstrumentId,
    },
    /// An account's balance/margin in a currency changed (`user.portfolio.*`).
    Portfolio {
        account: AccountId,
        currency: CurrencyId,
    },
    /// Best bid/ask, last, mark or index changed (`ticker.*`, `quote.*`).
    Ticker {
        instrument: InstrumentId,
    },
    /// Market maker protection froze a group's quotes (`user.mmp_trigger.*`); its MMP
    /// orders were cancelled (reason `mmp_trigger`, in the `Order` events before this one).
    MmpTrigger {
        account: AccountId,
        index: IndexId,
        group: Tag,
        frozen: Frozen,
    },
}
