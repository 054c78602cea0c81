//! `ticktrade bench order`: the cost of sending one order and the round trip to its
//! acknowledgement, on loopback, against `acker::Acker` (a minimal
//! in-process venue answering each request at once with Deribit's envelope and `usIn`/`usOut`;
//! the simulator does not serve private methods on a blocking loopback socket yet).
//!
//! Owns: the series `order_call_to_encoded` (send entered → frame encoded, masked, ready),
//! `order_call_to_write` (→ write returned), `write_floor` (a bare write of the same bytes on
//! the same socket, same run), `order_round_trip` (write returned → ack read) and its split with
//! `usIn`/`usOut` (`order_rt_to_venue`, `order_rt_in_venue`, `order_rt_from_venue`, µs
//! resolution, one system clock on both ends), each beside the plain baseline (`baseline`:
//! tokio + tungstenite, `format!`, serde_json `Value` for the ack) measured in the same run.
//! Closed loop by default (the next order as soon as the ack is read); `--gap-us N` idles
//! between an ack and the next order.
//! Must not: time with a different clock on the two sides of a span.

mod acker;
mod baseline;
mod client;
mod frame;

use std::process::ExitCode;
use std::time::Duration;

use acker::Acker;
use anyhow::{Context, anyhow, bail};
use client::OrderClient;
use ticktrade_core::{Clock, Price, Qty, Side};
use ticktrade_deribit_proto::order::{LimitOrder, OrderLabel};
use ticktrade_gateway::hot::feed::btc_perpetual;
use ticktrade_latency::{Histogram, RawTicks, Series, TscClock};
use ticktrade_net::handshake;

use super::tick_to_trade::emit;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Orders to send (each waits for its ack before the next: a closed loop).
    #[arg(long, default_value_t = 20_000, value_parser = clap::value_parser!(u64).range(100..=10_000_000))]
    pub orders: u64,
    /// Pause between an ack and the next order, in µs (a `thread::sleep`). 0 (the default): the
    /// next order as soon as the ack is read, like `bench tick-to-trade`'s closed loop; 50 is
    /// the gap-paced method of the figures before 2026-11-26 (the thread idles and wakes cold).
    #[arg(long, default_value_t = 0)]
    pub gap_us: u64,
    /// After every N orders, time a bare write of the last order's bytes (`write_floor`).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..))]
    pub floor_every: u32,
    /// Pin the sending thread to this core index.
    #[arg(long)]
    pub pin_core: Option<usize>,
    /// Print one JSON object per series per line on stdout (the table goes to stderr).
    #[arg(long)]
    pub json: bool,
    /// Write a latency-vs-percentile plot to this SVG file.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<std::path::PathBuf>,
}

/// Histograms of one side of the comparison.
#[derive(Default)]
pub(crate) struct OrderResult {
    pub(crate) call_to_encoded: Histogram,
    pub(crate) call_to_write: Histogram,
    pub(crate) round_trip: Histogram,
    /// send entered → ack read: the whole exchange as the caller sees it.
    pub(crate) call_to_ack: Histogram,
    pub(crate) to_venue: Histogram,
    pub(crate) in_venue: Histogram,
    pub(crate) from_venue: Histogram,
    pub(crate) write_floor: Histogram,
}

impl OrderResult {
    /// Records the venue split of one round trip; `written_utc`/`received_utc` in ns.
    pub(crate) fn record_split(
        &mut self,
        written_utc: i64,
        received_utc: i64,
        us_in: Option<u64>,
        us_out: Option<u64>,
    ) {
        let (Some(us_in), Some(us_out)) = (us_in, us_out) else { return };
        let ns = |us: u64| i64::try_from(us).unwrap_or(i64::MAX / 1000).saturating_mul(1000);
        let (vin, vout) = (ns(us_in), ns(us_out));
        self.to_venue.record(vin.saturating_sub(written_utc).max(0).unsigned_abs());
        self.in_venue.record(vout.saturating_sub(vin).max(0).unsigned_abs());
        self.from_venue.record(received_utc.saturating_sub(vout).max(0).unsigned_abs());
    }
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let clock = TscClock::new();
    let gap = Duration::from_micros(args.gap_us);
    let hot = run_hot(&args, &clock, gap)?;
    let base = baseline::run(&clock, gap, args.orders)?;

    let with = |name: &str, h: &Histogram, b: &Histogram| {
        let series = Series::from_histogram(name, h);
        if b.is_empty() { series } else { series.with_baseline_p50(b.percentiles().p50) }
    };
    let mut series = vec![
        with("order_call_to_encoded", &hot.call_to_encoded, &base.call_to_encoded),
        with("order_call_to_write", &hot.call_to_write, &base.call_to_write),
        Series::from_histogram("write_floor", &hot.write_floor),
        with("order_round_trip", &hot.round_trip, &base.round_trip),
        with("order_call_to_ack", &hot.call_to_ack, &base.call_to_ack),
        with("order_rt_to_venue", &hot.to_venue, &base.to_venue),
        with("order_rt_in_venue", &hot.in_venue, &base.in_venue),
        with("order_rt_from_venue", &hot.from_venue, &base.from_venue),
        Series::from_histogram("baseline_order_call_to_write", &base.call_to_write),
        Series::from_histogram("baseline_order_round_trip", &base.round_trip),
    ];
    series.retain(|s| s.percentiles.count > 0);
    let pacing = if args.gap_us == 0 {
        "closed loop (next order when the ack is read)".to_owned()
    } else {
        format!("gap {}µs after each ack", args.gap_us)
    };
    let mut notes = format!(
        "ticktrade bench order: {} orders on 127.0.0.1 against the in-process acker (not the simulator), \
         {pacing}; baseline: tokio + tungstenite + format! + serde_json Value\n",
        args.orders
    );
    let p50 = |name: &str| series.iter().find(|s| s.name == name).map(|s| s.percentiles.p50);
    if let (Some(write), Some(floor)) = (p50("order_call_to_write"), p50("write_floor")) {
        notes.push_str(&format!(
            "order_call_to_write p50 − write_floor p50 = {} ns\n",
            i128::from(write) - i128::from(floor)
        ));
    }
    emit(&notes, &series, args.json, args.plot.as_deref(), "ticktrade bench order (loopback, in-process acker)")?;
    Ok(ExitCode::SUCCESS)
}

fn run_hot(args: &Args, clock: &TscClock, gap: Duration) -> anyhow::Result<OrderResult> {
    let spec = btc_perpetual().map_err(|e| anyhow!("spec: {e}"))?;
    let acker = Acker::spawn()?;
    let (stream, reader) = handshake::connect(acker.addr, "127.0.0.1", "/ws/api/v2")?;
    let mut client = OrderClient::new(stream, reader, &spec, clock.clone());
    if let Some(core) = args.pin_core
        && !ticktrade_gateway::hot::pin_current_thread(core)
    {
        bail!("could not pin to core {core}");
    }
    let anchor_mono = clock.mono().0 as i64;
    let anchor_utc = clock.utc().0;
    let utc_of = |raw: RawTicks| anchor_utc + (clock.to_mono(raw).0 as i64 - anchor_mono);
    // The stamps are kept raw and turned into histograms after the run, so that the bench's
    // own bookkeeping (eight histogram updates per order) does not run between an ack and the
    // next `send` and evict the client's working set.
    let warm = 1_000u64;
    let orders = usize::try_from(args.orders).context("--orders")?;
    let mut sends = Vec::with_capacity(orders);
    let mut floors = Vec::with_capacity(orders / args.floor_every as usize + 1);
    for i in 0..args.orders + warm {
        if !gap.is_zero() {
            std::thread::sleep(gap);
        }
        let order = LimitOrder {
            side: Side::Buy,
            price: Price::from_raw(120_000 + (i % 64) as i64),
            qty: Qty::from_raw(1),
            post_only: true,
            label: OrderLabel { recv_utc_ns: anchor_utc, change_id: i },
        };
        let sent = client.send(&order).context("send")?;
        let ack = client.wait_ack().context("ack")?;
        if ack.id != i64::try_from(sent.id).ok() || !ack.ok {
            bail!("ack {ack:?} does not answer order {}", sent.id);
        }
        if i < warm {
            continue;
        }
        sends.push((sent, ack));
        if (i + 1).is_multiple_of(u64::from(args.floor_every)) {
            if !gap.is_zero() {
                std::thread::sleep(gap);
            }
            floors.push(client.rewrite_last()?);
            client.wait_ack().context("ack of the floor write")?;
        }
    }
    let mut result = OrderResult::default();
    for (sent, ack) in sends {
        result.call_to_encoded.record(clock.nanos_between(sent.called, sent.encoded));
        result.call_to_write.record(clock.nanos_between(sent.called, sent.written));
        result.round_trip.record(clock.nanos_between(sent.written, ack.received));
        result.call_to_ack.record(clock.nanos_between(sent.called, ack.received));
        result.record_split(utc_of(sent.written), utc_of(ack.received), ack.us_in, ack.us_out);
    }
    for floor in floors {
        result.write_floor.record(floor);
    }
    drop(client);
    acker.join()?;
    Ok(result)
}
