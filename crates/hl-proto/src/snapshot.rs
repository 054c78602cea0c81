//! The L4 snapshot file hl-node writes for `fileSnapshot`/`l4Snapshots`.
//!
//! Owns: decoding `[height, [[coin, [[[user, order], …], [[user, order], …]]], …]]` (the form
//! with `includeUsers` and `includeHeightInOutput`, which is what ticktrade requests), and the
//! request body that asks the node for it.
//! Must not: read the file (the caller passes its bytes) or build books.

use serde::Deserialize;

use crate::node::{NodeOrder, Str};

/// One resting order of a snapshot: `[user, order]`.
#[derive(Debug, Deserialize)]
pub struct SnapshotEntry<'a>(pub &'a str, #[serde(borrow)] pub NodeOrder<'a>);

/// One coin's book: bids best first, then asks best first, FIFO within a price.
#[derive(Debug, Deserialize)]
pub struct SnapshotCoin<'a>(
    #[serde(borrow)] pub Str<'a>,
    #[serde(borrow)] pub (Vec<SnapshotEntry<'a>>, Vec<SnapshotEntry<'a>>),
);

/// A whole snapshot: the state after block `.0`.
#[derive(Debug, Deserialize)]
pub struct Snapshot<'a>(pub u64, #[serde(borrow)] pub Vec<SnapshotCoin<'a>>);

impl<'a> Snapshot<'a> {
    pub fn parse(bytes: &'a [u8]) -> Result<Snapshot<'a>, serde_json::Error> {
        serde_json::from_slice(bytes)
    }

    pub fn height(&self) -> u64 {
        self.0
    }
}

/// The body to POST to the node's info server so it writes a snapshot to `out_path`.
pub fn file_snapshot_request(out_path: &str) -> serde_json::Value {
    serde_json::json!({
        "type": "fileSnapshot",
        "request": {"type": "l4Snapshots", "includeUsers": true, "includeTriggerOrders": false},
        "outPath": out_path,
        "includeHeightInOutput": true,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_the_documented_snapshot() {
        let path = format!(
            "{}/../../testdata/hyperliquid/examples/l4_snapshot.fileSnapshot.out.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let bytes = std::fs::read(path).unwrap();
        let snapshot = Snapshot::parse(&bytes).unwrap();
        assert_eq!(snapshot.height(), 100);
        let coin = &snapshot.1[0];
        assert_eq!(coin.0, "@1");
        assert!(!coin.1.0.is_empty());
        assert_eq!(coin.1.0[0].1.limit_px, "30.444");
        assert!(Snapshot::parse(b"[1, [[\"BTC\", [[], []]]").is_err());
    }

    #[test]
    fn request_body_matches_the_documented_one() {
        let path = format!(
            "{}/../../testdata/hyperliquid/examples/info.fileSnapshot.l4Snapshots.request.json",
            env!("CARGO_MANIFEST_DIR")
        );
        let mut expected: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let out = expected["outPath"].as_str().unwrap().to_owned();
        expected["outPath"] = serde_json::Value::String(out.clone());
        assert_eq!(file_snapshot_request(&out), expected);
    }
}
