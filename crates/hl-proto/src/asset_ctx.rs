//! Asset contexts: the second half of `metaAndAssetCtxs` / `spotMetaAndAssetCtxs`, the
//! `activeAssetCtx` / `activeSpotAssetCtx` frames, and the `exchangeStatus` answer.
//!
//! A perp's context, as Hyperliquid documents it, is `{funding, openInterest, prevDayPx,
//! dayNtlVlm, premium, oraclePx, markPx, midPx, impactPxs, dayBaseVlm}`; a spot pair's is
//! `{prevDayPx, dayNtlVlm, markPx, midPx, circulatingSupply, coin, totalSupply, dayBaseVlm}`,
//! every number a decimal string. A book server determines `midPx` and `impactPxs` from its
//! books, and `dayNtlVlm`/`dayBaseVlm` from the trades it saw: the volume since the server
//! started ([`Volume`]), not over a day (`BookCtx`); every other field is copied from a *base*
//! context (the node's info server's answer, or the `hl gen` metadata) and is `null` when
//! there is none.
//!
//! Owns: parsing base contexts out of a `[meta, [ctx, …]]` document, the volume sums and their
//! exact text, and writing the merged answer. Must not: compute prices (the caller passes them
//! as exact decimal text).

use serde_json::{Map, Value};

/// What the books say about one coin at the time of the request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BookCtx {
    /// `(best bid + best ask) / 2`; `None` when a side is empty or the book is stale.
    pub mid: Option<String>,
    /// `[impact bid, impact ask]`; `None` when a side is too thin for the impact notional.
    pub impact: Option<[String; 2]>,
    /// `[dayNtlVlm, dayBaseVlm]` from the trades ([`Volume::texts`]); `None`: the base's.
    pub volume: Option<[String; 2]>,
}

/// One coin's traded volume since the server started, in the coin's integer units: the sum of
/// the trades' sizes, and of price × size (in units of price unit × size unit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Volume {
    pub base: i128,
    pub ntl: i128,
}

impl Volume {
    /// Adds one trade (price and size in the coin's units).
    pub fn add(&mut self, px: i64, sz: i64) {
        self.base += i128::from(sz);
        self.ntl += i128::from(px) * i128::from(sz);
    }

    /// `[dayNtlVlm, dayBaseVlm]` as exact decimal text (`.0` on whole numbers, as Hyperliquid
    /// prints them); `None` if a sum is too large to write.
    pub fn texts(&self, units: crate::ws::Units) -> Option<[String; 2]> {
        let ntl_unit = i128::from(units.px.mantissa()).checked_mul(i128::from(units.sz.mantissa()))?;
        let ntl_scale = u32::from(units.px.scale()) + u32::from(units.sz.scale());
        Some([
            decimal_text(self.ntl.checked_mul(ntl_unit)?, ntl_scale),
            decimal_text(self.base.checked_mul(i128::from(units.sz.mantissa()))?, u32::from(units.sz.scale())),
        ])
    }
}

/// `value × 10^-scale` as `[-]int.frac` without trailing zeros, `.0` when there is no fraction.
fn decimal_text(value: i128, scale: u32) -> String {
    let mut buf = itoa::Buffer::new();
    let digits = buf.format(value.unsigned_abs());
    let k = scale as usize;
    let padded =
        if digits.len() <= k { format!("{}{digits}", "0".repeat(k + 1 - digits.len())) } else { digits.to_owned() };
    let (int, frac) = padded.split_at(padded.len() - k);
    let frac = frac.trim_end_matches('0');
    let sign = if value < 0 { "-" } else { "" };
    if frac.is_empty() { format!("{sign}{int}.0") } else { format!("{sign}{int}.{frac}") }
}

/// The fields a perp context takes from its base, in Hyperliquid's order around the computed
/// ones.
const PERP_BASE: [&str; 8] =
    ["funding", "openInterest", "prevDayPx", "dayNtlVlm", "premium", "oraclePx", "markPx", "dayBaseVlm"];
/// Likewise for a spot pair (`coin` is always the L1 name).
const SPOT_BASE: [&str; 6] = ["prevDayPx", "dayNtlVlm", "markPx", "circulatingSupply", "totalSupply", "dayBaseVlm"];

/// Base contexts by coin name, from a `metaAndAssetCtxs` or `spotMetaAndAssetCtxs` answer.
#[derive(Clone, Debug, Default)]
pub struct BaseCtxs {
    by_coin: std::collections::HashMap<String, Map<String, Value>>,
}

/// Why a base document was refused.
#[derive(Debug, thiserror::Error)]
pub enum CtxDocError {
    #[error("not JSON: {0}")]
    Json(#[from] serde_json::Error),
    #[error("expected [meta, [ctx, …]] with one context per universe entry")]
    Shape,
}

impl BaseCtxs {
    /// The contexts of a `metaAndAssetCtxs` answer, named by the perp universe's `name`s.
    pub fn from_perp_doc(text: &str) -> Result<BaseCtxs, CtxDocError> {
        let (universe, ctxs) = split_doc(text)?;
        let mut by_coin = std::collections::HashMap::new();
        for (asset, ctx) in universe.iter().zip(ctxs) {
            let (Some(name), Value::Object(ctx)) = (asset.get("name").and_then(Value::as_str), ctx) else {
                return Err(CtxDocError::Shape);
            };
            by_coin.insert(name.to_owned(), ctx);
        }
        Ok(BaseCtxs { by_coin })
    }

    /// The contexts of a `spotMetaAndAssetCtxs` answer, named by their own `coin` field.
    pub fn from_spot_doc(text: &str) -> Result<BaseCtxs, CtxDocError> {
        let (_, ctxs) = split_doc(text)?;
        let mut by_coin = std::collections::HashMap::new();
        for ctx in ctxs {
            let Value::Object(ctx) = ctx else { return Err(CtxDocError::Shape) };
            let Some(coin) = ctx.get("coin").and_then(Value::as_str).map(str::to_owned) else {
                return Err(CtxDocError::Shape);
            };
            by_coin.insert(coin, ctx);
        }
        Ok(BaseCtxs { by_coin })
    }

    pub fn get(&self, coin: &str) -> Option<&Map<String, Value>> {
        self.by_coin.get(coin)
    }

    pub fn len(&self) -> usize {
        self.by_coin.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_coin.is_empty()
    }
}

fn split_doc(text: &str) -> Result<(Vec<Value>, Vec<Value>), CtxDocError> {
    let doc: Value = serde_json::from_str(text)?;
    let Value::Array(mut parts) = doc else { return Err(CtxDocError::Shape) };
    if parts.len() != 2 {
        return Err(CtxDocError::Shape);
    }
    let ctxs = match parts.pop() {
        Some(Value::Array(ctxs)) => ctxs,
        _ => return Err(CtxDocError::Shape),
    };
    let universe = match parts.pop().as_ref().and_then(|m| m.get("universe")) {
        Some(Value::Array(universe)) => universe.clone(),
        _ => return Err(CtxDocError::Shape),
    };
    if universe.len() != ctxs.len() {
        return Err(CtxDocError::Shape);
    }
    Ok((universe, ctxs))
}

fn text_or_null(v: Option<&String>) -> Value {
    v.map_or(Value::Null, |s| Value::String(s.clone()))
}

fn impact_value(book: &BookCtx) -> Value {
    book.impact.as_ref().map_or(Value::Null, |[bid, ask]| Value::Array(vec![bid.clone().into(), ask.clone().into()]))
}

/// One perp context: `base`'s fields (or `null`), `midPx` and `impactPxs` from `book`.
pub fn perp_ctx(base: Option<&Map<String, Value>>, book: &BookCtx) -> Value {
    let mut out = Map::new();
    for key in PERP_BASE {
        out.insert(key.to_owned(), base.and_then(|b| b.get(key)).cloned().unwrap_or(Value::Null));
    }
    out.insert("midPx".to_owned(), text_or_null(book.mid.as_ref()));
    out.insert("impactPxs".to_owned(), impact_value(book));
    put_volume(&mut out, book);
    Value::Object(out)
}

/// One spot context: `base`'s fields (or `null`), `coin`, and `midPx` from `book`.
pub fn spot_ctx(coin: &str, base: Option<&Map<String, Value>>, book: &BookCtx) -> Value {
    let mut out = Map::new();
    for key in SPOT_BASE {
        out.insert(key.to_owned(), base.and_then(|b| b.get(key)).cloned().unwrap_or(Value::Null));
    }
    out.insert("coin".to_owned(), Value::String(coin.to_owned()));
    out.insert("midPx".to_owned(), text_or_null(book.mid.as_ref()));
    put_volume(&mut out, book);
    Value::Object(out)
}

/// The volumes the trades determine, over the base's.
fn put_volume(out: &mut Map<String, Value>, book: &BookCtx) {
    if let Some([ntl, base]) = &book.volume {
        out.insert("dayNtlVlm".to_owned(), Value::String(ntl.clone()));
        out.insert("dayBaseVlm".to_owned(), Value::String(base.clone()));
    }
}

/// `[meta, ctxs]`, the document verbatim as its first element.
pub fn with_ctxs(meta_json: &str, ctxs: Vec<Value>) -> Result<String, serde_json::Error> {
    let meta: Value = serde_json::from_str(meta_json)?;
    Ok(Value::Array(vec![meta, Value::Array(ctxs)]).to_string())
}

/// An `activeAssetCtx` frame (a perp's context) or `activeSpotAssetCtx` frame (a spot pair's),
/// `{"coin","ctx"}`.
pub fn active_asset_ctx_frame(coin: &str, spot: bool, ctx: &Value) -> String {
    let channel = if spot { "activeSpotAssetCtx" } else { "activeAssetCtx" };
    serde_json::json!({"channel": channel, "data": {"coin": coin, "ctx": ctx}}).to_string()
}

/// `exchangeStatus`: the server's time and no special status.
pub fn exchange_status_json(now_ms: u64) -> String {
    serde_json::json!({"time": now_ms, "specialStatuses": null}).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    const PERP_DOC: &str = r#"[{"universe":[{"name":"BTC","szDecimals":5},{"name":"ETH","szDecimals":4}]},
        [{"funding":"0.0000125","openInterest":"10.5","prevDayPx":"100.0","dayNtlVlm":"5.0","premium":"0.0001",
          "oraclePx":"100.5","markPx":"100.4","midPx":"1.0","impactPxs":["1.0","2.0"],"dayBaseVlm":"0.05"},
         {"funding":"0.0","openInterest":"1.0","prevDayPx":"3.0","dayNtlVlm":"0.0","premium":null,
          "oraclePx":"3.0","markPx":"3.0","midPx":null,"impactPxs":null,"dayBaseVlm":"0.0"}]]"#;

    #[test]
    fn merges_base_and_book() {
        let base = BaseCtxs::from_perp_doc(PERP_DOC).unwrap();
        assert_eq!(base.len(), 2);
        let book = BookCtx { mid: Some("100.45".into()), impact: Some(["100.3".into(), "100.6".into()]), volume: None };
        let ctx = perp_ctx(base.get("BTC"), &book);
        // The book's numbers replace the base's; the rest is the base's.
        assert_eq!(ctx["midPx"], "100.45");
        assert_eq!(ctx["impactPxs"], serde_json::json!(["100.3", "100.6"]));
        assert_eq!(ctx["funding"], "0.0000125");
        assert_eq!(ctx["oraclePx"], "100.5");
        assert_eq!(ctx.as_object().unwrap().len(), 10);
        let bare = perp_ctx(None, &BookCtx::default());
        assert!(bare.as_object().unwrap().values().all(Value::is_null), "{bare}");
        assert_eq!(bare.as_object().unwrap().len(), 10);
    }

    #[test]
    fn spot_contexts_by_coin() {
        let doc = r#"[{"universe":[{"name":"PURR/USDC","tokens":[1,0],"index":0}],"tokens":[]},
            [{"prevDayPx":"0.2","dayNtlVlm":"1.0","markPx":"0.21","midPx":"0.2","circulatingSupply":"5","coin":"PURR/USDC","totalSupply":"6","dayBaseVlm":"5.0"}]]"#;
        let base = BaseCtxs::from_spot_doc(doc).unwrap();
        let ctx = spot_ctx(
            "PURR/USDC",
            base.get("PURR/USDC"),
            &BookCtx { mid: Some("0.205".into()), impact: None, volume: None },
        );
        assert_eq!(ctx["coin"], "PURR/USDC");
        assert_eq!(ctx["midPx"], "0.205");
        assert_eq!(ctx["totalSupply"], "6");
        assert_eq!(ctx.as_object().unwrap().len(), 8);
    }

    /// The volumes replace the base's; exact, in the coin's units.
    #[test]
    fn volume_since_start() {
        let units = crate::ws::Units {
            px: ticktrade_core::Decimal::new(1, 1).unwrap(),
            sz: ticktrade_core::Decimal::new(1, 5).unwrap(),
        };
        let mut volume = Volume::default();
        assert_eq!(volume.texts(units).unwrap(), ["0.0".to_owned(), "0.0".to_owned()]);
        volume.add(1_000_005, 150_000); // 1.5 at 100000.5
        volume.add(999_990, 1); // 0.00001 at 99999.0
        assert_eq!(volume.texts(units).unwrap(), ["150001.74999".to_owned(), "1.50001".to_owned()]);
        let base = BaseCtxs::from_perp_doc(PERP_DOC).unwrap();
        let book = BookCtx { volume: volume.texts(units), ..BookCtx::default() };
        let ctx = perp_ctx(base.get("BTC"), &book);
        assert_eq!((&ctx["dayNtlVlm"], &ctx["dayBaseVlm"]), (&json!("150001.74999"), &json!("1.50001")));
        assert_eq!(ctx.as_object().unwrap().len(), 10);
        let ctx = spot_ctx("@1", None, &book);
        assert_eq!((&ctx["dayNtlVlm"], &ctx["dayBaseVlm"]), (&json!("150001.74999"), &json!("1.50001")));
        assert_eq!(ctx.as_object().unwrap().len(), 8);
        // Without volumes, the base's stay.
        assert_eq!(perp_ctx(base.get("BTC"), &BookCtx::default())["dayNtlVlm"], "5.0");
        assert_eq!(decimal_text(-5, 3), "-0.005");
        assert_eq!(decimal_text(1_000, 3), "1.0");
    }

    #[test]
    fn refuses_bad_documents() {
        assert!(matches!(BaseCtxs::from_perp_doc("{}"), Err(CtxDocError::Shape)));
        assert!(matches!(BaseCtxs::from_perp_doc(r#"[{"universe":[{"name":"A"}]},[]]"#), Err(CtxDocError::Shape)));
        assert!(matches!(BaseCtxs::from_perp_doc("[1,"), Err(CtxDocError::Json(_))));
        assert!(matches!(BaseCtxs::from_spot_doc(r#"[{"universe":[1]},[{"markPx":"1"}]]"#), Err(CtxDocError::Shape)));
    }

    #[test]
    fn active_asset_ctx_frames() {
        let ctx = perp_ctx(None, &BookCtx { mid: Some("1.5".into()), impact: None, volume: None });
        let frame: Value = serde_json::from_str(&active_asset_ctx_frame("BTC", false, &ctx)).unwrap();
        assert_eq!(frame["channel"], "activeAssetCtx");
        assert_eq!(frame["data"]["coin"], "BTC");
        assert_eq!(frame["data"]["ctx"]["midPx"], "1.5");
        let frame: Value = serde_json::from_str(&active_asset_ctx_frame("@1", true, &ctx)).unwrap();
        assert_eq!(frame["channel"], "activeSpotAssetCtx");
    }

    #[test]
    fn documents_around_meta() {
        let text = with_ctxs(r#"{"universe":[]}"#, vec![]).unwrap();
        assert_eq!(text, r#"[{"universe":[]},[]]"#);
        let status: Value = serde_json::from_str(&exchange_status_json(1_700_000_000_123)).unwrap();
        assert_eq!(status["time"], 1_700_000_000_123u64);
        assert!(status["specialStatuses"].is_null());
    }
}
