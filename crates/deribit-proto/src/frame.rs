//! `scan_frame`: the live session's one-pass classifier of a received frame — a result or an
//! error for request id N, a subscription notification (channel, its kind, and the span of
//! `params.data`), or a heartbeat (`test_request` or plain) — borrowing every part from the
//! frame.
//!
//! Owns: the envelope walk on the hot thread (members in any order, whitespace anywhere,
//! unknown members skipped), the error object's `code`/`message`/`data`, and [`ChannelKind`].
//! Must not: allocate, decode a payload (`result` and `data` stay spans for `report`,
//! `book_fast` …), or panic on any input. [`crate::envelope::classify`] gives the same answer
//! through serde for the control plane (tested on every vector).
//!
//! Why a second classifier: `classify` deserialises the envelope, then `params` again from
//! its raw text, and carries `Cow` strings and an owned-capable `RpcError`; here the frame is
//! walked once with the crate's scanner and the result is `Copy`.

use crate::envelope::Heartbeat;
use crate::scan::{DecodeError, Scanner};

/// What kind of channel a notification came on (by its name's prefix).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ChannelKind {
    Book,
    UserOrders,
    UserTrades,
    UserChanges,
    UserPortfolio,
    Ticker,
    Trades,
    Quote,
    Other,
}

impl ChannelKind {
    pub fn of(channel: &str) -> ChannelKind {
        const KINDS: [(&str, ChannelKind); 8] = [
            ("book.", ChannelKind::Book),
            ("user.orders.", ChannelKind::UserOrders),
            ("user.trades.", ChannelKind::UserTrades),
            ("user.changes.", ChannelKind::UserChanges),
            ("user.portfolio.", ChannelKind::UserPortfolio),
            ("ticker.", ChannelKind::Ticker),
            ("trades.", ChannelKind::Trades),
            ("quote.", ChannelKind::Quote),
        ];
        KINDS.iter().find(|(prefix, _)| channel.starts_with(prefix)).map_or(ChannelKind::Other, |&(_, kind)| kind)
    }
}

/// The `error` member of a response. `message` is the raw text between its quotes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ErrorReport<'a> {
    pub code: i64,
    pub message: &'a str,
    /// The `data` member's JSON text (`{"reason":…,"param":…}`, a string), if present and not
    /// `null`.
    pub data: Option<&'a [u8]>,
}

/// A classified frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame<'a> {
    /// A success response; `result` is the member's JSON text (`null` included).
    Result {
        id: Option<u64>,
        result: &'a [u8],
    },
    /// An error response (`id` is absent when Deribit could not read ours, e.g. 11050).
    Error {
        id: Option<u64>,
        error: ErrorReport<'a>,
    },
    /// A subscription notification; `data` is `params.data`'s JSON text.
    Notification {
        channel: &'a str,
        kind: ChannelKind,
        label: Option<&'a str>,
        data: &'a [u8],
    },
    Heartbeat(Heartbeat),
}

/// Classifies one received frame in one pass.
pub fn scan_frame(frame: &[u8]) -> Result<Frame<'_>, DecodeError> {
    let mut s = Scanner::new(frame);
    let (mut id, mut method, mut result, mut error) = (None, None, None, None);
    let mut params = Params::default();
    if s.open(b'{', b'}', "'{'")? {
        loop {
            match s.key()? {
                b"id" => id = if s.null() { None } else { Some(s.u64()?) },
                b"method" => method = Some(s.raw_str()?),
                b"result" => result = Some(s.span()?),
                b"error" => error = Some(error_object(&mut s)?),
                b"params" => params = params_object(&mut s)?,
                _ => s.skip_value()?,
            }
            if !s.next_item(b'}', "',' or '}'")? {
                break;
            }
        }
    }
    s.end()?;
    match method {
        Some("subscription") => Ok(Frame::Notification {
            channel: params.channel.ok_or(DecodeError::Missing("params.channel"))?,
            kind: ChannelKind::of(params.channel.unwrap_or("")),
            label: params.label,
            data: params.data.ok_or(DecodeError::Missing("params.data"))?,
        }),
        Some("heartbeat") => match params.kind.ok_or(DecodeError::Missing("params.type"))? {
            "heartbeat" => Ok(Frame::Heartbeat(Heartbeat::Heartbeat)),
            "test_request" => Ok(Frame::Heartbeat(Heartbeat::TestRequest)),
            _ => Err(DecodeError::Unexpected { at: 0, expected: "a heartbeat type" }),
        },
        Some(_) if error.is_none() && result.is_none() => {
            Err(DecodeError::Unexpected { at: 0, expected: "a response or notification, not a request" })
        }
        // Some documented responses echo the request's `method`; `result`/`error` decide.
        _ => match (error, result) {
            (Some(error), _) => Ok(Frame::Error { id, error }),
            (None, Some(result)) => Ok(Frame::Result { id, result }),
            (None, None) => Err(DecodeError::Missing("result")),
        },
    }
}

/// A response in the layout Deribit and ticktrade's simulator write — `{"jsonrpc":"2.0","id":N,"result":`,
/// an object or array, then only the server's stamps (`usIn`, `usOut`, `usDiff`, `testnet`,
/// in any order) and `}` — split into its id and the result's text, without walking the
/// result. `None` for anything else ([`scan_frame`] then decides).
///
/// The result's text is not checked here: use this only where the whole result is decoded
/// next by a decoder that refuses anything but a complete value (an order result through
/// [`crate::report::decode_order_result`]). Walking a 700-byte order result once to find its
/// end, and again to decode it, was most of an acknowledgement's cost on the hot thread.
pub fn result_in_usual_layout(frame: &[u8]) -> Option<(u64, &[u8])> {
    const HEAD: &[u8] = br#"{"jsonrpc":"2.0","id":"#;
    let rest = frame.strip_prefix(HEAD)?;
    let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 || digits > 19 || (digits > 1 && rest[0] == b'0') {
        return None;
    }
    let id = rest[..digits].iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'));
    let body = rest[digits..].strip_prefix(br#","result":"#)?;
    // Back from the closing brace over `,"key":value` members of the stamps.
    let mut end = body.len().checked_sub(1)?;
    if body[end] != b'}' {
        return None;
    }
    let mut seen = 0u8;
    loop {
        let value = &body[..end];
        let len = match value.last()? {
            b'0'..=b'9' => crate::words::digits_before(value),
            b'e' if value.ends_with(b"true") => 4,
            b'e' if value.ends_with(b"false") => 5,
            _ => return None,
        };
        let before = &value[..value.len() - len];
        let (bit, key_len) = [
            (1u8, &br#","usIn":"#[..]),
            (2, &br#","usOut":"#[..]),
            (4, &br#","usDiff":"#[..]),
            (8, &br#","testnet":"#[..]),
        ]
        .into_iter()
        .find(|(_, key)| before.ends_with(key))
        .map(|(bit, key)| (bit, key.len()))?;
        if seen & bit != 0 {
            return None;
        }
        seen |= bit;
        end = before.len() - key_len;
        if matches!(body.get(end.checked_sub(1)?), Some(b'}' | b']')) {
            break;
        }
    }
    let result = &body[..end];
    matches!(result.first(), Some(b'{' | b'[')).then_some((id, result))
}

#[derive(Default)]
struct Params<'a> {
    channel: Option<&'a str>,
    label: Option<&'a str>,
    data: Option<&'a [u8]>,
    kind: Option<&'a str>,
}

fn params_object<'a>(s: &mut Scanner<'a>) -> Result<Params<'a>, DecodeError> {
    let mut params = Params::default();
    if s.peek() != Some(b'{') {
        // Requests may carry `params` of other shapes; nothing here is then usable.
        s.skip_value()?;
        return Ok(params);
    }
    if s.open(b'{', b'}', "'{'")? {
        loop {
            match s.key()? {
                b"channel" => params.channel = Some(s.raw_str()?),
                b"label" => params.label = if s.null() { None } else { Some(s.raw_str()?) },
                b"data" => params.data = Some(s.span()?),
                b"type" => params.kind = Some(s.raw_str()?),
                _ => s.skip_value()?,
            }
            if !s.next_item(b'}', "',' or '}'")? {
                break;
            }
        }
    }
    Ok(params)
}

fn error_object<'a>(s: &mut Scanner<'a>) -> Result<ErrorReport<'a>, DecodeError> {
    let (mut code, mut message, mut data) = (None, None, None);
    if s.open(b'{', b'}', "an error object")? {
        loop {
            match s.key()? {
                b"code" => code = Some(s.i64()?),
                b"message" => message = Some(s.raw_str()?),
                // `null` is no data, as `envelope::classify` reads it.
                b"data" => data = if s.null() { None } else { Some(s.span()?) },
                _ => s.skip_value()?,
            }
            if !s.next_item(b'}', "',' or '}'")? {
                break;
            }
        }
    }
    Ok(ErrorReport {
        code: code.ok_or(DecodeError::Missing("error.code"))?,
        message: message.ok_or(DecodeError::Missing("error.message"))?,
        data,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_frame() {
        let frame = br#"{"jsonrpc":"2.0","id":7,"result":{"a":[1,2]},"usIn":1,"usOut":2,"usDiff":1,"testnet":true}"#;
        assert_eq!(scan_frame(frame), Ok(Frame::Result { id: Some(7), result: br#"{"a":[1,2]}"# }));
        let frame =
            br#"{"jsonrpc":"2.0","id":8,"error":{"message":"too_many_requests","data":{"reason":"x"},"code":10028}}"#;
        let error = ErrorReport { code: 10028, message: "too_many_requests", data: Some(br#"{"reason":"x"}"#) };
        assert_eq!(scan_frame(frame), Ok(Frame::Error { id: Some(8), error }));
        let frame = br#"{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}"#;
        assert_eq!(scan_frame(frame), Ok(Frame::Heartbeat(Heartbeat::TestRequest)));
        let frame = br#" { "jsonrpc" : "2.0" , "method" : "subscription" , "params" : { "data" : [ ] , "label" : "a\"b" , "channel" : "user.trades.any.any.raw" } } "#;
        assert_eq!(
            scan_frame(frame),
            Ok(Frame::Notification {
                channel: "user.trades.any.any.raw",
                kind: ChannelKind::UserTrades,
                label: Some(r#"a\"b"#),
                data: b"[ ]"
            })
        );
        let frame = br#"{"jsonrpc":"2.0","error":{"code":-32700,"message":"parse error"}}"#;
        assert!(matches!(scan_frame(frame), Ok(Frame::Error { id: None, error: ErrorReport { code: -32700, .. } })));
    }

    #[test]
    fn usual_layout_results_split_without_a_walk() {
        let sim = br#"{"jsonrpc":"2.0","id":7,"result":{"order":{"a":"}"},"trades":[]},"testnet":false,"usIn":1,"usOut":22,"usDiff":21}"#;
        assert_eq!(result_in_usual_layout(sim), Some((7, &br#"{"order":{"a":"}"},"trades":[]}"#[..])));
        let deribit = br#"{"jsonrpc":"2.0","id":12,"result":[1,2],"usIn":1,"usOut":2,"usDiff":1,"testnet":true}"#;
        assert_eq!(result_in_usual_layout(deribit), Some((12, &b"[1,2]"[..])));
        for other in [
            &br#"{"jsonrpc":"2.0","id":7,"result":"ok","usIn":1}"#[..],
            br#"{"jsonrpc":"2.0","id":7,"result":{},"usIn":1,"usIn":2}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{},"other":1}"#,
            br#"{"jsonrpc":"2.0","id":07,"result":{},"usIn":1}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{}}"#,
            br#"{"jsonrpc":"2.0","id":7,"error":{},"usIn":1}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{},"usIn":-1}"#,
            br#" {"jsonrpc":"2.0","id":7,"result":{},"usIn":1}"#,
            br#"{"jsonrpc":"2.0","id":7,"result":{},"usIn":1} "#,
            br#"{"jsonrpc":"2.0","id":7,"result":,"usIn":1}"#,
        ] {
            assert_eq!(result_in_usual_layout(other), None, "{}", String::from_utf8_lossy(other));
        }
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        /// Whatever it accepts, the full classifier reads as the same result, or refuses only
        /// because the result's own text is not JSON (which the result's decoder refuses too).
        #[test]
        fn usual_layout_agrees_with_scan_frame(bytes in proptest::prop_oneof![
            proptest::sample::select(vec![
                r#"{}"#, r#"[]"#, r#"{"a":"},\"usIn\":1"}"#, r#"[{"b":[1,{"c":true}]},"]"]"#,
                r#"{"order":{"x":1},"trades":[]}"#, r#"{"a":1},"result":{"b":2}"#, r#"{"a":1}}"#,
            ]).prop_map(|s: &str| s.as_bytes().to_vec()),
            proptest::collection::vec(proptest::sample::select(br#"{}[],:"01a\ usIntrue"#.to_vec()), 0..24),
        ], stamps in 0usize..4) {
            let tails = [r#","usIn":1,"usOut":2,"usDiff":1,"testnet":false}"#, r#","testnet":true,"usIn":5}"#, r#","usDiff":0}"#, r#"}"#];
            let mut frame = br#"{"jsonrpc":"2.0","id":3,"result":"#.to_vec();
            frame.extend_from_slice(&bytes);
            frame.extend_from_slice(tails[stamps].as_bytes());
            if let Some((id, result)) = result_in_usual_layout(&frame) {
                proptest::prop_assert_eq!(id, 3);
                let alone = Scanner::new(result).span().is_ok_and(|span| span.len() == result.len());
                if alone {
                    proptest::prop_assert_eq!(scan_frame(&frame), Ok(Frame::Result { id: Some(3), result }));
                }
            }
        }
    }

    #[test]
    fn refuses_what_is_not_a_received_frame() {
        let request = br#"{"jsonrpc":"2.0","id":1,"method":"public/test","params":{}}"#;
        assert!(matches!(scan_frame(request), Err(DecodeError::Unexpected { .. })));
        assert_eq!(scan_frame(br#"{"jsonrpc":"2.0","id":1}"#), Err(DecodeError::Missing("result")));
        assert_eq!(
            scan_frame(br#"{"method":"subscription","params":{"channel":"x"}}"#),
            Err(DecodeError::Missing("params.data"))
        );
        assert_eq!(scan_frame(br#"{"id":1,"result":2"#), Err(DecodeError::Incomplete));
        assert!(scan_frame(br#"{"id":"a","result":2}"#).is_err());
        assert!(scan_frame(br#"{"id":1,"result":2} x"#).is_err());
        assert!(scan_frame(br#"{"method":"heartbeat","params":{"type":"other"}}"#).is_err());
    }
}
