//! The `l2Book` frame encoder of the server's hot loop.
//!
//! Owns: one view's last published levels and frame. A new frame is written into a buffer the
//! caller owns and reuses (`BytesMut`, split off as shared `Bytes`, so every subscriber of the
//! view gets the same bytes without a copy), and a level equal to one of the previous frame
//! (same price, size and count) is copied from that frame instead of formatted again: in a
//! block most visible levels of a book are unchanged. The view keeps each shown level's byte
//! length in the last frame (both sides in one list), so a run of unchanged levels is one copy,
//! and [`L2View::encode_changed`] compares and encodes in one pass, writing nothing when the
//! shown levels are unchanged.
//! Must not: allocate per level, use serde, or know sockets.

use bytes::{Bytes, BytesMut};
use ticktrade_core::hint::prefetch_lines;

use super::{UnitLevel, Units, write_hl_decimal};

thread_local! {
    /// The lists the sides' new levels are written into before the view's own lists copy
    /// them: lists per thread stay in cache, where spare lists per view were a cold write.
    static SPARE: std::cell::RefCell<[Vec<Shown>; 2]> = const { std::cell::RefCell::new([Vec::new(), Vec::new()]) };
}

/// Most cache lines [`L2View::prefetch`] asks for per list (levels, frame): 4 KB, a frame of
/// about 60 levels; the hardware prefetcher follows a longer walk by itself.
const PREFETCH_LINES: usize = 64;

/// Bytes reserved at a time in the caller's buffer (frames are split off it).
const CHUNK: usize = 1 << 16;

/// A level of the last frame and the length of its object in that frame. Kept in one list
/// with the level (the same 24 bytes as a `UnitLevel`, whose padding holds the length), so the
/// encoder finds both in the cache lines the "did it change" comparison just read: a separate
/// list of byte ranges was the encoder's costliest cache miss. A length, not an offset: it
/// does not change when the level is copied into the next frame at another place, so a run of
/// copied levels is one `memcpy` of the list (rewriting each copied level's offset was a fifth
/// of the encoder's own time in perf); the encoder adds the lengths up as it walks the levels.
#[derive(Clone, Copy, Debug, Default)]
struct Shown {
    px: i64,
    sz: i64,
    n: u32,
    /// Bytes of the level's object `{…}` in `frame`; the next level's starts one byte (a
    /// comma) after it.
    len: u32,
}

impl Shown {
    #[inline]
    fn same(&self, level: &UnitLevel) -> bool {
        self.px == level.px && self.sz == level.sz && self.n == level.n
    }

    fn level(&self) -> UnitLevel {
        UnitLevel { px: self.px, sz: self.sz, n: self.n }
    }
}

/// One `l2Book` view (a coin at one variant and `nLevels`) and the frame last sent for it.
#[derive(Clone, Debug, Default)]
pub struct L2View {
    /// `{"channel":"l2Book","data":{"coin":"…","time":` for this coin.
    prefix: Vec<u8>,
    /// The last frame's levels, bids then asks (`deep[0].0` of them bids), with their byte
    /// offsets in `frame`: one list, so a view's levels are one contiguous region (a list per
    /// side was one more cold region per view and block).
    shown: Vec<Shown>,
    /// Per side: how many levels the last frame showed and the deepest one's price, kept
    /// inline (a copy of `shown`'s length and last price) so the engine's skip check reads no
    /// heap: that load was the l2 stage's costliest cache miss.
    deep: [(u32, i64); 2],
    /// Offset of each side's first level object in `frame` (just past the side's `[`).
    begins: [u32; 2],
    frame: Bytes,
    /// No frame was encoded yet (an empty book still gets its first frame).
    fresh: bool,
}

impl L2View {
    pub fn new(coin: &str) -> L2View {
        let mut prefix = b"{\"channel\":\"l2Book\",\"data\":{\"coin\":".to_vec();
        let _ = serde_json::to_writer(&mut prefix, coin);
        prefix.extend_from_slice(b",\"time\":");
        L2View { prefix, fresh: true, ..L2View::default() }
    }

    /// The levels of the last frame (a copy, for tests and tools).
    pub fn levels(&self) -> (Vec<UnitLevel>, Vec<UnitLevel>) {
        let [bids, asks] = self.sides();
        (bids.iter().map(Shown::level).collect(), asks.iter().map(Shown::level).collect())
    }

    /// How many levels the last frame showed on `side` (0 bids, 1 asks) and the price of the
    /// deepest of them (0 when none).
    pub fn deepest(&self, side: usize) -> (usize, i64) {
        let (n, px) = self.deep[side];
        (n as usize, px)
    }

    /// True before the first `encode` (and after `reset`): there is no last frame to keep.
    pub fn is_fresh(&self) -> bool {
        self.fresh
    }

    /// The last frame (empty before the first `encode`).
    pub fn frame(&self) -> &Bytes {
        &self.frame
    }

    /// True when `bids`/`asks` are what the last frame showed (nothing to send).
    pub fn unchanged(&self, bids: &[UnitLevel], asks: &[UnitLevel]) -> bool {
        let same = |shown: &[Shown], new: &[UnitLevel]| {
            shown.len() == new.len() && shown.iter().zip(new).all(|(s, l)| s.same(l))
        };
        let [old_bids, old_asks] = self.sides();
        !self.fresh && same(old_bids, bids) && same(old_asks, asks)
    }

    /// Forgets the last frame: the next `encode` formats every level and `unchanged` is false.
    pub fn reset(&mut self) {
        self.fresh = true;
        self.frame = Bytes::new();
        self.shown.clear();
        self.begins = [0; 2];
        self.deep = [(0, 0); 2];
    }

    /// Starts loading (a prefetch, `ticktrade_core::hint`) every cache line of the last
    /// frame's levels and bytes, what the next `encode` reads: called for all the views of a
    /// coin before the first is encoded, their misses overlap each other and the encoding,
    /// where the encoder met each view's cold lines one at a time (the first read of a view's
    /// levels was the encoder's costliest instruction in perf). No effect on any value.
    pub fn prefetch(&self) {
        prefetch_lines(&self.shown, PREFETCH_LINES);
        prefetch_lines(&self.frame[..], PREFETCH_LINES);
    }

    /// The last frame's levels per side (bids, asks).
    fn sides(&self) -> [&[Shown]; 2] {
        let (bids, asks) = self.shown.split_at((self.deep[0].0 as usize).min(self.shown.len()));
        [bids, asks]
    }

    /// True when this view's last frame is `other`'s own (taken with [`share`](Self::share),
    /// and neither view encoded since): their last levels are then the same, without reading
    /// them (the frames' bytes are alive in both, so no later frame can have the same address).
    pub fn shares_frame_with(&self, other: &L2View) -> bool {
        !self.fresh
            && !self.frame.is_empty()
            && self.frame.as_ptr() == other.frame.as_ptr()
            && self.frame.len() == other.frame.len()
    }

    /// Takes `other`'s last frame as this view's own and returns it: for a view of the same
    /// coin whose levels are `other`'s this block (e.g. `nSigFigs: 5`, which keeps every level
    /// of prices with at most five significant figures, beside the full-precision view), so
    /// the frame is shared instead of encoded again. Later `encode`s copy from it as usual.
    pub fn share(&mut self, other: &L2View) -> Bytes {
        debug_assert_eq!(self.prefix, other.prefix, "a view shares only its own coin's frames");
        self.shown.clear();
        self.shown.extend_from_slice(&other.shown);
        self.deep = other.deep;
        self.begins = other.begins;
        self.fresh = other.fresh;
        self.frame = other.frame.clone();
        self.frame.clone()
    }

    /// Encodes the frame for `bids`/`asks` at `time_ms` into `out` and returns it; the view
    /// remembers it. `scratch` is a reusable number buffer.
    pub fn encode(
        &mut self,
        out: &mut BytesMut,
        scratch: &mut Vec<u8>,
        time_ms: u64,
        units: Units,
        bids: &[UnitLevel],
        asks: &[UnitLevel],
    ) -> Bytes {
        self.encode_inner(out, scratch, time_ms, units, [bids, asks], false).unwrap_or_default()
    }

    /// [`encode`](Self::encode) when `bids`/`asks` differ from what the last frame showed (or
    /// there is no last frame); `None`, with the view and `out` as they were, when they are
    /// the same (what [`unchanged`](Self::unchanged) tells): one pass over the levels instead
    /// of a comparison and then the encoder's own level-by-level comparison.
    pub fn encode_changed(
        &mut self,
        out: &mut BytesMut,
        scratch: &mut Vec<u8>,
        time_ms: u64,
        units: Units,
        bids: &[UnitLevel],
        asks: &[UnitLevel],
    ) -> Option<Bytes> {
        self.encode_inner(out, scratch, time_ms, units, [bids, asks], true)
    }

    /// The encoder; with `only_changed`, returns `None` (and leaves `self` and `out` as they
    /// were) when every level equals the last frame's at the same position.
    fn encode_inner(
        &mut self,
        out: &mut BytesMut,
        scratch: &mut Vec<u8>,
        time_ms: u64,
        units: Units,
        sides: [&[UnitLevel]; 2],
        only_changed: bool,
    ) -> Option<Bytes> {
        if out.capacity() - out.len() < CHUNK / 4 {
            out.reserve(CHUNK);
        }
        debug_assert!(out.is_empty());
        // The last frame starts with the prefix (its line is next to the levels the copies
        // below read): the prefix's own heap line would be one more cold read per view.
        match self.frame.get(..self.prefix.len()) {
            Some(prefix) if !self.fresh => out.extend_from_slice(prefix),
            _ => out.extend_from_slice(&self.prefix),
        }
        out.extend_from_slice(itoa::Buffer::new().format(time_ms).as_bytes());
        out.extend_from_slice(b",\"levels\":[");
        let mut begins = [0u32; 2];
        // Nothing differs from the last frame so far: every new level was copied from an old
        // one (in order, so with as many levels as before, each is the old one at its place).
        let mut same = !self.fresh;
        // The thread's spare lists (taken out and put back: no allocation once they have grown).
        let mut next = SPARE.take();
        for (i, new) in sides.into_iter().enumerate() {
            if i == 1 {
                out.extend_from_slice(b",");
            }
            out.extend_from_slice(b"[");
            begins[i] = out.len() as u32;
            let old = self.sides()[i];
            // Where `old[j]`'s object starts in the last frame (kept up to date as `j` moves).
            let mut at = self.begins[i] as usize;
            let next = &mut next[i];
            next.clear();
            same &= old.len() == new.len();
            let (mut j, mut k) = (0, 0);
            while k < new.len() {
                if k > 0 {
                    out.extend_from_slice(b",");
                }
                // Both lists run best first: skip old levels that rank before this one.
                while j < old.len() && ranks_before(old[j].px, new[k].px, i == 0) {
                    at += old[j].len as usize + 1;
                    j += 1;
                }
                let level = &new[k];
                if self.fresh || !old.get(j).is_some_and(|o| o.same(level)) {
                    let start = out.len();
                    write_level(out, scratch, units, level);
                    next.push(Shown { px: level.px, sz: level.sz, n: level.n, len: (out.len() - start) as u32 });
                    same = false;
                    k += 1;
                    continue;
                }
                // A run of levels equal to consecutive old ones is one copy of the old frame's
                // bytes (the commas between them included), and of their entries.
                let (j0, a) = (j, at);
                let mut b = at + old[j].len as usize;
                while k + 1 < new.len() && j + 1 < old.len() && old[j + 1].same(&new[k + 1]) {
                    j += 1;
                    k += 1;
                    b += 1 + old[j].len as usize;
                }
                out.extend_from_slice(&self.frame[a..b]);
                next.extend_from_slice(&old[j0..=j]);
                at = b + 1;
                j += 1;
                k += 1;
            }
            out.extend_from_slice(b"]");
        }
        if same && only_changed {
            SPARE.set(next);
            out.clear();
            return None;
        }
        // The new lists were built in the thread's hot spare lists; the view's own list (just
        // read, so in cache) takes a copy.
        self.shown.clear();
        for (i, next) in next.iter().enumerate() {
            self.shown.extend_from_slice(next);
            self.deep[i] = (next.len() as u32, next.last().map_or(0, |l| l.px));
        }
        SPARE.set(next);
        out.extend_from_slice(b"]}}");
        self.begins = begins;
        self.fresh = false;
        self.frame = out.split().freeze();
        Some(self.frame.clone())
    }
}

#[inline]
fn ranks_before(old_px: i64, px: i64, bid: bool) -> bool {
    if bid { old_px > px } else { old_px < px }
}

/// Longest level object [`write_level`] builds on the stack: two decimals of at most 22 bytes
/// (sign, 19 digits, point, a zero) when the scale is at most 18, a `u32`, the keys.
const LEVEL_MAX: usize = 96;
/// Scales above this take the general writer.
const MAX_FAST_SCALE: u8 = 18;

/// One level object `{"px":"…","sz":"…","n":…}`, built on the stack and appended in one copy
/// (units of `10^-k`, every coin's, with `k <= 18`); other units take [`write_hl_decimal`].
#[inline]
fn write_level(out: &mut BytesMut, scratch: &mut Vec<u8>, units: Units, level: &UnitLevel) {
    let fast = |unit: super::Decimal| unit.mantissa() == 1 && unit.scale() <= MAX_FAST_SCALE;
    if !(fast(units.px) && fast(units.sz)) {
        return write_level_general(out, scratch, units, level);
    }
    let mut buf = [0u8; LEVEL_MAX];
    let mut at = put(&mut buf, 0, b"{\"px\":\"");
    at = put_decimal(&mut buf, at, level.px, units.px.scale());
    at = put(&mut buf, at, b"\",\"sz\":\"");
    at = put_decimal(&mut buf, at, level.sz, units.sz.scale());
    at = put(&mut buf, at, b"\",\"n\":");
    at = put(&mut buf, at, itoa::Buffer::new().format(level.n).as_bytes());
    at = put(&mut buf, at, b"}");
    out.extend_from_slice(&buf[..at]);
}

#[inline(always)]
fn put(buf: &mut [u8; LEVEL_MAX], at: usize, bytes: &[u8]) -> usize {
    buf[at..at + bytes.len()].copy_from_slice(bytes);
    at + bytes.len()
}

/// `units` of `10^-scale` (`scale <= 18`) as [`write_hl_decimal`] writes them, into `buf` at
/// `at`; returns the end.
#[inline]
fn put_decimal(buf: &mut [u8; LEVEL_MAX], at: usize, units: i64, scale: u8) -> usize {
    let mut at = at;
    super::hl_decimal_pieces(units, scale, |piece| at = put(buf, at, piece));
    at
}

/// [`write_level`] for any units.
#[cold]
fn write_level_general(out: &mut BytesMut, scratch: &mut Vec<u8>, units: Units, level: &UnitLevel) {
    out.extend_from_slice(b"{\"px\":\"");
    scratch.clear();
    write_hl_decimal(level.px, units.px, scratch);
    out.extend_from_slice(scratch);
    out.extend_from_slice(b"\",\"sz\":\"");
    scratch.clear();
    write_hl_decimal(level.sz, units.sz, scratch);
    out.extend_from_slice(scratch);
    out.extend_from_slice(b"\",\"n\":");
    out.extend_from_slice(itoa::Buffer::new().format(level.n).as_bytes());
    out.extend_from_slice(b"}");
}

#[cfg(test)]
pub(super) fn level_text(units: Units, level: &UnitLevel) -> String {
    let (mut out, mut scratch) = (BytesMut::new(), Vec::new());
    write_level(&mut out, &mut scratch, units, level);
    String::from_utf8(out.to_vec()).unwrap_or_default()
}
