//! The public WebSocket API (`/ws`): what clients send, what the server answers.
//!
//! Owns: `ClientMessage`/`Subscription` decoding, validation of `nSigFigs`/`mantissa`/`nLevels`
//! into an `L2Variant`, the exact error strings, and writers for the server's frames.
//! Must not: know books or sockets. Level prices and sizes arrive as integer units plus the
//! coin's unit, and are written exactly (`"106217.0"`, Hyperliquid's style).

use serde::{Deserialize, Serialize};
use ticktrade_core::{Decimal, write_units};

use crate::node::{BookDiff, NodeOrder, OrderStatus, WsTrade};

pub mod feeds;
mod l2frame;
pub use l2frame::L2View;

/// Default and largest `nLevels` of an `l2Book` subscription.
pub const DEFAULT_N_LEVELS: usize = 20;
pub const MAX_N_LEVELS: usize = 100;

/// A request from a client.
#[derive(Debug, Deserialize)]
#[serde(tag = "method", rename_all = "camelCase")]
pub enum ClientMessage {
    Subscribe { subscription: Subscription },
    Unsubscribe { subscription: Subscription },
    Ping,
    Post { id: u64, request: PostRequest },
}

impl ClientMessage {
    pub fn parse(text: &str) -> Result<ClientMessage, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// `{"type":"info"|"action","payload":{…}}` inside a `post`.
#[derive(Debug, Deserialize)]
pub struct PostRequest {
    #[serde(rename = "type")]
    pub kind: String,
    pub payload: serde_json::Value,
}

/// A subscription, identified by its whole content (so unsubscribe must repeat it).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq, Hash)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Subscription {
    L2Book {
        coin: String,
        #[serde(rename = "nSigFigs", default)]
        n_sig_figs: Option<u32>,
        #[serde(default)]
        mantissa: Option<u32>,
        #[serde(rename = "nLevels", default, skip_serializing_if = "Option::is_none")]
        n_levels: Option<u32>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        fast: Option<bool>,
    },
    Trades {
        coin: String,
    },
    L4Book {
        coin: String,
    },
    /// Every coin's mid (`dex` is accepted; one dex is served).
    AllMids {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dex: Option<String>,
    },
    /// Best bid and ask, sent on a block that changed them.
    Bbo {
        coin: String,
    },
    /// One candle interval of a coin, built from the trades.
    Candle {
        coin: String,
        interval: String,
    },
    /// A coin's asset context (`activeAssetCtx` or `activeSpotAssetCtx` frames).
    ActiveAssetCtx {
        coin: String,
    },
    /// One user's order status changes.
    OrderUpdates {
        user: String,
    },
    /// One user's fills.
    UserFills {
        user: String,
        #[serde(rename = "aggregateByTime", default, skip_serializing_if = "Option::is_none")]
        aggregate_by_time: Option<bool>,
    },
}

impl Subscription {
    /// The coin of a per-coin subscription.
    pub fn coin(&self) -> Option<&str> {
        match self {
            Subscription::L2Book { coin, .. }
            | Subscription::Trades { coin }
            | Subscription::L4Book { coin }
            | Subscription::Bbo { coin }
            | Subscription::Candle { coin, .. }
            | Subscription::ActiveAssetCtx { coin } => Some(coin),
            Subscription::AllMids { .. } | Subscription::OrderUpdates { .. } | Subscription::UserFills { .. } => None,
        }
    }

    /// The same subscription with `mantissa: 1` written as null (they are one subscription)
    /// and a user address in lower case (as Hyperliquid spells addresses).
    pub fn normalised(mut self) -> Subscription {
        match &mut self {
            Subscription::L2Book { mantissa, .. } if *mantissa == Some(1) => *mantissa = None,
            Subscription::OrderUpdates { user } | Subscription::UserFills { user, .. } => user.make_ascii_lowercase(),
            _ => {}
        }
        self
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// One of the seven L2 aggregations Hyperliquid offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum L2Variant {
    Full,
    Sig5 { mantissa: u8 },
    Sig4,
    Sig3,
    Sig2,
}

impl L2Variant {
    pub const ALL: [L2Variant; 7] = [
        L2Variant::Full,
        L2Variant::Sig5 { mantissa: 1 },
        L2Variant::Sig5 { mantissa: 2 },
        L2Variant::Sig5 { mantissa: 5 },
        L2Variant::Sig4,
        L2Variant::Sig3,
        L2Variant::Sig2,
    ];

    /// Validates `nSigFigs`/`mantissa` as DOCS and OBS do (mantissa 1 ≡ null; mantissa only
    /// with 5 significant figures).
    pub fn from_params(n_sig_figs: Option<u32>, mantissa: Option<u32>) -> Option<L2Variant> {
        match (n_sig_figs, mantissa) {
            (None, None) => Some(L2Variant::Full),
            (Some(5), None | Some(1)) => Some(L2Variant::Sig5 { mantissa: 1 }),
            (Some(5), Some(2)) => Some(L2Variant::Sig5 { mantissa: 2 }),
            (Some(5), Some(5)) => Some(L2Variant::Sig5 { mantissa: 5 }),
            (Some(4), None) => Some(L2Variant::Sig4),
            (Some(3), None) => Some(L2Variant::Sig3),
            (Some(2), None) => Some(L2Variant::Sig2),
            _ => None,
        }
    }

    pub fn n_sig_figs(self) -> Option<u32> {
        match self {
            L2Variant::Full => None,
            L2Variant::Sig5 { .. } => Some(5),
            L2Variant::Sig4 => Some(4),
            L2Variant::Sig3 => Some(3),
            L2Variant::Sig2 => Some(2),
        }
    }

    /// The bucket mantissa (1 when there is none).
    pub fn mantissa(self) -> u32 {
        match self {
            L2Variant::Sig5 { mantissa } => u32::from(mantissa),
            _ => 1,
        }
    }

    /// Position in [`L2Variant::ALL`].
    pub fn index(self) -> usize {
        match self {
            L2Variant::Full => 0,
            L2Variant::Sig5 { mantissa: 2 } => 2,
            L2Variant::Sig5 { mantissa: 5 } => 3,
            L2Variant::Sig5 { .. } => 1,
            L2Variant::Sig4 => 4,
            L2Variant::Sig3 => 5,
            L2Variant::Sig2 => 6,
        }
    }
}

/// What a valid `l2Book` subscription asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct L2Params {
    pub variant: L2Variant,
    pub n_levels: usize,
}

impl L2Params {
    /// `None` when the parameters are invalid (`Invalid subscription`).
    pub fn new(
        n_sig_figs: Option<u32>,
        mantissa: Option<u32>,
        n_levels: Option<u32>,
        fast: Option<bool>,
    ) -> Option<L2Params> {
        let variant = L2Variant::from_params(n_sig_figs, mantissa)?;
        let n_levels = match (n_levels, fast) {
            (Some(n), _) if n == 0 || n as usize > MAX_N_LEVELS => return None,
            (Some(n), _) => n as usize,
            (None, Some(true)) => 5,
            (None, _) => DEFAULT_N_LEVELS,
        };
        Some(L2Params { variant, n_levels })
    }
}

/// The error strings clients see (`{"channel":"error","data":…}`).
pub mod errors {
    pub fn parse(text: &str) -> String {
        format!("Error parsing JSON into valid websocket request: {text}")
    }
    pub fn invalid(subscription_json: &str) -> String {
        format!("Invalid subscription: {subscription_json}")
    }
    pub fn already(subscribe: bool, subscription_json: &str) -> String {
        format!("Already {}: {subscription_json}", if subscribe { "subscribed" } else { "unsubscribed" })
    }
    pub const NOT_READY: &str = "Order book not ready for streaming (waiting for snapshot)";
}

/// `{"channel":channel,"data":data}` as text.
pub fn envelope<T: Serialize + ?Sized>(channel: &str, data: &T) -> String {
    serde_json::to_string(&Envelope { channel, data }).unwrap_or_default()
}

#[derive(Serialize)]
struct Envelope<'a, T: ?Sized> {
    channel: &'a str,
    data: &'a T,
}

pub fn pong() -> &'static str {
    r#"{"channel":"pong"}"#
}

pub fn error_frame(message: &str) -> String {
    envelope("error", message)
}

/// `subscriptionResponse` echoing the request.
pub fn subscription_response(subscribe: bool, subscription: &Subscription) -> String {
    #[derive(Serialize)]
    struct Echo<'a> {
        method: &'a str,
        subscription: &'a Subscription,
    }
    envelope(
        "subscriptionResponse",
        &Echo { method: if subscribe { "subscribe" } else { "unsubscribe" }, subscription },
    )
}

/// `trades` frame (never empty).
pub fn trades_frame(trades: &[WsTrade<'_>]) -> String {
    envelope("trades", trades)
}

/// One L2 level in integer units.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnitLevel {
    pub px: i64,
    pub sz: i64,
    pub n: u32,
}

/// The units prices and sizes of one coin are counted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Units {
    pub px: Decimal,
    pub sz: Decimal,
}

/// Writes a decimal the way Hyperliquid prints book numbers: exact, `.0` on integers.
/// Units of `10^-k` (every coin's units) take a fast path: integer digits, then the point.
pub fn write_hl_decimal(units: i64, unit: Decimal, out: &mut Vec<u8>) {
    if unit.mantissa() != 1 {
        let start = out.len();
        write_units(units, unit, out);
        if !out[start..].contains(&b'.') {
            out.extend_from_slice(b".0");
        }
        return;
    }
    hl_decimal_pieces(units, unit.scale(), |piece| out.extend_from_slice(piece));
}

/// `units` of `10^-scale` as [`write_hl_decimal`] prints them (`[-]int.frac`, the fraction
/// without trailing zeros, `.0` when none is left), handed to `put` piece by piece: the one
/// formatting of the `Vec` writer and of the level writer that builds on the stack (`l2frame`).
#[inline(always)]
fn hl_decimal_pieces(units: i64, scale: u8, mut put: impl FnMut(&[u8])) {
    if units < 0 {
        put(b"-");
    }
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(units.unsigned_abs()).as_bytes();
    let k = usize::from(scale);
    let (int, frac): (&[u8], &[u8]) = if digits.len() > k { digits.split_at(digits.len() - k) } else { (b"0", digits) };
    put(int);
    let mut frac_end = frac.len();
    while frac_end > 0 && frac[frac_end - 1] == b'0' {
        frac_end -= 1;
    }
    if frac_end == 0 {
        put(b".0");
        return;
    }
    put(b".");
    // Leading zeros of a fraction shorter than the scale (0.00153 with k = 5 has digits 153).
    for _ in digits.len()..k {
        put(b"0");
    }
    put(&frac[..frac_end]);
}

pub(crate) fn write_json_str(out: &mut Vec<u8>, text: &str) {
    let _ = serde_json::to_writer(&mut *out, text);
}

/// Writes the `WsBook` payload `{"coin","time","levels":[[…],[…]]}`.
pub fn write_ws_book(
    out: &mut Vec<u8>,
    coin: &str,
    time_ms: u64,
    units: Units,
    bids: &[UnitLevel],
    asks: &[UnitLevel],
) {
    out.extend_from_slice(b"{\"coin\":");
    write_json_str(out, coin);
    out.extend_from_slice(b",\"time\":");
    out.extend_from_slice(itoa::Buffer::new().format(time_ms).as_bytes());
    out.extend_from_slice(b",\"levels\":[");
    for (i, side) in [bids, asks].into_iter().enumerate() {
        if i == 1 {
            out.push(b',');
        }
        out.push(b'[');
        for (j, level) in side.iter().enumerate() {
            if j > 0 {
                out.push(b',');
            }
            out.extend_from_slice(b"{\"px\":\"");
            write_hl_decimal(level.px, units.px, out);
            out.extend_from_slice(b"\",\"sz\":\"");
            write_hl_decimal(level.sz, units.sz, out);
            out.extend_from_slice(b"\",\"n\":");
            out.extend_from_slice(itoa::Buffer::new().format(level.n).as_bytes());
            out.push(b'}');
        }
        out.push(b']');
    }
    out.extend_from_slice(b"]}");
}

/// A whole `l2Book` frame.
pub fn write_l2_frame(
    out: &mut Vec<u8>,
    coin: &str,
    time_ms: u64,
    units: Units,
    bids: &[UnitLevel],
    asks: &[UnitLevel],
) {
    out.extend_from_slice(b"{\"channel\":\"l2Book\",\"data\":");
    write_ws_book(out, coin, time_ms, units, bids, asks);
    out.push(b'}');
}

/// A `post` reply carrying an `l2Book` (`book` is a `WsBook` payload).
pub fn post_l2_response(id: u64, book: &str) -> String {
    format!(
        r#"{{"channel":"post","data":{{"id":{id},"response":{{"type":"info","payload":{{"type":"l2Book","data":{book}}}}}}}}}"#
    )
}

/// A `post` reply with an error payload.
pub fn post_error(id: u64, message: &str) -> String {
    #[derive(Serialize)]
    struct Response<'a> {
        #[serde(rename = "type")]
        kind: &'a str,
        payload: &'a str,
    }
    #[derive(Serialize)]
    struct Data<'a> {
        id: u64,
        response: Response<'a>,
    }
    envelope("post", &Data { id, response: Response { kind: "error", payload: message } })
}

/// An order as `l4Book` shows it (the node's order with `user` inside, without
/// `children`/`origSz`). `user` is null inside `order_statuses`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct L4Order<'a> {
    pub user: Option<&'a str>,
    pub coin: &'a str,
    pub side: &'a str,
    pub limit_px: &'a str,
    pub sz: &'a str,
    pub oid: u64,
    pub timestamp: u64,
    pub trigger_condition: &'a str,
    pub is_trigger: bool,
    pub trigger_px: &'a str,
    pub is_position_tpsl: bool,
    pub reduce_only: bool,
    pub order_type: &'a str,
    pub tif: Option<&'a str>,
    pub cloid: Option<&'a str>,
}

impl<'a> L4Order<'a> {
    pub fn from_node(user: Option<&'a str>, order: &'a NodeOrder<'a>) -> L4Order<'a> {
        L4Order {
            user,
            coin: &order.coin,
            side: order.side,
            limit_px: order.limit_px,
            sz: order.sz,
            oid: order.oid,
            timestamp: order.timestamp,
            trigger_condition: &order.trigger_condition,
            is_trigger: order.is_trigger,
            trigger_px: order.trigger_px,
            is_position_tpsl: order.is_position_tpsl,
            reduce_only: order.reduce_only,
            order_type: &order.order_type,
            tif: order.tif,
            cloid: order.cloid,
        }
    }
}

/// `l4Book` snapshot frame.
pub fn l4_snapshot_frame(coin: &str, time_ms: u64, height: u64, bids: &[L4Order<'_>], asks: &[L4Order<'_>]) -> String {
    #[derive(Serialize)]
    struct Body<'a> {
        coin: &'a str,
        time: u64,
        height: u64,
        levels: [&'a [L4Order<'a>]; 2],
    }
    #[derive(Serialize)]
    struct Tagged<'a> {
        #[serde(rename = "Snapshot")]
        snapshot: Body<'a>,
    }
    envelope("l4Book", &Tagged { snapshot: Body { coin, time: time_ms, height, levels: [bids, asks] } })
}

/// A status as `l4Book` updates carry it.
#[derive(Clone, Debug, Serialize)]
pub struct L4Status<'a> {
    pub time: &'a str,
    pub user: &'a str,
    pub status: &'a str,
    pub order: L4Order<'a>,
}

impl<'a> L4Status<'a> {
    pub fn from_node(status: &'a OrderStatus<'a>) -> L4Status<'a> {
        L4Status {
            time: status.time,
            user: status.user,
            status: &status.status,
            order: L4Order::from_node(None, &status.order),
        }
    }
}

/// A diff as `l4Book` updates carry it (no `side`).
#[derive(Clone, Debug, Serialize)]
pub struct L4Diff<'a> {
    pub user: &'a str,
    pub oid: u64,
    pub px: &'a str,
    pub coin: &'a str,
    pub raw_book_diff: crate::node::RawBookDiff<'a>,
}

impl<'a> L4Diff<'a> {
    pub fn from_node(diff: &'a BookDiff<'a>) -> L4Diff<'a> {
        L4Diff { user: diff.user, oid: diff.oid, px: diff.px, coin: &diff.coin, raw_book_diff: diff.raw_book_diff }
    }
}

/// `l4Book` update frame for one block and one coin.
pub fn l4_updates_frame(time_ms: u64, height: u64, statuses: &[L4Status<'_>], diffs: &[L4Diff<'_>]) -> String {
    #[derive(Serialize)]
    struct Body<'a> {
        time: u64,
        height: u64,
        order_statuses: &'a [L4Status<'a>],
        book_diffs: &'a [L4Diff<'a>],
    }
    #[derive(Serialize)]
    struct Tagged<'a> {
        #[serde(rename = "Updates")]
        updates: Body<'a>,
    }
    envelope("l4Book", &Tagged { updates: Body { time: time_ms, height, order_statuses: statuses, book_diffs: diffs } })
}

#[cfg(test)]
mod tests;
