//! One port for everything: the axum router (WebSocket + HTTP), plain TCP or TLS.
//!
//! Why axum 0.8 over hand-wired hyper: it serves the WebSocket upgrade and the HTTP JSON-RPC
//! routes on the same listener with one router, and `hyper-util`'s connection builder lets the
//! same router run over a rustls stream, so TLS is a different accept step, not a different
//! server.
//!
//! Why `yawc` for the WebSocket (not axum's own, which is tokio-tungstenite): Deribit accepts
//! permessage-deflate (RFC 7692) and clients offer it; tungstenite 0.30 has no deflate
//! extension and rejects RSV1 frames, so it can only decline. yawc negotiates it through the
//! axum extractor `IncomingUpgrade` (plain frames when the client does not offer it), answers
//! pings, bounds frame and message sizes (1009 above them), and is Autobahn-compliant. The
//! Hyperliquid node server (`crates/hl-node`) uses the same crate.
//!
//! Owns: the accept loop, the TLS acceptor (self-signed certificate from `rcgen` at start, or
//! `--cert/--key` PEM files), and graceful shutdown of the listener.
//! Must not: know methods or sessions (see `ws`, `http`, `session`).
//!
//! Compression: offered `permessage-deflate` is accepted with yawc's low-latency profile
//! (server context takeover kept, so repeated book frames compress well); messages under
//! `yawc`'s threshold go out uncompressed, as RFC 7692 allows per message.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;

use crate::session::Shared;

/// Largest WebSocket message/frame read before the socket is closed with 1009 (requests
/// above Deribit's 32 kB but below this get `-32600` and the session continues).
pub const MAX_WS_MESSAGE: usize = 1 << 20;

/// How long a connection may take to send its request headers (half-open clients).
pub const HEADER_READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Certificate material for `wss://`/`https://`.
#[derive(Clone, Debug)]
pub enum TlsSource {
    /// Generate a self-signed certificate for `localhost`/`127.0.0.1` at start.
    SelfSigned,
    /// PEM files.
    Files { cert: std::path::PathBuf, key: std::path::PathBuf },
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind { addr: SocketAddr, source: std::io::Error },
    #[error("TLS setup: {0}")]
    Tls(String),
    #[error("reading {path}: {source}")]
    Read { path: String, source: std::io::Error },
}

#[derive(Clone)]
struct AppState {
    shared: Arc<Shared>,
    shutdown: watch::Receiver<bool>,
}

impl axum::extract::FromRef<AppState> for Arc<Shared> {
    fn from_ref(state: &AppState) -> Arc<Shared> {
        state.shared.clone()
    }
}

/// The WebSocket options every session gets: size limits, and deflate when the client offers it.
pub fn ws_options() -> yawc::Options {
    yawc::Options::default().with_limits(MAX_WS_MESSAGE, 2 * MAX_WS_MESSAGE).with_low_latency_compression()
}

async fn upgrade(State(state): State<AppState>, ws: yawc::IncomingUpgrade) -> Response {
    let (response, socket) = match ws.upgrade(ws_options()) {
        Ok(pair) => pair,
        Err(err) => {
            tracing::debug!(%err, "websocket upgrade refused");
            return (axum::http::StatusCode::BAD_REQUEST, "bad websocket upgrade").into_response();
        }
    };
    tokio::spawn(async move {
        match socket.await {
            Ok(socket) => crate::ws::serve(socket, state.shared, state.shutdown).await,
            Err(err) => tracing::debug!(%err, "websocket upgrade failed"),
        }
    });
    response.map(axum::body::Body::new)
}

fn router(shared: Arc<Shared>, shutdown: watch::Receiver<bool>) -> Router {
    Router::new()
        .route("/ws/api/v2", get(upgrade))
        .route("/ws/api/v2/", get(upgrade))
        .route("/api/v2", any(crate::http::serve))
        .route("/api/v2/", any(crate::http::serve))
        .route("/api/v2/{scope}/{method}", any(crate::http::serve))
        .with_state(AppState { shared, shutdown })
}

/// Loads or generates the TLS acceptor.
pub fn tls_acceptor(source: &TlsSource) -> Result<(TlsAcceptor, Vec<u8>), ServerError> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let (certs, key): (Vec<CertificateDer<'static>>, PrivateKeyDer<'static>) = match source {
        TlsSource::SelfSigned => {
            let names = vec!["localhost".to_owned(), "127.0.0.1".to_owned()];
            let certified = rcgen::generate_simple_self_signed(names).map_err(|e| ServerError::Tls(e.to_string()))?;
            let key = PrivateKeyDer::try_from(certified.signing_key.serialize_der())
                .map_err(|e| ServerError::Tls(e.to_string()))?;
            (vec![certified.cert.der().clone()], key)
        }
        TlsSource::Files { cert, key } => {
            let read = |path: &Path| {
                std::fs::read(path).map_err(|source| ServerError::Read { path: path.display().to_string(), source })
            };
            let cert_pem = read(cert)?;
            let key_pem = read(key)?;
            let certs = rustls_pemfile::certs(&mut cert_pem.as_slice())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| ServerError::Tls(e.to_string()))?;
            let key = rustls_pemfile::private_key(&mut key_pem.as_slice())
                .map_err(|e| ServerError::Tls(e.to_string()))?
                .ok_or_else(|| ServerError::Tls("no private key in key file".to_owned()))?;
            (certs, key)
        }
    };
    let cert_der = certs.first().map(|c| c.as_ref().to_vec()).unwrap_or_default();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServerError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| ServerError::Tls(e.to_string()))?;
    Ok((TlsAcceptor::from(Arc::new(config)), cert_der))
}

/// Binds `addr` and serves until `shutdown` turns true. Returns the bound address.
pub async fn start(
    addr: SocketAddr,
    shared: Arc<Shared>,
    tls: Option<TlsAcceptor>,
    shutdown: watch::Receiver<bool>,
) -> Result<(SocketAddr, tokio::task::JoinHandle<()>), ServerError> {
    let listener = TcpListener::bind(addr).await.map_err(|source| ServerError::Bind { addr, source })?;
    let local = listener.local_addr().map_err(|source| ServerError::Bind { addr, source })?;
    let app = router(shared, shutdown.clone());
    let task = tokio::spawn(accept_loop(listener, app, tls, shutdown));
    Ok((local, task))
}

async fn accept_loop(
    listener: TcpListener,
    app: Router,
    tls: Option<TlsAcceptor>,
    mut shutdown: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = shutdown.changed() => break,
        };
        let (stream, peer) = match accepted {
            Ok(pair) => pair,
            Err(err) => {
                tracing::warn!(%err, "accept failed");
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let tls = tls.clone();
        let mut conn_shutdown = shutdown.clone();
        tokio::spawn(async move {
            let service = TowerToHyperService::new(app);
            let mut builder = Builder::new(TokioExecutor::new());
            // A client that connects and never finishes its request headers is dropped.
            builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_READ_TIMEOUT);
            let result = match tls {
                Some(acceptor) => {
                    let handshake =
                        tokio::time::timeout(std::time::Duration::from_secs(10), acceptor.accept(stream)).await;
                    match handshake {
                        Ok(Ok(stream)) => {
                            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                            tokio::select! { r = conn => r, _ = conn_shutdown.changed() => Ok(()) }
                        }
                        _ => {
                            tracing::debug!(%peer, "TLS handshake failed");
                            return;
                        }
                    }
                }
                None => {
                    let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                    tokio::select! { r = conn => r, _ = conn_shutdown.changed() => Ok(()) }
                }
            };
            if let Err(err) = result {
                tracing::debug!(%peer, %err, "connection ended with an error");
            }
        });
    }
}
