//! The coin table: every coin's name, kind and the integer units its prices and sizes use.
//!
//! Owns: `CoinId` (dense index, stable for the process), units derived from `szDecimals`
//! (price unit 10^-(6−szDecimals) for perps, 10^-(8−szDecimals) for spot; size unit
//! 10^-szDecimals), and a fallback for coins the metadata does not name (the finest units the
//! price rule allows, so any valid price still parses exactly).
//! Must not: fetch metadata or guess a coin's decimals from its prices.

use rustc_hash::FxHashMap;

use ticktrade_core::{Decimal, Price, Qty};
use ticktrade_hl_proto::info::{CoinKind, CoinMeta};
use ticktrade_hl_proto::ws::Units;

/// Dense index of a coin in a [`CoinTable`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct CoinId(pub u32);

/// One coin as the books see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoinSpec {
    pub name: String,
    pub kind: CoinKind,
    /// `None` when the coin is not in the metadata.
    pub sz_decimals: Option<u32>,
    pub units: Units,
}

/// Size decimals assumed for coins the metadata does not list.
pub const FALLBACK_SZ_DECIMALS: u8 = 8;

impl CoinSpec {
    pub fn new(name: &str, kind: CoinKind, sz_decimals: Option<u32>) -> CoinSpec {
        let max = kind.max_decimals();
        let (px_scale, sz_scale) = match sz_decimals {
            Some(d) => (max.saturating_sub(d), d.min(18)),
            None => (max, u32::from(FALLBACK_SZ_DECIMALS)),
        };
        let unit = |scale: u32| Decimal::new(1, scale as u8).unwrap_or(Decimal::ONE);
        CoinSpec { name: name.to_owned(), kind, sz_decimals, units: Units { px: unit(px_scale), sz: unit(sz_scale) } }
    }

    pub fn parse_px(&self, text: &str) -> Option<Price> {
        let value = Decimal::parse(text).ok()?;
        value.to_units(self.units.px).ok().filter(|&p| p > 0).map(Price::from_raw)
    }

    pub fn parse_sz(&self, text: &str) -> Option<Qty> {
        let value = Decimal::parse(text).ok()?;
        value.to_units(self.units.sz).ok().filter(|&s| s >= 0).map(Qty::from_raw)
    }
}

/// All coins, by id and by name.
#[derive(Clone, Debug, Default)]
pub struct CoinTable {
    specs: Vec<CoinSpec>,
    by_name: FxHashMap<String, CoinId>,
}

impl CoinTable {
    pub fn from_meta(coins: &[CoinMeta]) -> CoinTable {
        let mut table = CoinTable::default();
        for coin in coins {
            table.insert(CoinSpec::new(&coin.name, coin.kind, Some(coin.sz_decimals)));
        }
        table
    }

    fn insert(&mut self, spec: CoinSpec) -> CoinId {
        if let Some(&id) = self.by_name.get(&spec.name) {
            return id;
        }
        let id = CoinId(self.specs.len() as u32);
        self.by_name.insert(spec.name.clone(), id);
        self.specs.push(spec);
        id
    }

    pub fn id(&self, name: &str) -> Option<CoinId> {
        self.by_name.get(name).copied()
    }

    /// The coin's id, adding it with fallback units when the metadata did not list it.
    pub fn id_or_insert(&mut self, name: &str) -> CoinId {
        match self.by_name.get(name) {
            Some(&id) => id,
            None => self.insert(CoinSpec::new(name, CoinKind::of_name(name), None)),
        }
    }

    pub fn spec(&self, id: CoinId) -> &CoinSpec {
        &self.specs[id.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.specs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.specs.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (CoinId, &CoinSpec)> + '_ {
        self.specs.iter().enumerate().map(|(i, s)| (CoinId(i as u32), s))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_follow_the_price_rule() {
        let btc = CoinSpec::new("BTC", CoinKind::Perp, Some(5));
        assert_eq!(btc.parse_px("76450.0"), Some(Price::from_raw(764_500)));
        assert_eq!(btc.parse_px("76450.05"), None);
        assert_eq!(btc.parse_sz("0.00153"), Some(Qty::from_raw(153)));
        let spot = CoinSpec::new("@1", CoinKind::Spot, Some(1));
        assert_eq!(spot.parse_px("0.0001234"), Some(Price::from_raw(1234)));
        let unknown = CoinSpec::new("#10", CoinKind::Perp, None);
        assert_eq!(unknown.parse_px("0.000001"), Some(Price::from_raw(1)));
        assert_eq!(unknown.parse_sz("0.00000001"), Some(Qty::from_raw(1)));
        assert_eq!(btc.parse_px("0"), None);
        assert_eq!(btc.parse_px("x"), None);
    }

    #[test]
    fn table_adds_unknown_coins_once() {
        let mut table = CoinTable::from_meta(&[CoinMeta { name: "BTC".into(), kind: CoinKind::Perp, sz_decimals: 5 }]);
        let a = table.id_or_insert("@7");
        assert_eq!(table.id_or_insert("@7"), a);
        assert_eq!(table.spec(a).kind, CoinKind::Spot);
        assert_eq!(table.id("BTC"), Some(CoinId(0)));
        assert_eq!(table.len(), 2);
    }
}
