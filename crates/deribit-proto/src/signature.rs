//! Request signatures: `public/auth` with `grant_type=client_signature` and the HTTP
//! `Authorization: deri-hmac-sha256 …` header, signing and verifying (the signed strings are
//! at `client_signature` and `http_signature`).
//!
//! Owns: the strings to sign, HMAC-SHA256 with the client secret, lowercase hex, the header's
//! syntax, and the `Secret` newtype that keeps secrets out of logs.
//! Must not: read a clock or make nonces (the caller passes timestamp and nonce), or print a
//! secret.

use std::fmt;

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

/// A secret (API client secret, token). `Debug` and `Display` print `***`; the value is only
/// reachable through [`Secret::expose`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }

    /// The secret itself, for signing or sending. Keep the borrow short.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("***")
    }
}

/// Lowercase hex HMAC-SHA256 of `parts` joined by `\n`.
fn sign_joined(secret: &Secret, parts: &[&[u8]]) -> String {
    // HMAC accepts keys of any length, so `new_from_slice` cannot fail here.
    let mut mac = match HmacSha256::new_from_slice(secret.expose().as_bytes()) {
        Ok(mac) => mac,
        Err(_) => return String::new(),
    };
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            mac.update(b"\n");
        }
        mac.update(part);
    }
    hex::encode(mac.finalize().into_bytes())
}

/// The `signature` param of `public/auth` with `grant_type=client_signature`:
/// `hex(HMAC-SHA256(secret, timestamp + "\n" + nonce + "\n" + data))`.
pub fn client_signature(secret: &Secret, timestamp_ms: u64, nonce: &str, data: &str) -> String {
    let ts = itoa::Buffer::new().format(timestamp_ms).to_owned();
    sign_joined(secret, &[ts.as_bytes(), nonce.as_bytes(), data.as_bytes()])
}

/// The signature of an HTTP request: the signed data is
/// `UPPER(method) + "\n" + uri + "\n" + body + "\n"` (`uri` with its query string).
pub fn http_signature(secret: &Secret, timestamp_ms: u64, nonce: &str, method: &str, uri: &str, body: &str) -> String {
    let ts = itoa::Buffer::new().format(timestamp_ms).to_owned();
    let method = method.to_ascii_uppercase();
    sign_joined(secret, &[ts.as_bytes(), nonce.as_bytes(), method.as_bytes(), uri.as_bytes(), body.as_bytes(), b""])
}

/// The parts of a `deri-hmac-sha256` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HmacHeader<'a> {
    pub client_id: &'a str,
    pub timestamp_ms: u64,
    pub signature: &'a str,
    pub nonce: &'a str,
}

/// A header that does not follow `deri-hmac-sha256 id=…,ts=…,sig=…,nonce=…`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("not a deri-hmac-sha256 header")]
    Scheme,
    #[error("malformed or missing member {0}")]
    Member(&'static str),
}

impl HmacHeader<'_> {
    /// The header value, `deri-hmac-sha256 id=…,ts=…,sig=…,nonce=…`.
    pub fn to_header(&self) -> String {
        format!(
            "deri-hmac-sha256 id={},ts={},sig={},nonce={}",
            self.client_id, self.timestamp_ms, self.signature, self.nonce
        )
    }

    /// Parses a header value (members in any order, scheme case-insensitive).
    pub fn parse(value: &str) -> Result<HmacHeader<'_>, HeaderError> {
        let value = value.trim();
        let (scheme, rest) = value.split_once(' ').ok_or(HeaderError::Scheme)?;
        if !scheme.eq_ignore_ascii_case("deri-hmac-sha256") {
            return Err(HeaderError::Scheme);
        }
        let (mut id, mut ts, mut sig, mut nonce) = (None, None, None, None);
        for member in rest.split(',') {
            let (key, val) = member.trim().split_once('=').ok_or(HeaderError::Member("key=value"))?;
            match key {
                "id" => id = Some(val),
                "ts" => ts = Some(val.parse().map_err(|_| HeaderError::Member("ts"))?),
                "sig" => sig = Some(val),
                "nonce" => nonce = Some(val),
                _ => {}
            }
        }
        Ok(HmacHeader {
            client_id: id.ok_or(HeaderError::Member("id"))?,
            timestamp_ms: ts.ok_or(HeaderError::Member("ts"))?,
            signature: sig.ok_or(HeaderError::Member("sig"))?,
            nonce: nonce.ok_or(HeaderError::Member("nonce"))?,
        })
    }

    /// True when the signature matches the request, compared in constant time. The caller
    /// checks the timestamp's age (Deribit allows 60 s) and the nonce's freshness.
    pub fn verify(&self, secret: &Secret, method: &str, uri: &str, body: &str) -> bool {
        let expected = http_signature(secret, self.timestamp_ms, self.nonce, method, uri, body);
        constant_time_eq(expected.as_bytes(), self.signature.as_bytes())
    }
}

/// Verifies a `client_signature` in constant time.
pub fn verify_client_signature(secret: &Secret, timestamp_ms: u64, nonce: &str, data: &str, signature: &str) -> bool {
    constant_time_eq(client_signature(secret, timestamp_ms, nonce, data).as_bytes(), signature.as_bytes())
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_reference_vector() {
        // Deribit's documented example (API v2.1.1 docs), recomputed with Python's hmac.
        let secret = Secret::new("AMANDASECRECT");
        let sig = client_signature(&secret, 1_576_074_319_000, "1iqt2wls", "");
        assert_eq!(sig, "56590594f97921b09b18f166befe0d1319b198bbcdad7ca73382de2f88fe9aa1");
        assert!(verify_client_signature(&secret, 1_576_074_319_000, "1iqt2wls", "", &sig));
        assert!(!verify_client_signature(&secret, 1_576_074_319_001, "1iqt2wls", "", &sig));
    }

    #[test]
    fn http_header_round_trip() {
        let secret = Secret::new("s3cr3t");
        let uri = "/api/v2/private/get_account_summary?currency=BTC";
        let sig = http_signature(&secret, 1_700_000_000_000, "abc", "get", uri, "");
        // Same string to sign, built independently.
        let direct = {
            let mut mac = HmacSha256::new_from_slice(b"s3cr3t").unwrap();
            mac.update(format!("1700000000000\nabc\nGET\n{uri}\n\n").as_bytes());
            hex::encode(mac.finalize().into_bytes())
        };
        assert_eq!(sig, direct);
        let header = HmacHeader { client_id: "id1", timestamp_ms: 1_700_000_000_000, signature: &sig, nonce: "abc" };
        let text = header.to_header();
        let parsed = HmacHeader::parse(&text).unwrap();
        assert_eq!(parsed, header);
        assert!(parsed.verify(&secret, "GET", uri, ""));
        assert!(!parsed.verify(&secret, "POST", uri, ""));
        assert!(!parsed.verify(&Secret::new("other"), "GET", uri, ""));
        assert_eq!(HmacHeader::parse("Bearer x"), Err(HeaderError::Scheme));
        assert_eq!(HmacHeader::parse("deri-hmac-sha256 id=a,ts=x,sig=b,nonce=c"), Err(HeaderError::Member("ts")));
    }

    #[test]
    fn secrets_do_not_print() {
        let secret = Secret::new("hunter2");
        assert_eq!(format!("{secret} {secret:?}"), "*** ***");
        assert_eq!(secret.expose(), "hunter2");
    }
}
