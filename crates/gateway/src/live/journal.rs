//! The session's record of what it did, kept off the hot thread: a JSONL journal of every order
//! event (for audit), the once-a-second status line, and the latency histograms of the final
//! report.
//!
//! Owns: [`Entry`] (a `Copy` record the hot thread pushes into a bounded ring), [`Journaled`]
//! (a strategy wrapper that records every order event and fill the strategy is told of), and
//! the observer thread ([`spawn_observer`]) that drains the journal and stamp rings, writes the
//! journal file, prints the status line and keeps the histograms.
//! Must not: lose a journal entry (the hot thread waits for room instead: an audit trail with
//! holes is worse than a late tick), allocate or format on the hot thread, or print a secret
//! (no entry carries one).

use std::io::Write;
use std::path::PathBuf;
use std::thread::JoinHandle;
use std::time::Duration;

use ticktrade_book::L2Book;
use ticktrade_core::{Decimal, InstrumentId, Mono, Qty, Side};
use ticktrade_latency::{Histogram, RingConsumer, RingProducer, Stamps, spsc_ring};
use ticktrade_strategy::{Action, Blocked, Context, FillReport, Label, Order, OrderEvent, Strategy, Trade};

use crate::hot::Recorded;

/// A connection event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Link {
    Connected,
    /// Books resynced, private channels confirmed, orders reconciled: trading resumes.
    Live,
    /// Trading paused (a book went stale or silent).
    Paused,
    Disconnected,
}

/// One journal record. Times are the session clock's `Mono`; the observer turns them into
/// wall-clock time with the anchor it was given.
#[derive(Clone, Copy, Debug)]
pub enum Entry {
    /// A request left (or, with `dry_run`, would have left) the process.
    Sent {
        at: Mono,
        action: Action,
        dry_run: bool,
    },
    /// A closing order of `--flatten`.
    Flatten {
        at: Mono,
        instrument: InstrumentId,
        side: Side,
        qty: Qty,
    },
    Order {
        at: Mono,
        order: Order,
        event: OrderEvent,
    },
    Fill {
        at: Mono,
        fill: FillReport,
    },
    Link {
        at: Mono,
        link: Link,
    },
    Kill {
        at: Mono,
        why: Blocked,
    },
    /// A report the session could not use (unknown instrument, malformed), with what it was.
    Dropped {
        at: Mono,
        what: &'static str,
    },
    /// A report of an order this session does not own (another client on the same account):
    /// left alone, and recorded so that the audit trail shows it arrived.
    NotOurs {
        at: Mono,
        label: Label,
    },
    /// The once-a-second snapshot behind the status line (not written to the journal).
    Status(Status),
}

/// What the status line shows.
#[derive(Clone, Copy, Debug, Default)]
pub struct Status {
    pub at: Mono,
    /// Position of the first instrument, in lots, and its PnL in its PnL currency.
    pub position: i64,
    pub pnl: Option<Decimal>,
    pub open_orders: u32,
    pub orders_sent: u64,
    pub fills: u64,
    pub live: bool,
}

/// Pushes `entry`, waiting for room if the observer is behind (never drops).
pub fn push(ring: &mut RingProducer<Entry>, entry: Entry) {
    let mut entry = entry;
    while let Err(back) = ring.try_push(entry) {
        if ring.is_abandoned() {
            return;
        }
        entry = back;
        std::thread::yield_now();
    }
}

/// A strategy whose order events and fills are journaled before it sees them.
pub struct Journaled<S> {
    pub inner: S,
    ring: Option<RingProducer<Entry>>,
    /// Fills the strategy was told of (each trade once).
    pub fills: u64,
}

impl<S> Journaled<S> {
    pub fn new(inner: S, ring: Option<RingProducer<Entry>>) -> Journaled<S> {
        Journaled { inner, ring, fills: 0 }
    }

    /// The journal ring, for the session's own entries.
    pub fn ring(&mut self) -> Option<&mut RingProducer<Entry>> {
        self.ring.as_mut()
    }

    pub fn record(&mut self, entry: Entry) {
        if let Some(ring) = self.ring.as_mut() {
            push(ring, entry);
        }
    }
}

impl<S: Strategy> Strategy for Journaled<S> {
    fn on_book(&mut self, ctx: &mut Context<'_>, instrument: InstrumentId, book: &L2Book) {
        self.inner.on_book(ctx, instrument, book);
    }
    fn on_trade(&mut self, ctx: &mut Context<'_>, trade: &Trade) {
        self.inner.on_trade(ctx, trade);
    }
    fn on_order(&mut self, ctx: &mut Context<'_>, order: &Order, event: OrderEvent) {
        self.record(Entry::Order { at: ctx.now(), order: *order, event });
        self.inner.on_order(ctx, order, event);
    }
    fn on_fill(&mut self, ctx: &mut Context<'_>, fill: &FillReport) {
        self.fills += 1;
        self.record(Entry::Fill { at: ctx.now(), fill: *fill });
        self.inner.on_fill(ctx, fill);
    }
    fn on_timer(&mut self, ctx: &mut Context<'_>) {
        self.inner.on_timer(ctx);
    }
}

/// Where the observer writes.
#[derive(Clone, Debug, Default)]
pub struct ObserverConfig {
    pub journal: Option<PathBuf>,
    /// Print the status line to stderr once a second.
    pub status: bool,
    /// Instrument names by id, for the journal.
    pub instruments: Vec<String>,
    /// A (`Mono`, Unix ns) pair taken together, to date entries.
    pub anchor: (Mono, i64),
}

/// What the observer saw, for the final report.
#[derive(Debug, Default)]
pub struct Observed {
    pub recorded: Recorded,
    pub entries: u64,
    pub orders_sent: u64,
    pub fills: u64,
    pub rejects: u64,
    pub journal_error: Option<String>,
}

/// The rings the session writes into and the observer thread that reads them.
pub struct Observer {
    pub journal: RingProducer<Entry>,
    pub stamps: RingProducer<Stamps>,
    pub handle: JoinHandle<Observed>,
}

/// Starts the observer thread. Drop both producers (end the session), then join `handle`.
pub fn spawn_observer(config: ObserverConfig) -> std::io::Result<Observer> {
    // Sized for bursts the observer drains every few ms: the journal ring waits when full
    // (nothing is lost), the stamp ring drops and counts. 8 192 entries of ≈300 bytes and
    // 16 384 stamps of 64 bytes are 3.5 MB, most of a session's heap.
    let (journal_tx, journal_rx) = spsc_ring::<Entry>(1 << 13);
    let (stamps_tx, stamps_rx) = spsc_ring::<Stamps>(1 << 14);
    let file = match &config.journal {
        Some(path) => Some(std::io::BufWriter::new(std::fs::File::create(path)?)),
        None => None,
    };
    let handle = std::thread::Builder::new()
        .name("tt-observer".into())
        .spawn(move || observe(config, file, journal_rx, stamps_rx))?;
    Ok(Observer { journal: journal_tx, stamps: stamps_tx, handle })
}

fn observe(
    config: ObserverConfig,
    mut file: Option<std::io::BufWriter<std::fs::File>>,
    mut journal: RingConsumer<Entry>,
    mut stamps: RingConsumer<Stamps>,
) -> Observed {
    let mut observed = Observed::default();
    let mut second = Histogram::new();
    let mut last: Option<Status> = None;
    let mut line = String::with_capacity(256);
    loop {
        let done = journal.is_abandoned() && stamps.is_abandoned();
        let mut n = stamps.drain(|s| {
            observed.recorded.record(&s);
            if let Some(ns) = s.tick_to_trade_ns() {
                second.record(ns);
            }
        });
        n += journal.drain(|entry| {
            observed.entries += 1;
            match entry {
                Entry::Sent { action, .. } if !action.is_cancel() => observed.orders_sent += 1,
                Entry::Fill { .. } => observed.fills += 1,
                Entry::Order { event: OrderEvent::Rejected, .. } => observed.rejects += 1,
                Entry::Status(status) => {
                    if config.status {
                        eprintln!("{}", status_line(&status, last.as_ref(), &second));
                    }
                    second.reset();
                    last = Some(status);
                    return;
                }
                _ => {}
            }
            if let Some(out) = file.as_mut() {
                line.clear();
                write_entry(&mut line, &entry, &config);
                line.push('\n');
                if let Err(error) = out.write_all(line.as_bytes()) {
                    observed.journal_error.get_or_insert_with(|| error.to_string());
                }
            }
        });
        if n > 0
            && let Some(out) = file.as_mut()
            && let Err(error) = out.flush()
        {
            observed.journal_error.get_or_insert_with(|| error.to_string());
        }
        if done {
            break;
        }
        if n == 0 {
            std::thread::sleep(Duration::from_millis(2));
        }
    }
    observed
}

fn status_line(now: &Status, before: Option<&Status>, second: &Histogram) -> String {
    let secs = before.map_or(0.0, |b| now.at.since(b.at) as f64 / 1e9).max(1e-9);
    let rate = |a: u64, b: u64| if before.is_some() { (a.saturating_sub(b)) as f64 / secs } else { 0.0 };
    let orders = rate(now.orders_sent, before.map_or(0, |b| b.orders_sent));
    let fills = rate(now.fills, before.map_or(0, |b| b.fills));
    let pnl = now.pnl.map_or_else(|| "-".to_owned(), |p| p.to_string());
    let latency = if second.is_empty() {
        "tick-to-trade -".to_owned()
    } else {
        format!(
            "tick-to-trade p50 {:.1} µs p99 {:.1} µs",
            second.value_at_quantile(0.5) as f64 / 1e3,
            second.value_at_quantile(0.99) as f64 / 1e3
        )
    };
    format!(
        "{} position {} pnl {} open {} orders/s {:.1} fills/s {:.1} {}",
        if now.live { "live  " } else { "paused" },
        now.position,
        pnl,
        now.open_orders,
        orders,
        fills,
        latency
    )
}

fn write_entry(out: &mut String, entry: &Entry, config: &ObserverConfig) {
    use std::fmt::Write as _;
    let ts = |at: Mono| config.anchor.1.saturating_add(at.0 as i64 - config.anchor.0.0 as i64);
    let name = |id: InstrumentId| config.instruments.get(id.0 as usize).map_or("?", String::as_str);
    let side = |s: Side| match s {
        Side::Buy => "buy",
        Side::Sell => "sell",
    };
    // Labels, ids and instrument names are [A-Za-z0-9_.:-] (checked when they were made or
    // decoded), so they are written without escaping; `{:?}` would quote and escape anyway.
    let _ = match *entry {
        Entry::Sent { at, action, dry_run } => {
            let _ = write!(out, r#"{{"ts_ns":{},"event":"{}""#, ts(at), if dry_run { "would_send" } else { "sent" });
            match action {
                Action::Place { label, order } => write!(
                    out,
                    r#","request":"place","label":{:?},"instrument":{:?},"side":"{}","price_ticks":{},"qty_lots":{},"post_only":{},"reduce_only":{}}}"#,
                    label.as_str(),
                    name(order.instrument),
                    side(order.side),
                    order.price.raw(),
                    order.qty.raw(),
                    order.post_only,
                    order.reduce_only
                ),
                Action::Edit { label, instrument, price, qty, .. } => write!(
                    out,
                    r#","request":"edit","label":{:?},"instrument":{:?},"price_ticks":{},"qty_lots":{}}}"#,
                    label.as_str(),
                    name(instrument),
                    price.raw(),
                    qty.raw()
                ),
                Action::Cancel { label, instrument, .. } => write!(
                    out,
                    r#","request":"cancel","label":{:?},"instrument":{:?}}}"#,
                    label.as_str(),
                    name(instrument)
                ),
                Action::CancelAll { instrument } => match instrument {
                    Some(i) => write!(out, r#","request":"cancel_all","instrument":{:?}}}"#, name(i)),
                    None => write!(out, r#","request":"cancel_all"}}"#),
                },
            }
        }
        Entry::Flatten { at, instrument, side: s, qty } => write!(
            out,
            r#"{{"ts_ns":{},"event":"sent","request":"flatten","instrument":{:?},"side":"{}","qty_lots":{}}}"#,
            ts(at),
            name(instrument),
            side(s),
            qty.raw()
        ),
        Entry::Order { at, order, event } => {
            let _ = write!(
                out,
                r#"{{"ts_ns":{},"event":"order","change":"{:?}","label":{:?},"order_id":{:?},"instrument":{:?},"side":"{}","price_ticks":{},"qty_lots":{},"filled_lots":{},"status":"{:?}""#,
                ts(at),
                event,
                order.label.as_str(),
                order.venue_id.as_str(),
                name(order.instrument),
                side(order.side),
                order.price.raw(),
                order.qty.raw(),
                order.filled().raw(),
                order.status
            );
            if let Some(reason) = order.reason {
                let _ = write!(out, r#","reason_code":{},"reason":{:?}"#, reason.code, reason.text.as_str());
            }
            write!(out, "}}")
        }
        Entry::Fill { at, fill } => write!(
            out,
            r#"{{"ts_ns":{},"event":"fill","trade_id":{:?},"label":{:?},"instrument":{:?},"side":"{}","price_ticks":{},"qty_lots":{}}}"#,
            ts(at),
            fill.trade_id.as_str(),
            fill.label.as_str(),
            name(fill.instrument),
            side(fill.side),
            fill.price.raw(),
            fill.qty.raw()
        ),
        Entry::Link { at, link } => write!(out, r#"{{"ts_ns":{},"event":"link","state":"{:?}"}}"#, ts(at), link),
        Entry::Kill { at, why } => {
            write!(out, r#"{{"ts_ns":{},"event":"kill_switch","why":{:?}}}"#, ts(at), why.to_string())
        }
        Entry::Dropped { at, what } => write!(out, r#"{{"ts_ns":{},"event":"dropped","what":{:?}}}"#, ts(at), what),
        Entry::NotOurs { at, label } => {
            write!(out, r#"{{"ts_ns":{},"event":"not_ours","label":{:?}}}"#, ts(at), label.as_str())
        }
        Entry::Status(_) => Ok(()),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use ticktrade_core::Price;
    use ticktrade_strategy::OrderRequest;

    #[test]
    fn journal_lines_are_json() {
        let config = ObserverConfig {
            instruments: vec!["BTC-PERPETUAL".into()],
            anchor: (Mono(0), 1_000),
            ..Default::default()
        };
        let label = Label::try_from_str("tt-1a2b-7").unwrap();
        let order = OrderRequest::limit(InstrumentId(0), Side::Buy, Price::from_raw(120_000), Qty::from_raw(1));
        let entries = [
            Entry::Sent { at: Mono(5), action: Action::Place { label, order }, dry_run: false },
            Entry::Sent { at: Mono(6), action: Action::CancelAll { instrument: None }, dry_run: true },
            Entry::Link { at: Mono(7), link: Link::Live },
            Entry::Kill { at: Mono(8), why: Blocked::Killed },
        ];
        for entry in entries {
            let mut line = String::new();
            write_entry(&mut line, &entry, &config);
            let value: serde_json::Value = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line}: {e}"));
            assert!(value["ts_ns"].as_i64().unwrap() > 1_000, "{line}");
        }
    }
}

#[cfg(test)]
mod size {
    #[test]
    fn an_entry_is_a_few_hundred_bytes() {
        // The ring's memory is capacity × this; keep the module doc's figure true.
        let size = std::mem::size_of::<super::Entry>();
        assert!((200..=320).contains(&size), "Entry is {size} bytes");
    }
}
