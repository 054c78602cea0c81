//! Where one price falls: its bucket under a `Grouping`, and the run of prices around it that
//! share that bucket and width, so that a walk over best-first levels finds most buckets by a
//! comparison or a step to the neighbour instead of a division.
//!
//! Owns: the width of a significant-figure bucket (`mantissa × 10^(digits − sig_figs)` ticks)
//! and the rounding (bids down, asks up); divisions by a power of ten go through a constant
//! divisor per exponent.
//! Must not: keep state between calls or know the side's levels.

use ticktrade_core::POW10_U64;

use super::Grouping;

/// `10^k` as an `i64`, for `k <= 18` (the powers an `i64` holds).
#[inline(always)]
fn pow10(k: u32) -> i64 {
    POW10_U64[k as usize] as i64
}

/// A bucket: its price `b`, the inclusive range `lo..=hi` of prices known to fall in it (those
/// of its width: a bucket cut by a change of digits is only the part on the located price's
/// side), its `width` in ticks, and the range `dlo..=dhi` where that width applies (the prices
/// with as many digits; the whole line for fixed widths).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Bucket {
    pub(crate) b: i64,
    pub(crate) lo: i64,
    pub(crate) hi: i64,
    pub(crate) width: i64,
    pub(crate) dlo: i64,
    pub(crate) dhi: i64,
}

impl Bucket {
    /// A price that is its own bucket, in a band of width 1 (`dlo..=dhi`).
    #[inline(always)]
    fn single(px: i64, dlo: i64, dhi: i64) -> Bucket {
        Bucket { b: px, lo: px, hi: px, width: 1, dlo, dhi }
    }

    /// Moves to the bucket after this one on the walk (worse by one width) if `px` is in it
    /// and it has this width all through: then no division is needed. False (unchanged)
    /// otherwise.
    #[inline(always)]
    pub(crate) fn step(&mut self, bid: bool, px: i64) -> bool {
        if bid {
            match self.lo.checked_sub(self.width) {
                Some(lo) if self.lo == self.b && px >= lo && lo >= self.dlo => {
                    (self.b, self.hi, self.lo) = (lo, self.lo - 1, lo);
                    true
                }
                _ => false,
            }
        } else {
            match self.hi.checked_add(self.width) {
                Some(hi) if self.hi == self.b && px <= hi && hi <= self.dhi => {
                    (self.b, self.lo, self.hi) = (hi, self.hi + 1, hi);
                    true
                }
                _ => false,
            }
        }
    }
}

impl Grouping {
    /// The bucket of `px` on the bid (`bid`) or ask side.
    #[inline(always)]
    pub(crate) fn locate(self, bid: bool, px: i64) -> Bucket {
        match self {
            Grouping::Ticks(width) => of_ticks(px, width, bid),
            Grouping::SigFigs { sig_figs, mantissa } => of_sig_figs(px, sig_figs, mantissa, bid),
        }
    }
}

/// The bucket of `px` under fixed buckets of `width` ticks.
#[inline(always)]
pub(crate) fn of_ticks(px: i64, width: i64, bid: bool) -> Bucket {
    if width <= 1 {
        return Bucket::single(px, i64::MIN, i64::MAX);
    }
    let down = px.saturating_sub(px.rem_euclid(width));
    let (b, lo, hi) = rounded(px, down, width, bid);
    Bucket { b, lo, hi, width, dlo: i64::MIN, dhi: i64::MAX }
}

/// The bucket of `px` under significant-figure buckets: one division, by a constant (per
/// exponent) for the mantissas 1, 2 and 5 of Hyperliquid's variants.
#[inline(always)]
pub(crate) fn of_sig_figs(px: i64, sig_figs: u8, mantissa: u8, bid: bool) -> Bucket {
    if px <= 0 {
        // No digits to count: every such price is its own bucket, and no step is taken.
        return Bucket::single(px, px, px);
    }
    let d = px.ilog10() + 1;
    let dlo = pow10(d - 1);
    let dhi = if d < 19 { pow10(d) - 1 } else { i64::MAX };
    let sig = u32::from(sig_figs);
    if d < sig {
        return Bucket::single(px, dlo, dhi);
    }
    // d ≤ 19; an exponent of 19 (sig_figs 0) saturates like the width it would give.
    let exp = (d - sig).min(18);
    let p = pow10(exp);
    let width = i64::from(mantissa).saturating_mul(p);
    if width <= 1 {
        return Bucket::single(px, dlo, dhi);
    }
    let down = match mantissa {
        // px - px % width, as floor(floor(px / p) / m) · m · p with constant divisors.
        1 => div_pow10(px, exp) * p,
        2 => (div_pow10(px, exp) & !1) * p,
        5 => {
            let q = div_pow10(px, exp);
            (q - q % 5) * p
        }
        _ => px - px % width,
    };
    let (b, lo, hi) = rounded(px, down, width, bid);
    Bucket { b, lo: lo.max(dlo), hi: hi.min(dhi), width, dlo, dhi }
}

/// `x / 10^e` (`x >= 0`, `e <= 18`) by a constant divisor per exponent (a multiply and a
/// shift) instead of a 64-bit division by a variable.
#[inline(always)]
fn div_pow10(x: i64, e: u32) -> i64 {
    macro_rules! by {
        ($($e:literal)*) => {
            match e {
                $($e => x / 10i64.pow($e),)*
                _ => x / pow10(e.min(18)),
            }
        };
    }
    by!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18)
}

/// The bucket of `px` given `down` (`px` rounded down to a multiple of `width`, > 1): bids round
/// down, asks up; and the inclusive range of prices of that width that share it.
#[inline(always)]
fn rounded(px: i64, down: i64, width: i64, bid: bool) -> (i64, i64, i64) {
    if bid {
        (down, down, down.saturating_add(width - 1))
    } else if down == px {
        (px, px.saturating_sub(width - 1), px)
    } else {
        let up = down.saturating_add(width);
        (up, up.saturating_sub(width - 1), up)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The bucket and its range the slow way: a variable division and the width counted from
    /// the decimal digits.
    fn slow(px: i64, sig: u8, mantissa: u8, bid: bool) -> (i64, i64, i64) {
        let d = px.to_string().len() as u32;
        let width = if d < u32::from(sig) { 1 } else { i64::from(mantissa) * 10i64.pow(d - u32::from(sig)) };
        if width <= 1 {
            return (px, px, px);
        }
        let down = px - px % width;
        let (b, lo, hi) = rounded(px, down, width, bid);
        let dlo = 10i64.pow(d - 1);
        let dhi = if d < 19 { 10i64.pow(d) - 1 } else { i64::MAX };
        (b, lo.max(dlo), hi.min(dhi))
    }

    proptest! {
        /// The constant-divisor bucket is the variable division's, at every digit count up to
        /// `i64::MAX`, on both sides, range included.
        #[test]
        fn constant_divisors_equal_the_division(
            mant in 1i64..10_000,
            shift in 0u32..19,
            sig in 2u8..6,
            mantissa in prop::sample::select(vec![1u8, 2, 5]),
            bid in any::<bool>(),
        ) {
            let px = mant.saturating_mul(10i64.pow(shift)).max(1);
            for px in [px, px - 1, px.saturating_add(1)] {
                let px = px.max(1);
                let got = of_sig_figs(px, sig, mantissa, bid);
                prop_assert_eq!((got.b, got.lo, got.hi), slow(px, sig, mantissa, bid), "px {} sig {} m {}", px, sig, mantissa);
            }
        }

        /// A step to the neighbour, for a price past the bucket's range (the only ones the
        /// walk asks about), lands where locating the price would.
        #[test]
        fn neighbour_is_the_located_bucket(
            px in 1i64..3_000_000,
            gap in 1i64..50_000,
            precision in 1usize..7,
            bid in any::<bool>(),
        ) {
            let g = super::super::HlPrecision::ALL[precision].grouping();
            let at = g.locate(bid, px);
            let next = if bid { (at.lo - gap).max(1) } else { at.hi + gap };
            prop_assume!(next < at.lo || next > at.hi);
            let mut step = at;
            if step.step(bid, next) {
                let direct = g.locate(bid, next);
                prop_assert_eq!(step.b, direct.b);
                prop_assert!(step.lo <= next && next <= step.hi);
            } else {
                prop_assert_eq!(step, at);
            }
        }
    }

    #[test]
    fn odd_rules_do_not_panic() {
        for g in [Grouping::SigFigs { sig_figs: 0, mantissa: 9 }, Grouping::SigFigs { sig_figs: 30, mantissa: 0 }] {
            for px in [i64::MIN, -1, 0, 1, 999, i64::MAX] {
                for bid in [true, false] {
                    let at = g.locate(bid, px);
                    assert!(at.lo <= at.hi, "{g:?} {px}");
                }
            }
        }
        assert_eq!(Grouping::Ticks(10).locate(false, i64::MAX).b, i64::MAX);
        assert_eq!(Grouping::Ticks(10).locate(true, -7).b, -10);
    }
}
