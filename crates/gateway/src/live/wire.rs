//! What the live session keeps about the wire between a request and its answer, and the
//! conversion of Deribit's order and trade objects into the strategy crate's reports.
//!
//! Owns: [`InFlight`] (request id → what the request was, a fixed ring), [`Query`] (a
//! reconciliation query waiting for credits), [`Instruments`] (instrument name → id, specs,
//! the per-instrument channel names and the currency groups of reconciliation), and the
//! conversion of `deribit-proto` reports (decimal text) into `ticktrade_strategy` reports
//! (ticks and lots).
//! Must not: do I/O, read a clock, or allocate after start-up (the conversions borrow and copy
//! into inline strings).

use rustc_hash::FxHashMap;
use ticktrade_core::{Decimal, InstrumentId, InstrumentSpec, Price, Qty, Side};
use ticktrade_deribit_proto::report::OrderReport as WireOrder;
use ticktrade_deribit_proto::report::{OrderState, TradeReport};
use ticktrade_strategy::order::VenueState;
use ticktrade_strategy::{FillReport, Label, OrderReport, TradeId, VenueId};

/// A reconciliation query, queued until the venue's credits allow it: one instrument's, or
/// one currency group's (see [`Instruments::currencies`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Query {
    UserTrades(InstrumentId),
    OpenOrders(InstrumentId),
    Position(InstrumentId),
    /// The trades of a currency group from `from_ms` (venue time, included), oldest first.
    CurrencyTrades {
        group: Group,
        from_ms: u64,
    },
    CurrencyOpenOrders(Group),
    CurrencyPositions(Group),
}

impl Query {
    /// How its answer is routed.
    pub fn pending(self) -> Pending {
        match self {
            Query::UserTrades(i) => Pending::UserTrades(i),
            Query::OpenOrders(i) => Pending::OpenOrders(i),
            Query::Position(i) => Pending::Position(i),
            Query::CurrencyTrades { group, from_ms } => Pending::CurrencyTrades { group, from_ms },
            Query::CurrencyOpenOrders(g) => Pending::CurrencyOpenOrders(g),
            Query::CurrencyPositions(g) => Pending::CurrencyPositions(g),
        }
    }
}

/// A currency group of the session's instruments: an index into [`Instruments::currencies`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Group(pub u16);

/// What a request was, so its answer can be routed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pending {
    Auth,
    Heartbeat,
    CancelOnDisconnect,
    AccountSummary,
    /// One run of the session's channels (book channels, then private ones): `len` of them
    /// from `first`, as many as fit one request (`requests::channel_batches`).
    Subscribe {
        first: u32,
        len: u32,
    },
    Unsubscribe,
    /// A re-subscription of one book (after a gap or a silent stream).
    Resubscribe(InstrumentId),
    Test,
    Place(Label),
    Edit(Label),
    Cancel(Label),
    CancelAll,
    /// Reconciliation and shutdown queries.
    OrderByLabel(Label),
    UserTrades(InstrumentId),
    OpenOrders(InstrumentId),
    Position(InstrumentId),
    CurrencyTrades {
        group: Group,
        from_ms: u64,
    },
    CurrencyOpenOrders(Group),
    CurrencyPositions(Group),
    /// A closing order sent by `--flatten`.
    Flatten(InstrumentId),
}

impl Pending {
    /// A reconciliation query (an order's fate, trades, open orders, positions): the next
    /// reconciliation step waits for all of them, and a refused one resets the connection.
    pub fn is_reconciliation_query(&self) -> bool {
        matches!(
            self,
            Pending::OrderByLabel(_)
                | Pending::UserTrades(_)
                | Pending::OpenOrders(_)
                | Pending::Position(_)
                | Pending::CurrencyTrades { .. }
                | Pending::CurrencyOpenOrders(_)
                | Pending::CurrencyPositions(_)
        )
    }
}

/// Requests sent and not yet answered, by id: a ring of `2^k` slots indexed by the id's low
/// bits. Ids increase by one per request, so a slot is only reused after `2^k` later
/// requests; an answer whose slot holds another id is stale and ignored.
#[derive(Clone, Debug)]
pub struct InFlight {
    slots: Vec<Option<(u64, Pending)>>,
    mask: u64,
    next_id: u64,
    /// Requests whose slot was taken over before they were answered.
    pub overwritten: u64,
}

impl InFlight {
    /// Room for at least `capacity` outstanding requests.
    pub fn new(capacity: usize) -> InFlight {
        let n = capacity.max(16).next_power_of_two();
        InFlight { slots: vec![None; n], mask: n as u64 - 1, next_id: 1, overwritten: 0 }
    }

    /// Takes the next id for `pending`.
    #[inline]
    pub fn issue(&mut self, pending: Pending) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let slot = &mut self.slots[(id & self.mask) as usize];
        if slot.is_some() {
            self.overwritten += 1;
        }
        *slot = Some((id, pending));
        id
    }

    /// The request `id` answered, removed.
    #[inline]
    pub fn take(&mut self, id: u64) -> Option<Pending> {
        let slot = &mut self.slots[(id & self.mask) as usize];
        match *slot {
            Some((held, pending)) if held == id => {
                *slot = None;
                Some(pending)
            }
            _ => None,
        }
    }

    /// The request `id` answers, left in place.
    #[inline]
    pub fn peek(&self, id: u64) -> Option<&Pending> {
        match &self.slots[(id & self.mask) as usize] {
            Some((held, pending)) if *held == id => Some(pending),
            _ => None,
        }
    }

    /// Whether any request matching `f` is still unanswered.
    pub fn any(&self, mut f: impl FnMut(&Pending) -> bool) -> bool {
        self.slots.iter().flatten().any(|(_, p)| f(p))
    }

    /// Forgets every request (their answers died with the connection). Ids keep increasing.
    pub fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = None);
    }

    /// The id the next request will get.
    pub fn next_id(&self) -> u64 {
        self.next_id
    }
}

/// The session's instruments, `specs[i].id == InstrumentId(i)`, with the channel names.
#[derive(Clone, Debug)]
pub struct Instruments {
    pub specs: Vec<InstrumentSpec>,
    /// `book.{name}.{interval}` per instrument.
    pub book_channels: Vec<String>,
    /// `user.orders.{name}.raw`, `user.trades.{name}.raw`, `ticker.{name}.100ms`.
    pub private_channels: Vec<String>,
    /// `book_channels` back to the instrument: every book frame is looked up here, so a
    /// session on hundreds of instruments must not compare names one by one.
    by_book_channel: FxHashMap<Box<[u8]>, InstrumentId>,
    /// The currencies the session reconciles with currency-wide queries (a few requests per
    /// currency instead of per instrument), in order of first appearance.
    pub currencies: Vec<String>,
    /// Each instrument's group, or `None` for one reconciled with per-instrument queries.
    pub group: Vec<Option<Group>>,
    /// Instrument names back to ids ([`Self::id_of`]).
    by_name: FxHashMap<Box<str>, InstrumentId>,
}

impl Instruments {
    /// `raw` books need an authenticated session; without one the `100ms` books are used.
    pub fn new(specs: Vec<InstrumentSpec>, authenticated: bool) -> Instruments {
        let interval = if authenticated { "raw" } else { "100ms" };
        let book_channels: Vec<String> = specs.iter().map(|s| format!("book.{}.{interval}", s.name)).collect();
        let private_channels = if authenticated {
            specs
                .iter()
                .flat_map(|s| [format!("user.orders.{}.raw", s.name), format!("user.trades.{}.raw", s.name)])
                .collect()
        } else {
            Vec::new()
        };
        let by_book_channel =
            (0u32..).zip(&book_channels).map(|(i, c)| (c.as_bytes().into(), InstrumentId(i))).collect();
        let by_name = (0u32..).zip(&specs).map(|(i, s)| (s.name.as_str().into(), InstrumentId(i))).collect();
        let mut currencies: Vec<String> = Vec::new();
        let group = specs
            .iter()
            .map(|spec| {
                let currency = query_currency(spec)?;
                let at = match currencies.iter().position(|c| c == currency) {
                    Some(at) => at,
                    None => {
                        currencies.push(currency.to_owned());
                        currencies.len() - 1
                    }
                };
                u16::try_from(at).ok().map(Group)
            })
            .collect();
        Instruments { specs, book_channels, private_channels, by_book_channel, currencies, group, by_name }
    }

    /// The instruments of `group`.
    pub fn members(&self, group: Group) -> impl Iterator<Item = InstrumentId> + '_ {
        (0u32..).zip(&self.group).filter(move |(_, g)| **g == Some(group)).map(|(i, _)| InstrumentId(i))
    }

    /// The session's instrument called `name` if it belongs to `group`: a currency-wide answer
    /// also lists instruments the session does not trade, and (on a venue that files an
    /// instrument under more than one currency) ones another group or query covers.
    pub fn in_group(&self, name: &str, group: Group) -> Option<InstrumentId> {
        let id = self.id_of(name)?;
        (self.group[id.0 as usize] == Some(group)).then_some(id)
    }

    pub fn len(&self) -> usize {
        self.specs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    /// The id of the instrument called `name` (every order report and trade is looked up
    /// here, so a session on hundreds of instruments must not compare names one by one).
    #[inline]
    pub fn id_of(&self, name: &str) -> Option<InstrumentId> {
        self.by_name.get(name).copied()
    }

    /// The instrument of a book channel (`book.{name}.…`).
    #[inline]
    pub fn of_book_channel(&self, channel: &[u8]) -> Option<InstrumentId> {
        self.by_book_channel.get(channel).copied()
    }

    pub fn spec(&self, id: InstrumentId) -> &InstrumentSpec {
        &self.specs[id.0 as usize]
    }
}

/// The currency whose currency-wide queries (`get_open_orders_by_currency`, `get_positions`,
/// `get_user_trades_by_currency`) are known to cover `spec`, if any. Deribit files a
/// coin-settled instrument (inverse futures, coin options) under its base coin; a linear
/// instrument (`BTC_USDC-PERPETUAL`, base BTC, settled in USDC) it lists under the settlement
/// currency in `get_instruments`, and spot under neither for sure. A stop that asked the wrong
/// currency would see no open order and call itself clean, so only instruments whose base and
/// settlement currency agree are grouped; the others keep the per-instrument queries, as does
/// an instrument without a currency these methods take (a refused query costs the connection).
pub fn query_currency(spec: &InstrumentSpec) -> Option<&str> {
    let base = spec.base_currency.as_str();
    (spec.settlement_currency == base && QUERY_CURRENCIES.contains(&base)).then_some(base)
}

/// The `currency` values Deribit documents for `get_open_orders_by_currency` and
/// `get_user_trades_by_currency` (`get_positions` takes these too).
const QUERY_CURRENCIES: [&str; 5] = ["BTC", "ETH", "USDC", "USDT", "EURR"];

/// Why a venue report could not be converted (the session counts these; none is fatal).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConvertError {
    #[error("instrument not traded by this session")]
    OtherInstrument,
    #[error("label or id longer than this session keeps")]
    TooLong,
    #[error("price or amount off the instrument's grid")]
    OffGrid,
    #[error("order state this session does not track (untriggered stop)")]
    Untracked,
}

/// A venue order object in the instrument's ticks and lots.
pub fn order_report(wire: &WireOrder<'_>, instruments: &Instruments) -> Result<OrderReport, ConvertError> {
    let instrument = instruments.id_of(wire.instrument_name).ok_or(ConvertError::OtherInstrument)?;
    let spec = instruments.spec(instrument);
    let state = match wire.order_state {
        OrderState::Open => VenueState::Open,
        OrderState::Filled | OrderState::Closed | OrderState::Archive => VenueState::Filled,
        OrderState::Cancelled => VenueState::Cancelled,
        OrderState::Rejected => VenueState::Rejected,
        OrderState::Untriggered | OrderState::Triggered => return Err(ConvertError::Untracked),
    };
    // A market order has no price; it is kept at 0 (the strategy's orders are limit orders).
    let price = match wire.price {
        Some(p) => spec.price_from_decimal(p).map_err(|_| ConvertError::OffGrid)?,
        None => Price::from_raw(0),
    };
    Ok(OrderReport {
        label: Label::try_from_str(wire.label).ok_or(ConvertError::TooLong)?,
        venue_id: VenueId::try_from_str(wire.order_id).ok_or(ConvertError::TooLong)?,
        instrument,
        side: wire.direction,
        price,
        qty: qty(spec, wire.amount)?,
        filled: qty(spec, wire.filled_amount)?,
        avg_price: wire.average_price,
        state,
        updated_ms: i64::try_from(wire.last_update_timestamp).unwrap_or(i64::MAX),
    })
}

/// A venue trade object of ours in the instrument's ticks and lots.
pub fn fill_report(wire: &TradeReport<'_>, instruments: &Instruments) -> Result<FillReport, ConvertError> {
    let instrument = instruments.id_of(wire.instrument_name).ok_or(ConvertError::OtherInstrument)?;
    let spec = instruments.spec(instrument);
    Ok(FillReport {
        trade_id: TradeId::try_from_str(wire.trade_id).ok_or(ConvertError::TooLong)?,
        label: Label::try_from_str(wire.label).ok_or(ConvertError::TooLong)?,
        instrument,
        side: wire.direction,
        price: spec.price_from_decimal(wire.price).map_err(|_| ConvertError::OffGrid)?,
        qty: qty(spec, wire.amount)?,
    })
}

fn qty(spec: &InstrumentSpec, amount: Decimal) -> Result<Qty, ConvertError> {
    spec.qty_from_decimal(amount).map_err(|_| ConvertError::OffGrid)
}

/// A signed position in lots from `get_position`'s `size` (negative when short).
pub fn position_lots(spec: &InstrumentSpec, size: Decimal) -> Result<i64, ConvertError> {
    let magnitude = size.mantissa().checked_abs().ok_or(ConvertError::OffGrid)?;
    let abs = Decimal::new(magnitude, size.scale()).map_err(|_| ConvertError::OffGrid)?;
    let lots = qty(spec, abs)?.raw();
    Ok(if size.is_negative() { -lots } else { lots })
}

/// The side that closes a position of `lots` (positive = long).
pub fn closing_side(lots: i64) -> Side {
    if lots > 0 { Side::Sell } else { Side::Buy }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_find_their_request_once() {
        let mut inflight = InFlight::new(16);
        let a = inflight.issue(Pending::Auth);
        let b = inflight.issue(Pending::Test);
        assert_eq!(inflight.take(b), Some(Pending::Test));
        assert_eq!(inflight.take(b), None);
        assert!(inflight.any(|p| *p == Pending::Auth));
        assert_eq!(inflight.take(a), Some(Pending::Auth));
        assert!(!inflight.any(|_| true));
    }

    #[test]
    fn a_slot_reused_after_a_full_turn_forgets_the_old_request() {
        let mut inflight = InFlight::new(16);
        let first = inflight.issue(Pending::Auth);
        for _ in 0..16 {
            inflight.issue(Pending::Test);
        }
        assert_eq!(inflight.overwritten, 1);
        assert_eq!(inflight.take(first), None, "an answer to an overwritten id is stale");
    }

    #[test]
    fn instruments_map_names_and_channels() {
        let specs = vec![
            InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::parse("10").unwrap())
                .unwrap(),
        ];
        let instruments = Instruments::new(specs, true);
        assert_eq!(instruments.of_book_channel(b"book.BTC-PERPETUAL.raw"), Some(InstrumentId(0)));
        assert_eq!(instruments.of_book_channel(b"book.ETH-PERPETUAL.raw"), None);
        assert_eq!(instruments.private_channels, ["user.orders.BTC-PERPETUAL.raw", "user.trades.BTC-PERPETUAL.raw"]);
        let public = Instruments::new(instruments.specs.clone(), false);
        assert_eq!(public.book_channels, ["book.BTC-PERPETUAL.100ms"]);
        assert!(public.private_channels.is_empty());
    }

    #[test]
    fn instruments_settled_in_their_base_coin_are_grouped_by_it() {
        let spec = |name: &str, base: &str, settlement: &str| {
            let mut spec =
                InstrumentSpec::simple(name, Decimal::parse("0.5").unwrap(), Decimal::parse("10").unwrap()).unwrap();
            spec.base_currency = base.to_owned();
            spec.settlement_currency = settlement.to_owned();
            spec
        };
        let specs = vec![
            spec("BTC-PERPETUAL", "BTC", "BTC"),
            spec("ETH-PERPETUAL", "ETH", "ETH"),
            spec("BTC_USDC-PERPETUAL", "BTC", "USDC"),
            spec("BTC-27DEC24", "BTC", "BTC"),
            spec("SOL-PERPETUAL", "SOL", "SOL"),
            spec("TEST", "", ""),
        ];
        let instruments = Instruments::new(specs, true);
        assert_eq!(instruments.currencies, ["BTC", "ETH"]);
        assert_eq!(instruments.group, [Some(Group(0)), Some(Group(1)), None, Some(Group(0)), None, None]);
        let btc: Vec<InstrumentId> = instruments.members(Group(0)).collect();
        assert_eq!(btc, [InstrumentId(0), InstrumentId(3)]);
        assert_eq!(instruments.in_group("BTC-27DEC24", Group(0)), Some(InstrumentId(3)));
        // Listed under BTC by a venue that files it under both: another query covers it.
        assert_eq!(instruments.in_group("BTC_USDC-PERPETUAL", Group(0)), None);
        assert_eq!(instruments.in_group("BTC-28MAR25", Group(0)), None);
        assert_eq!(instruments.in_group("ETH-PERPETUAL", Group(0)), None);
    }

    #[test]
    fn positions_are_signed_lots() {
        let spec =
            InstrumentSpec::simple("BTC-PERPETUAL", Decimal::parse("0.5").unwrap(), Decimal::parse("10").unwrap())
                .unwrap();
        assert_eq!(position_lots(&spec, Decimal::parse("-30").unwrap()), Ok(-3));
        assert_eq!(position_lots(&spec, Decimal::parse("20").unwrap()), Ok(2));
        assert_eq!(position_lots(&spec, Decimal::parse("25").unwrap()), Err(ConvertError::OffGrid));
        assert_eq!(closing_side(-3), Side::Buy);
    }
}
