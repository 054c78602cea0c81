//! The WebSocket opening handshake (RFC 6455 §4) on a blocking `std::net::TcpStream`, both
//! ends, for the hot path's own framer. Not on the hot path: it runs once per connection.
//!
//! Owns: the HTTP/1.1 upgrade request and response, the `Sec-WebSocket-Key`/`Accept` check,
//! `TCP_NODELAY`, and handing any bytes read past the response to the `WsReader`.
//! Must not: speak TLS (the hot path on loopback or a cross-connect is plain; a TLS venue goes
//! through `ticktrade-net`), or follow redirects.

use std::hash::{BuildHasher, Hasher, RandomState};
use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as B64;
use sha1::{Digest, Sha1};

use super::ws::{Role, WsReader};

const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// Largest HTTP head we accept.
const MAX_HEAD: usize = 16 << 10;

/// Why the opening handshake failed.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("i/o: {0}")]
    Io(#[from] io::Error),
    #[error("peer closed during the handshake")]
    Eof,
    #[error("HTTP head longer than {MAX_HEAD} bytes")]
    TooLong,
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

/// Connects to `addr`, sets `TCP_NODELAY`, and upgrades to a WebSocket on `path`. Returns the
/// stream and a client-role reader holding any bytes that arrived with the response.
pub fn connect(addr: impl ToSocketAddrs, host: &str, path: &str) -> Result<(TcpStream, WsReader), HandshakeError> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_nodelay(true)?;
    let mut nonce = [0u8; 16];
    let state = RandomState::new();
    for (i, half) in nonce.chunks_exact_mut(8).enumerate() {
        let mut hasher = state.build_hasher();
        hasher.write_usize(i);
        half.copy_from_slice(&hasher.finish().to_ne_bytes());
    }
    let key = B64.encode(nonce);
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(request.as_bytes())?;
    let (head, rest) = read_head(&mut stream)?;
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or("");
    if !status.starts_with("HTTP/1.1 101") {
        return Err(HandshakeError::Bad("server did not switch protocols"));
    }
    let accept = header(&head, "sec-websocket-accept").ok_or(HandshakeError::Bad("no Sec-WebSocket-Accept"))?;
    if accept != accept_key(&key) {
        return Err(HandshakeError::Bad("wrong Sec-WebSocket-Accept"));
    }
    let mut reader = WsReader::new(Role::Client, 64 << 10);
    reader.feed(&rest);
    Ok((stream, reader))
}

/// Answers a client's upgrade request on an accepted stream (sets `TCP_NODELAY`). Returns the
/// request path and a server-role reader holding any frames sent right after the request.
pub fn accept(stream: &mut TcpStream) -> Result<(String, WsReader), HandshakeError> {
    stream.set_nodelay(true)?;
    let (head, rest) = read_head(stream)?;
    let request_line = head.split("\r\n").next().unwrap_or("");
    let mut parts = request_line.split(' ');
    let (Some("GET"), Some(path)) = (parts.next(), parts.next()) else {
        return Err(HandshakeError::Bad("not a GET request"));
    };
    let path = path.to_owned();
    let key = header(&head, "sec-websocket-key").ok_or(HandshakeError::Bad("no Sec-WebSocket-Key"))?;
    let response = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    );
    stream.write_all(response.as_bytes())?;
    let mut reader = WsReader::new(Role::Server, 64 << 10);
    reader.feed(&rest);
    Ok((path, reader))
}

/// Reads until the blank line ending an HTTP head; returns the head and the bytes after it.
fn read_head(stream: &mut impl Read) -> Result<(String, Vec<u8>), HandshakeError> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk)?;
        if n == 0 {
            return Err(HandshakeError::Eof);
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let rest = buf.split_off(end + 4);
            buf.truncate(end);
            let head = String::from_utf8(buf).map_err(|_| HandshakeError::Bad("HTTP head is not UTF-8"))?;
            return Ok((head, rest));
        }
        if buf.len() > MAX_HEAD {
            return Err(HandshakeError::TooLong);
        }
    }
}

/// The value of header `name` (lower-case), trimmed.
fn header<'h>(head: &'h str, name: &str) -> Option<&'h str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim().eq_ignore_ascii_case(name).then(|| value.trim())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc_6455_example_key() {
        // RFC 6455 §1.3.
        assert_eq!(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    #[test]
    fn headers_are_case_insensitive() {
        let head = "GET / HTTP/1.1\r\nsec-WEBSOCKET-key:  abc \r\nHost: x";
        assert_eq!(header(head, "sec-websocket-key"), Some("abc"));
        assert_eq!(header(head, "upgrade"), None);
    }

    #[test]
    fn head_and_trailing_bytes_split() {
        let mut input: &[u8] = b"HTTP/1.1 101 OK\r\nA: b\r\n\r\n\x81\x01x";
        let (head, rest) = read_head(&mut input).unwrap();
        assert_eq!(head, "HTTP/1.1 101 OK\r\nA: b");
        assert_eq!(rest, b"\x81\x01x");
        let mut cut: &[u8] = b"HTTP/1.1 101";
        assert!(matches!(read_head(&mut cut), Err(HandshakeError::Eof)));
    }
}
