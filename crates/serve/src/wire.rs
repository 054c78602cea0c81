//! RFC 6455 on the server side, only what the fan-out needs: the upgrade handshake, unmasked
//! frames written by the server (a book frame is framed once and the same bytes go to every
//! client), and masked frames read from a client, reassembled, with a size limit.
//!
//! Owns: the byte layout of frames and the handshake reply.
//! Must not: do I/O or read a clock.

use base64::Engine as _;
use bytes::Bytes;
use sha1::{Digest, Sha1};

const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

const OP_CONT: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xa;

/// A request head read from a new connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub path: String,
    /// `Sec-WebSocket-Key` when the request asks for a WebSocket upgrade.
    pub ws_key: Option<String>,
}

/// Where the request head ends (index after `\r\n\r\n`), if it is complete.
pub(crate) fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// Parses a complete request head; `None` if it is not an HTTP/1.1 request line.
pub(crate) fn parse_head(head: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(head).ok()?;
    let mut lines = text.split("\r\n");
    let mut request = lines.next()?.split(' ');
    let (method, target) = (request.next()?, request.next()?);
    let path = target.split('?').next().unwrap_or(target).to_owned();
    let mut upgrade = false;
    let mut key = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else { continue };
        let value = value.trim();
        if name.eq_ignore_ascii_case("upgrade") && value.eq_ignore_ascii_case("websocket") {
            upgrade = true;
        } else if name.eq_ignore_ascii_case("sec-websocket-key") {
            key = Some(value.to_owned());
        }
    }
    let ws_key = if method == "GET" && upgrade { key } else { None };
    Some(Head { path, ws_key })
}

/// The `101 Switching Protocols` reply to a WebSocket upgrade with `key`.
pub(crate) fn accept_reply(key: &str) -> Vec<u8> {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    let accept = base64::engine::general_purpose::STANDARD.encode(sha.finalize());
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    )
    .into_bytes()
}

/// A plain HTTP reply with a text body (refusals before an upgrade).
pub(crate) fn http_reply(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

fn header(out: &mut Vec<u8>, opcode: u8, len: usize) {
    out.push(0x80 | opcode);
    match len {
        0..=125 => out.push(len as u8),
        126..=0xffff => {
            out.push(126);
            out.extend_from_slice(&(len as u16).to_be_bytes());
        }
        _ => {
            out.push(127);
            out.extend_from_slice(&(len as u64).to_be_bytes());
        }
    }
}

/// An unmasked final text frame carrying `payload`: the bytes every client is sent.
pub(crate) fn text_frame(payload: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(payload.len() + 10);
    header(&mut out, OP_TEXT, payload.len());
    out.extend_from_slice(payload);
    Bytes::from(out)
}

/// A close frame with `code` and `reason` (cut to fit a control frame).
pub(crate) fn close_frame(code: u16, reason: &str) -> Bytes {
    let mut reason = reason.as_bytes();
    if reason.len() > 123 {
        reason = &reason[..123];
        while std::str::from_utf8(reason).is_err() {
            reason = &reason[..reason.len() - 1];
        }
    }
    let mut out = Vec::with_capacity(reason.len() + 4);
    header(&mut out, OP_CLOSE, reason.len() + 2);
    out.extend_from_slice(&code.to_be_bytes());
    out.extend_from_slice(reason);
    Bytes::from(out)
}

/// A pong answering a ping with `payload`.
pub(crate) fn pong_frame(payload: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(payload.len() + 2);
    header(&mut out, OP_PONG, payload.len().min(125));
    out.extend_from_slice(&payload[..payload.len().min(125)]);
    Bytes::from(out)
}

/// The payload of a frame built by [`text_frame`] (tests read what clients were sent).
#[cfg(test)]
pub(crate) fn payload(frame: &[u8]) -> &[u8] {
    match frame.get(1).map(|b| b & 0x7f) {
        Some(126) => &frame[4..],
        Some(127) => &frame[10..],
        Some(_) => &frame[2..],
        None => &[],
    }
}

/// One message from a client.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Incoming {
    Text(String),
    Binary,
    Ping(Vec<u8>),
    Pong,
    Close,
}

/// Why a client's bytes were refused (the close code and reason to send).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum WireError {
    #[error("message too big: more than {0} bytes")]
    TooBig(usize),
    #[error("protocol error: {0}")]
    Protocol(&'static str),
}

impl WireError {
    pub(crate) fn close_code(&self) -> u16 {
        match self {
            WireError::TooBig(_) => 1009,
            WireError::Protocol(_) => 1002,
        }
    }
}

/// Reassembles client frames from bytes as they arrive.
pub(crate) struct FrameReader {
    buf: Vec<u8>,
    max: usize,
    message: Option<(u8, Vec<u8>)>,
}

impl FrameReader {
    pub(crate) fn new(max_message_bytes: usize) -> FrameReader {
        FrameReader { buf: Vec::with_capacity(4096), max: max_message_bytes.max(125), message: None }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message, `Ok(None)` if more bytes are needed.
    pub(crate) fn next(&mut self) -> Result<Option<Incoming>, WireError> {
        loop {
            let Some((fin, opcode, start, len)) = self.frame_bounds()? else { return Ok(None) };
            let mask = [self.buf[start - 4], self.buf[start - 3], self.buf[start - 2], self.buf[start - 1]];
            let mut data: Vec<u8> = self.buf[start..start + len].to_vec();
            for (i, b) in data.iter_mut().enumerate() {
                *b ^= mask[i & 3];
            }
            self.buf.drain(..start + len);
            match opcode {
                OP_PING => return Ok(Some(Incoming::Ping(data))),
                OP_PONG => return Ok(Some(Incoming::Pong)),
                OP_CLOSE => return Ok(Some(Incoming::Close)),
                OP_TEXT | OP_BINARY => {
                    if self.message.is_some() {
                        return Err(WireError::Protocol("new message inside a fragmented one"));
                    }
                    self.message = Some((opcode, data));
                }
                OP_CONT => match self.message.as_mut() {
                    Some((_, message)) => {
                        if message.len() + data.len() > self.max {
                            return Err(WireError::TooBig(self.max));
                        }
                        message.extend_from_slice(&data);
                    }
                    None => return Err(WireError::Protocol("continuation without a message")),
                },
                _ => return Err(WireError::Protocol("unknown opcode")),
            }
            if fin && let Some((opcode, message)) = self.message.take() {
                if opcode == OP_BINARY {
                    return Ok(Some(Incoming::Binary));
                }
                return match String::from_utf8(message) {
                    Ok(text) => Ok(Some(Incoming::Text(text))),
                    Err(_) => Err(WireError::Protocol("text message is not UTF-8")),
                };
            }
        }
    }

    /// `(fin, opcode, payload start, payload length)` of the first frame if it is complete.
    fn frame_bounds(&self) -> Result<Option<(bool, u8, usize, usize)>, WireError> {
        let b = &self.buf;
        if b.len() < 2 {
            return Ok(None);
        }
        let fin = b[0] & 0x80 != 0;
        let opcode = b[0] & 0x0f;
        if b[1] & 0x80 == 0 {
            return Err(WireError::Protocol("client frame not masked"));
        }
        let (len, at) = match b[1] & 0x7f {
            126 => {
                if b.len() < 4 {
                    return Ok(None);
                }
                (u64::from(u16::from_be_bytes([b[2], b[3]])), 4)
            }
            127 => {
                if b.len() < 10 {
                    return Ok(None);
                }
                let mut n = [0u8; 8];
                n.copy_from_slice(&b[2..10]);
                (u64::from_be_bytes(n), 10)
            }
            n => (u64::from(n), 2),
        };
        if opcode >= OP_CLOSE && (len > 125 || !fin) {
            return Err(WireError::Protocol("bad control frame"));
        }
        let len = usize::try_from(len).map_err(|_| WireError::TooBig(self.max))?;
        if len > self.max {
            return Err(WireError::TooBig(self.max));
        }
        let start = at + 4;
        if b.len() < start + len {
            return Ok(None);
        }
        Ok(Some((fin, opcode, start, len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(fin: bool, opcode: u8, payload: &[u8]) -> Vec<u8> {
        let mask = [1u8, 2, 3, 4];
        let mut out = vec![if fin { 0x80 } else { 0 } | opcode];
        match payload.len() {
            n @ 0..=125 => out.push(0x80 | n as u8),
            n => {
                out.push(0x80 | 126);
                out.extend_from_slice(&(n as u16).to_be_bytes());
            }
        }
        out.extend_from_slice(&mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i & 3]));
        out
    }

    #[test]
    fn reads_split_fragmented_and_control_frames() {
        let mut r = FrameReader::new(1000);
        let mut bytes = masked(false, OP_TEXT, b"hel");
        bytes.extend(masked(true, OP_PING, b"p"));
        bytes.extend(masked(true, OP_CONT, b"lo"));
        bytes.extend(masked(true, OP_TEXT, &[b'x'; 300]));
        for chunk in bytes.chunks(3) {
            r.push(chunk);
        }
        assert_eq!(r.next(), Ok(Some(Incoming::Ping(b"p".to_vec()))));
        assert_eq!(r.next(), Ok(Some(Incoming::Text("hello".into()))));
        assert_eq!(r.next(), Ok(Some(Incoming::Text("x".repeat(300)))));
        assert_eq!(r.next(), Ok(None));
    }

    #[test]
    fn refuses_big_and_unmasked_frames() {
        let mut r = FrameReader::new(200);
        r.push(&masked(true, OP_TEXT, &[b'x'; 300]));
        assert_eq!(r.next(), Err(WireError::TooBig(200)));
        let mut r = FrameReader::new(200);
        r.push(&[0x81, 0x01, b'x']);
        assert!(matches!(r.next(), Err(WireError::Protocol(_))));
    }

    #[test]
    fn server_frames_and_handshake() {
        let f = text_frame(&[b'a'; 300]);
        assert_eq!(&f[..4], &[0x81, 126, 1, 44]);
        assert_eq!(payload(&f).len(), 300);
        assert_eq!(&close_frame(1008, "slow")[..], &[0x88, 6, 0x03, 0xf0, b's', b'l', b'o', b'w']);
        // RFC 6455 section 1.3's example key.
        let reply = String::from_utf8(accept_reply("dGhlIHNhbXBsZSBub25jZQ==")).unwrap();
        assert!(reply.contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"), "{reply}");
        let head = b"GET /ws/api/v2?x=1 HTTP/1.1\r\nHost: a\r\nUpgrade: WebSocket\r\nSec-WebSocket-Key: k\r\n\r\n";
        assert_eq!(head_end(head), Some(head.len()));
        assert_eq!(parse_head(head), Some(Head { path: "/ws/api/v2".into(), ws_key: Some("k".into()) }));
        let get = b"GET /metrics HTTP/1.1\r\nHost: a\r\n\r\n";
        assert_eq!(parse_head(get), Some(Head { path: "/metrics".into(), ws_key: None }));
    }
}
