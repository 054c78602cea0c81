use super::*;

#[test]
fn same_seed_same_bytes() {
    let config = GenConfig { n_coins: 20, orders_per_block: 200, ..GenConfig::default() };
    let (mut a, mut b) = (Generator::new(&config), Generator::new(&config));
    assert_eq!(a.snapshot_json(), b.snapshot_json());
    for i in 0..20 {
        let t = Utc::from_millis(1_777_582_003_304 + i * 100);
        assert_eq!(a.next_block(t), b.next_block(t));
    }
}

#[test]
fn lines_decode_and_books_stay_uncrossed() {
    use ticktrade_hl_proto::node::{Batch, BookDiff, NodeFill, OrderStatus};
    let mut g = Generator::new(&GenConfig { n_coins: 30, orders_per_block: 300, ..GenConfig::default() });
    let (mut n_fills, mut n_diffs) = (0, 0);
    for i in 0..50 {
        let block = g.next_block(Utc::from_millis(1_777_582_003_304 + i * 100));
        let s = Batch::parse(&block.statuses).unwrap();
        let d = Batch::parse(&block.diffs).unwrap();
        let f = Batch::parse(&block.fills).unwrap();
        assert_eq!(s.block_number, block.height);
        for e in &s.events {
            serde_json::from_str::<OrderStatus<'_>>(e.get()).unwrap();
        }
        for e in &d.events {
            serde_json::from_str::<BookDiff<'_>>(e.get()).unwrap();
        }
        for e in &f.events {
            serde_json::from_str::<NodeFill<'_>>(e.get()).unwrap();
        }
        n_fills += f.events.len();
        n_diffs += d.events.len();
        for c in g.coins() {
            if let (Some(bid), Some(ask)) = (c.best(true), c.best(false)) {
                assert!(bid < ask, "{} crossed", c.name);
            }
        }
    }
    assert!(n_fills > 0 && n_diffs > 0);
    let snap = g.snapshot_json();
    ticktrade_hl_proto::snapshot::Snapshot::parse(snap.as_bytes()).unwrap();
    let (meta, spot) = g.meta_json();
    let meta: ticktrade_hl_proto::info::Meta = serde_json::from_str(&meta).unwrap();
    let spot: ticktrade_hl_proto::info::SpotMeta = serde_json::from_str(&spot).unwrap();
    assert_eq!(ticktrade_hl_proto::info::coins_from_meta(&meta, Some(&spot)).len(), 30);
}
