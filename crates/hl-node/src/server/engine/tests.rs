use ticktrade_hl_proto::info::{Meta, SpotMeta, coins_from_meta};
use ticktrade_hl_proto::snapshot::Snapshot;

use super::*;
use crate::synth::writer::GenWriter;
use crate::synth::{GenConfig, Generator};

/// After every block, every subscribed view's last levels equal a full re-aggregation of its
/// coin's book: the skip rule (`l2::side_may_change` on `Books::touched`) never keeps a frame
/// that changed. Views of 20 and of 3 levels, so both deep and shallow views are checked.
#[test]
fn skipped_views_equal_a_full_recompute_every_block() {
    let dir = tempfile::tempdir().unwrap();
    let mut generator = Generator::new(&GenConfig { n_coins: 12, orders_per_block: 300, ..GenConfig::default() });
    let (meta, spot) = generator.meta_json();
    let meta: Meta = serde_json::from_str(&meta).unwrap();
    let spot: SpotMeta = serde_json::from_str(&spot).unwrap();
    let mut books = Books::new(&coins_from_meta(&meta, Some(&spot)));
    let snapshot = generator.snapshot_json();
    books.load_snapshot(&Snapshot::parse(snapshot.as_bytes()).unwrap(), Utc::from_nanos(0)).unwrap();
    let followers = Stream::ALL
        .iter()
        .map(|&s| {
            let mut f = Follower::new(dir.path(), s);
            f.seek_height(books.height()).unwrap();
            f
        })
        .collect();
    let mut engine = Engine::new(EngineConfig::default(), books, followers);
    engine.record_timings(true);
    let (tx, mut rx) = mpsc::channel(1 << 20);
    let (kill, _killed) = oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 1, tx, kill });
    let names: Vec<String> = generator.coins().iter().map(|c| c.name.clone()).collect();
    for coin in &names {
        for v in L2Variant::ALL {
            for n_levels in [20, 3] {
                let text = serde_json::json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": coin, "nSigFigs": v.n_sig_figs(), "mantissa": (v.mantissa() > 1).then_some(v.mantissa()), "nLevels": n_levels}}).to_string();
                let message = ClientMessage::parse(&text).unwrap();
                engine.handle(EngineMsg::Request { id: 1, message, text });
            }
        }
    }
    let mut writer = GenWriter::new(dir.path());
    let (mut bids, mut asks) = (Vec::new(), Vec::new());
    let mut n_checked = 0;
    for i in 0..80 {
        let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
        engine.poll_files();
        while rx.try_recv().is_ok() {}
        for (ci, slots) in engine.views.iter().enumerate() {
            let book = engine.books.book(CoinId(ci as u32)).unwrap();
            assert!(!book.stale);
            for slot in slots {
                let (variant, n) = (L2Variant::ALL[usize::from(slot.key.variant_idx)], usize::from(slot.key.n_levels));
                crate::l2::aggregate(book.book.levels(Side::Buy), true, variant, n, &mut bids);
                crate::l2::aggregate(book.book.levels(Side::Sell), false, variant, n, &mut asks);
                assert_eq!(slot.view.levels(), (bids.clone(), asks.clone()), "block {i} coin {ci} {variant:?} n {n}");
                n_checked += 1;
            }
        }
    }
    let stats = engine.stats();
    let stats = stats.lock().unwrap();
    assert!(stats.reports.is_empty(), "{:?}", stats.reports);
    assert_eq!(n_checked, 80 * names.len() * 14);
    // The rule did skip views: fewer aggregated than (changed coins × views) over the run.
    let aggregated: u64 = stats.views_aggregated.iter().sum();
    assert!(aggregated > 0 && aggregated < 80 * names.len() as u64 * 14, "{aggregated}");
}
