use ticktrade_hl_proto::info::{Meta, SpotMeta, coins_from_meta};
use ticktrade_hl_proto::snapshot::Snapshot;

use super::*;
use crate::synth::writer::GenWriter;
use crate::synth::{GenConfig, Generator};

/// A generated 12-coin market (300 order actions per block) and an engine over its snapshot,
/// following `dir`, with one client (id 1) connected: the generator, the engine, the client's
/// frames and its kill signal (kept alive by the caller). The followers read at most
/// `read_limit` bytes per call.
fn generated_engine(
    dir: &std::path::Path,
    read_limit: u64,
) -> (Generator, Engine, mpsc::Receiver<Bytes>, oneshot::Receiver<String>) {
    let generator = Generator::new(&GenConfig { n_coins: 12, orders_per_block: 300, ..GenConfig::default() });
    let (meta, spot) = generator.meta_json();
    let meta: Meta = serde_json::from_str(&meta).unwrap();
    let spot: SpotMeta = serde_json::from_str(&spot).unwrap();
    let mut books = Books::new(&coins_from_meta(&meta, Some(&spot)));
    let snapshot = generator.snapshot_json();
    books.load_snapshot(&Snapshot::parse(snapshot.as_bytes()).unwrap(), Utc::from_nanos(0)).unwrap();
    let followers = Stream::ALL
        .iter()
        .map(|&s| {
            let mut f = Follower::new(dir, s).read_limit(read_limit);
            f.seek_height(books.height()).unwrap();
            f
        })
        .collect();
    let mut engine = Engine::new(EngineConfig::default(), books, followers);
    let (tx, rx) = mpsc::channel(1 << 20);
    let (kill, killed) = oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 1, tx, kill });
    (generator, engine, rx, killed)
}

/// After every block, every subscribed view's last levels equal a full re-aggregation of its
/// coin's book: the skip rule (`l2::side_may_change` on `Books::touched`) never keeps a frame
/// that changed. Views of 20 and of 3 levels, so both deep and shallow views are checked.
#[test]
fn skipped_views_equal_a_full_recompute_every_block() {
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, mut rx, _killed) = generated_engine(dir.path(), crate::follow::READ_LIMIT);
    engine.record_timings(true);
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
    while rx.try_recv().is_ok() {}
    let mut writer = GenWriter::new(dir.path());
    let (mut bids, mut asks) = (Vec::new(), Vec::new());
    let mut n_checked = 0;
    for i in 0..80 {
        let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
        engine.poll_files();
        // Every frame is of this block (a view sharing its full-precision twin's frame must
        // not send the twin's older one).
        let time = format!("\"time\":{},", engine.books.time().as_millis());
        while let Ok(frame) = rx.try_recv() {
            let frame = std::str::from_utf8(&frame).unwrap();
            assert!(frame.contains(&time), "block {i}: {}", &frame[..frame.len().min(120)]);
        }
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

/// Coins are applied and published one at a time: every `l2Book` frame of a block is built from
/// its coin's book at the end of the block, never from a partly applied block. Per block, each
/// coin sends at most one frame, and it equals the frame a fresh view encodes from a full
/// re-aggregation of the book after the whole block. The generated diff lines interleave coins
/// (checked), so a coin published after a prefix of its diffs, or after each diff, fails here.
#[test]
fn every_frame_is_built_from_its_coins_whole_block() {
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, mut rx, _killed) = generated_engine(dir.path(), crate::follow::READ_LIMIT);
    let names: Vec<String> = generator.coins().iter().map(|c| c.name.clone()).collect();
    for coin in &names {
        let text =
            serde_json::json!({"method": "subscribe", "subscription": {"type": "l2Book", "coin": coin}}).to_string();
        let message = ClientMessage::parse(&text).unwrap();
        engine.handle(EngineMsg::Request { id: 1, message, text });
    }
    while rx.try_recv().is_ok() {}
    let mut writer = GenWriter::new(dir.path());
    let (mut bids, mut asks, mut out, mut scratch) = (Vec::new(), Vec::new(), BytesMut::new(), Vec::new());
    let (mut n_frames, mut n_interleaved) = (0, 0);
    for i in 0..60 {
        let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
        // Coins whose diffs in this line are not contiguous.
        let line: serde_json::Value = serde_json::from_str(&block.diffs).unwrap();
        let coins: Vec<&str> = line["events"].as_array().unwrap().iter().map(|e| e["coin"].as_str().unwrap()).collect();
        let mut runs: Vec<&str> = coins.clone();
        runs.dedup();
        let mut distinct = runs.clone();
        distinct.sort_unstable();
        distinct.dedup();
        n_interleaved += runs.len() - distinct.len();
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
        engine.poll_files();
        let mut seen = HashSet::new();
        while let Ok(frame) = rx.try_recv() {
            let frame: serde_json::Value = serde_json::from_slice(&frame).unwrap();
            assert_eq!(frame["channel"], "l2Book");
            let name = frame["data"]["coin"].as_str().unwrap().to_owned();
            assert!(seen.insert(name.clone()), "block {i}: two frames for {name}");
            let id = engine.books.coins.id(&name).unwrap();
            let book = engine.books.book(id).unwrap();
            crate::l2::aggregate(book.book.levels(Side::Buy), true, L2Variant::Full, 20, &mut bids);
            crate::l2::aggregate(book.book.levels(Side::Sell), false, L2Variant::Full, 20, &mut asks);
            let spec = engine.books.coins.spec(id);
            let time_ms = engine.books.time().as_millis() as u64;
            let expected = L2View::new(&name).encode(&mut out, &mut scratch, time_ms, spec.units, &bids, &asks);
            let expected: serde_json::Value = serde_json::from_slice(&expected).unwrap();
            assert_eq!(frame, expected, "block {i} coin {name}");
            n_frames += 1;
        }
    }
    let stats = engine.stats();
    assert!(stats.lock().unwrap().reports.is_empty());
    assert!(n_interleaved > 60, "the generator's lines should interleave coins ({n_interleaved})");
    assert!(n_frames > 60 * 3, "{n_frames}");
}

/// Catching up on lines already written goes in bounded reads (here 4 KB per call, a block's
/// statuses line is larger), and one `poll_files` still applies every block: the engine reads
/// a follower again while it is `pending`.
#[test]
fn one_poll_catches_up_in_bounded_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, mut rx, _killed) = generated_engine(dir.path(), 4096);
    let mut writer = GenWriter::new(dir.path());
    let mut last = 0;
    for i in 0..30 {
        let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
        assert!(block.statuses.len() > 4096, "{}", block.statuses.len());
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
        last = block.height;
    }
    engine.poll_files();
    let stats = engine.stats();
    let stats = stats.lock().unwrap();
    assert!(stats.reports.is_empty(), "{:?}", stats.reports);
    assert_eq!(stats.height, last);
    while rx.try_recv().is_ok() {}
}
