//! The instrument catalogue: what can be traded, with Deribit's contract fields.
//!
//! Owns: `Instrument` (a core `InstrumentSpec` plus Deribit's exchange-side fields: numeric
//! `instrument_id`, commissions, price index, settlement period, timestamps, block-trade
//! fields), the currency and index tables, name lookup, and the built-in catalogue that looks
//! like today's Deribit (inverse BTC/ETH perpetuals and dated futures, option chains, linear
//! USDC perpetuals, spot pairs) generated relative to a given "today".
//! Must not: read a clock (the caller passes "today"), parse JSON (specs parsed from
//! `public/get_instruments` come in through [`Catalogue::from_specs`]).

use crate::money::Money;
use rustc_hash::FxHashMap;
use ticktrade_core::time::civil::{civil_from_days, days_from_civil};
use ticktrade_core::{
    Decimal, InstrumentId, InstrumentKind, InstrumentSpec, OptionType, Settlement, SpecError, TickRule, TickStep, Utc,
};

/// Index into the catalogue's currency table (`BTC`, `ETH`, `USDC`…).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CurrencyId(pub u8);

/// Index into the catalogue's price-index table (`btc_usd`, `eth_usdc`…).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IndexId(pub u8);

/// Deribit's `settlement_period`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SettlementPeriod {
    Perpetual,
    Day,
    Week,
    Month,
}

impl SettlementPeriod {
    pub const fn as_str(self) -> &'static str {
        match self {
            SettlementPeriod::Perpetual => "perpetual",
            SettlementPeriod::Day => "day",
            SettlementPeriod::Week => "week",
            SettlementPeriod::Month => "month",
        }
    }
}

/// One tradable instrument: the core spec plus the fields Deribit publishes about it.
#[derive(Clone, Debug, PartialEq)]
pub struct Instrument {
    pub spec: InstrumentSpec,
    /// Deribit's numeric `instrument_id`.
    pub instrument_id: u32,
    pub maker_commission: Decimal,
    pub taker_commission: Decimal,
    /// Index name, e.g. `btc_usd`.
    pub price_index: String,
    pub index: IndexId,
    /// The currency fees, PnL and margin are counted in.
    pub settlement_currency: CurrencyId,
    /// The base coin (spot: what is bought), and the quote currency (spot: what is paid).
    pub base: CurrencyId,
    pub quote: CurrencyId,
    pub settlement_period: SettlementPeriod,
    pub creation_timestamp: Utc,
    /// `None` for perpetuals and spot (Deribit prints a far-future timestamp).
    pub expiration_timestamp: Option<Utc>,
    pub block_trade_commission: Decimal,
    pub block_trade_min_trade_amount: Decimal,
    pub block_trade_tick_size: Decimal,
    pub max_leverage: u32,
    pub is_active: bool,
    /// Prefix of this instrument's order ids (`ETH` in `ETH-584849853`, `USDC` for linear).
    pub order_id_prefix: String,
    pub(crate) maker_rate: Money,
    pub(crate) taker_rate: Money,
    /// One tick and one lot, exactly (the accounting formulas' inputs).
    pub(crate) tick_money: Money,
    pub(crate) qty_unit_money: Money,
    pub(crate) tick_f64: f64,
    pub(crate) qty_unit_f64: f64,
}

impl Instrument {
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    pub fn kind(&self) -> InstrumentKind {
        self.spec.kind
    }

    /// True for inverse (USD-quoted, coin-settled) futures and perpetuals: PnL is `usd × (1/a − 1/b)`.
    pub fn is_inverse_future(&self) -> bool {
        self.spec.kind == InstrumentKind::Future && self.spec.settlement == Settlement::Inverse
    }

    /// A price in ticks as an `f64` in the instrument's price unit (statistics and margin only).
    pub fn price_f64(&self, price: ticktrade_core::Price) -> f64 {
        price.raw() as f64 * self.tick_f64
    }

    /// A price in ticks, exactly, in the instrument's price unit.
    pub fn price_money(&self, price: ticktrade_core::Price) -> Money {
        self.tick_money.mul_int(price.raw())
    }

    /// A quantity in lots, exactly, in the amount unit (USD for inverse futures, coin otherwise).
    pub fn amount_money(&self, qty: ticktrade_core::Qty) -> Money {
        self.qty_unit_money.mul_int(qty.raw())
    }

    /// A quantity in lots as an `f64` in the amount unit (USD for inverse futures, coin otherwise).
    pub fn amount_f64(&self, qty: ticktrade_core::Qty) -> f64 {
        qty.raw() as f64 * self.qty_unit_f64
    }
}

/// All instruments plus the currency and index tables they refer to.
#[derive(Clone, Debug, Default)]
pub struct Catalogue {
    instruments: Vec<Instrument>,
    by_name: FxHashMap<String, InstrumentId>,
    currencies: Vec<String>,
    indexes: Vec<String>,
}

/// A catalogue that cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogueError {
    #[error("bad instrument spec: {0}")]
    Spec(#[from] SpecError),
    #[error("duplicate instrument name {0}")]
    Duplicate(String),
    #[error("too many currencies or indexes (max 255)")]
    TooMany,
}

/// What the built-in catalogue is generated around.
#[derive(Clone, Copy, Debug)]
pub struct CatalogueParams {
    /// "Today": expiries are the Fridays and month/quarter ends after this instant.
    pub today: Utc,
    /// BTC and ETH index levels in whole USD, for option strikes.
    pub btc_index_usd: i64,
    pub eth_index_usd: i64,
}

impl Default for CatalogueParams {
    fn default() -> Self {
        // 2026-01-01T00:00:00Z.
        CatalogueParams { today: Utc::from_millis(1_767_225_600_000), btc_index_usd: 90_000, eth_index_usd: 3_000 }
    }
}

fn dec(mantissa: i64, scale: u8) -> Decimal {
    Decimal::new(mantissa, scale).unwrap_or(Decimal::ZERO)
}

impl Catalogue {
    pub fn new() -> Catalogue {
        Catalogue::default()
    }

    pub fn len(&self) -> usize {
        self.instruments.len()
    }

    pub fn is_empty(&self) -> bool {
        self.instruments.is_empty()
    }

    pub fn get(&self, id: InstrumentId) -> Option<&Instrument> {
        self.instruments.get(id.0 as usize)
    }

    pub fn lookup(&self, name: &str) -> Option<InstrumentId> {
        self.by_name.get(name).copied()
    }

    pub fn by_name(&self, name: &str) -> Option<&Instrument> {
        self.lookup(name).and_then(|id| self.get(id))
    }

    pub fn iter(&self) -> impl Iterator<Item = &Instrument> + '_ {
        self.instruments.iter()
    }

    pub fn currencies(&self) -> &[String] {
        &self.currencies
    }

    pub fn currency(&self, name: &str) -> Option<CurrencyId> {
        self.currencies.iter().position(|c| c == name).map(|i| CurrencyId(i as u8))
    }

    pub fn currency_name(&self, id: CurrencyId) -> &str {
        self.currencies.get(usize::from(id.0)).map_or("", |s| s.as_str())
    }

    pub fn indexes(&self) -> &[String] {
        &self.indexes
    }

    pub fn index(&self, name: &str) -> Option<IndexId> {
        self.indexes.iter().position(|c| c == name).map(|i| IndexId(i as u8))
    }

    pub fn index_name(&self, id: IndexId) -> &str {
        self.indexes.get(usize::from(id.0)).map_or("", |s| s.as_str())
    }

    fn intern_currency(&mut self, name: &str) -> Result<CurrencyId, CatalogueError> {
        if let Some(id) = self.currency(name) {
            return Ok(id);
        }
        let id = u8::try_from(self.currencies.len()).map_err(|_| CatalogueError::TooMany)?;
        self.currencies.push(name.to_owned());
        Ok(CurrencyId(id))
    }

    fn intern_index(&mut self, name: &str) -> Result<IndexId, CatalogueError> {
        if let Some(id) = self.index(name) {
            return Ok(id);
        }
        let id = u8::try_from(self.indexes.len()).map_err(|_| CatalogueError::TooMany)?;
        self.indexes.push(name.to_owned());
        Ok(IndexId(id))
    }

    /// Adds an instrument from a spec, with Deribit-like defaults for the exchange fields
    /// (commissions by kind, index `<base>_usd` or `<base>_<quote>` for linear). The spec's
    /// `id` is replaced by the catalogue position.
    pub fn add_spec(&mut self, mut spec: InstrumentSpec, created: Utc) -> Result<InstrumentId, CatalogueError> {
        if self.by_name.contains_key(&spec.name) {
            return Err(CatalogueError::Duplicate(spec.name));
        }
        let id = InstrumentId(self.instruments.len() as u32);
        spec.id = id;
        let linear = spec.settlement == Settlement::Linear;
        let base_name = if spec.base_currency.is_empty() { "BTC".to_owned() } else { spec.base_currency.clone() };
        let quote_name = if spec.quote_currency.is_empty() { "USD".to_owned() } else { spec.quote_currency.clone() };
        let settle_name = if spec.settlement_currency.is_empty() {
            if linear { quote_name.clone() } else { base_name.clone() }
        } else {
            spec.settlement_currency.clone()
        };
        let index_name = if linear || spec.kind == InstrumentKind::Spot {
            format!("{}_{}", base_name.to_lowercase(), quote_name.to_lowercase())
        } else {
            format!("{}_usd", base_name.to_lowercase())
        };
        let (maker, taker) = match spec.kind {
            InstrumentKind::Option | InstrumentKind::OptionCombo => (dec(3, 4), dec(3, 4)),
            InstrumentKind::Spot => (Decimal::ZERO, Decimal::ZERO),
            _ => (Decimal::ZERO, dec(5, 4)),
        };
        let settlement_period =
            if spec.expiry.is_none() { SettlementPeriod::Perpetual } else { SettlementPeriod::Month };
        let base = self.intern_currency(&base_name)?;
        let quote =
            if quote_name == "USD" { self.intern_currency(&settle_name)? } else { self.intern_currency(&quote_name)? };
        let settlement_currency = self.intern_currency(&settle_name)?;
        let index = self.intern_index(&index_name)?;
        let order_id_prefix = if linear || spec.kind == InstrumentKind::Spot { settle_name.clone() } else { base_name };
        let expiration_timestamp = spec.expiry;
        let tick = spec.tick();
        let instrument = Instrument {
            instrument_id: 100_000 + id.0,
            maker_rate: Money::from_decimal(maker),
            taker_rate: Money::from_decimal(taker),
            tick_money: Money::from_decimal(tick),
            qty_unit_money: Money::from_decimal(spec.qty_unit),
            tick_f64: tick.to_f64_lossy(),
            qty_unit_f64: spec.qty_unit.to_f64_lossy(),
            maker_commission: maker,
            taker_commission: taker,
            price_index: index_name,
            index,
            settlement_currency,
            base,
            quote,
            settlement_period,
            creation_timestamp: created,
            expiration_timestamp,
            block_trade_commission: if spec.kind == InstrumentKind::Option { dec(3, 4) } else { dec(25, 5) },
            block_trade_min_trade_amount: spec.min_trade_amount,
            block_trade_tick_size: tick,
            max_leverage: if spec.kind == InstrumentKind::Future { 50 } else { 1 },
            is_active: true,
            order_id_prefix,
            spec,
        };
        self.by_name.insert(instrument.spec.name.clone(), id);
        self.instruments.push(instrument);
        Ok(id)
    }

    /// Sets an instrument's commissions (e.g. from a recorded `get_instruments` reply).
    pub fn set_commissions(&mut self, id: InstrumentId, maker: Decimal, taker: Decimal) {
        if let Some(inst) = self.instruments.get_mut(id.0 as usize) {
            inst.maker_commission = maker;
            inst.taker_commission = taker;
            inst.maker_rate = Money::from_decimal(maker);
            inst.taker_rate = Money::from_decimal(taker);
        }
    }

    /// A catalogue from externally parsed specs (e.g. `ticktrade-deribit-proto` reading a
    /// `public/get_instruments` reply), with Deribit-like defaults for the other fields.
    pub fn from_specs(
        specs: impl IntoIterator<Item = InstrumentSpec>,
        created: Utc,
    ) -> Result<Catalogue, CatalogueError> {
        let mut catalogue = Catalogue::new();
        for spec in specs {
            catalogue.add_spec(spec, created)?;
        }
        Ok(catalogue)
    }

    /// The built-in catalogue: BTC and ETH inverse perpetuals and dated futures, an option
    /// chain per currency, linear USDC perpetuals and spot pairs.
    pub fn builtin(params: CatalogueParams) -> Result<Catalogue, CatalogueError> {
        let mut c = Catalogue::new();
        let created = params.today;
        let expiries = expiries_after(params.today);
        for (coin, tick, contract, index_usd, strike_step, dated_tick) in [
            ("BTC", dec(5, 1), dec(10, 0), params.btc_index_usd, 1_000, dec(25, 1)),
            ("ETH", dec(5, 2), dec(1, 0), params.eth_index_usd, 50, dec(5, 2)),
        ] {
            let mut perp = InstrumentSpec::simple(&format!("{coin}-PERPETUAL"), tick, contract)?;
            inverse_future(&mut perp, coin, contract);
            c.add_spec(perp, created)?;
            for &expiry in &expiries[1..] {
                let mut fut = InstrumentSpec::simple(&format!("{coin}-{}", date_code(expiry)), dated_tick, contract)?;
                inverse_future(&mut fut, coin, contract);
                fut.expiry = Some(expiry);
                c.add_spec(fut, created)?;
            }
            let min_amount = if coin == "BTC" { dec(1, 1) } else { dec(1, 0) };
            let center = (index_usd / strike_step) * strike_step;
            for &expiry in &expiries {
                for k in -8..=8 {
                    let strike = center + k * strike_step;
                    if strike <= 0 {
                        continue;
                    }
                    for option_type in [OptionType::Call, OptionType::Put] {
                        let letter = if option_type == OptionType::Call { "C" } else { "P" };
                        let name = format!("{coin}-{}-{strike}-{letter}", date_code(expiry));
                        let mut spec = InstrumentSpec::simple(&name, dec(5, 4), min_amount)?;
                        spec.kind = InstrumentKind::Option;
                        spec.tick_rule =
                            TickRule::with_steps(dec(5, 4), &[TickStep { above_price: dec(1, 1), tick: dec(1, 3) }])?;
                        spec.contract_size = dec(1, 0);
                        spec.min_trade_amount = min_amount;
                        spec.base_currency = coin.to_owned();
                        spec.quote_currency = coin.to_owned();
                        spec.settlement_currency = coin.to_owned();
                        spec.expiry = Some(expiry);
                        spec.strike = Some(Decimal::from_int(strike));
                        spec.option_type = Some(option_type);
                        c.add_spec(spec, created)?;
                    }
                }
            }
        }
        for (coin, tick, contract) in [("BTC", dec(1, 1), dec(1, 4)), ("ETH", dec(5, 2), dec(1, 3))] {
            let mut spec = InstrumentSpec::simple(&format!("{coin}_USDC-PERPETUAL"), tick, contract)?;
            linear(&mut spec, coin);
            c.add_spec(spec, created)?;
        }
        for (coin, tick) in [("BTC", dec(5, 1)), ("ETH", dec(5, 2))] {
            let mut spec = InstrumentSpec::simple(&format!("{coin}_USDC"), tick, dec(1, 4))?;
            linear(&mut spec, coin);
            spec.kind = InstrumentKind::Spot;
            c.add_spec(spec, created)?;
        }
        Ok(c)
    }
}

fn inverse_future(spec: &mut InstrumentSpec, coin: &str, contract: Decimal) {
    spec.kind = InstrumentKind::Future;
    spec.settlement = Settlement::Inverse;
    spec.contract_size = contract;
    spec.min_trade_amount = contract;
    spec.base_currency = coin.to_owned();
    spec.quote_currency = "USD".to_owned();
    spec.settlement_currency = coin.to_owned();
}

fn linear(spec: &mut InstrumentSpec, coin: &str) {
    spec.kind = InstrumentKind::Future;
    spec.settlement = Settlement::Linear;
    spec.base_currency = coin.to_owned();
    spec.quote_currency = "USDC".to_owned();
    spec.settlement_currency = "USDC".to_owned();
}

const DAY_MS: i64 = 86_400_000;
/// Deribit expires and settles at 08:00 UTC.
pub const SETTLEMENT_HOUR_MS: i64 = 8 * 3_600_000;

/// The next two Fridays, the last Friday of next month, and the next two quarterly last
/// Fridays (March, June, September, December) after `today`, each at 08:00 UTC, sorted.
pub fn expiries_after(today: Utc) -> Vec<Utc> {
    let day = today.as_millis().div_euclid(DAY_MS);
    let mut out = Vec::new();
    // 1970-01-01 was a Thursday: weekday 0 = Monday … 4 = Friday.
    let weekday = |d: i64| (d + 3).rem_euclid(7);
    let mut d = day + 1;
    while out.len() < 2 {
        if weekday(d) == 4 {
            out.push(d);
        }
        d += 1;
    }
    let (y, m, _) = civil_from_days(day);
    let last_friday = |y: i64, m: u32| {
        let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
        let mut d = days_from_civil(ny, nm, 1) - 1;
        while weekday(d) != 4 {
            d -= 1;
        }
        d
    };
    let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
    out.push(last_friday(ny, nm));
    let (mut qy, mut qm) = (y, m);
    let mut n_quarters = 0;
    while n_quarters < 2 {
        let d = last_friday(qy, qm);
        if qm % 3 == 0 && d > day {
            out.push(d);
            n_quarters += 1;
        }
        if qm == 12 {
            qy += 1;
            qm = 1;
        } else {
            qm += 1;
        }
    }
    out.sort_unstable();
    out.dedup();
    out.into_iter().map(|d| Utc::from_millis(d * DAY_MS + SETTLEMENT_HOUR_MS)).collect()
}

/// Deribit's date code: `27DEC24`, `5AUG16` (day without leading zero).
pub fn date_code(t: Utc) -> String {
    const MONTHS: [&str; 12] = ["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"];
    let (y, m, d) = civil_from_days(t.as_millis().div_euclid(DAY_MS));
    format!("{d}{}{:02}", MONTHS[(m - 1) as usize], y.rem_euclid(100))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_names() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(days_from_civil(2024, 12, 27), 20_084);
        assert_eq!(date_code(Utc::from_millis(20_084 * DAY_MS)), "27DEC24");
        assert_eq!(date_code(Utc::from_millis(days_from_civil(2016, 8, 5) * DAY_MS)), "5AUG16");
        // From Thursday 2026-01-01: Fridays 2 and 9 Jan, last Friday of February (27th),
        // last Fridays of March (27th) and June (26th).
        let codes: Vec<_> = expiries_after(CatalogueParams::default().today).into_iter().map(date_code).collect();
        assert_eq!(codes, vec!["2JAN26", "9JAN26", "27FEB26", "27MAR26", "26JUN26"]);
    }

    #[test]
    fn builtin_looks_like_deribit() {
        let c = Catalogue::builtin(CatalogueParams::default()).unwrap();
        let perp = c.by_name("BTC-PERPETUAL").unwrap();
        assert_eq!(perp.spec.tick(), dec(5, 1));
        assert_eq!(perp.spec.contract_size, dec(10, 0));
        assert_eq!(perp.order_id_prefix, "BTC");
        assert_eq!(perp.settlement_period.as_str(), "perpetual");
        assert_eq!(c.currency_name(perp.settlement_currency), "BTC");
        assert_eq!(c.by_name("ETH-PERPETUAL").unwrap().spec.tick(), dec(5, 2));
        assert!(c.by_name("BTC-27MAR26").is_some());
        let opt = c.by_name("BTC-27MAR26-90000-C").unwrap();
        assert_eq!(opt.kind(), InstrumentKind::Option);
        assert_eq!(opt.spec.min_trade_amount, dec(1, 1));
        assert!(c.by_name("ETH-9JAN26-3000-P").is_some());
        let lin = c.by_name("BTC_USDC-PERPETUAL").unwrap();
        assert_eq!((lin.order_id_prefix.as_str(), c.currency_name(lin.settlement_currency)), ("USDC", "USDC"));
        assert_eq!(c.by_name("ETH_USDC").unwrap().kind(), InstrumentKind::Spot);
        assert_eq!(c.index_name(lin.index), "btc_usdc");
        assert_eq!(c.index_name(perp.index), "btc_usd");
        assert!(c.len() > 300);
        let specs: Vec<_> = c.iter().map(|i| i.spec.clone()).collect();
        let again = Catalogue::from_specs(specs, Utc(0)).unwrap();
        assert_eq!(again.len(), c.len());
        assert_eq!(again.by_name("BTC-PERPETUAL").unwrap().spec, perp.spec);
    }
}
