//! L4 books for every coin, loaded from a snapshot and advanced one block at a time from the
//! block's order statuses and raw book diffs.
//!
//! Owns: one `L4Book` per coin with each order's details, the height/time of the last applied
//! block, per-coin `stale` flags, and the per-block apply rules (diff `px` and `sz` are
//! authoritative; any `open`/`triggered` status may rest, the `new` diff decides; triggered and
//! Ioc residuals rest as `Gtc`).
//! Must not: read files, parse a whole line, run a matching engine, or resync by itself. A diff
//! that cannot be applied marks only its coin stale (its book is cleared and ignored until the
//! next snapshot); the other coins carry on.
//!
//! A block is decoded once; `plan_block` groups its diffs by coin (coin names of up to 16
//! bytes are looked up in a table that keeps them inline in its entries), and `split_block`
//! lends each changed coin's book and touched range apart from the others' (`CoinPart`), so
//! coins are applied, and then published, one at a time on either engine thread.

use rustc_hash::FxHashMap;

use ticktrade_book::l4::{L4Book, Order};
use ticktrade_core::{Price, Qty, Side, Utc};
use ticktrade_hl_proto::info::CoinMeta;
use ticktrade_hl_proto::node::{BookDiff, OrderStatus};
use ticktrade_hl_proto::snapshot::Snapshot;
use ticktrade_hl_proto::ws::{L4Order, write_hl_decimal};

pub use apply::{MetaText, OrderMeta, UserKey};

use crate::coins::{CoinId, CoinSpec, CoinTable};

/// One coin's book.
#[derive(Debug, Default)]
pub struct CoinBook {
    pub book: L4Book<OrderMeta>,
    /// Set when an event for this coin could not be applied; cleared by the next snapshot.
    pub stale: bool,
}

impl CoinBook {
    /// Marks the book stale and drops its orders (until the next snapshot).
    fn make_stale(&mut self) {
        self.stale = true;
        self.book.clear();
    }
}

/// Why an event could not be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error("{coin}: bad number in event for oid {oid}")]
    BadNumber { coin: String, oid: u64 },
    #[error("{coin}: new diff for oid {oid} has no open/triggered status in the block")]
    MissingStatus { coin: String, oid: u64 },
    #[error("{coin}: {source}")]
    Book { coin: String, source: ticktrade_book::l4::L4Error },
    #[error("{coin}: bad side in diff for oid {oid}")]
    BadSide { coin: String, oid: u64 },
}

/// Every coin's book and the block they reflect.
#[derive(Debug, Default)]
pub struct Books {
    pub coins: CoinTable,
    books: Vec<CoinBook>,
    height: u64,
    time: Utc,
    /// Per coin, the prices of the levels the last block that had diffs for it touched.
    touched: Vec<Touched>,
    /// The ids of the coin names looked up so far.
    names: CoinNames,
}

/// One block's raw diffs grouped by coin, so that each coin can be applied (and then
/// published) on its own: diffs of different coins are independent (an order belongs to one
/// coin's book), those of one coin keep the order of the line. Reused from block to block.
#[derive(Debug, Default)]
pub struct BlockPlan {
    /// Statuses that may rest, by oid: index into the block's statuses (the last one wins).
    resting: FxHashMap<u64, u32>,
    /// Per group: its coin and the range of `order` that holds its diffs.
    groups: Vec<(CoinId, u32, u32)>,
    /// Diff indices, grouped by coin (groups in the order the coins first appear in the
    /// line), in line order within a group.
    order: Vec<u32>,
    /// Per diff of the line, its coin.
    coin_of: Vec<CoinId>,
    /// Per coin id, its group in the block last planned (`u32::MAX`: none); reset by the
    /// next `plan_block`.
    group_of: Vec<u32>,
}

/// Coin names of up to 16 bytes and their ids, in one open-addressing table whose entries
/// hold the name itself: finding a diff's coin reads one entry (one cache line) instead of
/// the coin table's bucket and then the name's own allocation (`plan_block` looks up every
/// diff's coin). Only a cache of the `CoinTable`, whose ids never change; longer names, and
/// names not seen yet, are looked up there.
#[derive(Debug, Default)]
struct CoinNames {
    /// Power-of-two length (0 until the first name); `len == 0` marks a free entry.
    slots: Vec<NameSlot>,
    used: usize,
}

#[derive(Clone, Copy, Debug, Default)]
struct NameSlot {
    name: [u8; 16],
    len: u8,
    id: u32,
}

impl CoinNames {
    const MAX: usize = 16;

    #[inline]
    fn key(name: &str) -> Option<[u8; 16]> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() > CoinNames::MAX {
            return None;
        }
        let mut key = [0u8; 16];
        key[..bytes.len()].copy_from_slice(bytes);
        Some(key)
    }

    #[inline]
    fn start(key: &[u8; 16], len: usize, mask: usize) -> usize {
        let lo = u64::from_le_bytes([key[0], key[1], key[2], key[3], key[4], key[5], key[6], key[7]]);
        let hi = u64::from_le_bytes([key[8], key[9], key[10], key[11], key[12], key[13], key[14], key[15]]);
        let h = (lo ^ hi.rotate_left(29) ^ len as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        (h >> 40) as usize & mask
    }

    /// The id of `name` if it is in the table.
    #[inline]
    fn get(&self, name: &str) -> Option<CoinId> {
        let key = CoinNames::key(name)?;
        if self.slots.is_empty() {
            return None;
        }
        let (len, mask) = (name.len(), self.slots.len() - 1);
        let mut i = CoinNames::start(&key, len, mask);
        loop {
            let slot = &self.slots[i];
            if slot.len == 0 {
                return None;
            }
            if usize::from(slot.len) == len && slot.name == key {
                return Some(CoinId(slot.id));
            }
            i = (i + 1) & mask;
        }
    }

    /// Remembers `name`'s id (a name that is too long is not kept).
    fn remember(&mut self, name: &str, id: CoinId) {
        if let Some(key) = CoinNames::key(name) {
            self.insert(key, name.len(), id);
        }
    }

    fn insert(&mut self, key: [u8; 16], len: usize, id: CoinId) {
        if (self.used + 1) * 2 > self.slots.len() {
            let old = std::mem::take(&mut self.slots);
            self.slots = vec![NameSlot::default(); (old.len() * 2).max(512)];
            self.used = 0;
            for slot in old.into_iter().filter(|s| s.len != 0) {
                self.insert(slot.name, usize::from(slot.len), CoinId(slot.id));
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = CoinNames::start(&key, len, mask);
        while self.slots[i].len != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = NameSlot { name: key, len: len as u8, id: id.0 };
        self.used += 1;
    }
}

impl BlockPlan {
    /// Coins with diffs in the block.
    pub fn len(&self) -> usize {
        self.groups.len()
    }

    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// The coin of group `g`.
    pub fn coin(&self, g: usize) -> CoinId {
        self.groups[g].0
    }
}

/// What applying one coin's diffs of a block did.
#[derive(Debug, Default)]
pub struct CoinOutcome {
    /// At least one diff was applied (the coin's views may have changed).
    pub changed: bool,
    /// The diff that could not be applied; the coin is stale from it on.
    pub error: Option<ApplyError>,
}

/// The range of level prices (units) a block changed on each side of a coin's book: every
/// level an order was added to, reduced at, removed from or moved from/to. An L2 view whose
/// visible levels lie strictly better than every touched price cannot have changed
/// (`crate::l2::side_may_change`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Touched {
    /// `(lowest, highest)` per side, indexed bids 0, asks 1; `lowest > highest` = untouched.
    pub range: [(i64, i64); 2],
}

impl Touched {
    pub const NONE: Touched = Touched { range: [(i64::MAX, i64::MIN); 2] };

    #[inline]
    fn add(&mut self, side: Side, px: i64) {
        let r = &mut self.range[usize::from(side != Side::Buy)];
        r.0 = r.0.min(px);
        r.1 = r.1.max(px);
    }
}

impl Default for Touched {
    fn default() -> Touched {
        Touched::NONE
    }
}

/// Result of applying one block.
#[derive(Debug, Default)]
pub struct BlockOutcome {
    /// Coins whose book changed, in the order they first appear in the block's diffs.
    pub changed: Vec<CoinId>,
    /// Coins that became stale in this block, with the reason.
    pub errors: Vec<(CoinId, ApplyError)>,
}

impl Books {
    pub fn new(coins: &[CoinMeta]) -> Books {
        Books { coins: CoinTable::from_meta(coins), ..Books::default() }
    }

    pub fn height(&self) -> u64 {
        self.height
    }

    pub fn time(&self) -> Utc {
        self.time
    }

    pub fn book(&self, coin: CoinId) -> Option<&CoinBook> {
        self.books.get(coin.0 as usize)
    }

    /// The level prices the last applied block touched in `coin`'s book (meaningful once the
    /// coin's diffs of that block are applied and it changed: `CoinOutcome::changed`).
    pub fn touched(&self, coin: CoinId) -> Touched {
        self.touched.get(coin.0 as usize).copied().unwrap_or(Touched::NONE)
    }

    fn ensure(&mut self, coin: CoinId) {
        let n = coin.0 as usize + 1;
        if self.books.len() < n {
            self.books.resize_with(n, CoinBook::default);
            self.touched.resize(n, Touched::NONE);
        }
    }

    pub fn coin_id(&mut self, name: &str) -> CoinId {
        if let Some(id) = self.names.get(name) {
            return id;
        }
        let id = self.coins.id_or_insert(name);
        self.ensure(id);
        self.names.remember(name, id);
        id
    }

    /// Marks a coin stale (a damaged line touched it): its book is dropped until a snapshot.
    pub fn mark_stale(&mut self, coin: CoinId) {
        self.ensure(coin);
        self.books[coin.0 as usize].make_stale();
    }

    /// Marks every coin stale (a block was lost).
    pub fn mark_all_stale(&mut self) {
        for i in 0..self.books.len() {
            self.mark_stale(CoinId(i as u32));
        }
    }

    /// Replaces every book by the snapshot's; all coins become fresh. `time` is the snapshot's
    /// block time when known.
    pub fn load_snapshot(&mut self, snapshot: &Snapshot<'_>, time: Utc) -> Result<(), ApplyError> {
        for book in &mut self.books {
            book.book.clear();
            book.stale = false;
        }
        for coin in &snapshot.1 {
            let id = self.coin_id(&coin.0);
            let spec = self.coins.spec(id).clone();
            let book = &mut self.books[id.0 as usize].book;
            for (entries, side) in [(&coin.1.0, Side::Buy), (&coin.1.1, Side::Sell)] {
                for entry in entries {
                    let order = &entry.1;
                    let bad = || ApplyError::BadNumber { coin: spec.name.clone(), oid: order.oid };
                    let px = spec.parse_px(order.limit_px).ok_or_else(bad)?;
                    let sz = spec.parse_sz(order.sz).ok_or_else(bad)?;
                    if sz.is_zero() {
                        continue;
                    }
                    let orig_sz = order.orig_sz.and_then(|text| spec.parse_sz(text)).unwrap_or(sz);
                    book.add(order.oid, side, px, sz, OrderMeta::from_node(entry.0, order, orig_sz.raw()))
                        .map_err(|source| ApplyError::Book { coin: spec.name.clone(), source })?;
                }
            }
        }
        self.height = snapshot.height();
        self.time = time;
        Ok(())
    }

    /// Applies block `height` (the caller guarantees order). `statuses` and `diffs` are the
    /// block's decoded events; events of stale coins are skipped. The whole block at once:
    /// [`Books::plan_block`], then [`Books::apply_coin`] for every coin.
    pub fn apply_block(
        &mut self,
        height: u64,
        time: Utc,
        statuses: &[OrderStatus<'_>],
        diffs: &[BookDiff<'_>],
    ) -> BlockOutcome {
        let mut plan = BlockPlan::default();
        self.plan_block(height, time, statuses, diffs, &mut plan);
        let mut outcome = BlockOutcome::default();
        for g in 0..plan.len() {
            let coin = plan.coin(g);
            let applied = self.apply_coin(&plan, g, statuses, diffs);
            if applied.changed {
                outcome.changed.push(coin);
            }
            if let Some(err) = applied.error {
                outcome.errors.push((coin, err));
            }
        }
        outcome
    }

    /// Starts block `height` (the caller guarantees order): the books now report its height
    /// and time, and `plan` groups its diffs by coin. Then [`Books::apply_coin`] applies each
    /// group; a coin's book is at the end of the block once its group is applied, whatever
    /// the other coins' state.
    pub fn plan_block(
        &mut self,
        height: u64,
        time: Utc,
        statuses: &[OrderStatus<'_>],
        diffs: &[BookDiff<'_>],
        plan: &mut BlockPlan,
    ) {
        for &(coin, _, _) in &plan.groups {
            plan.group_of[coin.0 as usize] = u32::MAX;
        }
        plan.resting.clear();
        plan.resting.reserve(statuses.len());
        for (i, status) in statuses.iter().enumerate() {
            if status.may_rest() {
                plan.resting.insert(status.order.oid, i as u32);
            }
        }
        // Counting sort by coin, stable: count per coin (groups in first-appearance order),
        // then place each diff at its group's next slot.
        plan.groups.clear();
        plan.coin_of.clear();
        for diff in diffs {
            let coin = self.coin_id(&diff.coin);
            plan.coin_of.push(coin);
            let ci = coin.0 as usize;
            if plan.group_of.len() <= ci {
                plan.group_of.resize(ci + 1, u32::MAX);
            }
            if plan.group_of[ci] == u32::MAX {
                plan.group_of[ci] = plan.groups.len() as u32;
                plan.groups.push((coin, 0, 0));
            }
            plan.groups[plan.group_of[ci] as usize].2 += 1;
        }
        let mut at = 0;
        for group in &mut plan.groups {
            let n = group.2;
            *group = (group.0, at, at);
            at += n;
        }
        plan.order.clear();
        plan.order.resize(diffs.len(), 0);
        for (i, coin) in plan.coin_of.iter().enumerate() {
            let group = &mut plan.groups[plan.group_of[coin.0 as usize] as usize];
            plan.order[group.2 as usize] = i as u32;
            group.2 += 1;
        }
        self.height = height;
        self.time = time;
    }

    /// Applies the diffs of group `g` of `plan` (one coin) in line order. A diff that cannot
    /// be applied marks the coin stale and ends its group.
    pub fn apply_coin(
        &mut self,
        plan: &BlockPlan,
        g: usize,
        statuses: &[OrderStatus<'_>],
        diffs: &[BookDiff<'_>],
    ) -> CoinOutcome {
        let coin = plan.groups[g].0;
        let ci = coin.0 as usize;
        let mut part = CoinPart { coin, group: g, book: &mut self.books[ci], touched: &mut self.touched[ci] };
        part.apply(self.coins.spec(coin), plan, statuses, diffs)
    }

    /// The coins of the block last planned into `plan` (`Books::plan_block`), each borrowed
    /// apart from the others, in coin id order (one pass over the books), with the coin table:
    /// the parts can be applied ([`CoinPart::apply`]) and read on different threads.
    pub fn split_block<'a>(
        &'a mut self,
        plan: &'a BlockPlan,
    ) -> (&'a CoinTable, impl Iterator<Item = CoinPart<'a>> + 'a) {
        let parts =
            self.books.iter_mut().zip(self.touched.iter_mut()).enumerate().filter_map(|(ci, (book, touched))| {
                let g = *plan.group_of.get(ci)?;
                (g != u32::MAX).then_some(CoinPart { coin: CoinId(ci as u32), group: g as usize, book, touched })
            });
        (&self.coins, parts)
    }

    /// Both sides of a coin's book as `l4Book` orders (bids best first, FIFO within a price).
    /// `text` receives the formatted prices and sizes the orders borrow from.
    pub fn l4_orders(&self, coin: CoinId) -> [Vec<OwnedL4Order>; 2] {
        let mut sides: [Vec<OwnedL4Order>; 2] = [Vec::new(), Vec::new()];
        let Some(book) = self.book(coin) else { return sides };
        let spec = self.coins.spec(coin);
        for (i, side) in [Side::Buy, Side::Sell].into_iter().enumerate() {
            for level in book.book.levels(side) {
                for order in book.book.orders_at(side, level.price) {
                    sides[i].push(OwnedL4Order::new(&spec.name, spec.units, order));
                }
            }
        }
        sides
    }
}

/// One coin's book and touched range within a block, borrowed apart from every other coin's
/// (`Books::split_block`): what applying the coin's diffs changes.
#[derive(Debug)]
pub struct CoinPart<'a> {
    pub coin: CoinId,
    /// The coin's group in the block's plan.
    group: usize,
    pub book: &'a mut CoinBook,
    touched: &'a mut Touched,
}

impl CoinPart<'_> {
    /// The level prices this block touched (meaningful once applied and changed).
    pub fn touched(&self) -> Touched {
        *self.touched
    }

    /// Applies the coin's diffs of the block (its group of `plan`) in line order. A diff that
    /// cannot be applied marks the coin stale and ends its group. `spec` is the coin's.
    pub fn apply(
        &mut self,
        spec: &CoinSpec,
        plan: &BlockPlan,
        statuses: &[OrderStatus<'_>],
        diffs: &[BookDiff<'_>],
    ) -> CoinOutcome {
        let (_, start, end) = plan.groups[self.group];
        let mut outcome = CoinOutcome::default();
        if self.book.stale {
            return outcome;
        }
        *self.touched = Touched::NONE;
        let group = &plan.order[start as usize..end as usize];
        if group.len() > 1 {
            // The cache misses of the orders, and of the texts a new order keeps, overlap
            // here instead of one after another below.
            self.book.book.warm(group.iter().map(|&i| diffs[i as usize].oid));
            warm_texts(group, diffs, statuses, &plan.resting);
        }
        for &i in group {
            match apply::apply_diff(
                spec,
                &mut self.book.book,
                self.touched,
                &diffs[i as usize],
                statuses,
                &plan.resting,
            ) {
                Ok(()) => outcome.changed = true,
                Err(err) => {
                    self.book.make_stale();
                    outcome.error = Some(err);
                    break;
                }
            }
        }
        outcome
    }
}

/// Reads the first byte of every text applying `group`'s diffs will read (the numbers of each
/// diff; a new order's user, cloid and words in its status), each read independent of the
/// others so that their cache misses overlap (the lines were decoded on either thread, a
/// while ago). Changes nothing.
fn warm_texts(group: &[u32], diffs: &[BookDiff<'_>], statuses: &[OrderStatus<'_>], resting: &FxHashMap<u64, u32>) {
    let first = |text: &str| u64::from(text.as_bytes().first().copied().unwrap_or(0));
    let mut acc = 0u64;
    for &i in group {
        let Some(diff) = diffs.get(i as usize) else { continue };
        acc ^= first(diff.px);
        if let ticktrade_hl_proto::node::RawBookDiff::New { sz } = diff.raw_book_diff {
            acc ^= first(sz);
            if let Some(status) = resting.get(&diff.oid).and_then(|&s| statuses.get(s as usize)) {
                let order = &status.order;
                for text in [status.user, &order.trigger_condition, &order.order_type] {
                    acc ^= first(text) ^ u64::from(text.as_bytes().last().copied().unwrap_or(0));
                }
                acc ^= order.tif.map_or(0, first) ^ order.cloid.map_or(0, first);
            }
        }
    }
    std::hint::black_box(acc);
}

/// An `l4Book` order with its numbers already formatted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OwnedL4Order {
    pub coin: String,
    pub side: Side,
    pub px: String,
    pub sz: String,
    pub oid: u64,
    /// `origSz`, formatted.
    pub orig_sz: String,
    pub meta: MetaText,
}

impl OwnedL4Order {
    fn new(coin: &str, units: ticktrade_hl_proto::ws::Units, order: &Order<OrderMeta>) -> OwnedL4Order {
        let mut px = Vec::new();
        write_hl_decimal(order.price.raw(), units.px, &mut px);
        let mut sz = Vec::new();
        write_hl_decimal(order.qty.raw(), units.sz, &mut sz);
        let mut orig_sz = Vec::new();
        write_hl_decimal(order.payload.orig_sz(), units.sz, &mut orig_sz);
        OwnedL4Order {
            coin: coin.to_owned(),
            side: order.side,
            px: String::from_utf8(px).unwrap_or_default(),
            sz: String::from_utf8(sz).unwrap_or_default(),
            oid: order.id,
            orig_sz: String::from_utf8(orig_sz).unwrap_or_default(),
            meta: order.payload.text(),
        }
    }

    /// The order as `openOrders`/`frontendOpenOrders`/`orderStatus` print it.
    pub fn as_resting(&self) -> ticktrade_hl_proto::orders::RestingOrder<'_> {
        ticktrade_hl_proto::orders::RestingOrder {
            coin: &self.coin,
            side: if self.side == Side::Buy { "B" } else { "A" },
            limit_px: &self.px,
            sz: &self.sz,
            orig_sz: &self.orig_sz,
            oid: self.oid,
            timestamp: self.meta.timestamp,
            trigger_condition: &self.meta.trigger_condition,
            is_position_tpsl: self.meta.is_position_tpsl,
            reduce_only: self.meta.reduce_only,
            order_type: &self.meta.order_type,
            tif: self.meta.tif.as_deref(),
            cloid: self.meta.cloid.as_deref(),
        }
    }

    pub fn as_l4(&self) -> L4Order<'_> {
        L4Order {
            user: Some(&self.meta.user),
            coin: &self.coin,
            side: if self.side == Side::Buy { "B" } else { "A" },
            limit_px: &self.px,
            sz: &self.sz,
            oid: self.oid,
            timestamp: self.meta.timestamp,
            trigger_condition: &self.meta.trigger_condition,
            is_trigger: false,
            trigger_px: "0.0",
            is_position_tpsl: self.meta.is_position_tpsl,
            reduce_only: self.meta.reduce_only,
            order_type: &self.meta.order_type,
            tif: self.meta.tif.as_deref(),
            cloid: self.meta.cloid.as_deref(),
        }
    }
}

/// Levels of a coin as `(px, sz, n)` units, for comparisons in tests and tools.
pub fn levels_of(book: &L4Book<OrderMeta>, side: Side) -> Vec<(Price, Qty, u32)> {
    book.levels(side).map(|l| (l.price, l.qty, l.n_orders)).collect()
}

mod apply;
mod user;

#[cfg(test)]
mod tests;
