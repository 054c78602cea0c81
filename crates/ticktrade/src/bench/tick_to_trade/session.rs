//! The product under the benchmark: `ticktrade_gateway::live::Session` — the same session,
//! order state and risk checks `ticktrade run` uses — against the in-process venue, plain or
//! TLS, with the risk checks on (the template's limits, order rate opened up) or off.
//!
//! Owns: the benchmark's strategy (`Requote`: one action per tick, an edit of its resting bid,
//! or a place when it has none, so every tick exercises risk, encode, write and an
//! acknowledgement) and the wiring of one run.
//! Must not: time anything itself; the stamps come from the session's ring.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use ticktrade_book::L2Book;
use ticktrade_core::{InstrumentId, InstrumentSpec, Price, Qty, Side};
use ticktrade_gateway::hot::feed::SyntheticFeed;
use ticktrade_gateway::hot::{Recorded, pin_current_thread, spawn_recorder};
use ticktrade_gateway::live::{LiveConfig, LiveStats, Session, StopHandle};
use ticktrade_gateway::venue::{Credentials, Secret};
use ticktrade_latency::{RingProducer, Stamps, TscClock, spsc_ring};
use ticktrade_net::hot::{HotOptions, TlsRoots};
use ticktrade_strategy::{Config, Context, Label, OrderRequest, Strategy};

use super::venue::{Venue, VenueConfig, VenueReport};

/// One action per `every`-th tick: move the resting bid between 5 and 6 ticks under the best
/// bid (an edit), or place it when there is none.
pub(crate) struct Requote {
    instrument: InstrumentId,
    qty: Qty,
    every: u32,
    seen: u32,
    label: Option<Label>,
    flip: bool,
}

impl Strategy for Requote {
    fn on_book(&mut self, ctx: &mut Context<'_>, instrument: InstrumentId, book: &L2Book) {
        if instrument != self.instrument {
            return;
        }
        self.seen += 1;
        if !self.seen.is_multiple_of(self.every) {
            return;
        }
        let Some(bid) = book.best_bid() else { return };
        self.flip = !self.flip;
        let price = Price::from_raw(bid.price.raw() - 5 - i64::from(self.flip));
        match self.label.and_then(|l| ctx.order(&l).copied()).filter(|o| o.status.is_live()) {
            Some(order) => {
                let _ = ctx.edit(order.label, price, self.qty);
            }
            None => {
                let order =
                    OrderRequest { post_only: true, ..OrderRequest::limit(instrument, Side::Buy, price, self.qty) };
                if let Ok(label) = ctx.place(order) {
                    self.label = Some(label);
                }
            }
        }
    }
}

/// What one run measured.
pub(crate) struct SessionRun {
    pub(crate) recorded: Recorded,
    pub(crate) venue: VenueReport,
    pub(crate) stats: LiveStats,
    pub(crate) pinned: bool,
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct RunOptions {
    pub(crate) tls: bool,
    pub(crate) risk: bool,
    pub(crate) every: u32,
    pub(crate) floor_every: u32,
    pub(crate) reply_timeout: Duration,
    pub(crate) pin_core: Option<usize>,
    pub(crate) pause: super::exchange::Pace,
    pub(crate) gap: Duration,
    /// The session polls its socket in a loop (`run --busy-poll`).
    pub(crate) busy_poll: bool,
}

/// One run against the in-process venue, which publishes `feed` closed-loop.
pub(crate) fn run(
    spec: &InstrumentSpec,
    feed: &Arc<SyntheticFeed>,
    clock: &TscClock,
    options: RunOptions,
) -> anyhow::Result<SessionRun> {
    let stop = StopHandle::default();
    let venue = Venue::spawn(
        Arc::clone(feed),
        clock.clone(),
        VenueConfig {
            ticks: feed.changes.len(),
            floor_every: options.floor_every,
            reply_timeout: options.reply_timeout,
            tls: options.tls,
            pause: options.pause,
            gap: options.gap,
        },
        stop.clone(),
    )?;
    let dir = tempfile::tempdir()?;
    let roots = match &venue.cert_pem {
        Some(pem) => {
            let path = dir.path().join("bench-venue.pem");
            std::fs::write(&path, pem)?;
            TlsRoots::File(path)
        }
        None => TlsRoots::Webpki,
    };
    let credentials = Credentials { client_id: "bench".into(), client_secret: Secret::new("bench") };
    let target = Target { url: venue.url.clone(), roots, credentials, stop_after_orders: None, floor: true };
    let (stats, recorded, pinned) = drive(spec, &target, options, stop)?;
    let venue = venue.join()?;
    Ok(SessionRun { recorded, venue, stats, pinned })
}

/// Where a run goes.
pub(crate) struct Target {
    pub(crate) url: String,
    pub(crate) roots: TlsRoots,
    pub(crate) credentials: Credentials,
    /// Stop once this many orders (places and edits) were sent.
    pub(crate) stop_after_orders: Option<u64>,
    /// Answer floor probes (the in-process venue sends them).
    pub(crate) floor: bool,
}

/// Runs the live session with `Requote` against `target` until `stop` (or the order count).
pub(crate) fn drive(
    spec: &InstrumentSpec,
    target: &Target,
    options: RunOptions,
    stop: StopHandle,
) -> anyhow::Result<(LiveStats, Recorded, bool)> {
    let (stamps_tx, stamps_rx) = spsc_ring(1 << 16);
    let (floor_tx, floor_rx) = spsc_ring(1 << 14);
    let recorder = spawn_recorder(stamps_rx, target.floor.then_some(floor_rx))?;
    let mut session = new_session(spec, target, options, stop, stamps_tx)?;
    if target.floor {
        session.set_floor_probe(floor_tx);
    }
    let pinned = options.pin_core.is_some_and(pin_current_thread);
    session.start().with_context(|| format!("connecting to {}", target.url))?;
    while !session.poll()? {}
    let report = session.finish();
    drop(session);
    let recorded = recorder.join().map_err(|_| anyhow!("recorder thread panicked"))?;
    Ok((report.stats, recorded, pinned))
}

/// The session every pass of the benchmark runs: `Requote` on `spec`, the template's risk
/// limits (or none), stamps to `stamps`.
pub(crate) fn new_session(
    spec: &InstrumentSpec,
    target: &Target,
    options: RunOptions,
    stop: StopHandle,
    stamps: RingProducer<Stamps>,
) -> anyhow::Result<Session<Requote>> {
    // The template's limits (every check but the loss limit on), with the order rate opened
    // up to 100 000 a second (10 000 per 100 ms: the rate check keeps one time per order of
    // the window, so the window stays small): the feed is closed-loop, one action per tick.
    let mut config = Config::parse(ticktrade_strategy::template()).map_err(|e| anyhow!("template: {e}"))?;
    config.risk.max_orders_per_window = Some(10_000);
    config.risk.rate_window_ms = 100;
    config.risk.max_open_orders = Some(10);
    for limits in &mut config.risk.instrument {
        limits.max_loss = None;
    }
    let mut setup = config.validate(std::slice::from_ref(spec)).map_err(|e| anyhow!("bench config: {e}"))?;
    if !options.risk {
        let n = setup.specs.len();
        setup.limits = ticktrade_strategy::Limits {
            instruments: vec![Default::default(); n],
            ..ticktrade_strategy::Limits::default()
        };
    }
    let outbox = setup.outbox;
    let (_builtin, parts) = setup.into_parts(0xbe4c).map_err(|e| anyhow!("bench config: {e}"))?;
    let strategy = Requote {
        instrument: InstrumentId(0),
        qty: Qty::from_raw(1),
        every: options.every.max(1),
        seen: 0,
        label: None,
        flip: false,
    };

    let mut live = LiveConfig::new(target.url.clone());
    live.connect = HotOptions { roots: target.roots.clone(), ..HotOptions::default() };
    live.credentials = Some(target.credentials.clone());
    live.send_secret = true;
    live.rate_limits = ticktrade_deribit_proto::ratelimit::RateLimits::unlimited();
    live.adopt_account_limits = false;
    live.status_every = None;
    live.stale_after = Duration::from_secs(3600);
    live.stop_after_orders = target.stop_after_orders;
    live.busy_poll = options.busy_poll;
    Ok(Session::new(live, strategy, parts, outbox, None, Some(stamps), stop))
}
