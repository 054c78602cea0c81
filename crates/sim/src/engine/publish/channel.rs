//! Channel names resolved against the catalogue: what a subscription is about.
//!
//! Owns: [`Sub`] and [`Selector`] (parsed by `ticktrade_deribit_proto::channel`, unknown
//! instruments, indexes and currencies dropped as Deribit does), which public channels need an
//! authenticated session (the raw ones; `user.*` channels are
//! `ticktrade_deribit_proto::channel::is_private`), and which instruments a selector covers.
//! Must not: hold subscriber state.

use ticktrade_deribit_proto::channel::{Channel, Group, Interval, Target};

use crate::market::Market;
use ticktrade_core::InstrumentId;

/// Which instruments a `trades.*` or `user.*` channel covers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selector {
    Instrument(InstrumentId),
    /// `kind` and `currency` as given (`any` matches all).
    KindCurrency {
        kind: String,
        currency: String,
    },
}

/// A channel name resolved against the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sub {
    Book {
        instr: InstrumentId,
        interval: Interval,
    },
    /// `group` in price units (0 = none).
    GroupedBook {
        instr: InstrumentId,
        group: u16,
        depth: usize,
        interval: Interval,
    },
    Trades {
        selector: Selector,
        interval: Interval,
    },
    Ticker {
        instr: InstrumentId,
        interval: Interval,
    },
    IncrementalTicker {
        instr: InstrumentId,
    },
    Quote {
        instr: InstrumentId,
    },
    PriceIndex {
        index: String,
    },
    UserOrders {
        selector: Selector,
        interval: Interval,
    },
    UserTrades {
        selector: Selector,
        interval: Interval,
    },
    UserChanges {
        selector: Selector,
        interval: Interval,
    },
    UserPortfolio {
        currency: String,
    },
    /// `user.mmp_trigger.{index_name}` (`any`: every index).
    UserMmpTrigger {
        index: String,
    },
}

impl Sub {
    /// Parses and resolves a channel name; unknown names, instruments and indexes are `None`
    /// (dropped from the subscribe result, as Deribit does).
    pub fn resolve(market: &Market, name: &str) -> Option<Sub> {
        // Not among `ticktrade_deribit_proto::channel`'s templates: a prefix and an index.
        if let Some(index) = name.strip_prefix("user.mmp_trigger.") {
            let known = index == "any" || market.index_price(index).is_some();
            return known.then(|| Sub::UserMmpTrigger { index: index.to_owned() });
        }
        let channel = Channel::parse(name)?;
        let instr = |n: &str| market.find(n);
        let selector = |target: Target<'_>| -> Option<Selector> {
            match target {
                Target::Instrument(n) => Some(Selector::Instrument(instr(n)?)),
                Target::KindCurrency { kind, currency } => {
                    let known = currency.eq_ignore_ascii_case("any")
                        || market.currency_names().iter().any(|c| c.as_str() == currency);
                    known.then(|| Selector::KindCurrency { kind: kind.to_owned(), currency: currency.to_owned() })
                }
            }
        };
        Some(match channel {
            Channel::Book { instrument, interval } => Sub::Book { instr: instr(instrument)?, interval },
            Channel::GroupedBook { instrument, group, depth, interval } => Sub::GroupedBook {
                instr: instr(instrument)?,
                group: match group {
                    Group::None => 0,
                    Group::By(n) => n,
                },
                depth: usize::from(depth.levels()),
                interval,
            },
            Channel::Trades { target, interval } => Sub::Trades { selector: selector(target)?, interval },
            Channel::Ticker { instrument, interval } => Sub::Ticker { instr: instr(instrument)?, interval },
            Channel::IncrementalTicker { instrument } => Sub::IncrementalTicker { instr: instr(instrument)? },
            Channel::Quote { instrument } => Sub::Quote { instr: instr(instrument)? },
            Channel::PriceIndex { index_name } => {
                market.index_price(index_name)?;
                Sub::PriceIndex { index: index_name.to_owned() }
            }
            Channel::Perpetual { .. } => return None,
            Channel::UserOrders { target, interval } => Sub::UserOrders { selector: selector(target)?, interval },
            Channel::UserTrades { target, interval } => Sub::UserTrades { selector: selector(target)?, interval },
            Channel::UserChanges { target, interval } => Sub::UserChanges { selector: selector(target)?, interval },
            Channel::UserPortfolio { currency } => {
                let upper = currency.to_ascii_uppercase();
                let known = upper == "ANY" || market.currency_names().contains(&upper);
                known.then_some(Sub::UserPortfolio { currency: upper })?
            }
        })
    }

    /// Public `raw` channels need an authenticated session (error 13778).
    pub fn is_public_raw(&self) -> bool {
        matches!(
            self,
            Sub::Book { interval: Interval::Raw, .. }
                | Sub::GroupedBook { interval: Interval::Raw, .. }
                | Sub::Trades { interval: Interval::Raw, .. }
                | Sub::Ticker { interval: Interval::Raw, .. }
        )
    }

    /// The one instrument a public channel is about.
    pub(super) fn instrument(&self) -> Option<InstrumentId> {
        match self {
            Sub::Book { instr, .. }
            | Sub::GroupedBook { instr, .. }
            | Sub::Ticker { instr, .. }
            | Sub::IncrementalTicker { instr }
            | Sub::Quote { instr } => Some(*instr),
            _ => None,
        }
    }
}

pub(super) fn selector_matches(market: &Market, selector: &Selector, instr: InstrumentId) -> bool {
    match selector {
        Selector::Instrument(i) => *i == instr,
        Selector::KindCurrency { kind, currency } => {
            market.kind_matches(instr, kind) && market.currency_matches(instr, currency)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn channel_names_resolve_against_the_catalogue() {
        let now = ticktrade_core::Utc::from_millis(1_767_254_400_000);
        let (catalogue, infos) = crate::market::builtin_catalogue(now).unwrap();
        let market = Market::new(catalogue, infos, 1, 0, now);
        let perp = market.find("BTC-PERPETUAL").unwrap();
        let r = |n: &str| Sub::resolve(&market, n);
        assert_eq!(r("book.BTC-PERPETUAL.100ms"), Some(Sub::Book { instr: perp, interval: Interval::Ms100 }));
        assert_eq!(
            r("book.BTC-PERPETUAL.none.10.100ms"),
            Some(Sub::GroupedBook { instr: perp, group: 0, depth: 10, interval: Interval::Ms100 })
        );
        assert!(r("user.orders.any.any.raw").is_some());
        assert!(r("user.trades.BTC-PERPETUAL.100ms").is_some());
        assert!(r("user.portfolio.btc").is_some());
        assert!(r("user.mmp_trigger.btc_usd").is_some());
        assert!(r("user.mmp_trigger.any").is_some());
        assert!(r("deribit_price_index.btc_usd").is_some());
        assert!(r("incremental_ticker.BTC-PERPETUAL").is_some());
        assert!(r("trades.future.BTC.100ms").is_some());
        assert!(r("book.BTC-PERPETUAL.raw").is_some_and(|c| c.is_public_raw()));
        for name in [
            "book.NOPE.100ms",
            "book.BTC-PERPETUAL.50ms",
            "book.BTC-PERPETUAL.none.50.100ms",
            "nonsense",
            "",
            "user.orders.x.y.z.w",
            "deribit_price_index.zzz",
            "user.portfolio.xyz",
            "user.mmp_trigger.xyz_usd",
        ] {
            assert_eq!(r(name), None, "{name}");
        }
    }
}
