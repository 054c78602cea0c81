//! Instrument identity and contract specification, and exact text ↔ `Price`/`Qty` conversion.
//!
//! Owns: `InstrumentSpec` (kind, tick rule including Deribit's `tick_size_steps`, contract size,
//! minimum trade amount, currencies, expiry, strike, option type) and the conversions that
//! reject a value off the grid instead of rounding it.
//! Must not: know any venue's JSON; the proto crates fill a spec from their own messages.

use std::fmt;

use crate::decimal::write_units;
use crate::{Decimal, NumberError, Price, Qty, Utc};

/// A process-local dense id for an instrument (index into per-instrument tables).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct InstrumentId(pub u32);

/// What an instrument is (Deribit's `kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InstrumentKind {
    Future,
    Option,
    Spot,
    FutureCombo,
    OptionCombo,
}

impl InstrumentKind {
    pub const ALL: [InstrumentKind; 5] = [
        InstrumentKind::Future,
        InstrumentKind::Option,
        InstrumentKind::Spot,
        InstrumentKind::FutureCombo,
        InstrumentKind::OptionCombo,
    ];

    /// Deribit's name for the kind.
    pub const fn as_str(self) -> &'static str {
        match self {
            InstrumentKind::Future => "future",
            InstrumentKind::Option => "option",
            InstrumentKind::Spot => "spot",
            InstrumentKind::FutureCombo => "future_combo",
            InstrumentKind::OptionCombo => "option_combo",
        }
    }

    pub fn parse(text: &str) -> Option<InstrumentKind> {
        InstrumentKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    pub const fn is_combo(self) -> bool {
        matches!(self, InstrumentKind::FutureCombo | InstrumentKind::OptionCombo)
    }
}

impl fmt::Display for InstrumentKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OptionType {
    Call,
    Put,
}

impl OptionType {
    pub const fn as_str(self) -> &'static str {
        match self {
            OptionType::Call => "call",
            OptionType::Put => "put",
        }
    }
}

/// How the contract settles: inverse (quoted in USD, settled in coin) or linear.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Settlement {
    Inverse,
    Linear,
}

/// One step of a tick ladder: above `above_price` the tick is `tick`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TickStep {
    pub above_price: Decimal,
    pub tick: Decimal,
}

/// The price grid: a minimum tick, and larger ticks above given prices (Deribit's
/// `tick_size_steps`). `Price` counts minimum ticks; larger steps only restrict which
/// counts are valid.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TickRule {
    tick: Decimal,
    /// Sorted by `above_units`, ascending.
    steps: Vec<CompiledStep>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CompiledStep {
    above_units: i64,
    multiple: i64,
    step: TickStep,
}

impl TickRule {
    /// A single tick size for every price.
    pub fn uniform(tick: Decimal) -> Result<TickRule, SpecError> {
        TickRule::with_steps(tick, &[])
    }

    /// A minimum tick plus steps; each step's tick must be a multiple of the minimum tick.
    pub fn with_steps(tick: Decimal, steps: &[TickStep]) -> Result<TickRule, SpecError> {
        if tick.mantissa() <= 0 {
            return Err(SpecError::BadTick(tick));
        }
        let mut compiled = Vec::with_capacity(steps.len());
        for step in steps {
            let multiple = step.tick.to_units(tick).map_err(|_| SpecError::BadStep(*step))?;
            if multiple <= 0 {
                return Err(SpecError::BadStep(*step));
            }
            // A threshold between two ticks is fine: compare in ticks, rounding down.
            let above_units = floor_units(step.above_price, tick).ok_or(SpecError::BadStep(*step))?;
            compiled.push(CompiledStep { above_units, multiple, step: *step });
        }
        compiled.sort_by_key(|s| s.above_units);
        Ok(TickRule { tick, steps: compiled })
    }

    pub fn tick(&self) -> Decimal {
        self.tick
    }

    pub fn steps(&self) -> impl Iterator<Item = TickStep> + '_ {
        self.steps.iter().map(|s| s.step)
    }

    /// The tick size that applies at `price`.
    pub fn tick_at(&self, price: Price) -> i64 {
        self.steps.iter().rev().find(|s| price.raw() > s.above_units).map_or(1, |s| s.multiple)
    }

    /// True when `price` is a valid price on this grid.
    pub fn is_valid(&self, price: Price) -> bool {
        price.raw() % self.tick_at(price) == 0
    }
}

fn floor_units(value: Decimal, unit: Decimal) -> Option<i64> {
    match value.to_units(unit) {
        Ok(units) => Some(units),
        Err(NumberError::OffGrid) => {
            // Reduce to a common scale and floor-divide.
            let scale = value.scale().max(unit.scale());
            let v = i128::from(value.mantissa()) * 10i128.pow(u32::from(scale - value.scale()));
            let u = i128::from(unit.mantissa()) * 10i128.pow(u32::from(scale - unit.scale()));
            i64::try_from(v.div_euclid(u)).ok()
        }
        Err(_) => None,
    }
}

/// The contract specification of one instrument.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InstrumentSpec {
    pub id: InstrumentId,
    pub name: String,
    pub kind: InstrumentKind,
    pub settlement: Settlement,
    pub tick_rule: TickRule,
    /// What one `Qty` unit is worth in the instrument's amount unit (USD for inverse
    /// futures, coin for options and linear instruments). Every amount is a multiple of it.
    pub qty_unit: Decimal,
    pub contract_size: Decimal,
    pub min_trade_amount: Decimal,
    pub base_currency: String,
    pub quote_currency: String,
    pub settlement_currency: String,
    pub expiry: Option<Utc>,
    pub strike: Option<Decimal>,
    pub option_type: Option<OptionType>,
}

impl InstrumentSpec {
    /// A spec with one tick size and amount step, for tests, replays and synthetic data.
    /// Fill in the other fields as needed.
    pub fn simple(name: &str, tick: Decimal, qty_unit: Decimal) -> Result<InstrumentSpec, SpecError> {
        if qty_unit.mantissa() <= 0 {
            return Err(SpecError::BadQtyUnit(qty_unit));
        }
        Ok(InstrumentSpec {
            id: InstrumentId(0),
            name: name.to_owned(),
            kind: InstrumentKind::Future,
            settlement: Settlement::Inverse,
            tick_rule: TickRule::uniform(tick)?,
            qty_unit,
            contract_size: qty_unit,
            min_trade_amount: qty_unit,
            base_currency: String::new(),
            quote_currency: String::new(),
            settlement_currency: String::new(),
            expiry: None,
            strike: None,
            option_type: None,
        })
    }

    pub fn tick(&self) -> Decimal {
        self.tick_rule.tick()
    }

    /// The currency Deribit files this instrument's orders and trades under (its
    /// `currency` parameter for label lookups and currency-wide queries): the settlement
    /// currency (`USDC` for `BTC_USDC-PERPETUAL`, `BTC` for an inverse future), else the base
    /// currency; empty when the spec has neither.
    pub fn order_currency(&self) -> &str {
        if self.settlement_currency.is_empty() { &self.base_currency } else { &self.settlement_currency }
    }

    /// Parses a price exactly ("64250.5"); errors if it is off the tick grid.
    pub fn parse_price(&self, text: &str) -> Result<Price, NumberError> {
        self.price_from_decimal(Decimal::parse(text)?)
    }

    /// [`Self::parse_price`] on bytes.
    pub fn parse_price_bytes(&self, bytes: &[u8]) -> Result<Price, NumberError> {
        self.price_from_decimal(Decimal::parse_bytes(bytes)?)
    }

    pub fn price_from_decimal(&self, value: Decimal) -> Result<Price, NumberError> {
        let price = Price::from_raw(value.to_units(self.tick_rule.tick)?);
        if !self.tick_rule.is_valid(price) {
            return Err(NumberError::OffGrid);
        }
        Ok(price)
    }

    /// The price as a decimal.
    pub fn price_to_decimal(&self, price: Price) -> Decimal {
        // Cannot overflow for any price that was parsed; saturate defensively otherwise.
        Decimal::from_units(price.raw(), self.tick_rule.tick).unwrap_or(Decimal::ZERO)
    }

    /// Appends the exact decimal text of `price` (no allocation beyond `out`'s growth).
    pub fn write_price(&self, price: Price, out: &mut Vec<u8>) {
        write_units(price.raw(), self.tick_rule.tick, out);
    }

    /// Parses an amount exactly; errors if it is not a multiple of the amount step.
    pub fn parse_qty(&self, text: &str) -> Result<Qty, NumberError> {
        self.qty_from_decimal(Decimal::parse(text)?)
    }

    pub fn parse_qty_bytes(&self, bytes: &[u8]) -> Result<Qty, NumberError> {
        self.qty_from_decimal(Decimal::parse_bytes(bytes)?)
    }

    pub fn qty_from_decimal(&self, value: Decimal) -> Result<Qty, NumberError> {
        Ok(Qty::from_raw(value.to_units(self.qty_unit)?))
    }

    pub fn qty_to_decimal(&self, qty: Qty) -> Decimal {
        Decimal::from_units(qty.raw(), self.qty_unit).unwrap_or(Decimal::ZERO)
    }

    pub fn write_qty(&self, qty: Qty, out: &mut Vec<u8>) {
        write_units(qty.raw(), self.qty_unit, out);
    }

    /// Minimum trade amount in lots (rounded up if the venue's minimum is off the step).
    pub fn min_qty(&self) -> Qty {
        let unit = self.qty_unit;
        match self.min_trade_amount.to_units(unit) {
            Ok(units) => Qty::from_raw(units.max(1)),
            Err(_) => Qty::from_raw(floor_units(self.min_trade_amount, unit).unwrap_or(0) + 1),
        }
    }

    /// `price` as a `String`, for display outside the hot path.
    pub fn format_price(&self, price: Price) -> String {
        let mut out = Vec::with_capacity(24);
        self.write_price(price, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    /// `qty` as a `String`, for display outside the hot path.
    pub fn format_qty(&self, qty: Qty) -> String {
        let mut out = Vec::with_capacity(24);
        self.write_qty(qty, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// A spec that cannot be built.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SpecError {
    #[error("tick size must be positive, got {0}")]
    BadTick(Decimal),
    #[error("tick step above {} has tick {} that is not a positive multiple of the minimum tick", .0.above_price, .0.tick)]
    BadStep(TickStep),
    #[error("amount step must be positive, got {0}")]
    BadQtyUnit(Decimal),
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(text: &str) -> Decimal {
        Decimal::parse(text).unwrap()
    }

    #[test]
    fn orders_are_filed_under_the_settlement_currency() {
        let mut spec = InstrumentSpec::simple("BTC_USDC-PERPETUAL", d("0.5"), d("0.001")).unwrap();
        assert_eq!(spec.order_currency(), "");
        spec.base_currency = "BTC".into();
        assert_eq!(spec.order_currency(), "BTC", "no settlement currency given: the base");
        spec.settlement_currency = "USDC".into();
        assert_eq!(spec.order_currency(), "USDC");
    }

    fn btc_perp() -> InstrumentSpec {
        InstrumentSpec::simple("BTC-PERPETUAL", d("0.5"), d("10")).unwrap()
    }

    fn btc_option() -> InstrumentSpec {
        let mut spec = InstrumentSpec::simple("BTC-27DEC24-60000-C", d("0.0005"), d("0.1")).unwrap();
        spec.kind = InstrumentKind::Option;
        spec.tick_rule = TickRule::with_steps(
            d("0.0005"),
            &[
                TickStep { above_price: d("0.005"), tick: d("0.001") },
                TickStep { above_price: d("0.1"), tick: d("0.005") },
            ],
        )
        .unwrap();
        spec
    }

    #[test]
    fn perpetual_prices_and_amounts() {
        let spec = btc_perp();
        assert_eq!(spec.parse_price("64250.5"), Ok(Price::from_raw(128_501)));
        assert_eq!(spec.parse_price("64250.25"), Err(NumberError::OffGrid));
        assert_eq!(spec.format_price(Price::from_raw(128_501)), "64250.5");
        assert_eq!(spec.parse_qty("120"), Ok(Qty::from_raw(12)));
        assert_eq!(spec.parse_qty("125"), Err(NumberError::OffGrid));
        assert_eq!(spec.format_qty(Qty::from_raw(12)), "120");
        assert_eq!(spec.min_qty(), Qty::from_raw(1));
    }

    #[test]
    fn tick_size_steps_restrict_the_grid() {
        let spec = btc_option();
        assert_eq!(spec.parse_price("0.0045"), Ok(Price::from_raw(9)));
        assert_eq!(spec.parse_price("0.005"), Ok(Price::from_raw(10)));
        assert_eq!(spec.parse_price("0.0055"), Err(NumberError::OffGrid));
        assert_eq!(spec.parse_price("0.006"), Ok(Price::from_raw(12)));
        assert_eq!(spec.parse_price("0.101"), Err(NumberError::OffGrid));
        assert_eq!(spec.parse_price("0.105"), Ok(Price::from_raw(210)));
        assert_eq!(spec.tick_rule.tick_at(Price::from_raw(300)), 10);
        assert!(TickRule::with_steps(d("0.0005"), &[TickStep { above_price: d("1"), tick: d("0.0007") }]).is_err());
    }

    #[test]
    fn bad_specs_are_refused() {
        assert_eq!(InstrumentSpec::simple("X", d("0"), d("1")).unwrap_err(), SpecError::BadTick(d("0")));
        assert_eq!(InstrumentSpec::simple("X", d("1"), d("-1")).unwrap_err(), SpecError::BadQtyUnit(d("-1")));
    }

    proptest! {
        #[test]
        fn price_and_qty_round_trip(ticks in 0i64..10_000_000_000, lots in 0i64..10_000_000_000) {
            let spec = btc_perp();
            let text = spec.format_price(Price::from_raw(ticks));
            prop_assert_eq!(spec.parse_price(&text), Ok(Price::from_raw(ticks)));
            let text = spec.format_qty(Qty::from_raw(lots));
            prop_assert_eq!(spec.parse_qty(&text), Ok(Qty::from_raw(lots)));
        }

        #[test]
        fn valid_option_prices_round_trip(ticks in 1i64..100_000) {
            let spec = btc_option();
            let price = Price::from_raw(ticks);
            let text = spec.format_price(price);
            if spec.tick_rule.is_valid(price) {
                prop_assert_eq!(spec.parse_price(&text), Ok(price));
            } else {
                prop_assert_eq!(spec.parse_price(&text), Err(NumberError::OffGrid));
            }
        }
    }
}
