//! `public/get_instruments` and `public/get_instrument` results → `InstrumentSpec`, exactly.
//!
//! Owns: the instrument object's members and their meaning for ticktrade (kind, settlement,
//! tick rule with `tick_size_steps`, amount unit, currencies, expiry, strike, option type).
//! Must not: pass a number through `f64`: every number member is read as its JSON text
//! (`&RawValue`) and parsed into a `Decimal`.
//!
//! Amount unit (`InstrumentSpec::qty_unit`): `gcd(contract_size, min_trade_amount)`. Deribit
//! accepts futures amounts in multiples of `contract_size` (error 10027 otherwise) and option
//! amounts in multiples of `min_trade_amount`; the gcd is a unit for both without guessing by
//! kind, and for every instrument in the recorded replies it equals `min_trade_amount`
//! (10 USD for BTC-PERPETUAL, 0.1 BTC for BTC options, 0.001 BTC for BTC_USDC-PERPETUAL).
//! Book amounts are sums of order amounts, so they are multiples of it too.
//!
//! Settlement: `instrument_type`/`future_type` (`reversed` → inverse, `linear` → linear).
//! Older replies without either (2021 options) are inverse when settled in the base coin, or,
//! without `settlement_currency`, when quoted in USD or the base coin; spot is linear.

use serde::Deserialize;
use serde_json::value::RawValue;
use ticktrade_core::{
    Decimal, InstrumentId, InstrumentKind, InstrumentSpec, NumberError, OptionType, Settlement, SpecError, TickRule,
    TickStep, Utc,
};

use crate::envelope::{EnvelopeError, Incoming, classify};

/// Deribit's expiry for perpetuals (year 3000), read as "no expiry".
pub const PERPETUAL_EXPIRY_MS: i64 = 32_503_708_800_000;

/// An instrument object that cannot become a spec.
#[derive(Debug, thiserror::Error)]
pub enum InstrumentError {
    #[error("bad JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("bad envelope: {0}")]
    Envelope(#[from] EnvelopeError),
    #[error("Deribit returned error {code}: {message}")]
    Rpc { code: i64, message: String },
    #[error("not an instrument result: {0}")]
    Shape(&'static str),
    #[error("{instrument}: member {member} = {text}: {error}")]
    Number { instrument: String, member: &'static str, text: String, error: NumberError },
    #[error("{instrument}: unknown {member} {value:?}")]
    Unknown { instrument: String, member: &'static str, value: String },
    #[error("{instrument}: {error}")]
    Spec { instrument: String, error: SpecError },
}

#[derive(Deserialize)]
struct RawInstrument<'a> {
    instrument_name: String,
    kind: String,
    #[serde(borrow)]
    tick_size: &'a RawValue,
    #[serde(borrow, default)]
    tick_size_steps: Option<Vec<RawStep<'a>>>,
    #[serde(borrow)]
    contract_size: &'a RawValue,
    #[serde(borrow)]
    min_trade_amount: &'a RawValue,
    #[serde(default)]
    instrument_type: Option<String>,
    #[serde(default)]
    future_type: Option<String>,
    #[serde(default)]
    settlement_period: Option<String>,
    #[serde(default)]
    base_currency: String,
    #[serde(default)]
    quote_currency: String,
    #[serde(default)]
    settlement_currency: Option<String>,
    #[serde(default)]
    expiration_timestamp: Option<i64>,
    #[serde(borrow, default)]
    strike: Option<&'a RawValue>,
    #[serde(default)]
    option_type: Option<String>,
}

#[derive(Deserialize)]
struct RawStep<'a> {
    #[serde(borrow)]
    above_price: &'a RawValue,
    #[serde(borrow)]
    tick_size: &'a RawValue,
}

/// One instrument object (`public/get_instrument`'s result) as a spec with the given id.
pub fn parse_instrument(json: &str, id: InstrumentId) -> Result<InstrumentSpec, InstrumentError> {
    let raw: RawInstrument<'_> = serde_json::from_str(json)?;
    to_spec(raw, id)
}

/// An array of instrument objects (`public/get_instruments`' result). Ids are the positions
/// in the array: `InstrumentId` is a process-local dense index, not Deribit's `instrument_id`.
pub fn parse_instruments(json: &str) -> Result<Vec<InstrumentSpec>, InstrumentError> {
    let raws: Vec<RawInstrument<'_>> = serde_json::from_str(json)?;
    raws.into_iter()
        .enumerate()
        .map(|(i, raw)| to_spec(raw, InstrumentId(u32::try_from(i).unwrap_or(u32::MAX))))
        .collect()
}

/// A whole JSON-RPC response of `get_instruments` (array) or `get_instrument` (object).
/// Ids count from `first_id`.
pub fn parse_instruments_response(frame: &str, first_id: u32) -> Result<Vec<InstrumentSpec>, InstrumentError> {
    let Incoming::Response(response) = classify(frame)? else {
        return Err(InstrumentError::Shape("not a response"));
    };
    let result =
        response.outcome.map_err(|e| InstrumentError::Rpc { code: e.code, message: e.message.into_owned() })?;
    let text = result.get().trim_start();
    let mut specs = if text.starts_with('[') {
        parse_instruments(text)?
    } else if text.starts_with('{') {
        vec![parse_instrument(text, InstrumentId(0))?]
    } else {
        return Err(InstrumentError::Shape("result is neither an array nor an object"));
    };
    for spec in &mut specs {
        spec.id = InstrumentId(spec.id.0.saturating_add(first_id));
    }
    Ok(specs)
}

fn number(raw: &RawValue, instrument: &str, member: &'static str) -> Result<Decimal, InstrumentError> {
    Decimal::parse(raw.get()).map_err(|error| InstrumentError::Number {
        instrument: instrument.to_owned(),
        member,
        text: raw.get().to_owned(),
        error,
    })
}

fn to_spec(raw: RawInstrument<'_>, id: InstrumentId) -> Result<InstrumentSpec, InstrumentError> {
    let name = raw.instrument_name.as_str();
    let unknown = |member: &'static str, value: &str| InstrumentError::Unknown {
        instrument: name.to_owned(),
        member,
        value: value.to_owned(),
    };
    let spec_error = |error| InstrumentError::Spec { instrument: name.to_owned(), error };
    let kind = InstrumentKind::parse(&raw.kind).ok_or_else(|| unknown("kind", &raw.kind))?;
    let tick = number(raw.tick_size, name, "tick_size")?;
    let mut steps = Vec::new();
    for step in raw.tick_size_steps.iter().flatten() {
        steps.push(TickStep {
            above_price: number(step.above_price, name, "tick_size_steps.above_price")?,
            tick: number(step.tick_size, name, "tick_size_steps.tick_size")?,
        });
    }
    let tick_rule = TickRule::with_steps(tick, &steps).map_err(spec_error)?;
    let contract_size = number(raw.contract_size, name, "contract_size")?;
    let min_trade_amount = number(raw.min_trade_amount, name, "min_trade_amount")?;
    let qty_unit = decimal_gcd(contract_size, min_trade_amount)
        .filter(|unit| unit.mantissa() > 0)
        .ok_or(spec_error(SpecError::BadQtyUnit(min_trade_amount)))?;
    let settlement = match raw.instrument_type.as_deref().or(raw.future_type.as_deref()) {
        Some("reversed") => Settlement::Inverse,
        Some("linear") => Settlement::Linear,
        Some(other) => return Err(unknown("instrument_type", other)),
        None if kind == InstrumentKind::Spot => Settlement::Linear,
        None => {
            let coin_settled = match raw.settlement_currency.as_deref() {
                Some(currency) => currency == raw.base_currency,
                None => raw.quote_currency == "USD" || raw.quote_currency == raw.base_currency,
            };
            if coin_settled { Settlement::Inverse } else { Settlement::Linear }
        }
    };
    let settlement_currency = raw.settlement_currency.clone().unwrap_or_else(|| match settlement {
        Settlement::Inverse => raw.base_currency.clone(),
        Settlement::Linear => raw.quote_currency.clone(),
    });
    let perpetual = raw.settlement_period.as_deref() == Some("perpetual");
    let expiry = raw.expiration_timestamp.filter(|&ms| !perpetual && ms != PERPETUAL_EXPIRY_MS).map(Utc::from_millis);
    let strike = raw.strike.map(|s| number(s, name, "strike")).transpose()?;
    let option_type = match raw.option_type.as_deref() {
        None => None,
        Some("call") => Some(OptionType::Call),
        Some("put") => Some(OptionType::Put),
        Some(other) => return Err(unknown("option_type", other)),
    };
    Ok(InstrumentSpec {
        id,
        name: raw.instrument_name.clone(),
        kind,
        settlement,
        tick_rule,
        qty_unit,
        contract_size,
        min_trade_amount,
        base_currency: raw.base_currency,
        quote_currency: raw.quote_currency,
        settlement_currency,
        expiry,
        strike,
        option_type,
    })
}

/// The greatest common divisor of two decimals (`gcd(0.5, 0.75) = 0.25`), exact; `None` on
/// overflow. `gcd(0, x) = |x|`.
pub fn decimal_gcd(a: Decimal, b: Decimal) -> Option<Decimal> {
    let scale = a.scale().max(b.scale());
    let widen = |d: Decimal| -> Option<u128> {
        let factor = 10u128.checked_pow(u32::from(scale - d.scale()))?;
        u128::from(d.mantissa().unsigned_abs()).checked_mul(factor)
    };
    let (mut x, mut y) = (widen(a)?, widen(b)?);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    Decimal::new(i64::try_from(x).ok()?, scale).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(text: &str) -> Decimal {
        Decimal::parse(text).unwrap()
    }

    #[test]
    fn gcd_of_decimals() {
        assert_eq!(decimal_gcd(d("0.5"), d("0.75")), Some(d("0.25")));
        assert_eq!(decimal_gcd(d("10"), d("10.0")), Some(d("10")));
        assert_eq!(decimal_gcd(d("1"), d("0.1")), Some(d("0.1")));
        assert_eq!(decimal_gcd(d("0"), d("0.0005")), Some(d("0.0005")));
        assert_eq!(decimal_gcd(d("0.0795"), d("0.079")), Some(d("0.0005")));
        assert_eq!(decimal_gcd(Decimal::ZERO, Decimal::ZERO), Some(Decimal::ZERO));
    }

    #[test]
    fn option_with_tick_steps() {
        let json = r#"{"tick_size":0.0005,"tick_size_steps":[{"above_price":120,"tick_size":0.001},{"above_price":200,"tick_size":0.003}],
            "strike":16000,"settlement_period":"week","settlement_currency":"BTC","quote_currency":"BTC","option_type":"put",
            "min_trade_amount":0.1,"kind":"option","instrument_name":"BTC-13JAN23-16000-P","expiration_timestamp":1673596800000,
            "counter_currency":"USD","contract_size":1,"base_currency":"BTC"}"#;
        let spec = parse_instrument(json, InstrumentId(7)).unwrap();
        assert_eq!(spec.id, InstrumentId(7));
        assert_eq!(spec.kind, InstrumentKind::Option);
        assert_eq!(spec.settlement, Settlement::Inverse);
        assert_eq!(spec.tick(), d("0.0005"));
        assert_eq!(spec.tick_rule.steps().count(), 2);
        assert_eq!(spec.qty_unit, d("0.1"));
        assert_eq!(spec.strike, Some(d("16000")));
        assert_eq!(spec.option_type, Some(OptionType::Put));
        assert_eq!(spec.expiry, Some(Utc::from_millis(1_673_596_800_000)));
        assert!(spec.parse_price("120.001").is_ok());
        assert!(spec.parse_price("200.002").is_err());
    }

    #[test]
    fn perpetual_and_linear() {
        let json = r#"[{"tick_size":0.5,"settlement_period":"perpetual","quote_currency":"USD","min_trade_amount":10.0,"kind":"future",
            "instrument_name":"BTC-PERPETUAL","expiration_timestamp":32503708800000,"contract_size":10.0,"base_currency":"BTC"},
            {"tick_size":0.01,"settlement_period":"perpetual","settlement_currency":"USDC","quote_currency":"USDC","min_trade_amount":0.1,
            "kind":"future","instrument_name":"SOL_USDC-PERPETUAL","future_type":"linear","expiration_timestamp":32503708800000,
            "contract_size":0.1,"base_currency":"SOL"}]"#;
        let specs = parse_instruments(json).unwrap();
        assert_eq!(specs[0].settlement, Settlement::Inverse);
        assert_eq!(specs[0].settlement_currency, "BTC");
        assert_eq!(specs[0].expiry, None);
        assert_eq!(specs[0].qty_unit, d("10"));
        assert_eq!(specs[1].id, InstrumentId(1));
        assert_eq!(specs[1].settlement, Settlement::Linear);
        assert_eq!(specs[1].qty_unit, d("0.1"));
    }

    #[test]
    fn refuses_what_it_cannot_take_exactly() {
        let bad = r#"{"tick_size":1e-40,"min_trade_amount":1,"kind":"future","instrument_name":"X","contract_size":1}"#;
        assert!(matches!(
            parse_instrument(bad, InstrumentId(0)),
            Err(InstrumentError::Number { member: "tick_size", .. })
        ));
        let bad = r#"{"tick_size":1,"min_trade_amount":1,"kind":"swap","instrument_name":"X","contract_size":1}"#;
        assert!(matches!(parse_instrument(bad, InstrumentId(0)), Err(InstrumentError::Unknown { member: "kind", .. })));
        let bad = r#"{"tick_size":0,"min_trade_amount":1,"kind":"future","instrument_name":"X","contract_size":1}"#;
        assert!(matches!(parse_instrument(bad, InstrumentId(0)), Err(InstrumentError::Spec { .. })));
    }
}
