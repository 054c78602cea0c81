//! The strategy and risk configuration file (TOML): parsing, validation against the venue's
//! instrument list, and the commented template `ticktrade run --print-config` prints.
//!
//! Owns: `Config` (the file as written, strings and integers), `Setup` (the same, checked and
//! converted to integer units of each instrument), `ConfigError` (which field, and why), and
//! `template()`, which parses to `Config::default()`.
//! Must not: read the file (the binary does), or accept anything it cannot check: unknown keys,
//! negative limits, floats for amounts (they would pass through `f64`), instruments the venue
//! does not list, and loss limits on instruments whose PnL is not counted are refused at start.

use serde::Deserialize;
use ticktrade_core::{Decimal, InstrumentId, InstrumentSpec, Qty};

use crate::context::{Runner, RunnerParts, Strategy};
use crate::label::{LabelGen, valid_prefix};
use crate::order::{Orders, OrdersConfig};
use crate::pnl::PnlRule;
use crate::quote::{Distance, Quote, QuoteParams};
use crate::risk::{BandReference, InstrumentLimits, Limits, Notional, PriceBand, RateLimit, Risk};
use crate::take::{Take, TakeParams};

/// A refused configuration: the field (as a TOML path) and why.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Parse(String),
    #[error("{field}: {reason}")]
    Invalid { field: String, reason: String },
}

fn invalid(field: impl Into<String>, reason: impl Into<String>) -> ConfigError {
    ConfigError::Invalid { field: field.into(), reason: reason.into() }
}

/// An exact decimal written as a string ("0.01") or an integer (100). Floats are refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amount(pub Decimal);

impl<'de> Deserialize<'de> for Amount {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Amount, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Amount;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an exact decimal as a string (\"0.01\") or an integer")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Amount, E> {
                Decimal::parse(v).map(Amount).map_err(|e| E::custom(format!("{v:?}: {e}")))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Amount, E> {
                Ok(Amount(Decimal::from_int(v)))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Amount, E> {
                i64::try_from(v).map(|v| Amount(Decimal::from_int(v))).map_err(|_| E::custom("number out of range"))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Amount, E> {
                Err(E::custom(format!("{v} is a float; write amounts as strings, e.g. \"{v}\"")))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// The file as written.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// "quote", "take", or "custom" (a strategy of the user's own, run by their own binary,
    /// whose parameters are the `[custom]` table).
    pub strategy: String,
    pub label_prefix: String,
    pub capacity: CapacityConfig,
    pub risk: RiskConfig,
    #[serde(default)]
    pub quote: Option<QuoteConfig>,
    #[serde(default)]
    pub take: Option<TakeConfig>,
    /// A custom strategy's own parameters; `instrument` names the instrument it trades.
    #[serde(default)]
    pub custom: Option<toml::Table>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacityConfig {
    pub order_slots: i64,
    pub outbox: i64,
    pub trade_memory: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RiskConfig {
    pub max_open_orders: Option<i64>,
    pub max_orders_per_window: Option<i64>,
    pub rate_window_ms: i64,
    pub price_band_bps: Option<i64>,
    /// "mid" or "mark".
    pub price_band_reference: String,
    pub self_cross: bool,
    #[serde(default)]
    pub instrument: Vec<InstrumentRiskConfig>,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InstrumentRiskConfig {
    pub name: String,
    pub max_order_amount: Option<Amount>,
    pub max_order_notional: Option<Amount>,
    pub max_position: Option<Amount>,
    pub max_loss: Option<Amount>,
}

impl InstrumentRiskConfig {
    /// An instrument with no limits of its own (a book the strategy only watches; the
    /// account-wide limits still apply), as an `[[risk.instrument]]` table with just `name`.
    pub fn unlimited(name: impl Into<String>) -> InstrumentRiskConfig {
        InstrumentRiskConfig {
            name: name.into(),
            max_order_amount: None,
            max_order_notional: None,
            max_position: None,
            max_loss: None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QuoteConfig {
    pub instrument: String,
    pub distance_ticks: Option<i64>,
    pub distance_bps: Option<i64>,
    pub amount: Amount,
    pub max_position: Amount,
    pub skew_ticks: i64,
    pub requote_ticks: i64,
}

#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TakeConfig {
    pub instrument: String,
    pub levels: i64,
    pub imbalance: Amount,
    pub amount: Amount,
    pub max_position: Amount,
    pub cooldown_ms: i64,
}

const TEMPLATE: &str = r#"# ticktrade run: strategy parameters and risk limits.
# Amounts are exact decimals in the venue's amount unit (USD for inverse futures such as
# BTC-PERPETUAL, the coin for options and linear instruments); write fractions as strings.

# The built-in strategy to run: "quote" (market maker) or "take" (imbalance taker).
strategy = "quote"
# Order labels are <label_prefix>-<run nonce>-<counter>: 1-8 of [A-Za-z0-9_]. Open orders
# carrying this prefix that a run does not know are adopted at reconciliation.
label_prefix = "tt"

[capacity]
# Order slots (live orders plus recently finished ones), fixed at start.
order_slots = 256
# Actions one event may queue.
outbox = 64
# Trade ids remembered to drop duplicate fills.
trade_memory = 4096

[risk]
# Live orders across all instruments. Remove a line to turn its check off.
max_open_orders = 10
# At most this many orders and edits in any rate_window_ms.
max_orders_per_window = 20
rate_window_ms = 1000
# Orders and edits priced further than this from the reference are blocked.
price_band_bps = 200
# "mid" (from the book) or "mark" (from the ticker).
price_band_reference = "mid"
# Block orders that would trade against our own resting orders.
self_cross = true

[[risk.instrument]]
name = "BTC-PERPETUAL"
max_order_amount = "1000"
# In the quote currency (USD).
max_order_notional = "1000"
# Absolute position, counting our live orders on the side that would increase it.
max_position = "5000"
# Realised + unrealised loss (marked at the mid) that trips the kill switch, in the
# instrument's PnL currency: the settlement coin for inverse futures (BTC here).
max_loss = "0.01"

[quote]
instrument = "BTC-PERPETUAL"
# Distance of each quote from the mid: distance_ticks or distance_bps (one of them).
distance_ticks = 10
amount = "100"
max_position = "1000"
# Ticks both quotes move against the inventory at max_position.
skew_ticks = 10
# Amend a quote only when its wanted price moved more than this many ticks.
requote_ticks = 2

[take]
instrument = "BTC-PERPETUAL"
# Levels a side summed for the imbalance.
levels = 5
# Fire when one side's size is at least this many times the other's.
imbalance = "3"
amount = "100"
max_position = "1000"
cooldown_ms = 1000
"#;

/// The commented template; `Config::parse(template())` is `Config::default()`.
pub fn template() -> &'static str {
    TEMPLATE
}

impl Default for Config {
    fn default() -> Config {
        let d = |text: &str| Amount(Decimal::parse(text).unwrap_or(Decimal::ZERO));
        Config {
            strategy: "quote".to_owned(),
            label_prefix: "tt".to_owned(),
            capacity: CapacityConfig { order_slots: 256, outbox: 64, trade_memory: 4096 },
            risk: RiskConfig {
                max_open_orders: Some(10),
                max_orders_per_window: Some(20),
                rate_window_ms: 1000,
                price_band_bps: Some(200),
                price_band_reference: "mid".to_owned(),
                self_cross: true,
                instrument: vec![InstrumentRiskConfig {
                    name: "BTC-PERPETUAL".to_owned(),
                    max_order_amount: Some(d("1000")),
                    max_order_notional: Some(d("1000")),
                    max_position: Some(d("5000")),
                    max_loss: Some(d("0.01")),
                }],
            },
            quote: Some(QuoteConfig {
                instrument: "BTC-PERPETUAL".to_owned(),
                distance_ticks: Some(10),
                distance_bps: None,
                amount: d("100"),
                max_position: d("1000"),
                skew_ticks: 10,
                requote_ticks: 2,
            }),
            take: Some(TakeConfig {
                instrument: "BTC-PERPETUAL".to_owned(),
                levels: 5,
                imbalance: d("3"),
                amount: d("100"),
                max_position: d("1000"),
                cooldown_ms: 1000,
            }),
            custom: None,
        }
    }
}

/// One of the built-in strategies, chosen by the config.
#[derive(Clone, Debug)]
pub enum BuiltIn {
    Quote(Quote),
    Take(Take),
}

impl Strategy for BuiltIn {
    fn on_book(&mut self, ctx: &mut crate::context::Context<'_>, i: InstrumentId, book: &ticktrade_book::L2Book) {
        match self {
            BuiltIn::Quote(s) => s.on_book(ctx, i, book),
            BuiltIn::Take(s) => s.on_book(ctx, i, book),
        }
    }
    fn on_order(
        &mut self,
        ctx: &mut crate::context::Context<'_>,
        o: &crate::order::Order,
        e: crate::order::OrderEvent,
    ) {
        match self {
            BuiltIn::Quote(s) => s.on_order(ctx, o, e),
            BuiltIn::Take(s) => s.on_order(ctx, o, e),
        }
    }
    fn on_fill(&mut self, ctx: &mut crate::context::Context<'_>, fill: &crate::order::FillReport) {
        match self {
            BuiltIn::Quote(s) => s.on_fill(ctx, fill),
            BuiltIn::Take(s) => s.on_fill(ctx, fill),
        }
    }
}

/// A checked configuration, in integer units, with the instruments it uses.
#[derive(Debug)]
pub struct Setup {
    /// The instruments used, `specs[i].id == InstrumentId(i)`: the session subscribes to these
    /// and keeps its books in this order.
    pub specs: Vec<InstrumentSpec>,
    /// The built-in strategy, or `None` for `strategy = "custom"`.
    pub strategy: Option<BuiltIn>,
    /// The `[custom]` table, for a custom strategy's own code to read.
    pub custom: Option<toml::Table>,
    pub limits: Limits,
    pub orders: OrdersConfig,
    pub outbox: usize,
    pub label_prefix: String,
    pub band_reference: BandReference,
}

impl Setup {
    /// The runner for this setup; `run_nonce` makes this run's labels unique on the venue.
    pub fn runner(self, run_nonce: u32) -> Result<Runner<BuiltIn>, ConfigError> {
        let (strategy, parts) = self.into_parts(run_nonce)?;
        let strategy = strategy.ok_or_else(|| invalid("strategy", "a custom strategy runs with its own code"))?;
        Ok(Runner::new(strategy, parts))
    }

    /// The built-in strategy and what a `Runner` needs besides it (for a session that wraps
    /// the strategy, e.g. to journal its events).
    pub fn into_parts(self, run_nonce: u32) -> Result<(Option<BuiltIn>, RunnerParts), ConfigError> {
        let labels = LabelGen::new(&self.label_prefix, run_nonce)
            .ok_or_else(|| invalid("label_prefix", "1 to 8 of [A-Za-z0-9_]"))?;
        let rules = self
            .specs
            .iter()
            .map(|s| PnlRule::for_spec(s).map_err(|e| invalid(format!("instrument {}", s.name), e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        let orders = Orders::new(self.orders, rules, labels.prefix());
        let parts = RunnerParts {
            orders,
            risk: Risk::new(self.limits),
            labels,
            specs: self.specs,
            band_reference: self.band_reference,
        };
        Ok((self.strategy, parts))
    }
}

impl Config {
    /// Parses the file's text; unknown keys and wrong types are refused with the key's path.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| ConfigError::Parse(e.to_string()))
    }

    /// Checks every field and converts to integer units; `venue` is the venue's instrument list.
    pub fn validate(&self, venue: &[InstrumentSpec]) -> Result<Setup, ConfigError> {
        if !valid_prefix(&self.label_prefix) {
            return Err(invalid("label_prefix", "must be 1 to 8 of [A-Za-z0-9_]"));
        }
        let capacity = |field: &str, v: i64| -> Result<usize, ConfigError> {
            if v <= 0 {
                return Err(invalid(format!("capacity.{field}"), format!("must be positive, got {v}")));
            }
            usize::try_from(v).map_err(|_| invalid(format!("capacity.{field}"), "too large"))
        };
        let orders = OrdersConfig {
            order_slots: capacity("order_slots", self.capacity.order_slots)?,
            trade_memory: capacity("trade_memory", self.capacity.trade_memory)?,
        };
        let outbox = capacity("outbox", self.capacity.outbox)?;

        let mut specs: Vec<InstrumentSpec> = Vec::new();
        let mut use_instrument = |field: String, name: &str| -> Result<InstrumentId, ConfigError> {
            if let Some(i) = specs.iter().position(|s| s.name == name) {
                return Ok(InstrumentId(i as u32));
            }
            let spec = venue
                .iter()
                .find(|s| s.name == name)
                .ok_or_else(|| invalid(field, format!("the venue does not list instrument {name:?}")))?;
            let id = InstrumentId(specs.len() as u32);
            specs.push(InstrumentSpec { id, ..spec.clone() });
            Ok(id)
        };

        let strategy_instrument = match self.strategy.as_str() {
            "quote" => {
                let q = self.quote.as_ref().ok_or_else(|| invalid("quote", "missing for strategy = \"quote\""))?;
                use_instrument("quote.instrument".to_owned(), &q.instrument)?
            }
            "take" => {
                let t = self.take.as_ref().ok_or_else(|| invalid("take", "missing for strategy = \"take\""))?;
                use_instrument("take.instrument".to_owned(), &t.instrument)?
            }
            "custom" => {
                let c = self.custom.as_ref().ok_or_else(|| invalid("custom", "missing for strategy = \"custom\""))?;
                let name = c
                    .get("instrument")
                    .and_then(toml::Value::as_str)
                    .ok_or_else(|| invalid("custom.instrument", "missing: the instrument the strategy trades"))?;
                use_instrument("custom.instrument".to_owned(), name)?
            }
            other => return Err(invalid("strategy", format!("{other:?} is not \"quote\", \"take\" or \"custom\""))),
        };

        let mut instruments = Vec::new();
        for (n, r) in self.risk.instrument.iter().enumerate() {
            let at = |f: &str| format!("risk.instrument[{n}].{f}");
            if self.risk.instrument[..n].iter().any(|earlier| earlier.name == r.name) {
                return Err(invalid(at("name"), format!("{:?} has limits twice", r.name)));
            }
            let id = use_instrument(at("name"), &r.name)?;
            instruments.push((id, r, n));
        }
        let mut limits = Limits {
            instruments: vec![InstrumentLimits::default(); specs.len()],
            max_open_orders: non_negative("risk.max_open_orders", self.risk.max_open_orders)?,
            rate: None,
            price_band: None,
            self_cross: self.risk.self_cross,
        };
        for (id, r, n) in instruments {
            limits.instruments[id.0 as usize] = instrument_limits(r, &specs[id.0 as usize], n)?;
        }
        if let Some(max_orders) = non_negative("risk.max_orders_per_window", self.risk.max_orders_per_window)? {
            let window_ms = self.risk.rate_window_ms;
            if window_ms <= 0 {
                return Err(invalid("risk.rate_window_ms", format!("must be positive, got {window_ms}")));
            }
            limits.rate = Some(RateLimit { max_orders, window_ns: window_ms as u64 * 1_000_000 });
        }
        if let Some(bps) = non_negative("risk.price_band_bps", self.risk.price_band_bps)? {
            limits.price_band = Some(PriceBand { band_bps: bps, reference: BandReference::Mid });
        }
        let band_reference = match self.risk.price_band_reference.as_str() {
            "mid" => BandReference::Mid,
            "mark" => BandReference::Mark,
            other => return Err(invalid("risk.price_band_reference", format!("{other:?} is not \"mid\" or \"mark\""))),
        };
        if let Some(band) = limits.price_band.as_mut() {
            band.reference = band_reference;
        }

        let spec = &specs[strategy_instrument.0 as usize];
        let strategy = match self.strategy.as_str() {
            "custom" => None,
            "quote" => {
                let q = self.quote.as_ref().ok_or_else(|| invalid("quote", "missing"))?;
                Some(quote_strategy(q, strategy_instrument, spec)?)
            }
            _ => {
                let t = self.take.as_ref().ok_or_else(|| invalid("take", "missing"))?;
                Some(take_strategy(t, strategy_instrument, spec)?)
            }
        };
        Ok(Setup {
            specs,
            strategy,
            custom: self.custom.clone(),
            limits,
            orders,
            outbox,
            label_prefix: self.label_prefix.clone(),
            band_reference,
        })
    }
}

/// The limits of one `[[risk.instrument]]` entry (the `n`-th), in `spec`'s units.
fn instrument_limits(
    r: &InstrumentRiskConfig,
    spec: &InstrumentSpec,
    n: usize,
) -> Result<InstrumentLimits, ConfigError> {
    let at = |f: &str| format!("risk.instrument[{n}].{f}");
    let notional = Notional::for_spec(spec);
    let mut l = InstrumentLimits { notional, ..InstrumentLimits::default() };
    l.max_order_qty = r.max_order_amount.map(|a| qty(&at("max_order_amount"), spec, a)).transpose()?;
    l.max_position = r.max_position.map(|a| qty(&at("max_position"), spec, a)).transpose()?;
    if let Some(Amount(limit)) = r.max_order_notional {
        positive(&at("max_order_notional"), limit)?;
        l.max_order_notional = Some((notional.units_of(spec, limit), limit));
    }
    if let Some(Amount(limit)) = r.max_loss {
        positive(&at("max_loss"), limit)?;
        let rule = PnlRule::for_spec(spec).map_err(|e| invalid(at("max_loss"), e.to_string()))?;
        l.max_loss = Some((rule.units_of(limit), limit));
    }
    Ok(l)
}

/// The built-in `quote` from its `[quote]` table.
fn quote_strategy(q: &QuoteConfig, instrument: InstrumentId, spec: &InstrumentSpec) -> Result<BuiltIn, ConfigError> {
    let distance = match (q.distance_ticks, q.distance_bps) {
        (Some(t), None) if t >= 0 => Distance::Ticks(t),
        (None, Some(b)) if b >= 0 => {
            Distance::Bps(u32::try_from(b).map_err(|_| invalid("quote.distance_bps", "too large"))?)
        }
        (Some(t), None) => {
            return Err(invalid("quote.distance_ticks", format!("must not be negative, got {t}")));
        }
        (None, Some(b)) => {
            return Err(invalid("quote.distance_bps", format!("must not be negative, got {b}")));
        }
        _ => {
            return Err(invalid("quote.distance_ticks", "set exactly one of distance_ticks and distance_bps"));
        }
    };
    for (field, v) in [("quote.skew_ticks", q.skew_ticks), ("quote.requote_ticks", q.requote_ticks)] {
        if v < 0 {
            return Err(invalid(field, format!("must not be negative, got {v}")));
        }
    }
    Ok(BuiltIn::Quote(Quote::new(QuoteParams {
        instrument,
        distance,
        size: qty("quote.amount", spec, q.amount)?,
        max_position: qty("quote.max_position", spec, q.max_position)?,
        skew_ticks: q.skew_ticks,
        requote_ticks: q.requote_ticks,
    })))
}

/// The built-in `take` from its `[take]` table.
fn take_strategy(t: &TakeConfig, instrument: InstrumentId, spec: &InstrumentSpec) -> Result<BuiltIn, ConfigError> {
    if t.levels <= 0 {
        return Err(invalid("take.levels", format!("must be positive, got {}", t.levels)));
    }
    if t.cooldown_ms < 0 {
        return Err(invalid("take.cooldown_ms", format!("must not be negative, got {}", t.cooldown_ms)));
    }
    let ratio = t.imbalance.0;
    positive("take.imbalance", ratio)?;
    Ok(BuiltIn::Take(Take::new(TakeParams {
        instrument,
        levels: t.levels as usize,
        ratio_num: i128::from(ratio.mantissa()),
        ratio_den: ticktrade_core::POW10_I128[usize::from(ratio.scale())],
        size: qty("take.amount", spec, t.amount)?,
        max_position: qty("take.max_position", spec, t.max_position)?,
        cooldown_ns: t.cooldown_ms as u64 * 1_000_000,
    })))
}

fn non_negative(field: &str, value: Option<i64>) -> Result<Option<u32>, ConfigError> {
    value
        .map(|v| {
            if v < 0 {
                return Err(invalid(field, format!("must not be negative, got {v}")));
            }
            u32::try_from(v).map_err(|_| invalid(field, "too large"))
        })
        .transpose()
}

fn positive(field: &str, value: Decimal) -> Result<(), ConfigError> {
    if value.is_negative() || value.is_zero() {
        return Err(invalid(field, format!("must be positive, got {value}")));
    }
    Ok(())
}

/// An amount in the instrument's lots: positive and on its amount step.
fn qty(field: &str, spec: &InstrumentSpec, Amount(value): Amount) -> Result<Qty, ConfigError> {
    positive(field, value)?;
    spec.qty_from_decimal(value)
        .map_err(|e| invalid(field, format!("{value} for {}: {e} (amount step {})", spec.name, spec.qty_unit)))
}

#[cfg(test)]
#[path = "config_tests.rs"]
mod tests;
