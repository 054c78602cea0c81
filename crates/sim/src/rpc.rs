//! The simulator's side of JSON-RPC: its owned error value, typed params with `-32602` errors
//! that name the parameter, and thin wrappers over `ticktrade-deribit-proto`'s server envelope
//! (`encode_result`, `encode_error`, `encode_notification`, heartbeats).
//!
//! Owns: `RpcError` (code, message, optional `data`), `params`, and carrying a request id as
//! its raw JSON text across tasks (`IdText`).
//! Must not: lay out envelope bytes itself (deribit-proto does), or interpret methods.

use serde::de::DeserializeOwned;
use serde_json::value::RawValue;
use ticktrade_deribit_proto::envelope::{
    Heartbeat, Id, ServerStamps, encode_error, encode_heartbeat, encode_notification, encode_result,
};

/// An error reply: Deribit's code and message, and optional `data`.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{code} {message}")]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<serde_json::Value>,
}

impl RpcError {
    pub fn new(code: i64, message: &str) -> RpcError {
        RpcError { code, message: message.to_owned(), data: None }
    }
    pub fn with_data(code: i64, message: &str, data: serde_json::Value) -> RpcError {
        RpcError { code, message: message.to_owned(), data: Some(data) }
    }
    pub fn invalid_param(param: &str, reason: &str) -> RpcError {
        RpcError::with_data(-32602, "Invalid params", serde_json::json!({"reason": reason, "param": param}))
    }
    pub fn method_not_found() -> RpcError {
        RpcError::new(-32601, "Method not found")
    }
    pub fn bad_request(data: &str) -> RpcError {
        RpcError::with_data(11050, "bad_request", serde_json::Value::String(data.to_owned()))
    }
    pub fn unauthorized() -> RpcError {
        RpcError::with_data(13009, "unauthorized", serde_json::json!({"reason": "invalid_token"}))
    }
    pub fn too_many_requests() -> RpcError {
        RpcError::new(10028, "too_many_requests")
    }
}

impl From<ticktrade_exchange::Reject> for RpcError {
    fn from(reject: ticktrade_exchange::Reject) -> RpcError {
        match (reject.code, reject.data) {
            (-32602, Some(param)) => RpcError::invalid_param(param, "invalid value"),
            (_, Some(reason)) => {
                RpcError::with_data(i64::from(reject.code), reject.message, serde_json::json!({ "reason": reason }))
            }
            (_, None) => RpcError::new(i64::from(reject.code), reject.message),
        }
    }
}

/// Decodes `params` (absent = `{}`) into `T`; a failure names the parameter (`-32602`).
pub fn params<T: DeserializeOwned>(params: Option<&RawValue>) -> Result<T, RpcError> {
    let text = params.map_or("{}", RawValue::get);
    if text.trim_start().starts_with('[') {
        return Err(RpcError::invalid_param("params", "positional params are not supported"));
    }
    let mut de = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.inner().to_string();
        if let Some(missing) = inner.strip_prefix("missing field `").and_then(|s| s.split('`').next()) {
            RpcError::invalid_param(missing, "must be present")
        } else {
            let param = if path == "." { "params".to_owned() } else { path };
            RpcError::invalid_param(&param, "invalid format")
        }
    })
}

/// The envelope timing of one request.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    pub us_in: i64,
    pub us_out: i64,
}

fn stamps(timing: Timing, testnet: bool) -> ServerStamps {
    ServerStamps { us_in: timing.us_in.max(0) as u64, us_out: timing.us_out.max(0) as u64, testnet }
}

/// A request id kept as its JSON text (`7`, `"abc"`) between tasks.
fn parse_id(text: &str) -> Option<Id<'_>> {
    serde_json::from_str::<Id<'_>>(text).ok()
}

fn into_string(out: Vec<u8>) -> String {
    // Every encoder writes valid UTF-8 (JSON text and escaped strings).
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// `{"jsonrpc":"2.0","id":…,"result":…,"usIn":…}`; `result` is JSON text.
pub fn response(id: Option<&str>, result: &str, timing: Timing, testnet: bool) -> String {
    let mut out = Vec::with_capacity(result.len() + 128);
    match id.and_then(parse_id) {
        Some(id) => encode_result(&mut out, id, result, stamps(timing, testnet)),
        // An id that is not a plain integer or string (or none): echo its raw text.
        None => {
            encode_result(&mut out, Id::Num(0), result, stamps(timing, testnet));
            let text = into_string(out);
            let head = r#"{"jsonrpc":"2.0","id":0,"#;
            let rest = text.strip_prefix(head).unwrap_or(&text);
            return match id {
                Some(raw) => format!(r#"{{"jsonrpc":"2.0","id":{raw},{rest}"#),
                None => format!(r#"{{"jsonrpc":"2.0",{rest}"#),
            };
        }
    }
    into_string(out)
}

/// An error response; `id` is omitted when the request had none (or was not JSON).
pub fn error(id: Option<&str>, err: &RpcError, timing: Timing, testnet: bool) -> String {
    let mut out = Vec::with_capacity(160);
    let data = err.data.as_ref().map(serde_json::Value::to_string);
    let code = i32::try_from(err.code).unwrap_or(i32::MIN);
    encode_error(&mut out, id.and_then(parse_id), code, &err.message, data.as_deref(), stamps(timing, testnet));
    into_string(out)
}

/// A subscription notification; `data` is JSON text.
pub fn notification(channel: &str, data: &str, label: Option<&str>) -> String {
    let mut out = Vec::with_capacity(data.len() + channel.len() + 80);
    encode_notification(&mut out, channel, data, label);
    into_string(out)
}

/// Deribit's `test_request` heartbeat frame.
pub fn test_request() -> String {
    let mut out = Vec::with_capacity(80);
    encode_heartbeat(&mut out, Heartbeat::TestRequest);
    into_string(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct P {
        instrument_name: String,
        amount: u32,
    }

    #[test]
    fn param_errors_name_the_parameter() {
        let raw = RawValue::from_string(r#"{"amount":10}"#.to_owned()).unwrap();
        let err = params::<P>(Some(&raw)).unwrap_err();
        assert_eq!(err.data.unwrap()["param"], "instrument_name");
        let raw = RawValue::from_string(r#"{"instrument_name":"X","amount":"ten"}"#.to_owned()).unwrap();
        let err = params::<P>(Some(&raw)).unwrap_err();
        assert_eq!(err.code, -32602);
        assert_eq!(err.data.unwrap()["param"], "amount");
        let raw = RawValue::from_string("[1,2]".to_owned()).unwrap();
        assert_eq!(params::<P>(Some(&raw)).unwrap_err().code, -32602);
    }

    #[test]
    fn envelopes_carry_timing_and_echo_ids() {
        let timing = Timing { us_in: 10, us_out: 15 };
        for (id, want) in [("7", serde_json::json!(7)), (r#""abc""#, serde_json::json!("abc"))] {
            let text = response(Some(id), "\"ok\"", timing, false);
            let value: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(value["id"], want, "{text}");
            assert_eq!(value["usDiff"], 5);
            assert_eq!(value["result"], "ok");
        }
        let text = response(Some("1.5"), "1", timing, true);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!((value["id"].as_f64(), value["testnet"].as_bool()), (Some(1.5), Some(true)), "{text}");
        let text = error(None, &RpcError::bad_request("invalid json"), timing, false);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(value.get("id").is_none());
        assert_eq!(value["error"]["code"], 11050);
        assert_eq!(value["error"]["data"], "invalid json");
        let text = notification("book.X.raw", "{}", Some("l"));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["params"]["label"], "l");
        assert_eq!(test_request(), r#"{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}"#);
    }
}
