//! JSON-RPC server side, as the simulator and the fan-out server speak it: decoding a
//! client's request and encoding responses, errors, notifications and heartbeats.
//!
//! Owns: Deribit's envelope rules for requests (named params only, no batches, non-JSON →
//! 11050 `bad_request` without an id, as Deribit answers them) and the response stamps
//! `usIn`/`usOut`/`usDiff`/`testnet`.
//! Must not: read a clock (the caller passes the stamps) or interpret `params`.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{Heartbeat, Id, raw_even_if_null, write_json_str};
use crate::error::code;

/// A request as the server sees it; `params` stays raw for the method's typed decoder.
#[derive(Clone, Debug)]
pub struct ServerRequest<'a> {
    pub id: Id<'a>,
    pub method: Cow<'a, str>,
    /// The params object; `None` when absent, `null` or `{}`-less. Always an object if set.
    pub params: Option<&'a RawValue>,
}

/// Why a request is refused, with the error response to send (Deribit's code and message).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("request refused: {code} {message}")]
pub struct RequestError<'a> {
    /// The request's id when it could be read; the response then echoes it.
    pub id: Option<Id<'a>>,
    pub code: i32,
    pub message: &'static str,
    /// The error's `data` member as JSON text.
    pub data: Option<&'static str>,
}

impl RequestError<'_> {
    /// Appends the error response for this refusal.
    pub fn encode(&self, out: &mut Vec<u8>, stamps: ServerStamps) {
        encode_error(out, self.id, self.code, self.message, self.data, stamps);
    }
}

/// Server-side timing members of a response: µs since the epoch when the request was read
/// and when the response is written, and whether this is a test server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStamps {
    pub us_in: u64,
    pub us_out: u64,
    pub testnet: bool,
}

#[derive(Deserialize)]
struct RawRequest<'a> {
    #[serde(borrow, default)]
    id: Option<Id<'a>>,
    #[serde(borrow, default)]
    method: Option<Cow<'a, str>>,
    #[serde(borrow, default, deserialize_with = "raw_even_if_null")]
    params: Option<&'a RawValue>,
}

const fn bad_request<'a>(id: Option<Id<'a>>, data: &'static str) -> RequestError<'a> {
    RequestError { id, code: code::BAD_REQUEST, message: "bad_request", data: Some(data) }
}

/// Decodes one request frame, or says which error response to send.
pub fn decode_request(frame: &str) -> Result<ServerRequest<'_>, RequestError<'_>> {
    if frame.trim_start().starts_with('[') {
        return Err(bad_request(None, r#""batch requests are not supported""#));
    }
    let raw: RawRequest<'_> = serde_json::from_str(frame).map_err(|_| bad_request(None, r#""invalid json""#))?;
    let Some(id) = raw.id else {
        return Err(bad_request(None, r#""missing id""#));
    };
    let Some(method) = raw.method else {
        return Err(bad_request(Some(id), r#""missing method""#));
    };
    let params = match raw.params {
        None => None,
        Some(params) => match params.get().trim_start().as_bytes().first() {
            Some(b'{') => Some(params),
            Some(b'n') => None,
            Some(b'[') => {
                return Err(RequestError {
                    id: Some(id),
                    code: code::INVALID_PARAMS,
                    message: "Invalid params",
                    data: Some(r#"{"reason":"positional params are not supported"}"#),
                });
            }
            _ => {
                return Err(RequestError {
                    id: Some(id),
                    code: code::INVALID_PARAMS,
                    message: "Invalid params",
                    data: Some(r#"{"reason":"params must be an object"}"#),
                });
            }
        },
    };
    Ok(ServerRequest { id, method, params })
}

fn open_response(out: &mut Vec<u8>, id: Option<Id<'_>>) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","#);
    if let Some(id) = id {
        out.extend_from_slice(br#""id":"#);
        id.write(out);
        out.push(b',');
    }
}

fn close_response(out: &mut Vec<u8>, stamps: ServerStamps) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(if stamps.testnet { br#","testnet":true"#.as_slice() } else { br#","testnet":false"# });
    out.extend_from_slice(br#","usIn":"#);
    out.extend_from_slice(buf.format(stamps.us_in).as_bytes());
    out.extend_from_slice(br#","usOut":"#);
    out.extend_from_slice(buf.format(stamps.us_out).as_bytes());
    out.extend_from_slice(br#","usDiff":"#);
    out.extend_from_slice(buf.format(stamps.us_out.saturating_sub(stamps.us_in)).as_bytes());
    out.push(b'}');
}

/// Appends a success response; `result` is the result's JSON text.
pub fn encode_result(out: &mut Vec<u8>, id: Id<'_>, result: &str, stamps: ServerStamps) {
    open_response(out, Some(id));
    out.extend_from_slice(br#""result":"#);
    out.extend_from_slice(result.as_bytes());
    close_response(out, stamps);
}

/// Appends an error response; `data` is the error's `data` member as JSON text.
pub fn encode_error(
    out: &mut Vec<u8>,
    id: Option<Id<'_>>,
    code: i32,
    message: &str,
    data: Option<&str>,
    stamps: ServerStamps,
) {
    open_response(out, id);
    out.extend_from_slice(br#""error":{"code":"#);
    out.extend_from_slice(itoa::Buffer::new().format(code).as_bytes());
    out.extend_from_slice(br#","message":"#);
    write_json_str(out, message);
    if let Some(data) = data {
        out.extend_from_slice(br#","data":"#);
        out.extend_from_slice(data.as_bytes());
    }
    out.push(b'}');
    close_response(out, stamps);
}

/// Appends a subscription notification; `data` is the payload's JSON text.
pub fn encode_notification(out: &mut Vec<u8>, channel: &str, data: &str, label: Option<&str>) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"#);
    write_json_str(out, channel);
    if let Some(label) = label {
        out.extend_from_slice(br#","label":"#);
        write_json_str(out, label);
    }
    out.extend_from_slice(br#","data":"#);
    out.extend_from_slice(data.as_bytes());
    out.extend_from_slice(b"}}");
}

/// Appends a heartbeat frame, byte for byte what Deribit sends.
pub fn encode_heartbeat(out: &mut Vec<u8>, kind: Heartbeat) {
    out.extend_from_slice(match kind {
        Heartbeat::Heartbeat => br#"{"params":{"type":"heartbeat"},"method":"heartbeat","jsonrpc":"2.0"}"#.as_slice(),
        Heartbeat::TestRequest => br#"{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}"#,
    });
}
