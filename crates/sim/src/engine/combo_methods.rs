//! The combo methods: `public/get_combos`, `get_combo_ids`, `get_combo_details`,
//! `private/create_combo` and `private/get_leg_prices`.
//!
//! Owns: decoding their params, turning leg amounts into whole ratios, and splitting a
//! combo price over its legs (`get_leg_prices`): every leg but the first at its mark,
//! rounded to the legs' finest tick; the first leg takes what makes
//! `Σ (buy +1, sell −1) · ratio · price` equal the combo price exactly.
//! Must not: trade a combo (see `market::combos`: the exchange has no combo books).

use serde_json::value::RawValue;
use ticktrade_core::{Decimal, InstrumentId, Utc};
use ticktrade_deribit_proto::api::{self, Num};

use super::methods::{instrument, json};
use crate::market::{ComboError, Market};
use crate::rpc::{RpcError, params};

/// The methods answered here (`private/` ones need an account, which they do not use:
/// combos are public once created, as on Deribit).
pub const METHODS: &[&str] = &[
    "public/get_combos",
    "public/get_combo_ids",
    "public/get_combo_details",
    "private/create_combo",
    "private/get_leg_prices",
];

/// Amount unit for ratios: leg amounts are compared in ten-thousandths.
fn amount_unit() -> Decimal {
    Decimal::new(1, 4).unwrap_or(Decimal::ONE)
}

/// Answers one of [`METHODS`] (`None`: not one of them).
pub fn call(market: &mut Market, now: Utc, method: &str, raw: Option<&RawValue>) -> Option<Result<String, RpcError>> {
    let result = match method {
        "public/get_combos" | "public/get_combo_ids" => params::<api::CombosParams>(raw).and_then(|p| {
            let any = p.currency.eq_ignore_ascii_case("any");
            if !any && market.ex.catalogue().currency(&p.currency.to_ascii_uppercase()).is_none() {
                return Err(RpcError::invalid_param("currency", "invalid value"));
            }
            let active = match p.state.as_deref() {
                None | Some("active") => true,
                Some("inactive") => false,
                Some(_) => return Err(RpcError::invalid_param("state", "invalid value")),
            };
            let combos: Vec<&crate::market::combos::Combo> = market
                .combos
                .iter()
                .filter(|c| active && (any || c.currency.eq_ignore_ascii_case(&p.currency)))
                .collect();
            if method == "public/get_combo_ids" {
                json(&combos.iter().map(|c| c.id.as_str()).collect::<Vec<_>>())
            } else {
                let list: Vec<api::Combo> =
                    combos.iter().map(|c| market.combos.render(market.ex.catalogue(), c)).collect();
                json(&list)
            }
        }),
        "public/get_combo_details" => params::<api::ComboIdParams>(raw).and_then(|p| {
            let combo =
                market.combos.get(&p.combo_id).ok_or_else(|| RpcError::invalid_param("combo_id", "not found"))?;
            json(&market.combos.render(market.ex.catalogue(), combo))
        }),
        "private/create_combo" => params::<api::CreateComboParams>(raw).and_then(|p| {
            let (legs, _) = legs(market, &p.trades)?;
            let Market { combos, ex, .. } = market;
            let combo = combos.create(ex.catalogue(), &legs, now).map_err(combo_error)?.clone();
            json(&combos.render(ex.catalogue(), &combo))
        }),
        "private/get_leg_prices" => params::<api::LegPricesParams>(raw).and_then(|p| leg_prices(market, &p)),
        _ => return None,
    };
    Some(result)
}

fn combo_error(e: ComboError) -> RpcError {
    match e {
        ComboError::Full => RpcError::new(13035, "active_combo_limit_reached"),
        ComboError::Instrument(_) => RpcError::invalid_param("instrument_name", "wrong format"),
        other => RpcError::invalid_param("trades", &other.to_string()),
    }
}

/// Signed whole ratios of the legs and the combo amount (their common unit).
fn legs(market: &Market, requested: &[api::LegRequest]) -> Result<(Vec<(InstrumentId, i64)>, Decimal), RpcError> {
    let mut out = Vec::with_capacity(requested.len());
    for leg in requested {
        let id = instrument(market, &leg.instrument_name)?;
        let units =
            leg.amount.0.to_units(amount_unit()).map_err(|_| RpcError::invalid_param("amount", "invalid value"))?;
        if units <= 0 {
            return Err(RpcError::invalid_param("amount", "must be positive"));
        }
        let sign = match leg.direction.as_str() {
            "buy" => 1,
            "sell" => -1,
            _ => return Err(RpcError::invalid_param("direction", "invalid value")),
        };
        out.push((id, sign * units));
    }
    let unit = out.iter().fold(0i64, |g, (_, u)| gcd(g, *u));
    if unit == 0 {
        return Err(RpcError::invalid_param("trades", "no legs"));
    }
    let amount =
        Decimal::from_units(unit, amount_unit()).map_err(|_| RpcError::invalid_param("amount", "invalid value"))?;
    Ok((out.into_iter().map(|(i, u)| (i, u / unit)).collect(), amount))
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

fn leg_prices(market: &Market, p: &api::LegPricesParams) -> Result<String, RpcError> {
    if !(2..=4).contains(&p.legs.len()) {
        return Err(RpcError::invalid_param("legs", "a combo has two to four legs"));
    }
    let (legs, amount) = legs(market, &p.legs)?;
    let tick = legs.iter().map(|(i, _)| market.spec(*i).tick()).min().unwrap_or(Decimal::ONE);
    let price = p.price.0.to_units(tick).map_err(|_| RpcError::invalid_param("price", "not a multiple of the tick"))?;
    let mark_ticks = |i: InstrumentId| {
        let mark = market.ex.mark_price(i).to_f64_lossy();
        ((mark / tick.to_f64_lossy()).round() as i64).max(1)
    };
    let mut ticks: Vec<i64> = legs.iter().map(|(i, _)| mark_ticks(*i)).collect();
    let others: i64 = legs.iter().zip(&ticks).skip(1).map(|((_, ratio), t)| ratio * t).sum();
    let (first_ratio, rest) = (legs[0].1, price - others);
    if rest % first_ratio != 0 || rest / first_ratio <= 0 {
        return Err(RpcError::invalid_param("price", "cannot be split over the legs at positive prices"));
    }
    ticks[0] = rest / first_ratio;
    let out: Result<Vec<api::LegPrice>, RpcError> = legs
        .iter()
        .zip(&ticks)
        .zip(&p.legs)
        .map(|(((_, ratio), t), leg)| {
            let price = Decimal::from_units(*t, tick).map_err(|_| RpcError::invalid_param("price", "out of range"))?;
            Ok(api::LegPrice {
                instrument_name: leg.instrument_name.clone(),
                direction: leg.direction.clone(),
                ratio: ratio.abs(),
                price: Num(price),
            })
        })
        .collect();
    json(&api::LegPrices { legs: out?, amount: Num(amount) })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use serde_json::{Value, json};

    fn market() -> Market {
        let start = Utc::from_millis(1_767_254_400_000);
        let (catalogue, infos) = crate::market::builtin_catalogue(start).unwrap();
        let mut market = Market::new(catalogue, infos, 5, 100, start);
        market.step(start, &mut Vec::new());
        market
    }

    fn ask(market: &mut Market, method: &str, params: Value) -> Result<Value, RpcError> {
        let raw = RawValue::from_string(params.to_string()).unwrap();
        call(market, Utc::from_millis(1_767_254_460_000), method, Some(&raw))
            .unwrap()
            .map(|text| serde_json::from_str(&text).unwrap())
    }

    #[test]
    fn leg_prices_add_up_to_the_combo_price() {
        let mut m = market();
        let call_name =
            m.instruments().find(|(_, i)| i.instrument_name.ends_with("-C")).unwrap().1.instrument_name.clone();
        let put_name = call_name.replace("-C", "-P");
        let legs = json!([
            {"instrument_name": call_name, "direction": "buy", "amount": 2},
            {"instrument_name": put_name, "direction": "sell", "amount": 2}]);
        let reply = ask(&mut m, "private/get_leg_prices", json!({"legs": legs, "price": 0.05})).unwrap();
        assert_eq!(reply["amount"].as_f64(), Some(2.0), "{reply}");
        let call_px = Decimal::parse(&reply["legs"][0]["price"].to_string()).unwrap();
        let put_px = Decimal::parse(&reply["legs"][1]["price"].to_string()).unwrap();
        let tick = Decimal::new(1, 4).unwrap();
        assert_eq!(call_px.to_units(tick).unwrap() - put_px.to_units(tick).unwrap(), 500, "{reply}");
        // The put stays at its mark, in the option's tick.
        let put = m.find(&put_name).unwrap();
        let option_tick = m.spec(put).tick();
        let mark = (m.ex.mark_price(put).to_f64_lossy() / option_tick.to_f64_lossy()).round() as i64;
        assert_eq!(put_px.to_units(option_tick).unwrap(), mark.max(1));
        let odd = ask(&mut m, "private/get_leg_prices", json!({"legs": legs, "price": 0.00005})).unwrap_err();
        assert_eq!(odd.data.unwrap()["param"], "price");
    }

    #[test]
    fn created_combos_are_listed_and_detailed() {
        let mut m = market();
        let before = ask(&mut m, "public/get_combo_ids", json!({"currency": "BTC"})).unwrap();
        let trades = json!([
            {"instrument_name": "BTC-PERPETUAL", "direction": "sell", "amount": "10"},
            {"instrument_name": "BTC-9JAN26", "direction": "buy", "amount": "10"}]);
        let existing = ask(&mut m, "private/create_combo", json!({"trades": trades})).unwrap();
        assert_eq!(existing["id"], "BTC-FS-9JAN26_PERP");
        let after = ask(&mut m, "public/get_combo_ids", json!({"currency": "BTC"})).unwrap();
        assert_eq!(before, after, "the spread existed already");
        let name = m.instruments().find(|(_, i)| i.instrument_name.ends_with("-C")).unwrap().1.instrument_name.clone();
        let other = m
            .instruments()
            .find(|(_, i)| {
                i.instrument_name.ends_with("-C") && i.instrument_name != name && i.instrument_name[..12] == name[..12]
            })
            .unwrap()
            .1
            .instrument_name
            .clone();
        let spread = json!([{"instrument_name": name, "direction": "buy", "amount": 1},
            {"instrument_name": other, "direction": "sell", "amount": 1}]);
        let created = ask(&mut m, "private/create_combo", json!({"trades": spread})).unwrap();
        let id = created["id"].as_str().unwrap().to_owned();
        assert!(id.starts_with("BTC-CS-"), "{created}");
        let details = ask(&mut m, "public/get_combo_details", json!({"combo_id": id})).unwrap();
        assert_eq!(details, created);
        let listed = ask(&mut m, "public/get_combos", json!({"currency": "BTC"})).unwrap();
        assert!(listed.as_array().unwrap().contains(&created));
        let err = ask(&mut m, "public/get_combo_details", json!({"combo_id": "BTC-NOPE"})).unwrap_err();
        assert_eq!(err.data.unwrap()["param"], "combo_id");
        assert_eq!(
            ask(&mut m, "public/get_combo_ids", json!({"currency": "BTC", "state": "inactive"})).unwrap(),
            json!([])
        );
    }
}
