//! [`Num`]: an exact decimal carried as a JSON number, never through `f64`; [`OrderPrice`]: an
//! order's `price`, a number or Deribit's `"market_price"`.
//!
//! Owns: reading a JSON number (or a numeric string, as HTTP query strings carry them) into a
//! `ticktrade_core::Decimal`, and writing it back as a bare JSON number.
//! Must not: round. A number that `Decimal` cannot hold exactly is a decode error.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use ticktrade_core::Decimal;

/// An exact decimal that (de)serialises as a JSON number (`202.8`, `7.766e-05`, `21`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Num(pub Decimal);

impl Num {
    pub const ZERO: Num = Num(Decimal::ZERO);

    pub const fn int(value: i64) -> Num {
        Num(Decimal::from_int(value))
    }

    pub fn parse(text: &str) -> Option<Num> {
        Decimal::parse(text).ok().map(Num)
    }

    /// A JSON number's text, or a numeric string: query strings and some clients send numbers
    /// as strings ("10").
    fn from_json(text: &str) -> Option<Num> {
        let text = text.strip_prefix('"').and_then(|t| t.strip_suffix('"')).unwrap_or(text);
        Num::parse(text)
    }
}

impl Default for Num {
    fn default() -> Num {
        Num::ZERO
    }
}

impl From<Decimal> for Num {
    fn from(value: Decimal) -> Num {
        Num(value)
    }
}

impl std::fmt::Display for Num {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl Serialize for Num {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let raw = RawValue::from_string(self.0.to_string()).map_err(serde::ser::Error::custom)?;
        raw.serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Num, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        Num::from_json(raw.get()).ok_or_else(|| D::Error::custom("invalid format"))
    }
}

/// An order's `price`: a number, or the string `"market_price"` that Deribit writes for a
/// market-type trigger order (`stop_market`, `take_market`, `trailing_stop`) that has not
/// triggered yet, which has no price.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderPrice {
    Value(Num),
    MarketPrice,
}

impl OrderPrice {
    const MARKET_PRICE: &'static str = "market_price";

    /// The price, if the order has one.
    pub fn value(self) -> Option<Decimal> {
        match self {
            OrderPrice::Value(num) => Some(num.0),
            OrderPrice::MarketPrice => None,
        }
    }
}

impl Default for OrderPrice {
    fn default() -> OrderPrice {
        OrderPrice::Value(Num::ZERO)
    }
}

impl From<Num> for OrderPrice {
    fn from(value: Num) -> OrderPrice {
        OrderPrice::Value(value)
    }
}

impl std::fmt::Display for OrderPrice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OrderPrice::Value(num) => num.fmt(f),
            OrderPrice::MarketPrice => f.write_str(OrderPrice::MARKET_PRICE),
        }
    }
}

impl Serialize for OrderPrice {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            OrderPrice::Value(num) => num.serialize(serializer),
            OrderPrice::MarketPrice => serializer.serialize_str(OrderPrice::MARKET_PRICE),
        }
    }
}

impl<'de> Deserialize<'de> for OrderPrice {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<OrderPrice, D::Error> {
        let raw = Box::<RawValue>::deserialize(deserializer)?;
        if raw.get() == "\"market_price\"" {
            return Ok(OrderPrice::MarketPrice);
        }
        Num::from_json(raw.get())
            .map(OrderPrice::Value)
            .ok_or_else(|| D::Error::custom("invalid format: expected a price or \"market_price\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_prices_are_numbers_or_market_price() {
        let price: OrderPrice = serde_json::from_str("202.8").unwrap();
        assert_eq!(price, OrderPrice::Value(Num::parse("202.8").unwrap()));
        assert_eq!(serde_json::to_string(&price).unwrap(), "202.8");
        let market: OrderPrice = serde_json::from_str("\"market_price\"").unwrap();
        assert_eq!((market, market.value()), (OrderPrice::MarketPrice, None));
        assert_eq!(serde_json::to_string(&market).unwrap(), "\"market_price\"");
        assert!(serde_json::from_str::<OrderPrice>("\"limit_price\"").is_err());
        assert!(serde_json::from_str::<OrderPrice>("true").is_err());
    }

    #[test]
    fn round_trips_exactly() {
        for text in ["202.8", "21", "0.0005", "-0.0001", "123456789.123456789"] {
            let num: Num = serde_json::from_str(text).unwrap();
            assert_eq!(serde_json::to_string(&num).unwrap(), text);
        }
        let num: Num = serde_json::from_str("7.766e-05").unwrap();
        assert_eq!(serde_json::to_string(&num).unwrap(), "0.00007766");
        let num: Num = serde_json::from_str("\"10.5\"").unwrap();
        assert_eq!(num, Num::parse("10.5").unwrap());
    }

    #[test]
    fn rejects_non_numbers() {
        assert!(serde_json::from_str::<Num>("true").is_err());
        assert!(serde_json::from_str::<Num>("\"abc\"").is_err());
        assert!(serde_json::from_str::<Num>("null").is_err());
    }
}
