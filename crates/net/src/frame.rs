//! RFC 6455 frames, both roles, written once for the whole workspace: header encode/decode
//! (7/16/64-bit lengths), masking, opcodes, control frames, close codes and the size limit, plus
//! the blocking-or-buffered reader and writer built on them ([`WsReader`], [`WsWriter`]).
//!
//! Owns: the byte layout of a frame and the rules a frame must follow (reserved bits, control
//! frames final and ≤ 125 bytes, client frames masked and server frames not, the message limit).
//! Must not: open a socket, read a clock, allocate per frame in steady state, or interpret
//! payloads. Control frames are returned to the caller, which decides to answer.
//!
//! Who uses it: the hot loop (client role, on a blocking `TcpStream` or a rustls stream, see
//! `crate::hot`), its in-process exchange sides (server role), and `ticktrade-serve` (server role:
//! shared unmasked frames written once, masked client frames read and reassembled). The async
//! clients use tokio-tungstenite and the simulator's and Hyperliquid server's `/ws` use yawc,
//! which negotiate permessage-deflate; this framer negotiates no extension.
//!
//! Why hand-written and not tungstenite's sync API: tungstenite copies every message into an
//! owned buffer (`Message::Text(Utf8Bytes)`), validates UTF-8 and queues writes in its own buffer
//! before `flush`; this framer parses a header and borrows the payload straight from its read
//! buffer, and builds an outgoing frame around a payload encoded in place.
//! `benches/framer.rs` measures both in the same run (docs/ARCHITECTURE.md, "WebSocket libraries").

use std::io;

mod rw;

pub use rw::{Message, WsReader, WsWriter};

/// Largest message accepted by default (a full Deribit snapshot of a deep book is well under
/// this); [`WsReader::with_limit`] sets another.
pub const MAX_MESSAGE: usize = 16 << 20;
/// Room reserved in front of an outgoing payload for the largest header (2 + 8 + 4 bytes).
pub const MAX_HEADER: usize = 14;
/// Largest payload of a control frame (RFC 6455 §5.5).
pub const MAX_CONTROL_PAYLOAD: usize = 125;

/// Close status codes (RFC 6455 §7.4.1) that ticktrade sends.
pub mod close {
    /// Normal closure.
    pub const NORMAL: u16 = 1000;
    /// The endpoint is going away (server shutdown).
    pub const GOING_AWAY: u16 = 1001;
    /// The peer broke the protocol.
    pub const PROTOCOL: u16 = 1002;
    /// A message broke a policy (a slow client, an unanswered heartbeat of the venue's own).
    pub const POLICY: u16 = 1008;
    /// A message larger than the limit.
    pub const TOO_BIG: u16 = 1009;
}

/// Which end of the connection we are: clients mask what they send, servers unmask.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Client,
    Server,
}

/// A frame's opcode (RFC 6455 §5.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    Continuation,
    Text,
    Binary,
    Close,
    Ping,
    Pong,
}

impl Opcode {
    /// The opcode of the low four bits of a frame's first byte, `None` if reserved.
    pub fn from_bits(bits: u8) -> Option<Opcode> {
        Some(match bits {
            0x0 => Opcode::Continuation,
            0x1 => Opcode::Text,
            0x2 => Opcode::Binary,
            0x8 => Opcode::Close,
            0x9 => Opcode::Ping,
            0xA => Opcode::Pong,
            _ => return None,
        })
    }

    /// The four bits on the wire.
    pub fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    /// Close, ping and pong.
    pub fn is_control(self) -> bool {
        matches!(self, Opcode::Close | Opcode::Ping | Opcode::Pong)
    }
}

/// Why a connection cannot go on. `Copy` so the hot path's error branch stays cheap.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WsError {
    #[error("peer closed the connection")]
    Eof,
    #[error("i/o error: {0:?}")]
    Io(io::ErrorKind),
    #[error("protocol violation: {0}")]
    Protocol(&'static str),
    #[error("message of {0} bytes exceeds the limit")]
    TooLarge(u64),
}

impl WsError {
    /// The close code to send the peer for this error (RFC 6455 §7.4.1).
    pub fn close_code(&self) -> u16 {
        match self {
            WsError::TooLarge(_) => close::TOO_BIG,
            WsError::Protocol(_) => close::PROTOCOL,
            WsError::Eof | WsError::Io(_) => close::GOING_AWAY,
        }
    }
}

impl From<io::Error> for WsError {
    #[cold]
    fn from(error: io::Error) -> WsError {
        WsError::Io(error.kind())
    }
}

/// A parsed frame header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameHeader {
    pub fin: bool,
    pub opcode: Opcode,
    pub mask: Option<[u8; 4]>,
    pub payload_len: u64,
    /// Bytes of header before the payload.
    pub header_len: usize,
}

/// Parses a frame header from the start of `buf`; `Ok(None)` if more bytes are needed.
#[inline]
pub fn parse_header(buf: &[u8]) -> Result<Option<FrameHeader>, WsError> {
    let [b0, b1, ..] = *buf else { return Ok(None) };
    if b0 & 0x70 != 0 {
        return Err(WsError::Protocol("reserved bits set (no extension was negotiated)"));
    }
    let opcode = Opcode::from_bits(b0 & 0x0F).ok_or(WsError::Protocol("unknown opcode"))?;
    let fin = b0 & 0x80 != 0;
    let masked = b1 & 0x80 != 0;
    let (payload_len, mut at) = match b1 & 0x7F {
        126 => match buf.get(2..4) {
            Some(b) => (u64::from(u16::from_be_bytes([b[0], b[1]])), 4),
            None => return Ok(None),
        },
        127 => match buf.get(2..10).and_then(|b| <[u8; 8]>::try_from(b).ok()) {
            Some(b) => (u64::from_be_bytes(b), 10),
            None => return Ok(None),
        },
        n => (u64::from(n), 2),
    };
    if opcode.is_control() && (!fin || payload_len > MAX_CONTROL_PAYLOAD as u64) {
        return Err(WsError::Protocol("control frame fragmented or longer than 125 bytes"));
    }
    let mask = if masked {
        let Some(key) = buf.get(at..at + 4).and_then(|b| <[u8; 4]>::try_from(b).ok()) else { return Ok(None) };
        at += 4;
        Some(key)
    } else {
        None
    };
    Ok(Some(FrameHeader { fin, opcode, mask, payload_len, header_len: at }))
}

/// The header of a frame in `out` (its first `n` bytes) and its length `n`.
#[inline(always)]
pub fn encode_header(fin: bool, opcode: Opcode, mask: Option<[u8; 4]>, len: usize) -> ([u8; MAX_HEADER], usize) {
    let mut header = [0u8; MAX_HEADER];
    header[0] = (u8::from(fin) << 7) | opcode.bits();
    let mask_bit = if mask.is_some() { 0x80 } else { 0 };
    let mut n = if len < 126 {
        header[1] = mask_bit | len as u8;
        2
    } else if let Ok(len16) = u16::try_from(len) {
        header[1] = mask_bit | 126;
        header[2..4].copy_from_slice(&len16.to_be_bytes());
        4
    } else {
        header[1] = mask_bit | 127;
        header[2..10].copy_from_slice(&(len as u64).to_be_bytes());
        10
    };
    if let Some(key) = mask {
        header[n..n + 4].copy_from_slice(&key);
        n += 4;
    }
    (header, n)
}

/// Writes a header for a payload of `len` bytes so that it ends exactly at `buf[end]`; returns
/// where it starts. `buf[..end]` must have at least [`MAX_HEADER`] bytes of room.
#[inline]
pub fn write_header_before(
    buf: &mut [u8],
    end: usize,
    fin: bool,
    opcode: Opcode,
    mask: Option<[u8; 4]>,
    len: usize,
) -> usize {
    let (header, n) = encode_header(fin, opcode, mask, len);
    let start = end - n;
    buf[start..end].copy_from_slice(&header[..n]);
    start
}

/// Appends one final frame carrying `payload` to `out`, masked with `mask` if given (client
/// role). For frames built once and sent as they are (a server's shared frames, control frames).
pub fn push_frame(out: &mut Vec<u8>, opcode: Opcode, mask: Option<[u8; 4]>, payload: &[u8]) {
    let (header, n) = encode_header(true, opcode, mask, payload.len());
    out.reserve(n + payload.len());
    out.extend_from_slice(&header[..n]);
    let from = out.len();
    out.extend_from_slice(payload);
    if let Some(key) = mask {
        apply_mask(&mut out[from..], key);
    }
}

/// Appends a close frame with `code` and `reason`, the reason cut on a character boundary to
/// fit a control frame.
pub fn push_close(out: &mut Vec<u8>, mask: Option<[u8; 4]>, code: u16, reason: &str) {
    let mut cut = reason.len().min(MAX_CONTROL_PAYLOAD - 2);
    while !reason.is_char_boundary(cut) {
        cut -= 1;
    }
    let mut payload = [0u8; MAX_CONTROL_PAYLOAD];
    payload[..2].copy_from_slice(&code.to_be_bytes());
    payload[2..2 + cut].copy_from_slice(&reason.as_bytes()[..cut]);
    push_frame(out, Opcode::Close, mask, &payload[..2 + cut]);
}

/// The status code of a close frame's payload (`None` when it carries none).
pub fn close_code(payload: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*payload.first()?, *payload.get(1)?]))
}

/// XORs `payload` with `key`, as both masking and unmasking do (RFC 6455 §5.3). Thirty-two
/// bytes at a time (the byte loop over a fixed-size block compiles to vector XORs), then
/// eight, then single bytes; every block length is a multiple of four, so the key's phase
/// carries over.
#[inline]
pub fn apply_mask(payload: &mut [u8], key: [u8; 4]) {
    let mut key32 = [0u8; 32];
    for (i, k) in key32.iter_mut().enumerate() {
        *k = key[i & 3];
    }
    let mut blocks = payload.chunks_exact_mut(32);
    for block in &mut blocks {
        for (b, k) in block.iter_mut().zip(&key32) {
            *b ^= k;
        }
    }
    let key8 = u64::from_ne_bytes([key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3]]);
    let mut words = blocks.into_remainder().chunks_exact_mut(8);
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(word) ^ key8).to_ne_bytes());
    }
    for (i, byte) in words.into_remainder().iter_mut().enumerate() {
        *byte ^= key[i & 3];
    }
}

/// The next mask key from an xorshift32 state (RFC 6455 wants unpredictable keys against proxy
/// cache poisoning; on a direct connection to the venue any key is correct).
#[inline(always)]
pub fn next_mask(state: &mut u32) -> [u8; 4] {
    let mut x = *state;
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    *state = x;
    x.to_ne_bytes()
}

#[cfg(test)]
mod tests;
