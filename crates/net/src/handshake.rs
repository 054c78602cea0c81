//! The WebSocket opening handshake (RFC 6455 §4), both ends: the pieces (`Sec-WebSocket-Accept`
//! key, the client's request head, the server's `101` reply, head parsing) and the blocking
//! exchange over any `Read + Write` stream, plain TCP or TLS. Runs once per connection, never on
//! the hot path.
//!
//! Owns: the HTTP/1.1 upgrade request and response, the key check, `TCP_NODELAY` on the plain
//! `connect`/`accept`, and handing any bytes read past the head to the [`WsReader`].
//! Must not: follow redirects, negotiate extensions or subprotocols, or do HTTP routing (a server
//! that serves other paths too, like `ticktrade-serve`, routes before calling [`accept_response`]).

use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use sha1::{Digest, Sha1};

use crate::frame::{Role, WsReader};

/// The GUID RFC 6455 §1.3 appends to the client's key.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// Largest HTTP head we accept.
pub const MAX_HEAD: usize = 16 << 10;
/// Read buffer of the reader a handshake returns (grown only for a larger message).
const READ_CAPACITY: usize = 64 << 10;

/// Why the opening handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    #[error("peer closed during the handshake")]
    Eof,
    #[error("HTTP head longer than {MAX_HEAD} bytes")]
    TooLong,
    /// The server answered with something other than `101 Switching Protocols`.
    #[error("upgrade refused: {status}")]
    Refused { status: String },
    #[error("bad handshake: {0}")]
    Bad(&'static str),
}

/// `base64(sha1(key + GUID))`, the value the server must return.
pub fn accept_key(key: &str) -> String {
    let mut sha = Sha1::new();
    sha.update(key.as_bytes());
    sha.update(GUID.as_bytes());
    B64.encode(sha.finalize())
}

/// A fresh `Sec-WebSocket-Key`: 16 bytes from the process's random hasher keys, base64.
pub fn new_key() -> String {
    let mut nonce = [0u8; 16];
    let state = RandomState::new();
    for (i, half) in nonce.chunks_exact_mut(8).enumerate() {
        let mut hasher = state.build_hasher();
        hasher.write_usize(i);
        half.copy_from_slice(&hasher.finish().to_ne_bytes());
    }
    B64.encode(nonce)
}

/// The client's upgrade request for `path` on `host`.
pub fn client_request(host: &str, path: &str, key: &str) -> String {
    format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    )
}

/// The server's `101 Switching Protocols` reply to a request with `key`.
pub fn accept_response(key: &str) -> String {
    format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    )
}

/// Where an HTTP head ends (the index after `\r\n\r\n`), if it is complete.
pub fn head_end(buf: &[u8]) -> Option<usize> {
    buf.windows(4).position(|w| w == b"\r\n\r\n").map(|i| i + 4)
}

/// The value of header `name` (any case) in an HTTP head, trimmed; the first line is skipped.
pub fn header_value<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

/// Sends the upgrade request for `path` on `host` over `stream` and checks the reply. Returns a
/// client-role reader holding any bytes that arrived with the response.
pub fn client<S: Read + Write>(stream: &mut S, host: &str, path: &str) -> Result<WsReader, HandshakeError> {
    let key = new_key();
    stream.write_all(client_request(host, path, &key).as_bytes())?;
    stream.flush()?;
    let (head, rest) = read_head(stream)?;
    let status = head.split("\r\n").next().unwrap_or("");
    let mut words = status.split(' ');
    if !(words.next().is_some_and(|v| v.starts_with("HTTP/1.")) && words.next() == Some("101")) {
        return Err(HandshakeError::Refused { status: status.to_owned() });
    }
    let accept = header_value(&head, "sec-websocket-accept").ok_or(HandshakeError::Bad("no Sec-WebSocket-Accept"))?;
    if accept != accept_key(&key) {
        return Err(HandshakeError::Bad("wrong Sec-WebSocket-Accept"));
    }
    let mut reader = WsReader::new(Role::Client, READ_CAPACITY);
    reader.feed(&rest);
    Ok(reader)
}

/// Reads a client's upgrade request from `stream` and answers it. Returns the request path and a
/// server-role reader holding any frames sent right after the request.
pub fn server<S: Read + Write>(stream: &mut S) -> Result<(String, WsReader), HandshakeError> {
    let (head, rest) = read_head(stream)?;
    let request_line = head.split("\r\n").next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some("GET"), Some(path)) = (parts.next(), parts.next()) else {
        return Err(HandshakeError::Bad("not a GET request"));
    };
    let path = path.to_owned();
    let key = header_value(&head, "sec-websocket-key").ok_or(HandshakeError::Bad("no Sec-WebSocket-Key"))?;
    stream.write_all(accept_response(key).as_bytes())?;
    stream.flush()?;
    let mut reader = WsReader::new(Role::Server, READ_CAPACITY);
    reader.feed(&rest);
    Ok((path, reader))
}

/// Connects to `addr` over plain TCP, sets `TCP_NODELAY`, and upgrades to a WebSocket on `path`.
/// Returns the stream and a client-role reader holding any bytes that arrived with the response.
/// For loopback and in-process venues; a venue by URL (and TLS) goes through
/// [`crate::hot::connect`].
pub fn connect(addr: impl ToSocketAddrs, host: &str, path: &str) -> Result<(TcpStream, WsReader), HandshakeError> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let reader = client(&mut stream, host, path)?;
    Ok((stream, reader))
}

/// Answers a client's upgrade request on an accepted stream (sets `TCP_NODELAY`). Returns the
/// request path and a server-role reader holding any frames sent right after the request.
pub fn accept(stream: &mut TcpStream) -> Result<(String, WsReader), HandshakeError> {
    stream.set_nodelay(true)?;
    server(stream)
}

/// Reads until the blank line ending an HTTP head; returns the head and the bytes after it.
/// Reads in small pieces so that little of what follows the head is taken from a TLS session
/// before the caller's reader exists (all of it is handed on either way).
pub fn read_head(stream: &mut impl Read) -> Result<(String, Vec<u8>), HandshakeError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(HandshakeError::Eof);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = head_end(&buf) {
            let rest = buf.split_off(end);
            buf.truncate(end - 4);
            let head = String::from_utf8(buf).map_err(|_| HandshakeError::Bad("HTTP head is not UTF-8"))?;
            return Ok((head, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(HandshakeError::TooLong);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6455_example_key() {
        // RFC 6455 §1.3.
        assert_eq!(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert!(
            accept_response("dGhlIHNhbXBsZSBub25jZQ==")
                .contains("Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n")
        );
    }

    #[test]
    fn headers_are_case_insensitive() {
        let head = "GET / HTTP/1.1\r\nsec-WEBSOCKET-key:  abc \r\nHost: x";
        assert_eq!(header_value(head, "sec-websocket-key"), Some("abc"));
        assert_eq!(header_value(head, "upgrade"), None);
    }

    #[test]
    fn head_and_trailing_bytes_split() {
        let mut input: &[u8] = b"HTTP/1.1 101 OK\r\nA: b\r\n\r\n\x81\x01x";
        let (head, rest) = read_head(&mut input).unwrap();
        assert_eq!(head, "HTTP/1.1 101 OK\r\nA: b");
        assert_eq!(rest, b"\x81\x01x");
        let mut cut: &[u8] = b"HTTP/1.1 101";
        assert!(matches!(read_head(&mut cut), Err(HandshakeError::Eof)));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\nrest"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }

    /// A stream that replays `input` and records what is written.
    struct Scripted {
        input: io::Cursor<Vec<u8>>,
        written: Vec<u8>,
    }

    impl Read for Scripted {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Scripted {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.written.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_refused_upgrade_names_the_status_line() {
        let mut stream = Scripted {
            input: io::Cursor::new(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n".to_vec()),
            written: Vec::new(),
        };
        let err = client(&mut stream, "venue", "/ws/api/v2").unwrap_err();
        assert!(matches!(&err, HandshakeError::Refused { status } if status == "HTTP/1.1 403 Forbidden"), "{err}");
        let request = String::from_utf8(stream.written).unwrap();
        assert!(request.starts_with("GET /ws/api/v2 HTTP/1.1\r\nHost: venue\r\n"), "{request}");
    }

    #[test]
    fn server_answers_and_keeps_early_frames() {
        let mut stream = Scripted {
            input: io::Cursor::new(
                b"GET /ws HTTP/1.1\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n\x81\x81\x00\x00\x00\x00x"
                    .to_vec(),
            ),
            written: Vec::new(),
        };
        let (path, mut reader) = server(&mut stream).unwrap();
        assert_eq!(path, "/ws");
        assert!(String::from_utf8(stream.written).unwrap().starts_with("HTTP/1.1 101 Switching Protocols\r\n"));
        let message = reader.next_message().unwrap().unwrap();
        assert_eq!(message.payload, b"x");
    }
}
