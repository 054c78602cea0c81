//! JSON-RPC envelope as the simulator speaks it: request decode, response/error/notification
//! encode with `usIn`/`usOut`/`usDiff`/`testnet`, and `-32602` errors that name the parameter.
//!
//! Owns: the few envelope shapes a server needs and turning serde errors into Deribit's
//! `{"reason":…, "param":…}` data.
//! Must not: interpret methods. (A private stand-in until `ticktrade-deribit-proto`'s envelope
//! module lands; kept small so the switch is mechanical.)

use std::borrow::Cow;

use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::value::RawValue;

/// A decoded request. `params` stays raw until the method is known.
#[derive(Debug, Deserialize)]
pub struct Request<'a> {
    #[serde(default, borrow)]
    pub id: Option<&'a RawValue>,
    #[serde(default, borrow)]
    pub method: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub params: Option<&'a RawValue>,
}

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

fn push_tail(out: &mut String, timing: Timing, testnet: bool) {
    use std::fmt::Write as _;
    let _ = write!(
        out,
        ",\"usIn\":{},\"usOut\":{},\"usDiff\":{},\"testnet\":{}}}",
        timing.us_in,
        timing.us_out,
        timing.us_out - timing.us_in,
        testnet
    );
}

/// `{"jsonrpc":"2.0","id":…,"result":…,"usIn":…}`; `result` is JSON text.
pub fn response(id: Option<&str>, result: &str, timing: Timing, testnet: bool) -> String {
    let mut out = String::with_capacity(result.len() + 128);
    out.push_str("{\"jsonrpc\":\"2.0\"");
    if let Some(id) = id {
        out.push_str(",\"id\":");
        out.push_str(id);
    }
    out.push_str(",\"result\":");
    out.push_str(result);
    push_tail(&mut out, timing, testnet);
    out
}

/// An error response; `id` is omitted when the request had none (or was not JSON).
pub fn error(id: Option<&str>, err: &RpcError, timing: Timing, testnet: bool) -> String {
    let mut out = String::with_capacity(160);
    out.push_str("{\"jsonrpc\":\"2.0\"");
    if let Some(id) = id {
        out.push_str(",\"id\":");
        out.push_str(id);
    }
    let mut object = serde_json::json!({"code": err.code, "message": err.message});
    if let Some(data) = &err.data {
        object["data"] = data.clone();
    }
    out.push_str(",\"error\":");
    out.push_str(&object.to_string());
    push_tail(&mut out, timing, testnet);
    out
}

/// A subscription notification; `data` is JSON text.
pub fn notification(channel: &str, data: &str, label: Option<&str>) -> String {
    let mut out = String::with_capacity(data.len() + channel.len() + 80);
    out.push_str("{\"jsonrpc\":\"2.0\",\"method\":\"subscription\",\"params\":{\"channel\":");
    out.push_str(&serde_json::Value::String(channel.to_owned()).to_string());
    if let Some(label) = label {
        out.push_str(",\"label\":");
        out.push_str(&serde_json::Value::String(label.to_owned()).to_string());
    }
    out.push_str(",\"data\":");
    out.push_str(data);
    out.push_str("}}");
    out
}

/// Deribit's heartbeat frames (byte-for-byte the recorded ones).
pub const TEST_REQUEST: &str = r#"{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize)]
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
    fn envelopes_carry_timing() {
        let timing = Timing { us_in: 10, us_out: 15 };
        let text = response(Some("7"), "\"ok\"", timing, false);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["id"], 7);
        assert_eq!(value["usDiff"], 5);
        let text = error(None, &RpcError::bad_request("invalid json"), timing, false);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert!(value.get("id").is_none());
        assert_eq!(value["error"]["code"], 11050);
        let text = notification("book.X.raw", "{}", Some("l"));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["params"]["label"], "l");
    }
}
