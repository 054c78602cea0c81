//! The subject scheme: which NATS subject carries which upstream channel, and back.
//!
//! ```text
//! <root>.book.<instrument>      book changes and snapshots (upstream `book.<instrument>.100ms`)
//! <root>.trades.<instrument>    trades (upstream `trades.<instrument>.100ms`)
//! <root>.ticker.<instrument>    tickers (upstream `ticker.<instrument>.100ms`)
//! <root>.snapshot.<instrument>  request–reply: the publisher's latest book of the instrument
//! <root>.rpc                    request–reply: a public JSON-RPC method the publisher answers
//! ```
//!
//! `<root>` is `ticktrade.deribit` unless the operator picks another (one per venue or
//! environment). One subject per instrument and kind lets an edge take exactly the instruments
//! its clients ask for, and a wildcard (`ticktrade.deribit.book.*`) take them all.
//!
//! Owns: subject names and their validation.
//! Must not: do I/O.

/// The default subject root.
pub const DEFAULT_ROOT: &str = "ticktrade.deribit";

/// What a data subject carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Book,
    Trades,
    Ticker,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Book, Kind::Trades, Kind::Ticker];

    fn token(self) -> &'static str {
        match self {
            Kind::Book => "book",
            Kind::Trades => "trades",
            Kind::Ticker => "ticker",
        }
    }
}

/// Why a name cannot be part of a subject.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SubjectError {
    #[error("{0:?} cannot be a NATS subject token (empty, or holds '.', '*', '>' or whitespace)")]
    BadToken(String),
}

/// The subjects under one root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Subjects {
    root: String,
}

impl Default for Subjects {
    fn default() -> Subjects {
        Subjects { root: DEFAULT_ROOT.to_owned() }
    }
}

/// Whether `token` may stand between two dots of a subject.
fn valid_token(token: &str) -> bool {
    !token.is_empty() && !token.chars().any(|c| c == '.' || c == '*' || c == '>' || c.is_whitespace())
}

impl Subjects {
    /// Subjects under `root` (dot-separated tokens, no wildcards).
    pub fn try_new(root: &str) -> Result<Subjects, SubjectError> {
        if root.split('.').all(valid_token) {
            Ok(Subjects { root: root.to_owned() })
        } else {
            Err(SubjectError::BadToken(root.to_owned()))
        }
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    /// The data subject of `kind` for `instrument`.
    pub fn data(&self, kind: Kind, instrument: &str) -> Result<String, SubjectError> {
        self.leaf(kind.token(), instrument)
    }

    /// The request subject for `instrument`'s book snapshot.
    pub fn snapshot(&self, instrument: &str) -> Result<String, SubjectError> {
        self.leaf("snapshot", instrument)
    }

    /// The wildcard the publisher answers snapshot requests on.
    pub fn snapshot_all(&self) -> String {
        format!("{}.snapshot.*", self.root)
    }

    /// The request subject for public JSON-RPC methods.
    pub fn rpc(&self) -> String {
        format!("{}.rpc", self.root)
    }

    /// The instrument of a snapshot request subject.
    pub fn snapshot_instrument<'a>(&self, subject: &'a str) -> Option<&'a str> {
        let rest = subject.strip_prefix(self.root.as_str())?.strip_prefix(".snapshot.")?;
        valid_token(rest).then_some(rest)
    }

    fn leaf(&self, kind: &str, instrument: &str) -> Result<String, SubjectError> {
        if !valid_token(instrument) {
            return Err(SubjectError::BadToken(instrument.to_owned()));
        }
        Ok(format!("{}.{kind}.{instrument}", self.root))
    }
}

/// The upstream channel a data subject carries: `book.BTC-PERPETUAL.100ms` ↔ (`Book`,
/// `BTC-PERPETUAL`). Only the 100 ms feeds travel on the bus: they are what an unauthorised
/// upstream session may subscribe to, and every other book, trade and ticker channel a client
/// asks for is computed or relayed from them.
pub fn parse_channel(channel: &str) -> Option<(Kind, &str)> {
    let rest = channel.strip_suffix(".100ms")?;
    let (kind, instrument) = rest.split_once('.')?;
    let kind = match kind {
        "book" => Kind::Book,
        "trades" => Kind::Trades,
        "ticker" => Kind::Ticker,
        _ => return None,
    };
    valid_token(instrument).then_some((kind, instrument))
}

/// The upstream channel of `kind` for `instrument`.
pub fn channel(kind: Kind, instrument: &str) -> String {
    format!("{}.{instrument}.100ms", kind.token())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn subjects_follow_the_scheme() {
        let s = Subjects::default();
        assert_eq!(s.data(Kind::Book, "BTC-PERPETUAL").unwrap(), "ticktrade.deribit.book.BTC-PERPETUAL");
        assert_eq!(s.data(Kind::Trades, "ETH-27DEC24-3000-C").unwrap(), "ticktrade.deribit.trades.ETH-27DEC24-3000-C");
        assert_eq!(s.data(Kind::Ticker, "BTC_USDC").unwrap(), "ticktrade.deribit.ticker.BTC_USDC");
        assert_eq!(s.snapshot("BTC-PERPETUAL").unwrap(), "ticktrade.deribit.snapshot.BTC-PERPETUAL");
        assert_eq!(s.snapshot_all(), "ticktrade.deribit.snapshot.*");
        assert_eq!(s.rpc(), "ticktrade.deribit.rpc");
        assert_eq!(s.snapshot_instrument("ticktrade.deribit.snapshot.BTC-PERPETUAL"), Some("BTC-PERPETUAL"));
        assert_eq!(s.snapshot_instrument("ticktrade.deribit.book.BTC-PERPETUAL"), None);
        assert_eq!(s.snapshot_instrument("other.snapshot.BTC-PERPETUAL"), None);
    }

    #[test]
    fn bad_tokens_are_refused() {
        let s = Subjects::default();
        for bad in ["", "BTC.PERP", "BTC*", ">", "BTC PERP"] {
            assert_eq!(s.data(Kind::Book, bad), Err(SubjectError::BadToken(bad.to_owned())));
        }
        assert!(Subjects::try_new("prod.deribit").is_ok());
        assert!(Subjects::try_new("prod..deribit").is_err());
        assert!(Subjects::try_new("prod.>").is_err());
        assert!(Subjects::try_new("").is_err());
    }

    #[test]
    fn only_the_100ms_feeds_map_to_subjects() {
        assert_eq!(parse_channel("book.BTC-PERPETUAL.100ms"), Some((Kind::Book, "BTC-PERPETUAL")));
        assert_eq!(parse_channel("trades.ETH-PERPETUAL.100ms"), Some((Kind::Trades, "ETH-PERPETUAL")));
        assert_eq!(parse_channel("ticker.BTC-PERPETUAL.100ms"), Some((Kind::Ticker, "BTC-PERPETUAL")));
        assert_eq!(parse_channel("book.BTC-PERPETUAL.raw"), None);
        assert_eq!(parse_channel("book.BTC-PERPETUAL.none.10.100ms"), None);
        assert_eq!(parse_channel("user.orders.BTC-PERPETUAL.100ms"), None);
    }

    proptest! {
        #[test]
        fn channel_and_subject_round_trip(instrument in "[A-Z0-9_-]{1,24}", k in 0usize..3) {
            let kind = Kind::ALL[k];
            let ch = channel(kind, &instrument);
            prop_assert_eq!(parse_channel(&ch), Some((kind, instrument.as_str())));
            let subject = Subjects::default().data(kind, &instrument).unwrap();
            prop_assert_eq!(subject.split('.').count(), 4);
            prop_assert!(subject.ends_with(&instrument));
        }
    }
}
