//! Decimal ↔ integer-unit conversion on `i64`/`u64` for the book codec's hot path.
//!
//! Owns: fast paths equal to `InstrumentSpec::{price_from_decimal, qty_from_decimal,
//! write_price, write_qty}` (which work in `i128`); anything out of the fast range falls
//! back to those, so results are always the core's (property-tested below).
//! Must not: round: a value off the unit grid is `OffGrid`, as in the core.

use ticktrade_core::{Decimal, InstrumentSpec, NumberError, POW10_U64 as POW10, Price, Qty};

/// `value / unit` when both fit `i64` arithmetic at the unit's scale; `None` to fall back.
#[inline]
fn units_fast(value: Decimal, unit: Decimal) -> Option<Result<i64, NumberError>> {
    let shift = unit.scale().checked_sub(value.scale())?;
    let factor = i64::try_from(*POW10.get(usize::from(shift))?).ok()?;
    let scaled = value.mantissa().checked_mul(factor)?;
    let step = unit.mantissa();
    if step <= 0 {
        return None;
    }
    Some(if scaled % step == 0 { Ok(scaled / step) } else { Err(NumberError::OffGrid) })
}

#[inline]
pub(crate) fn price(spec: &InstrumentSpec, value: Decimal) -> Result<Price, NumberError> {
    match units_fast(value, spec.tick()) {
        Some(Ok(units)) => {
            let price = Price::from_raw(units);
            if spec.tick_rule.is_valid(price) { Ok(price) } else { Err(NumberError::OffGrid) }
        }
        Some(Err(error)) => Err(error),
        None => spec.price_from_decimal(value),
    }
}

#[inline]
pub(crate) fn qty(spec: &InstrumentSpec, value: Decimal) -> Result<Qty, NumberError> {
    match units_fast(value, spec.qty_unit) {
        Some(result) => result.map(Qty::from_raw),
        None => spec.qty_from_decimal(value),
    }
}

/// Appends `units × unit` as the shortest exact decimal, like `ticktrade_core::write_units`.
#[inline]
pub(crate) fn write(units: i64, unit: Decimal, out: &mut Vec<u8>) {
    let scale = usize::from(unit.scale());
    let (Some(mantissa), Some(&pow)) = (units.checked_mul(unit.mantissa()), POW10.get(scale)) else {
        return ticktrade_core::write_units(units, unit, out);
    };
    if mantissa < 0 {
        out.push(b'-');
    }
    let magnitude = mantissa.unsigned_abs();
    let mut buf = itoa::Buffer::new();
    if scale == 0 {
        out.extend_from_slice(buf.format(magnitude).as_bytes());
        return;
    }
    let (int_part, mut frac) = (magnitude / pow, magnitude % pow);
    out.extend_from_slice(buf.format(int_part).as_bytes());
    if frac == 0 {
        return;
    }
    let mut digits = scale;
    while frac % 10 == 0 {
        frac /= 10;
        digits -= 1;
    }
    out.push(b'.');
    let text = buf.format(frac).as_bytes();
    out.extend(std::iter::repeat_n(b'0', digits - text.len()));
    out.extend_from_slice(text);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The largest scale a `Decimal` allows: the tests cover every one.
    const MAX_SCALE: u8 = ticktrade_core::decimal::MAX_SCALE;

    fn spec(tick: (i64, u8), unit: (i64, u8)) -> InstrumentSpec {
        InstrumentSpec::simple("X", Decimal::new(tick.0, tick.1).unwrap(), Decimal::new(unit.0, unit.1).unwrap())
            .unwrap()
    }

    proptest! {
        #[test]
        fn conversions_equal_the_core(
            tick in (1i64..1000, 0u8..=MAX_SCALE), unit in (1i64..1000, 0u8..=MAX_SCALE),
            value in (any::<i64>(), 0u8..=MAX_SCALE),
        ) {
            let spec = spec(tick, unit);
            let value = Decimal::new(value.0, value.1).unwrap();
            prop_assert_eq!(price(&spec, value), spec.price_from_decimal(value));
            prop_assert_eq!(qty(&spec, value), spec.qty_from_decimal(value));
        }

        #[test]
        fn on_grid_values_convert(tick in (1i64..1000, 0u8..10), n in -1_000_000_000i64..1_000_000_000) {
            let spec = spec(tick, tick);
            let value = Decimal::from_units(n, spec.tick()).unwrap();
            prop_assert_eq!(price(&spec, value), Ok(Price::from_raw(n)));
            prop_assert_eq!(qty(&spec, value), Ok(Qty::from_raw(n)));
        }

        #[test]
        fn writing_equals_the_core(units in any::<i64>(), unit in (1i64..1_000_000, 0u8..=MAX_SCALE)) {
            let unit = Decimal::new(unit.0, unit.1).unwrap();
            let (mut ours, mut core) = (Vec::new(), Vec::new());
            write(units, unit, &mut ours);
            ticktrade_core::write_units(units, unit, &mut core);
            prop_assert_eq!(String::from_utf8(ours).unwrap(), String::from_utf8(core).unwrap());
        }
    }
}
