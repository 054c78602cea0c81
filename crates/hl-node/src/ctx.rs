//! What a coin's book determines of its asset context: the mid and the impact prices.
//!
//! Owns: the mid (`(best bid + best ask) / 2`, exact, one more decimal than the price unit)
//! and the impact prices: the average price of trading the coin's impact notional against
//! one side of the book, as Hyperliquid's contract specifications define them (20 000 USDC for
//! BTC and ETH, 6 000 USDC for every other perp), rounded to the price unit (half away from
//! zero). A side too thin to fill the notional gives no impact prices (`null`), as the API
//! answers then.
//! Must not: read anything but the book it is given; it runs only when a client asks (an
//! `/info` request), never per block.

use ticktrade_core::{Decimal, Side};
use ticktrade_hl_proto::asset_ctx::BookCtx;
use ticktrade_hl_proto::ws::{Units, write_hl_decimal};

use crate::books::CoinBook;

/// The impact notional of `coin` in whole USDC.
pub fn impact_notional(coin: &str) -> i64 {
    if matches!(coin, "BTC" | "ETH") { 20_000 } else { 6_000 }
}

/// The mid of a book with both sides, as exact decimal text.
pub fn mid_text(book: &CoinBook, units: Units) -> Option<String> {
    let mut out = String::new();
    write_mid(book, units, &mut out).then_some(out)
}

/// Appends the mid of a book with both sides to `out` (exact decimal text); false, and
/// nothing written, when a side is empty or the book is stale.
pub fn write_mid(book: &CoinBook, units: Units, out: &mut String) -> bool {
    mid_decimal(book, units).is_some_and(|mid| std::fmt::Write::write_fmt(out, format_args!("{mid}")).is_ok())
}

fn mid_decimal(book: &CoinBook, units: Units) -> Option<Decimal> {
    if book.stale {
        return None;
    }
    let (bid, ask) = (book.book.best_price(Side::Buy)?, book.book.best_price(Side::Sell)?);
    let twice = i128::from(bid.raw()) + i128::from(ask.raw());
    let mantissa = i64::try_from(twice * 5 * i128::from(units.px.mantissa())).ok()?;
    Decimal::new(mantissa, units.px.scale().checked_add(1)?).ok()
}

/// The average price, in price units, of trading `notional` USDC against `levels` (price and
/// size units, best first), the last level taken in part (whole size units, rounded up);
/// `None` when the levels hold less than `notional`.
pub fn impact_units(levels: impl Iterator<Item = (i64, i64)>, notional: i64, units: Units) -> Option<i64> {
    // The notional in units of (price unit × size unit), rounded up.
    let scale = u32::from(units.px.scale()) + u32::from(units.sz.scale());
    let per = i128::from(units.px.mantissa()) * i128::from(units.sz.mantissa());
    if per <= 0 || notional <= 0 {
        return None;
    }
    let target = ceil_div(i128::from(notional) * 10i128.checked_pow(scale)?, per);
    let (mut ntl, mut qty) = (0i128, 0i128);
    for (px, sz) in levels {
        let (px, sz) = (i128::from(px), i128::from(sz));
        if px <= 0 || sz <= 0 {
            continue;
        }
        let need = target - ntl;
        if px * sz >= need {
            let part = ceil_div(need, px);
            ntl += px * part;
            qty += part;
            // Rounded to the nearest price unit (half up: all values are positive).
            return i64::try_from((2 * ntl + qty) / (2 * qty)).ok();
        }
        ntl += px * sz;
        qty += sz;
    }
    None
}

/// `a / b` rounded up, for `a ≥ 0`, `b > 0` (`i128::div_ceil` is not stable).
fn ceil_div(a: i128, b: i128) -> i128 {
    (a + b - 1) / b
}

fn px_text(px: i64, units: Units) -> String {
    let mut out = Vec::new();
    write_hl_decimal(px, units.px, &mut out);
    String::from_utf8(out).unwrap_or_default()
}

/// The book's part of `coin`'s context (`impact`: perps only, spot contexts have none).
pub fn book_ctx(coin: &str, book: &CoinBook, units: Units, impact: bool) -> BookCtx {
    let mid = mid_text(book, units);
    let impact = (impact && !book.stale)
        .then(|| {
            let notional = impact_notional(coin);
            let side = |side| book.book.levels(side).map(|l| (l.price.raw(), l.qty.raw()));
            let bid = impact_units(side(Side::Buy), notional, units)?;
            let ask = impact_units(side(Side::Sell), notional, units)?;
            Some([px_text(bid, units), px_text(ask, units)])
        })
        .flatten();
    BookCtx { mid, impact, volume: None }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use proptest::prelude::*;

    fn units(px_scale: u8, sz_scale: u8) -> Units {
        Units { px: Decimal::new(1, px_scale).unwrap(), sz: Decimal::new(1, sz_scale).unwrap() }
    }

    #[test]
    fn impact_walks_the_book() {
        // Prices in 0.1, sizes in 0.01: 100.0 × 50.00 = 5 000 USDC, then 101.0 × 100.00.
        let u = units(1, 2);
        let levels = [(1000, 5000), (1010, 10000)];
        // 6 000 USDC: 5 000 at 100.0, 1 000 at 101.0 = 9.90099… → 9.91 (rounded up), so
        // 59.91 for 6 000.91 USDC, an average of 100.1652… → 100.2.
        assert_eq!(impact_units(levels.into_iter(), 6_000, u), Some(1002));
        // Exactly the first level.
        assert_eq!(impact_units(levels.into_iter(), 5_000, u), Some(1000));
        // More than both levels hold.
        assert_eq!(impact_units(levels.into_iter(), 16_000, u), None);
        assert_eq!(impact_units(std::iter::empty(), 1, u), None);
        assert_eq!(impact_notional("BTC"), 20_000);
        assert_eq!(impact_notional("SOL"), 6_000);
    }

    /// The naive model: fill in whole size units, one at a time, best level first.
    fn naive(levels: &[(i64, i64)], target: i128) -> Option<i64> {
        let (mut ntl, mut qty) = (0i128, 0i128);
        for &(px, sz) in levels {
            for _ in 0..sz {
                if ntl >= target {
                    break;
                }
                ntl += i128::from(px);
                qty += 1;
            }
        }
        if ntl < target || qty == 0 {
            return None;
        }
        let avg = ntl as f64 / qty as f64;
        Some(avg.round() as i64)
    }

    proptest! {
        #[test]
        fn impact_matches_the_unit_by_unit_model(
            levels in proptest::collection::vec((1i64..500, 1i64..40), 0..8),
            notional in 1i64..200,
        ) {
            // Units of 1 and 1: the notional is in price × size units directly.
            let u = units(0, 0);
            let got = impact_units(levels.iter().copied(), notional, u);
            prop_assert_eq!(got, naive(&levels, i128::from(notional)));
        }
    }
}
