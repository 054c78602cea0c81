//! Exact base-10 decimals, parsed from text without ever passing through `f64`.
//!
//! Owns: the decimal grammar venues use (JSON numbers, exponent form included, and
//! Hyperliquid's string decimals), conversion of a decimal into integer units of a step
//! (`Decimal::to_units`) and back (`write_units`), with no rounding anywhere: a value off the
//! grid is an error.
//! Must not: allocate on the parse path, or accept a value it cannot represent exactly.

use std::cmp::Ordering;
use std::fmt;

use crate::NumberError;

/// Largest number of fractional digits a [`Decimal`] keeps (10^18 still fits an `i64`).
pub const MAX_SCALE: u8 = 18;

/// `mantissa × 10^-scale`, kept normalised (no trailing zero in the mantissa when `scale > 0`),
/// so equal values have equal representations and `==` is value equality.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Decimal {
    mantissa: i64,
    scale: u8,
}

/// Powers of ten that fit a `u64`: `POW10_U64[k] == 10^k` for `k` in `0..=19`; the number
/// scanners and writers of the protocol and book crates share it.
pub const POW10_U64: [u64; 20] = {
    let mut table = [1u64; 20];
    let mut i = 1;
    while i < 20 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

/// Powers of ten that fit an `i128`: `POW10_I128[k] == 10^k` for `k` in `0..=38`.
pub const POW10_I128: [i128; 39] = {
    let mut table = [1i128; 39];
    let mut i = 1;
    while i < 39 {
        table[i] = table[i - 1] * 10;
        i += 1;
    }
    table
};

impl Decimal {
    pub const ZERO: Decimal = Decimal { mantissa: 0, scale: 0 };
    pub const ONE: Decimal = Decimal { mantissa: 1, scale: 0 };

    /// Builds `mantissa × 10^-scale`, normalising trailing zeros away.
    pub fn new(mantissa: i64, scale: u8) -> Result<Decimal, NumberError> {
        if scale > MAX_SCALE {
            return Err(NumberError::TooPrecise);
        }
        Ok(Decimal { mantissa, scale }.normalised())
    }

    /// An integer value.
    pub const fn from_int(value: i64) -> Decimal {
        Decimal { mantissa: value, scale: 0 }
    }

    pub const fn mantissa(self) -> i64 {
        self.mantissa
    }

    pub const fn scale(self) -> u8 {
        self.scale
    }

    pub const fn is_zero(self) -> bool {
        self.mantissa == 0
    }

    pub const fn is_negative(self) -> bool {
        self.mantissa < 0
    }

    fn normalised(mut self) -> Decimal {
        if self.mantissa == 0 {
            self.scale = 0;
        }
        while self.scale > 0 && self.mantissa % 10 == 0 {
            self.mantissa /= 10;
            self.scale -= 1;
        }
        self
    }

    /// Parses a decimal: optional sign, digits, optional fraction, optional exponent
    /// (`-12.50`, `0.0005`, `1e-4`, `5E+2`). Exact; rejects anything it would have to round.
    pub fn parse(text: &str) -> Result<Decimal, NumberError> {
        Decimal::parse_bytes(text.as_bytes())
    }

    /// [`Decimal::parse`] on bytes, for decoders that scan a frame without UTF-8 validation.
    pub fn parse_bytes(bytes: &[u8]) -> Result<Decimal, NumberError> {
        let mut i = 0;
        let negative = match bytes.first() {
            Some(b'-') => {
                i += 1;
                true
            }
            Some(b'+') => {
                i += 1;
                false
            }
            Some(_) => false,
            None => return Err(NumberError::Empty),
        };
        let mut mantissa: i128 = 0;
        let mut frac_digits: i32 = 0;
        let mut n_digits = 0usize;
        let mut seen_dot = false;
        while i < bytes.len() {
            let b = bytes[i];
            match b {
                b'0'..=b'9' => {
                    mantissa = mantissa * 10 + i128::from(b - b'0');
                    if mantissa > i128::from(i64::MAX) * 10 {
                        return Err(NumberError::Overflow);
                    }
                    n_digits += 1;
                    if seen_dot {
                        frac_digits += 1;
                    }
                }
                b'.' if !seen_dot => {
                    if n_digits == 0 {
                        return Err(NumberError::Syntax);
                    }
                    seen_dot = true;
                    // A dot must be followed by at least one digit.
                    if !matches!(bytes.get(i + 1), Some(b'0'..=b'9')) {
                        return Err(NumberError::Syntax);
                    }
                }
                b'e' | b'E' => break,
                _ => return Err(NumberError::Syntax),
            }
            i += 1;
        }
        if n_digits == 0 {
            return Err(NumberError::Syntax);
        }
        let mut exponent: i32 = 0;
        if i < bytes.len() {
            // bytes[i] is 'e' or 'E'.
            i += 1;
            let exp_negative = match bytes.get(i) {
                Some(b'-') => {
                    i += 1;
                    true
                }
                Some(b'+') => {
                    i += 1;
                    false
                }
                _ => false,
            };
            let start = i;
            while i < bytes.len() {
                let b = bytes[i];
                if !b.is_ascii_digit() {
                    return Err(NumberError::Syntax);
                }
                exponent = exponent * 10 + i32::from(b - b'0');
                if exponent > 64 {
                    return Err(NumberError::Overflow);
                }
                i += 1;
            }
            if i == start {
                return Err(NumberError::Syntax);
            }
            if exp_negative {
                exponent = -exponent;
            }
        }
        // value = mantissa × 10^(exponent - frac_digits)
        let mut scale = frac_digits - exponent;
        // Drop trailing zeros first so "1.000000000000000000000" still fits.
        while scale > 0 && mantissa != 0 && mantissa % 10 == 0 {
            mantissa /= 10;
            scale -= 1;
        }
        if mantissa == 0 {
            scale = 0;
        }
        if scale < 0 {
            let factor = POW10_I128
                .get(usize::try_from(-scale).map_err(|_| NumberError::Overflow)?)
                .ok_or(NumberError::Overflow)?;
            mantissa = mantissa.checked_mul(*factor).ok_or(NumberError::Overflow)?;
            scale = 0;
        }
        if scale > i32::from(MAX_SCALE) {
            return Err(NumberError::TooPrecise);
        }
        if negative {
            mantissa = -mantissa;
        }
        let mantissa = i64::try_from(mantissa).map_err(|_| NumberError::Overflow)?;
        Ok(Decimal { mantissa, scale: scale as u8 }.normalised())
    }

    /// The mantissa brought to `scale` decimal places (which must be ≥ `self.scale`).
    fn mantissa_at(self, scale: u8) -> i128 {
        i128::from(self.mantissa) * POW10_I128[usize::from(scale - self.scale)]
    }

    /// How many whole `unit`s make `self`. Errors when `self` is not a multiple of `unit`
    /// (never rounds) or the count does not fit an `i64`.
    pub fn to_units(self, unit: Decimal) -> Result<i64, NumberError> {
        if unit.mantissa <= 0 {
            return Err(NumberError::BadUnit);
        }
        let scale = self.scale.max(unit.scale);
        let value = self.mantissa_at(scale);
        let step = unit.mantissa_at(scale);
        // Prices and sizes almost always fit 64 bits at the common scale: a 64-bit division
        // instead of a call into the 128-bit one (`step` is positive, so no overflow).
        if let (Ok(value), Ok(step)) = (i64::try_from(value), i64::try_from(step)) {
            if value % step != 0 {
                return Err(NumberError::OffGrid);
            }
            return Ok(value / step);
        }
        if value % step != 0 {
            return Err(NumberError::OffGrid);
        }
        i64::try_from(value / step).map_err(|_| NumberError::Overflow)
    }

    /// `units × unit`, exactly.
    pub fn from_units(units: i64, unit: Decimal) -> Result<Decimal, NumberError> {
        let mantissa = i128::from(units) * i128::from(unit.mantissa);
        let mantissa = i64::try_from(mantissa).map_err(|_| NumberError::Overflow)?;
        Decimal::new(mantissa, unit.scale)
    }

    /// Appends the shortest exact decimal text (`64250.5`, `0.0005`, `40`) to `out`.
    pub fn write(self, out: &mut Vec<u8>) {
        write_scaled(i128::from(self.mantissa), self.scale, out);
    }

    /// Checked sum.
    pub fn checked_add(self, other: Decimal) -> Option<Decimal> {
        let scale = self.scale.max(other.scale);
        let sum = self.mantissa_at(scale) + other.mantissa_at(scale);
        let mantissa = i64::try_from(sum).ok()?;
        Decimal::new(mantissa, scale).ok()
    }

    /// Checked product.
    pub fn checked_mul(self, other: Decimal) -> Option<Decimal> {
        let mut mantissa = i128::from(self.mantissa) * i128::from(other.mantissa);
        let mut scale = u32::from(self.scale) + u32::from(other.scale);
        while scale > 0 && mantissa % 10 == 0 && mantissa != 0 {
            mantissa /= 10;
            scale -= 1;
        }
        if scale > u32::from(MAX_SCALE) {
            return None;
        }
        Decimal::new(i64::try_from(mantissa).ok()?, scale as u8).ok()
    }

    /// The value as `f64`, for display and statistics only (never for an order value).
    pub fn to_f64_lossy(self) -> f64 {
        self.mantissa as f64 / POW10_I128[usize::from(self.scale)] as f64
    }
}

/// Appends `units × unit` as decimal text without building a [`Decimal`] (no normalisation
/// loop over the result; trailing zeros are trimmed while writing).
pub fn write_units(units: i64, unit: Decimal, out: &mut Vec<u8>) {
    write_scaled(i128::from(units) * i128::from(unit.mantissa), unit.scale, out);
}

fn write_scaled(mantissa: i128, scale: u8, out: &mut Vec<u8>) {
    if mantissa < 0 {
        out.push(b'-');
    }
    let magnitude = mantissa.unsigned_abs();
    if scale == 0 {
        write_u128(magnitude, out);
        return;
    }
    let pow = POW10_I128[usize::from(scale)] as u128;
    let int_part = magnitude / pow;
    let mut frac = magnitude % pow;
    write_u128(int_part, out);
    if frac == 0 {
        return;
    }
    let mut digits = scale;
    while frac.is_multiple_of(10) {
        frac /= 10;
        digits -= 1;
    }
    out.push(b'.');
    let mut buf = [b'0'; 40];
    let mut pos = buf.len();
    for _ in 0..digits {
        pos -= 1;
        buf[pos] = b'0' + (frac % 10) as u8;
        frac /= 10;
    }
    out.extend_from_slice(&buf[pos..]);
}

fn write_u128(mut value: u128, out: &mut Vec<u8>) {
    let mut buf = [0u8; 40];
    let mut pos = buf.len();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[pos..]);
}

impl PartialOrd for Decimal {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Decimal {
    fn cmp(&self, other: &Self) -> Ordering {
        let scale = self.scale.max(other.scale);
        self.mantissa_at(scale).cmp(&other.mantissa_at(scale))
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut buf = Vec::with_capacity(24);
        self.write(&mut buf);
        // The writer emits ASCII only.
        f.pad(std::str::from_utf8(&buf).map_err(|_| fmt::Error)?)
    }
}

impl std::str::FromStr for Decimal {
    type Err = NumberError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Decimal::parse(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn d(text: &str) -> Decimal {
        Decimal::parse(text).expect(text)
    }

    fn text(value: Decimal) -> String {
        value.to_string()
    }

    #[test]
    fn parses_venue_numbers_exactly() {
        for (input, mantissa, scale) in [
            ("64250.5", 642505, 1),
            ("0.0005", 5, 4),
            ("40", 40, 0),
            ("40.0", 40, 0),
            ("-12.50", -125, 1),
            ("1e-4", 1, 4),
            ("5E+2", 500, 0),
            ("2.5e1", 25, 0),
            ("0", 0, 0),
            ("-0.000", 0, 0),
            ("76471.0", 76471, 0),
            ("0.00153", 153, 5),
        ] {
            assert_eq!(d(input), Decimal::new(mantissa, scale).unwrap(), "{input}");
        }
    }

    #[test]
    fn rejects_what_it_cannot_hold() {
        for (input, err) in [
            ("", NumberError::Empty),
            ("-", NumberError::Syntax),
            (".5", NumberError::Syntax),
            ("5.", NumberError::Syntax),
            ("1.2.3", NumberError::Syntax),
            ("NaN", NumberError::Syntax),
            ("inf", NumberError::Syntax),
            ("1e", NumberError::Syntax),
            ("1e+", NumberError::Syntax),
            ("12a", NumberError::Syntax),
            (" 1", NumberError::Syntax),
            ("99999999999999999999", NumberError::Overflow),
            ("1e-19", NumberError::TooPrecise),
            ("1e99", NumberError::Overflow),
        ] {
            assert_eq!(Decimal::parse(input), Err(err), "{input:?}");
        }
    }

    #[test]
    fn units_are_exact_or_an_error() {
        assert_eq!(d("64250.5").to_units(d("0.5")), Ok(128501));
        assert_eq!(d("64250.25").to_units(d("0.5")), Err(NumberError::OffGrid));
        assert_eq!(d("0.0015").to_units(d("0.0005")), Ok(3));
        assert_eq!(d("120").to_units(d("10")), Ok(12));
        assert_eq!(d("125").to_units(d("10")), Err(NumberError::OffGrid));
        assert_eq!(d("1").to_units(Decimal::ZERO), Err(NumberError::BadUnit));
        assert_eq!(text(Decimal::from_units(128501, d("0.5")).unwrap()), "64250.5");
        assert_eq!(text(Decimal::from_units(-3, d("0.0005")).unwrap()), "-0.0015");
    }

    #[test]
    fn writes_shortest_text() {
        for input in ["64250.5", "0.0005", "40", "-12.5", "0", "123456789.123456789"] {
            assert_eq!(text(d(input)), input);
        }
        let mut out = Vec::new();
        write_units(128501, d("0.5"), &mut out);
        out.push(b' ');
        write_units(20, d("0.5"), &mut out);
        assert_eq!(out, b"64250.5 10");
    }

    #[test]
    fn orders_by_value() {
        assert!(d("0.5") < d("0.50001"));
        assert!(d("-1") < d("0"));
        assert_eq!(d("1.10").cmp(&d("1.1")), Ordering::Equal);
        assert_eq!(d("0.1").checked_add(d("0.2")), Some(d("0.3")));
        assert_eq!(d("0.5").checked_mul(d("3")), Some(d("1.5")));
    }

    proptest! {
        #[test]
        fn text_round_trips(mantissa in -999_999_999_999_999i64..999_999_999_999_999, scale in 0u8..=12) {
            let value = Decimal::new(mantissa, scale).unwrap();
            prop_assert_eq!(Decimal::parse(&value.to_string()), Ok(value));
        }

        #[test]
        fn units_round_trip(units in -1_000_000_000i64..1_000_000_000, unit_m in 1i64..1000, unit_s in 0u8..=8) {
            let unit = Decimal::new(unit_m, unit_s).unwrap();
            let value = Decimal::from_units(units, unit).unwrap();
            prop_assert_eq!(value.to_units(unit), Ok(units));
            let mut out = Vec::new();
            write_units(units, unit, &mut out);
            prop_assert_eq!(Decimal::parse_bytes(&out), Ok(value));
        }

        #[test]
        fn units_match_128_bit_division(m in any::<i64>(), s in 0u8..=18, unit_m in 1i64..1_000_000, unit_s in 0u8..=18) {
            let (value, unit) = (Decimal::new(m, s).unwrap(), Decimal::new(unit_m, unit_s).unwrap());
            let scale = s.max(unit_s);
            let (v, step) = (value.mantissa_at(scale), unit.mantissa_at(scale));
            let naive = if v % step != 0 {
                Err(NumberError::OffGrid)
            } else {
                i64::try_from(v / step).map_err(|_| NumberError::Overflow)
            };
            prop_assert_eq!(value.to_units(unit), naive);
        }
    }
}
