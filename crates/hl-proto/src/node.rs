//! hl-node's by-block data files: order statuses, raw book diffs and fills.
//!
//! Owns: the per-line wrapper (`Batch`) and the event types, decoded by borrowing from the
//! line (no copy of addresses or decimal strings), plus fills → trades pairing.
//! Must not: interpret prices (they stay decimal text), keep state between lines, or panic on
//! a malformed line: every decode returns a `serde_json::Error` the caller reports.
//!
//! A line is decoded in two steps: `Batch::parse` reads the wrapper and keeps each event as raw
//! JSON, then each event is decoded on its own, so one bad event spoils one coin, not a block.

use std::borrow::Cow;
use std::fmt;

use serde::de::{Deserializer, Error as _, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

pub mod fast;

/// Text borrowed from the line when it has no escapes, owned otherwise.
pub type Str<'a> = Cow<'a, str>;

/// One line of a by-block stream: `{local_time, block_time, block_number, events}`.
#[derive(Debug, Deserialize)]
pub struct Batch<'a> {
    pub local_time: &'a str,
    pub block_time: &'a str,
    pub block_number: u64,
    #[serde(borrow)]
    pub events: Vec<&'a RawValue>,
}

impl<'a> Batch<'a> {
    pub fn parse(line: &'a str) -> Result<Batch<'a>, serde_json::Error> {
        serde_json::from_str(line)
    }
}

/// A line decoded in one pass with every event typed: the fast path. Any error (bad syntax or
/// one bad event) fails the whole line; the caller then falls back to [`Batch`] and decodes
/// event by event, so a damaged event still spoils only its coin.
#[derive(Debug, Deserialize)]
pub struct TypedBatch<'a, T> {
    pub local_time: &'a str,
    pub block_time: &'a str,
    pub block_number: u64,
    pub events: Vec<T>,
}

impl<'a, T: Deserialize<'a>> TypedBatch<'a, T> {
    pub fn parse(line: &'a str) -> Result<TypedBatch<'a, T>, serde_json::Error> {
        serde_json::from_str(line)
    }
}

/// Decodes a line in one typed pass like [`TypedBatch::parse`], but appends its events to
/// `out` (a buffer the caller keeps from line to line) instead of a new `Vec`. On an error
/// `out` is left as it was.
pub fn parse_events_into<'a, T: Deserialize<'a>>(
    line: &'a str,
    out: &mut Vec<T>,
) -> Result<fast::Header<'a>, serde_json::Error> {
    use serde::de::DeserializeSeed;
    let len = out.len();
    let mut de = serde_json::Deserializer::from_str(line);
    let parsed = LineSeed { out: &mut *out }.deserialize(&mut de).and_then(|header| de.end().map(|()| header));
    if parsed.is_err() {
        out.truncate(len);
    }
    parsed
}

/// The wrapper of a line, its events appended to `out`.
struct LineSeed<'o, T> {
    out: &'o mut Vec<T>,
}

impl<'de, T: Deserialize<'de>> serde::de::DeserializeSeed<'de> for LineSeed<'_, T> {
    type Value = fast::Header<'de>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for LineSeed<'_, T> {
    type Value = fast::Header<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a by-block line")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let out = self.out;
        let (mut local_time, mut block_time, mut block_number, mut events) = (None, None, None, false);
        while let Some(key) = map.next_key::<&'de str>()? {
            match key {
                "local_time" => local_time = Some(map.next_value()?),
                "block_time" => block_time = Some(map.next_value()?),
                "block_number" => block_number = Some(map.next_value()?),
                "events" => {
                    map.next_value_seed(EventsSeed { out: &mut *out })?;
                    events = true;
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !events {
            return Err(A::Error::missing_field("events"));
        }
        Ok(fast::Header {
            local_time: local_time.ok_or_else(|| A::Error::missing_field("local_time"))?,
            block_time: block_time.ok_or_else(|| A::Error::missing_field("block_time"))?,
            block_number: block_number.ok_or_else(|| A::Error::missing_field("block_number"))?,
        })
    }
}

/// A line's `events` array, each appended to `out`.
struct EventsSeed<'o, T> {
    out: &'o mut Vec<T>,
}

impl<'de, T: Deserialize<'de>> serde::de::DeserializeSeed<'de> for EventsSeed<'_, T> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de, T: Deserialize<'de>> Visitor<'de> for EventsSeed<'_, T> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of events")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(event) = seq.next_element::<T>()? {
            self.out.push(event);
        }
        Ok(())
    }
}

/// Statuses that may put an order on the book; the matching `new` diff decides.
fn status_may_rest(status: &str) -> bool {
    status == "open" || status == "triggered"
}

/// An order status decoded only if it may put an order on the book (`open`/`triggered`):
/// for any other status the `order` object is skipped unread (only checked to be JSON).
/// Strings with escapes are not borrowed here and fail the decode (the caller's fallback
/// decodes them with [`OrderStatus`]).
#[derive(Debug)]
pub struct RestingStatus<'a>(pub Option<OrderStatus<'a>>);

impl<'de> Deserialize<'de> for RestingStatus<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<RestingStatus<'de>, D::Error> {
        deserializer.deserialize_map(RestingVisitor)
    }
}

struct RestingVisitor;

impl<'de> Visitor<'de> for RestingVisitor {
    type Value = RestingStatus<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an order status object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<RestingStatus<'de>, A::Error> {
        let (mut time, mut user, mut status) = (None::<&'de str>, None::<&'de str>, None::<&'de str>);
        let mut order: Option<NodeOrder<'de>> = None;
        let mut skipped = false;
        while let Some(key) = map.next_key::<&'de str>()? {
            let duplicate = match key {
                "time" => time.replace(map.next_value()?).is_some(),
                "user" => user.replace(map.next_value()?).is_some(),
                "status" => status.replace(map.next_value()?).is_some(),
                "order" if skipped || order.is_some() => true,
                "order" if status.is_some_and(|s| !status_may_rest(s)) => {
                    map.next_value::<IgnoredAny>()?;
                    skipped = true;
                    false
                }
                "order" => {
                    order = Some(map.next_value()?);
                    false
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                    false
                }
            };
            if duplicate {
                return Err(A::Error::custom(format_args!("duplicate field `{key}`")));
            }
        }
        let status = status.ok_or_else(|| A::Error::missing_field("status"))?;
        if !status_may_rest(status) {
            return Ok(RestingStatus(None));
        }
        Ok(RestingStatus(Some(OrderStatus {
            time: time.ok_or_else(|| A::Error::missing_field("time"))?,
            user: user.ok_or_else(|| A::Error::missing_field("user"))?,
            status: Cow::Borrowed(status),
            order: order.ok_or_else(|| A::Error::missing_field("order"))?,
        })))
    }
}

/// Finds `"block_number":N` in a line that does not decode, so a damaged line can still be
/// placed in the block sequence.
pub fn scan_block_number(line: &str) -> Option<u64> {
    let at = line.find("\"block_number\":")? + "\"block_number\":".len();
    let digits: &str = line[at..].trim_start();
    let end = digits.find(|c: char| !c.is_ascii_digit()).unwrap_or(digits.len());
    digits[..end].parse().ok()
}

/// Every coin named (`"coin":"X"`) in a line that does not decode: the coins it may have touched.
pub fn scan_coins(line: &str) -> Vec<&str> {
    let mut coins: Vec<&str> = Vec::new();
    let mut rest = line;
    while let Some(at) = rest.find("\"coin\":\"") {
        rest = &rest[at + 8..];
        let Some(end) = rest.find('"') else { break };
        let coin = &rest[..end];
        if !coins.contains(&coin) {
            coins.push(coin);
        }
        rest = &rest[end..];
    }
    coins
}

/// An order as the node writes it inside a status (and inside snapshot entries).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct NodeOrder<'a> {
    #[serde(borrow)]
    pub coin: Str<'a>,
    pub side: &'a str,
    pub limit_px: &'a str,
    pub sz: &'a str,
    pub oid: u64,
    pub timestamp: u64,
    #[serde(borrow)]
    pub trigger_condition: Str<'a>,
    pub is_trigger: bool,
    pub trigger_px: &'a str,
    #[serde(default)]
    pub is_position_tpsl: bool,
    #[serde(default)]
    pub reduce_only: bool,
    #[serde(borrow)]
    pub order_type: Str<'a>,
    #[serde(default)]
    pub orig_sz: Option<&'a str>,
    #[serde(default)]
    pub tif: Option<&'a str>,
    #[serde(default)]
    pub cloid: Option<&'a str>,
}

/// One event of `node_order_statuses_by_block`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct OrderStatus<'a> {
    pub time: &'a str,
    pub user: &'a str,
    #[serde(borrow)]
    pub status: Str<'a>,
    #[serde(borrow)]
    pub order: NodeOrder<'a>,
}

impl OrderStatus<'_> {
    /// Statuses that may put an order on the book; the matching `new` diff decides.
    pub fn may_rest(&self) -> bool {
        status_may_rest(&self.status)
    }
}

/// The change a raw diff makes to one resting order.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub enum RawBookDiff<'a> {
    New {
        sz: &'a str,
    },
    Update {
        #[serde(rename = "origSz")]
        orig_sz: &'a str,
        #[serde(rename = "newSz")]
        new_sz: &'a str,
    },
    Remove,
}

/// One event of `node_raw_book_diffs_by_block`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct BookDiff<'a> {
    pub user: &'a str,
    pub oid: u64,
    #[serde(borrow)]
    pub coin: Str<'a>,
    #[serde(default)]
    pub side: Option<&'a str>,
    pub px: &'a str,
    #[serde(borrow)]
    pub raw_book_diff: RawBookDiff<'a>,
}

/// The fill half of a `node_fills_by_block` event (the fields a trade needs).
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct Fill<'a> {
    #[serde(borrow)]
    pub coin: Str<'a>,
    pub px: &'a str,
    pub sz: &'a str,
    pub side: &'a str,
    pub time: u64,
    pub hash: &'a str,
    pub oid: u64,
    pub crossed: bool,
    pub tid: u64,
}

/// One event of `node_fills_by_block`: `[user, fill]`.
#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
pub struct NodeFill<'a>(pub &'a str, #[serde(borrow)] pub Fill<'a>);

/// A trade as the public `trades` channel shows it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct WsTrade<'a> {
    pub coin: &'a str,
    pub side: &'a str,
    pub px: &'a str,
    pub sz: &'a str,
    pub hash: &'a str,
    pub time: u64,
    pub tid: u64,
    pub users: [&'a str; 2],
}

/// Side text the node writes: `B`/`A`, or `Bid`/`Ask` in the docs' examples.
pub fn is_bid(side: &str) -> Option<bool> {
    match side {
        "B" | "Bid" => Some(true),
        "A" | "Ask" => Some(false),
        _ => None,
    }
}

/// Pairs the two fills of each trade by `(coin, tid)` (not by adjacency), in the order the
/// first fill of each pair appears. A fill whose partner is missing (one-sided outcome fills)
/// becomes a trade with its own user on both sides, its `crossed` flag deciding the aggressor.
pub fn trades_from_fills<'a>(fills: &'a [NodeFill<'a>]) -> Vec<WsTrade<'a>> {
    let mut trades: Vec<WsTrade<'a>> = Vec::with_capacity(fills.len() / 2 + 1);
    trades_from_fills_into(fills, &mut Vec::new(), &mut trades);
    trades
}

/// [`trades_from_fills`] into buffers the caller keeps from line to line: `trades` gets the
/// trades appended, `used` is scratch.
pub fn trades_from_fills_into<'a>(fills: &'a [NodeFill<'a>], used: &mut Vec<bool>, trades: &mut Vec<WsTrade<'a>>) {
    used.clear();
    used.resize(fills.len(), false);
    for i in 0..fills.len() {
        if used[i] {
            continue;
        }
        used[i] = true;
        let NodeFill(user, ref fill) = fills[i];
        let partner = (i + 1..fills.len()).find(|&j| {
            let other = &fills[j].1;
            !used[j] && other.tid == fill.tid && other.coin == fill.coin && other.side != fill.side
        });
        let (buyer, seller, ask_fill) = match partner {
            Some(j) => {
                used[j] = true;
                let other = &fills[j];
                if is_bid(fill.side) == Some(true) { (user, other.0, &other.1) } else { (other.0, user, fill) }
            }
            None => (user, user, fill),
        };
        let aggressor = if partner.is_none() {
            if fill.crossed {
                fill.side
            } else if is_bid(fill.side) == Some(true) {
                "A"
            } else {
                "B"
            }
        } else if ask_fill.crossed {
            "A"
        } else {
            "B"
        };
        trades.push(WsTrade {
            coin: &fill.coin,
            side: aggressor,
            px: fill.px,
            sz: fill.sz,
            hash: fill.hash,
            time: fill.time,
            tid: fill.tid,
            users: [buyer, seller],
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example(name: &str) -> String {
        let path = format!("{}/../../testdata/hyperliquid/examples/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read_to_string(path).unwrap()
    }

    #[test]
    fn decodes_recorded_diff_line() {
        let line = example("node_raw_book_diffs_by_block.line.json");
        let batch = Batch::parse(line.trim()).unwrap();
        assert_eq!(batch.block_number, 978_995_377);
        let diffs: Vec<BookDiff<'_>> = batch.events.iter().map(|e| serde_json::from_str(e.get()).unwrap()).collect();
        assert_eq!(diffs.len(), 3);
        assert_eq!(diffs[0].raw_book_diff, RawBookDiff::New { sz: "0.5" });
        assert_eq!(diffs[1].raw_book_diff, RawBookDiff::Remove);
        assert_eq!(diffs[0].px, "76450.0");
        let text = example("raw_book_diff.update.event.json");
        let update: BookDiff<'_> = serde_json::from_str(&text).unwrap();
        assert!(matches!(update.raw_book_diff, RawBookDiff::Update { .. }));
    }

    #[test]
    fn decodes_statuses_including_triggers() {
        let line = example("node_order_statuses_by_block.line.trimmed.json");
        let compact: serde_json::Value = serde_json::from_str(&line).unwrap();
        let text = compact.to_string();
        let batch = Batch::parse(&text).unwrap();
        let statuses: Vec<OrderStatus<'_>> =
            batch.events.iter().map(|e| serde_json::from_str(e.get()).unwrap()).collect();
        assert_eq!(statuses.len(), 3);
        assert_eq!(statuses[1].status, "open");
        assert!(statuses[1].may_rest());
        let lifecycle: Vec<serde_json::Value> =
            serde_json::from_str(&example("order_status.trigger_lifecycle.events.json")).unwrap();
        for entry in &lifecycle {
            let text = entry["event"].to_string();
            let status: OrderStatus<'_> = serde_json::from_str(&text).unwrap();
            assert!(status.order.is_trigger);
            assert_eq!(status.order.tif, None);
        }
    }

    #[test]
    fn one_pass_decode_matches_event_by_event() {
        let line = example("node_order_statuses_by_block.line.trimmed.json");
        let text = serde_json::from_str::<serde_json::Value>(&line).unwrap().to_string();
        let batch = Batch::parse(&text).unwrap();
        let each: Vec<OrderStatus<'_>> = batch.events.iter().map(|e| serde_json::from_str(e.get()).unwrap()).collect();
        let all = TypedBatch::<OrderStatus<'_>>::parse(&text).unwrap();
        assert_eq!(all.events, each);
        assert_eq!(all.block_time, batch.block_time);
        let resting = TypedBatch::<RestingStatus<'_>>::parse(&text).unwrap();
        let kept: Vec<OrderStatus<'_>> = resting.events.into_iter().filter_map(|r| r.0).collect();
        let expected: Vec<OrderStatus<'_>> = each.iter().filter(|s| s.may_rest()).cloned().collect();
        assert!(!expected.is_empty() && expected.len() < each.len());
        assert_eq!(kept, expected);
        // A non-resting status's order is skipped unread; a resting one missing its order fails.
        let skipped = r#"{"time":"t","user":"u","status":"canceled","order":{"coin":1}}"#;
        assert!(serde_json::from_str::<RestingStatus<'_>>(skipped).unwrap().0.is_none());
        let broken = r#"{"time":"t","user":"u","status":"open","order":{"coin":1}}"#;
        assert!(serde_json::from_str::<RestingStatus<'_>>(broken).is_err());
        let twice = r#"{"time":"t","time":"t","user":"u","status":"open","order":{}}"#;
        assert!(serde_json::from_str::<RestingStatus<'_>>(twice).is_err());
        // One bad event fails the whole typed line (the caller falls back to `Batch`).
        let diffs = example("node_raw_book_diffs_by_block.line.json");
        let bad = diffs.trim().replacen(r#""oid":"#, r#""oid":"x","o":"#, 1);
        assert!(TypedBatch::<BookDiff<'_>>::parse(diffs.trim()).is_ok());
        assert!(TypedBatch::<BookDiff<'_>>::parse(&bad).is_err());
    }

    #[test]
    fn fills_become_the_documented_trades() {
        let line = example("node_fills_by_block.line.json");
        let batch = Batch::parse(line.trim()).unwrap();
        let fills: Vec<NodeFill<'_>> = batch.events.iter().map(|e| serde_json::from_str(e.get()).unwrap()).collect();
        let trades = trades_from_fills(&fills);
        let expected: serde_json::Value =
            serde_json::from_str(&example("ws.trades.from_fills_block_978995416.json")).unwrap();
        assert_eq!(serde_json::to_value(&trades).unwrap(), expected["data"]);
    }

    /// The buffered one-pass decode gives what `TypedBatch` gives, appended, and leaves the
    /// buffer as it was on a bad line.
    #[test]
    fn parses_events_into_a_kept_buffer() {
        let line = example("node_fills_by_block.line.json");
        let typed = TypedBatch::<NodeFill<'_>>::parse(line.trim()).unwrap();
        let mut out: Vec<NodeFill<'_>> = typed.events[..1].to_vec();
        let header = parse_events_into(line.trim(), &mut out).unwrap();
        assert_eq!((header.block_number, header.block_time), (typed.block_number, typed.block_time));
        assert_eq!(out[1..], typed.events[..]);
        let mut trades = Vec::new();
        trades_from_fills_into(&out[1..], &mut Vec::new(), &mut trades);
        assert_eq!(trades, trades_from_fills(&typed.events));
        let bad = line.trim().replacen(r#""tid":"#, r#""tid":"x","t":"#, 1);
        assert!(parse_events_into(&bad, &mut out).is_err());
        let missing = line.trim().replacen(r#""block_number""#, r#""block_numbe""#, 1);
        assert!(parse_events_into(&missing, &mut out).is_err());
        assert_eq!(out.len(), 1 + typed.events.len());
    }

    #[test]
    fn scans_damaged_lines() {
        let line =
            r#"{"local_time":"x","block_time":"y","block_number": 42,"events":[{"coin":"ETH","px":"1"},{"coin":"@3","#;
        assert_eq!(scan_block_number(line), Some(42));
        assert_eq!(scan_coins(line), vec!["ETH", "@3"]);
        assert_eq!(scan_block_number("{\"events\":[]"), None);
    }
}
