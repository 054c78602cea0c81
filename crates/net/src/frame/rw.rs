//! [`WsReader`] and [`WsWriter`]: frames read into and built in reused buffers, over any
//! `Read`/`Write` byte stream (a plain `TcpStream`, a rustls stream, or bytes fed by an async
//! task).
//!
//! Owns: the read buffer and the reassembly of fragmented messages, the write buffer an encoder
//! fills in place (`WsWriter::begin` … `finish`), and the writer's mask state.
//! Must not: allocate in steady state (buffers grow only for a message larger than any before,
//! up to the reader's limit), interpret payloads, or read a clock.

use std::io::{self, Read, Write};

use super::{
    FrameHeader, MAX_HEADER, MAX_MESSAGE, Opcode, Role, WsError, apply_mask, next_mask, parse_header,
    write_header_before,
};

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
    /// Largest message (or reassembled fragments) accepted.
    max_message: usize,
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
    /// A reader with `capacity` bytes of buffer (grown only for a larger message) and the
    /// default limit of [`MAX_MESSAGE`].
    pub fn new(role: Role, capacity: usize) -> WsReader {
        WsReader::with_limit(role, capacity, MAX_MESSAGE)
    }

    /// A reader that refuses a message longer than `max_message` bytes (at least 125, the
    /// longest control frame).
    pub fn with_limit(role: Role, capacity: usize, max_message: usize) -> WsReader {
        WsReader {
            role,
            max_message: max_message.max(super::MAX_CONTROL_PAYLOAD),
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
                .filter(|&n| n <= self.max_message)
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
                    if self.partial.len() + len > self.max_message {
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
    /// xorshift32 state for mask keys ([`next_mask`]).
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
            Role::Client => Some(next_mask(&mut self.mask_state)),
            Role::Server => None,
        };
        if let Some(key) = mask {
            apply_mask(&mut self.buf[MAX_HEADER..], key);
        }
        self.frame_start = write_header_before(&mut self.buf, MAX_HEADER, true, opcode, mask, len);
        &self.buf[self.frame_start..]
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
}
