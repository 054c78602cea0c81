//! The lean load client (`--load-client lean`): a bare tokio socket that does the WebSocket
//! upgrade by hand and then reads into one 4 KiB buffer and discards. Frames are parsed only
//! until the client's first book frame (to count it ready) and by client 0, which stamps each
//! book change for the floor. No allocation, UTF-8 check or text search per frame otherwise,
//! so the clients take as little of the 2 vCPUs as a client can while draining.
//!
//! Owns: the load clients' sockets when lean.
//! Must not: answer anything (the server sends no pings to these clients), or parse after
//! readiness except for client 0.

use std::io;
use std::net::SocketAddr;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use ticktrade_net::frame::{self, Opcode};
use ticktrade_net::handshake;

use super::Probe;

/// The read buffer (as the tungstenite clients are configured).
const READ_BUF: usize = 4 << 10;
/// Largest frame client 0 reassembles (a book snapshot is far smaller).
const MAX_FRAME: usize = 16 << 20;

/// A fan-out client: subscribe to `channel`, count itself in `ready` at its first book frame,
/// then drain; client 0 (with the probe) stamps every book change it receives.
pub(super) async fn client(
    addr: SocketAddr,
    channel: String,
    ready: Arc<AtomicUsize>,
    probe: Option<(Arc<Probe>, Instant)>,
) {
    let Ok((mut socket, mut buf)) = connect(addr, "/ws/api/v2").await else {
        eprintln!("client: connect failed");
        return;
    };
    let sub =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"public/subscribe","params":{{"channels":["{channel}"]}}}}"#);
    if socket.write_all(&masked_text(sub.as_bytes())).await.is_err() {
        return;
    }
    let mut chunk = [0u8; READ_BUF];
    let mut counted = false;
    loop {
        let mut used = 0;
        while let Some((opcode, payload)) = next_frame(&buf[used..]) {
            let text = &buf[used..][payload.clone()];
            used += payload.end;
            if opcode != Opcode::Text || !contains(text, br#""method":"subscription""#) {
                continue;
            }
            if !counted {
                counted = true;
                ready.fetch_add(1, Ordering::Relaxed);
            }
            if let Some((probe, base)) = &probe
                && contains(text, br#""type":"change""#)
                && let Ok(text) = std::str::from_utf8(text)
            {
                probe.change(text, *base);
            }
        }
        buf.drain(..used);
        if counted && probe.is_none() {
            break;
        }
        if buf.len() > MAX_FRAME {
            eprintln!("client: frame over {MAX_FRAME} bytes");
            return;
        }
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
    }
    discard(socket, &mut chunk).await;
}

/// A floor client: upgrade at `addr`, then drain.
pub(super) async fn drain(addr: SocketAddr) {
    let Ok((socket, _)) = connect(addr, "/").await else { return };
    let mut chunk = [0u8; READ_BUF];
    discard(socket, &mut chunk).await;
}

async fn discard(mut socket: TcpStream, chunk: &mut [u8]) {
    while let Ok(n) = socket.read(chunk).await {
        if n == 0 {
            return;
        }
    }
}

/// Connects with `TCP_NODELAY` and upgrades to a WebSocket at `path`; returns the socket and
/// whatever was read past the reply head.
async fn connect(addr: SocketAddr, path: &str) -> io::Result<(TcpStream, Vec<u8>)> {
    let mut socket = TcpStream::connect(addr).await?;
    socket.set_nodelay(true)?;
    let request = handshake::client_request(&addr.to_string(), path, "dGhlIHNhbXBsZSBub25jZQ==");
    socket.write_all(request.as_bytes()).await?;
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "closed during the upgrade"));
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = handshake::head_end(&buf) {
            if !buf.starts_with(b"HTTP/1.1 101") {
                return Err(io::Error::other("upgrade refused"));
            }
            let rest = buf.split_off(end);
            return Ok((socket, rest));
        }
        if buf.len() > 16 << 10 {
            return Err(io::Error::other("upgrade reply head too long"));
        }
    }
}

/// The next complete frame at the start of `buf`: its opcode and its payload's range (which
/// ends where the frame ends). `None` if incomplete (or not a valid frame: the client stops).
fn next_frame(buf: &[u8]) -> Option<(Opcode, Range<usize>)> {
    let header = frame::parse_header(buf).ok()??;
    let start = header.header_len;
    let end = start.checked_add(usize::try_from(header.payload_len).ok()?)?;
    (buf.len() >= end).then_some((header.opcode, start..end))
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// A final text frame from a client (masked, as RFC 6455 requires).
fn masked_text(payload: &[u8]) -> Vec<u8> {
    const MASK: [u8; 4] = [0x5a, 0x13, 0xc4, 0x7e];
    let mut out = Vec::with_capacity(payload.len() + frame::MAX_HEADER);
    frame::push_frame(&mut out, Opcode::Text, Some(MASK), payload);
    out
}

#[cfg(test)]
mod tests {
    use ticktrade_net::frame::{Role, WsReader};

    use super::*;

    #[test]
    fn frames_are_split_where_they_end() {
        let mut buf = super::super::server_text_frame(b"hello");
        let big = vec![b'x'; 300];
        buf.extend(super::super::server_text_frame(&big));
        let (op, first) = next_frame(&buf).expect("first frame");
        assert_eq!((op, &buf[first.clone()]), (Opcode::Text, &b"hello"[..]));
        let rest = &buf[first.end..];
        let (_, second) = next_frame(rest).expect("second frame");
        assert_eq!(&rest[second.clone()], &big[..]);
        assert_eq!(second.end, rest.len());
        assert!(next_frame(&rest[..rest.len() - 1]).is_none(), "an incomplete frame waits");
    }

    #[test]
    fn the_subscribe_frame_unmasks_to_its_text() {
        let bytes = masked_text(b"{\"a\":1}");
        let mut reader = WsReader::new(Role::Server, 256);
        reader.feed(&bytes);
        let message = reader.next_message().unwrap().unwrap();
        assert_eq!((message.opcode, message.payload), (Opcode::Text, &b"{\"a\":1}"[..]));
    }
}
