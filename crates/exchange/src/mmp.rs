//! Market maker protection (MMP) and the mass-quote tools it guards.
//!
//! Owns: one MMP configuration per (account, index, group) (`private/set_mmp_config`), the
//! window of MMP fills each one counts, its freeze (`get_mmp_status`, `reset_mmp`), the
//! `freeze_quotes` pause of `private/cancel_quotes`, and `private/mass_quote` /
//! `private/cancel_quotes` themselves.
//! Must not: read a clock (`now` comes in), know JSON, or cost an order without `mmp` anything
//! beyond one flag test.
//!
//! # The rule the engine enforces
//! Deribit's MMP counts the fills of a user's MMP orders (`mmp: true` orders and every mass
//! quote) per index (`btc_usd`) and MMP group. A group's config holds `interval` (seconds),
//! `frozen_time` (seconds; `0` = until `private/reset_mmp`), and limits: `quantity_limit`
//! (traded size in contracts, `amount / contract_size`), `delta_limit` (net traded delta in
//! coin, the engine's delta model: futures 1 per coin of size, inverse futures `usd / index`,
//! options ½) and `vega_limit`. At each fill of an MMP order the engine sums the group's
//! fills of the last `interval` seconds (a fill at `t` counts while `now − t < interval`); when
//! the quantity reaches `quantity_limit`, or the absolute net delta reaches `delta_limit`, the
//! group freezes: every live MMP order of the group is cancelled with `cancel_reason
//! "mmp_trigger"` (`mmp_cancelled: true`), and new MMP orders and quotes of the group get
//! `13030 mmp_trigger` until `frozen_until` (`now + frozen_time`) passes or `reset_mmp` is
//! called. A freeze empties the window, so counting starts afresh after it. The fill that
//! reaches the limit still trades; a taker that is itself an MMP order stops matching there.
//! `vega_limit` is stored and reported, not enforced: the engine has no option vega.
//! `interval: 0` removes the group's config. An order with `mmp: true` in a group without a
//! config trades unprotected; a mass quote needs its group configured (`13040 mmp_required`).
//!
//! # Mass quotes
//! `private/mass_quote` places, per quote and side, a good-til-cancelled limit order with
//! `mmp: true`, `quote: true`, the request's `mmp_group` and `quote_id` and the quote's
//! `quote_set_id`. At most one quote rests per (instrument, side, group): a new one replaces
//! (cancels, then places) the old one. A side that fails gets an entry in `errors` (code and
//! message of the `Reject`); the other sides go ahead. `private/cancel_quotes` cancels quotes
//! only, by `cancel_type` (`all`, `delta` range, `quote_set_id`, `instrument`,
//! `instrument_kind`, `currency`, `currency_pair`); with `freeze_quotes` new quotes get
//! `13043 quotes_frozen` for one second.

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use ticktrade_core::{Decimal, InstrumentId, InstrumentKind, Qty, Side, Utc};

use crate::account::coin_delta;
use crate::catalogue::{CurrencyId, IndexId, Instrument};
use crate::engine::Exchange;
use crate::event::{Event, UserTrade};
use crate::money::Money;
use crate::order::{
    AccountId, CancelReason, ConnectionId, Order, OrderType, PlaceParams, QuoteIds, Size, Tag, TimeInForce,
};
use crate::reject::Reject;

const SECOND_NS: i64 = 1_000_000_000;

/// `private/set_mmp_config` for one (index, group). Limits are in Deribit's units (see the
/// module docs); `None` = no such limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MmpConfig {
    pub interval_s: u32,
    /// `0`: frozen until `reset_mmp`.
    pub frozen_time_s: u32,
    pub quantity_limit: Option<Decimal>,
    pub delta_limit: Option<Decimal>,
    pub vega_limit: Option<Decimal>,
    /// Block RFQ's per-quote cap; stored and reported only.
    pub max_quote_quantity: Option<Decimal>,
}

/// How long a triggered group stays frozen.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frozen {
    Until(Utc),
    /// `frozen_time: 0`: until `private/reset_mmp` (Deribit reports `frozen_until: 0`).
    UntilReset,
}

/// An MMP group of one account on one index.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct MmpKey {
    pub account: AccountId,
    pub index: IndexId,
    /// Empty: the group of `private/buy`/`sell` orders with `mmp: true`.
    pub group: Tag,
}

#[derive(Debug, Default)]
struct GroupState {
    config: Option<MmpConfig>,
    /// (time, contracts, signed delta) of the fills in the window, oldest first.
    fills: VecDeque<(Utc, Money, Money)>,
    frozen: Option<Frozen>,
}

/// Every MMP group's state, plus the `freeze_quotes` pauses.
#[derive(Debug, Default)]
pub(crate) struct Mmp {
    groups: FxHashMap<MmpKey, GroupState>,
    quotes_paused_until: FxHashMap<AccountId, Utc>,
}

/// One side of a quote: a limit price and a size.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuoteSide {
    pub price: Decimal,
    pub size: Size,
    pub post_only: bool,
    pub reject_post_only: bool,
}

/// One entry of `quotes` in `private/mass_quote`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Quote {
    pub instrument: InstrumentId,
    pub quote_set_id: Tag,
    pub bid: Option<QuoteSide>,
    pub ask: Option<QuoteSide>,
}

/// `private/mass_quote`.
#[derive(Clone, Debug, PartialEq)]
pub struct MassQuote {
    pub mmp_group: Tag,
    pub quote_id: Tag,
    pub valid_until: Option<Utc>,
    pub quotes: Vec<Quote>,
    /// The connection sending it, recorded on every quote order for cancel-on-disconnect.
    pub connection: Option<ConnectionId>,
}

/// What `private/mass_quote` did: the orders it placed (their state after matching) and the
/// sides it refused. The fills are the `Event::UserTrade`s of those orders in `out`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MassQuoteReply {
    pub orders: Vec<Order>,
    pub errors: Vec<(InstrumentId, Side, Reject)>,
}

/// Which quotes `private/cancel_quotes` cancels (`cancel_type`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum QuoteFilter {
    All,
    /// Quotes whose instrument's delta (the engine's model) is within `[min, max]`.
    Delta {
        min: Decimal,
        max: Decimal,
    },
    QuoteSet(Tag),
    Instrument(InstrumentId),
    Kind(InstrumentKind),
    Currency(CurrencyId),
    /// `currency_pair` (`btc_usd`): the instruments on that index.
    Index(IndexId),
}

impl Exchange {
    /// Sets (or with `interval_s == 0` removes) the MMP config of a group. The group's fill
    /// window and freeze are kept.
    pub fn set_mmp_config(&mut self, account: AccountId, index: IndexId, group: Tag, config: MmpConfig) {
        let key = MmpKey { account, index, group };
        let state = self.mmp.groups.entry(key).or_default();
        state.config = (config.interval_s > 0).then_some(config);
        if state.config.is_none() && state.frozen.is_none() {
            self.mmp.groups.remove(&key);
        }
    }

    /// The account's MMP configs, ordered by index then group.
    pub fn mmp_configs(&self, account: AccountId) -> Vec<(MmpKey, MmpConfig)> {
        let mut list: Vec<(MmpKey, MmpConfig)> = self
            .mmp
            .groups
            .iter()
            .filter(|(k, _)| k.account == account)
            .filter_map(|(k, s)| s.config.map(|c| (*k, c)))
            .collect();
        list.sort_by_key(|(k, _)| *k);
        list
    }

    /// The account's frozen groups at `now`, ordered by index then group.
    pub fn mmp_status(&self, now: Utc, account: AccountId) -> Vec<(MmpKey, Frozen)> {
        let mut list: Vec<(MmpKey, Frozen)> = self
            .mmp
            .groups
            .iter()
            .filter(|(k, _)| k.account == account)
            .filter_map(|(k, s)| s.frozen.filter(|f| is_frozen(*f, now)).map(|f| (*k, f)))
            .collect();
        list.sort_by_key(|(k, _)| *k);
        list
    }

    /// `private/reset_mmp`: lifts the group's freeze and empties its fill window.
    pub fn reset_mmp(&mut self, account: AccountId, index: IndexId, group: Tag) {
        if let Some(state) = self.mmp.groups.get_mut(&MmpKey { account, index, group }) {
            state.frozen = None;
            state.fills.clear();
        }
    }

    /// Whether new MMP orders of the group are refused at `now`.
    pub fn mmp_frozen(&self, now: Utc, account: AccountId, index: IndexId, group: Tag) -> bool {
        if self.mmp.groups.is_empty() {
            return false;
        }
        self.mmp.groups.get(&MmpKey { account, index, group }).and_then(|s| s.frozen).is_some_and(|f| is_frozen(f, now))
    }

    /// Counts one fill of an MMP order and freezes its group when a limit is reached.
    pub(crate) fn mmp_fill(&mut self, now: Utc, order: &Order, qty: Qty, out: &mut Vec<Event>) {
        let Some(inst) = self.catalogue.get(order.instrument) else { return };
        let key = MmpKey { account: order.account, index: inst.index, group: order.mmp_group };
        let contracts = inst.amount_money(qty).div_decimal(inst.spec.contract_size);
        let delta = coin_delta(inst, order.side.sign() * qty.raw(), self.index_prices[usize::from(inst.index.0)]);
        let Some(state) = self.mmp.groups.get_mut(&key) else { return };
        let Some(config) = state.config else { return };
        if state.frozen.is_some_and(|f| is_frozen(f, now)) {
            return;
        }
        let window_ns = i64::from(config.interval_s) * SECOND_NS;
        while state.fills.front().is_some_and(|&(t, _, _)| now.0 - t.0 >= window_ns) {
            state.fills.pop_front();
        }
        state.fills.push_back((now, contracts, delta));
        let quantity: Money = state.fills.iter().fold(Money::ZERO, |sum, f| sum + f.1);
        let net_delta: Money = state.fills.iter().fold(Money::ZERO, |sum, f| sum + f.2);
        let reached = |limit: Option<Decimal>, value: Money| limit.is_some_and(|l| value >= Money::from_decimal(l));
        if !reached(config.quantity_limit, quantity) && !reached(config.delta_limit, net_delta.abs()) {
            return;
        }
        state.fills.clear();
        let frozen = match config.frozen_time_s {
            0 => Frozen::UntilReset,
            s => Frozen::Until(Utc(now.0 + i64::from(s) * SECOND_NS)),
        };
        state.frozen = Some(frozen);
        let catalogue = &self.catalogue;
        let mut ids: Vec<u64> = self
            .orders
            .values()
            .filter(|o| o.account == key.account && o.mmp && o.mmp_group == key.group)
            .filter(|o| catalogue.get(o.instrument).is_some_and(|i| i.index == key.index))
            .map(|o| o.id)
            .collect();
        ids.sort_unstable();
        for id in ids {
            self.cancel_resting(now, id, CancelReason::MmpTrigger, out);
        }
        out.push(Event::MmpTrigger { account: key.account, index: key.index, group: key.group, frozen });
    }

    /// `private/mass_quote`. Request-wide refusals (`valid_until` passed, quotes paused by
    /// `freeze_quotes`, nothing to quote) are `Err`; each side's own refusal is in `errors`.
    pub fn mass_quote(
        &mut self,
        now: Utc,
        account: AccountId,
        request: &MassQuote,
        out: &mut Vec<Event>,
    ) -> Result<MassQuoteReply, Reject> {
        self.advance(now, out);
        if request.valid_until.is_some_and(|t| now > t) {
            return Err(Reject::TIMED_OUT);
        }
        if self.mmp.quotes_paused_until.get(&account).is_some_and(|&t| now < t) {
            return Err(Reject::QUOTES_FROZEN);
        }
        if request.quotes.is_empty() {
            return Err(Reject::invalid_params("quotes"));
        }
        let mut reply = MassQuoteReply::default();
        let ids = QuoteIds { quote_set_id: Tag::EMPTY, quote_id: request.quote_id };
        for quote in &request.quotes {
            for (side, quote_side) in [(Side::Buy, quote.bid), (Side::Sell, quote.ask)] {
                let Some(q) = quote_side else { continue };
                let ids = QuoteIds { quote_set_id: quote.quote_set_id, ..ids };
                let (group, connection) = (request.mmp_group, request.connection);
                match self.place_quote(now, account, group, quote.instrument, side, q, ids, connection, out) {
                    Ok(order) => reply.orders.push(order),
                    Err(reject) => reply.errors.push((quote.instrument, side, reject)),
                }
            }
        }
        // A later side's fill may have frozen the group after an earlier side was placed.
        for order in &mut reply.orders {
            if let Some(now_state) = self.orders.get(&order.id).or_else(|| self.closed.get(order.id)) {
                *order = *now_state;
            }
        }
        self.finish(now, out);
        Ok(reply)
    }

    #[allow(clippy::too_many_arguments)] // One quote side: every argument is a distinct field.
    fn place_quote(
        &mut self,
        now: Utc,
        account: AccountId,
        group: Tag,
        instrument: InstrumentId,
        side: Side,
        q: QuoteSide,
        ids: QuoteIds,
        connection: Option<ConnectionId>,
        out: &mut Vec<Event>,
    ) -> Result<Order, Reject> {
        let inst = self.instrument(instrument)?;
        let key = MmpKey { account, index: inst.index, group };
        if self.mmp.groups.get(&key).is_none_or(|s| s.config.is_none()) {
            return Err(Reject::MMP_REQUIRED);
        }
        let params = PlaceParams {
            size: q.size,
            post_only: q.post_only,
            reject_post_only: q.reject_post_only,
            time_in_force: TimeInForce::GoodTilCancelled,
            order_type: OrderType::Limit,
            mmp: true,
            mmp_group: group,
            quote: Some(ids),
            connection,
            ..PlaceParams::limit(instrument, side, Decimal::ZERO, q.price)
        };
        // Validate before replacing, so a bad quote leaves the old one resting.
        let qty = Exchange::size_to_qty(inst, q.size)?;
        Exchange::parse_price(inst, q.price, Reject::PRICE_WRONG_TICK)?;
        if qty.is_zero() {
            return Err(Reject::INVALID_AMOUNT);
        }
        let old: Option<u64> = self
            .orders
            .values()
            .find(|o| {
                o.account == account
                    && o.instrument == instrument
                    && o.side == side
                    && o.quote.is_some()
                    && o.mmp_group == group
            })
            .map(|o| o.id);
        if self.mmp_frozen(now, account, key.index, group) {
            return Err(Reject::MMP_TRIGGER);
        }
        if let Some(old) = old {
            self.cancel_resting(now, old, CancelReason::UserRequest, out);
        }
        self.place(now, account, &params, None, out)
    }

    /// `private/cancel_quotes`: cancels the account's quotes `filter` selects; with `freeze`
    /// new quotes are refused for one second. Returns how many were cancelled.
    pub fn cancel_quotes(
        &mut self,
        now: Utc,
        account: AccountId,
        filter: QuoteFilter,
        freeze: bool,
        out: &mut Vec<Event>,
    ) -> u32 {
        self.advance(now, out);
        let n = self.cancel_where(now, account, CancelReason::UserRequest, out, |o, inst| {
            o.quote.is_some() && quote_matches(&filter, o, inst)
        });
        if freeze {
            self.mmp.quotes_paused_until.insert(account, Utc(now.0 + SECOND_NS));
        }
        self.finish(now, out);
        n
    }

    /// The quote fields of a user trade's order (Deribit's `quote_id`, `quote_set_id`),
    /// while the order is live or kept in the closed-order history.
    pub fn quote_of_trade(&self, trade: &UserTrade) -> Option<QuoteIds> {
        self.orders.get(&trade.order_id).or_else(|| self.closed.get(trade.order_id)).and_then(|o| o.quote)
    }
}

fn is_frozen(frozen: Frozen, now: Utc) -> bool {
    match frozen {
        Frozen::UntilReset => true,
        Frozen::Until(t) => now < t,
    }
}

/// An instrument's delta per unit of size in the engine's model (futures and spot 1,
/// options ½), for `cancel_type: "delta"`.
fn instrument_delta(inst: &Instrument) -> Decimal {
    match inst.spec.kind {
        InstrumentKind::Option | InstrumentKind::OptionCombo => Decimal::new(5, 1).unwrap_or(Decimal::ZERO),
        _ => Decimal::new(1, 0).unwrap_or(Decimal::ZERO),
    }
}

fn quote_matches(filter: &QuoteFilter, order: &Order, inst: &Instrument) -> bool {
    match *filter {
        QuoteFilter::All => true,
        QuoteFilter::Delta { min, max } => {
            let delta = instrument_delta(inst);
            min <= delta && delta <= max
        }
        QuoteFilter::QuoteSet(set) => order.quote.is_some_and(|q| q.quote_set_id == set),
        QuoteFilter::Instrument(id) => order.instrument == id,
        QuoteFilter::Kind(kind) => inst.spec.kind == kind,
        QuoteFilter::Currency(c) => inst.settlement_currency == c || inst.base == c,
        QuoteFilter::Index(index) => inst.index == index,
    }
}
