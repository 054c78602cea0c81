//! Accounts, positions, fees and the margin model.
//!
//! Owns: per-account balances per currency, positions per instrument (signed size in lots,
//! average price, realised PnL), fee and PnL formulas (inverse: `usd × (1/a − 1/b)`; linear
//! and options: `coin × (b − a)`), and the initial-margin check behind `10009 not_enough_funds`.
//! Must not: touch the book or emit events (the engine does both).
//!
//! Money (balances, fees, PnL, equity, margin, and the mark and average prices they use) is
//! [`Money`]: an exact fixed-point count of 10^-12 units, never `f64`. Sums are exact; each
//! product or quotient rounds half away from zero at the 12th place (see `money`).
//!
//! # Margin model (simple, documented, deterministic)
//! - Futures (inverse and linear): initial margin `IM_RATE` (2 %) of the notional at mark,
//!   maintenance `MM_RATE` (1 %). Inverse notional in coin = `usd / mark`; linear = `coin × mark`.
//! - Options: a long needs its premium (`avg × size`); a short needs `(0.10 + mark) × size`
//!   initial and `(0.075 + mark) × size` maintenance (per coin of underlying).
//! - Spot: no positions; a buy reserves `price × qty` of the quote currency, a sell reserves
//!   `qty` of the base coin, and fills move balances directly.
//! - Open orders reserve the initial margin of their remaining size (not netted with the
//!   position, as a conservative simplification). Reduce-only orders reserve nothing.
//! - `available_funds = equity − position IM − open-order IM`; an order is refused when its
//!   own IM exceeds it. `equity = balance + unrealised PnL`.

use std::ops::{Div, Mul};

use rustc_hash::FxHashMap;
use ticktrade_core::{InstrumentId, InstrumentKind, Price, Qty, Side};

use crate::catalogue::{CurrencyId, Instrument};
use crate::money::Money;

/// Initial margin rate of futures: 2 %.
pub const IM_RATE: Money = Money::from_raw(20_000_000_000);
/// Maintenance margin rate of futures: 1 %.
pub const MM_RATE: Money = Money::from_raw(10_000_000_000);
const OPTION_SHORT_IM: Money = Money::from_raw(100_000_000_000); // 0.10
const OPTION_SHORT_MM: Money = Money::from_raw(75_000_000_000); // 0.075
const OPTION_FEE_CAP: Money = Money::from_raw(125_000_000_000); // 12.5 % of the premium
const HALF: Money = Money::from_raw(500_000_000_000);

/// An account's position in one instrument.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Position {
    pub instrument: InstrumentId,
    /// Signed size in lots: positive long, negative short.
    pub size: i64,
    /// Average entry price in the instrument's price unit (harmonic for inverse futures).
    pub average_price: Money,
    pub realized_pnl: Money,
    /// Fees paid on this instrument (settlement currency).
    pub fees: Money,
}

impl Position {
    /// `buy`, `sell` or `zero`.
    pub fn direction(&self) -> &'static str {
        match self.size.signum() {
            1 => "buy",
            -1 => "sell",
            _ => "zero",
        }
    }
}

/// One currency of an account.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Balance {
    pub balance: Money,
    /// Initial margin reserved by open orders (kept incrementally, exactly).
    pub orders_im: Money,
    pub n_open_orders: u32,
    /// Realised PnL and fees since the account opened (Deribit's session figures).
    pub session_rpl: Money,
    pub fees: Money,
}

/// An account: balances per currency (index = `CurrencyId`) and positions.
#[derive(Clone, Debug, Default)]
pub struct Account {
    pub balances: Vec<Balance>,
    pub positions: FxHashMap<u32, Position>,
    /// House accounts (the synthetic market makers) skip margin checks.
    pub margin_exempt: bool,
    /// The account's own `self_trading_reject_mode`; `None` follows `Config::self_trade`.
    pub self_trade: Option<crate::engine::SelfTrade>,
}

/// An account summary in one currency (`private/get_account_summary`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AccountSummary {
    pub currency: CurrencyId,
    pub balance: Money,
    pub equity: Money,
    pub margin_balance: Money,
    pub initial_margin: Money,
    pub maintenance_margin: Money,
    pub available_funds: Money,
    pub session_upl: Money,
    pub session_rpl: Money,
    pub total_pl: Money,
    pub fees: Money,
    pub delta_total: Money,
}

/// Market prices the margin and PnL formulas need for one instrument.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Marks {
    pub mark: Money,
    pub index: Money,
}

/// Fee of a fill in the settlement currency.
pub fn fee(inst: &Instrument, price: Price, qty: Qty, maker: bool) -> Money {
    let rate = if maker { inst.maker_rate } else { inst.taker_rate };
    if rate.is_zero() {
        return Money::ZERO;
    }
    let amount = inst.amount_money(qty);
    let px = inst.price_money(price);
    match inst.spec.kind {
        InstrumentKind::Future | InstrumentKind::FutureCombo if inst.is_inverse_future() => {
            if px.is_positive() {
                amount.div(px).mul(rate)
            } else {
                Money::ZERO
            }
        }
        InstrumentKind::Option | InstrumentKind::OptionCombo => {
            amount.mul(rate).min(amount.mul(px).mul(OPTION_FEE_CAP))
        }
        _ => amount.mul(px).mul(rate),
    }
}

/// PnL of closing `amount` (in amount units) of a long bought at `avg` at `price`
/// (negate for a short).
fn long_pnl(inverse: bool, amount: Money, avg: Money, price: Money) -> Money {
    if inverse {
        if avg.is_positive() && price.is_positive() { amount.div(avg) - amount.div(price) } else { Money::ZERO }
    } else {
        amount.mul(price - avg)
    }
}

impl Position {
    /// Applies a fill and returns the PnL it realised.
    pub fn apply_fill(&mut self, inst: &Instrument, side: Side, price: Price, qty: Qty) -> Money {
        let inverse = inst.is_inverse_future();
        let px = inst.price_money(price);
        let delta = side.sign() * qty.raw();
        let mut realized = Money::ZERO;
        if self.size == 0 || self.size.signum() == delta.signum() {
            let old = self.size.unsigned_abs() as i64;
            let add = delta.unsigned_abs() as i64;
            self.average_price = if old == 0 {
                px
            } else if inverse {
                // (old + add) / (old / avg + add / px), in lots (the lot size cancels).
                let coin = Money::from_int(old).div(self.average_price) + Money::from_int(add).div(px);
                Money::from_int(old + add).div(coin)
            } else {
                (self.average_price.mul_int(old) + px.mul_int(add)).div_int(old + add)
            };
            self.size += delta;
        } else {
            let closing = delta.unsigned_abs().min(self.size.unsigned_abs()) as i64;
            let amount = inst.qty_unit_money.mul_int(closing);
            let pnl = long_pnl(inverse, amount, self.average_price, px);
            realized = if self.size > 0 { pnl } else { -pnl };
            self.size += delta;
            if self.size != 0 && self.size.signum() == delta.signum() {
                // Flipped through zero: the rest opens at this price.
                self.average_price = px;
            } else if self.size == 0 {
                self.average_price = Money::ZERO;
            }
        }
        self.realized_pnl += realized;
        realized
    }

    /// Unrealised PnL at `mark` (settlement currency).
    pub fn floating_pnl(&self, inst: &Instrument, mark: Money) -> Money {
        if self.size == 0 || !mark.is_positive() {
            return Money::ZERO;
        }
        let amount = inst.qty_unit_money.mul_int(self.size.abs());
        let pnl = long_pnl(inst.is_inverse_future(), amount, self.average_price, mark);
        if self.size > 0 { pnl } else { -pnl }
    }

    /// (initial, maintenance) margin at `mark`.
    pub fn margins(&self, inst: &Instrument, mark: Money) -> (Money, Money) {
        let amount = inst.qty_unit_money.mul_int(self.size.abs());
        match inst.spec.kind {
            InstrumentKind::Option | InstrumentKind::OptionCombo => {
                if self.size > 0 {
                    (self.average_price.mul(amount), Money::ZERO)
                } else {
                    ((OPTION_SHORT_IM + mark).mul(amount), (OPTION_SHORT_MM + mark).mul(amount))
                }
            }
            InstrumentKind::Spot => (Money::ZERO, Money::ZERO),
            _ => {
                let notional = notional(inst, amount, mark);
                (notional.mul(IM_RATE), notional.mul(MM_RATE))
            }
        }
    }

    /// Delta in coin: futures size in base coin, options their size (a rough delta of ±1/2).
    pub fn delta(&self, inst: &Instrument, index: Money) -> Money {
        coin_delta(inst, self.size, index)
    }
}

/// Delta in coin of a signed size in lots: futures their size in base coin (inverse: USD
/// over the index), options their size times ½. Positions and MMP's `delta_limit` use it.
pub(crate) fn coin_delta(inst: &Instrument, size_lots: i64, index: Money) -> Money {
    let amount = inst.qty_unit_money.mul_int(size_lots);
    match inst.spec.kind {
        InstrumentKind::Option | InstrumentKind::OptionCombo => amount.mul(HALF),
        _ if inst.is_inverse_future() => {
            if index.is_positive() {
                amount.div(index)
            } else {
                Money::ZERO
            }
        }
        _ => amount,
    }
}

/// Notional of a futures amount in the settlement currency.
fn notional(inst: &Instrument, amount: Money, price: Money) -> Money {
    if inst.is_inverse_future() {
        if price.is_positive() { amount.div(price) } else { Money::ZERO }
    } else {
        amount.mul(price)
    }
}

/// Initial margin an open order of `qty` at `price` reserves, and in which currency.
pub fn order_margin(inst: &Instrument, side: Side, price: Money, qty: Qty) -> (CurrencyId, Money) {
    let amount = inst.amount_money(qty);
    match inst.spec.kind {
        InstrumentKind::Spot => match side {
            Side::Buy => (inst.quote, amount.mul(price)),
            Side::Sell => (inst.base, amount),
        },
        InstrumentKind::Option | InstrumentKind::OptionCombo => match side {
            Side::Buy => (inst.settlement_currency, amount.mul(price)),
            Side::Sell => (inst.settlement_currency, (OPTION_SHORT_IM + price).mul(amount)),
        },
        _ => (inst.settlement_currency, notional(inst, amount, price).mul(IM_RATE)),
    }
}

impl Account {
    pub fn new(initial: &[Money]) -> Account {
        Account {
            balances: initial.iter().map(|&balance| Balance { balance, ..Balance::default() }).collect(),
            positions: FxHashMap::default(),
            margin_exempt: false,
            self_trade: None,
        }
    }

    pub fn balance_mut(&mut self, currency: CurrencyId) -> &mut Balance {
        let idx = usize::from(currency.0);
        if self.balances.len() <= idx {
            self.balances.resize(idx + 1, Balance::default());
        }
        &mut self.balances[idx]
    }

    /// The summary in one currency, given each instrument and its marks.
    pub fn summary<'a>(
        &self,
        currency: CurrencyId,
        instruments: impl Fn(u32) -> Option<(&'a Instrument, Marks)>,
    ) -> AccountSummary {
        let bal = self.balances.get(usize::from(currency.0)).copied().unwrap_or_default();
        let (mut upl, mut im, mut mm, mut delta) = (Money::ZERO, Money::ZERO, Money::ZERO, Money::ZERO);
        for (&inst_id, pos) in &self.positions {
            let Some((inst, marks)) = instruments(inst_id) else { continue };
            if inst.settlement_currency != currency || pos.size == 0 {
                continue;
            }
            upl += pos.floating_pnl(inst, marks.mark);
            let (i, m) = pos.margins(inst, marks.mark);
            im += i;
            mm += m;
            delta += pos.delta(inst, marks.index);
        }
        let equity = bal.balance + upl;
        let initial_margin = im + bal.orders_im.max(Money::ZERO);
        AccountSummary {
            currency,
            balance: bal.balance,
            equity,
            margin_balance: equity,
            initial_margin,
            maintenance_margin: mm,
            available_funds: equity - initial_margin,
            session_upl: upl,
            session_rpl: bal.session_rpl,
            total_pl: bal.session_rpl + upl,
            fees: bal.fees,
            delta_total: delta,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::{Catalogue, CatalogueParams};
    use ticktrade_core::Decimal;

    fn cat() -> Catalogue {
        Catalogue::builtin(CatalogueParams::default()).unwrap()
    }

    fn m(s: &str) -> Money {
        Money::from_decimal(Decimal::parse(s).unwrap())
    }

    #[test]
    fn inverse_pnl_and_fees_are_exact() {
        let c = cat();
        let perp = c.by_name("BTC-PERPETUAL").unwrap();
        let mut pos = Position::default();
        // Buy 1000 USD (100 lots of 10) at 50 000, sell at 100 000: 0.02 − 0.01 = 0.01 BTC.
        assert_eq!(pos.apply_fill(perp, Side::Buy, Price::from_raw(100_000), Qty::from_raw(100)), Money::ZERO);
        assert_eq!(pos.direction(), "buy");
        let pnl = pos.apply_fill(perp, Side::Sell, Price::from_raw(200_000), Qty::from_raw(100));
        assert_eq!(pnl, m("0.01"));
        assert_eq!(pos.size, 0);
        // Taker fee 0.05 % of 1000 USD at 50 000 = 0.00001 BTC, exactly.
        assert_eq!(fee(perp, Price::from_raw(100_000), Qty::from_raw(100), false), m("0.00001"));
        assert_eq!(fee(perp, Price::from_raw(100_000), Qty::from_raw(100), true), Money::ZERO);
    }

    #[test]
    fn harmonic_average_and_flip() {
        let c = cat();
        let perp = c.by_name("BTC-PERPETUAL").unwrap();
        let mut pos = Position::default();
        pos.apply_fill(perp, Side::Sell, Price::from_raw(100_000), Qty::from_raw(1));
        pos.apply_fill(perp, Side::Sell, Price::from_raw(200_000), Qty::from_raw(1));
        // 20 USD over 10/50 000 + 10/100 000 coin: 66 666.67 (rounded at the 12th place).
        assert_eq!(pos.average_price.to_string(), "66666.666666666667");
        pos.apply_fill(perp, Side::Buy, Price::from_raw(100_000), Qty::from_raw(3));
        assert_eq!((pos.size, pos.average_price), (1, m("50000")));
    }

    #[test]
    fn linear_pnl_and_margin() {
        let c = cat();
        let lin = c.by_name("BTC_USDC-PERPETUAL").unwrap();
        let mut pos = Position::default();
        // 1 BTC = 10 000 lots of 0.0001; price in ticks of 0.1.
        pos.apply_fill(lin, Side::Buy, Price::from_raw(900_000), Qty::from_raw(10_000));
        assert_eq!(pos.floating_pnl(lin, m("91000")), m("1000"));
        assert_eq!(pos.margins(lin, m("90000")), (m("1800"), m("900")));
        let (ccy, need) = order_margin(lin, Side::Buy, m("90000"), Qty::from_raw(10_000));
        assert_eq!(c.currency_name(ccy), "USDC");
        assert_eq!(need, m("1800"));
    }

    #[test]
    fn many_small_fees_sum_exactly() {
        let c = cat();
        let lin = c.by_name("BTC_USDC-PERPETUAL").unwrap();
        // 0.001 BTC at 90 000.1 with a 0.05 % taker fee = 0.04500005 USDC, 1000 times.
        let one = fee(lin, Price::from_raw(900_001), Qty::from_raw(10), false);
        assert_eq!(one, m("0.04500005"));
        let total: Money = (0..1000).map(|_| one).sum();
        assert_eq!(total, m("45.00005"));
    }
}
