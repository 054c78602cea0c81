//! `bench tick-to-trade --in-memory`: the hot loop's compute (t0 → t4) over the same frames
//! without a socket, warm and after evicting the caches, to separate what the code costs from
//! what waking up cold costs.
//!
//! Owns: the in-memory passes and their series (`mem_*`: back to back, caches warm;
//! `mem_cold_*`: before each frame, `evict_kb` KiB are written, which pushes the pipeline's
//! code and data out of L1 and L2 as another process running between two ticks does; the frame
//! is then copied into the read buffer, as the socket read would, and t0 is stamped).
//! Must not: allocate inside a timed span (the pipeline is warmed by a full pass first).

use ticktrade_core::Qty;
use ticktrade_gateway::hot::engine::to_stamps;
use ticktrade_gateway::hot::feed::{SyntheticFeed, warm_up};
use ticktrade_gateway::hot::{Pipeline, QuoteOnTick, RawStamps, Recorded};
use ticktrade_latency::{Series, Stage, TscClock};
use ticktrade_net::frame::{Role, WsWriter};

/// Runs the warm and the cold pass and returns their series.
pub(crate) fn run(
    spec: &ticktrade_core::InstrumentSpec,
    feed: &SyntheticFeed,
    clock: &TscClock,
    every: u32,
    evict_kb: usize,
    touch_ahead: bool,
) -> Vec<Series> {
    let mut out = Vec::new();
    for (prefix, evict) in [("mem_", 0usize), ("mem_cold_", evict_kb.max(1) << 10)] {
        let recorded = pass(spec, feed, clock, every, evict, touch_ahead);
        out.push(Series::from_histogram(format!("{prefix}tick_to_encoded"), &recorded.tick_to_encoded));
        for (stage, name) in [
            (Stage::Decoded, "decode"),
            (Stage::Applied, "apply"),
            (Stage::Decided, "decide"),
            (Stage::Encoded, "encode"),
        ] {
            if let Some(h) = recorded.stages.stage(stage) {
                out.push(Series::from_histogram(format!("{prefix}stage_{name}"), h));
            }
        }
    }
    out
}

fn pass(
    spec: &ticktrade_core::InstrumentSpec,
    feed: &SyntheticFeed,
    clock: &TscClock,
    every: u32,
    evict: usize,
    touch_ahead: bool,
) -> Recorded {
    let mut pipeline = Pipeline::new(spec, QuoteOnTick::new(Qty::from_raw(1), every), feed.snapshot_levels);
    pipeline.set_touch_ahead(touch_ahead);
    warm_up(&mut pipeline, feed, clock);
    let mut writer = WsWriter::new(Role::Client, 1024, 7);
    let mut recorded = Recorded::default();
    let mut garbage = vec![0u8; evict];
    let mut read_buf = Vec::with_capacity(4096);
    let mut sweep = 0u8;
    for (i, frame) in std::iter::once(&feed.snapshot).chain(&feed.changes).enumerate() {
        if evict > 0 {
            sweep = sweep.wrapping_add(1);
            for line in garbage.iter_mut().step_by(64) {
                *line = sweep;
            }
            std::hint::black_box(garbage.as_ptr());
        }
        read_buf.clear();
        read_buf.extend_from_slice(frame);
        let mut raw = RawStamps::received(clock.raw(), 0);
        pipeline.on_frame(&read_buf, clock, &mut raw, &mut writer);
        std::hint::black_box(pipeline.order_frame(&writer).as_ptr());
        if i > 0 && raw.t[1] != 0 {
            recorded.record(&to_stamps(clock, &raw));
        }
    }
    recorded
}
