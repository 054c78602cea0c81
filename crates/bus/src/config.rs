//! How to reach the bus: server URLs, credentials and TLS, as NATS users give them, and the
//! connect call itself.
//!
//! Credentials come, first found wins, from the URL (`nats://user:pass@host:4222`,
//! `nats://token@host:4222`), then the environment: `NATS_CREDS` (a `.creds` file),
//! `NATS_NKEY` (an nkey seed), `NATS_TOKEN`, `NATS_USER` with `NATS_PASSWORD`. `tls://` URLs
//! require TLS; a private CA is given as a PEM file (`NATS_CA`, or the caller's flag).
//!
//! Owns: parsing the above into [`BusConfig`] ([`BusConfig::parse`] reads the environment
//! through a lookup function, so it is tested without touching the process's environment),
//! and [`connect`].
//! Must not: show a secret: URLs are kept without their credentials, secrets are
//! [`Secret`]s (`***` in `Debug` and `Display`), and errors name servers without credentials.

use std::path::PathBuf;
use std::time::Duration;

use ticktrade_deribit_proto::signature::Secret;

/// How the client proves who it is.
#[derive(Clone, Debug, Default)]
pub enum Auth {
    #[default]
    None,
    UserPassword {
        user: String,
        password: Secret,
    },
    Token(Secret),
    /// An nkey seed (`SU…`).
    NKey(Secret),
    /// A `.creds` file (JWT and nkey seed).
    CredsFile(PathBuf),
}

/// Where the bus is and how to log in.
#[derive(Clone, Debug)]
pub struct BusConfig {
    /// Server URLs without credentials (`nats://host:4222`, `tls://host:4222`).
    pub servers: Vec<String>,
    pub auth: Auth,
    /// A PEM file of the CA that signed the servers' certificates.
    pub tls_ca: Option<PathBuf>,
    /// Whether TLS is required (a `tls://` URL, or a CA given).
    pub tls_required: bool,
    /// The connection's name, as the server's monitoring shows it.
    pub name: String,
    /// How long the first connect may take before it fails.
    pub connect_timeout: Duration,
}

/// Why a bus address or its login is not usable.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("no NATS server URL given")]
    NoServer,
    #[error("NATS URL {0:?}: expected nats://HOST:PORT or tls://HOST:PORT")]
    BadUrl(String),
    #[error("NATS URLs carry different credentials; give them once (in the first URL or the environment)")]
    MixedCredentials,
    #[error("NATS_USER is set without NATS_PASSWORD")]
    UserWithoutPassword,
}

/// Why the bus could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum BusError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("reading NATS credentials file {path}: {source}")]
    Creds { path: PathBuf, source: std::io::Error },
    #[error("connecting to NATS at {servers}: {source}")]
    Connect { servers: String, source: async_nats::ConnectError },
}

/// A URL split into its address (no credentials) and its credentials, if any.
fn split_url(url: &str) -> Result<(String, Option<Auth>), ConfigError> {
    let url = url.trim();
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(ConfigError::BadUrl(redact(url)));
    };
    if !matches!(scheme, "nats" | "tls") {
        return Err(ConfigError::BadUrl(redact(url)));
    }
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    let (userinfo, host) = match authority.rsplit_once('@') {
        Some((userinfo, host)) => (Some(userinfo), host),
        None => (None, authority),
    };
    if host.is_empty() || !(path.is_empty() || path == "/") {
        return Err(ConfigError::BadUrl(redact(url)));
    }
    let auth = userinfo.filter(|u| !u.is_empty()).map(|u| match u.split_once(':') {
        Some((user, password)) => Auth::UserPassword { user: user.to_owned(), password: Secret::new(password) },
        None => Auth::Token(Secret::new(u)),
    });
    Ok((format!("{scheme}://{host}"), auth))
}

/// `url` with whatever stands before an `@` replaced by `***`, for messages.
fn redact(url: &str) -> String {
    match (url.split_once("://"), url.rfind('@')) {
        (Some((scheme, _)), Some(at)) => format!("{scheme}://***{}", &url[at..]),
        _ => url.to_owned(),
    }
}

fn same_auth(a: &Auth, b: &Auth) -> bool {
    match (a, b) {
        (Auth::UserPassword { user: u1, password: p1 }, Auth::UserPassword { user: u2, password: p2 }) => {
            u1 == u2 && p1.expose() == p2.expose()
        }
        (Auth::Token(t1), Auth::Token(t2)) => t1.expose() == t2.expose(),
        _ => false,
    }
}

impl BusConfig {
    /// A comma-separated URL list (`nats://a:4222,nats://b:4222`), the environment read
    /// through `env`, and an explicit CA file (which wins over `NATS_CA`).
    pub fn parse(
        urls: &str,
        tls_ca: Option<PathBuf>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<BusConfig, ConfigError> {
        let mut servers = Vec::new();
        let mut url_auth: Option<Auth> = None;
        for url in urls.split(',').map(str::trim).filter(|u| !u.is_empty()) {
            let (server, auth) = split_url(url)?;
            servers.push(server);
            if let Some(auth) = auth {
                match &url_auth {
                    Some(first) if !same_auth(first, &auth) => return Err(ConfigError::MixedCredentials),
                    Some(_) => {}
                    None => url_auth = Some(auth),
                }
            }
        }
        if servers.is_empty() {
            return Err(ConfigError::NoServer);
        }
        let set = |name: &str| env(name).filter(|v| !v.is_empty());
        let auth = match url_auth {
            Some(auth) => auth,
            None => {
                if let Some(path) = set("NATS_CREDS") {
                    Auth::CredsFile(PathBuf::from(path))
                } else if let Some(seed) = set("NATS_NKEY") {
                    Auth::NKey(Secret::new(seed))
                } else if let Some(token) = set("NATS_TOKEN") {
                    Auth::Token(Secret::new(token))
                } else if let Some(user) = set("NATS_USER") {
                    let password = set("NATS_PASSWORD").ok_or(ConfigError::UserWithoutPassword)?;
                    Auth::UserPassword { user, password: Secret::new(password) }
                } else {
                    Auth::None
                }
            }
        };
        let tls_ca = tls_ca.or_else(|| set("NATS_CA").map(PathBuf::from));
        let tls_required = tls_ca.is_some() || servers.iter().any(|s| s.starts_with("tls://"));
        Ok(BusConfig {
            servers,
            auth,
            tls_ca,
            tls_required,
            name: "ticktrade".to_owned(),
            connect_timeout: Duration::from_secs(5),
        })
    }

    /// The servers, comma-separated, for messages (no credentials in them).
    pub fn servers_text(&self) -> String {
        self.servers.join(",")
    }
}

/// Connects to the bus; `events` sees every connection event (connected, disconnected, slow
/// consumer…) for the life of the client. The first connect fails (it is not retried) when
/// no server answers or the login is refused; later losses are reconnected by the client.
pub async fn connect(
    config: &BusConfig,
    events: impl Fn(async_nats::Event) + Send + Sync + 'static,
) -> Result<async_nats::Client, BusError> {
    let events = std::sync::Arc::new(events);
    let mut options = async_nats::ConnectOptions::new()
        .name(&config.name)
        .connection_timeout(config.connect_timeout)
        .request_timeout(Some(Duration::from_secs(5)))
        .require_tls(config.tls_required)
        .event_callback(move |event| {
            let events = std::sync::Arc::clone(&events);
            async move { events(event) }
        });
    if let Some(ca) = &config.tls_ca {
        options = options.add_root_certificates(ca.clone());
    }
    options = match &config.auth {
        Auth::None => options,
        Auth::UserPassword { user, password } => options.user_and_password(user.clone(), password.expose().to_owned()),
        Auth::Token(token) => options.token(token.expose().to_owned()),
        Auth::NKey(seed) => options.nkey(seed.expose().to_owned()),
        Auth::CredsFile(path) => {
            options.credentials_file(path).await.map_err(|source| BusError::Creds { path: path.clone(), source })?
        }
    };
    let addrs: Vec<async_nats::ServerAddr> = config
        .servers
        .iter()
        .map(|s| s.parse::<async_nats::ServerAddr>())
        .collect::<Result<_, _>>()
        .map_err(|_| ConfigError::BadUrl(config.servers_text()))?;
    options.connect(addrs).await.map_err(|source| BusError::Connect { servers: config.servers_text(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn urls_lose_their_credentials_and_keep_them_apart() {
        let c =
            BusConfig::parse("nats://alice:s3cret@127.0.0.1:4222, nats://alice:s3cret@h2:4222", None, no_env).unwrap();
        assert_eq!(c.servers, ["nats://127.0.0.1:4222", "nats://h2:4222"]);
        assert!(
            matches!(&c.auth, Auth::UserPassword { user, password } if user == "alice" && password.expose() == "s3cret")
        );
        let shown = format!("{c:?} {}", c.servers_text());
        assert!(!shown.contains("s3cret"), "{shown}");
        let t = BusConfig::parse("nats://tok3n@h:4222", None, no_env).unwrap();
        assert!(matches!(&t.auth, Auth::Token(s) if s.expose() == "tok3n"));
        assert!(!format!("{t:?}").contains("tok3n"));
        assert!(!t.tls_required);
    }

    #[test]
    fn the_environment_gives_credentials_when_urls_do_not() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(n, _)| *n == name).map(|(_, v)| (*v).to_owned())
        };
        let c = BusConfig::parse("nats://h:4222", None, env(&[("NATS_USER", "bob"), ("NATS_PASSWORD", "pw")])).unwrap();
        assert!(matches!(&c.auth, Auth::UserPassword { user, password } if user == "bob" && password.expose() == "pw"));
        let c = BusConfig::parse("nats://h:4222", None, env(&[("NATS_TOKEN", "t"), ("NATS_USER", "bob")])).unwrap();
        assert!(matches!(&c.auth, Auth::Token(_)));
        let c = BusConfig::parse("nats://h:4222", None, env(&[("NATS_NKEY", "SUAKEY"), ("NATS_TOKEN", "t")])).unwrap();
        assert!(matches!(&c.auth, Auth::NKey(s) if s.expose() == "SUAKEY"));
        assert!(!format!("{c:?}").contains("SUAKEY"));
        let c =
            BusConfig::parse("nats://h:4222", None, env(&[("NATS_CREDS", "/x.creds"), ("NATS_NKEY", "S")])).unwrap();
        assert!(matches!(&c.auth, Auth::CredsFile(p) if p == &PathBuf::from("/x.creds")));
        let c = BusConfig::parse("nats://u:p@h:4222", None, env(&[("NATS_TOKEN", "t")])).unwrap();
        assert!(matches!(&c.auth, Auth::UserPassword { .. }), "the URL wins");
        assert!(matches!(
            BusConfig::parse("nats://h:4222", None, env(&[("NATS_USER", "bob")])),
            Err(ConfigError::UserWithoutPassword)
        ));
    }

    #[test]
    fn tls_urls_and_a_ca_require_tls() {
        let c = BusConfig::parse("tls://h:4222", None, no_env).unwrap();
        assert!(c.tls_required && c.tls_ca.is_none());
        let c = BusConfig::parse("nats://h:4222", Some(PathBuf::from("/ca.pem")), |n| {
            (n == "NATS_CA").then(|| "/other.pem".to_owned())
        })
        .unwrap();
        assert!(c.tls_required);
        assert_eq!(c.tls_ca, Some(PathBuf::from("/ca.pem")), "the explicit CA wins");
        let c = BusConfig::parse("nats://h:4222", None, |n| (n == "NATS_CA").then(|| "/env.pem".to_owned())).unwrap();
        assert_eq!(c.tls_ca, Some(PathBuf::from("/env.pem")));
    }

    #[test]
    fn bad_urls_are_named_without_their_secrets() {
        for bad in ["", " , ", "http://h:4222", "h:4222", "nats://", "nats://u:pw@h:4222/path"] {
            let e = BusConfig::parse(bad, None, no_env).unwrap_err();
            assert!(!e.to_string().contains("pw"), "{e}");
        }
        assert!(matches!(
            BusConfig::parse("nats://a:1@h:1,nats://b:2@h:2", None, no_env),
            Err(ConfigError::MixedCredentials)
        ));
    }
}
