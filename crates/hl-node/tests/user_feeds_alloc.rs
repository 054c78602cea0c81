//! The per-user feeds (`orderUpdates`, `userFills`) allocate nothing per event in steady state:
//! the same generated blocks go through two engines on this thread (one thread each, so all of
//! a block's work is counted by the testkit's per-thread allocator), one with a client
//! following sixteen users on both feeds and one with a client following nothing. What the
//! feeds add is at most two allocations per frame (the frame's bytes, copied once from the
//! user's buffer kept from block to block, and the shared header `Bytes` makes when the frame
//! is first cloned into a client's queue), however many statuses and fills a frame carries.

#![allow(clippy::unwrap_used)]

mod common;

use std::sync::Arc;

use serde_json::{Value, json};
use ticktrade_core::Utc;
use ticktrade_hl_node::join::Stream;
use ticktrade_hl_node::server::engine::{Engine, EngineConfig, EngineMsg};
use ticktrade_hl_node::server::publish::client_queue;
use ticktrade_hl_node::synth::user_address;
use ticktrade_hl_node::synth::writer::GenWriter;
use ticktrade_hl_proto::ws::ClientMessage;

use common::*;

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

/// Users followed (the generator's users 0..16).
const USERS: u16 = 16;
/// Blocks before counting: the buffers, queues and indexes grow to their size, and the hourly
/// files roll over (the first blocks are ten seconds before an hour).
const WARMUP: u64 = 40;
const BLOCKS: u64 = 80;
/// Buffer growths allowed over the counted blocks.
const GROWTHS: usize = 8;

#[derive(Debug, Default)]
struct Counted {
    allocations: usize,
    frames: u64,
    /// Statuses and fills in those frames.
    events: u64,
}

fn run(follow: bool) -> Counted {
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(40, 400);
    let mut writer = GenWriter::new(tmp.path());
    writer.write_bootstrap(&generator).unwrap();
    let books = books_from(&generator);
    let height = books.height();
    let config = EngineConfig { threads: 1, ..EngineConfig::default() };
    let mut engine = Engine::new(config, books, followers(tmp.path(), height));
    let queue = client_queue(1 << 16);
    let (kill, _killed) = tokio::sync::oneshot::channel();
    engine.handle(EngineMsg::Connect { id: 1, tx: Arc::clone(&queue), kill });
    for user in (0..USERS).filter(|_| follow).map(user_address) {
        for sub in [json!({"type": "orderUpdates", "user": user}), json!({"type": "userFills", "user": user})] {
            let text = json!({"method": "subscribe", "subscription": sub}).to_string();
            engine.handle(EngineMsg::Request { id: 1, message: ClientMessage::parse(&text).unwrap(), text });
        }
    }
    queue.take_queued();
    let mut counted = Counted::default();
    for i in 0..WARMUP + BLOCKS {
        let h = generator.height();
        let block = generator.next_block(Utc::from_millis(T0_MS + (h as i64 - 5_000) * 1_500));
        writer.write_block(&block, [Stream::Statuses, Stream::Diffs, Stream::Fills]).unwrap();
        let n_allocs = ALLOC.count_in(|| engine.poll_files());
        let items = queue.take_queued();
        assert_eq!(engine.books().height(), generator.height(), "block applied");
        if i < WARMUP {
            continue;
        }
        counted.allocations += n_allocs;
        for frame in items.into_iter().flat_map(|item| item.into_frames()) {
            let msg: Value = serde_json::from_slice(&frame).unwrap();
            counted.events += match msg["channel"].as_str().unwrap() {
                "orderUpdates" => msg["data"].as_array().unwrap().len(),
                "userFills" => msg["data"]["fills"].as_array().unwrap().len(),
                other => panic!("unexpected {other}: {msg}"),
            } as u64;
            counted.frames += 1;
        }
    }
    counted
}

#[test]
fn user_feeds_allocate_per_frame_not_per_event() {
    let plain = run(false);
    let followed = run(true);
    assert_eq!(plain.frames, 0);
    assert!(followed.frames >= BLOCKS, "the followed users are active: {followed:?}");
    assert!(followed.events > 2 * followed.frames, "frames carry several events: {followed:?}");
    let extra = followed.allocations.saturating_sub(plain.allocations);
    // Plus a few growths of the buffers kept from block to block, when a block's frame or
    // fills line is larger than any before.
    assert!(
        extra <= 2 * followed.frames as usize + GROWTHS,
        "feeds: {extra} allocations for {followed:?} (without: {plain:?})"
    );
}
