//! The hot loop's own connection: a blocking byte stream, plain TCP on loopback or rustls over
//! TCP anywhere, opened from a `ws://`/`wss://` URL within one deadline (10 s by default), then
//! upgraded to a WebSocket (client role) with [`crate::handshake::client`]. It can busy-poll
//! instead of blocking ([`HotStream::set_busy_poll`]); writes complete in either mode.
//!
//! Owns: [`HotStream`] (`TCP_NODELAY`, `Read + Write` for [`crate::frame::WsReader`]/`WsWriter`),
//! the TLS roots ([`TlsRoots`]: the webpki roots, or exactly the PEM roots of a file such as the
//! one `ticktrade sim --tls` writes), and [`connect`], whose error names the step that failed:
//! DNS, TCP (refused, unreachable, timed out), TLS (with rustls's reason, e.g. an unknown
//! issuer) or the HTTP upgrade (with the status line).
//! Must not: offer a way to skip certificate verification, allow plain `ws://` to a host that is
//! not loopback unless the caller opts in, or block past the deadline.
//!
//! # Allocations per message over TLS
//! The plain stream allocates nothing per message. Over TLS, rustls 0.23's buffered
//! `ClientConnection` allocates two per round trip (one request sent, one response received):
//! `tests/hot_tls.rs` counts this thread's allocations over 2 000 `public/test` round trips
//! with the simulator, 2 per round trip over TLS and 0 over plain TCP with the same framer, so
//! all of them are rustls's own. The unbuffered API (`UnbufferedClientConnection`, caller-owned
//! buffers) is not used here: it was not tried in this module.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use crate::frame::WsReader;
use crate::handshake::{self, HandshakeError};
use crate::ws::{is_loopback_host, parse_url};

/// Which certificate authorities a `wss://` connection trusts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TlsRoots {
    /// Mozilla's roots as shipped by `webpki-roots` (public venues).
    Webpki,
    /// Exactly the PEM certificates in this file (`--ca-cert FILE`: a private root, such as
    /// the certificate `ticktrade sim --tls` writes).
    File(PathBuf),
}

/// How to connect.
#[derive(Clone, Debug)]
pub struct HotOptions {
    /// The whole connect (DNS, TCP, TLS, upgrade) must finish within this.
    pub deadline: Duration,
    pub roots: TlsRoots,
    /// Allow `ws://` to a host that is not loopback (a simulator on another machine).
    pub allow_plain_remote: bool,
}

impl Default for HotOptions {
    fn default() -> HotOptions {
        HotOptions { deadline: Duration::from_secs(10), roots: TlsRoots::Webpki, allow_plain_remote: false }
    }
}

/// A step of [`connect`], named in its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    Dns,
    Tcp,
    Tls,
    Upgrade,
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Step::Dns => "DNS resolution",
            Step::Tcp => "TCP connect",
            Step::Tls => "TLS handshake",
            Step::Upgrade => "WebSocket upgrade",
        })
    }
}

/// Why [`connect`] failed, by step.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error("invalid url {url}: {reason}")]
    Url { url: String, reason: &'static str },
    #[error("plain ws:// to non-loopback host {host} refused (use wss://)")]
    PlainRemote { host: String },
    #[error("TLS roots {path}: {reason}")]
    Roots { path: PathBuf, reason: String },
    #[error("DNS resolution of {host} failed: {reason}")]
    Dns { host: String, reason: String },
    #[error("TCP connect to {addr} refused")]
    Refused { addr: SocketAddr },
    #[error("TCP connect to {addr} failed: {source}")]
    Tcp { addr: SocketAddr, source: io::Error },
    #[error("{step} with {host} did not finish within {deadline:?}")]
    Timeout { step: Step, host: String, deadline: Duration },
    #[error("TLS handshake with {host} failed: {reason}")]
    Tls { host: String, reason: String },
    #[error("WebSocket upgrade at {host} failed: {source}")]
    Upgrade { host: String, source: HandshakeError },
}

impl ConnectError {
    /// The step that failed (`None` before any network step: URL, roots).
    pub fn step(&self) -> Option<Step> {
        match self {
            ConnectError::Url { .. } | ConnectError::PlainRemote { .. } | ConnectError::Roots { .. } => None,
            ConnectError::Dns { .. } => Some(Step::Dns),
            ConnectError::Refused { .. } | ConnectError::Tcp { .. } => Some(Step::Tcp),
            ConnectError::Timeout { step, .. } => Some(*step),
            ConnectError::Tls { .. } => Some(Step::Tls),
            ConnectError::Upgrade { .. } => Some(Step::Upgrade),
        }
    }
}

/// A connected byte stream for the hot loop: plain TCP, or rustls's buffered client over TCP.
///
/// Blocking by default. [`HotStream::set_busy_poll`] makes the socket non-blocking: a read
/// with nothing to read returns `WouldBlock` at once (the caller polls again), and
/// [`Write::write_all`] spins until every byte, TLS records included, is in the kernel, so a
/// caller's write has the same meaning in both modes.
#[derive(Debug)]
pub struct HotStream {
    io: Io,
    busy: bool,
}

#[derive(Debug)]
enum Io {
    Plain(TcpStream),
    Tls(Box<StreamOwned<ClientConnection, TcpStream>>),
}

impl HotStream {
    fn new(io: Io) -> HotStream {
        HotStream { io, busy: false }
    }

    /// The TCP socket under it (timeouts, shutdown).
    pub fn tcp(&self) -> &TcpStream {
        match &self.io {
            Io::Plain(tcp) => tcp,
            Io::Tls(tls) => &tls.sock,
        }
    }

    /// True over TLS.
    pub fn is_tls(&self) -> bool {
        matches!(self.io, Io::Tls(_))
    }

    /// Busy polling: the socket becomes non-blocking, so the loop never sleeps in the kernel
    /// and its caches stay warm between frames, at the price of one vCPU kept at 100%.
    /// Writes still complete before returning.
    pub fn set_busy_poll(&mut self, busy: bool) -> io::Result<()> {
        self.tcp().set_nonblocking(busy)?;
        self.busy = busy;
        Ok(())
    }

    /// True when busy polling.
    pub fn is_busy_poll(&self) -> bool {
        self.busy
    }

    /// Busy mode: pushes TLS records rustls still holds into the socket, spinning while the
    /// socket is full.
    fn drain_tls(&mut self) -> io::Result<()> {
        let Io::Tls(tls) = &mut self.io else { return Ok(()) };
        while tls.conn.wants_write() {
            match tls.conn.write_tls(&mut tls.sock) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

impl Read for HotStream {
    #[inline]
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match &mut self.io {
            Io::Plain(tcp) => tcp.read(buf),
            Io::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for HotStream {
    #[inline]
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.io {
            Io::Plain(tcp) => tcp.write(buf),
            Io::Tls(tls) => tls.write(buf),
        }
    }

    #[inline]
    fn write_all(&mut self, mut buf: &[u8]) -> io::Result<()> {
        if !self.busy {
            return match &mut self.io {
                Io::Plain(tcp) => tcp.write_all(buf),
                Io::Tls(tls) => tls.write_all(buf),
            };
        }
        while !buf.is_empty() {
            match self.write(buf) {
                Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                Ok(n) => buf = &buf[n..],
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => std::hint::spin_loop(),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        self.drain_tls()
    }

    fn flush(&mut self) -> io::Result<()> {
        if self.busy {
            return self.drain_tls();
        }
        match &mut self.io {
            Io::Plain(tcp) => tcp.flush(),
            Io::Tls(tls) => tls.flush(),
        }
    }
}

/// The root store for `roots`: the webpki roots, or every certificate of a PEM file (a missing,
/// empty or invalid file is an error, never an empty store).
pub fn root_store(roots: &TlsRoots) -> Result<RootCertStore, ConnectError> {
    match roots {
        TlsRoots::Webpki => Ok(RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() }),
        TlsRoots::File(path) => {
            let bad = |reason: String| ConnectError::Roots { path: path.clone(), reason };
            let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
            let mut store = RootCertStore::empty();
            for cert in CertificateDer::pem_slice_iter(&pem) {
                let cert = cert.map_err(|e| bad(format!("not PEM: {e}")))?;
                store.add(cert).map_err(|e| bad(format!("not a usable root certificate: {e}")))?;
            }
            if store.is_empty() {
                return Err(bad("no CERTIFICATE block in the file".to_owned()));
            }
            Ok(store)
        }
    }
}

fn tls_config(roots: RootCertStore) -> Result<Arc<ClientConfig>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// Connects to `url` (`ws://` loopback or `wss://`), completes TLS (verifying the certificate
/// against `options.roots`) and the WebSocket upgrade, all within `options.deadline`. Returns
/// the stream (blocking, no timeouts left set) and a client-role reader holding any bytes that
/// arrived with the upgrade response.
pub fn connect(url: &str, options: &HotOptions) -> Result<(HotStream, WsReader), ConnectError> {
    let started = Instant::now();
    let target =
        parse_url(url).map_err(|_| ConnectError::Url { url: url.to_owned(), reason: "not a ws:// or wss:// URL" })?;
    if !target.tls && !options.allow_plain_remote && !is_loopback_host(&target.host) {
        return Err(ConnectError::PlainRemote { host: target.host });
    }
    let config = match target.tls {
        true => Some(
            tls_config(root_store(&options.roots)?)
                .map_err(|e| ConnectError::Tls { host: target.host.clone(), reason: e.to_string() })?,
        ),
        false => None,
    };
    let deadline = started + options.deadline;
    let timeout = |step| ConnectError::Timeout { step, host: target.host.clone(), deadline: options.deadline };
    let left =
        |step| deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()).ok_or_else(|| timeout(step));

    let addrs = resolve(&target.host, target.port, left(Step::Dns)?).map_err(|e| match e {
        None => timeout(Step::Dns),
        Some(reason) => ConnectError::Dns { host: target.host.clone(), reason },
    })?;
    let tcp = connect_tcp(&addrs, || left(Step::Tcp)).map_err(|e| match e {
        TcpFailure::Timeout => timeout(Step::Tcp),
        TcpFailure::Error(addr, source) if source.kind() == io::ErrorKind::ConnectionRefused => {
            ConnectError::Refused { addr }
        }
        TcpFailure::Error(addr, source) => ConnectError::Tcp { addr, source },
        TcpFailure::Deadline(error) => error,
    })?;
    let io_error = |step, e: io::Error| -> ConnectError {
        if matches!(e.kind(), io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut) {
            return timeout(step);
        }
        match step {
            Step::Tls => ConnectError::Tls { host: target.host.clone(), reason: tls_reason(&e) },
            _ => ConnectError::Upgrade { host: target.host.clone(), source: HandshakeError::Io(e) },
        }
    };
    let sock_err = |e: io::Error| ConnectError::Tcp { addr: addrs[0], source: e };
    tcp.set_nodelay(true).map_err(sock_err)?;
    let set_timeouts = |tcp: &TcpStream, step| -> Result<(), ConnectError> {
        let left = left(step)?;
        tcp.set_read_timeout(Some(left)).map_err(sock_err)?;
        tcp.set_write_timeout(Some(left)).map_err(sock_err)
    };

    let mut stream = match config {
        None => HotStream::new(Io::Plain(tcp)),
        Some(config) => {
            let name = ServerName::try_from(target.host.clone()).map_err(|_| ConnectError::Url {
                url: url.to_owned(),
                reason: "host is not a valid TLS server name",
            })?;
            let conn = ClientConnection::new(config, name)
                .map_err(|e| ConnectError::Tls { host: target.host.clone(), reason: e.to_string() })?;
            let mut tls = StreamOwned::new(conn, tcp);
            while tls.conn.is_handshaking() {
                set_timeouts(&tls.sock, Step::Tls)?;
                match tls.conn.complete_io(&mut tls.sock) {
                    Ok((0, 0)) if tls.conn.is_handshaking() => {
                        return Err(ConnectError::Tls {
                            host: target.host.clone(),
                            reason: "peer closed during the handshake".to_owned(),
                        });
                    }
                    Ok(_) => {}
                    Err(e) => return Err(io_error(Step::Tls, e)),
                }
            }
            HotStream::new(Io::Tls(Box::new(tls)))
        }
    };
    set_timeouts(stream.tcp(), Step::Upgrade)?;
    let reader = handshake::client(&mut stream, &target.authority, &target.path).map_err(|e| match e {
        HandshakeError::Io(e) => io_error(Step::Upgrade, e),
        source => ConnectError::Upgrade { host: target.host.clone(), source },
    })?;
    stream.tcp().set_read_timeout(None).map_err(sock_err)?;
    stream.tcp().set_write_timeout(None).map_err(sock_err)?;
    Ok((stream, reader))
}

/// rustls's own error when the I/O error carries one (e.g. "invalid peer certificate:
/// UnknownIssuer"), else the I/O error.
fn tls_reason(error: &io::Error) -> String {
    match error.get_ref().and_then(|inner| inner.downcast_ref::<rustls::Error>()) {
        Some(tls) => tls.to_string(),
        None => error.to_string(),
    }
}

/// Resolves `host` within `limit`: `Err(None)` on timeout, `Err(Some(reason))` on failure. The
/// system resolver has no timeout of its own, so a name (not an IP literal) is resolved on a
/// helper thread that is abandoned if it runs past the deadline.
fn resolve(host: &str, port: u16, limit: Duration) -> Result<Vec<SocketAddr>, Option<String>> {
    let found = |addrs: Vec<SocketAddr>| match addrs.is_empty() {
        true => Err(Some("no address for the name".to_owned())),
        false => Ok(addrs),
    };
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let (tx, rx) = mpsc::channel();
    let name = (host.to_owned(), port);
    std::thread::Builder::new()
        .name("dns".to_owned())
        .spawn(move || {
            let _ = tx.send(name.to_socket_addrs().map(Iterator::collect::<Vec<_>>));
        })
        .map_err(|e| Some(e.to_string()))?;
    match rx.recv_timeout(limit) {
        Ok(Ok(addrs)) => found(addrs),
        Ok(Err(e)) => Err(Some(e.to_string())),
        Err(mpsc::RecvTimeoutError::Timeout) => Err(None),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(Some("resolver thread failed".to_owned())),
    }
}

enum TcpFailure {
    Timeout,
    Error(SocketAddr, io::Error),
    Deadline(ConnectError),
}

/// Tries each address in turn within what is left of the deadline; the last error wins.
fn connect_tcp(
    addrs: &[SocketAddr],
    left: impl Fn() -> Result<Duration, ConnectError>,
) -> Result<TcpStream, TcpFailure> {
    let mut last = TcpFailure::Timeout;
    for addr in addrs {
        let limit = left().map_err(TcpFailure::Deadline)?;
        match TcpStream::connect_timeout(addr, limit) {
            Ok(tcp) => return Ok(tcp),
            Err(e) if matches!(e.kind(), io::ErrorKind::TimedOut | io::ErrorKind::WouldBlock) => {
                last = TcpFailure::Timeout;
            }
            Err(e) => last = TcpFailure::Error(*addr, e),
        }
    }
    Err(last)
}

/// True if `path` names a readable PEM file with at least one certificate (for an early check
/// of a `--ca-cert` option).
pub fn check_roots_file(path: &Path) -> Result<(), ConnectError> {
    root_store(&TlsRoots::File(path.to_path_buf())).map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_file_errors_are_clear() {
        let dir = std::env::temp_dir().join(format!("ticktrade-net-roots-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let missing = dir.join("missing.pem");
        let err = check_roots_file(&missing).unwrap_err();
        assert!(matches!(&err, ConnectError::Roots { path, .. } if path == &missing), "{err}");
        let empty = dir.join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        assert!(check_roots_file(&empty).unwrap_err().to_string().contains("no CERTIFICATE"));
        let junk = dir.join("junk.pem");
        std::fs::write(&junk, "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n").unwrap();
        let err = check_roots_file(&junk).unwrap_err();
        assert!(matches!(err, ConnectError::Roots { .. }), "{err}");
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let good = dir.join("good.pem");
        std::fs::write(&good, cert.cert.pem()).unwrap();
        assert_eq!(root_store(&TlsRoots::File(good)).unwrap().len(), 1);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn plain_remote_and_bad_urls_fail_before_the_network() {
        let err = connect("ws://192.0.2.1:1/ws", &HotOptions::default()).unwrap_err();
        assert!(matches!(err, ConnectError::PlainRemote { .. }), "{err}");
        assert_eq!(err.step(), None);
        let err = connect("http://x/ws", &HotOptions::default()).unwrap_err();
        assert!(matches!(err, ConnectError::Url { .. }), "{err}");
    }
}
