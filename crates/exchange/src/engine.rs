//! The exchange: state, configuration, the request entry point and order placement.
//!
//! Owns: `Exchange` (catalogue, one `Market` per instrument with its `L4Book`, live and
//! closed orders, accounts, index prices, id counters), `Config`, `Request`, `SelfTrade`,
//! and the validation of `private/buy`/`sell` (sizes, ticks, post-only, reduce-only, funds).
//! Must not: read a clock (`now` comes in), do I/O, or allocate per request once warm (events
//! go into the caller's `Vec`; scratch buffers are reused).
//!
//! Matching lives in `matching.rs`, cancel/edit/triggers in `manage.rs`, queries and price
//! inputs in `query.rs`.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use ticktrade_book::l4::L4Book;
use ticktrade_core::{Decimal, InstrumentId, InstrumentKind, NumberError, Price, Qty, Side, Utc};

use crate::account::{Account, order_margin};
use crate::catalogue::{Catalogue, CurrencyId, Instrument, SETTLEMENT_HOUR_MS};
use crate::event::{Event, PublicTrade, Reply, UserTrade};
use crate::history::History;
use crate::mmp::Mmp;
use crate::money::Money;
use crate::order::{
    AccountId, CancelReason, ConnectionId, EditParams, Label, Order, OrderFilter, OrderState, OrderType, PlaceParams,
    Size, TimeInForce, Trigger, TriggerKind,
};
use crate::reject::Reject;

/// Largest order size (lots) and price (ticks) accepted: keeps every sum the engine and the
/// book form (level totals, volumes, notionals) far from `i64` overflow.
pub const MAX_UNITS: i64 = 1_000_000_000_000;

/// What happens when an order would trade against a resting order of the same account.
///
/// Deribit's account setting `self_trading_reject_mode` offers `cancel_maker` and
/// `reject_taker`; `cancel_maker` is the default here.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SelfTrade {
    /// Cancel the resting order (reason `self_trade`) and keep matching.
    #[default]
    CancelMaker,
    /// Stop matching: the taker's rest is cancelled; with no fill yet the request is
    /// rejected with `10003 order_overlap`.
    RejectTaker,
}

/// Engine settings.
#[derive(Clone, Debug)]
pub struct Config {
    pub self_trade: SelfTrade,
    /// Balance a new account starts with, per currency name (others start at zero).
    pub initial_balances: Vec<(String, Money)>,
    /// How many closed orders and user trades are kept for queries (oldest dropped).
    pub history_len: usize,
    /// Public trades kept per instrument for `get_last_trades_by_instrument`.
    pub recent_trades_len: usize,
    /// One-minute candles kept per instrument for `get_tradingview_chart_data`.
    pub candles_len: usize,
    /// First order id (Deribit's look like `ETH-584849853`).
    pub first_order_id: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            self_trade: SelfTrade::CancelMaker,
            initial_balances: vec![
                ("BTC".into(), Money::from_int(10)),
                ("ETH".into(), Money::from_int(100)),
                ("USDC".into(), Money::from_int(1_000_000)),
            ],
            history_len: 10_000,
            recent_trades_len: 100,
            candles_len: 1_440,
            first_order_id: 584_849_853,
        }
    }
}

/// A matching-engine request (Deribit's `private/*` trading methods).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Request {
    /// `private/buy` and `private/sell`.
    Place(PlaceParams),
    /// `private/edit` and `private/edit_by_label`.
    Edit(EditParams),
    /// `private/cancel`.
    Cancel { order_id: u64 },
    /// `private/cancel_by_label` (optionally restricted to one currency).
    CancelByLabel { label: Label, currency: Option<CurrencyId> },
    /// `private/cancel_all`, `…_by_instrument`, `…_by_currency`, `…_by_kind_or_type`.
    CancelAll(OrderFilter),
    /// Cancel-on-disconnect: every live order of the account placed through `connection`,
    /// each with `cancel_reason` `cancel_on_disconnect` (as Deribit reports it). Orders of the
    /// account's other connections stay: Deribit cancels "all orders created via this
    /// connection".
    CancelOnDisconnect { connection: ConnectionId },
    /// `private/close_position`: `Limit` needs a price, `Market` does not. `connection` is
    /// recorded on the closing order, as for `Place`.
    ClosePosition {
        instrument: InstrumentId,
        order_type: OrderType,
        price: Option<Decimal>,
        connection: Option<ConnectionId>,
    },
}

/// One minute of trading in one instrument.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Candle {
    /// Start of the minute.
    pub start: Utc,
    pub open: Price,
    pub high: Price,
    pub low: Price,
    pub close: Price,
    /// Traded quantity in lots.
    pub volume: Qty,
}

/// Per-instrument state.
#[derive(Debug)]
pub(crate) struct Market {
    pub book: L4Book<AccountId>,
    pub change_id: u64,
    pub trade_seq: u64,
    pub last: Option<Price>,
    pub tick_direction: u8,
    /// Mark price in the instrument's price unit; 0 = unset (falls back to index or last).
    pub mark: Money,
    pub volume: Qty,
    pub open_interest: i64,
    /// Untriggered orders waiting on this instrument's prices.
    pub triggers: Vec<u64>,
    pub recent: VecDeque<PublicTrade>,
    pub candles: VecDeque<Candle>,
    pub last_update: Utc,
    /// Expired and settled: no more orders.
    pub settled: bool,
}

/// Scratch space reused across requests (never shrinks).
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    /// Levels touched by this request, with their quantity before the first touch.
    pub touched: Vec<(InstrumentId, Side, Price, Qty)>,
    /// Accounts and currencies whose portfolio changed.
    pub portfolios: Vec<(AccountId, CurrencyId)>,
    /// Instruments whose ticker changed.
    pub tickers: Vec<InstrumentId>,
    pub ids: Vec<u64>,
}

/// The matching engine with its accounts. See the crate docs for the request/event model.
#[derive(Debug)]
pub struct Exchange {
    pub(crate) catalogue: Catalogue,
    pub(crate) config: Config,
    pub(crate) initial_balances: Vec<Money>,
    pub(crate) markets: Vec<Market>,
    pub(crate) orders: FxHashMap<u64, Order>,
    pub(crate) closed: History,
    pub(crate) accounts: FxHashMap<AccountId, Account>,
    pub(crate) index_prices: Vec<Money>,
    pub(crate) next_order_id: u64,
    pub(crate) next_trade_id: u64,
    pub(crate) user_trades: VecDeque<UserTrade>,
    pub(crate) gtd: Vec<(Utc, u64)>,
    /// The earliest expiry of an instrument not yet settled.
    pub(crate) next_expiry: Option<Utc>,
    /// Market maker protection: configs, fill windows and freezes (see `mmp.rs`).
    pub(crate) mmp: Mmp,
    /// Balance changes and expiries (see `ledger.rs`).
    pub(crate) ledger: crate::ledger::Ledger,
    pub(crate) scratch: Scratch,
}

impl Exchange {
    pub fn new(catalogue: Catalogue, config: Config) -> Exchange {
        let initial_balances = (0..catalogue.currencies().len())
            .map(|i| {
                let name = catalogue.currency_name(CurrencyId(i as u8));
                config.initial_balances.iter().find(|(n, _)| n == name).map_or(Money::ZERO, |(_, v)| *v)
            })
            .collect();
        let markets = catalogue
            .iter()
            .map(|_| Market {
                book: L4Book::new(),
                change_id: 0,
                trade_seq: 0,
                last: None,
                tick_direction: 0,
                mark: Money::ZERO,
                volume: Qty::ZERO,
                open_interest: 0,
                triggers: Vec::new(),
                recent: VecDeque::new(),
                candles: VecDeque::new(),
                last_update: Utc(0),
                settled: false,
            })
            .collect();
        Exchange {
            index_prices: vec![Money::ZERO; catalogue.indexes().len()],
            initial_balances,
            markets,
            orders: FxHashMap::default(),
            closed: History::new(config.history_len),
            accounts: FxHashMap::default(),
            next_order_id: config.first_order_id,
            next_trade_id: 2_696_083,
            user_trades: VecDeque::new(),
            gtd: Vec::new(),
            next_expiry: catalogue.iter().filter_map(|i| i.expiration_timestamp).min(),
            mmp: Mmp::default(),
            ledger: crate::ledger::Ledger::default(),
            scratch: Scratch::default(),
            catalogue,
            config,
        }
    }

    pub fn catalogue(&self) -> &Catalogue {
        &self.catalogue
    }

    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Reserves room for `n_orders` resting orders in `instrument` so matching does not allocate.
    pub fn reserve(&mut self, instrument: InstrumentId, n_orders: usize, n_levels: usize) {
        if let Some(m) = self.markets.get_mut(instrument.0 as usize)
            && m.book.is_empty()
        {
            m.book = L4Book::with_capacity(n_orders, n_levels);
        }
        self.orders.reserve(n_orders);
    }

    /// Opens an account with the configured initial balances (done implicitly on first use).
    pub fn account_mut(&mut self, account: AccountId) -> &mut Account {
        let initial = &self.initial_balances;
        self.accounts.entry(account).or_insert_with(|| Account::new(initial))
    }

    /// Marks an account as the house (no margin checks), e.g. the synthetic market makers.
    pub fn set_margin_exempt(&mut self, account: AccountId, exempt: bool) {
        self.account_mut(account).margin_exempt = exempt;
    }

    /// Sets what a self-trade of `account` does (Deribit's `private/set_self_trading_config`).
    pub fn set_self_trade(&mut self, account: AccountId, mode: SelfTrade) {
        self.account_mut(account).self_trade = Some(mode);
    }

    /// What a self-trade of `account` does: its own setting, else the venue's default.
    pub fn self_trade(&self, account: AccountId) -> SelfTrade {
        self.accounts.get(&account).and_then(|a| a.self_trade).unwrap_or(self.config.self_trade)
    }

    /// Adds `amount` (may be negative) to an account's balance in `currency`.
    pub fn deposit(&mut self, account: AccountId, currency: CurrencyId, amount: Money) {
        self.account_mut(account).balance_mut(currency).balance += amount;
    }

    /// Handles one request from `account` at `now`. Events (for this and other accounts)
    /// are appended to `out`. On `Err` the request changed nothing; `out` may still hold
    /// events of good-til-day orders that expired before `now` (see [`Exchange::advance`]).
    pub fn handle(
        &mut self,
        now: Utc,
        account: AccountId,
        request: Request,
        out: &mut Vec<Event>,
    ) -> Result<Reply, Reject> {
        self.advance(now, out);
        let result = match request {
            Request::Place(params) => self.place(now, account, &params, None, out).map(Reply::Order),
            Request::Edit(params) => self.edit(now, account, &params, out).map(Reply::Order),
            Request::Cancel { order_id } => self.cancel(now, account, order_id, out).map(Reply::Order),
            Request::CancelByLabel { label, currency } => {
                Ok(Reply::Count(self.cancel_where(now, account, CancelReason::UserRequest, out, |o, inst| {
                    o.label == label && currency.is_none_or(|c| inst.settlement_currency == c)
                })))
            }
            Request::CancelAll(filter) => {
                let reason = CancelReason::UserRequest;
                Ok(Reply::Count(
                    self.cancel_where(now, account, reason, out, |o, inst| filter_matches(&filter, o, inst)),
                ))
            }
            Request::CancelOnDisconnect { connection } => {
                let reason = CancelReason::CancelOnDisconnect;
                Ok(Reply::Count(self.cancel_where(now, account, reason, out, |o, _| o.connection == Some(connection))))
            }
            Request::ClosePosition { instrument, order_type, price, connection } => {
                self.close_position(now, account, instrument, order_type, price, connection, out).map(Reply::Order)
            }
        };
        self.finish(now, out);
        result
    }

    /// The end of every request: fires the last-price triggers its trades crossed (which may
    /// trade again), then emits the book, ticker and portfolio events.
    pub(crate) fn finish(&mut self, now: Utc, out: &mut Vec<Event>) {
        let mut i = 0;
        while i < self.scratch.tickers.len() {
            let instrument = self.scratch.tickers[i];
            if !self.markets[instrument.0 as usize].triggers.is_empty() {
                self.fire_triggers(now, instrument, out);
            }
            i += 1;
        }
        self.flush(now, out);
    }

    pub(crate) fn instrument(&self, id: InstrumentId) -> Result<&Instrument, Reject> {
        self.catalogue.get(id).ok_or(Reject::INVALID_INSTRUMENT)
    }

    /// Converts Deribit's `amount`/`contracts` into lots, with Deribit's errors.
    pub(crate) fn size_to_qty(inst: &Instrument, size: Size) -> Result<Qty, Reject> {
        let spec = &inst.spec;
        let from_amount = |amount: Decimal| -> Result<Qty, Reject> {
            if amount.is_negative() || amount.is_zero() {
                return Err(Reject::INVALID_AMOUNT);
            }
            if amount < spec.min_trade_amount {
                return Err(Reject::QTY_TOO_LOW);
            }
            spec.qty_from_decimal(amount).map_err(|e| match e {
                NumberError::OffGrid if spec.kind == InstrumentKind::Future => Reject::NON_INTEGER_CONTRACT_AMOUNT,
                _ => Reject::INVALID_AMOUNT,
            })
        };
        let qty = match (size.amount, size.contracts) {
            (None, None) => return Err(Reject::invalid_params("amount")),
            (Some(amount), None) => from_amount(amount)?,
            (amount, Some(contracts)) => {
                let as_amount = contracts.checked_mul(spec.contract_size).ok_or(Reject::INVALID_AMOUNT)?;
                let qty = from_amount(as_amount)?;
                if let Some(amount) = amount
                    && from_amount(amount)? != qty
                {
                    return Err(Reject::INVALID_AMOUNT.with_data("amount and contracts differ"));
                }
                qty
            }
        };
        if qty < spec.min_qty() {
            return Err(Reject::QTY_TOO_LOW);
        }
        if qty.raw() > MAX_UNITS {
            return Err(Reject::INVALID_AMOUNT);
        }
        Ok(qty)
    }

    pub(crate) fn parse_price(inst: &Instrument, price: Decimal, wrong_tick: Reject) -> Result<Price, Reject> {
        let price = inst.spec.price_from_decimal(price).map_err(|e| match e {
            NumberError::OffGrid => wrong_tick,
            _ => Reject::INVALID_PRICE,
        })?;
        if (!inst.spec.kind.is_combo() && !price.is_positive()) || price.raw().abs() > MAX_UNITS {
            return Err(Reject::INVALID_PRICE);
        }
        Ok(price)
    }

    pub(crate) fn take_order_id(&mut self) -> u64 {
        let id = self.next_order_id;
        self.next_order_id += 1;
        id
    }

    /// Validates and places an order; `trigger_parent` is set when a trigger order fires.
    pub(crate) fn place(
        &mut self,
        now: Utc,
        account: AccountId,
        p: &PlaceParams,
        trigger_parent: Option<u64>,
        out: &mut Vec<Event>,
    ) -> Result<Order, Reject> {
        if p.valid_until.is_some_and(|t| now > t) {
            return Err(Reject::TIMED_OUT);
        }
        let inst = self.instrument(p.instrument)?;
        if !inst.is_active
            || inst.expiration_timestamp.is_some_and(|t| now >= t)
            || self.markets[p.instrument.0 as usize].settled
        {
            return Err(Reject::BOOK_CLOSED);
        }
        let mut qty = Exchange::size_to_qty(inst, p.size)?;
        let price = match (p.order_type.needs_price(), p.price) {
            (true, None) => return Err(Reject::invalid_params("price")),
            (true, Some(price)) => Some(Exchange::parse_price(inst, price, Reject::PRICE_WRONG_TICK)?),
            (false, _) => None,
        };
        if p.post_only {
            if !matches!(p.order_type, OrderType::Limit | OrderType::StopLimit | OrderType::TakeLimit) {
                return Err(Reject::POST_ONLY_NOT_ALLOWED);
            }
            if p.time_in_force != TimeInForce::GoodTilCancelled {
                return Err(Reject::INVALID_ARGUMENTS.with_data("post_only requires good_til_cancelled"));
            }
        }
        if p.reject_post_only && !p.post_only {
            return Err(Reject::INVALID_ARGUMENTS.with_data("reject_post_only requires post_only"));
        }
        if p.mmp && p.order_type != OrderType::Limit {
            return Err(Reject::INVALID_ARGUMENTS.with_data("mmp is only for limit orders"));
        }
        if p.mmp && self.mmp_frozen(now, account, inst.index, p.mmp_group) {
            return Err(Reject::MMP_TRIGGER);
        }
        let trigger = if p.order_type.is_trigger() {
            let kind = p.trigger.ok_or(Reject::invalid_params("trigger"))?;
            let offset = if p.order_type == OrderType::TrailingStop {
                let offset = p.trigger_offset.ok_or(Reject::invalid_params("trigger_offset"))?;
                let ticks = Exchange::parse_price(inst, offset, Reject::TRIGGER_PRICE_WRONG_TICK)?.raw();
                if ticks <= 0 {
                    return Err(Reject::invalid_params("trigger_offset"));
                }
                Some(ticks)
            } else {
                None
            };
            // Before the first trade there is no last price: a trailing peak starts at the mark.
            let reference = match self.trigger_reference(p.instrument, kind) {
                r if r > 0.0 => r,
                _ => self.trigger_reference(p.instrument, TriggerKind::MarkPrice),
            };
            let trigger_price = match (p.trigger_price, offset) {
                (Some(tp), _) => Exchange::parse_price(inst, tp, Reject::TRIGGER_PRICE_WRONG_TICK)?,
                (None, Some(offset)) => {
                    let peak = (reference / inst.tick_f64).round() as i64;
                    Price::from_raw(peak.saturating_add(p.side.sign() * offset))
                }
                (None, None) => return Err(Reject::invalid_params("trigger_price")),
            };
            Some(Trigger { kind, price: trigger_price, offset, peak: reference, reference })
        } else {
            if p.trigger.is_some() || p.trigger_price.is_some() {
                return Err(Reject::INVALID_ARGUMENTS.with_data("trigger is only for trigger orders"));
            }
            None
        };
        let inst = self.instrument(p.instrument)?;
        if p.reduce_only && trigger.is_none() {
            qty = self.reduce_only_qty(account, inst, p.side, qty)?;
        }
        let inst = self.instrument(p.instrument)?;
        let exempt = self.accounts.get(&account).is_some_and(|a| a.margin_exempt);
        if !p.reduce_only && !exempt && trigger.is_none() {
            let ref_price = match price {
                Some(px) => inst.price_money(px),
                None => self.reference_price(p.instrument, p.side),
            };
            let (currency, need) = order_margin(inst, p.side, ref_price, qty);
            if need > self.available_funds(account, currency) {
                return Err(Reject::NOT_ENOUGH_FUNDS);
            }
        }
        let mut price = price;
        if p.post_only && trigger.is_none() {
            price = Some(self.post_only_price(p.instrument, p.side, price.unwrap_or_default(), p.reject_post_only)?);
        }
        let expires = (p.time_in_force == TimeInForce::GoodTilDay).then(|| session_end(now));
        let order = Order {
            id: self.take_order_id(),
            account,
            instrument: p.instrument,
            side: p.side,
            order_type: p.order_type,
            original_order_type: None,
            time_in_force: p.time_in_force,
            price,
            amount: qty,
            filled: Qty::ZERO,
            state: if trigger.is_some() { OrderState::Untriggered } else { OrderState::Open },
            post_only: p.post_only,
            reject_post_only: p.reject_post_only,
            reduce_only: p.reduce_only,
            mmp: p.mmp,
            mmp_group: p.mmp_group,
            quote: p.quote,
            replaced: false,
            label: p.label,
            created: now,
            updated: now,
            filled_notional: 0,
            trigger,
            triggered: false,
            trigger_order_id: trigger_parent,
            cancel_reason: None,
            expires,
            connection: p.connection,
        };
        if trigger.is_some() {
            self.orders.insert(order.id, order);
            self.markets[p.instrument.0 as usize].triggers.push(order.id);
            out.push(Event::Order(order));
            self.fire_triggers(now, p.instrument, out);
            return Ok(self.orders.get(&order.id).copied().unwrap_or(order));
        }
        self.execute(now, order, out)
    }

    /// Deribit's reduce-only: the order may only shrink the position; its size is capped at it.
    fn reduce_only_qty(&self, account: AccountId, inst: &Instrument, side: Side, qty: Qty) -> Result<Qty, Reject> {
        let size = self.accounts.get(&account).and_then(|a| a.positions.get(&inst.spec.id.0)).map_or(0, |p| p.size);
        if size == 0 || size.signum() == side.sign() {
            return Err(Reject::INVALID_ARGUMENTS.with_data("reduce_only order would not reduce the position"));
        }
        Ok(Qty::from_raw(qty.raw().min(size.abs())))
    }

    /// Post-only: a crossing price moves to one tick inside the spread, or is rejected.
    fn post_only_price(
        &self,
        instrument: InstrumentId,
        side: Side,
        price: Price,
        reject: bool,
    ) -> Result<Price, Reject> {
        let Some(best) = self.markets[instrument.0 as usize].book.best_price(side.opposite()) else {
            return Ok(price);
        };
        if !side.crosses(price, best) {
            return Ok(price);
        }
        if reject {
            return Err(Reject::POST_ONLY_REJECT);
        }
        let rule = &self.catalogue.get(instrument).ok_or(Reject::INVALID_INSTRUMENT)?.spec.tick_rule;
        let mut p = best.offset(-side.sign());
        while !rule.is_valid(p) && p.is_positive() {
            p = p.offset(-side.sign());
        }
        if !p.is_positive() {
            return Err(Reject::POST_ONLY_REJECT);
        }
        Ok(p)
    }

    /// A price for margin estimates of market orders: the best opposite price, else mark.
    pub(crate) fn reference_price(&self, instrument: InstrumentId, side: Side) -> Money {
        let market = &self.markets[instrument.0 as usize];
        let Some(inst) = self.catalogue.get(instrument) else { return Money::ZERO };
        match market.book.best_price(side.opposite()) {
            Some(p) => inst.price_money(p),
            None => self.mark_price(instrument),
        }
    }

    /// `available_funds` of `account` in `currency` (infinite for exempt accounts).
    pub fn available_funds(&self, account: AccountId, currency: CurrencyId) -> Money {
        match self.accounts.get(&account) {
            Some(a) if a.margin_exempt => Money::MAX,
            Some(_) => self.account_summary(account, currency).available_funds,
            None => self.initial_balances.get(usize::from(currency.0)).copied().unwrap_or(Money::ZERO),
        }
    }
}

/// The end of the trading session a good-til-day order placed at `now` expires at: the next
/// 08:00 UTC (Deribit's daily settlement).
pub fn session_end(now: Utc) -> Utc {
    const DAY_MS: i64 = 86_400_000;
    let ms = now.as_millis();
    let day_start = ms.div_euclid(DAY_MS) * DAY_MS;
    let today = day_start + SETTLEMENT_HOUR_MS;
    Utc::from_millis(if ms < today { today } else { today + DAY_MS })
}

pub(crate) fn filter_matches(filter: &OrderFilter, order: &Order, inst: &Instrument) -> bool {
    filter.instrument.is_none_or(|i| i == order.instrument)
        && filter.currency.is_none_or(|c| c == inst.settlement_currency || c == inst.base)
        && filter.kind.is_none_or(|k| k == inst.spec.kind)
        && filter.order_type.matches(order.order_type)
}

impl Order {
    pub(crate) fn close(&mut self, now: Utc, state: OrderState, reason: Option<CancelReason>) {
        self.state = state;
        self.cancel_reason = reason;
        self.updated = now;
    }
}
