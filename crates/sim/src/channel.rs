//! Subscription channel names: which ones the simulator serves and what they select.
//!
//! Owns: parsing `book.BTC-PERPETUAL.100ms`-style names into [`Channel`] against the
//! instrument catalogue, and the "raw needs auth / private needs auth" rules.
//! Must not: hold subscriptions (the engine does). Unknown or malformed names parse to `None`
//! and are silently dropped from the subscribe result, as Deribit does.

/// Notification interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Interval {
    Raw,
    Ms100,
    Agg2,
}

impl Interval {
    fn parse(text: &str) -> Option<Interval> {
        match text {
            "raw" => Some(Interval::Raw),
            "100ms" => Some(Interval::Ms100),
            "agg2" => Some(Interval::Agg2),
            _ => None,
        }
    }
}

/// Which instruments a `user.*` channel covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Selector {
    Instrument(usize),
    /// `kind` and `currency` as given (`any` matches all).
    KindCurrency {
        kind: String,
        currency: String,
    },
}

/// A channel the simulator publishes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Channel {
    Book { instr: usize, interval: Interval },
    GroupedBook { instr: usize, group: u32, depth: usize, interval: Interval },
    Trades { instr: usize, interval: Interval },
    Ticker { instr: usize, interval: Interval },
    IncrementalTicker { instr: usize },
    Quote { instr: usize },
    PriceIndex { index: String },
    UserOrders { selector: Selector, interval: Interval },
    UserTrades { selector: Selector, interval: Interval },
    UserChanges { selector: Selector, interval: Interval },
    UserPortfolio { currency: String },
}

impl Channel {
    /// Parses a channel name. `find` resolves instrument names; `index_ok` says whether an
    /// index name exists.
    pub fn parse(name: &str, find: impl Fn(&str) -> Option<usize>, index_ok: impl Fn(&str) -> bool) -> Option<Channel> {
        let parts: Vec<&str> = name.split('.').collect();
        match parts.as_slice() {
            ["book", instr, interval] => {
                Some(Channel::Book { instr: find(instr)?, interval: Interval::parse(interval)? })
            }
            ["book", instr, group, depth, interval] => {
                let group = if *group == "none" {
                    0
                } else {
                    group.parse().ok().filter(|g| [1, 2, 5, 10, 25, 100, 250].contains(g))?
                };
                let depth = depth.parse().ok().filter(|d| [1, 10, 20].contains(d))?;
                Some(Channel::GroupedBook { instr: find(instr)?, group, depth, interval: Interval::parse(interval)? })
            }
            ["trades", instr, interval] => {
                Some(Channel::Trades { instr: find(instr)?, interval: Interval::parse(interval)? })
            }
            ["ticker", instr, interval] => {
                Some(Channel::Ticker { instr: find(instr)?, interval: Interval::parse(interval)? })
            }
            ["incremental_ticker", instr] => Some(Channel::IncrementalTicker { instr: find(instr)? }),
            ["quote", instr] => Some(Channel::Quote { instr: find(instr)? }),
            ["deribit_price_index", index] => {
                index_ok(index).then(|| Channel::PriceIndex { index: (*index).to_owned() })
            }
            ["user", "portfolio", currency] => {
                let currency = currency.to_ascii_uppercase();
                ["BTC", "ETH", "USDC", "USDT", "EURR", "ANY"]
                    .contains(&currency.as_str())
                    .then_some(Channel::UserPortfolio { currency })
            }
            ["user", what @ ("orders" | "trades" | "changes"), rest @ ..] => {
                let (selector, interval) = match rest {
                    [instr, interval] => (Selector::Instrument(find(instr)?), Interval::parse(interval)?),
                    [kind, currency, interval] => {
                        let kind_ok =
                            ["any", "future", "option", "spot", "combo", "future_combo", "option_combo"].contains(kind);
                        let currency_ok = ["any", "BTC", "ETH", "USDC", "USDT", "EURR"].contains(currency);
                        if !(kind_ok && currency_ok) {
                            return None;
                        }
                        (
                            Selector::KindCurrency { kind: (*kind).to_owned(), currency: (*currency).to_owned() },
                            Interval::parse(interval)?,
                        )
                    }
                    _ => return None,
                };
                Some(match *what {
                    "orders" => Channel::UserOrders { selector, interval },
                    "trades" => Channel::UserTrades { selector, interval },
                    _ => Channel::UserChanges { selector, interval },
                })
            }
            _ => None,
        }
    }

    /// `user.*` channels need an authenticated session.
    pub fn is_private(&self) -> bool {
        matches!(
            self,
            Channel::UserOrders { .. }
                | Channel::UserTrades { .. }
                | Channel::UserChanges { .. }
                | Channel::UserPortfolio { .. }
        )
    }

    /// Public `raw` channels need an authenticated session (error 13778).
    pub fn is_public_raw(&self) -> bool {
        matches!(
            self,
            Channel::Book { interval: Interval::Raw, .. }
                | Channel::GroupedBook { interval: Interval::Raw, .. }
                | Channel::Trades { interval: Interval::Raw, .. }
                | Channel::Ticker { interval: Interval::Raw, .. }
        )
    }

    /// The instrument a public channel is about.
    pub fn instrument(&self) -> Option<usize> {
        match self {
            Channel::Book { instr, .. }
            | Channel::GroupedBook { instr, .. }
            | Channel::Trades { instr, .. }
            | Channel::Ticker { instr, .. }
            | Channel::IncrementalTicker { instr }
            | Channel::Quote { instr } => Some(*instr),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(name: &str) -> Option<Channel> {
        Channel::parse(name, |n| (n == "BTC-PERPETUAL").then_some(0), |i| i == "btc_usd")
    }

    #[test]
    fn known_channels_parse() {
        assert_eq!(parse("book.BTC-PERPETUAL.100ms"), Some(Channel::Book { instr: 0, interval: Interval::Ms100 }));
        assert_eq!(
            parse("book.BTC-PERPETUAL.none.10.100ms"),
            Some(Channel::GroupedBook { instr: 0, group: 0, depth: 10, interval: Interval::Ms100 })
        );
        assert!(parse("user.orders.any.any.raw").is_some());
        assert!(parse("user.trades.BTC-PERPETUAL.100ms").is_some());
        assert!(parse("user.portfolio.btc").is_some());
        assert!(parse("deribit_price_index.btc_usd").is_some());
        assert!(parse("incremental_ticker.BTC-PERPETUAL").is_some());
    }

    #[test]
    fn unknown_channels_are_dropped() {
        for name in [
            "book.NOPE.100ms",
            "book.BTC-PERPETUAL.50ms",
            "book.BTC-PERPETUAL.none.50.100ms",
            "nonsense",
            "",
            "user.orders.x.y.z.w",
            "deribit_price_index.zzz",
        ] {
            assert_eq!(parse(name), None, "{name}");
        }
    }
}
