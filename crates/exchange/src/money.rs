//! Exact money: balances, fees, PnL, equity and margins as integers of 10^-12.
//!
//! Owns: `Money`, a fixed-point number (`i128` count of 10^-12 units of the settlement
//! currency, or of the price unit when it carries a mark or an average price), and the
//! handful of operations the accounting formulas need.
//! Must not: pass a value through `f64` (except `from_f64_model` for the synthetic market's
//! model prices and `to_f64_lossy` for statistics).
//!
//! # Rounding (documented, deterministic)
//! Sums and differences are exact. Products and quotients (`*`, `/`, `mul_decimal`,
//! `div_decimal`, `mul_int`, `div_int`) round half away from zero to the 12th decimal, once
//! per operation. A result that does not fit saturates at `Money::MAX`/`MIN` (sizes and prices
//! are bounded by `engine::MAX_UNITS`). `Decimal` inputs with more than 12 places round once.
//! `to_decimal` renders exactly when the value fits a `Decimal` (i64 mantissa), else rounds
//! half away from zero to the most places that fit.
//!
//! Why 12 places and not 18: products and quotients stay inside `i128` for any realistic
//! balance or position (a 10^14-unit amount still divides without the 256-bit path, which
//! `ticktrade bench match` showed costing 4× the whole operation), and 12 places is finer than
//! anything Deribit reports (8–10).

use std::fmt;
use std::ops::{Add, AddAssign, Div, Mul, Neg, Sub, SubAssign};

use ticktrade_core::Decimal;

/// Decimal places of [`Money`].
pub const SCALE: u32 = 12;
const ONE: i128 = 1_000_000_000_000;

use ticktrade_core::POW10_I128 as POW10;

/// An exact amount in units of 10^-12 (see the module header for rounding).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Money(i128);

impl Money {
    pub const ZERO: Money = Money(0);
    pub const ONE: Money = Money(ONE);
    pub const MAX: Money = Money(i128::MAX);
    pub const MIN: Money = Money(-i128::MAX);

    /// From a raw count of 10^-12 units.
    pub const fn from_raw(raw: i128) -> Money {
        Money(raw)
    }

    pub const fn raw(self) -> i128 {
        self.0
    }

    pub const fn from_int(value: i64) -> Money {
        Money(value as i128 * ONE)
    }

    /// Exact for a decimal of at most 12 places; more places round half away from zero.
    pub fn from_decimal(value: Decimal) -> Money {
        let places = u32::from(value.scale());
        let mantissa = i128::from(value.mantissa());
        if places <= SCALE {
            Money(mantissa * POW10[(SCALE - places) as usize])
        } else {
            Money(div_round(mantissa, POW10[(places - SCALE) as usize]))
        }
    }

    /// A model value (the synthetic market's random walks), rounded to 12 places; NaN is 0.
    pub fn from_f64_model(value: f64) -> Money {
        if !value.is_finite() {
            return Money::ZERO;
        }
        // Split into whole and fractional parts so large values keep their integer digits.
        let whole = value.trunc();
        let frac = ((value - whole) * 1e12).round();
        Money((whole as i128).saturating_mul(ONE).saturating_add(frac as i128))
    }

    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    pub const fn is_positive(self) -> bool {
        self.0 > 0
    }

    pub const fn is_negative(self) -> bool {
        self.0 < 0
    }

    pub fn abs(self) -> Money {
        Money(self.0.saturating_abs())
    }

    /// `self × n`.
    pub fn mul_int(self, n: i64) -> Money {
        Money(self.0.saturating_mul(i128::from(n)))
    }

    /// `self × a ÷ b` with one rounding (0 when `b` is 0).
    pub fn mul_ratio(self, a: i64, b: i64) -> Money {
        Money(mul_div(self.0, i128::from(a), i128::from(b)))
    }

    /// `self ÷ n` (0 when `n` is 0).
    pub fn div_int(self, n: i64) -> Money {
        Money(mul_div(self.0, 1, i128::from(n)))
    }

    /// `self × d`.
    pub fn mul_decimal(self, d: Decimal) -> Money {
        Money(mul_div(self.0, i128::from(d.mantissa()), POW10[usize::from(d.scale())]))
    }

    /// `self ÷ d` (0 when `d` is 0).
    pub fn div_decimal(self, d: Decimal) -> Money {
        Money(mul_div(self.0, POW10[usize::from(d.scale())], i128::from(d.mantissa())))
    }

    pub fn min(self, other: Money) -> Money {
        if self <= other { self } else { other }
    }

    pub fn max(self, other: Money) -> Money {
        if self >= other { self } else { other }
    }

    /// The value as a `Decimal`: exact when it fits an `i64` mantissa, else rounded half away
    /// from zero to the most decimal places that fit.
    pub fn to_decimal(self) -> Decimal {
        let mut mantissa = self.0;
        let mut scale = SCALE as u8;
        while i64::try_from(mantissa).is_err() && scale > 0 {
            mantissa = div_round(mantissa, 10);
            scale -= 1;
        }
        let mantissa = i64::try_from(mantissa).unwrap_or(if self.0 < 0 { i64::MIN + 1 } else { i64::MAX });
        Decimal::new(mantissa, scale).unwrap_or(Decimal::ZERO)
    }

    /// For statistics and display only.
    pub fn to_f64_lossy(self) -> f64 {
        let whole = self.0 / ONE;
        let frac = self.0 % ONE;
        whole as f64 + frac as f64 / 1e12
    }
}

impl Add for Money {
    type Output = Money;
    fn add(self, other: Money) -> Money {
        Money(self.0.saturating_add(other.0))
    }
}

impl Sub for Money {
    type Output = Money;
    fn sub(self, other: Money) -> Money {
        Money(self.0.saturating_sub(other.0))
    }
}

impl Mul for Money {
    type Output = Money;
    /// `self × other`, rounded once.
    fn mul(self, other: Money) -> Money {
        Money(mul_div(self.0, other.0, ONE))
    }
}

impl Div for Money {
    type Output = Money;
    /// `self ÷ other`, rounded once; 0 when `other` is 0 (never panics).
    fn div(self, other: Money) -> Money {
        Money(mul_div(self.0, ONE, other.0))
    }
}

impl Neg for Money {
    type Output = Money;
    fn neg(self) -> Money {
        Money(self.0.saturating_neg())
    }
}

impl AddAssign for Money {
    fn add_assign(&mut self, other: Money) {
        *self = *self + other;
    }
}

impl SubAssign for Money {
    fn sub_assign(&mut self, other: Money) {
        *self = *self - other;
    }
}

impl std::iter::Sum for Money {
    fn sum<I: Iterator<Item = Money>>(iter: I) -> Money {
        iter.fold(Money::ZERO, Add::add)
    }
}

impl fmt::Display for Money {
    /// Exact: up to 12 places, trailing zeros trimmed (`0.00001`, `-12.5`, `10`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let sign = if self.0 < 0 { "-" } else { "" };
        let abs = self.0.unsigned_abs();
        let whole = abs / ONE as u128;
        let frac = abs % ONE as u128;
        if frac == 0 {
            return write!(f, "{sign}{whole}");
        }
        let digits = format!("{frac:012}");
        write!(f, "{sign}{whole}.{}", digits.trim_end_matches('0'))
    }
}

/// `n ÷ d` rounded half away from zero (`d` ≠ 0).
fn div_round(n: i128, d: i128) -> i128 {
    let q = n / d;
    let r = n % d;
    if r.unsigned_abs() >= d.unsigned_abs() - r.unsigned_abs() {
        if (n < 0) == (d < 0) { q + 1 } else { q - 1 }
    } else {
        q
    }
}

/// `a × b ÷ c` rounded half away from zero, saturating; 0 when `c` is 0. Uses a 256-bit
/// product only when the 128-bit one overflows.
fn mul_div(a: i128, b: i128, c: i128) -> i128 {
    if c == 0 {
        return 0;
    }
    if let Some(p) = a.checked_mul(b) {
        return div_round(p, c);
    }
    let negative = (a < 0) ^ (b < 0) ^ (c < 0);
    let (hi, lo) = wide_mul(a.unsigned_abs(), b.unsigned_abs());
    let c = c.unsigned_abs();
    let Some((q, r)) = wide_div(hi, lo, c) else {
        return if negative { -i128::MAX } else { i128::MAX };
    };
    // Round half away from zero on magnitudes.
    let q = if r >= c - r { q.saturating_add(1) } else { q };
    let q = i128::try_from(q).unwrap_or(i128::MAX);
    if negative { -q } else { q }
}

/// 128 × 128 → 256 bits as (high, low).
fn wide_mul(a: u128, b: u128) -> (u128, u128) {
    const MASK: u128 = u64::MAX as u128;
    let (a_hi, a_lo) = (a >> 64, a & MASK);
    let (b_hi, b_lo) = (b >> 64, b & MASK);
    let ll = a_lo * b_lo;
    let lh = a_lo * b_hi;
    let hl = a_hi * b_lo;
    let hh = a_hi * b_hi;
    let mid = (ll >> 64) + (lh & MASK) + (hl & MASK);
    let lo = (ll & MASK) | (mid << 64);
    let hi = hh + (lh >> 64) + (hl >> 64) + (mid >> 64);
    (hi, lo)
}

/// (high, low) ÷ d → (quotient, remainder) when the quotient fits 128 bits.
fn wide_div(hi: u128, lo: u128, d: u128) -> Option<(u128, u128)> {
    if hi >= d {
        return None;
    }
    // Restoring division, one bit at a time (only on the rare overflow path).
    let (mut rem, mut q) = (hi, 0u128);
    for i in (0..128).rev() {
        let carry = rem >> 127;
        rem = (rem << 1) | ((lo >> i) & 1);
        q <<= 1;
        if carry == 1 || rem >= d {
            rem = rem.wrapping_sub(d);
            q |= 1;
        }
    }
    Some((q, rem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    fn m(s: &str) -> Money {
        Money::from_decimal(d(s))
    }

    #[test]
    fn sums_are_exact_where_f64_is_not() {
        let mut total = Money::ZERO;
        for _ in 0..10 {
            total += m("0.1");
        }
        assert_eq!(total, Money::ONE);
        assert_eq!((m("0.1") + m("0.2")).to_string(), "0.3");
    }

    #[test]
    fn products_and_quotients_round_half_away_from_zero() {
        assert_eq!((m("1000") / m("50000")).to_string(), "0.02");
        assert_eq!((m("1") / m("3")).to_string(), "0.333333333333");
        assert_eq!((m("2") / m("3")).to_string(), "0.666666666667");
        assert_eq!((-m("2") / m("3")).to_string(), "-0.666666666667");
        assert_eq!(m("0.00002").mul_decimal(d("0.0005")).to_string(), "0.00000001");
        assert_eq!(m("10").div_decimal(d("4")), m("2.5"));
        assert_eq!(m("7").mul_ratio(1, 2), m("3.5"));
        assert_eq!(m("1") / Money::ZERO, Money::ZERO);
        assert_eq!(m("0.0000000000015"), Money::from_raw(2)); // 13 places round once
    }

    #[test]
    fn wide_path_matches_narrow_path() {
        // 10^24 × 10^24 raw units overflow i128 before the division: the 256-bit path.
        let big = m("1000000000000");
        assert_eq!(big * m("1000"), m("1000000000000000"));
        assert_eq!(big * big / big, big);
        assert_eq!(big * m("3") / m("3"), big);
        let (hi, lo) = wide_mul(u128::MAX, u128::MAX);
        assert_eq!((hi, lo), (u128::MAX - 1, 1));
        assert_eq!(wide_div(0, 100, 7), Some((14, 2)));
        assert_eq!(Money::MAX * m("2"), Money::MAX);
    }

    #[test]
    fn renders_exactly_or_rounded_to_fit() {
        assert_eq!(m("0.00001").to_decimal(), d("0.00001"));
        assert_eq!(m("1000000.5").to_decimal(), d("1000000.5"));
        assert_eq!(Money::from_int(10).to_string(), "10");
        assert_eq!(m("-12.5").to_string(), "-12.5");
        // 1e7 + 1e-12 does not fit an i64 mantissa at 12 places: rounded.
        assert_eq!((m("10000000") + Money::from_raw(1)).to_decimal(), d("10000000"));
        assert_eq!((m("1000000") + Money::from_raw(1)).to_decimal(), d("1000000.000000000001"));
        assert_eq!(Money::from_f64_model(64_250.5), m("64250.5"));
    }
}
