use std::collections::BTreeMap;

use bytes::BytesMut;

use ticktrade_hl_proto::info::{Meta, SpotMeta, coins_from_meta};
use ticktrade_hl_proto::snapshot::Snapshot;
use ticktrade_hl_proto::ws::L2View;

use super::*;
use crate::synth::writer::GenWriter;
use crate::synth::{GenConfig, Generator};

/// A generated 12-coin market (300 order actions per block) and an engine over its snapshot,
/// following `dir`, with one client (id 1) connected: the generator, the engine, the client's
/// frames and its kill signal (kept alive by the caller). The followers read at most
/// `read_limit` bytes per call; the engine computes on `threads` threads.
fn generated_engine(
    dir: &std::path::Path,
    read_limit: u64,
    threads: usize,
) -> (Generator, Engine, std::sync::Arc<ClientQueue>, oneshot::Receiver<String>) {
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
    let mut engine = Engine::new(EngineConfig { threads, ..EngineConfig::default() }, books, followers);
    let (tx, rx) = {
        let q = crate::server::publish::client_queue(1 << 20);
        (std::sync::Arc::clone(&q), q)
    };
    let (kill, killed) = oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 1, tx, kill });
    (generator, engine, rx, killed)
}

/// After every block, every subscribed view's last levels equal a full re-aggregation of its
/// coin's book: the skip rule (`l2::side_may_change` on `Books::touched`) never keeps a frame
/// that changed. Views of 20 and of 3 levels, so both deep and shallow views are checked.
#[test]
fn skipped_views_equal_a_full_recompute_every_block() {
    for threads in [1, 2] {
        skipped_views_equal_a_full_recompute(threads);
    }
}

fn skipped_views_equal_a_full_recompute(threads: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, mut rx, _killed) = generated_engine(dir.path(), crate::follow::READ_LIMIT, threads);
    engine.record_timings(true);
    let names: Vec<String> = generator.coins().iter().map(|c| c.name.clone()).collect();
    for coin in &names {
        for v in L2Variant::ALL {
            for n_levels in [20, 3] {
                subscribe(&mut engine, 1, l2_book(coin, v, Some(n_levels)));
            }
        }
    }
    rx.take_queued();
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
        for frame in queued(&mut rx) {
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
    assert_eq!(engine.n_parallel, if threads == 2 { 80 } else { 0 });
}

/// Coins are applied and published one at a time: every `l2Book` frame of a block is built from
/// its coin's book at the end of the block, never from a partly applied block. Per block, each
/// coin sends at most one frame, and it equals the frame a fresh view encodes from a full
/// re-aggregation of the book after the whole block. The generated diff lines interleave coins
/// (checked), so a coin published after a prefix of its diffs, or after each diff, fails here.
#[test]
fn every_frame_is_built_from_its_coins_whole_block() {
    for threads in [1, 2] {
        every_frame_is_built_from_its_coins_whole(threads);
    }
}

fn every_frame_is_built_from_its_coins_whole(threads: usize) {
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, mut rx, _killed) = generated_engine(dir.path(), crate::follow::READ_LIMIT, threads);
    let names: Vec<String> = generator.coins().iter().map(|c| c.name.clone()).collect();
    for coin in &names {
        subscribe(&mut engine, 1, serde_json::json!({"type": "l2Book", "coin": coin}));
    }
    rx.take_queued();
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
        for frame in queued(&mut rx) {
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
    assert_eq!(engine.n_parallel, if threads == 2 { 60 } else { 0 });
}

/// Catching up on lines already written goes in bounded reads (here 4 KB per call, a block's
/// statuses line is larger), and one `poll_files` still applies every block: the engine reads
/// a follower again while it is `pending`.
#[test]
fn one_poll_catches_up_in_bounded_reads() {
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, rx, _killed) = generated_engine(dir.path(), 4096, 2);
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
    rx.take_queued();
}

/// Every frame queued for a client so far, in order (each item's frames in order; an item is
/// never empty).
fn queued(rx: &mut std::sync::Arc<ClientQueue>) -> Vec<Bytes> {
    let mut frames = Vec::new();
    for item in rx.take_queued() {
        assert!(!item.is_empty(), "an item without frames");
        frames.extend(item.into_frames());
    }
    frames
}

/// Sends client `id`'s `subscribe` request for `subscription`, as its text would arrive.
fn subscribe(engine: &mut Engine, id: ClientId, subscription: serde_json::Value) {
    let text = serde_json::json!({"method": "subscribe", "subscription": subscription}).to_string();
    let message = ClientMessage::parse(&text).unwrap();
    engine.handle(EngineMsg::Request { id, message, text });
}

/// The `l2Book` subscription of `coin` at `variant` with `n_levels` (None: the default).
fn l2_book(coin: &str, variant: L2Variant, n_levels: Option<u32>) -> serde_json::Value {
    let mantissa = (variant.mantissa() > 1).then_some(variant.mantissa());
    serde_json::json!({"type": "l2Book", "coin": coin, "nSigFigs": variant.n_sig_figs(), "mantissa": mantissa, "nLevels": n_levels})
}

/// Subscribes client `id` to `l2Book` of every coin in `names` at every variant, with
/// `n_levels` (None: the default 20).
fn subscribe_all(engine: &mut Engine, id: ClientId, names: &[String], n_levels: Option<u32>) {
    for coin in names {
        for v in L2Variant::ALL {
            subscribe(engine, id, l2_book(coin, v, n_levels));
        }
    }
}

/// Per client: every frame it received, split by block (the `time` each frame carries, in
/// the order received: a frame of an older block after a newer one fails here), and within a
/// block by coin in the order received.
type ByBlock = Vec<BTreeMap<String, Vec<Bytes>>>;

fn received_by_block(rx: &mut std::sync::Arc<ClientQueue>) -> ByBlock {
    let mut blocks: ByBlock = Vec::new();
    let mut last_time = 0;
    for frame in queued(rx) {
        let value: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        if value["channel"] == "subscriptionResponse" {
            continue;
        }
        assert_eq!(value["channel"], "l2Book", "{value}");
        let time = value["data"]["time"].as_u64().unwrap();
        assert!(time >= last_time, "a frame of block time {time} after one of {last_time}");
        if time > last_time || blocks.is_empty() {
            blocks.push(BTreeMap::new());
            last_time = time;
        }
        let coin = value["data"]["coin"].as_str().unwrap().to_owned();
        blocks.last_mut().unwrap().entry(coin).or_default().push(frame);
    }
    blocks
}

/// The frames every client receives are byte for byte the same on one thread and on two,
/// over 200 blocks written at once and caught up in one poll (blocks back to back): every
/// variant of every coin at 20 levels for client 1, at 5 levels for client 2 (every other
/// coin), and in block order (a coin's frames of block h before any frame of block h+1).
/// Only the order between coins within a block may differ.
#[test]
fn two_threads_send_the_same_frames_as_one() {
    let mut received = Vec::new();
    for threads in [1, 2] {
        let dir = tempfile::tempdir().unwrap();
        let (mut generator, mut engine, mut rx1, _killed1) =
            generated_engine(dir.path(), crate::follow::READ_LIMIT, threads);
        let (tx2, mut rx2) = {
            let q = crate::server::publish::client_queue(1 << 20);
            (std::sync::Arc::clone(&q), q)
        };
        let (kill2, _killed2) = oneshot::channel();
        engine.handle(EngineMsg::Connect { id: 2, tx: tx2, kill: kill2 });
        let names: Vec<String> = generator.coins().iter().map(|c| c.name.clone()).collect();
        subscribe_all(&mut engine, 1, &names, None);
        let every_other: Vec<String> = names.iter().step_by(2).cloned().collect();
        subscribe_all(&mut engine, 2, &every_other, Some(5));
        let mut writer = GenWriter::new(dir.path());
        for i in 0..200 {
            let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
            writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
        }
        engine.poll_files();
        let stats = engine.stats();
        assert!(stats.lock().unwrap().reports.is_empty());
        if threads == 2 {
            assert_eq!(engine.n_parallel, 200, "every block offered to both threads");
            assert!(engine.n_helper_coins > 0, "the helper thread took no coin");
        }
        let (by_block1, by_block2) = (received_by_block(&mut rx1), received_by_block(&mut rx2));
        // The snapshot frames of the subscriptions, then 200 blocks.
        assert_eq!(by_block1.len(), 201);
        assert!(by_block2.len() > 150, "{}", by_block2.len());
        received.push((by_block1, by_block2));
    }
    let n_frames: usize = received[0].0.iter().flat_map(|b| b.values()).map(Vec::len).sum();
    assert!(n_frames > 200 * 12, "{n_frames}");
    assert!(received[0] == received[1], "frames differ between one thread and two");
}

/// A client's `l2Book` frames of one coin in a block are queued as one item (two when more
/// than `BATCH`: client 1 has 14 keys per coin), and no frame of an item is dropped, repeated
/// or out of order: per block, each client receives, per coin, exactly the frames of its keys
/// whose levels changed, in key order, each equal to a fresh encode of the book after the
/// block; and the item count is one per coin and client (per `BATCH` frames).
#[test]
fn a_clients_frames_of_a_coin_are_one_item_in_key_order() {
    for threads in [1, 2] {
        a_clients_frames_of_a_coin_are_one_item(threads);
    }
}

fn a_clients_frames_of_a_coin_are_one_item(threads: usize) {
    use crate::server::publish::BATCH;
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, rx1, _killed1) = generated_engine(dir.path(), crate::follow::READ_LIMIT, threads);
    let (tx2, rx2) = {
        let q = crate::server::publish::client_queue(1 << 20);
        (std::sync::Arc::clone(&q), q)
    };
    let (kill2, _killed2) = oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 2, tx: tx2, kill: kill2 });
    let names: Vec<String> = generator.coins().iter().map(|c| c.name.clone()).collect();
    // Per client, its keys (variant, nLevels) of every coin, subscribed out of key order.
    let keys: [Vec<(L2Variant, u32)>; 2] = [
        L2Variant::ALL.iter().rev().flat_map(|&v| [(v, 3), (v, 20)]).collect(),
        [3, 0, 5].iter().map(|&i| (L2Variant::ALL[i], 5)).collect(),
    ];
    for (id, keys) in [1, 2].into_iter().zip(&keys) {
        for coin in &names {
            for &(v, n) in keys {
                subscribe(&mut engine, id, l2_book(coin, v, Some(n)));
            }
        }
    }
    assert!(keys[0].len() > BATCH && keys[1].len() <= BATCH);
    // The key order (variant, then nLevels) in which a coin's frames must arrive.
    let sorted = keys.clone().map(|mut k| {
        k.sort_by_key(|&(v, n)| (v.index(), n));
        k
    });
    let mut rx = [rx1, rx2];
    for rx in &mut rx {
        queued(rx);
    }
    let (mut bids, mut asks, mut out, mut scratch) = (Vec::new(), Vec::new(), BytesMut::new(), Vec::new());
    // The levels each (coin, key) last sent: those after the subscription, at first.
    type Levels = (Vec<UnitLevel>, Vec<UnitLevel>);
    let mut last: BTreeMap<(String, usize, u32), Levels> = BTreeMap::new();
    let levels_of = |engine: &Engine, coin: &str, v: L2Variant, n: u32, bids: &mut Vec<_>, asks: &mut Vec<_>| {
        let book = engine.books.book(engine.books.coins.id(coin).unwrap()).unwrap();
        crate::l2::aggregate(book.book.levels(Side::Buy), true, v, n as usize, bids);
        crate::l2::aggregate(book.book.levels(Side::Sell), false, v, n as usize, asks);
    };
    for coin in &names {
        for &(v, n) in sorted.iter().flatten() {
            levels_of(&engine, coin, v, n, &mut bids, &mut asks);
            last.insert((coin.clone(), v.index(), n), (bids.clone(), asks.clone()));
        }
    }
    let mut writer = GenWriter::new(dir.path());
    let (mut n_frames, mut n_split) = (0, 0);
    for i in 0..40 {
        let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
        engine.poll_files();
        let time_ms = engine.books.time().as_millis() as u64;
        // What each (coin, key) sends in this block: a fresh encode when its levels changed.
        let mut sent: BTreeMap<(String, usize, u32), serde_json::Value> = BTreeMap::new();
        for coin in &names {
            let units = engine.books.coins.spec(engine.books.coins.id(coin).unwrap()).units;
            for &(v, n) in sorted.iter().flatten() {
                levels_of(&engine, coin, v, n, &mut bids, &mut asks);
                let before = last.get_mut(&(coin.clone(), v.index(), n)).unwrap();
                if (&before.0, &before.1) != (&bids, &asks) {
                    let frame = L2View::new(coin).encode(&mut out, &mut scratch, time_ms, units, &bids, &asks);
                    sent.insert((coin.clone(), v.index(), n), serde_json::from_slice(&frame).unwrap());
                    *before = (bids.clone(), asks.clone());
                }
            }
        }
        for (c, rx) in rx.iter_mut().enumerate() {
            // Received, per coin in the order received; and the items.
            let mut got: BTreeMap<String, Vec<serde_json::Value>> = BTreeMap::new();
            let mut n_items = 0;
            for item in rx.take_queued() {
                assert!(!item.is_empty() && item.len() <= BATCH);
                let coins: HashSet<String> = item
                    .frames()
                    .iter()
                    .map(|f| {
                        let value: serde_json::Value = serde_json::from_slice(f).unwrap();
                        assert_eq!(value["channel"], "l2Book", "{value}");
                        let coin = value["data"]["coin"].as_str().unwrap().to_owned();
                        got.entry(coin.clone()).or_default().push(value);
                        coin
                    })
                    .collect();
                assert_eq!(coins.len(), 1, "block {i} client {}: an item of several coins", c + 1);
                n_items += 1;
            }
            let mut n_expected_items = 0;
            for coin in &names {
                let expected: Vec<serde_json::Value> =
                    sorted[c].iter().filter_map(|&(v, n)| sent.get(&(coin.clone(), v.index(), n)).cloned()).collect();
                let received = got.remove(coin).unwrap_or_default();
                assert!(received == expected, "block {i} client {} coin {coin}: frames differ", c + 1);
                n_expected_items += expected.len().div_ceil(BATCH);
                n_split += usize::from(expected.len() > BATCH);
                n_frames += expected.len();
            }
            assert!(got.is_empty(), "{:?}", got.keys());
            assert_eq!(n_items, n_expected_items, "block {i} client {}: one item per coin (per {BATCH} frames)", c + 1);
        }
    }
    assert!(engine.stats().lock().unwrap().reports.is_empty());
    assert!(n_frames > 40 * 12 && n_split > 10, "{n_frames} frames, {n_split} coins in two items");
}

/// A coin whose diff cannot be applied while the helper thread applies it (the engine
/// thread takes no coin here) goes stale: the block's other coins are published, the error
/// is reported on the engine thread and the coin's subscribers are told; the next blocks
/// carry on without it.
#[test]
fn a_coin_going_stale_on_the_helper_thread() {
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, mut rx, _killed) = generated_engine(dir.path(), crate::follow::READ_LIMIT, 2);
    engine.helper_only = true;
    let names: Vec<String> = generator.coins().iter().map(|c| c.name.clone()).collect();
    for coin in &names {
        subscribe(&mut engine, 1, serde_json::json!({"type": "l2Book", "coin": coin}));
    }
    rx.take_queued();
    let mut writer = GenWriter::new(dir.path());
    let mut block = generator.next_block(Utc::from_millis(1_777_582_800_000));
    // A `new` diff with no status in the block: it cannot be applied.
    let bad = format!(
        r#"{{"user":"0x01","oid":999999999,"coin":"{}","side":"B","px":"1.0","raw_book_diff":{{"new":{{"sz":"1.0"}}}}}},"#,
        names[0]
    );
    let at = block.diffs.find("\"events\":[").unwrap() + "\"events\":[".len();
    block.diffs.insert_str(at, &bad);
    writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
    engine.poll_files();
    let mut coins = HashSet::new();
    let mut errors = Vec::new();
    for frame in queued(&mut rx) {
        let value: serde_json::Value = serde_json::from_slice(&frame).unwrap();
        match value["channel"].as_str() {
            Some("error") => errors.push(value["data"].as_str().unwrap().to_owned()),
            _ => {
                coins.insert(value["data"]["coin"].as_str().unwrap().to_owned());
            }
        }
    }
    assert_eq!(
        errors,
        [format!(
            "Order book for {} is stale (its data could not be applied); no updates until the next snapshot",
            names[0]
        )]
    );
    assert!(!coins.contains(&names[0]) && coins.len() > 3, "{coins:?}");
    let stale = engine.books.coins.id(&names[0]).unwrap();
    assert!(engine.books.book(stale).unwrap().stale);
    {
        let stats = engine.stats();
        let stats = stats.lock().unwrap();
        assert_eq!(stats.reports.len(), 1, "{:?}", stats.reports);
        assert!(stats.reports[0].contains("no open/triggered status"), "{:?}", stats.reports);
    }
    assert_eq!(engine.n_parallel, 1);
    let coins_in_block = engine.plan.len() as u64;
    assert_eq!(engine.n_helper_coins, coins_in_block, "the helper took every coin");
    // The next blocks: published by the helper, never for the stale coin, with no new report.
    for i in 1..20 {
        let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
        engine.poll_files();
        for frame in queued(&mut rx) {
            let value: serde_json::Value = serde_json::from_slice(&frame).unwrap();
            assert_eq!(value["channel"], "l2Book");
            assert_ne!(value["data"]["coin"].as_str(), Some(names[0].as_str()));
        }
    }
    assert_eq!(engine.stats().lock().unwrap().reports.len(), 1);
}

fn line(stream: Stream, text: String) -> Line {
    Line { stream, text, origin: crate::join::Origin { file: "f".into(), line: 1 } }
}

/// A block's lines decoded on two threads, the statuses line in parts and the diffs as one
/// more, give exactly the events of the whole-line decode, in order, with l4 subscribers or
/// without, whichever thread takes which parts (the helper none, a few, or all but the head,
/// which it takes too when this thread waits for it). A part that gives up (here a space the
/// exact-shape decoder refuses, in the head, a middle part or the tail) means the whole line is
/// decoded by the general decoder: still every event.
#[test]
fn a_block_decoded_in_parts_on_two_threads_equals_the_whole_decode() {
    let pool = rayon::ThreadPoolBuilder::new().num_threads(2).use_current_thread().build().unwrap();
    let mut generator = Generator::new(&GenConfig { n_coins: 40, orders_per_block: 600, ..GenConfig::default() });
    for i in 0..30 {
        let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
        let (statuses, diffs) = (line(Stream::Statuses, block.statuses), line(Stream::Diffs, block.diffs));
        // The parts path is the one taken: every guessed boundary is a real one.
        let mut bounds = [0; MAX_PARTS + 1];
        let n = part_bounds(&statuses.text, &mut bounds);
        assert!(n >= 4, "{n} parts of {} bytes", statuses.text.len());
        assert!(bounds[..=n].windows(2).all(|w| w[0] < w[1]));
        let text = statuses.text.as_str();
        assert!(fast::statuses_head(text, bounds[1], true, &mut Vec::new()).is_some());
        for p in 1..n - 1 {
            assert!(fast::statuses_middle(text, bounds[p], bounds[p + 1], true, &mut Vec::new()).is_some());
        }
        assert!(fast::statuses_tail(text, bounds[n - 1], true, &mut Vec::new()).is_some());
        let whole_diffs = decode_diffs(&diffs, Vec::new()).events;
        for all in [true, false] {
            let whole = decode_statuses(&statuses, all, Vec::new());
            assert!(whole.events.len() > 10);
            for front_waits in [0, 1, n / 2, n, n + 1] {
                let (st, df, tail, _) =
                    decode_on_two(&pool, &statuses, &diffs, all, [vec![], vec![]], vec![], front_waits);
                assert!(tail.is_empty());
                assert_eq!(st.events, whole.events, "block {i}, all {all}, helper first {front_waits}");
                assert_eq!(st.time, whole.time);
                assert!(st.damaged.is_empty() && st.reports.is_empty());
                assert_eq!(df.events, whole_diffs);
            }
            if i % 10 == 0 {
                // A space in the head, in a middle part, in the tail: that part gives up.
                for p in [0, n / 2, n - 1] {
                    let at = statuses.text[bounds[p]..].find(r#""status":""#).unwrap() + bounds[p];
                    let at = at + r#""status":"#.len();
                    let spaced = line(Stream::Statuses, format!("{} {}", &statuses.text[..at], &statuses.text[at..]));
                    for front_waits in [0, n] {
                        let (st, df, tail, _) =
                            decode_on_two(&pool, &spaced, &diffs, all, [vec![], vec![]], vec![], front_waits);
                        assert!(tail.is_empty());
                        assert_eq!(st.events, whole.events, "block {i}, all {all}, space in part {p}");
                        assert_eq!(df.events, whole_diffs);
                    }
                }
            }
        }
    }
}

/// The claims from both ends hand out every part exactly once, however the two threads race.
#[test]
fn claims_from_both_ends_take_every_part_once() {
    for n in [1, 2, 3, 17] {
        for _ in 0..200 {
            let claims = Claims::new(n);
            let (front, back) = std::thread::scope(|s| {
                let back = s.spawn(|| std::iter::from_fn(|| claims.back()).collect::<Vec<_>>());
                let front: Vec<usize> = std::iter::from_fn(|| claims.front()).collect();
                (front, back.join().unwrap())
            });
            // A prefix from the front in order, a suffix from the back in reverse order.
            assert!(front.iter().copied().eq(0..front.len()), "{front:?}");
            assert!(back.iter().rev().copied().eq(front.len()..n), "{front:?} {back:?}");
            assert_eq!(claims.back_taken(n), back.len());
        }
    }
}

/// The helper's spin job: returns at once on the engine thread (which runs its own queued
/// jobs while waiting in a `join`) and when its stage was offered before it started; spins
/// until a stage is offered (or forever here, as the bound is an hour away); and ends at its
/// bound when no stage comes.
#[test]
fn the_spin_job_ends_when_its_stage_is_offered_or_at_its_bound() {
    let warm = Arc::new(Warm::new());
    let hour = 3_600_000_000_000;
    warm.until.store(warm.now_ns() + hour, Ordering::Release);
    assert_eq!(warm.run(0, Some(0)), SpinEnd::NotHelper);
    assert_eq!(warm.run(0, None), SpinEnd::NotHelper);
    warm.offer();
    assert_eq!(warm.run(0, Some(1)), SpinEnd::Offered);
    let spinning = {
        let warm = Arc::clone(&warm);
        std::thread::spawn(move || warm.run(1, Some(1)))
    };
    std::thread::sleep(Duration::from_millis(20));
    assert!(!spinning.is_finished());
    warm.offer();
    assert_eq!(spinning.join().unwrap(), SpinEnd::Offered);
    warm.until.store(warm.now_ns(), Ordering::Release);
    assert_eq!(warm.run(2, Some(1)), SpinEnd::Bound);
    assert_eq!(warm.pending.load(Ordering::Acquire), u64::MAX);
}

/// On two threads, a pass over the files that finds no block leaves one spin job for the
/// helper (not one per pass while one is queued or spinning: the next pass only extends its
/// bound), offers no stage, and the job ends at its bound: nothing is left pending.
#[test]
fn a_wake_up_without_a_block_spins_the_helper_once_within_its_bound() {
    let dir = tempfile::tempdir().unwrap();
    let (mut generator, mut engine, _rx, _killed) = generated_engine(dir.path(), crate::follow::READ_LIMIT, 2);
    // An hour's bound, so that the job is still there when looked at.
    Arc::get_mut(&mut engine.warm).unwrap().bound_ns = 3_600_000_000_000;
    let mut writer = GenWriter::new(dir.path());
    let block = generator.next_block(Utc::from_millis(1_777_582_800_000));
    writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
    engine.poll_files();
    assert_eq!(engine.n_parallel, 1);
    // Two stages offered in the block (decode, coins).
    let warm = Arc::clone(&engine.warm);
    assert_eq!(warm.epoch.load(Ordering::Acquire), 2);
    let spawned = warm.spawned.load(Ordering::Acquire);
    for _ in 0..3 {
        engine.poll_files();
        assert_eq!(warm.pending.load(Ordering::Acquire), 2, "a spin job for this epoch");
    }
    assert_eq!(warm.spawned.load(Ordering::Acquire), spawned + 1, "one job for the three passes");
    assert_eq!(warm.epoch.load(Ordering::Acquire), 2, "no stage offered without a block");
    warm.until.store(warm.now_ns(), Ordering::Release);
    while warm.pending.load(Ordering::Acquire) != u64::MAX {
        std::thread::yield_now();
    }
}

/// The decode buffers keep their allocation from block to block (`recycle` to another
/// lifetime in place), and a block decoded into used buffers gives the same events.
#[test]
fn recycle_keeps_the_allocation() {
    let mut generator = Generator::new(&GenConfig { n_coins: 12, orders_per_block: 300, ..GenConfig::default() });
    let mut spare = Spare::default();
    let mut caps = [0; 3];
    for i in 0..3 {
        let block = generator.next_block(Utc::from_millis(1_777_582_800_000 + i * 100));
        let (statuses, diffs) = (line(Stream::Statuses, block.statuses), line(Stream::Diffs, block.diffs));
        let ([head, tail], diffs_buf) = spare.take();
        if i > 0 {
            assert!(head.is_empty() && tail.is_empty() && diffs_buf.is_empty());
            assert_eq!([head.capacity(), tail.capacity(), diffs_buf.capacity()], caps, "block {i}");
        }
        let (mut tail, head) = (tail, head);
        tail.reserve(10);
        let st = decode_statuses(&statuses, true, head);
        let df = decode_diffs(&diffs, diffs_buf);
        assert_eq!(st.events, decode_statuses(&statuses, true, Vec::new()).events);
        assert_eq!(df.events, decode_diffs(&diffs, Vec::new()).events);
        caps = [st.events.capacity(), tail.capacity(), df.events.capacity()];
        assert!(caps.iter().all(|&c| c >= 10), "{caps:?}");
        spare.put(st.events, tail, df.events);
    }
}
