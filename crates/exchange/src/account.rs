//! Accounts, positions, fees and the margin model.
//!
//! Owns: per-account balances per currency, positions per instrument (signed size in lots,
//! average price, realised PnL), fee and PnL formulas (inverse: `usd × (1/a − 1/b)`; linear
//! and options: `coin × (b − a)`), and the initial-margin check behind `10009 not_enough_funds`.
//! Must not: touch the book or emit events (the engine does both).
//!
//! Money (balances, fees, PnL, margin) is `f64` in the settlement currency, as Deribit
//! reports it: these are statistics, never an order price or size.
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

use rustc_hash::FxHashMap;
use ticktrade_core::{InstrumentId, InstrumentKind, Price, Qty, Side};

use crate::catalogue::{CurrencyId, Instrument};

pub const IM_RATE: f64 = 0.02;
pub const MM_RATE: f64 = 0.01;
const OPTION_SHORT_IM: f64 = 0.10;
const OPTION_SHORT_MM: f64 = 0.075;

/// An account's position in one instrument.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Position {
    pub instrument: InstrumentId,
    /// Signed size in lots: positive long, negative short.
    pub size: i64,
    /// Average entry price in the instrument's price unit (harmonic for inverse futures).
    pub average_price: f64,
    pub realized_pnl: f64,
    /// Fees paid on this instrument (settlement currency).
    pub fees: f64,
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
    pub balance: f64,
    /// Initial margin reserved by open orders (kept incrementally).
    pub orders_im: f64,
    pub n_open_orders: u32,
    /// Realised PnL and fees since the account opened (Deribit's session figures).
    pub session_rpl: f64,
    pub fees: f64,
}

/// An account: balances per currency (index = `CurrencyId`) and positions.
#[derive(Clone, Debug, Default)]
pub struct Account {
    pub balances: Vec<Balance>,
    pub positions: FxHashMap<u32, Position>,
    /// House accounts (the synthetic market makers) skip margin checks.
    pub margin_exempt: bool,
}

/// An account summary in one currency (`private/get_account_summary`).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct AccountSummary {
    pub currency: CurrencyId,
    pub balance: f64,
    pub equity: f64,
    pub margin_balance: f64,
    pub initial_margin: f64,
    pub maintenance_margin: f64,
    pub available_funds: f64,
    pub session_upl: f64,
    pub session_rpl: f64,
    pub total_pl: f64,
    pub fees: f64,
    pub delta_total: f64,
}

/// Market prices the margin and PnL formulas need for one instrument.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Marks {
    pub mark: f64,
    pub index: f64,
}

/// Fee of a fill in the settlement currency.
pub fn fee(inst: &Instrument, price: Price, qty: Qty, maker: bool) -> f64 {
    let rate = if maker { inst.maker_rate } else { inst.taker_rate };
    let amount = inst.amount_f64(qty);
    let px = inst.price_f64(price);
    match inst.spec.kind {
        InstrumentKind::Future | InstrumentKind::FutureCombo if inst.is_inverse_future() => {
            if px > 0.0 {
                amount / px * rate
            } else {
                0.0
            }
        }
        InstrumentKind::Option | InstrumentKind::OptionCombo => (amount * rate).min(amount * px * 0.125),
        _ => amount * px * rate,
    }
}

/// PnL of closing `amount` (in amount units) of a long bought at `avg` at `price`
/// (negate for a short).
fn long_pnl(inverse: bool, amount: f64, avg: f64, price: f64) -> f64 {
    if inverse {
        if avg > 0.0 && price > 0.0 { amount * (1.0 / avg - 1.0 / price) } else { 0.0 }
    } else {
        amount * (price - avg)
    }
}

impl Position {
    /// Applies a fill and returns the PnL it realised.
    pub fn apply_fill(&mut self, inst: &Instrument, side: Side, price: Price, qty: Qty) -> f64 {
        let inverse = inst.is_inverse_future();
        let px = inst.price_f64(price);
        let delta = side.sign() * qty.raw();
        let mut realized = 0.0;
        if self.size == 0 || self.size.signum() == delta.signum() {
            let old = self.size.unsigned_abs() as f64;
            let add = delta.unsigned_abs() as f64;
            self.average_price = if old == 0.0 {
                px
            } else if inverse {
                (old + add) / (old / self.average_price + add / px)
            } else {
                (old * self.average_price + add * px) / (old + add)
            };
            self.size += delta;
        } else {
            let closing = delta.unsigned_abs().min(self.size.unsigned_abs());
            let amount = closing as f64 * inst.qty_unit_f64;
            let pnl = long_pnl(inverse, amount, self.average_price, px);
            realized = if self.size > 0 { pnl } else { -pnl };
            self.size += delta;
            if self.size != 0 && self.size.signum() == delta.signum() {
                // Flipped through zero: the rest opens at this price.
                self.average_price = px;
            } else if self.size == 0 {
                self.average_price = 0.0;
            }
        }
        self.realized_pnl += realized;
        realized
    }

    /// Unrealised PnL at `mark` (settlement currency).
    pub fn floating_pnl(&self, inst: &Instrument, mark: f64) -> f64 {
        if self.size == 0 || mark <= 0.0 {
            return 0.0;
        }
        let amount = self.size.unsigned_abs() as f64 * inst.qty_unit_f64;
        let pnl = long_pnl(inst.is_inverse_future(), amount, self.average_price, mark);
        if self.size > 0 { pnl } else { -pnl }
    }

    /// (initial, maintenance) margin at `mark`.
    pub fn margins(&self, inst: &Instrument, mark: f64) -> (f64, f64) {
        let amount = self.size.unsigned_abs() as f64 * inst.qty_unit_f64;
        match inst.spec.kind {
            InstrumentKind::Option | InstrumentKind::OptionCombo => {
                if self.size > 0 {
                    (self.average_price * amount, 0.0)
                } else {
                    ((OPTION_SHORT_IM + mark) * amount, (OPTION_SHORT_MM + mark) * amount)
                }
            }
            InstrumentKind::Spot => (0.0, 0.0),
            _ => {
                let notional = notional(inst, amount, mark);
                (notional * IM_RATE, notional * MM_RATE)
            }
        }
    }

    /// Delta in coin: futures size in base coin, options their size (a rough delta of ±1/2).
    pub fn delta(&self, inst: &Instrument, index: f64) -> f64 {
        let amount = self.size as f64 * inst.qty_unit_f64;
        match inst.spec.kind {
            InstrumentKind::Option | InstrumentKind::OptionCombo => amount * 0.5,
            _ if inst.is_inverse_future() => {
                if index > 0.0 {
                    amount / index
                } else {
                    0.0
                }
            }
            _ => amount,
        }
    }
}

/// Notional of a futures amount in the settlement currency.
fn notional(inst: &Instrument, amount: f64, price: f64) -> f64 {
    if inst.is_inverse_future() { if price > 0.0 { amount / price } else { 0.0 } } else { amount * price }
}

/// Initial margin an open order of `qty` at `price` reserves, and in which currency.
pub fn order_margin(inst: &Instrument, side: Side, price: f64, qty: Qty) -> (CurrencyId, f64) {
    let amount = inst.amount_f64(qty);
    match inst.spec.kind {
        InstrumentKind::Spot => match side {
            Side::Buy => (inst.quote, amount * price),
            Side::Sell => (inst.base, amount),
        },
        InstrumentKind::Option | InstrumentKind::OptionCombo => match side {
            Side::Buy => (inst.settlement_currency, amount * price),
            Side::Sell => (inst.settlement_currency, (OPTION_SHORT_IM + price) * amount),
        },
        _ => (inst.settlement_currency, notional(inst, amount, price) * IM_RATE),
    }
}

impl Account {
    pub fn new(initial: &[f64]) -> Account {
        Account {
            balances: initial.iter().map(|&balance| Balance { balance, ..Balance::default() }).collect(),
            positions: FxHashMap::default(),
            margin_exempt: false,
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
        let (mut upl, mut im, mut mm, mut delta) = (0.0, 0.0, 0.0, 0.0);
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
        let initial_margin = im + bal.orders_im.max(0.0);
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

    fn cat() -> Catalogue {
        Catalogue::builtin(CatalogueParams::default()).unwrap()
    }

    #[test]
    fn inverse_pnl_and_fees() {
        let c = cat();
        let perp = c.by_name("BTC-PERPETUAL").unwrap();
        let mut pos = Position::default();
        // Buy 1000 USD (100 lots of 10) at 50 000, sell at 100 000: 0.02 − 0.01 = 0.01 BTC.
        assert_eq!(pos.apply_fill(perp, Side::Buy, Price::from_raw(100_000), Qty::from_raw(100)), 0.0);
        assert_eq!(pos.direction(), "buy");
        let pnl = pos.apply_fill(perp, Side::Sell, Price::from_raw(200_000), Qty::from_raw(100));
        assert!((pnl - 0.01).abs() < 1e-12, "{pnl}");
        assert_eq!(pos.size, 0);
        // Taker fee 0.05 % of 1000 USD at 50 000 = 0.00001 BTC.
        let f = fee(perp, Price::from_raw(100_000), Qty::from_raw(100), false);
        assert!((f - 0.00001).abs() < 1e-15);
        assert_eq!(fee(perp, Price::from_raw(100_000), Qty::from_raw(100), true), 0.0);
    }

    #[test]
    fn harmonic_average_and_flip() {
        let c = cat();
        let perp = c.by_name("BTC-PERPETUAL").unwrap();
        let mut pos = Position::default();
        pos.apply_fill(perp, Side::Sell, Price::from_raw(100_000), Qty::from_raw(1));
        pos.apply_fill(perp, Side::Sell, Price::from_raw(200_000), Qty::from_raw(1));
        // 20 USD over 10/50 000 + 10/100 000 coin: 66 666.67.
        assert!((pos.average_price - 66_666.666_666_666_67).abs() < 1e-6);
        pos.apply_fill(perp, Side::Buy, Price::from_raw(100_000), Qty::from_raw(3));
        assert_eq!((pos.size, pos.average_price), (1, 50_000.0));
    }

    #[test]
    fn linear_pnl_and_margin() {
        let c = cat();
        let lin = c.by_name("BTC_USDC-PERPETUAL").unwrap();
        let mut pos = Position::default();
        // 1 BTC = 10 000 lots of 0.0001; price in ticks of 0.1.
        pos.apply_fill(lin, Side::Buy, Price::from_raw(900_000), Qty::from_raw(10_000));
        assert!((pos.floating_pnl(lin, 91_000.0) - 1_000.0).abs() < 1e-6);
        let (im, mm) = pos.margins(lin, 90_000.0);
        assert!((im - 1_800.0).abs() < 1e-6 && (mm - 900.0).abs() < 1e-6);
        let (ccy, need) = order_margin(lin, Side::Buy, 90_000.0, Qty::from_raw(10_000));
        assert_eq!(c.currency_name(ccy), "USDC");
        assert!((need - 1_800.0).abs() < 1e-6);
    }
}
