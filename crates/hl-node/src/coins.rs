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
        units_of(text, self.units.px).filter(|&p| p > 0).map(Price::from_raw)
    }

    pub fn parse_sz(&self, text: &str) -> Option<Qty> {
        units_of(text, self.units.sz).filter(|&s| s >= 0).map(Qty::from_raw)
    }
}

/// `text` as a whole number of `unit`s, exactly as `Decimal::parse` then `Decimal::to_units`
/// decide it (`None`: not a decimal, off the grid or too large). The node writes plain
/// decimals (`76450.0`, `0.0005`) and every coin's units are `10^-k`: those take a direct
/// digit loop; anything else (sign, exponent, 19+ digits, other units) the general path.
#[inline]
fn units_of(text: &str, unit: Decimal) -> Option<i64> {
    if unit.mantissa() == 1
        && let Some(units) = plain_units(text.as_bytes(), u32::from(unit.scale()))
    {
        return units;
    }
    Decimal::parse(text).ok()?.to_units(unit).ok()
}

/// `digits[.digits]` of at most 18 bytes in units of `10^-scale`: `Some(Some(n))` exact,
/// `Some(None)` off the grid; `None` when `text` is not of that shape or the result might
/// not fit (the general parser then decides).
#[inline]
fn plain_units(text: &[u8], scale: u32) -> Option<Option<i64>> {
    if text.is_empty() || text.len() > 18 || scale > 18 {
        return None;
    }
    let mut i = 0;
    let mut units: i64 = 0;
    while let Some(&c) = text.get(i).filter(|c| c.is_ascii_digit()) {
        units = units * 10 + i64::from(c - b'0');
        i += 1;
    }
    if i == 0 {
        return None;
    }
    // At most 18 digits: no overflow above, and `units × 10^scale` below is checked.
    let mut pad = scale;
    if i < text.len() {
        if text[i] != b'.' || i + 1 == text.len() {
            return None;
        }
        let mut off_grid = false;
        for &c in &text[i + 1..] {
            if !c.is_ascii_digit() {
                return None;
            }
            if pad > 0 {
                units = units * 10 + i64::from(c - b'0');
                pad -= 1;
            } else if c != b'0' {
                off_grid = true;
            }
        }
        if off_grid {
            return Some(None);
        }
    }
    Some(Some(units.checked_mul(10i64.pow(pad))?))
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

    /// The general path: what `units_of` must agree with on every input.
    fn general(text: &str, unit: Decimal) -> Option<i64> {
        Decimal::parse(text).ok()?.to_units(unit).ok()
    }

    #[test]
    fn plain_decimals_parse_as_the_general_path_does() {
        let unit = |k: u8| Decimal::new(1, k).unwrap();
        for (text, k, want) in [
            ("76450.0", 1, Some(764_500)),
            ("76450", 1, Some(764_500)),
            ("0.0005", 4, Some(5)),
            ("0.00050", 4, Some(5)),
            ("0.00051", 4, None),
            ("007.5", 2, Some(750)),
            ("123456789012345678", 0, Some(123_456_789_012_345_678)),
            ("12345678901234567.8", 1, Some(123_456_789_012_345_678)),
            ("9223372036854775.807", 3, Some(i64::MAX)),
            ("92233720368547758.08", 2, None),
            ("99999999999999999", 3, None),
            ("1.", 2, None),
            (".5", 2, None),
            ("-1.5", 1, Some(-15)),
            ("1e2", 0, Some(100)),
            ("", 0, None),
        ] {
            assert_eq!(units_of(text, unit(k)), want, "{text} at 10^-{k}");
            assert_eq!(general(text, unit(k)), want, "{text} at 10^-{k} (general)");
        }
        assert_eq!(plain_units(b"1.", 2), None, "left to the general path");
        assert_eq!(plain_units(b"0.00051", 4), Some(None));
        assert_eq!(units_of("2.5", Decimal::new(5, 1).unwrap()), Some(5), "units other than 10^-k");
    }

    proptest::proptest! {
        #[test]
        fn units_of_agrees_with_the_general_path(
            text in "[0-9]{0,12}(\\.[0-9]{0,10})?|[-+0-9.eE]{0,21}",
            k in 0u8..=18,
            other_unit in proptest::bool::ANY,
        ) {
            let unit = if other_unit { Decimal::new(25, k).unwrap() } else { Decimal::new(1, k).unwrap() };
            proptest::prop_assert_eq!(units_of(&text, unit), general(&text, unit), "{} at {:?}", text, unit);
        }
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
