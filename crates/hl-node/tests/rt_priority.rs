//! `--rt-priority`: the server's engine thread, and the helper it starts on the first block,
//! run each block under SCHED_FIFO at the asked priority and are in the normal class between
//! blocks, read back from /proc as any operator would (`ps -L -o cls,rtprio`); a priority the
//! kernel refuses or that is out of range fails `start` with the reason instead of serving at
//! a class the operator did not ask for.

#![cfg(target_os = "linux")]
#![allow(clippy::unwrap_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use ticktrade_core::Utc;
use ticktrade_hl_node::server::engine::EngineConfig;
use ticktrade_hl_node::server::{MetaDocs, ServeConfig, start};
use ticktrade_hl_node::synth::writer::GenWriter;

/// (policy, rt_priority) of this process's thread named `name`, from
/// `/proc/self/task/*/stat` (fields 41 and 40; 1 = SCHED_FIFO).
fn class_of(name: &str) -> Option<(u32, u32)> {
    for task in std::fs::read_dir("/proc/self/task").ok()?.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if comm.trim_end() != name {
            continue;
        }
        let stat = std::fs::read_to_string(task.path().join("stat")).ok()?;
        let after = &stat[stat.rfind(')')? + 1..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        // `after` starts at field 3 (state).
        return Some((fields.get(41 - 3)?.parse().ok()?, fields.get(40 - 3)?.parse().ok()?));
    }
    None
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn engine_threads_run_at_the_asked_realtime_priority_or_start_says_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let mut generator = generator(20, 200);
    let mut writer = GenWriter::new(tmp.path());
    writer.write_bootstrap(&generator).unwrap();
    let docs = || MetaDocs { meta: "{}".into(), spot_meta: "{}".into(), ..MetaDocs::default() };

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ServeConfig { rt_priority: Some(0), ..ServeConfig::default() };
    let refused = start(listener, engine(tmp.path(), &generator), tmp.path(), docs(), config).err().unwrap();
    assert!(refused.to_string().contains("outside 1..=99"), "{refused}");

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let config = ServeConfig { rt_priority: Some(7), ..ServeConfig::default() };
    let engine = engine(tmp.path(), &generator);
    let stats = engine.stats();
    let server = match start(listener, engine, tmp.path(), docs(), config) {
        Ok(server) => server,
        Err(err) => {
            // Not root and no CAP_SYS_NICE: the reason, and no server at a class not asked for.
            assert!(err.to_string().contains("SCHED_FIFO priority 7"), "{err}");
            assert_eq!(class_of("hl-engine"), None, "the refused engine thread has ended");
            return;
        }
    };
    // Between blocks the engine thread is in the normal class (the permission was checked
    // with a switch up and down).
    assert_eq!(class_of("hl-engine"), Some((0, 0)), "the engine thread waits in the normal class");
    let two = EngineConfig::default_threads() == 2;
    let start_height = stats.lock().unwrap().height;
    for (i, n) in [1u64, 2, 3].into_iter().enumerate() {
        let block = generator.next_block(Utc::from_millis(1_700_000_000_000 + 100 * i as i64));
        writer.write_block(&block, order(0)).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while stats.lock().unwrap().height < start_height + n {
            assert!(Instant::now() < deadline, "block {n} not applied");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    // Each block ran on threads switched to SCHED_FIFO 7: the engine thread's every block, the
    // helper's from the block after it started (it records itself as it starts, on the first).
    let (engine_blocks, helper_blocks) = stats.lock().unwrap().realtime_blocks;
    assert_eq!(engine_blocks, 3);
    if two {
        assert!(helper_blocks >= 1, "the helper ran no block real-time");
    }
    // ... and both are back in the normal class after them.
    assert_eq!(class_of("hl-engine"), Some((0, 0)), "the engine thread is normal between blocks");
    if two {
        assert_eq!(class_of("hl-engine-1"), Some((0, 0)), "the helper is normal between blocks");
    }
    // The connection tasks stay in the normal class (policy 0).
    let tokio_workers = std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .any(|t| std::fs::read_to_string(t.path().join("comm")).unwrap_or_default().starts_with("tokio-runtime-w"));
    if tokio_workers {
        assert_eq!(class_of("tokio-runtime-w").map(|c| c.0), Some(0));
    }
    server.stop();
}
