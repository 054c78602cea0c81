//! JSON-RPC 2.0 as Deribit speaks it, client side: encoding requests into a reused buffer and
//! classifying incoming frames (response, subscription notification, heartbeat) without
//! parsing their payloads, which stay borrowed `&RawValue`s for the typed decoders.
//!
//! Owns: the envelope members (`jsonrpc`, `id`, `method`, `params`, `result`, `error`,
//! `usIn`/`usOut`/`usDiff`, `testnet`), request ids, JSON string escaping for what we write.
//! Must not: interpret a `result` or notification `data` (that is `api`, `book`, `instrument`),
//! or allocate when encoding beyond the caller's buffer growth.
//! The server side (decoding requests, encoding responses and notifications) is `server`.

mod params;
mod server;

pub use params::ParamsWriter;
pub use server::{
    RequestError, ServerRequest, ServerStamps, decode_request, encode_error, encode_heartbeat, encode_notification,
    encode_result,
};

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::{self, Deserializer, Visitor};
use serde_json::value::RawValue;

/// A request id: Deribit echoes whatever the client sent, integer or string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Id<'a> {
    Num(i64),
    Str(&'a str),
}

impl<'de: 'a, 'a> Deserialize<'de> for Id<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct IdVisitor;
        impl<'de> Visitor<'de> for IdVisitor {
            type Value = Id<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or string id")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Id<'de>, E> {
                Ok(Id::Num(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Id<'de>, E> {
                i64::try_from(v).map(Id::Num).map_err(|_| E::custom("id out of range"))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Id<'de>, E> {
                Ok(Id::Str(v))
            }
        }
        deserializer.deserialize_any(IdVisitor)
    }
}

impl Id<'_> {
    /// Appends the id as JSON.
    pub fn write(&self, out: &mut Vec<u8>) {
        match *self {
            Id::Num(n) => out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            Id::Str(s) => write_json_str(out, s),
        }
    }
}

/// The `error` object of a response.
#[derive(Clone, Debug, Deserialize)]
pub struct RpcError<'a> {
    pub code: i64,
    #[serde(borrow)]
    pub message: Cow<'a, str>,
    /// Any shape: `{"reason":…,"param":…}`, a string, `null`.
    #[serde(borrow, default)]
    pub data: Option<&'a RawValue>,
}

/// A response to one of our requests.
#[derive(Clone, Debug)]
pub struct Response<'a> {
    /// Absent on Deribit's reply to an unparsable frame (11050 `invalid json`).
    pub id: Option<Id<'a>>,
    /// The `result` (possibly `null`) or the `error`.
    pub outcome: Result<&'a RawValue, RpcError<'a>>,
    /// Server receive and send times, µs since the epoch, when present.
    pub us_in: Option<u64>,
    pub us_out: Option<u64>,
    pub us_diff: Option<u64>,
    pub testnet: Option<bool>,
}

/// A subscription notification (`"method":"subscription"`).
#[derive(Clone, Copy, Debug)]
pub struct Notification<'a> {
    pub channel: &'a str,
    pub data: &'a RawValue,
    /// Set on private channels subscribed with a `label`.
    pub label: Option<&'a str>,
}

/// A heartbeat frame: an answer-less `heartbeat`, or a `test_request` that must be answered
/// with `public/test` within the heartbeat interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Heartbeat {
    Heartbeat,
    TestRequest,
}

/// Any frame a client receives.
#[derive(Clone, Debug)]
pub enum Incoming<'a> {
    Response(Response<'a>),
    Notification(Notification<'a>),
    Heartbeat(Heartbeat),
}

/// A frame that is not a valid Deribit envelope.
#[derive(Debug, thiserror::Error)]
pub enum EnvelopeError {
    #[error("not a JSON object: {0}")]
    Json(#[from] serde_json::Error),
    #[error("not a Deribit envelope: {0}")]
    Shape(&'static str),
}

/// The members of any envelope, borrowed; which are present decides the frame's kind.
#[derive(Deserialize)]
struct RawFrame<'a> {
    #[serde(borrow, default)]
    id: Option<Id<'a>>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "raw_even_if_null")]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<RpcError<'a>>,
    #[serde(borrow, default)]
    params: Option<&'a RawValue>,
    #[serde(rename = "usIn", default)]
    us_in: Option<u64>,
    #[serde(rename = "usOut", default)]
    us_out: Option<u64>,
    #[serde(rename = "usDiff", default)]
    us_diff: Option<u64>,
    #[serde(default)]
    testnet: Option<bool>,
}

#[derive(Deserialize)]
struct RawParams<'a> {
    #[serde(borrow, default)]
    channel: Option<&'a str>,
    #[serde(borrow, default, deserialize_with = "raw_even_if_null")]
    data: Option<&'a RawValue>,
    #[serde(borrow, default)]
    label: Option<&'a str>,
    #[serde(borrow, default, rename = "type")]
    kind: Option<&'a str>,
}

/// A present member, `null` included, as its raw text (plain `Option` would turn `null`
/// into `None`).
fn raw_even_if_null<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<&'de RawValue>, D::Error> {
    <&RawValue>::deserialize(deserializer).map(Some)
}

/// Classifies a frame received by a client. Payloads (`result`, `data`) stay raw.
pub fn classify(frame: &str) -> Result<Incoming<'_>, EnvelopeError> {
    let raw: RawFrame<'_> = serde_json::from_str(frame)?;
    match raw.method.as_deref() {
        Some("subscription") => {
            let params = raw.params.ok_or(EnvelopeError::Shape("notification without params"))?;
            let params: RawParams<'_> = serde_json::from_str(params.get())?;
            Ok(Incoming::Notification(Notification {
                channel: params.channel.ok_or(EnvelopeError::Shape("notification without channel"))?,
                data: params.data.ok_or(EnvelopeError::Shape("notification without data"))?,
                label: params.label,
            }))
        }
        Some("heartbeat") => {
            let params = raw.params.ok_or(EnvelopeError::Shape("heartbeat without params"))?;
            let params: RawParams<'_> = serde_json::from_str(params.get())?;
            match params.kind {
                Some("heartbeat") => Ok(Incoming::Heartbeat(Heartbeat::Heartbeat)),
                Some("test_request") => Ok(Incoming::Heartbeat(Heartbeat::TestRequest)),
                _ => Err(EnvelopeError::Shape("heartbeat of unknown type")),
            }
        }
        // Some documented responses echo the request's `method`; `result`/`error` decide.
        method => {
            let outcome = match (raw.error, raw.result) {
                (Some(error), _) => Err(error),
                (None, Some(result)) => Ok(result),
                (None, None) if method.is_some() => {
                    return Err(EnvelopeError::Shape("a request, not a response or notification"));
                }
                (None, None) => return Err(EnvelopeError::Shape("neither result, error nor method")),
            };
            Ok(Incoming::Response(Response {
                id: raw.id,
                outcome,
                us_in: raw.us_in,
                us_out: raw.us_out,
                us_diff: raw.us_diff,
                testnet: raw.testnet,
            }))
        }
    }
}

/// Appends `{"jsonrpc":"2.0","id":N,"method":"…","params":{…}}`; `params` writes the members.
pub fn encode_request(out: &mut Vec<u8>, id: u64, method: &str, params: impl FnOnce(&mut ParamsWriter<'_>)) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.extend_from_slice(br#","method":"#);
    write_json_str(out, method);
    out.extend_from_slice(br#","params":{"#);
    let mut writer = ParamsWriter::new(out);
    params(&mut writer);
    out.extend_from_slice(b"}}");
}

/// Appends a request whose params come from any `Serialize` value (an object). Slower than
/// [`encode_request`]; for the control plane.
pub fn encode_request_serde<T: serde::Serialize>(
    out: &mut Vec<u8>,
    id: u64,
    method: &str,
    params: &T,
) -> Result<(), serde_json::Error> {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    out.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.extend_from_slice(br#","method":"#);
    write_json_str(out, method);
    out.extend_from_slice(br#","params":"#);
    serde_json::to_writer(&mut *out, params)?;
    out.push(b'}');
    Ok(())
}

/// Appends `text` as a JSON string, escaping what JSON requires.
pub fn write_json_str(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let escape: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests;
