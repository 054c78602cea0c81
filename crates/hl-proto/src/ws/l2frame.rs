//! The `l2Book` frame encoder of the server's hot loop.
//!
//! Owns: one view's last published levels and frame. A new frame is written into a buffer the
//! caller owns and reuses (`BytesMut`, split off as shared `Bytes`, so every subscriber of the
//! view gets the same bytes without a copy), and a level equal to one of the previous frame
//! (same price, size and count) is copied from that frame instead of formatted again: in a
//! block most visible levels of a book are unchanged.
//! Must not: allocate per level, use serde, or know sockets.

use bytes::{Bytes, BytesMut};

use super::{UnitLevel, Units, write_hl_decimal};

/// Bytes reserved at a time in the caller's buffer (frames are split off it).
const CHUNK: usize = 1 << 16;

/// One `l2Book` view (a coin at one variant and `nLevels`) and the frame last sent for it.
#[derive(Clone, Debug, Default)]
pub struct L2View {
    /// `{"channel":"l2Book","data":{"coin":"…","time":` for this coin.
    prefix: Vec<u8>,
    levels: [Vec<UnitLevel>; 2],
    /// Byte range of every level's object in `frame`, per side.
    spans: [Vec<(u32, u32)>; 2],
    /// The list the next side's spans are written into (swapped with `spans[i]`).
    spare: Vec<(u32, u32)>,
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

    /// The levels of the last frame.
    pub fn levels(&self) -> (&[UnitLevel], &[UnitLevel]) {
        (&self.levels[0], &self.levels[1])
    }

    /// The last frame (empty before the first `encode`).
    pub fn frame(&self) -> &Bytes {
        &self.frame
    }

    /// True when `bids`/`asks` are what the last frame showed (nothing to send).
    pub fn unchanged(&self, bids: &[UnitLevel], asks: &[UnitLevel]) -> bool {
        !self.fresh && self.levels[0] == bids && self.levels[1] == asks
    }

    /// Forgets the last frame: the next `encode` formats every level and `unchanged` is false.
    pub fn reset(&mut self) {
        self.fresh = true;
        self.frame = Bytes::new();
        for (levels, spans) in self.levels.iter_mut().zip(&mut self.spans) {
            levels.clear();
            spans.clear();
        }
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
        if out.capacity() - out.len() < CHUNK / 4 {
            out.reserve(CHUNK);
        }
        debug_assert!(out.is_empty());
        out.extend_from_slice(&self.prefix);
        out.extend_from_slice(itoa::Buffer::new().format(time_ms).as_bytes());
        out.extend_from_slice(b",\"levels\":[");
        for (i, new) in [bids, asks].into_iter().enumerate() {
            if i == 1 {
                out.extend_from_slice(b",");
            }
            out.extend_from_slice(b"[");
            let old = &self.levels[i];
            let old_spans = &self.spans[i];
            let spans = &mut self.spare;
            spans.clear();
            let (mut j, mut k) = (0, 0);
            while k < new.len() {
                if k > 0 {
                    out.extend_from_slice(b",");
                }
                // Both lists run best first: skip old levels that rank before this one.
                while j < old.len() && ranks_before(old[j].px, new[k].px, i == 0) {
                    j += 1;
                }
                if self.fresh || old.get(j) != Some(&new[k]) {
                    let start = out.len();
                    write_level(out, scratch, units, &new[k]);
                    spans.push((start as u32, out.len() as u32));
                    k += 1;
                    continue;
                }
                // A run of levels equal to consecutive old ones is one copy of the old frame's
                // bytes (the commas between them included).
                let (j0, base) = (j, out.len() as u32);
                while k + 1 < new.len() && j + 1 < old.len() && old[j + 1] == new[k + 1] {
                    j += 1;
                    k += 1;
                }
                let (a, b) = (old_spans[j0].0, old_spans[j].1);
                out.extend_from_slice(&self.frame[a as usize..b as usize]);
                spans.extend(old_spans[j0..=j].iter().map(|&(x, y)| (x - a + base, y - a + base)));
                j += 1;
                k += 1;
            }
            out.extend_from_slice(b"]");
            std::mem::swap(&mut self.spans[i], &mut self.spare);
        }
        out.extend_from_slice(b"]}}");
        for (i, side) in [bids, asks].into_iter().enumerate() {
            self.levels[i].clear();
            self.levels[i].extend_from_slice(side);
        }
        self.fresh = false;
        self.frame = out.split().freeze();
        self.frame.clone()
    }
}

#[inline]
fn ranks_before(old_px: i64, px: i64, bid: bool) -> bool {
    if bid { old_px > px } else { old_px < px }
}

/// One level object `{"px":"…","sz":"…","n":…}`.
#[inline]
fn write_level(out: &mut BytesMut, scratch: &mut Vec<u8>, units: Units, level: &UnitLevel) {
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
