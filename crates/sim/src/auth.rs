//! API keys, access/refresh tokens with expiry and scopes, and request signatures.
//!
//! Owns: the key table (`--key ID:SECRET`), issued tokens and what each grants, the three
//! `public/auth` grants and the REST `Authorization` header forms (Bearer, Basic,
//! `deri-hmac-sha256`), with Deribit's error codes.
//! Must not: read a clock (time comes in) or let a secret reach a log: secrets live in
//! [`Secret`], whose `Debug`/`Display` print `***`.

use std::collections::HashMap;

use base64::Engine as _;
use hmac::{Hmac, Mac};
use sha2::Sha256;
use ticktrade_core::Utc;
use ticktrade_deribit_proto::signature;

use crate::market::AccountId;
use crate::rpc::RpcError;
use ticktrade_core::SplitMix64;

pub use ticktrade_deribit_proto::signature::Secret;

/// One API key: client id, secret, the account it trades for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ApiKey {
    pub client_id: String,
    pub client_secret: Secret,
}

impl ApiKey {
    pub const DEFAULT_ID: &'static str = "ticktrade-sim";
    pub const DEFAULT_SECRET: &'static str = "ticktrade-sim-secret";

    /// The key used when none is configured.
    pub fn default_key() -> ApiKey {
        ApiKey { client_id: Self::DEFAULT_ID.to_owned(), client_secret: Secret::new(Self::DEFAULT_SECRET) }
    }

    /// Parses `CLIENT_ID:CLIENT_SECRET`.
    pub fn parse(text: &str) -> Option<ApiKey> {
        let (id, secret) = text.split_once(':')?;
        (!id.is_empty() && !secret.is_empty())
            .then(|| ApiKey { client_id: id.to_owned(), client_secret: Secret::new(secret) })
    }
}

/// `hex(HMAC-SHA256(secret, msg))` for an already joined string (tests, tools).
pub fn sign(secret: &Secret, msg: &str) -> String {
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(secret.expose().as_bytes()) else { return String::new() };
    mac.update(msg.as_bytes());
    hex::encode(mac.finalize().into_bytes())
}

/// What a valid token grants.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    pub account: AccountId,
    pub client_id: String,
    pub scope: Scope,
    /// `Some(session)` for `connection`-scoped tokens: valid on that connection only.
    pub connection: Option<u64>,
}

/// The permissions of a token (the parts of Deribit's scope string the simulator checks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    pub trade_write: bool,
    pub trade_read: bool,
    pub account_read: bool,
    pub session_name: Option<String>,
    pub expires_s: i64,
}

impl Scope {
    /// Narrows the requested scope string to what a key may have (everything, in the simulator).
    pub fn parse(requested: Option<&str>, default_expires_s: i64) -> Result<Scope, RpcError> {
        let mut scope = Scope {
            trade_write: true,
            trade_read: true,
            account_read: true,
            session_name: None,
            expires_s: default_expires_s,
        };
        for part in requested.unwrap_or("").split_whitespace() {
            match part.split_once(':') {
                Some(("session", name)) => scope.session_name = Some(name.to_owned()),
                Some(("expires", secs)) => {
                    scope.expires_s = secs.parse().map_err(|_| RpcError::invalid_param("scope", "invalid format"))?;
                }
                Some(("trade", level)) => {
                    scope.trade_write = level == "read_write";
                    scope.trade_read = level != "none";
                }
                Some(("account", level)) => scope.account_read = level != "none",
                _ => {}
            }
        }
        Ok(scope)
    }

    /// Deribit's scope string for the auth result.
    pub fn render(&self) -> String {
        let trade = if self.trade_write {
            "read_write"
        } else if self.trade_read {
            "read"
        } else {
            "none"
        };
        let account = if self.account_read { "read_write" } else { "none" };
        let session = match &self.session_name {
            Some(name) => format!("session:{name}"),
            None => "connection".to_owned(),
        };
        format!("account:{account} {session} expires:{} mainaccount trade:{trade} wallet:read_write", self.expires_s)
    }
}

#[derive(Clone, Debug)]
struct Issued {
    grant: Grant,
    expires: Utc,
    refresh: String,
}

/// The key table and issued tokens. Lives behind a mutex in the server (not the matching path).
#[derive(Debug)]
pub struct Tokens {
    keys: Vec<ApiKey>,
    access: HashMap<String, Issued>,
    refresh: HashMap<String, (Grant, Utc)>,
    used_nonces: HashMap<String, Utc>,
    rng: SplitMix64,
    pub default_expires_s: i64,
}

/// A successful `public/auth`.
#[derive(Clone, Debug)]
pub struct AuthOutcome {
    pub access_token: String,
    pub refresh_token: String,
    pub expires_in: i64,
    pub grant: Grant,
}

/// Accounts are numbered from here (0 and 1 are the synthetic participants).
pub const FIRST_ACCOUNT: AccountId = 10;
const SIGNATURE_WINDOW_MS: i64 = 60_000;

impl Tokens {
    pub fn new(keys: Vec<ApiKey>, seed: u64, default_expires_s: i64) -> Tokens {
        Tokens {
            keys,
            access: HashMap::new(),
            refresh: HashMap::new(),
            used_nonces: HashMap::new(),
            rng: crate::seeded_rng(seed ^ 0xA17),
            default_expires_s,
        }
    }

    pub fn keys(&self) -> &[ApiKey] {
        &self.keys
    }

    fn key(&self, client_id: &str) -> Option<(AccountId, &ApiKey)> {
        self.keys
            .iter()
            .enumerate()
            .find(|(_, k)| k.client_id == client_id)
            .map(|(i, k)| (FIRST_ACCOUNT + i as AccountId, k))
    }

    fn token(&mut self, now: Utc) -> String {
        format!("{}.{:016x}{:016x}", now.as_millis(), self.rng.next_u64(), self.rng.next_u64())
    }

    fn issue(&mut self, now: Utc, grant: Grant) -> AuthOutcome {
        let access = self.token(now);
        let refresh = self.token(now);
        let expires_in = grant.scope.expires_s;
        let expires = Utc::from_millis(now.as_millis().saturating_add(expires_in.saturating_mul(1_000)));
        self.access.insert(access.clone(), Issued { grant: grant.clone(), expires, refresh: refresh.clone() });
        // Refresh tokens live a little longer than the access token, as Deribit's do.
        let refresh_expires = Utc::from_millis(expires.as_millis().saturating_add(expires_in.saturating_mul(1_000)));
        self.refresh.insert(refresh.clone(), (grant.clone(), refresh_expires));
        AuthOutcome { access_token: access, refresh_token: refresh, expires_in, grant }
    }

    fn check_nonce(&mut self, now: Utc, client_id: &str, timestamp: i64, nonce: &str) -> Result<(), RpcError> {
        if (now.as_millis() - timestamp).abs() > SIGNATURE_WINDOW_MS {
            return Err(RpcError::with_data(13009, "unauthorized", serde_json::json!({"reason": "invalid_timestamp"})));
        }
        let cutoff = Utc::from_millis(now.as_millis() - 2 * SIGNATURE_WINDOW_MS);
        self.used_nonces.retain(|_, seen| *seen > cutoff);
        let key = format!("{client_id}\n{timestamp}\n{nonce}");
        // Deribit answers a replayed (timestamp, nonce) pair as bad credentials, naming the nonce.
        if self.used_nonces.insert(key, now).is_some() {
            return Err(RpcError::with_data(13004, "invalid_credentials", serde_json::json!({"invalid": "nonce"})));
        }
        Ok(())
    }

    /// `public/auth`, all three grants. `connection` is the WebSocket session id (None on HTTP).
    pub fn authenticate(
        &mut self,
        now: Utc,
        params: &ticktrade_deribit_proto::api::AuthParams,
        connection: Option<u64>,
    ) -> Result<AuthOutcome, RpcError> {
        let scope = Scope::parse(params.scope.as_deref(), self.default_expires_s)?;
        let bind = |scope: &Scope| if scope.session_name.is_some() { None } else { connection };
        match params.grant_type.as_str() {
            "client_credentials" => {
                let id = params
                    .client_id
                    .as_deref()
                    .ok_or_else(|| RpcError::invalid_param("client_id", "must be present"))?;
                let secret = params
                    .client_secret
                    .as_deref()
                    .ok_or_else(|| RpcError::invalid_param("client_secret", "must be present"))?;
                let (account, key) = self.key(id).ok_or_else(|| RpcError::new(13004, "invalid_credentials"))?;
                if key.client_secret.expose() != secret {
                    return Err(RpcError::new(13004, "invalid_credentials"));
                }
                let grant = Grant { account, client_id: id.to_owned(), connection: bind(&scope), scope };
                Ok(self.issue(now, grant))
            }
            "client_signature" => {
                let id = params
                    .client_id
                    .as_deref()
                    .ok_or_else(|| RpcError::invalid_param("client_id", "must be present"))?;
                let timestamp =
                    params.timestamp.ok_or_else(|| RpcError::invalid_param("timestamp", "must be present"))?;
                let signature = params
                    .signature
                    .as_deref()
                    .ok_or_else(|| RpcError::invalid_param("signature", "must be present"))?;
                let nonce = params.nonce.as_deref().unwrap_or("");
                let data = params.data.as_deref().unwrap_or("");
                let (account, key) = self.key(id).ok_or_else(|| RpcError::new(13004, "invalid_credentials"))?;
                let valid = u64::try_from(timestamp)
                    .is_ok_and(|ts| signature::verify_client_signature(&key.client_secret, ts, nonce, data, signature));
                if !valid {
                    return Err(RpcError::with_data(
                        13009,
                        "unauthorized",
                        serde_json::json!({"reason": "invalid_signature"}),
                    ));
                }
                self.check_nonce(now, id, timestamp, nonce)?;
                let grant = Grant { account, client_id: id.to_owned(), connection: bind(&scope), scope };
                Ok(self.issue(now, grant))
            }
            "refresh_token" => {
                let token = params
                    .refresh_token
                    .as_deref()
                    .ok_or_else(|| RpcError::invalid_param("refresh_token", "must be present"))?;
                let (mut grant, expires) = self.refresh.remove(token).ok_or_else(RpcError::unauthorized)?;
                if expires <= now {
                    return Err(RpcError::unauthorized());
                }
                if params.scope.is_some() {
                    grant.scope = scope;
                }
                grant.connection =
                    if grant.scope.session_name.is_some() { None } else { connection.or(grant.connection) };
                Ok(self.issue(now, grant))
            }
            _ => Err(RpcError::invalid_param("grant_type", "invalid value")),
        }
    }

    /// Checks an access token presented on `connection` (None = HTTP).
    pub fn check(&self, now: Utc, token: &str, connection: Option<u64>) -> Result<Grant, RpcError> {
        let issued = self.access.get(token).ok_or_else(RpcError::unauthorized)?;
        if issued.expires <= now {
            return Err(RpcError::with_data(13009, "unauthorized", serde_json::json!({"reason": "token_expired"})));
        }
        if let (Some(bound), Some(conn)) = (issued.grant.connection, connection)
            && bound != conn
        {
            return Err(RpcError::unauthorized());
        }
        Ok(issued.grant.clone())
    }

    /// `private/logout` with `invalidate_token`: drops the token and its refresh token.
    pub fn revoke(&mut self, token: &str) {
        if let Some(issued) = self.access.remove(token) {
            self.refresh.remove(&issued.refresh);
        }
    }

    /// Drops expired tokens (called now and then).
    pub fn prune(&mut self, now: Utc) {
        self.access.retain(|_, t| t.expires > now);
        self.refresh.retain(|_, (_, e)| *e > now);
    }

    /// The REST `Authorization` header: `Bearer`, `Basic` or `deri-hmac-sha256`.
    pub fn check_header(
        &mut self,
        now: Utc,
        header: &str,
        http_method: &str,
        uri: &str,
        body: &str,
    ) -> Result<Grant, RpcError> {
        let (kind, rest) = header.trim().split_once(' ').ok_or_else(RpcError::unauthorized)?;
        match kind.to_ascii_lowercase().as_str() {
            "bearer" => self.check(now, rest.trim(), None),
            "basic" => {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(rest.trim())
                    .map_err(|_| RpcError::unauthorized())?;
                let text = String::from_utf8(decoded).map_err(|_| RpcError::unauthorized())?;
                let (id, secret) = text.split_once(':').ok_or_else(RpcError::unauthorized)?;
                let (account, key) = self.key(id).ok_or_else(|| RpcError::new(13004, "invalid_credentials"))?;
                if key.client_secret.expose() != secret {
                    return Err(RpcError::new(13004, "invalid_credentials"));
                }
                let scope = Scope::parse(None, self.default_expires_s)?;
                Ok(Grant { account, client_id: id.to_owned(), scope, connection: None })
            }
            "deri-hmac-sha256" => {
                let mut fields = HashMap::new();
                for part in rest.split(',') {
                    if let Some((k, v)) = part.trim().split_once('=') {
                        fields.insert(k.trim(), v.trim());
                    }
                }
                let id = fields.get("id").copied().ok_or_else(RpcError::unauthorized)?;
                let ts: i64 = fields.get("ts").and_then(|t| t.parse().ok()).ok_or_else(RpcError::unauthorized)?;
                let sig = fields.get("sig").copied().ok_or_else(RpcError::unauthorized)?;
                let nonce = fields.get("nonce").copied().unwrap_or("");
                let (account, key) = self.key(id).ok_or_else(|| RpcError::new(13004, "invalid_credentials"))?;
                let expected = u64::try_from(ts)
                    .map(|ts| signature::http_signature(&key.client_secret, ts, nonce, http_method, uri, body))
                    .unwrap_or_default();
                if expected.is_empty() || !expected.eq_ignore_ascii_case(sig) {
                    return Err(RpcError::with_data(
                        13009,
                        "unauthorized",
                        serde_json::json!({"reason": "invalid_signature"}),
                    ));
                }
                self.check_nonce(now, id, ts, nonce)?;
                let scope = Scope::parse(None, self.default_expires_s)?;
                Ok(Grant { account, client_id: id.to_owned(), scope, connection: None })
            }
            _ => Err(RpcError::unauthorized()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticktrade_deribit_proto::api::AuthParams;

    fn tokens() -> Tokens {
        Tokens::new(vec![ApiKey::default_key()], 7, 900)
    }

    #[test]
    fn signature_matches_the_documented_vector() {
        let sig = sign(&Secret::new("AMANDASECRECT"), "1576074319000\n1iqt2wls\n");
        assert_eq!(sig, "56590594f97921b09b18f166befe0d1319b198bbcdad7ca73382de2f88fe9aa1");
    }

    #[test]
    fn secrets_never_print() {
        let key = ApiKey::default_key();
        assert!(!format!("{key:?}").contains(ApiKey::DEFAULT_SECRET));
        assert_eq!(format!("{}", key.client_secret), "***");
    }

    #[test]
    fn three_grants_and_expiry() {
        let mut t = tokens();
        let now = Utc::from_millis(1_700_000_000_000);
        let creds = AuthParams {
            grant_type: "client_credentials".into(),
            client_id: Some(ApiKey::DEFAULT_ID.into()),
            client_secret: Some(ApiKey::DEFAULT_SECRET.into()),
            ..AuthParams::default()
        };
        let first = t.authenticate(now, &creds, Some(1)).unwrap();
        assert_eq!(t.check(now, &first.access_token, Some(1)).unwrap().account, FIRST_ACCOUNT);
        assert_eq!(t.check(now, &first.access_token, Some(2)).unwrap_err().code, 13009);
        let later = Utc::from_millis(now.as_millis() + 901_000);
        assert_eq!(t.check(later, &first.access_token, Some(1)).unwrap_err().code, 13009);

        let refresh = AuthParams {
            grant_type: "refresh_token".into(),
            refresh_token: Some(first.refresh_token.clone()),
            ..AuthParams::default()
        };
        let second = t.authenticate(later, &refresh, Some(1)).unwrap();
        assert!(t.check(later, &second.access_token, Some(1)).is_ok());
        assert_eq!(t.authenticate(later, &refresh, Some(1)).unwrap_err().code, 13009, "refresh tokens are single-use");

        let ts = now.as_millis();
        let signed = AuthParams {
            grant_type: "client_signature".into(),
            client_id: Some(ApiKey::DEFAULT_ID.into()),
            timestamp: Some(ts),
            nonce: Some("abc".into()),
            signature: Some(sign(&Secret::new(ApiKey::DEFAULT_SECRET), &format!("{ts}\nabc\n"))),
            ..AuthParams::default()
        };
        assert!(t.authenticate(now, &signed, Some(3)).is_ok());
        let reused = t.authenticate(now, &signed, Some(3)).unwrap_err();
        assert_eq!((reused.code, reused.message.as_str()), (13004, "invalid_credentials"), "nonce reuse");
        assert_eq!(reused.data, Some(serde_json::json!({"invalid": "nonce"})));
        let mut bad = creds.clone();
        bad.client_secret = Some("wrong".into());
        assert_eq!(t.authenticate(now, &bad, None).unwrap_err().code, 13004);
    }

    #[test]
    fn rest_hmac_header() {
        let mut t = tokens();
        let now = Utc::from_millis(1_700_000_000_000);
        let ts = now.as_millis();
        let uri = "/api/v2/private/get_account_summary?currency=BTC";
        let sig = sign(&Secret::new(ApiKey::DEFAULT_SECRET), &format!("{ts}\nn1\nGET\n{uri}\n\n"));
        let header = format!("deri-hmac-sha256 id={},ts={ts},sig={sig},nonce=n1", ApiKey::DEFAULT_ID);
        assert!(t.check_header(now, &header, "GET", uri, "").is_ok());
        assert!(t.check_header(now, &header, "POST", uri, "").is_err());
    }
}
