//! A minimal RFC 6455 WebSocket framer and deframer for the hot path, on blocking std sockets.
//!
//! Owns: frame headers (7/16/64-bit lengths), client masking (xorshift32 keys), the reused read
//! buffer and the reassembly of fragmented messages, and the write buffer an encoder fills in
//! place (`WsWriter::begin` … `finish`).
//! Must not: allocate in steady state (buffers grow only for a message larger than any before,
//! up to `MAX_MESSAGE`), interpret payloads, or read a clock. Control frames (ping/close) are
//! returned to the caller, which decides to answer.
//!
//! Why not tungstenite's sync API: it copies every frame into an owned `Vec` per message
//! (`Message::Text(Utf8Bytes)`), validates UTF-8, and its write path queues into its own buffer
//! before `flush`; research/limits.md §1(d) measured tokio-tungstenite at 10.5 µs per ping-pong
//! against 4.2 µs for a bare blocking socket. This framer adds one header parse per frame and
//! borrows the payload straight from the read buffer; the `hot_pipeline` bench includes it.

use std::io::{self, Read, Write};

/// Largest message accepted (a full Deribit snapshot of a deep book is well under this).
pub const MAX_MESSAGE: usize = 16 << 20;
/// Room reserved in front of an outgoing payload for the largest header (2 + 8 + 4 bytes).
pub const MAX_HEADER: usize = 14;

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
    fn from_bits(bits: u8) -> Option<Opcode> {
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

    fn bits(self) -> u8 {
        match self {
            Opcode::Continuation => 0x0,
            Opcode::Text => 0x1,
            Opcode::Binary => 0x2,
            Opcode::Close => 0x8,
            Opcode::Ping => 0x9,
            Opcode::Pong => 0xA,
        }
    }

    fn is_control(self) -> bool {
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
    if opcode.is_control() && (!fin || payload_len > 125) {
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
    let start = end - n;
    buf[start..end].copy_from_slice(&header[..n]);
    start
}

/// XORs `payload` with `key`, as both masking and unmasking do (RFC 6455 §5.3). Eight bytes at
/// a time; the compiler vectorises the loop.
#[inline]
pub fn apply_mask(payload: &mut [u8], key: [u8; 4]) {
    let key8 = u64::from_ne_bytes([key[0], key[1], key[2], key[3], key[0], key[1], key[2], key[3]]);
    let mut chunks = payload.chunks_exact_mut(8);
    for chunk in &mut chunks {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        chunk.copy_from_slice(&(u64::from_ne_bytes(word) ^ key8).to_ne_bytes());
    }
    for (i, byte) in chunks.into_remainder().iter_mut().enumerate() {
        *byte ^= key[i & 3];
    }
}

/// One complete message or control frame, borrowed from the reader's buffers.
#[derive(Debug, PartialEq, Eq)]
pub struct Message<'a> {
    /// `Text`, `Binary`, `Ping`, `Pong` or `Close` (never `Continuation`).
    pub opcode: Opcode,
    pub payload: &'a [u8],
}

/// Reads frames from a byte stream into one reused buffer.
#[derive(Debug)]
pub struct WsReader {
    role: Role,
    buf: Vec<u8>,
    start: usize,
    end: usize,
    /// Where a fragmented message is reassembled; `None` when no message is in progress.
    partial: Vec<u8>,
    partial_opcode: Option<Opcode>,
    /// The last message handed out ends here; it is consumed on the next call.
    pending: Option<Pending>,
}

#[derive(Clone, Copy, Debug)]
enum Pending {
    Buffer(usize),
    Partial,
}

impl WsReader {
    /// A reader with `capacity` bytes of buffer (grown only for a larger message).
    pub fn new(role: Role, capacity: usize) -> WsReader {
        WsReader {
            role,
            buf: vec![0; capacity.max(256)],
            start: 0,
            end: 0,
            partial: Vec::new(),
            partial_opcode: None,
            pending: None,
        }
    }

    /// Bytes received but not yet returned as messages.
    pub fn buffered(&self) -> usize {
        self.end - self.start
    }

    /// The next complete message already in the buffer, or `Ok(None)`: then call [`Self::fill`].
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub fn next_message(&mut self) -> Result<Option<Message<'_>>, WsError> {
        match self.pending.take() {
            Some(Pending::Buffer(end)) => self.start = end,
            Some(Pending::Partial) => {
                self.partial.clear();
                self.partial_opcode = None;
            }
            None => {}
        }
        loop {
            let available = &self.buf[self.start..self.end];
            let Some(header) = parse_header(available)? else { return Ok(None) };
            self.check_mask(&header)?;
            let len = usize::try_from(header.payload_len)
                .ok()
                .filter(|&n| n <= MAX_MESSAGE)
                .ok_or(WsError::TooLarge(header.payload_len))?;
            if available.len() < header.header_len + len {
                return Ok(None);
            }
            let from = self.start + header.header_len;
            let to = from + len;
            if let Some(key) = header.mask {
                apply_mask(&mut self.buf[from..to], key);
            }
            match (header.opcode, header.fin, self.partial_opcode) {
                (op, _, _) if op.is_control() => {
                    self.pending = Some(Pending::Buffer(to));
                    return Ok(Some(Message { opcode: op, payload: &self.buf[from..to] }));
                }
                (Opcode::Continuation, _, None) => return Err(WsError::Protocol("continuation without a start")),
                (Opcode::Text | Opcode::Binary, _, Some(_)) => {
                    return Err(WsError::Protocol("new message inside a fragmented one"));
                }
                (op, true, None) => {
                    self.pending = Some(Pending::Buffer(to));
                    return Ok(Some(Message { opcode: op, payload: &self.buf[from..to] }));
                }
                (op, fin, _) => {
                    if self.partial.len() + len > MAX_MESSAGE {
                        return Err(WsError::TooLarge((self.partial.len() + len) as u64));
                    }
                    self.partial.extend_from_slice(&self.buf[from..to]);
                    self.start = to;
                    if op != Opcode::Continuation {
                        self.partial_opcode = Some(op);
                    }
                    if fin {
                        let opcode = self.partial_opcode.unwrap_or(Opcode::Binary);
                        self.pending = Some(Pending::Partial);
                        return Ok(Some(Message { opcode, payload: &self.partial }));
                    }
                }
            }
        }
    }

    #[inline]
    fn check_mask(&self, header: &FrameHeader) -> Result<(), WsError> {
        match (self.role, header.mask.is_some()) {
            (Role::Server, false) => Err(WsError::Protocol("client frame not masked")),
            (Role::Client, true) => Err(WsError::Protocol("server frame masked")),
            _ => Ok(()),
        }
    }

    /// Reads once from `src` into the buffer (blocking or not, as `src` is set up). Returns the
    /// bytes read; `WouldBlock` is passed through for busy-polling callers.
    #[inline]
    #[cfg_attr(target_os = "linux", allow(unsafe_code), unsafe(link_section = "ticktrade_hot"))]
    pub fn fill(&mut self, src: &mut impl Read) -> Result<usize, WsError> {
        self.make_room();
        match src.read(&mut self.buf[self.end..]) {
            Ok(0) => Err(WsError::Eof),
            Ok(n) => {
                self.end += n;
                Ok(n)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Like [`Self::fill`] but `Ok(0)` on `WouldBlock` (for a non-blocking socket).
    #[inline]
    pub fn try_fill(&mut self, src: &mut impl Read) -> Result<usize, WsError> {
        self.make_room();
        match src.read(&mut self.buf[self.end..]) {
            Ok(0) => Err(WsError::Eof),
            Ok(n) => {
                self.end += n;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Appends bytes as if read from the socket (tests, replays, in-memory benchmarks).
    pub fn feed(&mut self, bytes: &[u8]) {
        self.make_room();
        let need = self.end + bytes.len();
        if need > self.buf.len() {
            self.buf.resize(need, 0);
        }
        self.buf[self.end..need].copy_from_slice(bytes);
        self.end = need;
    }

    /// Keeps the unread bytes at the front and leaves room to read: compacts when the tail is
    /// short, grows (doubling) only when one frame does not fit.
    #[inline]
    fn make_room(&mut self) {
        // A message handed out from the buffer is consumed now; a reassembled one stays until
        // `next_message` clears it.
        if let Some(Pending::Buffer(end)) = self.pending {
            self.start = end;
            self.pending = None;
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        }
        if self.buf.len() - self.end < 4096.min(self.buf.len() / 2) {
            if self.start > 0 {
                self.buf.copy_within(self.start..self.end, 0);
                self.end -= self.start;
                self.start = 0;
            }
            if self.buf.len() - self.end < 4096.min(self.buf.len() / 2) {
                let len = self.buf.len() * 2;
                self.buf.resize(len, 0);
            }
        }
    }
}

/// Builds outgoing frames in one reused buffer: the encoder appends the payload after
/// [`MAX_HEADER`] bytes of room, and `finish` writes the header in front and masks in place.
#[derive(Debug)]
pub struct WsWriter {
    role: Role,
    buf: Vec<u8>,
    /// xorshift32 state for mask keys (RFC 6455 wants unpredictable keys against proxy cache
    /// poisoning; on a direct connection to the venue any key is correct).
    mask_state: u32,
    frame_start: usize,
}

impl WsWriter {
    pub fn new(role: Role, capacity: usize, seed: u32) -> WsWriter {
        WsWriter { role, buf: Vec::with_capacity(capacity.max(256)), mask_state: seed | 1, frame_start: 0 }
    }

    /// Starts a frame: clears the buffer and returns it with header room in front. Append the
    /// payload, then call [`Self::finish`].
    #[inline]
    pub fn begin(&mut self) -> &mut Vec<u8> {
        self.buf.clear();
        self.buf.extend_from_slice(&[0u8; MAX_HEADER]);
        &mut self.buf
    }

    /// The buffer being filled since `begin` (for encoders that take `&mut Vec<u8>` later).
    #[inline]
    pub fn payload_buf(&mut self) -> &mut Vec<u8> {
        &mut self.buf
    }

    /// Puts the header in front of the payload and masks it (client role); returns the frame.
    #[inline]
    pub fn finish(&mut self, opcode: Opcode) -> &[u8] {
        let len = self.buf.len() - MAX_HEADER;
        let mask = match self.role {
            Role::Client => Some(self.next_mask()),
            Role::Server => None,
        };
        if let Some(key) = mask {
            apply_mask(&mut self.buf[MAX_HEADER..], key);
        }
        self.frame_start = write_header_before(&mut self.buf, MAX_HEADER, true, opcode, mask, len);
        &self.buf[self.frame_start..]
    }

    /// Loads one byte of each cache line the last frame used (the next frame is built in the
    /// same place); returns a value for `std::hint::black_box`.
    #[inline]
    pub fn touch(&self) -> u8 {
        self.buf.iter().step_by(64).fold(0, |x, &b| x ^ b)
    }

    /// The last finished frame.
    #[inline]
    pub fn frame(&self) -> &[u8] {
        &self.buf[self.frame_start.min(self.buf.len())..]
    }

    /// Encodes a whole frame with `payload` (control frames, handshakes, tests).
    pub fn frame_of(&mut self, opcode: Opcode, payload: &[u8]) -> &[u8] {
        self.begin().extend_from_slice(payload);
        self.finish(opcode)
    }

    /// Writes the last finished frame to `dst`.
    #[inline]
    pub fn write_to(&self, dst: &mut impl Write) -> Result<(), WsError> {
        dst.write_all(self.frame()).map_err(WsError::from)
    }

    #[inline]
    fn next_mask(&mut self) -> [u8; 4] {
        let mut x = self.mask_state;
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        self.mask_state = x;
        x.to_ne_bytes()
    }
}

#[cfg(test)]
#[path = "ws_tests.rs"]
mod tests;
