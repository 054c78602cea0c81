//! Subscription channel names (`book.{instrument}.{interval}` and the rest): parsed into a typed `Channel` that borrows
//! the name's parts, and formatted back to the exact text.
//!
//! Owns: the channel templates ticktrade uses and their enums (interval, group, depth, kind).
//! Must not: decide whether a channel exists on the venue; unknown templates or enum values
//! parse to `None`, as Deribit silently drops them from a subscribe reply.

use std::fmt;

/// How often a channel publishes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Interval {
    /// Every event (authorised connections only).
    Raw,
    /// Aggregated over 100 ms.
    Ms100,
    /// Aggregated over about 2 s.
    Agg2,
}

impl Interval {
    pub const fn as_str(self) -> &'static str {
        match self {
            Interval::Raw => "raw",
            Interval::Ms100 => "100ms",
            Interval::Agg2 => "agg2",
        }
    }

    /// How often an interval channel is sent, in ms (`0` for `raw`: every change as it
    /// happens). Deribit sends `100ms` every 100 ms and `agg2` about every 2 s; each frame
    /// carries the net change since the channel's previous frame.
    pub const fn period_ms(self) -> u64 {
        match self {
            Interval::Raw => 0,
            Interval::Ms100 => 100,
            Interval::Agg2 => 2_000,
        }
    }

    pub fn parse(text: &str) -> Option<Interval> {
        match text {
            "raw" => Some(Interval::Raw),
            "100ms" => Some(Interval::Ms100),
            "agg2" => Some(Interval::Agg2),
            _ => None,
        }
    }
}

/// Price grouping of a grouped book: `none` or a multiple of the tick (Deribit accepts
/// 1, 2, 5, 10, 25, 100, 250 depending on the instrument).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Group {
    None,
    By(u16),
}

impl Group {
    pub const VALUES: [u16; 7] = [1, 2, 5, 10, 25, 100, 250];

    pub fn parse(text: &str) -> Option<Group> {
        if text == "none" {
            return Some(Group::None);
        }
        let n: u16 = text.parse().ok()?;
        (Group::VALUES.contains(&n) && !text.starts_with('0')).then_some(Group::By(n))
    }
}

/// Levels per side of a grouped book: 1, 10 or 20.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Depth(u8);

impl Depth {
    pub fn new(levels: u8) -> Option<Depth> {
        matches!(levels, 1 | 10 | 20).then_some(Depth(levels))
    }

    pub const fn levels(self) -> u8 {
        self.0
    }

    pub fn parse(text: &str) -> Option<Depth> {
        if text.starts_with('0') {
            return None;
        }
        Depth::new(text.parse().ok()?)
    }
}

/// Kind filter in `{kind}.{currency}` channels.
const KINDS: [&str; 7] = ["future", "option", "spot", "future_combo", "option_combo", "combo", "any"];

/// The instrument part of `trades.*` and `user.*` channels: one instrument, or a kind and a
/// currency (either may be `any`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target<'a> {
    Instrument(&'a str),
    KindCurrency { kind: &'a str, currency: &'a str },
}

/// A channel name, borrowing its parts from the text it was parsed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Channel<'a> {
    Book { instrument: &'a str, interval: Interval },
    GroupedBook { instrument: &'a str, group: Group, depth: Depth, interval: Interval },
    Trades { target: Target<'a>, interval: Interval },
    Ticker { instrument: &'a str, interval: Interval },
    IncrementalTicker { instrument: &'a str },
    Quote { instrument: &'a str },
    PriceIndex { index_name: &'a str },
    Perpetual { instrument: &'a str, interval: Interval },
    UserOrders { target: Target<'a>, interval: Interval },
    UserTrades { target: Target<'a>, interval: Interval },
    UserChanges { target: Target<'a>, interval: Interval },
    UserPortfolio { currency: &'a str },
}

fn name(part: &str) -> Option<&str> {
    (!part.is_empty()).then_some(part)
}

fn target<'a>(parts: &[&'a str]) -> Option<Target<'a>> {
    match *parts {
        [instrument] => Some(Target::Instrument(name(instrument)?)),
        [kind, currency] if KINDS.contains(&kind) => Some(Target::KindCurrency { kind, currency: name(currency)? }),
        _ => None,
    }
}

impl<'a> Channel<'a> {
    /// Parses a channel name; `None` for templates or values ticktrade does not know.
    pub fn parse(text: &'a str) -> Option<Channel<'a>> {
        let mut parts = [""; 6];
        let mut n = 0;
        for part in text.split('.') {
            *parts.get_mut(n)? = part;
            n += 1;
        }
        let parts = &parts[..n];
        let channel = match *parts {
            ["book", instrument, interval] => {
                Channel::Book { instrument: name(instrument)?, interval: Interval::parse(interval)? }
            }
            ["book", instrument, group, depth, interval] => Channel::GroupedBook {
                instrument: name(instrument)?,
                group: Group::parse(group)?,
                depth: Depth::parse(depth)?,
                interval: Interval::parse(interval)?,
            },
            ["trades", ref middle @ .., interval] => {
                Channel::Trades { target: target(middle)?, interval: Interval::parse(interval)? }
            }
            ["ticker", instrument, interval] => {
                Channel::Ticker { instrument: name(instrument)?, interval: Interval::parse(interval)? }
            }
            ["incremental_ticker", instrument] => Channel::IncrementalTicker { instrument: name(instrument)? },
            ["quote", instrument] => Channel::Quote { instrument: name(instrument)? },
            ["deribit_price_index", index_name] => Channel::PriceIndex { index_name: name(index_name)? },
            ["perpetual", instrument, interval] => {
                Channel::Perpetual { instrument: name(instrument)?, interval: Interval::parse(interval)? }
            }
            ["user", "orders", ref middle @ .., interval] => {
                Channel::UserOrders { target: target(middle)?, interval: Interval::parse(interval)? }
            }
            ["user", "trades", ref middle @ .., interval] => {
                Channel::UserTrades { target: target(middle)?, interval: Interval::parse(interval)? }
            }
            ["user", "changes", ref middle @ .., interval] => {
                Channel::UserChanges { target: target(middle)?, interval: Interval::parse(interval)? }
            }
            ["user", "portfolio", currency] => Channel::UserPortfolio { currency: name(currency)? },
            _ => return None,
        };
        Some(channel)
    }

    /// The instrument the channel is about, if it names one.
    pub fn instrument(&self) -> Option<&'a str> {
        match *self {
            Channel::Book { instrument, .. }
            | Channel::GroupedBook { instrument, .. }
            | Channel::Ticker { instrument, .. }
            | Channel::IncrementalTicker { instrument }
            | Channel::Quote { instrument }
            | Channel::Perpetual { instrument, .. } => Some(instrument),
            Channel::Trades { target: Target::Instrument(instrument), .. }
            | Channel::UserOrders { target: Target::Instrument(instrument), .. }
            | Channel::UserTrades { target: Target::Instrument(instrument), .. }
            | Channel::UserChanges { target: Target::Instrument(instrument), .. } => Some(instrument),
            _ => None,
        }
    }
}

/// Whether the channel called `name` is an account's: Deribit's `user.*` channels, which
/// need an authenticated session (`private/subscribe`), whether or not this crate parses them.
pub fn is_private(name: &str) -> bool {
    name.starts_with("user.")
}

impl fmt::Display for Target<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Instrument(instrument) => f.write_str(instrument),
            Target::KindCurrency { kind, currency } => write!(f, "{kind}.{currency}"),
        }
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Group::None => f.write_str("none"),
            Group::By(n) => write!(f, "{n}"),
        }
    }
}

impl fmt::Display for Channel<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Channel::Book { instrument, interval } => write!(f, "book.{instrument}.{}", interval.as_str()),
            Channel::GroupedBook { instrument, group, depth, interval } => {
                write!(f, "book.{instrument}.{group}.{}.{}", depth.levels(), interval.as_str())
            }
            Channel::Trades { target, interval } => write!(f, "trades.{target}.{}", interval.as_str()),
            Channel::Ticker { instrument, interval } => write!(f, "ticker.{instrument}.{}", interval.as_str()),
            Channel::IncrementalTicker { instrument } => write!(f, "incremental_ticker.{instrument}"),
            Channel::Quote { instrument } => write!(f, "quote.{instrument}"),
            Channel::PriceIndex { index_name } => write!(f, "deribit_price_index.{index_name}"),
            Channel::Perpetual { instrument, interval } => write!(f, "perpetual.{instrument}.{}", interval.as_str()),
            Channel::UserOrders { target, interval } => write!(f, "user.orders.{target}.{}", interval.as_str()),
            Channel::UserTrades { target, interval } => write!(f, "user.trades.{target}.{}", interval.as_str()),
            Channel::UserChanges { target, interval } => write!(f, "user.changes.{target}.{}", interval.as_str()),
            Channel::UserPortfolio { currency } => write!(f, "user.portfolio.{currency}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_periods() {
        let periods = [Interval::Raw, Interval::Ms100, Interval::Agg2].map(|i| (i.as_str(), i.period_ms()));
        assert_eq!(periods, [("raw", 0), ("100ms", 100), ("agg2", 2_000)]);
    }

    #[test]
    fn known_channels_round_trip() {
        for text in [
            "book.BTC-PERPETUAL.raw",
            "book.ETH-PERPETUAL.100.1.100ms",
            "book.BTC_USDC-PERPETUAL.none.20.100ms",
            "trades.BTC-PERPETUAL.100ms",
            "trades.future.BTC.raw",
            "trades.option.any.agg2",
            "ticker.BTC-27DEC24-60000-C.raw",
            "incremental_ticker.BTC-PERPETUAL",
            "quote.XRP_USDC-30JUN23-0d625-C",
            "deribit_price_index.btc_usd",
            "perpetual.BTC-PERPETUAL.raw",
            "user.orders.BTC-PERPETUAL.raw",
            "user.orders.any.any.raw",
            "user.trades.future.ETH.100ms",
            "user.changes.BTC-PERPETUAL.100ms",
            "user.portfolio.btc",
        ] {
            let channel = Channel::parse(text).unwrap_or_else(|| panic!("{text} did not parse"));
            assert_eq!(channel.to_string(), text);
        }
    }

    #[test]
    fn typed_parts() {
        assert_eq!(
            Channel::parse("book.ETH-PERPETUAL.100.1.100ms"),
            Some(Channel::GroupedBook {
                instrument: "ETH-PERPETUAL",
                group: Group::By(100),
                depth: Depth::new(1).unwrap(),
                interval: Interval::Ms100
            })
        );
        assert_eq!(
            Channel::parse("user.orders.any.any.raw"),
            Some(Channel::UserOrders {
                target: Target::KindCurrency { kind: "any", currency: "any" },
                interval: Interval::Raw
            })
        );
        assert_eq!(Channel::parse("book.BTC-PERPETUAL.raw").and_then(|c| c.instrument()), Some("BTC-PERPETUAL"));
        assert!(is_private("user.portfolio.btc") && is_private("user.mmp_trigger.btc_usd"));
        assert!(!is_private("book.BTC-PERPETUAL.raw") && !is_private("trades.future.BTC.100ms"));
    }

    #[test]
    fn unknown_is_none() {
        for text in [
            "",
            "book",
            "book.BTC-PERPETUAL.50ms",
            "book.BTC-PERPETUAL.none.50.100ms",
            "book.BTC-PERPETUAL.3.10.100ms",
            "book.BTC-PERPETUAL.010.10.100ms",
            "book..raw",
            "trades.swap.BTC.raw",
            "chart.trades.BTC-PERPETUAL.1",
            "user.orders.a.b.c.d.raw",
            "a.b.c.d.e.f.g",
        ] {
            assert_eq!(Channel::parse(text), None, "{text}");
        }
    }
}
