//! WebSocket client connect: `ws://` only to loopback hosts (unless the caller opts in),
//! `wss://` through rustls verifying the server certificate against the webpki roots.
//!
//! Owns: URL → host/port, TCP connect with a timeout and `TCP_NODELAY`, the TLS config,
//! frame/message size limits.
//! Must not: offer a way to skip certificate verification.

use std::net::IpAddr;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use crate::NetError;

/// A connected WebSocket, plain or TLS.
pub type WsStream = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// How to connect.
#[derive(Clone, Debug)]
pub struct ConnectOptions {
    pub connect_timeout: Duration,
    /// Largest message accepted from the peer (instrument lists can be a few MB).
    pub max_message_bytes: usize,
    /// Allow `ws://` to a host that is not loopback (a simulator on another machine).
    pub allow_plain_remote: bool,
}

impl Default for ConnectOptions {
    fn default() -> ConnectOptions {
        ConnectOptions {
            connect_timeout: Duration::from_secs(10),
            max_message_bytes: 64 << 20,
            allow_plain_remote: false,
        }
    }
}

pub(crate) struct Target {
    pub(crate) tls: bool,
    pub(crate) host: String,
    pub(crate) port: u16,
    /// `host[:port]` as written (the `Host` header).
    pub(crate) authority: String,
    /// Path and query, `/` when the URL has none.
    pub(crate) path: String,
}

pub(crate) fn parse_url(url: &str) -> Result<Target, NetError> {
    let bad = |reason| NetError::Url { url: url.to_owned(), reason };
    let (tls, rest) = if let Some(rest) = url.strip_prefix("wss://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("ws://") {
        (false, rest)
    } else {
        return Err(bad("scheme must be ws:// or wss://"));
    };
    let authority = rest.split(['/', '?']).next().unwrap_or_default();
    if authority.is_empty() || authority.contains('@') {
        return Err(bad("missing host (or userinfo present)"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (host, after) = v6.split_once(']').ok_or_else(|| bad("unclosed IPv6 bracket"))?;
        (host, after.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad("missing host"));
    }
    let port = match port {
        Some(port) => port.parse().map_err(|_| bad("bad port"))?,
        None if tls => 443,
        None => 80,
    };
    let path = match &rest[authority.len()..] {
        "" => "/".to_owned(),
        p if p.starts_with('?') => format!("/{p}"),
        p => p.to_owned(),
    };
    Ok(Target { tls, host: host.to_owned(), port, authority: authority.to_owned(), path })
}

/// True for `ws://127.0.0.1…`, `ws://localhost…`, `ws://[::1]…`.
pub fn is_loopback_url(url: &str) -> bool {
    parse_url(url).map(|t| is_loopback_host(&t.host)).unwrap_or(false)
}

pub(crate) fn is_loopback_host(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().map(|ip| ip.is_loopback()).unwrap_or(false)
}

fn tls_config() -> Arc<rustls::ClientConfig> {
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    CONFIG
        .get_or_init(|| {
            let roots = rustls::RootCertStore { roots: webpki_roots::TLS_SERVER_ROOTS.to_vec() };
            let provider = Arc::new(rustls::crypto::ring::default_provider());
            let config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .map(|b| b.with_root_certificates(roots).with_no_client_auth());
            // The ring provider supports the default protocol versions; if it ever did not,
            // an empty root store makes every TLS connect fail closed rather than open.
            Arc::new(config.unwrap_or_else(|_| {
                rustls::ClientConfig::builder()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth()
            }))
        })
        .clone()
}

/// Connects to `url` and completes the WebSocket handshake.
pub async fn connect_ws(url: &str, options: &ConnectOptions) -> Result<WsStream, NetError> {
    let target = parse_url(url)?;
    if !target.tls && !options.allow_plain_remote && !is_loopback_host(&target.host) {
        return Err(NetError::PlainRemote { host: target.host });
    }
    let addr = format!("{}:{}", target.host, target.port);
    let tcp = tokio::time::timeout(options.connect_timeout, TcpStream::connect(&addr))
        .await
        .map_err(|_| NetError::ConnectTimeout { addr: addr.clone() })?
        .map_err(|source| NetError::Connect { addr: addr.clone(), source })?;
    tcp.set_nodelay(true).map_err(|source| NetError::Connect { addr: addr.clone(), source })?;
    let request = url.into_client_request()?;
    let mut config = WebSocketConfig::default();
    config.max_message_size = Some(options.max_message_bytes);
    config.max_frame_size = Some(options.max_message_bytes);
    let connector = if target.tls { Connector::Rustls(tls_config()) } else { Connector::Plain };
    let handshake = tokio_tungstenite::client_async_tls_with_config(request, tcp, Some(config), Some(connector));
    let (stream, _response) = tokio::time::timeout(options.connect_timeout, handshake)
        .await
        .map_err(|_| NetError::ConnectTimeout { addr })??;
    Ok(stream)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let t = parse_url("wss://test.deribit.com/ws/api/v2").unwrap();
        assert!(t.tls && t.host == "test.deribit.com" && t.port == 443);
        let t = parse_url("ws://127.0.0.1:8080/ws/api/v2").unwrap();
        assert!(!t.tls && t.port == 8080);
        let t = parse_url("ws://[::1]:9/x").unwrap();
        assert_eq!(t.host, "::1");
        assert_eq!((t.authority.as_str(), t.path.as_str()), ("[::1]:9", "/x"));
        assert_eq!(parse_url("wss://h").unwrap().path, "/");
        assert!(parse_url("http://x").is_err());
        assert!(parse_url("ws://:80").is_err());
        assert!(parse_url("ws://h:notaport/").is_err());
    }

    #[test]
    fn loopback_detection() {
        assert!(is_loopback_url("ws://127.0.0.1:1/ws"));
        assert!(is_loopback_url("ws://localhost:1/ws"));
        assert!(is_loopback_url("ws://[::1]:1/ws"));
        assert!(!is_loopback_url("ws://10.0.0.1:1/ws"));
    }

    #[tokio::test]
    async fn plain_remote_is_refused() {
        let err = connect_ws("ws://192.0.2.1:1/ws", &ConnectOptions::default()).await.unwrap_err();
        assert!(matches!(err, NetError::PlainRemote { .. }), "{err}");
    }

    #[tokio::test]
    async fn refused_port_is_a_connect_error() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        drop(listener);
        let err = connect_ws(&format!("ws://127.0.0.1:{port}/ws"), &ConnectOptions::default()).await.unwrap_err();
        assert!(matches!(err, NetError::Connect { .. }), "{err}");
    }

    #[tokio::test]
    async fn self_signed_certificate_is_rejected() {
        // A TLS server with a self-signed certificate: the client must refuse it (the C++
        // baseline skipped this check).
        let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let key = rustls::pki_types::PrivateKeyDer::Pkcs8(cert.signing_key.serialize_der().into());
        let server = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![cert.cert.der().clone()], key)
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            if let Ok((tcp, _)) = listener.accept().await {
                let _ = acceptor.accept(tcp).await;
            }
        });
        let err = connect_ws(&format!("wss://localhost:{port}/ws"), &ConnectOptions::default()).await.unwrap_err();
        let text = err.to_string();
        assert!(text.contains("certificate") || text.contains("Certificate"), "{text}");
    }
}
