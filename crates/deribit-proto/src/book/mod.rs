//! The order-book notifications: `book.{instrument}.{interval}` (snapshot and change, entries
//! `[action, price, amount]`) and the grouped `book.{instrument}.{group}.{depth}.{interval}`
//! (a full top-N window, entries `[price, amount]`), decoded and encoded by hand.
//!
//! Owns: the frame grammar of both notifications, the entry forms, and turning their numbers
//! into exact `Decimal`s or, with an `InstrumentSpec`, into `Price`/`Qty`.
//! Must not: allocate once the caller's buffers are warm, panic on any input, or apply
//! anything to a book (that is `ticktrade_book`; this only reports what the frame says).
//!
//! Why by hand: a hand scanner took ~69–125 ns per 316 B change on the calibration host
//! (docs/PERFORMANCE.md §2) against ~430 ns for serde typed decoding;
//! `cargo bench -p ticktrade-deribit-proto --bench book_decode` runs both on the same frames. The decoder takes a fixed-prefix fast path for
//! the envelope Deribit always sends (`{"jsonrpc":"2.0","method":"subscription","params":`)
//! and otherwise walks members in any order; both paths share the same member code.

mod encode;
mod units;

pub use encode::{encode_book, encode_book_units};

use ticktrade_core::{Decimal, InstrumentSpec, NumberError, Side};

use crate::scan::{DecodeError, Scanner, offset};

pub use ticktrade_book::l2::{Action, LevelUpdate};

/// What a book notification is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BookKind {
    /// The full book; every entry is `new`. The first notification of a subscription.
    Snapshot,
    /// Deltas since `prev_change_id`.
    Change,
    /// A grouped book's full top-N window (no `type` member): it replaces the previous window,
    /// and every entry is reported as [`Action::New`].
    Window,
}

impl BookKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            BookKind::Snapshot => "snapshot",
            BookKind::Change => "change",
            BookKind::Window => "window",
        }
    }
}

/// Everything in a book notification except its entries. Borrows from the frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BookHeader<'a> {
    /// `params.channel` (empty when only the `data` object was decoded).
    pub channel: &'a str,
    pub instrument: &'a str,
    pub kind: BookKind,
    pub change_id: u64,
    /// Absent on snapshots and grouped windows (`null` is read as absent).
    pub prev_change_id: Option<u64>,
    /// Time of the last change in the book, ms since the epoch.
    pub timestamp_ms: u64,
}

/// One entry with exact decimal price and amount, for callers without an instrument spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecimalLevel {
    pub side: Side,
    pub action: Action,
    pub price: Decimal,
    pub amount: Decimal,
}

/// Receives the entries of a book notification in frame order.
pub trait BookSink {
    /// Called once before the first entry.
    fn clear(&mut self);
    /// One entry; an error (e.g. a price off the tick grid) aborts the decode.
    fn entry(&mut self, side: Side, action: Action, price: Decimal, amount: Decimal) -> Result<(), NumberError>;
}

impl BookSink for Vec<DecimalLevel> {
    fn clear(&mut self) {
        Vec::clear(self);
    }

    #[inline]
    fn entry(&mut self, side: Side, action: Action, price: Decimal, amount: Decimal) -> Result<(), NumberError> {
        self.push(DecimalLevel { side, action, price, amount });
        Ok(())
    }
}

/// Converts entries to `Price`/`Qty` with an instrument's spec; off-grid values are errors.
pub struct UnitsSink<'s, 'o> {
    pub spec: &'s InstrumentSpec,
    pub out: &'o mut Vec<LevelUpdate>,
}

impl BookSink for UnitsSink<'_, '_> {
    fn clear(&mut self) {
        self.out.clear();
    }

    #[inline]
    fn entry(&mut self, side: Side, action: Action, price: Decimal, amount: Decimal) -> Result<(), NumberError> {
        let price = units::price(self.spec, price)?;
        let qty = units::qty(self.spec, amount)?;
        self.out.push(LevelUpdate { side, action, price, qty });
        Ok(())
    }
}

/// Decodes a whole book notification frame into exact decimals.
pub fn decode_book<'a>(frame: &'a [u8], out: &mut Vec<DecimalLevel>) -> Result<BookHeader<'a>, DecodeError> {
    decode_book_into(frame, out)
}

/// Decodes a whole book notification frame into `LevelUpdate`s in `spec`'s units.
pub fn decode_book_units<'a>(
    frame: &'a [u8],
    spec: &InstrumentSpec,
    out: &mut Vec<LevelUpdate>,
) -> Result<BookHeader<'a>, DecodeError> {
    decode_book_into(frame, &mut UnitsSink { spec, out })
}

/// The envelope Deribit sends for every subscription notification, in its usual key order.
const FAST_PREFIX: &[u8] = br#"{"jsonrpc":"2.0","method":"subscription","params":"#;

/// Decodes a whole book notification frame into any sink.
pub fn decode_book_into<'a, S: BookSink>(frame: &'a [u8], sink: &mut S) -> Result<BookHeader<'a>, DecodeError> {
    sink.clear();
    let mut s = Scanner::new(frame);
    let mut header = None;
    let mut is_subscription = false;
    let mut more = if s.eat_prefix(FAST_PREFIX) {
        is_subscription = true;
        header = Some(params(&mut s, sink)?);
        s.next_item(b'}', "',' or '}'")?
    } else {
        s.open(b'{', b'}', "'{'")?
    };
    while more {
        match s.key()? {
            b"method" => {
                let at = s.pos();
                if s.str()? != "subscription" {
                    return Err(DecodeError::Unexpected { at: offset(at), expected: "method \"subscription\"" });
                }
                is_subscription = true;
            }
            b"params" => header = Some(params(&mut s, sink)?),
            _ => s.skip_value()?,
        }
        more = s.next_item(b'}', "',' or '}'")?;
    }
    s.end()?;
    if !is_subscription {
        return Err(DecodeError::Missing("method"));
    }
    header.ok_or(DecodeError::Missing("params"))
}

/// Decodes only the `data` object of a book notification (`params.data`); the header's
/// `channel` is empty.
pub fn decode_book_data<'a, S: BookSink>(data: &'a [u8], sink: &mut S) -> Result<BookHeader<'a>, DecodeError> {
    sink.clear();
    let mut s = Scanner::new(data);
    let header = data_object(&mut s, sink, "")?;
    s.end()?;
    Ok(header)
}

fn params<'a, S: BookSink>(s: &mut Scanner<'a>, sink: &mut S) -> Result<BookHeader<'a>, DecodeError> {
    let mut channel = None;
    let mut header = None;
    let mut more = s.open(b'{', b'}', "params object")?;
    while more {
        match s.key()? {
            b"channel" => channel = Some(s.str()?),
            b"data" => header = Some(data_object(s, sink, "")?),
            _ => s.skip_value()?,
        }
        more = s.next_item(b'}', "',' or '}'")?;
    }
    let mut header = header.ok_or(DecodeError::Missing("data"))?;
    header.channel = channel.ok_or(DecodeError::Missing("channel"))?;
    if !header.channel.starts_with("book.") {
        return Err(DecodeError::Unexpected { at: offset(s.pos()), expected: "a book.* channel" });
    }
    Ok(header)
}

/// Which entry form a frame uses; all entries of one frame must agree.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
enum Form {
    #[default]
    Unknown,
    Actions,
    Pairs,
}

/// The `data` members the decoder reads.
#[derive(Clone, Copy)]
enum Member {
    Type,
    Timestamp,
    PrevChangeId,
    Instrument,
    ChangeId,
    Bids,
    Asks,
    Other,
}

/// Deribit's member order in raw book notifications, with each key's bytes as written.
const DATA_ORDER: [(&[u8], Member); 7] = [
    (br#""type":"#, Member::Type),
    (br#""timestamp":"#, Member::Timestamp),
    (br#""prev_change_id":"#, Member::PrevChangeId),
    (br#""instrument_name":"#, Member::Instrument),
    (br#""change_id":"#, Member::ChangeId),
    (br#""bids":"#, Member::Bids),
    (br#""asks":"#, Member::Asks),
];

#[derive(Default)]
struct Members<'a> {
    kind: Option<BookKind>,
    instrument: Option<&'a str>,
    change_id: Option<u64>,
    prev_change_id: Option<u64>,
    timestamp_ms: Option<u64>,
    form: Form,
}

impl<'a> Members<'a> {
    #[inline]
    fn read<S: BookSink>(&mut self, member: Member, s: &mut Scanner<'a>, sink: &mut S) -> Result<(), DecodeError> {
        match member {
            Member::Type => {
                s.ws();
                let at = s.pos();
                self.kind = Some(if s.eat_prefix(br#""change""#) {
                    BookKind::Change
                } else if s.eat_prefix(br#""snapshot""#) {
                    BookKind::Snapshot
                } else {
                    return Err(match s.str_bytes() {
                        Err(DecodeError::Incomplete) => DecodeError::Incomplete,
                        _ => DecodeError::Unexpected { at: offset(at), expected: "\"snapshot\" or \"change\"" },
                    });
                });
            }
            Member::Timestamp => self.timestamp_ms = Some(s.u64()?),
            Member::PrevChangeId => self.prev_change_id = if s.null() { None } else { Some(s.u64()?) },
            Member::Instrument => self.instrument = Some(s.str()?),
            Member::ChangeId => self.change_id = Some(s.u64()?),
            Member::Bids => entries(s, Side::Buy, sink, &mut self.form)?,
            Member::Asks => entries(s, Side::Sell, sink, &mut self.form)?,
            Member::Other => s.skip_value()?,
        }
        Ok(())
    }
}

fn data_object<'a, S: BookSink>(
    s: &mut Scanner<'a>,
    sink: &mut S,
    channel: &'a str,
) -> Result<BookHeader<'a>, DecodeError> {
    let mut m = Members::default();
    let mut more = s.open(b'{', b'}', "data object")?;
    // Fast path: Deribit's own member order, matched as constant prefixes (no key scanning);
    // a member that is missing or elsewhere is picked up by the generic loop below.
    for (key, member) in DATA_ORDER {
        if more && s.eat_prefix(key) {
            m.read(member, s, sink)?;
            more = s.next_item(b'}', "',' or '}'")?;
        }
    }
    while more {
        let member = match s.key()? {
            b"type" => Member::Type,
            b"timestamp" => Member::Timestamp,
            b"prev_change_id" => Member::PrevChangeId,
            b"instrument_name" => Member::Instrument,
            b"change_id" => Member::ChangeId,
            b"bids" => Member::Bids,
            b"asks" => Member::Asks,
            _ => Member::Other,
        };
        m.read(member, s, sink)?;
        more = s.next_item(b'}', "',' or '}'")?;
    }
    let Members { kind, instrument, change_id, prev_change_id, timestamp_ms, form } = m;
    let kind = match (kind, form) {
        (Some(kind), Form::Actions | Form::Unknown) => kind,
        (None, Form::Pairs | Form::Unknown) => BookKind::Window,
        (Some(_), Form::Pairs) => {
            return Err(DecodeError::Unexpected { at: offset(s.pos()), expected: "[action, price, amount] entries" });
        }
        (None, Form::Actions) => return Err(DecodeError::Missing("type")),
    };
    Ok(BookHeader {
        channel,
        instrument: instrument.ok_or(DecodeError::Missing("instrument_name"))?,
        kind,
        change_id: change_id.ok_or(DecodeError::Missing("change_id"))?,
        prev_change_id,
        timestamp_ms: timestamp_ms.ok_or(DecodeError::Missing("timestamp"))?,
    })
}

fn entries<S: BookSink>(s: &mut Scanner<'_>, side: Side, sink: &mut S, form: &mut Form) -> Result<(), DecodeError> {
    let mut more = s.open(b'[', b']', "entry array")?;
    while more {
        s.expect(b'[', "'[' of an entry")?;
        let action = if s.peek() == Some(b'"') {
            if *form == Form::Pairs {
                return Err(s.unexpected("a price (the frame's other entries are pairs)"));
            }
            *form = Form::Actions;
            let at = s.pos();
            if s.eat_prefix(br#""new","#) {
                Action::New
            } else if s.eat_prefix(br#""change","#) {
                Action::Change
            } else if s.eat_prefix(br#""delete","#) {
                Action::Delete
            } else {
                let action = match s.str_bytes()? {
                    b"new" => Action::New,
                    b"change" => Action::Change,
                    b"delete" => Action::Delete,
                    _ => {
                        return Err(DecodeError::Unexpected {
                            at: offset(at),
                            expected: "\"new\", \"change\" or \"delete\"",
                        });
                    }
                };
                s.expect(b',', "','")?;
                action
            }
        } else {
            if *form == Form::Actions {
                return Err(s.unexpected("an action (the frame's other entries have one)"));
            }
            *form = Form::Pairs;
            Action::New
        };
        s.ws();
        let at = s.pos();
        let price = s.decimal()?;
        s.expect(b',', "','")?;
        let amount = s.decimal()?;
        s.expect(b']', "']' closing an entry")?;
        sink.entry(side, action, price, amount).map_err(|error| DecodeError::Number { at: offset(at), error })?;
        more = s.next_item(b']', "',' or ']'")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
