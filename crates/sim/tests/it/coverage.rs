//! The coverage table: every method of the Deribit vectors is classified, every served method
//! is really dispatched, every out-of-scope one answers why, and `docs/PROTOCOLS.md` is the
//! current rendering (`UPDATE_PROTOCOLS=1 cargo test -p ticktrade-sim --test it coverage`
//! rewrites it).

#![allow(clippy::unwrap_used)]

use crate::common;

use std::collections::BTreeSet;

use common::{Auth, WsClient};
use serde_json::json;
use ticktrade_sim::coverage::{self, Coverage};
use ticktrade_sim::{RateLimits, SimConfig};

fn root() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `public_get_time.response.json` → `public/get_time`.
fn vector_methods() -> BTreeSet<String> {
    let dir = root().join("testdata/deribit/examples");
    let mut methods = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        let stem = name.split('.').next().unwrap();
        for scope in ["public", "private"] {
            if let Some(rest) = stem.strip_prefix(scope).and_then(|r| r.strip_prefix('_')) {
                methods.insert(format!("{scope}/{rest}"));
            }
        }
    }
    methods
}

#[test]
fn every_vector_method_is_classified_and_nothing_else() {
    let vectors = vector_methods();
    assert!(vectors.len() >= 170, "only {} methods in the vectors", vectors.len());
    let table: BTreeSet<String> = coverage::table().into_iter().map(|(m, _)| m.to_owned()).collect();
    let unclassified: Vec<&String> = vectors.difference(&table).collect();
    assert!(unclassified.is_empty(), "methods of the vectors not in the coverage table: {unclassified:?}");
    let unknown: Vec<&String> = table.difference(&vectors).collect();
    assert!(unknown.is_empty(), "coverage table lists methods without a vector: {unknown:?}");
}

#[test]
fn protocols_doc_is_current() {
    let path = root().join("docs/PROTOCOLS.md");
    let rendered = coverage::render_table();
    if std::env::var_os("UPDATE_PROTOCOLS").is_some() {
        std::fs::write(&path, &rendered).unwrap();
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        on_disk == rendered,
        "docs/PROTOCOLS.md is stale: run UPDATE_PROTOCOLS=1 cargo test -p ticktrade-sim --test it coverage"
    );
}

#[tokio::test]
async fn served_methods_are_dispatched_and_the_rest_say_why() {
    // Every method once, faster than Deribit's credits allow.
    let config = SimConfig { rate_per_s: 200, limits: RateLimits::unlimited(), ..SimConfig::default() };
    let sim = ticktrade_sim::spawn_loopback(config).await.unwrap();
    let mut c = WsClient::connect(&sim.ws_url()).await;
    c.auth().await;
    for (method, coverage) in coverage::table() {
        if method == "private/logout" {
            continue; // ends the session; covered by the session tests
        }
        let reply = c.call(method, json!({})).await;
        let code = reply["error"]["code"].as_i64();
        match coverage {
            Coverage::Served => assert_ne!(code, Some(-32601), "{method} is listed as served: {reply}"),
            Coverage::OutOfScope(area) => {
                assert_eq!(code, Some(-32601), "{method}: {reply}");
                assert_eq!(reply["error"]["message"], "Method not found");
                let reason = reply["error"]["data"]["reason"].as_str().unwrap();
                assert_eq!(reason, format!("the simulator does not offer {}", area.describe()));
            }
            Coverage::NotYetServed => {
                assert_eq!(code, Some(-32601), "{method} is served: move it out of NOT_YET_SERVED");
                assert!(reply["error"]["data"].is_null(), "{reply}");
            }
        }
    }
    sim.shutdown().await;
}
