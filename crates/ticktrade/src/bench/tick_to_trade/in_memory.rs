//! `bench tick-to-trade --in-memory`: the live session's compute (t0 → t4) over the same
//! frames without a socket, warm and after evicting the caches, to separate what the code
//! costs from what waking up cold costs.
//!
//! The session is the one every other pass runs (`Requote`, risk checks and order state on),
//! driven through `Session::offline_connect`/`offline_frame`: it syncs against the in-process
//! venue's answers (`venue::Answers`), then each tick is handed to it from a read buffer and
//! every order it writes is acknowledged at once, untimed, as the venue would between ticks.
//!
//! Owns: the in-memory passes and their series (`mem_*`: back to back, caches warm;
//! `mem_cold_*`: before each frame, `evict_kb` KiB are written, which pushes the session's
//! code and data out of L1 and L2 as another process running between two ticks does; the frame
//! is then copied into the read buffer, as the socket read would, and t0 is stamped).
//! Must not: time anything itself (the stamps come from the session's ring).

use anyhow::{Context as _, anyhow, bail};
use ticktrade_core::InstrumentSpec;
use ticktrade_gateway::hot::feed::SyntheticFeed;
use ticktrade_gateway::hot::{Recorded, spawn_recorder};
use ticktrade_gateway::live::{Session, StopHandle};
use ticktrade_gateway::venue::{Credentials, Secret};
use ticktrade_latency::{Series, Stage, TscClock, spsc_ring};
use ticktrade_net::frame::{Opcode, Role, WsReader};
use ticktrade_net::hot::TlsRoots;

use super::session::{Requote, RunOptions, Target, new_session};
use super::venue::Answers;

/// Runs the warm and the cold pass and returns their series.
pub(crate) fn run(
    spec: &InstrumentSpec,
    feed: &SyntheticFeed,
    clock: &TscClock,
    options: RunOptions,
    evict_kb: usize,
) -> anyhow::Result<Vec<Series>> {
    let mut out = Vec::new();
    for (prefix, evict) in [("mem_", 0usize), ("mem_cold_", evict_kb.max(1) << 10)] {
        let (recorded, _) =
            pass(spec, feed, clock, options, evict, false).with_context(|| format!("the {prefix} pass"))?;
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
    Ok(out)
}

/// The venue's half of the in-memory exchange: reads the session's client frames and feeds
/// the replies back.
struct Loop {
    session: Session<Requote>,
    answers: Answers,
    requests: WsReader,
    written: Vec<u8>,
    replies: Vec<String>,
    orders: u64,
    /// Everything the session wrote, when kept.
    transcript: Option<Vec<u8>>,
}

impl Loop {
    /// Answers everything the session wrote, feeding each reply back (which may make it write
    /// more), until it has nothing left to say.
    fn settle(&mut self, clock: &TscClock) -> anyhow::Result<()> {
        for _ in 0..1_000 {
            if self.written.is_empty() {
                return Ok(());
            }
            self.requests.feed(&self.written);
            if let Some(transcript) = self.transcript.as_mut() {
                transcript.extend_from_slice(&self.written);
            }
            self.written.clear();
            while let Some(message) = self.requests.next_message()? {
                if message.opcode == Opcode::Text {
                    let (reply, got) = self.answers.answer(message.payload)?;
                    if matches!(got, super::venue::Got::Order) {
                        self.orders += 1;
                    }
                    self.replies.push(reply);
                }
            }
            for reply in std::mem::take(&mut self.replies) {
                self.session.offline_frame(reply.as_bytes(), clock.raw(), &mut self.written);
            }
        }
        bail!("the session and the venue kept answering each other")
    }
}

fn pass(
    spec: &InstrumentSpec,
    feed: &SyntheticFeed,
    clock: &TscClock,
    options: RunOptions,
    evict: usize,
    keep_transcript: bool,
) -> anyhow::Result<(Recorded, Vec<u8>)> {
    let (stamps_tx, stamps_rx) = spsc_ring(1 << 16);
    let recorder = spawn_recorder(stamps_rx, None)?;
    let target = Target {
        url: "ws://in-memory/ws/api/v2".into(),
        roots: TlsRoots::Webpki,
        credentials: Credentials { client_id: "bench".into(), client_secret: Secret::new("bench") },
        stop_after_orders: None,
        floor: false,
    };
    let mut io = Loop {
        session: new_session(spec, &target, options, StopHandle::default(), stamps_tx)?,
        answers: Answers::new(),
        requests: WsReader::new(Role::Server, 1 << 16),
        written: Vec::with_capacity(1 << 16),
        replies: Vec::new(),
        orders: 0,
        transcript: keep_transcript.then(Vec::new),
    };
    io.session.offline_connect(&mut io.written);
    io.settle(clock)?;
    if !io.answers.reconciled {
        bail!("the session did not reconcile against the in-memory venue");
    }
    io.session.offline_frame(&feed.snapshot, clock.raw(), &mut io.written);
    io.settle(clock)?;
    if !io.session.is_live() {
        bail!("the session is not live after the snapshot");
    }

    let mut garbage = vec![0u8; evict];
    let mut read_buf = Vec::with_capacity(4096);
    let mut sweep = 0u8;
    for frame in &feed.changes {
        io.session.offline_idle();
        if evict > 0 {
            sweep = sweep.wrapping_add(1);
            for line in garbage.iter_mut().step_by(64) {
                *line = sweep;
            }
            std::hint::black_box(garbage.as_ptr());
        }
        read_buf.clear();
        read_buf.extend_from_slice(frame);
        io.session.offline_frame(&read_buf, clock.raw(), &mut io.written);
        io.settle(clock)?;
    }
    if io.orders == 0 {
        bail!("the session sent no order in memory");
    }
    let transcript = io.transcript.take().unwrap_or_default();
    drop(io);
    let recorded = recorder.join().map_err(|_| anyhow!("recorder thread panicked"))?;
    Ok((recorded, transcript))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::tick_to_trade::exchange::Pace;
    use ticktrade_gateway::hot::feed::btc_perpetual;

    /// The busy-poll warm-up between ticks (`Session::offline_idle`, what the socket loop runs on
    /// an empty read) changes nothing the session sends: the same frames give the same bytes,
    /// masks, request ids and labels included, with and without it.
    #[test]
    fn warming_up_between_ticks_changes_nothing_sent() {
        let spec = btc_perpetual().unwrap();
        let feed = SyntheticFeed::generate(&spec, 400, 3);
        let clock = TscClock::new();
        let options = RunOptions {
            tls: false,
            risk: true,
            every: 1,
            floor_every: 4,
            reply_timeout: std::time::Duration::from_millis(1),
            pin_core: None,
            pause: Pace::Reply,
            gap: std::time::Duration::from_micros(50),
            busy_poll: false,
        };
        let (cold, cold_sent) = pass(&spec, &feed, &clock, options, 0, true).unwrap();
        let (warm, warm_sent) = pass(&spec, &feed, &clock, RunOptions { busy_poll: true, ..options }, 0, true).unwrap();
        assert!(cold_sent.len() > 400 * 100, "{} bytes sent", cold_sent.len());
        assert!(cold_sent == warm_sent, "the warmed session sent different bytes");
        assert_eq!(cold.tick_to_encoded.count(), warm.tick_to_encoded.count());
    }
}
