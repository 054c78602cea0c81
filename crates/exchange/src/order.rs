//! Orders as the engine keeps them, and the requests that create and change them.
//!
//! Owns: `Order` (a `Copy` record: every field Deribit's order object shows, except that
//! names are ids and numbers are ticks/lots), its enums with Deribit's spellings, `Label`
//! (inline, ≤ 64 bytes, no heap), and the request parameter structs.
//! Must not: know JSON; the simulator maps these to Deribit's wire names.

use ticktrade_core::{Decimal, InstrumentId, InstrumentKind, Price, Qty, Side, Utc};

use crate::catalogue::CurrencyId;
use crate::reject::Reject;

/// An account (Deribit user or subaccount) trading on the engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct AccountId(pub u32);

/// The API connection (WebSocket session) an order was placed through. Deribit's
/// cancel-on-disconnect cancels the orders of the connection that closed, not the account's:
/// the order carries it so that rule needs no table beside the book.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ConnectionId(pub u64);

macro_rules! wire_enum {
    ($(#[$m:meta])* $name:ident { $($variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name { $($variant),+ }
        impl $name {
            pub const ALL: &'static [$name] = &[$($name::$variant),+];
            /// Deribit's spelling.
            pub const fn as_str(self) -> &'static str {
                match self { $($name::$variant => $text),+ }
            }
            pub fn parse(text: &str) -> Option<$name> {
                match text { $($text => Some($name::$variant),)+ _ => None }
            }
        }
    };
}

wire_enum!(
    /// Deribit's `type` / `order_type`.
    OrderType {
        Limit = "limit",
        Market = "market",
        MarketLimit = "market_limit",
        StopLimit = "stop_limit",
        StopMarket = "stop_market",
        TakeLimit = "take_limit",
        TakeMarket = "take_market",
        TrailingStop = "trailing_stop",
    }
);

impl OrderType {
    /// Orders that rest `untriggered` until a price crosses their trigger.
    pub const fn is_trigger(self) -> bool {
        matches!(
            self,
            OrderType::StopLimit
                | OrderType::StopMarket
                | OrderType::TakeLimit
                | OrderType::TakeMarket
                | OrderType::TrailingStop
        )
    }

    /// Types that need a limit `price`.
    pub const fn needs_price(self) -> bool {
        matches!(self, OrderType::Limit | OrderType::StopLimit | OrderType::TakeLimit)
    }
}

wire_enum!(
    /// Deribit's `time_in_force`.
    TimeInForce {
        GoodTilCancelled = "good_til_cancelled",
        GoodTilDay = "good_til_day",
        FillOrKill = "fill_or_kill",
        ImmediateOrCancel = "immediate_or_cancel",
    }
);

wire_enum!(
    /// Deribit's `order_state`.
    OrderState {
        Open = "open",
        Filled = "filled",
        Rejected = "rejected",
        Cancelled = "cancelled",
        Untriggered = "untriggered",
        Triggered = "triggered",
    }
);

impl OrderState {
    /// Open and untriggered orders can still change; the rest are history.
    pub const fn is_live(self) -> bool {
        matches!(self, OrderState::Open | OrderState::Untriggered)
    }
}

wire_enum!(
    /// Deribit's `trigger`.
    TriggerKind {
        IndexPrice = "index_price",
        MarkPrice = "mark_price",
        LastPrice = "last_price",
    }
);

wire_enum!(
    /// Deribit's `cancel_reason`.
    CancelReason {
        UserRequest = "user_request",
        ImmediateOrCancel = "immediate_or_cancel",
        FillOrKill = "fill_or_kill",
        SelfTrade = "self_trade",
        GoodTilDay = "good_til_day",
        Expired = "expired",
        ReduceOnly = "reduce_only",
        CancelOnDisconnect = "cancel_on_disconnect",
        MmpTrigger = "mmp_trigger",
    }
);

wire_enum!(
    /// `liquidity` of a user trade.
    Liquidity { Maker = "M", Taker = "T" }
);

/// Text of at most `N` bytes, kept inline so orders stay `Copy` and placing one does not
/// allocate.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct InlineText<const N: usize> {
    len: u8,
    bytes: [u8; N],
}

/// An order label: at most 64 bytes (Deribit's limit).
pub type Label = InlineText<64>;

/// A mass-quote name (`mmp_group`, `quote_set_id`, `quote_id`): at most 32 bytes. Deribit
/// states no limit; 32 keeps the order record small, and longer names get `-32602`.
pub type Tag = InlineText<32>;

impl<const N: usize> InlineText<N> {
    pub const MAX_LEN: usize = N;
    pub const EMPTY: InlineText<N> = InlineText { len: 0, bytes: [0; N] };

    /// `None` when `text` is longer than `N` bytes.
    pub fn try_new(text: &str) -> Option<InlineText<N>> {
        if text.len() > N || N > usize::from(u8::MAX) {
            return None;
        }
        let mut bytes = [0u8; N];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        Some(InlineText { len: text.len() as u8, bytes })
    }

    pub fn as_str(&self) -> &str {
        // Built only from a `&str`, cut at its full length: always valid UTF-8.
        std::str::from_utf8(&self.bytes[..usize::from(self.len)]).unwrap_or("")
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Label {
    /// Rejects labels over 64 bytes with Deribit's invalid-params error.
    pub fn new(text: &str) -> Result<Label, Reject> {
        Label::try_new(text).ok_or(Reject::invalid_params("label"))
    }
}

impl<const N: usize> PartialOrd for InlineText<N> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<const N: usize> Ord for InlineText<N> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl<const N: usize> Default for InlineText<N> {
    fn default() -> Self {
        InlineText::EMPTY
    }
}

impl<const N: usize> std::fmt::Debug for InlineText<N> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

/// What marks an order as a mass quote (`private/mass_quote`): Deribit's `quote_set_id` and
/// `quote_id`. The order's `mmp_group` is the quote's group.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct QuoteIds {
    pub quote_set_id: Tag,
    pub quote_id: Tag,
}

/// The trigger of a stop/take/trailing order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Trigger {
    pub kind: TriggerKind,
    /// Stop/take: the trigger price. Trailing: the current stop level (follows the peak).
    pub price: Price,
    /// Trailing only: the distance from the peak, in ticks.
    pub offset: Option<i64>,
    /// Trailing only: the best price seen since placement (`trigger_reference_price` at start).
    pub peak: f64,
    /// The trigger's price when the order was placed (Deribit's `trigger_reference_price`).
    pub reference: f64,
}

/// One order with its whole state. `Copy`, so events carry it by value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Order {
    pub id: u64,
    pub account: AccountId,
    pub instrument: InstrumentId,
    pub side: Side,
    pub order_type: OrderType,
    /// Set when a market or market_limit order rests as a limit, as Deribit shows it.
    pub original_order_type: Option<OrderType>,
    pub time_in_force: TimeInForce,
    /// `None` for market-type orders (Deribit prints `"market_price"`).
    pub price: Option<Price>,
    /// Total size (`amount`), and the part filled so far.
    pub amount: Qty,
    pub filled: Qty,
    pub state: OrderState,
    pub post_only: bool,
    pub reject_post_only: bool,
    pub reduce_only: bool,
    pub mmp: bool,
    /// The MMP group the order counts against (empty: the account's default group, which
    /// `private/buy`/`sell` with `mmp: true` use).
    pub mmp_group: Tag,
    /// Set on orders `private/mass_quote` placed.
    pub quote: Option<QuoteIds>,
    pub replaced: bool,
    pub label: Label,
    pub created: Utc,
    pub updated: Utc,
    /// Σ price × qty over fills, in ticks × lots, for `average_price`.
    pub filled_notional: i128,
    pub trigger: Option<Trigger>,
    /// For trigger orders: whether it fired. For orders a trigger created: the trigger's id.
    pub triggered: bool,
    pub trigger_order_id: Option<u64>,
    pub cancel_reason: Option<CancelReason>,
    /// Good-til-day orders expire at this instant (the next 08:00 UTC session end).
    pub expires: Option<Utc>,
    /// The connection that placed it (`None`: no connection, e.g. HTTP or the house). An
    /// edit keeps it; an order a trigger fires inherits the trigger's.
    pub connection: Option<ConnectionId>,
}

impl Order {
    pub fn remaining(&self) -> Qty {
        self.amount - self.filled
    }

    /// Average fill price in ticks (0 when nothing filled).
    pub fn average_price_ticks(&self) -> f64 {
        if self.filled.is_zero() { 0.0 } else { self.filled_notional as f64 / self.filled.raw() as f64 }
    }

    /// Whether the order's id is printed in the trigger form (`ETH-SLIS-12`).
    pub fn is_trigger_order(&self) -> bool {
        self.order_type.is_trigger()
    }
}

/// Size of a request: Deribit's `amount` and/or `contracts` (they must agree).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    pub amount: Option<Decimal>,
    pub contracts: Option<Decimal>,
}

impl Size {
    pub fn amount(amount: Decimal) -> Size {
        Size { amount: Some(amount), contracts: None }
    }
    pub fn contracts(contracts: Decimal) -> Size {
        Size { amount: None, contracts: Some(contracts) }
    }
}

/// `private/buy` / `private/sell`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlaceParams {
    pub instrument: InstrumentId,
    pub side: Side,
    pub size: Size,
    pub order_type: OrderType,
    pub price: Option<Decimal>,
    pub time_in_force: TimeInForce,
    pub post_only: bool,
    pub reject_post_only: bool,
    pub reduce_only: bool,
    pub label: Label,
    pub trigger: Option<TriggerKind>,
    pub trigger_price: Option<Decimal>,
    pub trigger_offset: Option<Decimal>,
    pub mmp: bool,
    /// The MMP group of an `mmp` order (empty for `private/buy`/`sell`; mass quotes name one).
    pub mmp_group: Tag,
    /// Set only by `private/mass_quote`.
    pub quote: Option<QuoteIds>,
    /// Deribit's `valid_until`: reject with `13888 timed_out` if the engine sees it later.
    pub valid_until: Option<Utc>,
    /// The connection placing it, recorded on the order for cancel-on-disconnect.
    pub connection: Option<ConnectionId>,
}

impl PlaceParams {
    /// A good-til-cancelled limit order.
    pub fn limit(instrument: InstrumentId, side: Side, amount: Decimal, price: Decimal) -> PlaceParams {
        PlaceParams {
            instrument,
            side,
            size: Size::amount(amount),
            order_type: OrderType::Limit,
            price: Some(price),
            time_in_force: TimeInForce::GoodTilCancelled,
            post_only: false,
            reject_post_only: false,
            reduce_only: false,
            label: Label::EMPTY,
            trigger: None,
            trigger_price: None,
            trigger_offset: None,
            mmp: false,
            mmp_group: Tag::EMPTY,
            quote: None,
            valid_until: None,
            connection: None,
        }
    }

    /// A market order.
    pub fn market(instrument: InstrumentId, side: Side, amount: Decimal) -> PlaceParams {
        PlaceParams {
            order_type: OrderType::Market,
            price: None,
            ..PlaceParams::limit(instrument, side, amount, amount)
        }
    }
}

/// Which order an edit or a query addresses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OrderRef {
    Id(u64),
    /// `edit_by_label`: the one open order with this label on this instrument.
    Label {
        instrument: InstrumentId,
        label: Label,
    },
}

/// `private/edit` / `private/edit_by_label`: a new total size and optionally a new price.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EditParams {
    pub order: OrderRef,
    pub size: Size,
    pub price: Option<Decimal>,
    pub post_only: bool,
    pub reject_post_only: bool,
    pub reduce_only: bool,
    pub trigger_price: Option<Decimal>,
    pub trigger_offset: Option<Decimal>,
    pub valid_until: Option<Utc>,
}

impl EditParams {
    pub fn new(order_id: u64, amount: Decimal, price: Option<Decimal>) -> EditParams {
        EditParams {
            order: OrderRef::Id(order_id),
            size: Size::amount(amount),
            price,
            post_only: false,
            reject_post_only: false,
            reduce_only: false,
            trigger_price: None,
            trigger_offset: None,
            valid_until: None,
        }
    }
}

/// The `type` filter of `cancel_all_by_*` and `get_open_orders*`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TypeFilter {
    #[default]
    All,
    Limit,
    TriggerAll,
    Stop,
    Take,
    TrailingStop,
    Exact(OrderType),
}

impl TypeFilter {
    /// Deribit's spellings: `all`, `limit`, `trigger_all`, `stop`/`stop_all`,
    /// `take`/`take_all`, `trailing_stop`/`trailing_all`, or an exact order type.
    pub fn parse(text: &str) -> Option<TypeFilter> {
        Some(match text {
            "all" => TypeFilter::All,
            "limit" => TypeFilter::Limit,
            "trigger_all" => TypeFilter::TriggerAll,
            "stop" | "stop_all" => TypeFilter::Stop,
            "take" | "take_all" => TypeFilter::Take,
            "trailing_stop" | "trailing_all" => TypeFilter::TrailingStop,
            other => TypeFilter::Exact(OrderType::parse(other)?),
        })
    }

    pub fn matches(self, order_type: OrderType) -> bool {
        match self {
            TypeFilter::All => true,
            TypeFilter::Limit => !order_type.is_trigger(),
            TypeFilter::TriggerAll => order_type.is_trigger(),
            TypeFilter::Stop => matches!(order_type, OrderType::StopLimit | OrderType::StopMarket),
            TypeFilter::Take => matches!(order_type, OrderType::TakeLimit | OrderType::TakeMarket),
            TypeFilter::TrailingStop => order_type == OrderType::TrailingStop,
            TypeFilter::Exact(t) => order_type == t,
        }
    }
}

/// Which orders `cancel_all*` and `get_open_orders*` address; `None` fields match anything.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OrderFilter {
    pub instrument: Option<InstrumentId>,
    pub currency: Option<CurrencyId>,
    pub kind: Option<InstrumentKind>,
    pub order_type: TypeFilter,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_names_round_trip() {
        for t in OrderType::ALL {
            assert_eq!(OrderType::parse(t.as_str()), Some(*t));
        }
        assert_eq!(TimeInForce::parse("fill_or_kill"), Some(TimeInForce::FillOrKill));
        assert_eq!(TypeFilter::parse("stop_all"), Some(TypeFilter::Stop));
        assert_eq!(TypeFilter::parse("take_market"), Some(TypeFilter::Exact(OrderType::TakeMarket)));
        assert!(TypeFilter::Stop.matches(OrderType::StopMarket) && !TypeFilter::Stop.matches(OrderType::Limit));
    }

    #[test]
    fn labels_are_inline_and_bounded() {
        assert_eq!(Label::new("market0000234").unwrap().as_str(), "market0000234");
        assert!(Label::new(&"x".repeat(64)).is_ok());
        assert_eq!(Label::new(&"x".repeat(65)).unwrap_err().code, -32602);
        assert!(Label::EMPTY.is_empty());
    }
}
