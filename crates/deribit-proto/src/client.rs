//! Result shapes the gateway client reads that `api` does not decode directly.
//!
//! Owns: `BookLevels`, the part of `public/get_order_book`'s result a client needs (`api::OrderBook`
//! flattens `Ticker`, and serde's `flatten` cannot carry `Num`'s raw-number decoding).
//! Must not: encode anything (the simulator's side stays in `api`).

use serde::{Deserialize, Serialize};

use crate::api::Num;

/// `public/get_order_book` result without the ticker fields.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
pub struct BookLevels {
    pub instrument_name: String,
    #[serde(default)]
    pub timestamp: i64,
    pub change_id: i64,
    pub bids: Vec<(Num, Num)>,
    pub asks: Vec<(Num, Num)>,
}

/// Params of the client's currency-scoped queries (`get_instruments`, `get_positions`,
/// `get_account_summary`): `currency` always sent (`any` for all).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CurrencyQuery {
    pub currency: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documented_order_book_decodes() {
        let path =
            concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/deribit/examples/public_get_order_book.response.json");
        let value: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let book: BookLevels = serde_json::from_str(&value["result"].to_string()).unwrap();
        assert!(!book.instrument_name.is_empty());
        assert!(!book.bids.is_empty() || !book.asks.is_empty());
    }
}
