//! A block's two lines decoded into typed events: on this thread, or on both threads of the
//! engine's pool with the statuses line cut into parts ([`decode_on_two`]); and the buffers
//! kept from block to block ([`Spare`]); [`DecodeStage`] runs the stage alone for the
//! benchmarks.
//!
//! Owns: the fallbacks from the exact-shape decoder to serde (a damaged event spoils only its
//! coins, and is reported), the cutting of a line into parts and who takes which.
//! Must not: apply, publish or report (the caller gets the reports), or wait for the helper
//! thread to start.
//!
//! On two threads the statuses line is cut into parts of about 32 kB at guessed event
//! boundaries (`fast::statuses_split`), each boundary proven by the part before it
//! (`statuses_head`, `statuses_middle`, `statuses_tail`; the whole line on this thread when a
//! part gives up), and the diffs line is one more part. This thread claims parts from the
//! front, the helper from the back ([`Claims`], one atomic word), so a late helper only takes
//! fewer.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde::Deserialize;
use ticktrade_hl_proto::node::{Batch, BookDiff, OrderStatus, RestingStatus, TypedBatch, fast, scan_coins};

use super::warm::{Warm, helper_since};
use crate::join::Line;

/// Decodes a line's events into `out`: first `fast` (hl-node's exact shape, see
/// [`ticktrade_hl_proto::node::fast`]), if it gives up one typed pass over the line as `F`
/// (each mapped by `take`), and only if that fails, the wrapper then event by event as `T`
/// (those `keep` accepts), so a damaged event is reported and spoils only its coins.
#[allow(clippy::too_many_arguments)]
pub(super) fn decode_events<'a, F: Deserialize<'a>, T: Deserialize<'a>>(
    line: &'a Line,
    fast: impl FnOnce(&'a str, &mut Vec<T>) -> Option<fast::Header<'a>>,
    take: impl Fn(F) -> Option<T>,
    keep: impl Fn(&str) -> bool,
    out: &mut Vec<T>,
    damaged: &mut Vec<String>,
    reports: &mut Vec<String>,
) -> Option<&'a str> {
    if let Some(header) = fast(&line.text, out) {
        return Some(header.block_time);
    }
    if let Ok(batch) = TypedBatch::<'a, F>::parse(&line.text) {
        out.extend(batch.events.into_iter().filter_map(take));
        return Some(batch.block_time);
    }
    let batch = match Batch::parse(&line.text) {
        Ok(batch) => batch,
        Err(err) => {
            damaged.extend(scan_coins(&line.text).into_iter().map(str::to_owned));
            reports.push(format!("{}: malformed line skipped: {err}", line.origin));
            return None;
        }
    };
    for (i, raw) in batch.events.iter().enumerate() {
        if !keep(raw.get()) {
            continue;
        }
        match serde_json::from_str::<T>(raw.get()) {
            Ok(event) => out.push(event),
            Err(err) => {
                damaged.extend(scan_coins(raw.get()).into_iter().map(str::to_owned));
                reports.push(format!("{}: event {i} skipped: {err}", line.origin));
            }
        }
    }
    Some(batch.block_time)
}

/// Bytes of the statuses line per part when a block is decoded on two threads
/// ([`decode_on_two`]): about 10-15 µs of work, about the longest one thread waits for the
/// other at the end of the decode.
pub(super) const PART_BYTES: usize = 32 * 1024;

/// At most this many parts per statuses line (a longer line gets longer parts).
pub(super) const MAX_PARTS: usize = 16;

/// Decodes both lines of a block on the two threads of `pool` (called on its thread 0): the
/// statuses line in parts of about [`PART_BYTES`] cut at guessed event boundaries
/// (`fast::statuses_split`; `statuses_head`, `statuses_middle`, `statuses_tail`), and the
/// diffs line as one more part, after the statuses'. This thread takes parts from the front
/// (the head first), the helper from the back (the diffs first), one at a time from a shared
/// claim ([`Claims`]), until none is left. So a helper that wakes late only takes fewer parts
/// (this thread never waits for it to start), and at the end one thread waits at most for the
/// part the other is in (a fixed half, as before, left this thread waiting for the helper's
/// whole half, with the helper's wake-up on top: 2-46 µs at the median and 70-236 µs at p99
/// in `bench hl` runs of 2026-11-27).
/// This thread's parts are a prefix of the line decoded in order into `head`; the helper's a
/// suffix decoded back to front into `tail`, moved after them part by part. When a part gives
/// up (the line is not in hl-node's exact shape, or a guessed boundary is inside an event) the
/// statuses line is decoded whole on this thread, as on one thread. The events go into the
/// buffers given (empty, reused from block to block: head, tail, diffs); the tail's is handed
/// back, emptied into the head's. Returns the lines' events, that buffer, and when the helper
/// started (`helper_since`; `u64::MAX` when it took no part). `front_waits` is 0; tests give
/// more to have this thread start only once the helper took that many parts (any share of the
/// parts on either thread).
#[allow(clippy::type_complexity)]
pub(super) fn decode_on_two<'a>(
    pool: &rayon::ThreadPool,
    statuses: &'a Line,
    diffs: &'a Line,
    all: bool,
    [head, tail]: [Vec<OrderStatus<'a>>; 2],
    diffs_buf: Vec<BookDiff<'a>>,
    front_waits: usize,
) -> (Decoded<'a, OrderStatus<'a>>, Decoded<'a, BookDiff<'a>>, Vec<OrderStatus<'a>>, u64) {
    let offered = Instant::now();
    let text = statuses.text.as_str();
    let mut bounds = [0usize; MAX_PARTS + 1];
    let n = part_bounds(text, &mut bounds);
    let parts = Parts { text, bounds: &bounds[..=n], all, claims: Claims::new(n + 1), failed: AtomicBool::new(false) };
    let diffs_buf = Mutex::new(Some(diffs_buf));
    // Part `n` is the diffs line, whichever thread claims it.
    let take_diffs = || {
        let buf = diffs_buf.lock().map(|mut b| b.take().unwrap_or_default()).unwrap_or_default();
        decode_diffs(diffs, buf)
    };
    let front = || {
        while parts.claims.back_taken(n + 1) < front_waits {
            std::thread::yield_now();
        }
        let (mut head, mut header, mut df) = (head, None, None);
        while let Some(i) = parts.claims.front() {
            if i == n {
                df = Some(take_diffs());
            } else {
                parts.decode(i, &mut head, &mut header);
            }
        }
        (head, header, df)
    };
    let back = || {
        let start = helper_since(offered);
        let (mut tail, mut header, mut df) = (tail, None, None);
        // Where each part the helper took ends in `tail` (taken last to first).
        let mut ends = [0usize; MAX_PARTS];
        let mut k = 0;
        while let Some(i) = parts.claims.back() {
            if i == n {
                df = Some(take_diffs());
            } else {
                parts.decode(i, &mut tail, &mut header);
                ends[k] = tail.len();
                k += 1;
            }
        }
        let start = if k > 0 || df.is_some() { start } else { u64::MAX };
        (tail, ends, k, header, df, start)
    };
    let ((mut head, front_header, front_df), (mut tail, ends, k, back_header, back_df, start)) = pool.join(front, back);
    let df = front_df.or(back_df).unwrap_or_else(take_diffs);
    let st = match front_header.or(back_header).filter(|_| !parts.failed.load(Ordering::Relaxed)) {
        Some(header) => {
            // The helper's parts in line order: the last it took (the lowest) first.
            for j in (0..k).rev() {
                let from = if j == 0 { 0 } else { ends[j - 1] };
                head.extend(tail.drain(from..));
            }
            Decoded { events: head, time: Some(header.block_time), damaged: Vec::new(), reports: Vec::new() }
        }
        None => {
            head.clear();
            tail.clear();
            decode_statuses(statuses, all, head)
        }
    };
    (st, df, tail, start)
}

/// Cuts a statuses line into parts of about [`PART_BYTES`] at guessed event boundaries:
/// `bounds[..=n]` with `bounds[0] = 0` and `bounds[n]` the line's length, strictly increasing;
/// returns `n` (1 for a short line, or when no boundary is found).
pub(super) fn part_bounds(text: &str, bounds: &mut [usize; MAX_PARTS + 1]) -> usize {
    let want = (text.len() / PART_BYTES).clamp(1, MAX_PARTS);
    let mut n = 1;
    for i in 1..want {
        let target = (text.len() / want * i).max(bounds[n - 1] + 1);
        let Some(at) = fast::statuses_split(text, target) else { break };
        bounds[n] = at;
        n += 1;
    }
    bounds[n] = text.len();
    n
}

/// A block's statuses line cut into parts (`bounds`), and who takes which.
pub(super) struct Parts<'a, 'b> {
    text: &'a str,
    bounds: &'b [usize],
    all: bool,
    claims: Claims,
    /// A part gave up: the line is decoded whole after the join, so the rest are skipped.
    failed: AtomicBool,
}

impl<'a> Parts<'a, '_> {
    /// Part `i` into `out` (the head's header into `header`); marks the line failed when the
    /// part gives up (`out` is then left as it was).
    pub(super) fn decode(&self, i: usize, out: &mut Vec<OrderStatus<'a>>, header: &mut Option<fast::Header<'a>>) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        let (text, all, n) = (self.text, self.all, self.bounds.len() - 1);
        let done = match i {
            0 if n == 1 => fast::statuses(text, all, out).map(|h| *header = Some(h)),
            0 => fast::statuses_head(text, self.bounds[1], all, out).map(|h| *header = Some(h)),
            _ if i == n - 1 => fast::statuses_tail(text, self.bounds[i], all, out),
            _ => fast::statuses_middle(text, self.bounds[i], self.bounds[i + 1], all, out),
        };
        if done.is_none() {
            self.failed.store(true, Ordering::Relaxed);
        }
    }
}

/// The parts `0..n` of a block's decode, claimed one at a time from both ends: the engine
/// thread from the front, the helper from the back, until they meet. One atomic word holds
/// the next front part (low half) and one past the next back part (high half), so each part
/// is taken exactly once (the join that ends the decode orders every part's result before
/// its use).
pub(super) struct Claims(AtomicU32);

impl Claims {
    pub(super) fn new(n: usize) -> Claims {
        Claims(AtomicU32::new((n as u32) << 16))
    }

    pub(super) fn front(&self) -> Option<usize> {
        let lo_hi = |s: u32| (s & 0xffff, s >> 16);
        let taken = self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
            let (lo, hi) = lo_hi(s);
            (lo < hi).then_some(s + 1)
        });
        taken.ok().map(|s| lo_hi(s).0 as usize)
    }

    pub(super) fn back(&self) -> Option<usize> {
        let lo_hi = |s: u32| (s & 0xffff, s >> 16);
        let taken = self.0.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |s| {
            let (lo, hi) = lo_hi(s);
            (lo < hi).then(|| s - (1 << 16))
        });
        taken.ok().map(|s| lo_hi(s).1 as usize - 1)
    }

    /// Parts taken from the back so far, of `n`.
    pub(super) fn back_taken(&self, n: usize) -> usize {
        n - (self.0.load(Ordering::Relaxed) >> 16) as usize
    }
}

/// The diffs line, every event, into `events` (empty).
pub(super) fn decode_diffs<'a>(line: &'a Line, events: Vec<BookDiff<'a>>) -> Decoded<'a, BookDiff<'a>> {
    decode_line(line, fast::diffs, Some::<BookDiff<'_>>, |_| true, events)
}

/// A line's decoded events, its block time, and what could not be decoded.
pub(super) struct Decoded<'a, T> {
    pub(super) events: Vec<T>,
    pub(super) time: Option<&'a str>,
    pub(super) damaged: Vec<String>,
    pub(super) reports: Vec<String>,
}

/// [`decode_events`] into `events` (empty) and a fresh [`Decoded`] (so each line can be
/// decoded on its own thread).
pub(super) fn decode_line<'a, F: Deserialize<'a>, T: Deserialize<'a>>(
    line: &'a Line,
    fast: impl FnOnce(&'a str, &mut Vec<T>) -> Option<fast::Header<'a>>,
    take: impl Fn(F) -> Option<T>,
    keep: impl Fn(&str) -> bool,
    mut events: Vec<T>,
) -> Decoded<'a, T> {
    let (mut damaged, mut reports) = (Vec::new(), Vec::new());
    let time = decode_events(line, fast, take, keep, &mut events, &mut damaged, &mut reports);
    Decoded { events, time, damaged, reports }
}

/// The statuses line into `events` (empty): every status when `all` (someone reads
/// `l4Book`), else only those that can put an order on the book (`open`/`triggered`; the
/// rest matter only to `l4Book` subscribers, so without any they are skipped before decoding).
pub(super) fn decode_statuses<'a>(
    line: &'a Line,
    all: bool,
    events: Vec<OrderStatus<'a>>,
) -> Decoded<'a, OrderStatus<'a>> {
    let may_rest = |raw: &str| all || raw.contains(r#""status":"open""#) || raw.contains(r#""status":"triggered""#);
    let fast_statuses = |text, out: &mut Vec<_>| fast::statuses(text, all, out);
    if all {
        decode_line(line, fast_statuses, Some::<OrderStatus<'_>>, may_rest, events)
    } else {
        decode_line(line, fast_statuses, |r: RestingStatus<'_>| r.0, may_rest, events)
    }
}

/// The decode buffers of the last block, empty, kept for the next (`recycle`): a fresh `Vec`
/// grown to a block's ~300 kB of events every block cost a third of the decode
/// (`benches/decode.rs`, `decode_stage`: one thread with fresh buffers against reused ones).
#[derive(Default)]
pub(super) struct Spare {
    head: Vec<OrderStatus<'static>>,
    tail: Vec<OrderStatus<'static>>,
    diffs: Vec<BookDiff<'static>>,
}

impl Spare {
    /// The buffers (statuses head and tail, diffs) for a block whose lines live for `'a`.
    #[allow(clippy::type_complexity)]
    pub(super) fn take<'a>(&mut self) -> ([Vec<OrderStatus<'a>>; 2], Vec<BookDiff<'a>>) {
        let head = recycle(std::mem::take(&mut self.head));
        let tail = recycle(std::mem::take(&mut self.tail));
        ([head, tail], recycle(std::mem::take(&mut self.diffs)))
    }

    /// Keeps a block's buffers (emptied) for the next.
    pub(super) fn put(&mut self, head: Vec<OrderStatus<'_>>, tail: Vec<OrderStatus<'_>>, diffs: Vec<BookDiff<'_>>) {
        self.head = recycle(head);
        self.tail = recycle(tail);
        self.diffs = recycle(diffs);
    }
}

/// `v` emptied, as a `Vec` of another type of the same size and alignment (here: another
/// lifetime), keeping its allocation: the standard library collects a `vec::IntoIter` into a
/// `Vec` of such a type in place (`recycle_keeps_the_allocation` checks that it still does).
pub(super) fn recycle<T, U>(mut v: Vec<T>) -> Vec<U> {
    v.clear();
    v.into_iter().filter_map(|_| None).collect()
}

/// The decode stage alone, as the engine runs it without `l4Book` subscribers, for
/// `benches/decode.rs`: on this thread into fresh or reused buffers, or on both threads of a
/// pool built here with this thread as its first member (as the engine's), the helper kept
/// awake by the spin job ([`Warm`]).
pub struct DecodeStage {
    pool: rayon::ThreadPool,
    warm: Arc<Warm>,
    spare: Spare,
}

impl DecodeStage {
    /// The pool's other thread is started here; it belongs to the calling thread.
    pub fn new() -> Result<DecodeStage, rayon::ThreadPoolBuildError> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(2).use_current_thread().build()?;
        Ok(DecodeStage { pool, warm: Arc::new(Warm::new()), spare: Spare::default() })
    }

    /// Decodes a block's two lines on this thread, into the last block's buffers when
    /// `reuse`, else into fresh ones; returns the number of events.
    pub fn one_thread(&mut self, statuses: &Line, diffs: &Line, reuse: bool) -> usize {
        if !reuse {
            let (st, df) = (decode_statuses(statuses, false, Vec::new()), decode_diffs(diffs, Vec::new()));
            return st.events.len() + df.events.len();
        }
        let ([head, tail], diffs_buf) = self.spare.take();
        let (st, df) = (decode_statuses(statuses, false, head), decode_diffs(diffs, diffs_buf));
        let n = st.events.len() + df.events.len();
        self.spare.put(st.events, tail, df.events);
        n
    }

    /// Has the helper spin until the next stage, as the engine does at a file wake-up.
    pub fn wake_helper(&self) {
        self.warm.spin(&self.pool);
    }

    /// Decodes a block's two lines on both threads (the stage offered to the helper, as the
    /// engine does); returns the number of events and when the helper started, in nanoseconds
    /// after the offer (`u64::MAX`: it took no part).
    pub fn two_threads(&mut self, statuses: &Line, diffs: &Line) -> (usize, u64) {
        self.warm.offer();
        let (bufs, diffs_buf) = self.spare.take();
        let (st, df, tail, start) = decode_on_two(&self.pool, statuses, diffs, false, bufs, diffs_buf, 0);
        let n = st.events.len() + df.events.len();
        self.spare.put(st.events, tail, df.events);
        (n, start)
    }
}
