//! The Hyperliquid subject scheme (`ticktrade hl --publish` / `--upstream`): which NATS
//! subject carries which feed of which coin, and back.
//!
//! ```text
//! <root>.l2Book.<coin>.<variant>    l2Book frames of one coin at one aggregation and depth
//! <root>.trades.<coin>              trades frames of one coin
//! <root>.bbo.<coin>                 bbo frames of one coin
//! <root>.allMids                    allMids frames
//! <root>.snapshot.<data subject>    request–reply: the latest frame of that subject (not trades)
//! <root>.coins                      request–reply: the coins published, a JSON array of names
//! ```
//!
//! `<root>` is `ticktrade.hl` unless the operator picks another. A payload is the frame a
//! direct server writes to its WebSocket clients, byte for byte, with the envelope headers
//! ([`crate::envelope`]). Every carried feed is whole state (an `l2Book` frame is the top
//! levels, a `bbo` the best levels, `allMids` every mid), so the snapshot of a subject is its
//! latest frame; trades are a stream and have none.
//!
//! The coin list is asked for rather than read off the data: a quiet coin may have published
//! nothing yet, and `allMids` leaves out coins without a mid, yet an edge must know every
//! coin its publisher serves to answer a subscription to any other as a direct server does.
//!
//! A variant is one token: `full` or `s<nSigFigs>` with `m<mantissa>` when given, then
//! `-<nLevels>` (`full-20`, `s5m2-20`, `s3-20`). A coin is one token: Hyperliquid names
//! (`BTC`, `@107`, `PURR/USDC`, `xyz:TSLA`) go as they are, and any byte a token may not hold
//! (`.`, `*`, `>`, whitespace, control, non-ASCII) and `%` itself as `%XX` (upper-case hex).
//!
//! Owns: Hyperliquid subject names, the coin and variant tokens, and parsing them back.
//! Must not: do I/O, or judge which variants Hyperliquid allows (`ticktrade-hl-proto` does).

use std::fmt::Write as _;

use crate::subject::SubjectError;

/// The default subject root.
pub const HL_ROOT: &str = "ticktrade.hl";

/// An `l2Book` aggregation and depth as subscribed (`nSigFigs`, `mantissa`, `nLevels`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Variant {
    pub n_sig_figs: Option<u8>,
    pub mantissa: Option<u8>,
    pub n_levels: u16,
}

impl Variant {
    /// The subject token (`full-20`, `s5m2-20`).
    pub fn token(&self) -> String {
        let mut out = String::with_capacity(10);
        match self.n_sig_figs {
            None => out.push_str("full"),
            Some(sig) => {
                let _ = write!(out, "s{sig}");
            }
        }
        if let Some(m) = self.mantissa {
            let _ = write!(out, "m{m}");
        }
        let _ = write!(out, "-{}", self.n_levels);
        out
    }

    /// The variant of a token; `None` if it is not one.
    pub fn parse(token: &str) -> Option<Variant> {
        let (head, levels) = token.rsplit_once('-')?;
        let n_levels = number(levels)?;
        let (sig, mantissa) = match head.split_once('m') {
            Some((sig, m)) => (sig, Some(number(m)?)),
            None => (head, None),
        };
        let n_sig_figs = match sig {
            "full" => None,
            s => Some(number(s.strip_prefix('s')?)?),
        };
        Some(Variant { n_sig_figs, mantissa, n_levels })
    }
}

/// A decimal without sign, leading `+` or leading zeros (so each value has one spelling).
fn number<T: std::str::FromStr>(text: &str) -> Option<T> {
    let canonical =
        !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) && (text == "0" || !text.starts_with('0'));
    canonical.then(|| text.parse().ok()).flatten()
}

/// One carried feed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum HlSubject {
    L2Book { coin: String, variant: Variant },
    Trades { coin: String },
    Bbo { coin: String },
    AllMids,
}

impl HlSubject {
    /// Whether the feed is whole state (its latest frame is its snapshot).
    pub fn has_snapshot(&self) -> bool {
        !matches!(self, HlSubject::Trades { .. })
    }

    /// The coin of a per-coin feed.
    pub fn coin(&self) -> Option<&str> {
        match self {
            HlSubject::L2Book { coin, .. } | HlSubject::Trades { coin } | HlSubject::Bbo { coin } => Some(coin),
            HlSubject::AllMids => None,
        }
    }

    /// The subject without its root.
    fn tail(&self) -> String {
        match self {
            HlSubject::L2Book { coin, variant } => format!("l2Book.{}.{}", escape_coin(coin), variant.token()),
            HlSubject::Trades { coin } => format!("trades.{}", escape_coin(coin)),
            HlSubject::Bbo { coin } => format!("bbo.{}", escape_coin(coin)),
            HlSubject::AllMids => "allMids".to_owned(),
        }
    }

    fn parse_tail(tail: &str) -> Option<HlSubject> {
        let mut tokens = tail.split('.');
        let kind = tokens.next()?;
        let subject = match kind {
            "allMids" => HlSubject::AllMids,
            "l2Book" => {
                let coin = unescape_coin(tokens.next()?)?;
                HlSubject::L2Book { coin, variant: Variant::parse(tokens.next()?)? }
            }
            "trades" => HlSubject::Trades { coin: unescape_coin(tokens.next()?)? },
            "bbo" => HlSubject::Bbo { coin: unescape_coin(tokens.next()?)? },
            _ => return None,
        };
        tokens.next().is_none().then_some(subject)
    }
}

/// The Hyperliquid subjects under one root.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HlSubjects {
    root: String,
}

impl Default for HlSubjects {
    fn default() -> HlSubjects {
        HlSubjects { root: HL_ROOT.to_owned() }
    }
}

impl HlSubjects {
    /// Subjects under `root` (dot-separated tokens, no wildcards).
    pub fn try_new(root: &str) -> Result<HlSubjects, SubjectError> {
        crate::subject::Subjects::try_new(root).map(|s| HlSubjects { root: s.root().to_owned() })
    }

    pub fn root(&self) -> &str {
        &self.root
    }

    /// The subject carrying `feed`.
    pub fn data(&self, feed: &HlSubject) -> String {
        format!("{}.{}", self.root, feed.tail())
    }

    /// The request subject for `feed`'s latest frame (`None` for trades).
    pub fn snapshot(&self, feed: &HlSubject) -> Option<String> {
        feed.has_snapshot().then(|| format!("{}.snapshot.{}", self.root, feed.tail()))
    }

    /// The feed a data subject carries.
    pub fn parse_data(&self, subject: &str) -> Option<HlSubject> {
        let tail = subject.strip_prefix(self.root.as_str())?.strip_prefix('.')?;
        HlSubject::parse_tail(tail)
    }

    /// The feed a snapshot request asks for.
    pub fn parse_snapshot(&self, subject: &str) -> Option<HlSubject> {
        let tail = subject.strip_prefix(self.root.as_str())?.strip_prefix(".snapshot.")?;
        HlSubject::parse_tail(tail).filter(HlSubject::has_snapshot)
    }

    /// The wildcards that take every data subject (an edge follows them all).
    pub fn data_all(&self) -> [String; 4] {
        let r = &self.root;
        [format!("{r}.l2Book.>"), format!("{r}.trades.>"), format!("{r}.bbo.>"), format!("{r}.allMids")]
    }

    /// The subject the publisher answers with its coin list.
    pub fn coins(&self) -> String {
        format!("{}.coins", self.root)
    }

    /// The wildcard the publisher answers snapshot requests on.
    pub fn snapshot_all(&self) -> String {
        format!("{}.snapshot.>", self.root)
    }
}

/// Whether byte `b` stands for itself in a coin token.
fn plain(b: u8) -> bool {
    b.is_ascii_graphic() && !matches!(b, b'.' | b'*' | b'>' | b'%')
}

/// A coin name as one subject token (see the module doc).
pub fn escape_coin(coin: &str) -> String {
    let mut out = String::with_capacity(coin.len());
    for &b in coin.as_bytes() {
        if plain(b) {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

/// The coin name of a token [`escape_coin`] wrote; `None` for anything else.
pub fn unescape_coin(token: &str) -> Option<String> {
    let bytes = token.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = token.get(i + 1..i + 3)?;
                if hex.bytes().any(|h| h.is_ascii_lowercase()) {
                    return None;
                }
                let b = u8::from_str_radix(hex, 16).ok()?;
                if plain(b) {
                    return None;
                }
                out.push(b);
                i += 3;
            }
            b if plain(b) => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    if out.is_empty() {
        return None;
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn l2(coin: &str, n_sig_figs: Option<u8>, mantissa: Option<u8>) -> HlSubject {
        HlSubject::L2Book { coin: coin.to_owned(), variant: Variant { n_sig_figs, mantissa, n_levels: 20 } }
    }

    #[test]
    fn subjects_follow_the_scheme() {
        let s = HlSubjects::default();
        assert_eq!(s.data(&l2("BTC", None, None)), "ticktrade.hl.l2Book.BTC.full-20");
        assert_eq!(s.data(&l2("BTC", Some(5), Some(2))), "ticktrade.hl.l2Book.BTC.s5m2-20");
        assert_eq!(s.data(&l2("@107", Some(3), None)), "ticktrade.hl.l2Book.@107.s3-20");
        assert_eq!(s.data(&HlSubject::Trades { coin: "PURR/USDC".into() }), "ticktrade.hl.trades.PURR/USDC");
        assert_eq!(s.data(&HlSubject::Bbo { coin: "xyz:TSLA".into() }), "ticktrade.hl.bbo.xyz:TSLA");
        assert_eq!(s.data(&HlSubject::AllMids), "ticktrade.hl.allMids");
        assert_eq!(s.snapshot(&l2("ETH", Some(4), None)).unwrap(), "ticktrade.hl.snapshot.l2Book.ETH.s4-20");
        assert_eq!(s.snapshot(&HlSubject::AllMids).unwrap(), "ticktrade.hl.snapshot.allMids");
        assert_eq!(s.snapshot(&HlSubject::Trades { coin: "BTC".into() }), None);
        assert_eq!(s.parse_snapshot("ticktrade.hl.snapshot.bbo.BTC"), Some(HlSubject::Bbo { coin: "BTC".into() }));
        assert_eq!(s.parse_snapshot("ticktrade.hl.snapshot.trades.BTC"), None);
        assert_eq!(s.parse_snapshot("ticktrade.hl.bbo.BTC"), None);
        assert_eq!(s.snapshot_all(), "ticktrade.hl.snapshot.>");
        assert_eq!(s.coins(), "ticktrade.hl.coins");
        assert_eq!(s.parse_data(&s.coins()), None, "not a data subject");
        assert_eq!(s.data_all()[0], "ticktrade.hl.l2Book.>");
        assert_eq!(escape_coin("a.b c%*>é"), "a%2Eb%20c%25%2A%3E%C3%A9");
    }

    #[test]
    fn what_is_not_a_subject_of_the_scheme_parses_to_nothing() {
        let s = HlSubjects::default();
        for bad in [
            "ticktrade.hl",
            "ticktrade.hl.",
            "ticktrade.hl.l2Book.BTC",
            "ticktrade.hl.l2Book.BTC.full",
            "ticktrade.hl.l2Book.BTC.full-020",
            "ticktrade.hl.l2Book.BTC.x5-20",
            "ticktrade.hl.l2Book.BTC.full-20.more",
            "ticktrade.hl.trades.BTC%2e",
            "ticktrade.hl.trades.BTC%41",
            "ticktrade.hl.trades.BTC%4",
            "ticktrade.hl.candle.BTC",
            "ticktrade.hlx.allMids",
            "other.allMids",
        ] {
            assert_eq!(s.parse_data(bad), None, "{bad}");
        }
        assert!(HlSubjects::try_new("prod.hl").is_ok());
        assert!(HlSubjects::try_new("prod.>").is_err());
    }

    fn variant() -> impl Strategy<Value = Variant> {
        (proptest::option::of(0u8..=9), proptest::option::of(any::<u8>()), any::<u16>())
            .prop_map(|(n_sig_figs, mantissa, n_levels)| Variant { n_sig_figs, mantissa, n_levels })
    }

    fn feed() -> impl Strategy<Value = HlSubject> {
        (0usize..4, "\\PC{1,12}|[ .*>%]{1,4}", variant()).prop_map(|(k, coin, variant)| match k {
            0 => HlSubject::L2Book { coin, variant },
            1 => HlSubject::Trades { coin },
            2 => HlSubject::Bbo { coin },
            _ => HlSubject::AllMids,
        })
    }

    proptest! {
        #[test]
        fn names_round_trip(feed in feed()) {
            let s = HlSubjects::default();
            let subject = s.data(&feed);
            // Every token is a valid NATS token, and the kind and coin are where the scheme says.
            prop_assert!(subject.split('.').all(|t| !t.is_empty()
                && !t.chars().any(|c| c == '*' || c == '>' || c.is_whitespace() || !c.is_ascii())));
            prop_assert_eq!(subject.split('.').count(), match feed { HlSubject::L2Book { .. } => 5, HlSubject::AllMids => 3, _ => 4 });
            prop_assert_eq!(s.parse_data(&subject), Some(feed.clone()));
            match s.snapshot(&feed) {
                Some(request) => prop_assert_eq!(s.parse_snapshot(&request), Some(feed.clone())),
                None => prop_assert!(!feed.has_snapshot()),
            }
        }

        #[test]
        fn a_coin_token_has_one_spelling(token in "[A-Za-z0-9%.]{1,8}") {
            // Whatever parses, re-escapes to the same token.
            if let Some(coin) = unescape_coin(&token) {
                prop_assert_eq!(escape_coin(&coin), token);
            }
        }
    }
}
