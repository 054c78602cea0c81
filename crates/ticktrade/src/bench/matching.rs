//! `ticktrade bench match`: order operations per second through `ticktrade-exchange` on a
//! BTC-PERPETUAL book ~500 levels deep per side, beside the naive linear-scan matcher
//! (`ticktrade_exchange::naive`) on the same seeded operation stream in the same run.
//!
//! Owns: the seeded workload (passive places near the top, cancels, edits that keep or lose
//! priority, IOC and market orders that sweep a few levels), timing (`Instant`: this is the
//! I/O side), the end-state equality check and the output.
//! Must not: change what it measures between runs: the stream depends only on `--seed`.
//!
//! Operations are timed per batch of `BATCH`, so the table shows the spread of ns/op over every
//! batch of every pass. `--json` prints the summary object first (`ticktrade_ops_per_sec`,
//! `baseline_ops_per_sec`, `ratio`, …), then one line per series (`match_op` beside
//! `match_naive_op`, `match_book_l4` beside `match_book_btreemap`).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, bail};
use ticktrade_book::l4::L4Book;
use ticktrade_core::{Decimal, InstrumentId, Price, Qty, Side, SplitMix64, Utc};
use ticktrade_exchange::naive::{NaiveKind, NaiveMatcher};
use ticktrade_exchange::{
    AccountId, Catalogue, CatalogueParams, Config, EditParams, Event, Exchange, OrderType, PlaceParams, Request,
    SynthConfig, SynthMarket, TimeInForce,
};

use super::report::{Outcome, Output, emit_outcome, series_of_samples};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    output: Output,
    /// Timed order operations per pass (place, cancel, edit, aggressive).
    #[arg(long, default_value_t = 1_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    ops: u64,
    /// Timed passes of each matcher; the median is reported.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..))]
    passes: u64,
    /// Timed passes of the naive baseline (slow: ~17 µs/op); the median is reported.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..))]
    baseline_passes: u64,
    /// Workload seed.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Simulated seconds of the synthetic-market figure.
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(i64).range(1..=600))]
    synth_seconds: i64,
}

/// Operations timed together for one ns/op sample.
const BATCH: usize = 1024;

/// Runs `op` over `ops` in batches of `BATCH`; adds each batch's ns/op to `per_batch` and
/// returns the total ns and the number of ops `op` accepted.
fn time_ops(ops: &[Op], per_batch: &mut Vec<f64>, mut op: impl FnMut(&Op) -> bool) -> (f64, usize) {
    let (mut total, mut n_ok) = (0u128, 0usize);
    for batch in ops.chunks(BATCH) {
        let start = Instant::now();
        for o in batch {
            n_ok += usize::from(op(black_box(o)));
        }
        let ns = start.elapsed().as_nanos();
        total += ns;
        per_batch.push(ns as f64 / batch.len() as f64);
    }
    (total as f64, n_ok)
}

/// Mid price in ticks (50 000 USD at tick 0.5); bids rest below, asks above.
const MID: i64 = 100_000;
/// Price levels per side the workload uses (most of them hold orders at any time).
const DEPTH: i64 = 600;
const MAKERS: u32 = 8;
/// Orders the generator keeps resting (4 per level per side at the start).
const TARGET_ORDERS: usize = 8 * DEPTH as usize;
const TAKERS: u32 = 4;

#[derive(Clone, Copy, Debug)]
enum Op {
    Place { id: u64, account: u32, side: Side, kind: NaiveKind, price: i64, qty: i64 },
    Cancel { id: u64, account: u32 },
    Edit { id: u64, account: u32, price: i64, qty: i64 },
}

struct Workload {
    setup: Vec<Op>,
    timed: Vec<Op>,
}

fn side_price(side: Side, depth: i64) -> i64 {
    match side {
        Side::Buy => MID - depth,
        Side::Sell => MID + depth,
    }
}

fn generate(n_ops: usize, seed: u64) -> Workload {
    let mut rng = SplitMix64::new(seed);
    let mut next_id = 1u64;
    // The generator follows the book with the naive matcher, so cancels and edits address
    // orders that are still live (as a client's would) and the book keeps its size.
    let mut sim = NaiveMatcher::new();
    let mut fills = Vec::new();
    let mut apply = |sim: &mut NaiveMatcher, op: Op| {
        naive_op(sim, &op, &mut fills);
        op
    };
    let passive = |rng: &mut SplitMix64, next_id: &mut u64, side: Side, depth: i64| {
        let id = *next_id;
        *next_id += 1;
        let account = 1 + rng.below(u64::from(MAKERS)) as u32;
        Op::Place { id, account, side, kind: NaiveKind::Limit, price: side_price(side, depth), qty: rng.range(1, 20) }
    };
    let mut setup = Vec::new();
    for depth in 1..=DEPTH {
        for side in [Side::Buy, Side::Sell] {
            for _ in 0..TARGET_ORDERS / (2 * DEPTH as usize) {
                let op = passive(&mut rng, &mut next_id, side, depth);
                setup.push(apply(&mut sim, op));
            }
        }
    }
    let mut timed = Vec::with_capacity(n_ops);
    while timed.len() < n_ops {
        let side = if rng.below(2) == 0 { Side::Buy } else { Side::Sell };
        let n_live = sim.orders.len();
        let roll = rng.below(100);
        // Below the target size a cancel becomes a place, above it a place becomes a cancel.
        let roll = match roll {
            0..45 if n_live > TARGET_ORDERS => 50,
            45..70 if n_live < TARGET_ORDERS => 0,
            r => r,
        };
        let op = if roll < 45 || n_live < 100 {
            // Passive: half near the top, half anywhere in the ladder.
            let depth = if rng.below(2) == 0 { rng.range(1, DEPTH) } else { rng.range(1, 20) };
            passive(&mut rng, &mut next_id, side, depth)
        } else if roll < 70 {
            let o = sim.orders[rng.below(n_live as u64) as usize];
            Op::Cancel { id: o.id, account: o.account }
        } else if roll < 85 {
            let o = sim.orders[rng.below(n_live as u64) as usize];
            let (price, qty) = if rng.below(2) == 0 {
                (o.price, rng.range(1, o.qty.max(1))) // Same price, smaller: keeps priority.
            } else {
                let depth = ((o.price - MID).abs() + rng.range(-3, 3)).clamp(1, DEPTH);
                (side_price(o.side, depth), rng.range(1, 20))
            };
            Op::Edit { id: o.id, account: o.account, price, qty }
        } else {
            let id = next_id;
            next_id += 1;
            let account = 1 + MAKERS + rng.below(u64::from(TAKERS)) as u32;
            let kind = if rng.below(4) == 0 { NaiveKind::Market } else { NaiveKind::Ioc };
            let price = side_price(side.opposite(), 5);
            Op::Place { id, account, side, kind, price, qty: rng.range(5, 40) }
        };
        timed.push(apply(&mut sim, op));
    }
    Workload { setup, timed }
}

fn price_dec(ticks: i64) -> Decimal {
    Decimal::new(ticks * 5, 1).unwrap_or(Decimal::ZERO)
}

fn amount_dec(lots: i64) -> Decimal {
    Decimal::from_int(lots * 10)
}

fn new_engine() -> anyhow::Result<(Exchange, InstrumentId)> {
    let catalogue = Catalogue::builtin(CatalogueParams::default()).context("catalogue")?;
    let perp = catalogue.lookup("BTC-PERPETUAL").context("BTC-PERPETUAL")?;
    let config = Config {
        initial_balances: vec![("BTC".into(), ticktrade_exchange::Money::from_int(1_000_000_000_000))],
        first_order_id: 1,
        ..Config::default()
    };
    let mut ex = Exchange::new(catalogue, config);
    ex.reserve(perp, 8_192, 1_024);
    Ok((ex, perp))
}

fn engine_op(ex: &mut Exchange, perp: InstrumentId, op: &Op, out: &mut Vec<Event>) -> bool {
    out.clear();
    let now = Utc(0);
    let result = match *op {
        Op::Place { account, side, kind, price, qty, .. } => {
            let base = PlaceParams::limit(perp, side, amount_dec(qty), price_dec(price));
            let params = match kind {
                NaiveKind::Ioc => PlaceParams { time_in_force: TimeInForce::ImmediateOrCancel, ..base },
                NaiveKind::Market => PlaceParams { order_type: OrderType::Market, price: None, ..base },
                _ => base,
            };
            ex.handle(now, AccountId(account), Request::Place(params), out)
        }
        Op::Cancel { id, account } => ex.handle(now, AccountId(account), Request::Cancel { order_id: id }, out),
        Op::Edit { id, account, price, qty } => {
            // Deribit's edit takes the new total amount: filled + the new remaining size.
            let filled = ex.order(id).map_or(0, |o| o.filled.raw());
            let edit = EditParams::new(id, amount_dec(filled + qty), Some(price_dec(price)));
            ex.handle(now, AccountId(account), Request::Edit(edit), out)
        }
    };
    result.is_ok()
}

fn naive_op(m: &mut NaiveMatcher, op: &Op, fills: &mut Vec<ticktrade_exchange::naive::NaiveFill>) -> bool {
    fills.clear();
    match *op {
        Op::Place { id, account, side, kind, price, qty } => {
            m.place(id, account, side, kind, price, qty, fills).is_ok()
        }
        Op::Cancel { id, .. } => m.cancel(id).is_ok(),
        Op::Edit { id, price, qty, .. } => m.edit(id, price, qty, fills).is_ok(),
    }
}

/// Runs the timed ops `passes` times on fresh state; returns (median ns/op, last state), and
/// adds every batch's ns/op to `per_batch`.
fn time_engine(
    w: &Workload,
    passes: usize,
    per_batch: &mut Vec<f64>,
) -> anyhow::Result<(f64, Exchange, InstrumentId, usize)> {
    let mut samples = Vec::new();
    let mut last = None;
    for _ in 0..passes {
        let (mut ex, perp) = new_engine()?;
        let mut out = Vec::with_capacity(4_096);
        for op in &w.setup {
            if !engine_op(&mut ex, perp, op, &mut out) {
                bail!("setup order refused: {op:?}");
            }
        }
        let (ns, n_ok) = time_ops(&w.timed, per_batch, |op| engine_op(&mut ex, perp, op, &mut out));
        samples.push(ns / w.timed.len() as f64);
        last = Some((ex, perp, n_ok));
    }
    let (ex, perp, n_ok) = last.context("no pass ran")?;
    Ok((median(&mut samples), ex, perp, n_ok))
}

fn time_naive(w: &Workload, passes: usize, per_batch: &mut Vec<f64>) -> (f64, NaiveMatcher, usize) {
    let mut samples = Vec::new();
    let mut last = (NaiveMatcher::new(), 0);
    for _ in 0..passes {
        let mut m = NaiveMatcher::new();
        let mut fills = Vec::with_capacity(256);
        for op in &w.setup {
            naive_op(&mut m, op, &mut fills);
        }
        let (ns, n_ok) = time_ops(&w.timed, per_batch, |op| naive_op(&mut m, op, &mut fills));
        samples.push(ns / w.timed.len() as f64);
        last = (m, n_ok);
    }
    (median(&mut samples), last.0, last.1)
}

/// The book layer alone: what matching needs from an order-level book.
trait BookLayer {
    fn add(&mut self, id: u64, side: Side, price: i64, qty: i64);
    fn remove(&mut self, id: u64) -> bool;
    /// Keeps priority only for a same-price size decrease (Deribit's edit rule).
    fn modify(&mut self, id: u64, price: i64, qty: i64) -> bool;
    /// Takes up to `qty` from the oldest order at the best level of `side`: (price, taken).
    fn fill_front(&mut self, side: Side, qty: i64) -> Option<(i64, i64)>;
    fn best(&self, side: Side) -> Option<i64>;
    fn levels(&self, side: Side) -> Vec<(i64, i64, u32)>;
}

impl BookLayer for L4Book<u32> {
    fn add(&mut self, id: u64, side: Side, price: i64, qty: i64) {
        let _ = L4Book::add(self, id, side, Price::from_raw(price), Qty::from_raw(qty), 0);
    }
    fn remove(&mut self, id: u64) -> bool {
        L4Book::remove(self, id).is_some()
    }
    fn modify(&mut self, id: u64, price: i64, qty: i64) -> bool {
        L4Book::modify(self, id, Price::from_raw(price), Qty::from_raw(qty)).is_ok()
    }
    fn fill_front(&mut self, side: Side, qty: i64) -> Option<(i64, i64)> {
        L4Book::fill_front(self, side, Qty::from_raw(qty)).map(|f| (f.price.raw(), f.qty.raw()))
    }
    fn best(&self, side: Side) -> Option<i64> {
        self.best_price(side).map(Price::raw)
    }
    fn levels(&self, side: Side) -> Vec<(i64, i64, u32)> {
        L4Book::levels(self, side).map(|l| (l.price.raw(), l.qty.raw(), l.n_orders)).collect()
    }
}

/// The common textbook layout: `BTreeMap<price, VecDeque<order>>` per side plus an id index.
#[derive(Default)]
struct BTreeBook {
    bids: BTreeMap<i64, VecDeque<(u64, i64)>>,
    asks: BTreeMap<i64, VecDeque<(u64, i64)>>,
    index: HashMap<u64, (Side, i64)>,
}

impl BTreeBook {
    fn side_mut(&mut self, side: Side) -> &mut BTreeMap<i64, VecDeque<(u64, i64)>> {
        if side == Side::Buy { &mut self.bids } else { &mut self.asks }
    }
}

impl BookLayer for BTreeBook {
    fn add(&mut self, id: u64, side: Side, price: i64, qty: i64) {
        self.index.insert(id, (side, price));
        self.side_mut(side).entry(price).or_default().push_back((id, qty));
    }
    fn remove(&mut self, id: u64) -> bool {
        let Some((side, price)) = self.index.remove(&id) else { return false };
        let ladder = self.side_mut(side);
        if let Some(queue) = ladder.get_mut(&price) {
            queue.retain(|o| o.0 != id);
            if queue.is_empty() {
                ladder.remove(&price);
            }
        }
        true
    }
    fn modify(&mut self, id: u64, price: i64, qty: i64) -> bool {
        let Some(&(side, old_price)) = self.index.get(&id) else { return false };
        if price == old_price
            && let Some(order) = self.side_mut(side).get_mut(&price).and_then(|q| q.iter_mut().find(|o| o.0 == id))
            && qty <= order.1
        {
            order.1 = qty;
            return true;
        }
        self.remove(id);
        self.add(id, side, price, qty);
        true
    }
    fn fill_front(&mut self, side: Side, qty: i64) -> Option<(i64, i64)> {
        let ladder = self.side_mut(side);
        let mut entry = if side == Side::Buy { ladder.last_entry()? } else { ladder.first_entry()? };
        let price = *entry.key();
        let queue = entry.get_mut();
        let front = queue.front_mut()?;
        let take = front.1.min(qty);
        front.1 -= take;
        if front.1 == 0 {
            let (id, _) = queue.pop_front()?;
            if queue.is_empty() {
                entry.remove();
            }
            self.index.remove(&id);
        }
        Some((price, take))
    }
    fn best(&self, side: Side) -> Option<i64> {
        if side == Side::Buy { self.bids.keys().next_back().copied() } else { self.asks.keys().next().copied() }
    }
    fn levels(&self, side: Side) -> Vec<(i64, i64, u32)> {
        let level = |(p, q): (&i64, &VecDeque<(u64, i64)>)| (*p, q.iter().map(|o| o.1).sum(), q.len() as u32);
        if side == Side::Buy {
            self.bids.iter().rev().map(level).collect()
        } else {
            self.asks.iter().map(level).collect()
        }
    }
}

fn book_op(book: &mut impl BookLayer, op: &Op) {
    match *op {
        Op::Place { id, side, kind: NaiveKind::Limit, price, qty, .. } => book.add(id, side, price, qty),
        Op::Place { side, kind, price, qty, .. } => {
            let mut left = qty;
            while left > 0 {
                let Some(best) = book.best(side.opposite()) else { break };
                if kind != NaiveKind::Market && !side.crosses(Price::from_raw(price), Price::from_raw(best)) {
                    break;
                }
                let Some((_, taken)) = book.fill_front(side.opposite(), left) else { break };
                left -= taken;
            }
        }
        Op::Cancel { id, .. } => {
            book.remove(id);
        }
        Op::Edit { id, price, qty, .. } => {
            book.modify(id, price, qty);
        }
    }
}

/// Median ns per op of the book layer alone over the timed ops; every batch's ns/op goes to
/// `per_batch`.
fn time_book<B: BookLayer>(w: &Workload, passes: usize, per_batch: &mut Vec<f64>, fresh: impl Fn() -> B) -> (f64, B) {
    let mut samples = Vec::new();
    let mut last = fresh();
    for _ in 0..passes {
        let mut book = fresh();
        for op in &w.setup {
            book_op(&mut book, op);
        }
        let (ns, _) = time_ops(&w.timed, per_batch, |op| {
            book_op(&mut book, op);
            true
        });
        samples.push(ns / w.timed.len() as f64);
        last = book;
    }
    (median(&mut samples), last)
}

/// Book changes per wall-clock second the synthetic market generates across all built-in
/// instruments at 200 000 actions per simulated second (steps of 1 ms).
fn time_synth(seed: u64, synth_seconds: i64) -> anyhow::Result<(f64, u64)> {
    let catalogue = Catalogue::builtin(CatalogueParams::default()).context("catalogue")?;
    let mut ex = Exchange::new(catalogue, Config::default());
    let mut synth = SynthMarket::new(&mut ex, SynthConfig { seed, actions_per_sec: 200_000, ..SynthConfig::default() });
    let mut out = Vec::with_capacity(1 << 16);
    let t0 = Utc::from_millis(1_767_254_400_000);
    synth.step(&mut ex, t0, &mut out); // builds every book, untimed
    let mut changes = 0u64;
    let start = Instant::now();
    for ms in 1..=synth_seconds * 1_000 {
        out.clear();
        changes += synth.step(&mut ex, Utc(t0.0 + ms * 1_000_000), &mut out).book_changes;
    }
    let secs = start.elapsed().as_secs_f64();
    Ok((changes as f64 / secs, changes))
}

fn depth_of(depth: (usize, usize), side: Side) -> usize {
    if side == Side::Buy { depth.0 } else { depth.1 }
}

fn median(samples: &mut [f64]) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples.get(samples.len() / 2).copied().unwrap_or(f64::NAN)
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let n_ops = usize::try_from(args.ops).context("--ops")?;
    let passes = usize::try_from(args.passes).context("--passes")?;
    let baseline_passes = usize::try_from(args.baseline_passes).context("--baseline-passes")?;
    let workload = generate(n_ops, args.seed);
    let mut mix = [0usize; 4];
    for op in &workload.timed {
        mix[match op {
            Op::Place { kind: NaiveKind::Limit, .. } => 0,
            Op::Place { .. } => 3,
            Op::Cancel { .. } => 1,
            Op::Edit { .. } => 2,
        }] += 1;
    }

    let (mut tt_batches, mut base_batches, mut l4_batches, mut btree_batches) = (vec![], vec![], vec![], vec![]);
    let (tt_ns, ex, perp, tt_ok) = time_engine(&workload, passes, &mut tt_batches)?;
    let (base_ns, naive, base_ok) = time_naive(&workload, baseline_passes, &mut base_batches);

    // Same stream, same rules: the books and the accepted-op counts must agree.
    let book = ex.book(perp).context("book")?;
    for side in [Side::Buy, Side::Sell] {
        let ours: Vec<_> = book.levels(side).map(|l| (l.price.raw(), l.qty.raw(), l.n_orders)).collect();
        if ours != naive.levels(side) {
            bail!("ticktrade and the naive matcher disagree on the {side} side");
        }
    }
    if tt_ok != base_ok {
        bail!("accepted operations differ: ticktrade {tt_ok}, naive {base_ok}");
    }
    let depth = (book.depth(Side::Buy), book.depth(Side::Sell));
    let (l4_ns, l4_book) = time_book(&workload, passes, &mut l4_batches, || L4Book::<u32>::with_capacity(8_192, 1_024));
    let (btree_ns, btree_book) = time_book(&workload, passes, &mut btree_batches, BTreeBook::default);
    for side in [Side::Buy, Side::Sell] {
        if BookLayer::levels(&l4_book, side) != btree_book.levels(side)
            || l4_book.levels(side).len() != depth_of(depth, side)
        {
            bail!("the book layers disagree on the {side} side");
        }
    }
    let (synth_rate, synth_changes) = time_synth(args.seed, args.synth_seconds)?;

    let tt_ops = 1e9 / tt_ns;
    let base_ops = 1e9 / base_ns;
    let ratio = tt_ops / base_ops;
    let summary = serde_json::json!({
        "ticktrade_ops_per_sec": tt_ops,
        "baseline_ops_per_sec": base_ops,
        "ratio": ratio,
        "ticktrade_ns_per_op": tt_ns,
        "baseline_ns_per_op": base_ns,
        "l4book_ns_per_op": l4_ns,
        "btreemap_book_ns_per_op": btree_ns,
        "synth_book_changes_per_sec": synth_rate,
    });
    let naive_series = series_of_samples("match_naive_op", &base_batches);
    let btree_series = series_of_samples("match_book_btreemap", &btree_batches);
    let series = vec![
        series_of_samples("match_op", &tt_batches).with_baseline_p50(naive_series.percentiles.p50),
        naive_series,
        series_of_samples("match_book_l4", &l4_batches).with_baseline_p50(btree_series.percentiles.p50),
        btree_series,
    ];

    let mut notes = format!(
        "ticktrade bench match: {n_ops} ops on BTC-PERPETUAL (up to {DEPTH} levels/side), seed {}, \
         median of {passes} (ticktrade) / {baseline_passes} (naive) passes\n\
         mix: {} passive places, {} cancels, {} edits, {} IOC/market; {} accepted, {} refused\n",
        args.seed,
        mix[0],
        mix[1],
        mix[2],
        mix[3],
        tt_ok,
        n_ops - tt_ok
    );
    let mut row = |label: &str, ops: String, ns: String| {
        notes.push_str(format!("{label:<34} {ops:>14} {ns:>10}").trim_end());
        notes.push('\n');
    };
    row("matcher", "ops/s".into(), "ns/op".into());
    row("ticktrade-exchange (L4Book)", format!("{tt_ops:.0}"), format!("{tt_ns:.1}"));
    row("naive (Vec, linear scans)", format!("{base_ops:.0}"), format!("{base_ns:.1}"));
    row("speed-up (ticktrade / naive)", format!("{ratio:.2}x"), String::new());
    notes.push_str(&format!(
        "end state: both books identical, {} bid / {} ask levels, {} resting orders\n\
         ticktrade's figure includes validation, margin checks, fills, positions and all events\n\
         book layer alone (same ops, no accounts or events):\n",
        depth.0,
        depth.1,
        book.len()
    ));
    let mut row = |label: &str, ops: String, ns: String| {
        notes.push_str(format!("{label:<34} {ops:>14} {ns:>10}").trim_end());
        notes.push('\n');
    };
    row("  L4Book (slab + sorted Vec index)", format!("{:.0}", 1e9 / l4_ns), format!("{l4_ns:.1}"));
    row("  BTreeMap<price, VecDeque>", format!("{:.0}", 1e9 / btree_ns), format!("{btree_ns:.1}"));
    row("  speed-up (BTreeMap / L4Book)", format!("{:.2}x", btree_ns / l4_ns), String::new());
    notes.push_str(&format!(
        "synthetic market: {synth_rate:.0} book changes/s ({synth_changes} changes in {} simulated s, all instruments)\n\
         table: ns per operation over batches of {BATCH} operations\n",
        args.synth_seconds
    ));
    let outcome = Outcome {
        title: "ticktrade bench match (ns per order operation)".into(),
        notes,
        series,
        summary: Some(summary),
    };
    emit_outcome(outcome, &args.output)?;
    Ok(ExitCode::SUCCESS)
}
