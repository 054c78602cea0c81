//! Clients, their subscriptions, and delivery into bounded per-client queues.
//!
//! Owns: the client table, subscription indexes (`l2Book` by coin and `(variant, nLevels)`
//! in [`L2Index`], an array by coin, each coin one sorted list of keys with its first client
//! inline; `trades` by coin name, `l4Book`, `bbo` and `activeAssetCtx` by coin, `candle` by
//! coin and interval, `allMids`, `orderUpdates` and
//! `userFills` by user), the queue item ([`Frames`]: one frame, or a client's `l2Book` frames
//! of one coin, up to eight inline), and `send`: a non-blocking offer to the client's
//! [`ClientQueue`] (`ticktrade_net::outbound`, policy `Disconnect`) that disconnects a client
//! whose queue is full, with a reason, so one slow reader never delays the others.
//! Must not: compute books or read files; the engine calls it in block order, which is the
//! order every client receives messages in.

use std::collections::HashSet;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use rustc_hash::FxHashMap;
use ticktrade_net::outbound::{Offer, Outbound, Queued, SlowPolicy};
use tokio::sync::oneshot;

use ticktrade_hl_proto::candle::Interval;
use ticktrade_hl_proto::ws::{L2Params, Subscription};

use crate::coins::CoinId;

/// Identifies a connection for the engine.
pub type ClientId = u64;

/// Most frames in one [`Frames`] item: a client's `l2Book` frames of one coin go as one item
/// (seven variants per `nLevels`), more as several.
pub const BATCH: usize = 8;

/// One item of a client's bounded queue: one text frame, or up to [`BATCH`] `l2Book` frames of
/// one coin in key order, which the connection's writer sends as as many WebSocket text frames,
/// in order. One item per coin and client instead of one per frame: each offer takes the
/// client's queue lock and may wake its writer (lines shared by both lanes), so the writer is
/// woken once per coin. Inline (`Bytes::new` is const): no allocation.
pub struct Frames {
    n: u8,
    frames: [Bytes; BATCH],
}

impl Frames {
    /// An item without frames (never queued: `push` one first).
    pub const fn new() -> Frames {
        Frames { n: 0, frames: [const { Bytes::new() }; BATCH] }
    }

    /// An item of one frame.
    pub fn one(frame: Bytes) -> Frames {
        let mut item = Frames::new();
        item.push(frame);
        item
    }

    /// Appends `frame` (the item must not be full).
    pub fn push(&mut self, frame: Bytes) {
        self.frames[usize::from(self.n)] = frame;
        self.n += 1;
    }

    /// The number of frames.
    pub fn len(&self) -> usize {
        usize::from(self.n)
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    pub fn is_full(&self) -> bool {
        usize::from(self.n) == BATCH
    }

    /// The frames, in order.
    pub fn frames(&self) -> &[Bytes] {
        &self.frames[..usize::from(self.n)]
    }

    /// The frames, in order, by value.
    pub fn into_frames(self) -> impl Iterator<Item = Bytes> {
        let n = usize::from(self.n);
        self.frames.into_iter().take(n)
    }
}

impl Default for Frames {
    fn default() -> Frames {
        Frames::new()
    }
}

impl std::fmt::Debug for Frames {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.frames()).finish()
    }
}

/// A connection's bounded queue of [`Frames`] items, drained by its writer task.
pub type ClientQueue = Outbound<Frames>;

/// A connection's queue of `capacity` items: a full one disconnects the client.
pub fn client_queue(capacity: usize) -> Arc<ClientQueue> {
    Arc::new(ClientQueue::new(Queued, capacity, SlowPolicy::Disconnect))
}

/// What the engine keeps per connection.
pub struct Client {
    tx: Arc<ClientQueue>,
    kill: Option<oneshot::Sender<String>>,
    subs: HashSet<Subscription>,
    /// A sink's drop counter (`connect_sink`): its queue drops what does not fit (policy
    /// `Conflate`, no key) instead of being disconnected.
    drops: Option<Arc<AtomicU64>>,
}

/// All clients and who wants what.
#[derive(Default)]
pub struct Subscribers {
    clients: FxHashMap<ClientId, Client>,
    pub l2: L2Index,
    pub trades: FxHashMap<String, Vec<ClientId>>,
    pub l4: FxHashMap<CoinId, Vec<ClientId>>,
    /// `allMids`, `bbo` by coin, `orderUpdates` and `userFills` by user (lower case): the
    /// engine reads each only when it is not empty, so a feed nobody follows costs nothing.
    pub all_mids: Vec<ClientId>,
    pub bbo: FxHashMap<CoinId, Vec<ClientId>>,
    pub order_updates: FxHashMap<String, Vec<ClientId>>,
    pub user_fills: FxHashMap<String, Vec<ClientId>>,
    /// `activeAssetCtx` by coin.
    pub asset_ctx: FxHashMap<CoinId, Vec<ClientId>>,
    /// `candle` by coin and interval.
    pub candle: FxHashMap<(CoinId, Interval), Vec<ClientId>>,
    /// Clients that get every raw node line (`--raw`).
    pub raw: Vec<ClientId>,
    n_dropped_slow: u64,
}

/// An `l2Book` subscription's computation key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct L2Key {
    pub variant_idx: u8,
    pub n_levels: u16,
}

impl L2Key {
    pub fn new(params: L2Params) -> L2Key {
        L2Key { variant_idx: params.variant.index() as u8, n_levels: params.n_levels as u16 }
    }
}

/// The `l2Book` subscriptions, by coin: an array indexed by the coin's id, and per coin one
/// list of its keys in order, each with its clients (the first inline). Every changed coin of
/// every block reads its entry (the lanes, on both threads), so it is one array index and one
/// contiguous list, not a hash lookup, B-tree nodes and a heap list per key (each a cold miss
/// per block: together about a tenth of the lane's own time in perf).
#[derive(Default)]
pub struct L2Index {
    by_coin: Vec<CoinL2>,
}

/// One coin's `l2Book` subscriptions: its keys in order, each with the clients that want it.
#[derive(Default, Debug)]
pub struct CoinL2 {
    keys: Vec<(L2Key, Ids)>,
}

/// The clients of one `l2Book` key (never empty in an index): the first inline, so the usual
/// single subscriber costs no heap read.
#[derive(Debug)]
pub struct Ids {
    first: ClientId,
    more: Vec<ClientId>,
}

impl L2Index {
    /// The coin's subscriptions; `None` when it has none.
    pub fn get(&self, coin: &CoinId) -> Option<&CoinL2> {
        self.by_coin.get(coin.0 as usize).filter(|c| !c.keys.is_empty())
    }

    /// True when no coin has a subscription.
    pub fn is_empty(&self) -> bool {
        self.by_coin.iter().all(|c| c.keys.is_empty())
    }

    fn add(&mut self, coin: CoinId, key: L2Key, id: ClientId) {
        let ci = coin.0 as usize;
        if self.by_coin.len() <= ci {
            self.by_coin.resize_with(ci + 1, CoinL2::default);
        }
        let keys = &mut self.by_coin[ci].keys;
        match keys.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(at) => keys[at].1.more.push(id),
            Err(at) => keys.insert(at, (key, Ids { first: id, more: Vec::new() })),
        }
    }

    /// Takes one subscription of `id` to `key` off `coin` (a key without clients goes).
    fn remove(&mut self, coin: CoinId, key: L2Key, id: ClientId) {
        let Some(keys) = self.by_coin.get_mut(coin.0 as usize).map(|c| &mut c.keys) else { return };
        let Ok(at) = keys.binary_search_by_key(&key, |(k, _)| *k) else { return };
        let ids = &mut keys[at].1;
        if ids.first == id {
            match ids.more.pop() {
                Some(last) => ids.first = last,
                None => {
                    keys.remove(at);
                }
            }
        } else if let Some(pos) = ids.more.iter().position(|&c| c == id) {
            ids.more.swap_remove(pos);
        }
    }
}

impl CoinL2 {
    /// The keys in order, each with its clients.
    pub fn iter(&self) -> impl Iterator<Item = (L2Key, &Ids)> {
        self.keys.iter().map(|(k, ids)| (*k, ids))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = L2Key> {
        self.keys.iter().map(|(k, _)| *k)
    }

    /// The clients of each key, in key order.
    pub fn values(&self) -> impl Iterator<Item = &Ids> {
        self.keys.iter().map(|(_, ids)| ids)
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

impl Ids {
    pub fn iter(&self) -> impl Iterator<Item = &ClientId> {
        std::iter::once(&self.first).chain(&self.more)
    }
}

impl<'a> IntoIterator for &'a Ids {
    type Item = &'a ClientId;
    type IntoIter = std::iter::Chain<std::iter::Once<&'a ClientId>, std::slice::Iter<'a, ClientId>>;

    fn into_iter(self) -> Self::IntoIter {
        std::iter::once(&self.first).chain(&self.more)
    }
}

/// Where a subscription lives in the indexes.
#[derive(Clone, Debug)]
pub enum Slot {
    L2(CoinId, L2Key),
    Trades(String),
    L4(CoinId),
    AllMids,
    Bbo(CoinId),
    OrderUpdates(String),
    UserFills(String),
    AssetCtx(CoinId),
    Candle(CoinId, Interval),
}

/// Takes one `id` off the list of `key` (a list left empty goes).
fn drop_from<K: std::hash::Hash + Eq>(map: &mut FxHashMap<K, Vec<ClientId>>, key: &K, id: ClientId) {
    if let Some(list) = map.get_mut(key) {
        if let Some(pos) = list.iter().position(|&c| c == id) {
            list.swap_remove(pos);
        }
        if list.is_empty() {
            map.remove(key);
        }
    }
}

impl Subscribers {
    pub fn connect(&mut self, id: ClientId, tx: Arc<ClientQueue>, kill: oneshot::Sender<String>, raw: bool) {
        self.clients.insert(id, Client { tx, kill: Some(kill), subs: HashSet::new(), drops: None });
        if raw {
            self.raw.push(id);
        }
    }

    /// Adds a sink that subscribes like a client (the NATS publisher, `server::bus`): a frame
    /// its queue has no room for is dropped and counted in `drops`, never a disconnect, so a
    /// slow bus never costs the engine more than a full queue's refusal.
    pub fn connect_sink(&mut self, id: ClientId, tx: Arc<ClientQueue>, drops: Arc<AtomicU64>) {
        self.clients.insert(id, Client { tx, kill: None, subs: HashSet::new(), drops: Some(drops) });
    }

    pub fn n_clients(&self) -> usize {
        self.clients.len()
    }

    pub fn n_dropped_slow(&self) -> u64 {
        self.n_dropped_slow
    }

    pub fn has(&self, id: ClientId, sub: &Subscription) -> bool {
        self.clients.get(&id).is_some_and(|c| c.subs.contains(sub))
    }

    /// Adds a subscription; false if the client is gone.
    pub fn add(&mut self, id: ClientId, sub: Subscription, slot: Slot) -> bool {
        let Some(client) = self.clients.get_mut(&id) else { return false };
        client.subs.insert(sub);
        match slot {
            Slot::L2(coin, key) => self.l2.add(coin, key, id),
            Slot::Trades(coin) => self.trades.entry(coin).or_default().push(id),
            Slot::L4(coin) => self.l4.entry(coin).or_default().push(id),
            Slot::AllMids => self.all_mids.push(id),
            Slot::Bbo(coin) => self.bbo.entry(coin).or_default().push(id),
            Slot::OrderUpdates(user) => self.order_updates.entry(user).or_default().push(id),
            Slot::UserFills(user) => self.user_fills.entry(user).or_default().push(id),
            Slot::AssetCtx(coin) => self.asset_ctx.entry(coin).or_default().push(id),
            Slot::Candle(coin, interval) => self.candle.entry((coin, interval)).or_default().push(id),
        }
        true
    }

    pub fn remove_sub(&mut self, id: ClientId, sub: &Subscription, slot: &Slot) {
        if let Some(client) = self.clients.get_mut(&id) {
            client.subs.remove(sub);
        }
        // A client may hold two subscriptions with one slot (`mantissa` 1 vs null are one):
        // one id comes off per subscription.
        match slot {
            Slot::L2(coin, key) => self.l2.remove(*coin, *key, id),
            Slot::Trades(coin) => drop_from(&mut self.trades, coin, id),
            Slot::L4(coin) => drop_from(&mut self.l4, coin, id),
            Slot::AllMids => {
                if let Some(pos) = self.all_mids.iter().position(|&c| c == id) {
                    self.all_mids.swap_remove(pos);
                }
            }
            Slot::Bbo(coin) => drop_from(&mut self.bbo, coin, id),
            Slot::OrderUpdates(user) => drop_from(&mut self.order_updates, user, id),
            Slot::UserFills(user) => drop_from(&mut self.user_fills, user, id),
            Slot::AssetCtx(coin) => drop_from(&mut self.asset_ctx, coin, id),
            Slot::Candle(coin, interval) => drop_from(&mut self.candle, &(*coin, *interval), id),
        }
    }

    /// Forgets a client and all its subscriptions (`slot_of` maps a subscription to its slot).
    pub fn disconnect(&mut self, id: ClientId, slot_of: impl Fn(&Subscription) -> Option<Slot>) {
        let subs: Vec<Subscription> = match self.clients.get(&id) {
            Some(client) => client.subs.iter().cloned().collect(),
            None => return,
        };
        for sub in &subs {
            if let Some(slot) = slot_of(sub) {
                self.remove_sub(id, sub, &slot);
            }
        }
        self.clients.remove(&id);
        self.raw.retain(|&c| c != id);
    }

    /// Queues the text frame `frame` for `id` (as an item of its own). A full queue disconnects
    /// the client with a reason; returns the ids that must be disconnected (the caller removes
    /// their subscriptions).
    pub fn send(&mut self, id: ClientId, frame: Bytes, dead: &mut Vec<ClientId>) {
        if let Err(why) = self.try_send(id, Frames::one(frame)) {
            self.undelivered(id, why, dead);
        }
    }

    /// Queues `item` for `id` through a shared reference (any thread may, while the engine
    /// publishes coins on two); an item that could not be queued is handed to
    /// [`Subscribers::undelivered`] afterwards, on the engine thread. An unknown id is ignored.
    pub fn try_send(&self, id: ClientId, item: Frames) -> Result<(), Undelivered> {
        let Some(client) = self.clients.get(&id) else { return Ok(()) };
        match client.tx.offer(item, None) {
            Offer::Written | Offer::Queued | Offer::Conflated => Ok(()),
            // Only a sink's queue drops (clients' disconnect).
            Offer::Dropped => {
                if let Some(drops) = &client.drops {
                    drops.fetch_add(1, Ordering::Relaxed);
                }
                Ok(())
            }
            Offer::Disconnect => Err(Undelivered::Full),
            Offer::Closed => Err(Undelivered::Closed),
        }
    }

    /// What an item `try_send` could not queue means: a full queue disconnects the client with
    /// a reason (once); either way `id` goes to `dead` (the caller removes its subscriptions).
    pub fn undelivered(&mut self, id: ClientId, why: Undelivered, dead: &mut Vec<ClientId>) {
        if why == Undelivered::Full {
            let Some(client) = self.clients.get_mut(&id) else { return };
            let capacity = client.tx.capacity();
            if let Some(kill) = client.kill.take() {
                let _ = kill.send(slow_reason(capacity));
            }
            self.n_dropped_slow += 1;
        }
        dead.push(id);
    }
}

/// The close reason of a client disconnected because its queue of `capacity` items is full
/// (under the 123 bytes a close frame's reason may have).
fn slow_reason(capacity: usize) -> String {
    format!("slow client: {capacity} queue items unread (an item: one message, or up to {BATCH} l2Book of a coin)")
}

/// Why `Subscribers::try_send` could not queue an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undelivered {
    /// The client's bounded queue is full: it reads too slowly.
    Full,
    /// The connection is gone.
    Closed,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(variant_idx: u8, n_levels: u16) -> L2Key {
        L2Key { variant_idx, n_levels }
    }

    /// The coin's keys in order with their clients, as the lanes read them.
    fn listed(index: &L2Index, coin: u32) -> Vec<(L2Key, Vec<ClientId>)> {
        index
            .get(&CoinId(coin))
            .map_or_else(Vec::new, |c| c.iter().map(|(k, ids)| (k, ids.iter().copied().collect())).collect())
    }

    /// An item keeps its frames in the order pushed, by reference and by value, up to `BATCH`.
    #[test]
    fn an_item_keeps_its_frames_in_order() {
        let frames: Vec<Bytes> = (0..BATCH).map(|i| Bytes::from(format!("frame {i}"))).collect();
        let item = Frames::new();
        assert!(item.is_empty() && item.frames().is_empty() && item.into_frames().next().is_none());
        let mut item = Frames::default();
        for (i, f) in frames.iter().enumerate() {
            assert!(!item.is_full());
            item.push(f.clone());
            assert_eq!((item.len(), item.frames()), (i + 1, &frames[..=i]));
        }
        assert!(item.is_full());
        assert_eq!(item.into_frames().collect::<Vec<_>>(), frames);
        let one = Frames::one(frames[3].clone());
        assert_eq!(one.frames(), &frames[3..4]);
        assert_eq!(format!("{one:?}"), r#"[b"frame 3"]"#);
    }

    /// The slow-client reason fits a close frame (at most 123 bytes) with any capacity.
    #[test]
    fn the_slow_client_reason_fits_a_close_frame() {
        let reason = slow_reason(usize::MAX);
        assert!(reason.len() <= 123, "{} bytes: {reason}", reason.len());
        assert!(slow_reason(4096).starts_with("slow client: 4096 queue items unread"));
    }

    #[test]
    fn l2_index_keeps_keys_in_order_and_every_client_once_per_subscription() {
        let mut index = L2Index::default();
        assert!(index.is_empty() && index.get(&CoinId(3)).is_none());
        // Keys subscribed out of order, on two coins, with several clients on one key.
        for (coin, k, id) in [
            (3, key(4, 20), 1),
            (3, key(0, 20), 1),
            (3, key(4, 20), 2),
            (0, key(1, 5), 7),
            (3, key(0, 10), 1),
            (3, key(4, 20), 3),
        ] {
            index.add(CoinId(coin), k, id);
        }
        assert_eq!(listed(&index, 3), vec![(key(0, 10), vec![1]), (key(0, 20), vec![1]), (key(4, 20), vec![1, 2, 3])]);
        assert_eq!(listed(&index, 0), vec![(key(1, 5), vec![7])]);
        assert!(index.get(&CoinId(1)).is_none() && index.get(&CoinId(99)).is_none());
        let coin3 = index.get(&CoinId(3)).map(|c| (c.len(), c.keys().collect::<Vec<_>>()));
        assert_eq!(coin3, Some((3, vec![key(0, 10), key(0, 20), key(4, 20)])));
        // What `Engine::announce_stale` collects: every client of every key.
        let all: Vec<ClientId> =
            index.get(&CoinId(3)).map(|c| c.values().flatten().copied().collect()).unwrap_or_default();
        assert_eq!(all, vec![1, 1, 1, 2, 3]);

        // Removing the first client of a key moves the last one in its place (as `swap_remove`).
        index.remove(CoinId(3), key(4, 20), 1);
        assert_eq!(listed(&index, 3)[2], (key(4, 20), vec![3, 2]));
        index.remove(CoinId(3), key(4, 20), 2);
        index.remove(CoinId(3), key(4, 20), 9); // not subscribed: nothing
        index.remove(CoinId(3), key(5, 20), 3); // no such key: nothing
        index.remove(CoinId(42), key(4, 20), 3); // no such coin: nothing
        assert_eq!(listed(&index, 3), vec![(key(0, 10), vec![1]), (key(0, 20), vec![1]), (key(4, 20), vec![3])]);
        // A key without clients goes; a coin without keys is not listed.
        for (k, id) in [(key(4, 20), 3), (key(0, 10), 1), (key(0, 20), 1)] {
            index.remove(CoinId(3), k, id);
        }
        assert!(index.get(&CoinId(3)).is_none());
        index.remove(CoinId(0), key(1, 5), 7);
        assert!(index.is_empty());
    }
}
