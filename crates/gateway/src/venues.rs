//! Opening a venue session from venue-neutral options: the one place that maps endpoint
//! names and URLs to venue modules, so front ends (the `trade` command, the shell) hold
//! only `impl Venue` and never name a venue's own types.
//!
//! Owns: the endpoint table (`ENDPOINTS`), `SessionOptions`, `open`.
//! Must not: hold any protocol logic (that is each venue's module). Adding a venue is its
//! module plus its rows here; `crates/gateway/tests/it/venue_isolation.rs` checks that nothing
//! else needs to know it.

use std::time::Duration;

use crate::deribit::{AuthMethod, Deribit, DeribitConfig, PRODUCTION_URL, TESTNET_URL};
use crate::venue::{Credentials, Venue};

/// A named public endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The name users type (`--venue deribit-testnet`).
    pub name: &'static str,
    pub url: &'static str,
}

/// The venues' public endpoints. Any other URL (`--url`) speaks Deribit's API v2, like the
/// embedded simulator and `ticktrade serve`.
pub const ENDPOINTS: &[Endpoint] =
    &[Endpoint { name: "deribit", url: PRODUCTION_URL }, Endpoint { name: "deribit-testnet", url: TESTNET_URL }];

/// The URL of a named endpoint.
pub fn endpoint_url(name: &str) -> Option<&'static str> {
    ENDPOINTS.iter().find(|e| e.name == name).map(|e| e.url)
}

/// What a session needs, in no venue's terms.
#[derive(Clone, Debug)]
pub struct SessionOptions {
    pub url: String,
    pub credentials: Option<Credentials>,
    /// Ask the venue to cancel our orders when the connection drops (on by default).
    pub cancel_on_disconnect: bool,
    /// Send the secret itself to authenticate instead of signing with it (off by default).
    pub send_secret: bool,
    /// Heartbeat interval in seconds.
    pub heartbeat_s: u64,
    pub request_timeout: Duration,
}

impl SessionOptions {
    pub fn new(url: impl Into<String>) -> SessionOptions {
        SessionOptions {
            url: url.into(),
            credentials: None,
            cancel_on_disconnect: true,
            send_secret: false,
            heartbeat_s: 10,
            request_timeout: Duration::from_secs(10),
        }
    }
}

/// A session on the venue behind `options.url` (not yet connected: call `Venue::connect`).
pub fn open(options: SessionOptions) -> impl Venue + Clone + std::fmt::Debug {
    let mut config = DeribitConfig::new(options.url);
    config.credentials = options.credentials;
    config.cancel_on_disconnect = options.cancel_on_disconnect;
    config.heartbeat_s = options.heartbeat_s.max(1);
    config.request_timeout = options.request_timeout;
    config.auth_method = if options.send_secret { AuthMethod::ClientCredentials } else { AuthMethod::ClientSignature };
    Deribit::new(config)
}
