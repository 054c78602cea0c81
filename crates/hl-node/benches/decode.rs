//! The decode stage of `ticktrade hl` without `l4Book` subscribers (statuses that may rest,
//! every diff) on the default generated market (229 coins, 600 orders per block, 150 blocks
//! taken in turn; one iteration is one block).
//!
//! `decode_line`: hl-node's exact-shape decoder (`ticktrade_hl_proto::node::fast`) on each
//! line alone and on both, into reused buffers. `decode_stage`: the engine's stage
//! (`DecodeStage`) on one thread into fresh buffers and into the last block's, and on two
//! threads (`decode_on_two`) with the helper spinning, as after a file wake-up (its spin job
//! started 200 µs before the block), and after the helper slept 2 ms first; `helper_start`
//! is when the helper took its first part after the offer (or the whole decode, when it took
//! none). Only the decode is timed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use ticktrade_core::Utc;
use ticktrade_hl_node::join::{Line, Origin, Stream};
use ticktrade_hl_node::server::engine::DecodeStage;
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_hl_proto::node::{BookDiff, OrderStatus, fast};

const N_BLOCKS: i64 = 150;

fn line(stream: Stream, text: String) -> Line {
    Line { stream, text, origin: Origin { file: "bench".into(), line: 1 } }
}

fn blocks() -> Vec<(Line, Line)> {
    let mut generator = Generator::new(&GenConfig { seed: 7, ..GenConfig::default() });
    (0..N_BLOCKS)
        .map(|i| {
            let b = generator.next_block(Utc::from_millis(1_777_582_003_304 + i * 100));
            (line(Stream::Statuses, b.statuses), line(Stream::Diffs, b.diffs))
        })
        .collect()
}

/// Spins for `d` (the helper's spin job runs meanwhile, as while the engine reads the lines).
fn busy(d: Duration) {
    let t = Instant::now();
    while t.elapsed() < d {
        std::hint::spin_loop();
    }
}

fn decode_line(c: &mut Criterion, blocks: &[(Line, Line)]) {
    let (mut statuses, mut diffs): (Vec<OrderStatus<'_>>, Vec<BookDiff<'_>>) = (Vec::new(), Vec::new());
    let mut i = 0;
    let mut next = || {
        i += 1;
        &blocks[i % blocks.len()]
    };
    let mut group = c.benchmark_group("decode_line");
    group.bench_function("statuses", |b| {
        b.iter(|| {
            let (s, _) = next();
            statuses.clear();
            black_box(fast::statuses(&s.text, false, &mut statuses));
        })
    });
    group.bench_function("diffs", |b| {
        b.iter(|| {
            let (_, d) = next();
            diffs.clear();
            black_box(fast::diffs(&d.text, &mut diffs));
        })
    });
    group.bench_function("both", |b| {
        b.iter(|| {
            let (s, d) = next();
            statuses.clear();
            diffs.clear();
            black_box(fast::statuses(&s.text, false, &mut statuses));
            black_box(fast::diffs(&d.text, &mut diffs));
        })
    });
    group.finish();
}

fn decode_stage(c: &mut Criterion, blocks: &[(Line, Line)]) {
    let Ok(mut stage) = DecodeStage::new() else {
        eprintln!("no second thread: decode_stage skipped");
        return;
    };
    let mut i = 0;
    let mut next = || {
        i += 1;
        i % blocks.len()
    };
    let mut group = c.benchmark_group("decode_stage");
    group.bench_function("one_thread_fresh_buffers", |b| {
        b.iter(|| {
            let (s, d) = &blocks[next()];
            black_box(stage.one_thread(s, d, false))
        })
    });
    group.bench_function("one_thread_reused_buffers", |b| {
        b.iter(|| {
            let (s, d) = &blocks[next()];
            black_box(stage.one_thread(s, d, true))
        })
    });
    // Each iteration waits 200 µs (and 2 ms) untimed: few samples keep the run short.
    group.sample_size(20).measurement_time(Duration::from_secs(3));
    let two = |asleep: bool, helper_start: bool| {
        move |iters: u64, stage: &mut DecodeStage, next: &mut dyn FnMut() -> usize| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let (s, d) = &blocks[next()];
                if asleep {
                    std::thread::sleep(Duration::from_millis(2));
                }
                stage.wake_helper();
                busy(Duration::from_micros(200));
                let t = Instant::now();
                let (n, start_ns) = stage.two_threads(s, d);
                let took = t.elapsed();
                black_box(n);
                total += if helper_start { took.min(Duration::from_nanos(start_ns)) } else { took };
            }
            total
        }
    };
    for (name, asleep, start) in [
        ("two_threads_helper_spinning", false, false),
        ("two_threads_after_2ms_asleep", true, false),
        ("helper_start", false, true),
    ] {
        let run = two(asleep, start);
        group.bench_function(name, |b| b.iter_custom(|iters| run(iters, &mut stage, &mut next)));
    }
    group.finish();
}

fn bench(c: &mut Criterion) {
    let blocks = blocks();
    decode_line(c, &blocks);
    decode_stage(c, &blocks);
}

criterion_group!(benches, bench);
criterion_main!(benches);
