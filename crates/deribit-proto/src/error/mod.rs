//! Deribit's RPC error codes (the full v2.1.1 table) and the JSON-RPC ones it uses.
//!
//! Owns: code → message/description lookup, named constants for every code, and the
//! classification a client needs (retry later, fix the request, re-authenticate).
//! Must not: know about transports; an error *response* is built by `envelope`.

mod table;

pub use table::{TABLE, code};

/// One row of Deribit's error table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorInfo {
    pub code: i32,
    /// The `message` Deribit sends, verbatim (some carry a `<Limit>`-style placeholder that
    /// the venue fills in, e.g. `price_too_low <Limit>`).
    pub message: &'static str,
    pub description: &'static str,
}

/// The row for `code`, if Deribit documents it.
pub fn lookup(code: i32) -> Option<&'static ErrorInfo> {
    TABLE.iter().find(|info| info.code == code)
}

/// The message Deribit sends for `code` with any `<Placeholder>` part removed
/// (`price_too_low <Limit>` → `price_too_low`), as the simulator writes it before the value.
pub fn base_message(code: i32) -> Option<&'static str> {
    lookup(code).map(|info| info.message.split(" <").next().unwrap_or(info.message))
}

/// `security_key_authorization_error`: sent by Deribit (2FA flows) but missing from the v2.1.1
/// table.
pub const SECURITY_KEY_AUTHORIZATION_ERROR: i32 = 13668;

/// What a client should do about an error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Transient: back off and retry the same request.
    Retry,
    /// Authentication or permission: re-authenticate or fix the key's scope.
    Auth,
    /// The request itself is wrong or was rejected: do not resend it unchanged.
    Reject,
}

/// Classifies a code (undocumented codes are rejections).
pub fn class(code: i32) -> ErrorClass {
    match code {
        code::TOO_MANY_REQUESTS
        | code::RETRY
        | code::SETTLEMENT_IN_PROGRESS
        | code::MATCHING_ENGINE_QUEUE_FULL
        | code::TOO_MANY_CONCURRENT_REQUESTS
        | code::TIMED_OUT => ErrorClass::Retry,
        code::AUTHORIZATION_REQUIRED
        | code::INVALID_CREDENTIALS
        | code::UNAUTHORIZED
        | code::FORBIDDEN
        | code::SCOPE_EXCEEDED
        | code::SECURITY_ERROR
        | SECURITY_KEY_AUTHORIZATION_ERROR => ErrorClass::Auth,
        _ => ErrorClass::Reject,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_equals_vector_file() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/deribit/examples/rpc_error_codes.v2_1_1.json");
        let text = std::fs::read_to_string(path).unwrap();
        let rows: Vec<serde_json::Value> = serde_json::from_str(&text).unwrap();
        assert_eq!(rows.len(), TABLE.len());
        for (row, info) in rows.iter().zip(TABLE) {
            assert_eq!(row["code"].as_i64().unwrap(), i64::from(info.code));
            assert_eq!(row["message"].as_str().unwrap(), info.message);
            assert_eq!(row["description"].as_str().unwrap(), info.description);
        }
    }

    #[test]
    fn lookups_and_classes() {
        assert_eq!(lookup(code::TOO_MANY_REQUESTS).map(|i| i.message), Some("too_many_requests"));
        assert_eq!(code::METHOD_NOT_FOUND, -32601);
        assert_eq!(code::INVALID_PARAMS, -32602);
        assert_eq!(code::PARSE_ERROR, -32700);
        assert_eq!(code::REQUEST_ENTITY_TOO_LARGE, -32600);
        assert_eq!(code::MISSING_PARAMS, -32000);
        assert_eq!(base_message(code::PRICE_TOO_LOW), Some("price_too_low"));
        assert_eq!(base_message(code::BAD_REQUEST), Some("bad_request"));
        assert_eq!(lookup(424_242), None);
        assert_eq!(class(code::TOO_MANY_REQUESTS), ErrorClass::Retry);
        assert_eq!(class(code::UNAUTHORIZED), ErrorClass::Auth);
        assert_eq!(class(code::PRICE_WRONG_TICK), ErrorClass::Reject);
    }
}
