//! The fan-out's side of RFC 6455, on `ticktrade_net::frame` (the workspace's one framer):
//! routing a request head to the WebSocket upgrade or to axum, and the byte buffers the hub and
//! the connection tasks hand around (`Bytes`, so a book frame is framed once and the same bytes
//! go to every client).
//!
//! Owns: request-head parsing for routing (path, upgrade wish), the plain HTTP refusal, and the
//! mapping of a client's messages to `Incoming` (text checked to be UTF-8, owned for the hub).
//! Must not: do I/O, read a clock, or lay out frame bytes itself (`ticktrade_net::frame` does).

use bytes::Bytes;
use ticktrade_net::frame::{self, Opcode, Role, WsError, WsReader};
use ticktrade_net::handshake;

pub(crate) use handshake::head_end;

/// A request head read from a new connection.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Head {
    pub path: String,
    /// `Sec-WebSocket-Key` when the request asks for a WebSocket upgrade.
    pub ws_key: Option<String>,
}

/// Parses a complete request head; `None` if it is not an HTTP/1.1 request line.
pub(crate) fn parse_head(head: &[u8]) -> Option<Head> {
    let text = std::str::from_utf8(head).ok()?;
    let mut request = text.split("\r\n").next()?.split(' ');
    let (method, target) = (request.next()?, request.next()?);
    let path = target.split('?').next().unwrap_or(target).to_owned();
    let upgrade = handshake::header_value(text, "upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
    let key = handshake::header_value(text, "sec-websocket-key");
    let ws_key = if method == "GET" && upgrade { key.map(str::to_owned) } else { None };
    Some(Head { path, ws_key })
}

/// The `101 Switching Protocols` reply to a WebSocket upgrade with `key`.
pub(crate) fn accept_reply(key: &str) -> Vec<u8> {
    handshake::accept_response(key).into_bytes()
}

/// A plain HTTP reply with a text body (refusals before an upgrade).
pub(crate) fn http_reply(status: &str, body: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// An unmasked final text frame carrying `payload`: the bytes every client is sent.
pub(crate) fn text_frame(payload: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(payload.len() + frame::MAX_HEADER);
    frame::push_frame(&mut out, Opcode::Text, None, payload);
    Bytes::from(out)
}

/// A close frame with `code` and `reason` (cut to fit a control frame).
pub(crate) fn close_frame(code: u16, reason: &str) -> Bytes {
    let mut out = Vec::with_capacity(frame::MAX_CONTROL_PAYLOAD + 2);
    frame::push_close(&mut out, None, code, reason);
    Bytes::from(out)
}

/// A pong answering a ping with `payload`.
pub(crate) fn pong_frame(payload: &[u8]) -> Bytes {
    let payload = &payload[..payload.len().min(frame::MAX_CONTROL_PAYLOAD)];
    let mut out = Vec::with_capacity(payload.len() + 2);
    frame::push_frame(&mut out, Opcode::Pong, None, payload);
    Bytes::from(out)
}

/// The payload of a frame built by [`text_frame`] (tests read what clients were sent).
#[cfg(test)]
pub(crate) fn payload(bytes: &[u8]) -> &[u8] {
    match frame::parse_header(bytes) {
        Ok(Some(header)) => &bytes[header.header_len..],
        _ => &[],
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
            WireError::TooBig(_) => frame::close::TOO_BIG,
            WireError::Protocol(_) => frame::close::PROTOCOL,
        }
    }
}

/// Reassembles client frames from bytes as they arrive (server role: client frames must be
/// masked), with a size limit per message.
pub(crate) struct FrameReader {
    reader: WsReader,
    max: usize,
}

impl FrameReader {
    pub(crate) fn new(max_message_bytes: usize) -> FrameReader {
        let max = max_message_bytes.max(frame::MAX_CONTROL_PAYLOAD);
        FrameReader { reader: WsReader::with_limit(Role::Server, 4096, max), max }
    }

    pub(crate) fn push(&mut self, bytes: &[u8]) {
        self.reader.feed(bytes);
    }

    /// The next complete message, `Ok(None)` if more bytes are needed.
    pub(crate) fn next(&mut self) -> Result<Option<Incoming>, WireError> {
        let message = match self.reader.next_message() {
            Ok(Some(message)) => message,
            Ok(None) => return Ok(None),
            Err(WsError::TooLarge(_)) => return Err(WireError::TooBig(self.max)),
            Err(WsError::Protocol(what)) => return Err(WireError::Protocol(what)),
            // `feed` does no I/O: these cannot come from buffered bytes.
            Err(WsError::Eof | WsError::Io(_)) => return Err(WireError::Protocol("connection lost")),
        };
        Ok(Some(match message.opcode {
            Opcode::Text => match std::str::from_utf8(message.payload) {
                Ok(text) => Incoming::Text(text.to_owned()),
                Err(_) => return Err(WireError::Protocol("text message is not UTF-8")),
            },
            Opcode::Binary | Opcode::Continuation => Incoming::Binary,
            Opcode::Ping => Incoming::Ping(message.payload.to_vec()),
            Opcode::Pong => Incoming::Pong,
            Opcode::Close => Incoming::Close,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn masked(fin: bool, opcode: Opcode, payload: &[u8]) -> Vec<u8> {
        let mask = [1u8, 2, 3, 4];
        let mut out = Vec::new();
        frame::push_frame(&mut out, opcode, Some(mask), payload);
        if !fin {
            out[0] &= 0x7f;
        }
        out
    }

    #[test]
    fn reads_split_fragmented_and_control_frames() {
        let mut r = FrameReader::new(1000);
        let mut bytes = masked(false, Opcode::Text, b"hel");
        bytes.extend(masked(true, Opcode::Ping, b"p"));
        bytes.extend(masked(true, Opcode::Continuation, b"lo"));
        bytes.extend(masked(true, Opcode::Text, &[b'x'; 300]));
        bytes.extend(masked(true, Opcode::Text, &[0xff, 0xfe]));
        for chunk in bytes.chunks(3) {
            r.push(chunk);
        }
        assert_eq!(r.next(), Ok(Some(Incoming::Ping(b"p".to_vec()))));
        assert_eq!(r.next(), Ok(Some(Incoming::Text("hello".into()))));
        assert_eq!(r.next(), Ok(Some(Incoming::Text("x".repeat(300)))));
        assert_eq!(r.next(), Err(WireError::Protocol("text message is not UTF-8")));
    }

    #[test]
    fn refuses_big_and_unmasked_frames() {
        let mut r = FrameReader::new(200);
        r.push(&masked(true, Opcode::Text, &[b'x'; 300]));
        assert_eq!(r.next(), Err(WireError::TooBig(200)));
        assert_eq!(WireError::TooBig(200).close_code(), 1009);
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
        assert_eq!(&pong_frame(b"hi")[..], &[0x8a, 2, b'h', b'i']);
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
