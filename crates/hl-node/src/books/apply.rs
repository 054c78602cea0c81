//! Applying one raw book diff to one coin's L4 book, and what each resting order keeps.
//!
//! Owns: the apply rules for a single diff (diff `px` and `sz` are
//! authoritative; any `open`/`triggered` status may rest, the `new` diff decides; triggered and
//! Ioc residuals rest as `Gtc`), the touched-price bookkeeping the L2 skip rule reads, and
//! [`OrderMeta`], which keeps a resting order's user and cloid as raw bytes when they are
//! `0x`-hex and its common words as indices, so resting an order allocates nothing in the
//! usual case.
//! Must not: see other coins or the block as a whole (`Books::plan_block`/`apply_coin` do):
//! one coin's diffs can then be applied on any thread.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use ticktrade_book::l4::L4Book;
use ticktrade_core::Side;
use ticktrade_hl_proto::node::{BookDiff, NodeOrder, OrderStatus, RawBookDiff, is_bid};

use super::{ApplyError, Touched};
use crate::coins::CoinSpec;

/// What an order on the book keeps besides id, side, price and size, held without a heap
/// allocation in the usual case: the user (`0x` + 40 lowercase hex digits) and the cloid
/// (`0x` + 32) as their raw bytes, `triggerCondition`/`orderType`/`tif` as indices of the
/// words they almost always are. Any other text (another length, upper case, a rare word) is
/// kept exactly in `rare`, so [`OrderMeta::text`] gives back what came in, byte for byte.
/// It also keeps the order's original size (`origSz`, in the coin's size units), which
/// `frontendOpenOrders` and `orderStatus` print.
/// Small (64 bytes) and free of pointers in the usual case: a book's orders stay compact and
/// removing one frees nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderMeta {
    timestamp: u64,
    orig_sz: i64,
    user: [u8; 20],
    cloid: [u8; 16],
    /// `trigger_condition`, `order_type`, `tif`: an index of [`COMMON_WORDS`], [`NO_WORD`]
    /// (`tif` only: none), or [`RARE_WORD`] (the text is in `rare`).
    words: [u8; 3],
    /// [`TPSL`], [`REDUCE_ONLY`], [`HAS_CLOID`], [`RARE_USER`], [`RARE_CLOID`].
    flags: u8,
    rare: Option<Box<RareText>>,
}

/// The texts of an [`OrderMeta`] that do not fit its compact form.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct RareText {
    user: Option<Box<str>>,
    cloid: Option<Box<str>>,
    words: [Option<Box<str>>; 3],
}

const TPSL: u8 = 1;
const REDUCE_ONLY: u8 = 2;
const HAS_CLOID: u8 = 4;
const RARE_USER: u8 = 8;
const RARE_CLOID: u8 = 16;
const NO_WORD: u8 = 0xfe;
const RARE_WORD: u8 = 0xff;
const TRIGGER_CONDITION: usize = 0;
const ORDER_TYPE: usize = 1;
const TIF: usize = 2;

/// An [`OrderMeta`] spelled out, as `l4Book` prints it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MetaText {
    pub user: Box<str>,
    pub timestamp: u64,
    pub trigger_condition: Cow<'static, str>,
    pub is_position_tpsl: bool,
    pub reduce_only: bool,
    pub order_type: Cow<'static, str>,
    pub tif: Option<Cow<'static, str>>,
    pub cloid: Option<Box<str>>,
}

/// The values `triggerCondition`, `orderType` and `tif` take on almost every order
/// (in hl-node's order-status events), kept as an index; anything else is copied.
const COMMON_WORDS: [&str; 15] = [
    "N/A",
    "Triggered",
    "Limit",
    "Market",
    "Stop Market",
    "Stop Limit",
    "Take Profit Market",
    "Take Profit Limit",
    "Gtc",
    "Alo",
    "Ioc",
    "FrontendMarket",
    "LiquidationMarket",
    "Vault",
    "Scale",
];
const TRIGGERED: u8 = 1;
const GTC: u8 = 8;

#[inline]
fn word_index(text: &str) -> Option<u8> {
    Some(match text {
        "N/A" => 0,
        "Triggered" => 1,
        "Limit" => 2,
        "Market" => 3,
        "Stop Market" => 4,
        "Stop Limit" => 5,
        "Take Profit Market" => 6,
        "Take Profit Limit" => 7,
        "Gtc" => 8,
        "Alo" => 9,
        "Ioc" => 10,
        "FrontendMarket" => 11,
        "LiquidationMarket" => 12,
        "Vault" => 13,
        "Scale" => 14,
        _ => return None,
    })
}

/// Lowercase hex digit values; 0xff for every other byte (the reference for [`hex_bytes`]).
#[cfg(test)]
const HEX: [u8; 256] = {
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
};

/// [`hex_bytes`] one digit at a time, by table: the reference it is tested against.
#[cfg(test)]
fn hex_bytes_table<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.as_bytes().strip_prefix(b"0x").filter(|d| d.len() == 2 * N)?;
    let mut out = [0u8; N];
    let mut bad = 0u8;
    for (byte, pair) in out.iter_mut().zip(digits.chunks_exact(2)) {
        let (hi, lo) = (HEX[usize::from(pair[0])], HEX[usize::from(pair[1])]);
        bad |= hi | lo;
        *byte = (hi << 4) | (lo & 0x0f);
    }
    (bad & 0xf0 == 0).then_some(out)
}

/// The bytes of `0x` + `2 N` lowercase hex digits (`N` a multiple of 4); `None` for any other
/// text. Eight digits at a time, in a `u64` (about a third of the work of a table per digit;
/// `OrderMeta::from_node` decodes 72 digits per order).
#[inline]
fn hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let digits = text.as_bytes().strip_prefix(b"0x").filter(|d| d.len() == 2 * N && N.is_multiple_of(4))?;
    let mut out = [0u8; N];
    for (chunk, bytes) in digits.chunks_exact(8).zip(out.chunks_exact_mut(4)) {
        let x = u64::from_le_bytes([chunk[0], chunk[1], chunk[2], chunk[3], chunk[4], chunk[5], chunk[6], chunk[7]]);
        if x & HIGH != 0 {
            return None;
        }
        // Per byte (all below 0x80, so adding at most 0x50 carries into no other byte): the
        // high bit says whether the byte is at least 0x30, 0x3a, 0x61, 0x67.
        let ge_0 = x + 0x50 * ONES;
        let ge_colon = x + 0x46 * ONES;
        let ge_a = x + 0x1f * ONES;
        let ge_g = x + 0x19 * ONES;
        let valid = ((ge_0 & !ge_colon) | (ge_a & !ge_g)) & HIGH;
        if valid != HIGH {
            return None;
        }
        // '0'..'9' -> low nibble; 'a'..'f' -> low nibble + 9.
        let nibbles = (x & (0x0f * ONES)) + ((ge_a & HIGH) >> 7) * 9;
        // Byte pairs (first digit high): 16-bit lanes, then packed into 4 bytes.
        let pairs = ((nibbles & 0x000f_000f_000f_000f) << 4) | ((nibbles >> 8) & 0x000f_000f_000f_000f);
        let packed = (pairs | (pairs >> 8)) & 0x0000_ffff_0000_ffff;
        let packed = (packed | (packed >> 16)) as u32;
        bytes.copy_from_slice(&packed.to_le_bytes());
    }
    Some(out)
}

fn hex_text(bytes: &[u8]) -> Box<str> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(2 + 2 * bytes.len());
    text.push_str("0x");
    for b in bytes {
        text.push(char::from(DIGITS[usize::from(b >> 4)]));
        text.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    text.into_boxed_str()
}

impl OrderMeta {
    /// `orig_sz`: the original size in the coin's size units.
    pub(super) fn from_node(user: &str, order: &NodeOrder<'_>, orig_sz: i64) -> OrderMeta {
        let mut meta = OrderMeta {
            timestamp: order.timestamp,
            orig_sz,
            user: [0; 20],
            cloid: [0; 16],
            words: [0; 3],
            flags: (u8::from(order.is_position_tpsl) * TPSL) | (u8::from(order.reduce_only) * REDUCE_ONLY),
            rare: None,
        };
        match hex_bytes(user) {
            Some(bytes) => meta.user = bytes,
            None => {
                meta.flags |= RARE_USER;
                meta.rare_mut().user = Some(user.into());
            }
        }
        if let Some(cloid) = order.cloid {
            meta.flags |= HAS_CLOID;
            match hex_bytes(cloid) {
                Some(bytes) => meta.cloid = bytes,
                None => {
                    meta.flags |= RARE_CLOID;
                    meta.rare_mut().cloid = Some(cloid.into());
                }
            }
        }
        meta.set_word(TRIGGER_CONDITION, Some(&order.trigger_condition));
        meta.set_word(ORDER_TYPE, Some(&order.order_type));
        meta.set_word(TIF, order.tif);
        meta
    }

    fn rare_mut(&mut self) -> &mut RareText {
        self.rare.get_or_insert_with(Box::default)
    }

    fn set_word(&mut self, i: usize, text: Option<&str>) {
        self.words[i] = match text {
            None => NO_WORD,
            Some(text) => match word_index(text) {
                Some(index) => index,
                None => {
                    self.rare_mut().words[i] = Some(text.into());
                    RARE_WORD
                }
            },
        };
    }

    /// Sets a word to one of [`COMMON_WORDS`].
    fn set_common_word(&mut self, i: usize, index: u8) {
        self.words[i] = index;
        if let Some(rare) = &mut self.rare {
            rare.words[i] = None;
            // One representation per text (`==` compares them): no empty box.
            if **rare == RareText::default() {
                self.rare = None;
            }
        }
    }

    pub fn timestamp(&self) -> u64 {
        self.timestamp
    }

    /// The original size, in the coin's size units.
    pub fn orig_sz(&self) -> i64 {
        self.orig_sz
    }

    /// Whether the order is `user`'s (an address as the node writes it, or any other text
    /// compared exactly).
    pub fn is_user(&self, user: &UserKey) -> bool {
        match (&user.bytes, self.flags & RARE_USER != 0) {
            (Some(bytes), false) => *bytes == self.user,
            (None, true) => self.rare.as_ref().and_then(|r| r.user.as_deref()) == Some(user.text.as_str()),
            _ => false,
        }
    }

    /// Whether the order carries the client order id `cloid`.
    pub fn has_cloid(&self, cloid: &str) -> bool {
        if self.flags & HAS_CLOID == 0 {
            return false;
        }
        if self.flags & RARE_CLOID != 0 {
            return self.rare.as_ref().and_then(|r| r.cloid.as_deref()) == Some(cloid);
        }
        hex_bytes::<16>(cloid).is_some_and(|bytes| bytes == self.cloid)
    }

    fn word(&self, i: usize) -> Option<Cow<'static, str>> {
        match self.words[i] {
            NO_WORD => None,
            RARE_WORD => {
                let text = self.rare.as_ref().and_then(|r| r.words[i].as_deref()).unwrap_or_default();
                Some(Cow::Owned(text.to_owned()))
            }
            index => Some(Cow::Borrowed(COMMON_WORDS.get(usize::from(index)).copied().unwrap_or_default())),
        }
    }

    /// The order's details spelled out, exactly as they came in (after the apply rules).
    pub fn text(&self) -> MetaText {
        let rare = self.rare.as_deref();
        let user = match rare.and_then(|r| r.user.clone()) {
            Some(user) if self.flags & RARE_USER != 0 => user,
            _ => hex_text(&self.user),
        };
        let cloid = (self.flags & HAS_CLOID != 0).then(|| match rare.and_then(|r| r.cloid.clone()) {
            Some(cloid) if self.flags & RARE_CLOID != 0 => cloid,
            _ => hex_text(&self.cloid),
        });
        MetaText {
            user,
            timestamp: self.timestamp,
            trigger_condition: self.word(TRIGGER_CONDITION).unwrap_or_default(),
            is_position_tpsl: self.flags & TPSL != 0,
            reduce_only: self.flags & REDUCE_ONLY != 0,
            order_type: self.word(ORDER_TYPE).unwrap_or_default(),
            tif: self.word(TIF),
            cloid,
        }
    }
}

/// A user address to look orders up by, parsed once ([`OrderMeta::is_user`]).
#[derive(Clone, Debug)]
pub struct UserKey {
    text: String,
    bytes: Option<[u8; 20]>,
}

impl UserKey {
    /// `user` as given; an address is compared in lower case, as the node writes it.
    pub fn new(user: &str) -> UserKey {
        let text = user.to_ascii_lowercase();
        let bytes = hex_bytes(&text);
        UserKey { text, bytes }
    }
}

pub(super) fn apply_diff(
    spec: &CoinSpec,
    book: &mut L4Book<OrderMeta>,
    touched: &mut Touched,
    diff: &BookDiff<'_>,
    statuses: &[OrderStatus<'_>],
    resting: &FxHashMap<u64, u32>,
) -> Result<(), ApplyError> {
    let name = || spec.name.clone();
    let px = spec.parse_px(diff.px).ok_or_else(|| ApplyError::BadNumber { coin: name(), oid: diff.oid })?;
    let book_err = |source| ApplyError::Book { coin: spec.name.clone(), source };
    match diff.raw_book_diff {
        RawBookDiff::New { sz } => {
            let sz = spec.parse_sz(sz).ok_or_else(|| ApplyError::BadNumber { coin: name(), oid: diff.oid })?;
            let status = resting
                .get(&diff.oid)
                .and_then(|&i| statuses.get(i as usize))
                .ok_or_else(|| ApplyError::MissingStatus { coin: name(), oid: diff.oid })?;
            let side_text = diff.side.unwrap_or(status.order.side);
            let side = match is_bid(side_text) {
                Some(true) => Side::Buy,
                Some(false) => Side::Sell,
                None => return Err(ApplyError::BadSide { coin: name(), oid: diff.oid }),
            };
            if sz.is_zero() {
                return Ok(());
            }
            // `origSz` as the status gives it (the resting size when it does not).
            let orig_sz = status.order.orig_sz.and_then(|text| spec.parse_sz(text)).unwrap_or(sz);
            let mut meta = OrderMeta::from_node(status.user, &status.order, orig_sz.raw());
            if status.order.is_trigger || status.status == "triggered" {
                meta.set_common_word(TRIGGER_CONDITION, TRIGGERED);
                meta.set_common_word(TIF, GTC);
                if let Ok(t) = ticktrade_hl_proto::time::parse_node_time(status.time) {
                    meta.timestamp = t.as_millis() as u64;
                }
            } else if status.order.tif == Some("Ioc") {
                meta.set_common_word(TIF, GTC);
            }
            touched.add(side, px.raw());
            book.add(diff.oid, side, px, sz, meta).map_err(book_err)
        }
        RawBookDiff::Update { new_sz, .. } => {
            let sz = spec.parse_sz(new_sz).ok_or_else(|| ApplyError::BadNumber { coin: name(), oid: diff.oid })?;
            // Lowered in place, or moved to the back at the diff's price if it grew (one
            // look-up of the id). Touched: the level it rested at, and the diff's price.
            let (side, was) = book.update(diff.oid, px, sz).map_err(book_err)?;
            touched.add(side, was.raw());
            touched.add(side, px.raw());
            Ok(())
        }
        RawBookDiff::Remove => match book.remove(diff.oid) {
            Some(order) => {
                touched.add(order.side, order.price.raw());
                Ok(())
            }
            None => Err(book_err(ticktrade_book::l4::L4Error::UnknownId(diff.oid))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node_order<'a>(cloid: Option<&'a str>, words: [&'a str; 2], tif: Option<&'a str>) -> NodeOrder<'a> {
        NodeOrder {
            coin: Cow::Borrowed("BTC"),
            side: "B",
            limit_px: "1.0",
            sz: "1.0",
            oid: 1,
            timestamp: 1_777_582_003_304,
            trigger_condition: Cow::Borrowed(words[0]),
            is_trigger: false,
            trigger_px: "0.0",
            is_position_tpsl: true,
            reduce_only: false,
            order_type: Cow::Borrowed(words[1]),
            orig_sz: None,
            tif,
            cloid,
        }
    }

    /// Whatever the node wrote comes back byte for byte, compact or not.
    #[test]
    fn texts_round_trip_exactly() {
        let users = [
            "0xb1edfeccf03f35d2268f5dc4013508a6eb52c702",
            "0x0000000000000000000000000000000000000000",
            "0xB1EDFECCF03F35D2268F5DC4013508A6EB52C702",
            "0xb1edfeccf03f35d2268f5dc4013508a6eb52c70",
            "0xb1edfeccf03f35d2268f5dc4013508a6eb52c7022",
            "0xb1edfeccf03f35d2268f5dc4013508a6eb52c70g",
            "1xb1edfeccf03f35d2268f5dc4013508a6eb52c702",
            "vault:é",
            "",
        ];
        let cloids = [
            None,
            Some("0x14904991131967010000000003807292"),
            Some("0xffffffffffffffffffffffffffffffff"),
            Some("0x1490499113196701000000000380729"),
            Some("0x1490499113196701000000000380729Z"),
            Some("cloid"),
        ];
        let words = [["N/A", "Limit"], ["Price below 3.5", "Stop Market"], ["Triggered", "Some new type"]];
        let tifs = [None, Some("Alo"), Some("Gtc"), Some("Ioc"), Some("FrontendMarket"), Some("Day")];
        for user in users {
            for cloid in cloids {
                for w in words {
                    for tif in tifs {
                        let order = node_order(cloid, w, tif);
                        let meta = OrderMeta::from_node(user, &order, 0);
                        let text = meta.text();
                        assert_eq!(&*text.user, user);
                        assert_eq!(text.cloid.as_deref(), cloid);
                        assert_eq!(text.trigger_condition, w[0]);
                        assert_eq!(text.order_type, w[1]);
                        assert_eq!(text.tif.as_deref(), tif);
                        assert_eq!(text.timestamp, order.timestamp);
                        assert!(text.is_position_tpsl && !text.reduce_only);
                        assert_eq!(meta, OrderMeta::from_node(user, &order, 0));
                    }
                }
            }
        }
    }

    /// The eight-at-a-time decoder agrees with the table one on every one-character change
    /// of a user and a cloid (each digit replaced by every ASCII character and a few others),
    /// on every length, and on the prefix.
    #[test]
    fn hex_bytes_equals_the_table_decoder() {
        let user = "0x0123456789abcdefb1edfeccf03f35d2268f5dc4";
        let cloid = "0xfedcba98765432100000000003807292";
        let mut texts = vec![user.to_owned(), cloid.to_owned(), String::new(), "0x".to_owned()];
        let others = ['é', '\u{80}', '\u{ff}', '\u{100}', 'ÿ'];
        for base in [user, cloid] {
            let chars: Vec<char> = base.chars().collect();
            for at in 0..chars.len() {
                for c in (0u8..0x80).map(char::from).chain(others) {
                    let mut changed = chars.clone();
                    changed[at] = c;
                    texts.push(changed.into_iter().collect());
                }
            }
            for len in 0..base.len() + 3 {
                texts.push(base.chars().cycle().take(len).collect());
            }
        }
        let mut valid = 0;
        for text in &texts {
            assert_eq!(hex_bytes::<20>(text), hex_bytes_table::<20>(text), "{text:?}");
            assert_eq!(hex_bytes::<16>(text), hex_bytes_table::<16>(text), "{text:?}");
            valid += usize::from(hex_bytes::<20>(text).is_some()) + usize::from(hex_bytes::<16>(text).is_some());
        }
        // The two bases; per base its "0x" kept, each digit's 16 valid replacements (itself
        // included), and its own length; and the user's first 34 characters, a cloid.
        assert_eq!(valid, 2 + (2 + 16 * 40) + (2 + 16 * 32) + 2 + 1, "valid texts");
        assert_eq!(hex_bytes::<16>(cloid).map(|b| (b[0], b[7], b[15])), Some((0xfe, 0x10, 0x92)));
    }

    #[test]
    fn usual_orders_are_compact_and_rules_override_words() {
        let user = "0xca1d1650d13b8fa936dca4efdf1f487766f2abd1";
        let order = node_order(Some("0x14904991131967010000000003807292"), ["N/A", "Limit"], Some("Ioc"));
        let meta = OrderMeta::from_node(user, &order, 0);
        assert!(meta.rare.is_none(), "no allocation for the usual order");
        assert_eq!(meta.user[0], 0xca);
        assert_eq!(meta.cloid[15], 0x92);
        let mut rare = OrderMeta::from_node(user, &node_order(None, ["Price above 7", "Stop Limit"], Some("Day")), 0);
        assert!(rare.rare.is_some());
        rare.set_common_word(TRIGGER_CONDITION, TRIGGERED);
        rare.set_common_word(TIF, GTC);
        let text = rare.text();
        assert_eq!((&*text.trigger_condition, text.tif.as_deref()), ("Triggered", Some("Gtc")));
        let same = OrderMeta::from_node(user, &node_order(None, ["Triggered", "Stop Limit"], Some("Gtc")), 0);
        assert_eq!(rare, same, "one representation per text");
        assert!(std::mem::size_of::<OrderMeta>() <= 64, "{}", std::mem::size_of::<OrderMeta>());
    }
}
