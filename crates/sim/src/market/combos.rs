//! Combos: named sets of legs over the catalogue's instruments (`public/get_combos`,
//! `get_combo_ids`, `get_combo_details`, `private/create_combo`).
//!
//! Owns: the registry (every future spread against the perpetual of its coin from the
//! start, then the combos clients create, at most [`MAX_COMBOS`]), Deribit's combo names
//! (`BTC-FS-9JAN26_PERP`, `BTC-CS-2JAN26-90000_91000`, `BTC-REV-2JAN26-90000`…), and leg
//! normalisation (whole ratios; the same legs, either way round, give the same combo).
//! Must not: trade: the exchange has no combo books, so a combo is listed and priced
//! (`private/get_leg_prices`) but an order on it answers "instrument not found" like any
//! unknown name.

use ticktrade_core::{InstrumentId, InstrumentKind, OptionType, Utc};
use ticktrade_deribit_proto::api;
use ticktrade_exchange::Catalogue;

/// Combos kept at most; creating one more answers `13035 active_combo_limit_reached`.
pub const MAX_COMBOS: usize = 1_000;

/// One combo.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Combo {
    pub id: String,
    pub instrument_id: u32,
    pub created_ms: i64,
    /// Base coin of the legs (`BTC`).
    pub currency: String,
    /// (instrument, signed ratio), in the order of their creation.
    pub legs: Vec<(InstrumentId, i64)>,
}

/// Why legs do not make a combo.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ComboError {
    #[error("a combo has two to four legs")]
    LegCount,
    #[error("unknown instrument {0}")]
    Instrument(String),
    #[error("legs of one coin, futures or options, each instrument once")]
    Mixed,
    #[error("leg amounts must be whole multiples of the smallest")]
    Ratio,
    #[error("active_combo_limit_reached")]
    Full,
}

/// The registry.
#[derive(Debug, Default)]
pub struct Combos {
    list: Vec<Combo>,
    next_instrument_id: u32,
}

/// The legs sorted by instrument, the first one bought: the same combo whichever way round
/// its legs are given.
fn canonical(legs: &[(InstrumentId, i64)]) -> Vec<(InstrumentId, i64)> {
    let mut sorted = legs.to_vec();
    sorted.sort_unstable();
    let sign = if sorted.first().is_some_and(|l| l.1 < 0) { -1 } else { 1 };
    sorted.iter().map(|(i, a)| (*i, a * sign)).collect()
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 { a.abs() } else { gcd(b, a % b) }
}

impl Combos {
    /// The future spreads of `catalogue` (each dated future against its coin's perpetual),
    /// created at `now`; ids after `first_instrument_id`.
    pub fn new(catalogue: &Catalogue, first_instrument_id: u32, now: Utc) -> Combos {
        let mut combos = Combos { list: Vec::new(), next_instrument_id: first_instrument_id };
        let futures: Vec<(InstrumentId, bool, String)> = catalogue
            .iter()
            .filter(|i| i.spec.kind == InstrumentKind::Future && !i.spec.name.contains('_'))
            .map(|i| (i.spec.id, i.spec.expiry.is_none(), i.spec.base_currency.clone()))
            .collect();
        for (perp, _, coin) in futures.iter().filter(|f| f.1) {
            for (dated, _, _) in futures.iter().filter(|f| !f.1 && f.2 == *coin) {
                // Deribit's future spread: sell the perpetual, buy the dated future.
                let _ = combos.create(catalogue, &[(*perp, -1), (*dated, 1)], now);
            }
        }
        combos
    }

    pub fn iter(&self) -> impl Iterator<Item = &Combo> {
        self.list.iter()
    }

    pub fn get(&self, id: &str) -> Option<&Combo> {
        self.list.iter().find(|c| c.id == id)
    }

    /// The combo of these legs (signed amounts), created if new.
    pub fn create(
        &mut self,
        catalogue: &Catalogue,
        legs: &[(InstrumentId, i64)],
        now: Utc,
    ) -> Result<&Combo, ComboError> {
        if !(2..=4).contains(&legs.len()) {
            return Err(ComboError::LegCount);
        }
        let mut legs = legs.to_vec();
        let unit = legs.iter().fold(0, |g, (_, a)| gcd(g, *a));
        let smallest = legs.iter().map(|(_, a)| a.abs()).min().unwrap_or(0);
        if unit == 0 || unit != smallest {
            return Err(ComboError::Ratio);
        }
        for leg in &mut legs {
            leg.1 /= unit;
        }
        let specs: Vec<&ticktrade_core::InstrumentSpec> =
            legs.iter().filter_map(|(i, _)| catalogue.get(*i).map(|inst| &inst.spec)).collect();
        let coin = &specs[0].base_currency;
        let options = specs[0].kind == InstrumentKind::Option;
        let same_kind = specs.iter().all(|s| {
            &s.base_currency == coin
                && s.kind == specs[0].kind
                && matches!(s.kind, InstrumentKind::Future | InstrumentKind::Option)
        });
        let key = canonical(&legs);
        let distinct = key.windows(2).all(|w| w[0].0 != w[1].0);
        if specs.len() != legs.len() || !same_kind || !distinct {
            return Err(ComboError::Mixed);
        }
        if let Some(existing) = self.list.iter().position(|c| canonical(&c.legs) == key) {
            return Ok(&self.list[existing]);
        }
        if self.list.len() >= MAX_COMBOS {
            return Err(ComboError::Full);
        }
        let instrument_id = self.next_instrument_id;
        self.next_instrument_id += 1;
        let id = name(&specs, &legs, options).unwrap_or_else(|| format!("{coin}-CMB-{instrument_id}"));
        // Two leg sets may share a name (`CS` of 1:1 and 1:2): the later one gets its id.
        let id = if self.get(&id).is_some() { format!("{id}-{instrument_id}") } else { id };
        self.list.push(Combo { id, instrument_id, created_ms: now.as_millis(), currency: coin.clone(), legs });
        Ok(&self.list[self.list.len() - 1])
    }

    /// The API object.
    pub fn render(&self, catalogue: &Catalogue, combo: &Combo) -> api::Combo {
        api::Combo {
            id: combo.id.clone(),
            instrument_id: combo.instrument_id,
            state: "active".to_owned(),
            state_timestamp: combo.created_ms,
            creation_timestamp: combo.created_ms,
            legs: combo
                .legs
                .iter()
                .map(|(i, amount)| api::ComboLeg {
                    instrument_name: catalogue.get(*i).map_or_else(String::new, |inst| inst.spec.name.clone()),
                    amount: *amount,
                })
                .collect(),
        }
    }
}

/// The part of an instrument name after the coin (`9JAN26`, `2JAN26-90000-C`).
fn code(spec: &ticktrade_core::InstrumentSpec) -> &str {
    spec.name.split_once('-').map_or("", |(_, rest)| rest)
}

/// Deribit's name for two-leg spreads; `None` for other shapes.
fn name(specs: &[&ticktrade_core::InstrumentSpec], legs: &[(InstrumentId, i64)], options: bool) -> Option<String> {
    let [a, b] = specs else { return None };
    let coin = &a.base_currency;
    let opposite = legs[0].1.signum() != legs[1].1.signum();
    if !options {
        let (perp, dated) = match (a.expiry, b.expiry) {
            (None, Some(_)) => (a, b),
            (Some(_), None) => (b, a),
            (Some(ea), Some(eb)) => {
                let (near, far) = if ea < eb { (a, b) } else { (b, a) };
                return opposite.then(|| format!("{coin}-FS-{}_{}", code(far), code(near)));
            }
            _ => return None,
        };
        let _ = perp;
        return opposite.then(|| format!("{coin}-FS-{}_PERP", code(dated)));
    }
    let date = |s: &ticktrade_core::InstrumentSpec| code(s).split('-').next().unwrap_or("").to_owned();
    let strike = |s: &ticktrade_core::InstrumentSpec| s.strike.map(|k| k.to_string()).unwrap_or_default();
    if date(a) != date(b) {
        return None;
    }
    let d = date(a);
    match (a.option_type, b.option_type) {
        (Some(ta), Some(tb)) if ta == tb && opposite => {
            let tag = if ta == OptionType::Call { "CS" } else { "PS" };
            Some(format!("{coin}-{tag}-{d}-{}_{}", strike(a), strike(b)))
        }
        (Some(_), Some(_)) if a.strike == b.strike => {
            let tag = if opposite { "REV" } else { "STRD" };
            Some(format!("{coin}-{tag}-{d}-{}", strike(a)))
        }
        (Some(_), Some(_)) if !opposite => Some(format!("{coin}-STRG-{d}-{}_{}", strike(a), strike(b))),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn catalogue() -> Catalogue {
        crate::market::builtin_catalogue(Utc::from_millis(1_767_225_600_000)).unwrap().0
    }

    #[test]
    fn future_spreads_exist_from_the_start() {
        let c = catalogue();
        let combos = Combos::new(&c, 10_000, Utc::from_millis(1));
        let perp = c.lookup("BTC-PERPETUAL").unwrap();
        let fs = combos.get("BTC-FS-9JAN26_PERP").unwrap();
        assert_eq!(fs.legs, vec![(perp, -1), (c.lookup("BTC-9JAN26").unwrap(), 1)]);
        assert!(combos.iter().all(|k| k.id.contains("-FS-")));
    }

    #[test]
    fn legs_normalise_and_name_like_deribit() {
        let c = catalogue();
        let mut combos = Combos::new(&c, 10_000, Utc::from_millis(1));
        let call = c.iter().find(|i| i.spec.name.ends_with("-C") && i.spec.name.contains("2JAN26")).unwrap();
        let put_name = call.spec.name.replace("-C", "-P");
        let (call, put) = (call.spec.id, c.lookup(&put_name).unwrap());
        let rev = combos.create(&c, &[(call, 2), (put, -2)], Utc::from_millis(2)).unwrap().clone();
        assert!(rev.id.starts_with("BTC-REV-2JAN26-"), "{}", rev.id);
        assert_eq!(rev.legs, vec![(call, 1), (put, -1)]);
        // The same legs the other way round are the same combo.
        let again = combos.create(&c, &[(put, 1), (call, -1)], Utc::from_millis(3)).unwrap();
        assert_eq!(again.id, rev.id);
        assert_eq!(combos.create(&c, &[(call, 2), (put, -3)], Utc::from_millis(3)).unwrap_err(), ComboError::Ratio);
        let perp = c.lookup("BTC-PERPETUAL").unwrap();
        assert_eq!(combos.create(&c, &[(call, 1), (perp, 1)], Utc::from_millis(3)).unwrap_err(), ComboError::Mixed);
        assert_eq!(combos.create(&c, &[(call, 1)], Utc::from_millis(3)).unwrap_err(), ComboError::LegCount);
    }
}
