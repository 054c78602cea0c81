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
    /// Every order of the account.
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
    fn secrets_are_signed_not_sent() {
        let secret = Secret::new("AMANDASECRECT");
        let mut out = Vec::new();
        auth_client_signature(&mut out, 9929, "AMANDA", &secret, 1_576_074_319_000, "1iqt2wls", "");
        let text = text(&out);
        assert!(!text.contains("AMANDASECRECT"));
        assert!(text.contains(r#""signature":"56590594f97921b09b18f166befe0d1319b198bbcdad7ca73382de2f88fe9aa1""#));
    }
}
