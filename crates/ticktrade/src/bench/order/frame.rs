//! `OrderFrame`: a client-role WebSocket text frame carrying one limit order, encoded, masked
//! and framed in place in one 1 KiB-aligned block that holds everything the work reads: the
//! mask state, `FixedOrderEncoder` (every constant of the request inline) and the frame buffer,
//! about nine cache lines of one page.
//!
//! Owns: the block's layout, where the order's frame header (`ticktrade_net::frame`) goes, whole-word
//! masking (the bytes after the payload are slack of the encoder's region).
//! Must not: allocate after `new`, read anything outside the block and the order, or panic.
//!
//! Why: live, an order is built after a wait in `read` or a sleep, with the caches and TLB
//! emptied by whatever ran meanwhile; the cost is then set by how many distinct cache lines
//! and pages the work touches (docs/PERFORMANCE.md §4.2, §8). `OrderEncoder` + `WsWriter` read
//! the writer's and encoder's structs, two heap prefixes, `itoa`'s digit table, a powers-of-ten
//! table and literals in `.rodata`, and call libc's `memcpy` for variable-length runs.

use ticktrade_core::InstrumentSpec;
use ticktrade_deribit_proto::order::{LimitOrder, OrderEncoder};
use ticktrade_deribit_proto::order_fixed::{ENCODE_ROOM, FixedOrderEncoder};

use ticktrade_net::frame::{Opcode, WsWriter, apply_mask, encode_header, next_mask};

/// Where the payload starts in the block's buffer; the header (at most 8 bytes for a masked
/// frame under 64 KiB) goes right in front of it.
const PAYLOAD_AT: usize = 16;

/// One order frame built in place (see the module docs). `repr(C)`: the fields in this order,
/// the small ones in the first line with the start of the encoder.
#[repr(C, align(1024))]
pub struct OrderFrame {
    /// xorshift32 state for mask keys.
    mask_state: u32,
    frame_start: u16,
    frame_end: u16,
    /// `None` when the instrument does not fit the fixed layout: every order takes the `Vec`
    /// path then.
    encoder: Option<FixedOrderEncoder>,
    buf: [u8; PAYLOAD_AT + ENCODE_ROOM],
}

impl OrderFrame {
    /// A block for `spec`'s instrument; `seed` starts the mask keys.
    pub fn new(spec: &InstrumentSpec, seed: u32) -> Box<OrderFrame> {
        Box::new(OrderFrame {
            mask_state: seed | 1,
            frame_start: 0,
            frame_end: 0,
            encoder: FixedOrderEncoder::new(spec),
            buf: [0; PAYLOAD_AT + ENCODE_ROOM],
        })
    }

    /// Encodes, masks and frames `order` with `id`; `false` if the fixed encoder declined it
    /// (then encode it with `OrderEncoder` and a `WsWriter`).
    #[inline(always)]
    pub fn build(&mut self, id: u64, order: &LimitOrder) -> bool {
        let Some(end) = self.encoder.as_ref().and_then(|e| e.encode_into(&mut self.buf, PAYLOAD_AT, id, order)) else {
            return false;
        };
        let len = end - PAYLOAD_AT;
        let key = next_mask(&mut self.mask_state);
        // Whole words: the bytes past `end` are slack of the encoder's region.
        let words = len.div_ceil(8) * 8;
        apply_mask(&mut self.buf[PAYLOAD_AT..PAYLOAD_AT + words], key);
        let (header, n) = encode_header(true, Opcode::Text, Some(key), len);
        // `len` < ENCODE_ROOM < 65 536: the 7-bit (6 bytes with the key) or 16-bit (8 bytes)
        // length form. Copies of a constant length, so no call to `memcpy` (see above).
        debug_assert_eq!(n, if len < 126 { 6 } else { 8 });
        let start = if len < 126 {
            self.buf[PAYLOAD_AT - 6..PAYLOAD_AT].copy_from_slice(&header[..6]);
            PAYLOAD_AT - 6
        } else {
            self.buf[PAYLOAD_AT - 8..PAYLOAD_AT].copy_from_slice(&header[..8]);
            PAYLOAD_AT - 8
        };
        self.frame_start = start as u16;
        self.frame_end = end as u16;
        true
    }

    /// The last frame built.
    #[inline(always)]
    pub fn frame(&self) -> &[u8] {
        &self.buf[usize::from(self.frame_start)..usize::from(self.frame_end)]
    }
}

/// Builds each order's frame in an [`OrderFrame`] block, or, for an order its fixed encoder
/// declines, with `OrderEncoder` into a `WsWriter` the caller owns; remembers which, so
/// [`OrderFramer::frame`] gives the last frame built (the hot loop's and `OrderClient`'s one
/// order path).
pub struct OrderFramer {
    block: Box<OrderFrame>,
    /// The last frame is in the caller's writer, not in `block`.
    in_writer: bool,
    fallback: OrderEncoder,
}

impl OrderFramer {
    /// A framer for `spec`'s instrument; `seed` starts the block's mask keys.
    pub fn new(spec: &InstrumentSpec, seed: u32) -> OrderFramer {
        OrderFramer { block: OrderFrame::new(spec, seed), in_writer: false, fallback: OrderEncoder::new(spec) }
    }

    /// Encodes, masks and frames `order` with `id`: in the block, or in `writer` if the fixed
    /// encoder declines it.
    #[inline(always)]
    pub fn build(&mut self, id: u64, order: &LimitOrder, writer: &mut WsWriter) {
        self.in_writer = !self.block.build(id, order);
        if self.in_writer {
            self.build_declined(id, order, writer);
        }
    }

    /// The `Vec` encoder and framer, for an order the fixed encoder declined.
    #[cold]
    #[inline(never)]
    fn build_declined(&self, id: u64, order: &LimitOrder, writer: &mut WsWriter) {
        self.fallback.encode(writer.begin(), id, order);
        writer.finish(Opcode::Text);
    }

    /// The last frame built; `writer` is the one passed to [`OrderFramer::build`].
    #[inline(always)]
    pub fn frame<'a>(&'a self, writer: &'a WsWriter) -> &'a [u8] {
        if self.in_writer { writer.frame() } else { self.block.frame() }
    }
}
