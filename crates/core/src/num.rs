//! `Price`, `Qty` and `Side`: order values as integers in an instrument's units.
//!
//! Owns: the integer newtypes and their arithmetic. What one unit is worth lives in the
//! instrument's spec (`InstrumentSpec::parse_price`), so the hot path only ever adds and
//! compares integers.
//! Must not: be built from or turned into `f64` (use `Decimal` at the edges).

use std::fmt;

/// A price in integer ticks of one instrument (its smallest tick). Built from text through
/// the instrument's spec, or from raw ticks; never from `f64`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Price(i64);

/// A size in integer lots of one instrument (its smallest amount step).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Qty(i64);

macro_rules! integer_newtype {
    ($ty:ident) => {
        impl $ty {
            pub const ZERO: $ty = $ty(0);
            pub const MAX: $ty = $ty(i64::MAX);
            pub const MIN: $ty = $ty(i64::MIN);

            #[inline]
            pub const fn from_raw(raw: i64) -> $ty {
                $ty(raw)
            }

            #[inline]
            pub const fn raw(self) -> i64 {
                self.0
            }

            #[inline]
            pub const fn is_zero(self) -> bool {
                self.0 == 0
            }

            #[inline]
            pub const fn is_positive(self) -> bool {
                self.0 > 0
            }

            #[inline]
            pub fn checked_add(self, other: $ty) -> Option<$ty> {
                self.0.checked_add(other.0).map($ty)
            }

            #[inline]
            pub fn checked_sub(self, other: $ty) -> Option<$ty> {
                self.0.checked_sub(other.0).map($ty)
            }

            #[inline]
            pub fn saturating_add(self, other: $ty) -> $ty {
                $ty(self.0.saturating_add(other.0))
            }

            #[inline]
            pub fn saturating_sub(self, other: $ty) -> $ty {
                $ty(self.0.saturating_sub(other.0))
            }
        }

        impl fmt::Display for $ty {
            /// Raw units; use the instrument's spec for the decimal form.
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(&self.0, f)
            }
        }
    };
}

integer_newtype!(Price);
integer_newtype!(Qty);

impl std::ops::Add for Qty {
    type Output = Qty;
    #[inline]
    fn add(self, rhs: Qty) -> Qty {
        Qty(self.0 + rhs.0)
    }
}

impl std::ops::Sub for Qty {
    type Output = Qty;
    #[inline]
    fn sub(self, rhs: Qty) -> Qty {
        Qty(self.0 - rhs.0)
    }
}

impl std::ops::AddAssign for Qty {
    #[inline]
    fn add_assign(&mut self, rhs: Qty) {
        self.0 += rhs.0;
    }
}

impl std::ops::SubAssign for Qty {
    #[inline]
    fn sub_assign(&mut self, rhs: Qty) {
        self.0 -= rhs.0;
    }
}

impl std::iter::Sum for Qty {
    fn sum<I: Iterator<Item = Qty>>(iter: I) -> Qty {
        Qty(iter.map(|q| q.0).sum())
    }
}

impl Price {
    /// The price `ticks` ticks away (positive = higher).
    #[inline]
    pub fn offset(self, ticks: i64) -> Price {
        Price(self.0 + ticks)
    }
}

/// The side of an order, a trade's aggressor, or a book ladder (Buy = bids, Sell = asks).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Side {
    Buy,
    Sell,
}

impl Side {
    #[inline]
    pub const fn opposite(self) -> Side {
        match self {
            Side::Buy => Side::Sell,
            Side::Sell => Side::Buy,
        }
    }

    /// `+1` for buys, `-1` for sells: the sign a fill adds to a position.
    #[inline]
    pub const fn sign(self) -> i64 {
        match self {
            Side::Buy => 1,
            Side::Sell => -1,
        }
    }

    /// Deribit's and most venues' lower-case name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Side::Buy => "buy",
            Side::Sell => "sell",
        }
    }

    /// True when `price` is at least as aggressive as `limit` for this side
    /// (a buy at `limit` would take an ask at `price`).
    #[inline]
    pub fn crosses(self, limit: Price, price: Price) -> bool {
        match self {
            Side::Buy => price <= limit,
            Side::Sell => price >= limit,
        }
    }
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl std::str::FromStr for Side {
    type Err = crate::NumberError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "buy" | "Buy" | "BUY" | "bid" | "B" => Ok(Side::Buy),
            "sell" | "Sell" | "SELL" | "ask" | "A" => Ok(Side::Sell),
            _ => Err(crate::NumberError::Syntax),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_crossing() {
        assert!(Side::Buy.crosses(Price::from_raw(10), Price::from_raw(9)));
        assert!(Side::Buy.crosses(Price::from_raw(10), Price::from_raw(10)));
        assert!(!Side::Buy.crosses(Price::from_raw(10), Price::from_raw(11)));
        assert!(Side::Sell.crosses(Price::from_raw(10), Price::from_raw(11)));
        assert!(!Side::Sell.crosses(Price::from_raw(10), Price::from_raw(9)));
        assert_eq!(Side::Buy.opposite(), Side::Sell);
        assert_eq!("sell".parse::<Side>(), Ok(Side::Sell));
    }

    #[test]
    fn qty_arithmetic() {
        let mut q = Qty::from_raw(5);
        q += Qty::from_raw(3);
        assert_eq!(q - Qty::from_raw(8), Qty::ZERO);
        assert_eq!([Qty::from_raw(1), Qty::from_raw(2)].into_iter().sum::<Qty>(), Qty::from_raw(3));
        assert_eq!(Qty::MAX.checked_add(Qty::from_raw(1)), None);
    }
}
