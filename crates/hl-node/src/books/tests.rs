use ticktrade_hl_proto::info::CoinKind;

use super::*;

fn status(json: &str) -> OrderStatus<'_> {
    serde_json::from_str(json).unwrap()
}

fn order_json(coin: &str, side: &str, px: &str, sz: &str, oid: u64, tif: &str, trigger: bool) -> String {
    format!(
        r#"{{"coin":"{coin}","side":"{side}","limitPx":"{px}","sz":"{sz}","oid":{oid},"timestamp":1,"triggerCondition":"N/A","isTrigger":{trigger},"triggerPx":"0.0","children":[],"isPositionTpsl":false,"reduceOnly":false,"orderType":"Limit","origSz":"{sz}","tif":{tif},"cloid":null}}"#
    )
}

fn status_json(st: &str, order: &str) -> String {
    format!(
        r#"{{"time":"2026-04-30T20:46:43.304461819","user":"0xabc","hash":null,"builder":null,"status":"{st}","order":{order}}}"#
    )
}

fn books() -> Books {
    Books::new(&[
        CoinMeta { name: "BTC".into(), kind: CoinKind::Perp, sz_decimals: 5 },
        CoinMeta { name: "ETH".into(), kind: CoinKind::Perp, sz_decimals: 4 },
    ])
}

#[test]
fn new_update_remove_and_stale_isolation() {
    let mut b = books();
    let s1 = status_json("open", &order_json("BTC", "B", "100.0", "1.0", 1, "\"Alo\"", false));
    let s2 = status_json("open", &order_json("BTC", "B", "100.0", "2.0", 2, "\"Ioc\"", false));
    let s3 = status_json("open", &order_json("ETH", "A", "10.0", "2.0", 3, "\"Gtc\"", false));
    let statuses = [status(&s1), status(&s2), status(&s3)];
    let diffs_json = [
        r#"{"user":"0xabc","oid":1,"coin":"BTC","side":"B","px":"100.0","raw_book_diff":{"new":{"sz":"1.0"}}}"#,
        r#"{"user":"0xabc","oid":2,"coin":"BTC","side":"B","px":"100.0","raw_book_diff":{"new":{"sz":"0.5"}}}"#,
        r#"{"user":"0xabc","oid":3,"coin":"ETH","side":"A","px":"10.0","raw_book_diff":{"new":{"sz":"2.0"}}}"#,
    ];
    let diffs: Vec<BookDiff<'_>> = diffs_json.iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    let out = b.apply_block(11, Utc::from_millis(5), &statuses, &diffs);
    assert!(out.errors.is_empty());
    assert_eq!(out.changed.len(), 2);
    let btc = b.coins.id("BTC").unwrap();
    let eth = b.coins.id("ETH").unwrap();
    assert_eq!(
        levels_of(&b.book(btc).unwrap().book, Side::Buy),
        vec![(Price::from_raw(1000), Qty::from_raw(150_000), 2)]
    );
    let orders = b.l4_orders(btc);
    assert_eq!(orders[0][1].meta.tif.as_deref(), Some("Gtc"), "Ioc residual rests as Gtc");
    assert_eq!(orders[0][0].as_l4().limit_px, "100.0");

    // Block 12: update oid 1, an unknown remove on BTC (BTC goes stale), ETH still applies.
    let diffs_json = [
        r#"{"user":"0xabc","oid":1,"coin":"BTC","side":"B","px":"100.0","raw_book_diff":{"update":{"origSz":"1.0","newSz":"0.25"}}}"#,
        r#"{"user":"0xabc","oid":99,"coin":"BTC","side":"B","px":"100.0","raw_book_diff":"remove"}"#,
        r#"{"user":"0xabc","oid":3,"coin":"ETH","side":"A","px":"10.0","raw_book_diff":"remove"}"#,
    ];
    let diffs: Vec<BookDiff<'_>> = diffs_json.iter().map(|d| serde_json::from_str(d).unwrap()).collect();
    let out = b.apply_block(12, Utc::from_millis(6), &[], &diffs);
    assert_eq!(out.errors.len(), 1);
    assert_eq!(out.errors[0].0, btc);
    assert!(b.book(btc).unwrap().stale);
    assert!(!b.book(eth).unwrap().stale);
    assert!(b.book(eth).unwrap().book.is_empty());
    assert_eq!(b.height(), 12);
}

#[test]
fn triggered_orders_rest_as_gtc_and_missing_status_is_an_error() {
    let mut b = books();
    let s = status_json("triggered", &order_json("BTC", "A", "200.0", "1.0", 7, "null", true));
    let statuses = [status(&s)];
    let diff: BookDiff<'_> = serde_json::from_str(
        r#"{"user":"0xabc","oid":7,"coin":"BTC","side":"A","px":"201.0","raw_book_diff":{"new":{"sz":"1.0"}}}"#,
    )
    .unwrap();
    let out = b.apply_block(1, Utc::from_millis(1), &statuses, std::slice::from_ref(&diff));
    assert!(out.errors.is_empty());
    let btc = b.coins.id("BTC").unwrap();
    let orders = b.l4_orders(btc);
    let l4 = orders[1][0].as_l4();
    assert_eq!((l4.limit_px, l4.trigger_condition, l4.tif, l4.is_trigger), ("201.0", "Triggered", Some("Gtc"), false));

    let orphan: BookDiff<'_> = serde_json::from_str(
        r#"{"user":"0xabc","oid":8,"coin":"ETH","side":"A","px":"1.0","raw_book_diff":{"new":{"sz":"1.0"}}}"#,
    )
    .unwrap();
    let out = b.apply_block(2, Utc::from_millis(2), &[], std::slice::from_ref(&orphan));
    assert!(matches!(out.errors[0].1, ApplyError::MissingStatus { oid: 8, .. }));
}

#[test]
fn loads_the_documented_snapshot_and_clears_stale() {
    let path =
        format!("{}/../../testdata/hyperliquid/examples/l4_snapshot.fileSnapshot.out.json", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(path).unwrap();
    let snapshot = Snapshot::parse(&bytes).unwrap();
    let mut b = Books::new(&[]);
    let id = b.coin_id("@1");
    b.mark_stale(id);
    b.load_snapshot(&snapshot, Utc::from_millis(0)).unwrap();
    assert_eq!(b.height(), 100);
    let book = b.book(id).unwrap();
    assert!(!book.stale);
    let n: usize = snapshot.1[0].1.0.len() + snapshot.1[0].1.1.len();
    assert_eq!(book.book.len(), n);
    let orders = b.l4_orders(id);
    assert_eq!(orders[0][0].as_l4().limit_px, "30.444");
    assert_eq!(orders[0][0].oid, 105_338_503_859);
}

/// `coin_id` answers from its name table what the coin table says, for short and long names
/// (over 16 bytes: not kept in it), names that differ only in length or a trailing NUL,
/// and across the table's growth; a block's diffs are grouped under those ids.
#[test]
fn coin_ids_from_the_name_table_equal_the_coin_table() {
    let mut b = books();
    let mut names: Vec<String> = (0..700).map(|i| format!("@{i}")).collect();
    names.extend(
        ["A", "A\0", "AA", "0123456789abcdef", "0123456789abcdefg", "kPEPE", "PURR/USDC", ""].map(String::from),
    );
    names.push("x".repeat(40));
    for round in 0..3 {
        for name in &names {
            let id = b.coin_id(name);
            assert_eq!(b.coins.id(name), Some(id), "{name:?} round {round}");
            assert_eq!(b.coins.spec(id).name, *name);
        }
    }
    assert_eq!(b.coins.len(), 2 + names.len());
    // Names the metadata listed are found, and diffs are grouped under their ids.
    let s = status_json("open", &order_json("ETH", "A", "10.0", "2.0", 3, "\"Gtc\"", false));
    let statuses = [status(&s)];
    let diff: BookDiff<'_> = serde_json::from_str(
        r#"{"user":"0xabc","oid":3,"coin":"ETH","side":"A","px":"10.0","raw_book_diff":{"new":{"sz":"2.0"}}}"#,
    )
    .unwrap();
    let out = b.apply_block(1, Utc::from_millis(1), &statuses, std::slice::from_ref(&diff));
    assert_eq!(out.changed, vec![b.coins.id("ETH").unwrap()]);
    assert_eq!(b.coin_id("ETH"), CoinId(1));
}
