//! What the hot path pays for latency measurement, each beside its baseline in the same run:
//! clock reads (TSC raw / scaled vs `Instant::now`), stamping a stage, and handing a `Stamps`
//! to the histogram thread (rtrb ring vs `std::sync::mpsc::sync_channel`); plus the histogram
//! thread's cost per record.
//!
//! `cargo bench -p ticktrade-latency --bench hot_path`

use std::hint::black_box;
use std::time::{Duration, Instant, SystemTime};

use criterion::{Criterion, criterion_group, criterion_main};
use ticktrade_core::{Clock, Mono, Utc};
use ticktrade_latency::{Histogram, Stage, StageRecorder, Stamps, SystemClock, TscClock, spsc_ring};

fn clocks(c: &mut Criterion) {
    let tsc = TscClock::new();
    let sys = SystemClock::new();
    let mut group = c.benchmark_group("clock_read");
    group.bench_function("tsc_raw", |b| b.iter(|| black_box(tsc.raw())));
    group.bench_function("tsc_mono", |b| b.iter(|| black_box(tsc.mono())));
    let raw = tsc.raw();
    group.bench_function("tsc_to_mono", |b| b.iter(|| black_box(tsc.to_mono(black_box(raw)))));
    group.bench_function("system_mono", |b| b.iter(|| black_box(sys.mono())));
    group.bench_function("utc", |b| b.iter(|| black_box(tsc.utc())));
    group.bench_function("std_instant_now_baseline", |b| b.iter(|| black_box(Instant::now())));
    group.bench_function("std_system_time_now_baseline", |b| b.iter(|| black_box(SystemTime::now())));
    group.finish();
}

fn handoff(c: &mut Criterion) {
    let mut group = c.benchmark_group("stamp_handoff");
    let stamps = Stamps::received(Mono(1_000), Utc(1));
    group.bench_function("stamps_set", |b| {
        let mut s = stamps;
        let mut t = 1_000;
        b.iter(|| {
            t += 3;
            s.set(Stage::Sent, Mono(black_box(t)));
            black_box(&s);
        })
    });
    group.bench_function("ring_push_pop", |b| {
        let (mut tx, mut rx) = spsc_ring::<Stamps>(1024);
        b.iter(|| {
            tx.push(black_box(stamps));
            black_box(rx.pop())
        })
    });
    group.bench_function("mpsc_sync_channel_baseline", |b| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Stamps>(1024);
        b.iter(|| {
            let _ = tx.try_send(black_box(stamps));
            black_box(rx.try_recv().ok())
        })
    });
    group.finish();
}

fn recording(c: &mut Criterion) {
    let mut group = c.benchmark_group("histogram_thread");
    group.bench_function("histogram_record", |b| {
        let mut histogram = Histogram::new();
        let mut v = 0u64;
        b.iter(|| {
            v = (v + 7_919) % 1_000_000;
            histogram.record(black_box(v));
        })
    });
    group.bench_function("stage_recorder_record", |b| {
        let mut recorder = StageRecorder::new();
        let mut stamps = Stamps::received(Mono(1_000), Utc(2_000_000));
        stamps.exch_utc = Utc(1_000_000);
        for (i, stage) in Stage::ALL.iter().enumerate().skip(1) {
            stamps.set(*stage, Mono(1_000 + 450 * i as u64));
        }
        b.iter(|| recorder.record(black_box(&stamps)))
    });
    group.finish();
}

fn config() -> Criterion {
    // Short runs: the build VM has two cores shared with other builds.
    Criterion::default().warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2))
}

criterion_group!(name = benches; config = config(); targets = clocks, handoff, recording);
criterion_main!(benches);
