//! The session's other requests: cancels (by label, by order id, all, all of an instrument) and
//! the control messages (`public/auth` both grants, `public/set_heartbeat`, `public/test`,
//! `private/enable_cancel_on_disconnect`, `public|private/subscribe`, and the state queries
//! a session makes after a reconnect).
//!
//! Owns: each method's name and members in the order written here, and the choice of which
//! optional members are sent.
//! Must not: allocate beyond `out`'s growth (everything goes through
//! [`crate::envelope::encode_request`] and its `ParamsWriter`, which write straight into
//! `out`; only `auth_client_signature` allocates, for the HMAC's hex text), or carry a secret
//! anywhere but into `out`.
//!
//! Why not per-instrument prefixes as in [`crate::order::OrderEncoder`]: these requests are
//! not on the timed path (cancels go out after a decision, not per tick) and have no
//! instrument-dependent prefix worth prebuilding; the generic writer is already allocation-free.

use crate::envelope::encode_request;
use crate::order::{OrderTag, write_tag_plain};
use crate::signature::{Secret, client_signature};

/// `private/cancel_by_label`: every open order with this label (`currency` narrows it).
pub fn cancel_by_label(out: &mut Vec<u8>, id: u64, label: OrderTag<'_>, currency: Option<&str>) {
    let mut text = [0u8; 64];
    let label = write_tag_plain(label, &mut text);
    encode_request(out, id, "private/cancel_by_label", |p| {
        p.str("label", label);
        if let Some(currency) = currency {
            p.str("currency", currency);
        }
    });
}

/// `private/cancel` of one order by Deribit's id.
pub fn cancel(out: &mut Vec<u8>, id: u64, order_id: &str) {
    encode_request(out, id, "private/cancel", |p| {
        p.str("order_id", order_id);
    });
}

/// `private/cancel_all`: every order of the account.
pub fn cancel_all(out: &mut Vec<u8>, id: u64) {
    encode_request(out, id, "private/cancel_all", |_| {});
}

/// `private/cancel_all_by_instrument`: every order (type `all`) of one instrument.
pub fn cancel_all_by_instrument(out: &mut Vec<u8>, id: u64, instrument: &str) {
    encode_request(out, id, "private/cancel_all_by_instrument", |p| {
        p.str("instrument_name", instrument).str("type", "all");
    });
}

/// `public/auth` with `grant_type=client_credentials`. The secret goes into `out` only.
pub fn auth_client_credentials(out: &mut Vec<u8>, id: u64, client_id: &str, secret: &Secret) {
    encode_request(out, id, "public/auth", |p| {
        p.str("grant_type", "client_credentials").str("client_id", client_id).str("client_secret", secret.expose());
    });
}

/// `public/auth` with `grant_type=client_signature`: the secret never leaves this process,
/// only the HMAC of `timestamp\nnonce\ndata` (see [`client_signature`]).
pub fn auth_client_signature(
    out: &mut Vec<u8>,
    id: u64,
    client_id: &str,
    secret: &Secret,
    timestamp_ms: u64,
    nonce: &str,
    data: &str,
) {
    let signature = client_signature(secret, timestamp_ms, nonce, data);
    encode_request(out, id, "public/auth", |p| {
        p.str("grant_type", "client_signature").str("client_id", client_id).u64("timestamp", timestamp_ms);
        p.str("nonce", nonce).str("data", data).str("signature", &signature);
    });
}

/// `public/set_heartbeat`: Deribit then sends a `test_request` every `interval_s` seconds
/// (at least 10), to be answered with [`test`].
pub fn set_heartbeat(out: &mut Vec<u8>, id: u64, interval_s: u32) {
    encode_request(out, id, "public/set_heartbeat", |p| {
        p.u64("interval", u64::from(interval_s));
    });
}

/// `public/test`: the answer to a `test_request` heartbeat.
pub fn test(out: &mut Vec<u8>, id: u64) {
    encode_request(out, id, "public/test", |_| {});
}

/// Whose orders `cancel_on_disconnect` cancels when the connection drops.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelScope {
    /// The orders of this connection (a live session's choice).
    Connection,
    /// The account's default for its connections opened later (each still cancels only the
    /// orders created through it).
    Account,
}

/// `private/enable_cancel_on_disconnect` with `scope`.
pub fn enable_cancel_on_disconnect(out: &mut Vec<u8>, id: u64, scope: CancelScope) {
    encode_request(out, id, "private/enable_cancel_on_disconnect", |p| {
        p.str(
            "scope",
            match scope {
                CancelScope::Connection => "connection",
                CancelScope::Account => "account",
            },
        );
    });
}

/// Which subscribe method: `public/subscribe` (market data only) or `private/subscribe`
/// (needed for `user.*` channels, and for `raw` book channels after auth).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scope {
    Public,
    Private,
}

/// `public/subscribe` or `private/subscribe` with these channel names (see
/// [`crate::channel::Channel`] for building them: `book.{i}.raw`, `user.orders.{i}.raw`…).
pub fn subscribe<'c>(out: &mut Vec<u8>, id: u64, scope: Scope, channels: impl IntoIterator<Item = &'c str>) {
    let method = match scope {
        Scope::Public => "public/subscribe",
        Scope::Private => "private/subscribe",
    };
    encode_request(out, id, method, |p| {
        p.strs("channels", channels);
    });
}

/// The largest request a Deribit venue takes: a WebSocket frame or HTTP body over 32 kB is
/// refused with -32600 "request entity too large" (the simulator enforces the same).
pub const MAX_REQUEST_BYTES: usize = 32 * 1024;

/// Room for a (un)subscribe request's envelope around its channel list: `{"jsonrpc":"2.0",
/// "id":<u64>,"method":"private/unsubscribe","params":{"channels":[` … `]}}`.
const SUBSCRIBE_ENVELOPE_BYTES: usize = 128;

/// Splits `channels` into runs whose `(un)subscribe` request stays within
/// [`MAX_REQUEST_BYTES`], in order. A subscriber of every instrument's channels (a few
/// thousand names) would otherwise send one request the venue refuses whole. A single name
/// too long for any request gets a run of its own (the venue's refusal then names it).
pub fn channel_batches<S: AsRef<str>>(channels: &[S]) -> impl Iterator<Item = &[S]> {
    let budget = MAX_REQUEST_BYTES - SUBSCRIBE_ENVELOPE_BYTES;
    let mut rest = channels;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let mut used = 0;
        let mut n = 0;
        for channel in rest {
            let cost = json_string_len(channel.as_ref()) + 1;
            if n > 0 && used + cost > budget {
                break;
            }
            used += cost;
            n += 1;
        }
        let (run, tail) = rest.split_at(n);
        rest = tail;
        Some(run)
    })
}

/// Bytes of `s` as a JSON string, quotes included (exact for `"` and `\`, an upper bound
/// for control characters, which may take `\u00XX`).
fn json_string_len(s: &str) -> usize {
    let escaped = |b: u8| match b {
        b'"' | b'\\' => 1,
        0..0x20 => 5,
        _ => 0,
    };
    2 + s.len() + s.bytes().map(escaped).sum::<usize>()
}

/// `private/get_open_orders_by_instrument` (all order types).
pub fn get_open_orders_by_instrument(out: &mut Vec<u8>, id: u64, instrument: &str) {
    encode_request(out, id, "private/get_open_orders_by_instrument", |p| {
        p.str("instrument_name", instrument);
    });
}

/// `private/get_position` of one instrument.
pub fn get_position(out: &mut Vec<u8>, id: u64, instrument: &str) {
    encode_request(out, id, "private/get_position", |p| {
        p.str("instrument_name", instrument);
    });
}

/// `private/get_order_state` of one order by Deribit's id.
pub fn get_order_state(out: &mut Vec<u8>, id: u64, order_id: &str) {
    encode_request(out, id, "private/get_order_state", |p| {
        p.str("order_id", order_id);
    });
}

/// `private/get_order_state_by_label`: the orders (any state) with this label in `currency`
/// (Deribit requires the currency; the result is an array of order objects).
pub fn get_order_state_by_label(out: &mut Vec<u8>, id: u64, currency: &str, label: OrderTag<'_>) {
    let mut text = [0u8; 64];
    let label = write_tag_plain(label, &mut text);
    encode_request(out, id, "private/get_order_state_by_label", |p| {
        p.str("currency", currency).str("label", label);
    });
}

/// `private/get_user_trades_by_instrument` from `start_seq` (a session catching up after a
/// reconnect), at most `count` trades, oldest first when `ascending` (Deribit's default is
/// newest first).
pub fn get_user_trades_by_instrument(
    out: &mut Vec<u8>,
    id: u64,
    instrument: &str,
    start_seq: Option<u64>,
    count: Option<u32>,
    ascending: bool,
) {
    encode_request(out, id, "private/get_user_trades_by_instrument", |p| {
        p.str("instrument_name", instrument);
        if let Some(seq) = start_seq {
            p.u64("start_seq", seq);
        }
        if let Some(count) = count {
            p.u64("count", u64::from(count));
        }
        if ascending {
            p.str("sorting", "asc");
        }
    });
}

/// `private/get_open_orders_by_currency` (all kinds, all order types): every open order on
/// every instrument Deribit files under `currency`, the session's or not.
pub fn get_open_orders_by_currency(out: &mut Vec<u8>, id: u64, currency: &str) {
    encode_request(out, id, "private/get_open_orders_by_currency", |p| {
        p.str("currency", currency);
    });
}

/// `private/get_positions` of every instrument (all kinds) in `currency`; instruments without a
/// position may be left out.
pub fn get_positions(out: &mut Vec<u8>, id: u64, currency: &str) {
    encode_request(out, id, "private/get_positions", |p| {
        p.str("currency", currency);
    });
}

/// `private/get_user_trades_by_currency` from `start_timestamp_ms` (included; Deribit then
/// returns the earliest first), at most `count` trades, oldest first when `ascending`.
pub fn get_user_trades_by_currency(
    out: &mut Vec<u8>,
    id: u64,
    currency: &str,
    start_timestamp_ms: Option<u64>,
    count: Option<u32>,
    ascending: bool,
) {
    encode_request(out, id, "private/get_user_trades_by_currency", |p| {
        p.str("currency", currency);
        if let Some(ms) = start_timestamp_ms {
            p.u64("start_timestamp", ms);
        }
        if let Some(count) = count {
            p.u64("count", u64::from(count));
        }
        if ascending {
            p.str("sorting", "asc");
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::order::{Label, OrderLabel};

    fn text(out: &[u8]) -> &str {
        std::str::from_utf8(out).unwrap()
    }

    #[test]
    fn labels_of_both_forms_and_none() {
        let mut out = Vec::new();
        cancel_by_label(&mut out, 1, OrderTag::Origin(OrderLabel { recv_utc_ns: 5, change_id: 6 }), Some("BTC"));
        assert_eq!(
            text(&out),
            r#"{"jsonrpc":"2.0","id":1,"method":"private/cancel_by_label","params":{"label":"tt.5.6","currency":"BTC"}}"#
        );
        out.clear();
        get_order_state_by_label(&mut out, 2, "ETH", OrderTag::Text(Label::new(b"a\"b").unwrap()));
        assert_eq!(
            text(&out),
            r#"{"jsonrpc":"2.0","id":2,"method":"private/get_order_state_by_label","params":{"currency":"ETH","label":"a\"b"}}"#
        );
        out.clear();
        cancel_by_label(&mut out, 3, OrderTag::None, None);
        assert_eq!(text(&out), r#"{"jsonrpc":"2.0","id":3,"method":"private/cancel_by_label","params":{"label":""}}"#);
    }

    #[test]
    fn currency_wide_queries() {
        let mut out = Vec::new();
        get_open_orders_by_currency(&mut out, 4, "ETH");
        assert_eq!(
            text(&out),
            r#"{"jsonrpc":"2.0","id":4,"method":"private/get_open_orders_by_currency","params":{"currency":"ETH"}}"#
        );
        out.clear();
        get_positions(&mut out, 5, "BTC");
        assert_eq!(
            text(&out),
            r#"{"jsonrpc":"2.0","id":5,"method":"private/get_positions","params":{"currency":"BTC"}}"#
        );
        out.clear();
        get_user_trades_by_currency(&mut out, 6, "BTC", Some(1_700_000_000_000), Some(1000), true);
        assert_eq!(
            text(&out),
            r#"{"jsonrpc":"2.0","id":6,"method":"private/get_user_trades_by_currency","params":{"currency":"BTC","start_timestamp":1700000000000,"count":1000,"sorting":"asc"}}"#
        );
    }

    #[test]
    fn secrets_are_signed_not_sent() {
        let secret = Secret::new("AMANDASECRECT");
        let mut out = Vec::new();
        auth_client_signature(&mut out, 9929, "AMANDA", &secret, 1_576_074_319_000, "1iqt2wls", "");
        let text = text(&out);
        assert!(!text.contains("AMANDASECRECT"));
        assert!(text.contains(r#""signature":"56590594f97921b09b18f166befe0d1319b198bbcdad7ca73382de2f88fe9aa1""#));
    }

    proptest::proptest! {
        /// Every run's request fits the venue's limit (with the largest id and the longer
        /// method), the runs cover every channel once and in order, and a run is cut only
        /// where the next channel would not fit.
        #[test]
        fn channel_batches_fit_the_request_limit(
            names in proptest::collection::vec("[a-zA-Z0-9._\\-\"\\\\]{1,80}", 0..3000)
        ) {
            let mut seen = Vec::new();
            let mut out = Vec::new();
            let batches: Vec<&[String]> = channel_batches(&names).collect();
            for (i, run) in batches.iter().enumerate() {
                proptest::prop_assert!(!run.is_empty());
                out.clear();
                subscribe(&mut out, u64::MAX, Scope::Private, run.iter().map(String::as_str));
                let unsubscribe_len = out.len() + 2;
                proptest::prop_assert!(unsubscribe_len <= MAX_REQUEST_BYTES, "{} bytes", unsubscribe_len);
                if let Some(next) = batches.get(i + 1) {
                    out.clear();
                    let grown = run.iter().chain(&next[..1]).map(String::as_str);
                    subscribe(&mut out, 1, Scope::Public, grown);
                    proptest::prop_assert!(out.len() > MAX_REQUEST_BYTES - SUBSCRIBE_ENVELOPE_BYTES);
                }
                seen.extend(run.iter().cloned());
            }
            proptest::prop_assert_eq!(seen, names);
        }
    }

    #[test]
    fn every_channel_of_a_large_venue_goes_out_in_requests_it_accepts() {
        // 354 instruments × book, trades and ticker: one request would be ≈36 kB.
        let names: Vec<String> = (0..1062).map(|i| format!("ticker.BTC-11DEC26-{:05}-C.100ms", i)).collect();
        let batches: Vec<&[String]> = channel_batches(&names).collect();
        assert_eq!(batches.len(), 2, "{:?}", batches.iter().map(|b| b.len()).collect::<Vec<_>>());
        assert_eq!(batches.iter().map(|b| b.len()).sum::<usize>(), 1062);
    }
}
