//! The instrument catalogue the simulator lists and trades: a built-in default set, or the
//! `result` of a recorded `public/get_instruments` reply (`--instruments FILE`).
//!
//! Owns: turning Deribit's instrument objects into `InstrumentSpec`s (tick rule, amount step)
//! and picking a start price for the synthetic market.
//! Must not: be used on a hot path. (A private stand-in for `ticktrade-deribit-proto`'s
//! instrument module, kept small.)

use ticktrade_core::{Decimal, InstrumentId, InstrumentKind, InstrumentSpec, Settlement, TickRule, TickStep};
use ticktrade_deribit_proto::api::{self, Num};

/// A bad instrument file.
#[derive(Debug, thiserror::Error)]
pub enum CatalogueError {
    #[error("instrument file is not a get_instruments reply or array: {0}")]
    Json(#[from] serde_json::Error),
    #[error("instrument {name}: {why}")]
    Spec { name: String, why: String },
    #[error("no instruments")]
    Empty,
}

fn d(text: &str) -> Decimal {
    Decimal::parse(text).unwrap_or(Decimal::ONE)
}

fn instrument(name: &str, id: u32, base: &str, linear: bool, tick: &str, contract: &str, min: &str) -> api::Instrument {
    let (quote, settlement, kind_type) = if linear { ("USDC", "USDC", "linear") } else { ("USD", base, "reversed") };
    api::Instrument {
        instrument_name: name.to_owned(),
        instrument_id: id,
        kind: "future".to_owned(),
        instrument_type: kind_type.to_owned(),
        future_type: Some(kind_type.to_owned()),
        base_currency: base.to_owned(),
        quote_currency: quote.to_owned(),
        counter_currency: quote.to_owned(),
        settlement_currency: settlement.to_owned(),
        settlement_period: Some("perpetual".to_owned()),
        price_index: format!("{}_{}", base.to_ascii_lowercase(), quote.to_ascii_lowercase()),
        tick_size: Num(d(tick)),
        tick_size_steps: Vec::new(),
        contract_size: Num(d(contract)),
        min_trade_amount: Num(d(min)),
        maker_commission: Num::ZERO,
        taker_commission: Num(d("0.0005")),
        max_leverage: Some(50),
        max_liquidation_commission: Some(Num(d("0.0075"))),
        block_trade_commission: Num(d("0.00025")),
        block_trade_min_trade_amount: Num(d("200000")),
        block_trade_tick_size: Num(d("0.01")),
        is_active: true,
        state: "open".to_owned(),
        creation_timestamp: 1_534_167_754_000,
        expiration_timestamp: 32_503_708_800_000,
        strike: None,
        option_type: None,
    }
}

/// The default catalogue: BTC and ETH inverse perpetuals, a linear BTC perpetual, one BTC
/// call option and the BTC/USDC spot pair (so clients see every `kind` they handle).
pub fn default_instruments() -> Vec<(api::Instrument, Decimal)> {
    let mut option = instrument("BTC-27DEC30-60000-C", 124_990, "BTC", false, "0.0005", "1", "0.1");
    option.kind = "option".to_owned();
    option.quote_currency = "BTC".to_owned();
    option.settlement_period = Some("month".to_owned());
    option.expiration_timestamp = 1_924_588_800_000;
    option.strike = Some(Num(d("60000")));
    option.option_type = Some("call".to_owned());
    option.future_type = None;
    option.max_leverage = None;
    option.max_liquidation_commission = None;
    let mut spot = instrument("BTC_USDC", 124_991, "BTC", true, "0.5", "0.0001", "0.0001");
    spot.kind = "spot".to_owned();
    spot.settlement_period = None;
    spot.future_type = None;
    spot.max_leverage = None;
    spot.max_liquidation_commission = None;
    vec![
        (instrument("BTC-PERPETUAL", 124_972, "BTC", false, "0.5", "10", "10"), d("60000")),
        (instrument("ETH-PERPETUAL", 124_973, "ETH", false, "0.05", "1", "1"), d("3000")),
        (instrument("BTC_USDC-PERPETUAL", 178_140, "BTC", true, "0.5", "0.001", "0.001"), d("60000")),
        (option, d("0.05")),
        (spot, d("60000")),
    ]
}

/// Reads a `public/get_instruments` reply (or its bare `result` array).
pub fn parse_instruments(text: &str) -> Result<Vec<(api::Instrument, Decimal)>, CatalogueError> {
    let value: serde_json::Value = serde_json::from_str(text)?;
    let array = value.get("result").cloned().unwrap_or(value);
    // Re-encode and decode through `Num` so numbers stay exact (`Value` holds them as f64).
    let list: Vec<api::Instrument> = serde_json::from_str(&serde_json::to_string(&array)?)?;
    if list.is_empty() {
        return Err(CatalogueError::Empty);
    }
    Ok(list
        .into_iter()
        .map(|info| {
            // Start price: a round number on the grid; options start near 5 % of a 60k underlying.
            let start = match (info.kind.as_str(), info.base_currency.as_str()) {
                ("option", _) => d("0.05"),
                (_, "BTC") => d("60000"),
                (_, "ETH") => d("3000"),
                _ => d("100"),
            };
            (info, start)
        })
        .collect())
}

/// The core spec of one instrument.
pub fn spec_of(info: &api::Instrument, index: u32) -> Result<InstrumentSpec, CatalogueError> {
    let err = |why: String| CatalogueError::Spec { name: info.instrument_name.clone(), why };
    let steps: Vec<TickStep> =
        info.tick_size_steps.iter().map(|s| TickStep { above_price: s.above_price.0, tick: s.tick_size.0 }).collect();
    let tick_rule = TickRule::with_steps(info.tick_size.0, &steps).map_err(|e| err(e.to_string()))?;
    let contract = info.contract_size.0;
    let min = info.min_trade_amount.0;
    let qty_unit = if min < contract && !min.is_zero() { min } else { contract };
    let mut spec =
        InstrumentSpec::simple(&info.instrument_name, info.tick_size.0, qty_unit).map_err(|e| err(e.to_string()))?;
    spec.id = InstrumentId(index);
    spec.kind = InstrumentKind::parse(&info.kind).unwrap_or(InstrumentKind::Future);
    spec.settlement =
        if info.instrument_type == "linear" || info.future_type.as_deref() == Some("linear") || info.kind == "spot" {
            Settlement::Linear
        } else {
            Settlement::Inverse
        };
    spec.tick_rule = tick_rule;
    spec.contract_size = contract;
    spec.min_trade_amount = min;
    spec.base_currency = info.base_currency.clone();
    spec.quote_currency = info.quote_currency.clone();
    spec.settlement_currency = info.settlement_currency.clone();
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_get_instruments_loads() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../testdata/deribit/examples/public_get_instruments.response.json"
        );
        let text = std::fs::read_to_string(path).unwrap();
        let list = parse_instruments(&text).unwrap();
        assert_eq!(list.len(), 2);
        let spec = spec_of(&list[1].0, 1).unwrap();
        assert_eq!(spec.name, "BTC-PERPETUAL");
        assert_eq!(spec.qty_unit, Decimal::from_int(10));
        assert_eq!(spec.settlement, Settlement::Inverse);
    }

    #[test]
    fn defaults_are_valid() {
        for (i, (info, _)) in default_instruments().iter().enumerate() {
            spec_of(info, i as u32).unwrap();
        }
    }
}
