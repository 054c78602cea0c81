//! `POST /info`: the request types a read-only book server answers, and the metadata
//! documents (`meta`, `spotMeta`) that tell it each coin's `szDecimals`.
//!
//! Owns: decoding requests and the typed subset of `meta`/`spotMeta` ticktrade needs, and the
//! mapping from metadata to coin names (`BTC`, `PURR/USDC`, `@107`).
//! Must not: fetch anything. The documents themselves are served verbatim by the caller.

use serde::Deserialize;

/// A request body of `POST /info` that ticktrade answers.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum InfoRequest {
    Meta {
        #[serde(default)]
        dex: Option<String>,
    },
    SpotMeta,
    /// HIP-3 perp dexes: `[null, {"name":…}, …]` (the first entry is the default dex).
    PerpDexs,
    /// `[meta, [perp context, …]]` (`crate::asset_ctx`).
    MetaAndAssetCtxs {
        #[serde(default)]
        dex: Option<String>,
    },
    /// `[spotMeta, [spot context, …]]`.
    SpotMetaAndAssetCtxs,
    /// `{"time": ms, "specialStatuses": null}`.
    ExchangeStatus,
    AllMids {
        #[serde(default)]
        dex: Option<String>,
    },
    L2Book {
        coin: String,
        #[serde(rename = "nSigFigs", default)]
        n_sig_figs: Option<u32>,
        #[serde(default)]
        mantissa: Option<u32>,
    },
    /// A user's resting orders (`crate::orders`).
    OpenOrders {
        user: String,
        #[serde(default)]
        dex: Option<String>,
    },
    FrontendOpenOrders {
        user: String,
        #[serde(default)]
        dex: Option<String>,
    },
    /// One order of a user, by oid or cloid.
    OrderStatus {
        user: String,
        oid: crate::orders::OrderRef,
    },
    /// Candles of one coin and interval (`crate::candle`).
    CandleSnapshot {
        req: CandleRequest,
    },
}

/// The `req` of `candleSnapshot`: times in ms since the epoch; no `endTime` means now.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CandleRequest {
    pub coin: String,
    pub interval: crate::candle::Interval,
    pub start_time: i64,
    #[serde(default)]
    pub end_time: Option<i64>,
}

/// The body Hyperliquid's info server answers (with HTTP 422) for a body it cannot decode.
pub fn deserialize_error(err: &serde_json::Error) -> String {
    format!("Failed to deserialize the JSON body into the target type: {err}")
}

/// The `perpDexs` answer: `null` for the default dex, then one object per HIP-3 dex named by a
/// `dex:COIN` perp of `meta`, in order of first appearance. Only `name` is known from the
/// metadata; the other fields Hyperliquid lists are `null` / empty here.
pub fn perp_dexs_json(meta: &Meta) -> String {
    let mut names: Vec<&str> = Vec::new();
    for asset in &meta.universe {
        if let Some((dex, _)) = asset.name.split_once(':')
            && !dex.is_empty()
            && !names.contains(&dex)
        {
            names.push(dex);
        }
    }
    let mut out = vec![serde_json::Value::Null];
    for name in names {
        out.push(serde_json::json!({
            "name": name,
            "fullName": name,
            "deployer": null,
            "oracleUpdater": null,
            "feeRecipient": null,
            "assetToStreamingOiCap": [],
        }));
    }
    serde_json::Value::Array(out).to_string()
}

/// `meta` for one dex: the default dex (`None`/`""`) gets the document verbatim, a HIP-3 dex
/// `d` gets the universe entries named `d:…` (as the real API answers `{"type":"meta","dex":d}`).
pub fn meta_for_dex(meta_json: &str, dex: Option<&str>) -> Result<String, serde_json::Error> {
    let Some(dex) = dex.filter(|d| !d.is_empty()) else { return Ok(meta_json.to_owned()) };
    let mut doc: serde_json::Value = serde_json::from_str(meta_json)?;
    let prefix = format!("{dex}:");
    if let Some(universe) = doc.get_mut("universe").and_then(serde_json::Value::as_array_mut) {
        universe.retain(|a| a.get("name").and_then(serde_json::Value::as_str).is_some_and(|n| n.starts_with(&prefix)));
    }
    Ok(doc.to_string())
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PerpAsset {
    pub name: String,
    pub sz_decimals: u32,
}

/// `meta`: the perp universe; a coin's asset id is its index.
#[derive(Debug, Deserialize)]
pub struct Meta {
    pub universe: Vec<PerpAsset>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpotToken {
    pub name: String,
    pub sz_decimals: u32,
    pub index: u32,
}

#[derive(Debug, Deserialize)]
pub struct SpotPair {
    pub name: String,
    pub tokens: [u32; 2],
    pub index: u32,
}

/// `spotMeta`: tokens and pairs; pair `i` trades as `@i` on L1 (`PURR/USDC` for index 0).
#[derive(Debug, Deserialize)]
pub struct SpotMeta {
    pub tokens: Vec<SpotToken>,
    pub universe: Vec<SpotPair>,
}

/// Whether a coin is a perp (6 price decimals) or a spot pair (8).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CoinKind {
    Perp,
    Spot,
}

impl CoinKind {
    /// `MAX_DECIMALS` of Hyperliquid's price rule.
    pub fn max_decimals(self) -> u32 {
        match self {
            CoinKind::Perp => 6,
            CoinKind::Spot => 8,
        }
    }

    /// How the L1 names a coin: `@N` and `PURR/USDC` are spot, everything else perp.
    pub fn of_name(coin: &str) -> CoinKind {
        if coin.starts_with('@') || coin.contains('/') { CoinKind::Spot } else { CoinKind::Perp }
    }
}

/// One coin as the books need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoinMeta {
    pub name: String,
    pub kind: CoinKind,
    pub sz_decimals: u32,
}

/// The L1 name of a spot pair: `PURR/USDC` for pair 0, `@N` for pair N.
pub fn spot_pair_coin(pair: &SpotPair) -> String {
    if pair.index == 0 { pair.name.clone() } else { format!("@{}", pair.index) }
}

/// Every coin of `meta` and `spotMeta`, with L1 names.
pub fn coins_from_meta(meta: &Meta, spot: Option<&SpotMeta>) -> Vec<CoinMeta> {
    let mut coins: Vec<CoinMeta> = meta
        .universe
        .iter()
        .map(|a| CoinMeta { name: a.name.clone(), kind: CoinKind::Perp, sz_decimals: a.sz_decimals })
        .collect();
    if let Some(spot) = spot {
        for pair in &spot.universe {
            let Some(base) = spot.tokens.iter().find(|t| t.index == pair.tokens[0]) else { continue };
            coins.push(CoinMeta { name: spot_pair_coin(pair), kind: CoinKind::Spot, sz_decimals: base.sz_decimals });
        }
    }
    coins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_requests() {
        assert!(matches!(
            serde_json::from_str::<InfoRequest>(r#"{"type":"meta"}"#).unwrap(),
            InfoRequest::Meta { dex: None }
        ));
        assert!(matches!(
            serde_json::from_str::<InfoRequest>(r#"{"type":"spotMeta"}"#).unwrap(),
            InfoRequest::SpotMeta
        ));
        let l2: InfoRequest =
            serde_json::from_str(r#"{"type":"l2Book","coin":"ETH","nSigFigs":5,"mantissa":null}"#).unwrap();
        assert!(matches!(l2, InfoRequest::L2Book { n_sig_figs: Some(5), mantissa: None, .. }));
        assert!(matches!(
            serde_json::from_str::<InfoRequest>(r#"{"type":"metaAndAssetCtxs"}"#).unwrap(),
            InfoRequest::MetaAndAssetCtxs { dex: None }
        ));
        assert!(matches!(
            serde_json::from_str::<InfoRequest>(r#"{"type":"spotMetaAndAssetCtxs"}"#).unwrap(),
            InfoRequest::SpotMetaAndAssetCtxs
        ));
        assert!(matches!(
            serde_json::from_str::<InfoRequest>(r#"{"type":"exchangeStatus"}"#).unwrap(),
            InfoRequest::ExchangeStatus
        ));
        let err = serde_json::from_str::<InfoRequest>(r#"{"type":"clearinghouseState","user":"0x0"}"#).unwrap_err();
        assert!(
            deserialize_error(&err)
                .starts_with("Failed to deserialize the JSON body into the target type: unknown variant")
        );
    }

    #[test]
    fn answers_perp_dexs_and_dex_meta() {
        assert!(matches!(
            serde_json::from_str::<InfoRequest>(r#"{"type":"perpDexs"}"#).unwrap(),
            InfoRequest::PerpDexs
        ));
        let text = r#"{"universe":[{"name":"BTC","szDecimals":5},{"name":"xyz:XYZ100","szDecimals":4},{"name":"xyz:TSLA","szDecimals":3},{"name":"abc:A","szDecimals":1}]}"#;
        let meta: Meta = serde_json::from_str(text).unwrap();
        let dexes: serde_json::Value = serde_json::from_str(&perp_dexs_json(&meta)).unwrap();
        let names: Vec<_> = dexes.as_array().unwrap().iter().map(|d| d.get("name").cloned()).collect();
        assert_eq!(names, vec![None, Some("xyz".into()), Some("abc".into())]);
        assert!(dexes[0].is_null());
        let xyz: serde_json::Value = serde_json::from_str(&meta_for_dex(text, Some("xyz")).unwrap()).unwrap();
        assert_eq!(xyz["universe"].as_array().unwrap().len(), 2);
        assert_eq!(meta_for_dex(text, Some("")).unwrap(), text);
        let plain: Meta = serde_json::from_str(r#"{"universe":[{"name":"BTC","szDecimals":5}]}"#).unwrap();
        assert_eq!(perp_dexs_json(&plain), "[null]");
    }

    #[test]
    fn names_coins_like_the_l1() {
        let meta: Meta =
            serde_json::from_str(r#"{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40}]}"#).unwrap();
        let spot: SpotMeta = serde_json::from_str(
            r#"{"tokens":[{"name":"USDC","szDecimals":8,"weiDecimals":8,"index":0},{"name":"PURR","szDecimals":0,"weiDecimals":5,"index":1},{"name":"HYPE","szDecimals":2,"weiDecimals":8,"index":150}],
                "universe":[{"name":"PURR/USDC","tokens":[1,0],"index":0,"isCanonical":true},{"name":"@107","tokens":[150,0],"index":107,"isCanonical":false}]}"#,
        )
        .unwrap();
        let coins = coins_from_meta(&meta, Some(&spot));
        let names: Vec<_> = coins.iter().map(|c| (c.name.as_str(), c.kind, c.sz_decimals)).collect();
        assert_eq!(
            names,
            vec![("BTC", CoinKind::Perp, 5), ("PURR/USDC", CoinKind::Spot, 0), ("@107", CoinKind::Spot, 2)]
        );
        assert_eq!(CoinKind::of_name("@107"), CoinKind::Spot);
        assert_eq!(CoinKind::of_name("xyz:XYZ100"), CoinKind::Perp);
    }
}
