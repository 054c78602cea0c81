//! Clients, their subscriptions, and delivery into bounded per-client queues.
//!
//! Owns: the client table, subscription indexes (`l2Book` by coin and `(variant, nLevels)`,
//! `trades` by coin name, `l4Book` by coin), and `send`: a non-blocking push that disconnects a
//! client whose queue is full, with a reason, so one slow reader never delays the others.
//! Must not: compute books or read files; the engine calls it in block order, which is the
//! order every client receives messages in.

use std::collections::{BTreeMap, HashSet};

use bytes::Bytes;
use rustc_hash::FxHashMap;
use tokio::sync::{mpsc, oneshot};

use ticktrade_hl_proto::ws::{L2Params, Subscription};

use crate::coins::CoinId;

/// Identifies a connection for the engine.
pub type ClientId = u64;

/// What the engine keeps per connection.
pub struct Client {
    tx: mpsc::Sender<Bytes>,
    kill: Option<oneshot::Sender<String>>,
    subs: HashSet<Subscription>,
}

/// All clients and who wants what.
#[derive(Default)]
pub struct Subscribers {
    clients: FxHashMap<ClientId, Client>,
    pub l2: FxHashMap<CoinId, BTreeMap<L2Key, Vec<ClientId>>>,
    pub trades: FxHashMap<String, Vec<ClientId>>,
    pub l4: FxHashMap<CoinId, Vec<ClientId>>,
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

/// Where a subscription lives in the indexes.
#[derive(Clone, Debug)]
pub enum Slot {
    L2(CoinId, L2Key),
    Trades(String),
    L4(CoinId),
}

impl Subscribers {
    pub fn connect(&mut self, id: ClientId, tx: mpsc::Sender<Bytes>, kill: oneshot::Sender<String>, raw: bool) {
        self.clients.insert(id, Client { tx, kill: Some(kill), subs: HashSet::new() });
        if raw {
            self.raw.push(id);
        }
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
            Slot::L2(coin, key) => self.l2.entry(coin).or_default().entry(key).or_default().push(id),
            Slot::Trades(coin) => self.trades.entry(coin).or_default().push(id),
            Slot::L4(coin) => self.l4.entry(coin).or_default().push(id),
        }
        true
    }

    pub fn remove_sub(&mut self, id: ClientId, sub: &Subscription, slot: &Slot) {
        if let Some(client) = self.clients.get_mut(&id) {
            client.subs.remove(sub);
        }
        // A client may hold two subscriptions with one slot (`mantissa` 1 vs null are one).
        let drop_one = |list: &mut Vec<ClientId>| {
            if let Some(pos) = list.iter().position(|&c| c == id) {
                list.swap_remove(pos);
            }
        };
        match slot {
            Slot::L2(coin, key) => {
                if let Some(keys) = self.l2.get_mut(coin) {
                    if let Some(list) = keys.get_mut(key) {
                        drop_one(list);
                        if list.is_empty() {
                            keys.remove(key);
                        }
                    }
                    if keys.is_empty() {
                        self.l2.remove(coin);
                    }
                }
            }
            Slot::Trades(coin) => {
                if let Some(list) = self.trades.get_mut(coin) {
                    drop_one(list);
                    if list.is_empty() {
                        self.trades.remove(coin);
                    }
                }
            }
            Slot::L4(coin) => {
                if let Some(list) = self.l4.get_mut(coin) {
                    drop_one(list);
                    if list.is_empty() {
                        self.l4.remove(coin);
                    }
                }
            }
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

    /// Queues the text frame `frame` for `id`. A full queue disconnects the client with a reason; returns the
    /// ids that must be disconnected (the caller removes their subscriptions).
    pub fn send(&mut self, id: ClientId, frame: Bytes, dead: &mut Vec<ClientId>) {
        if let Err(why) = self.try_send(id, frame) {
            self.undelivered(id, why, dead);
        }
    }

    /// Queues `frame` for `id` through a shared reference (any thread may, while the engine
    /// publishes coins on two); a frame that could not be queued is handed to
    /// [`Subscribers::undelivered`] afterwards, on the engine thread. An unknown id is ignored.
    pub fn try_send(&self, id: ClientId, frame: Bytes) -> Result<(), Undelivered> {
        let Some(client) = self.clients.get(&id) else { return Ok(()) };
        match client.tx.try_send(frame) {
            Ok(()) => Ok(()),
            Err(mpsc::error::TrySendError::Full(_)) => Err(Undelivered::Full),
            Err(mpsc::error::TrySendError::Closed(_)) => Err(Undelivered::Closed),
        }
    }

    /// What a frame `try_send` could not queue means: a full queue disconnects the client with
    /// a reason (once); either way `id` goes to `dead` (the caller removes its subscriptions).
    pub fn undelivered(&mut self, id: ClientId, why: Undelivered, dead: &mut Vec<ClientId>) {
        if why == Undelivered::Full {
            let Some(client) = self.clients.get_mut(&id) else { return };
            let capacity = client.tx.max_capacity();
            if let Some(kill) = client.kill.take() {
                let _ = kill.send(format!("slow client: {capacity} messages queued and unread"));
            }
            self.n_dropped_slow += 1;
        }
        dead.push(id);
    }
}

/// Why `Subscribers::try_send` could not queue a frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undelivered {
    /// The client's bounded queue is full: it reads too slowly.
    Full,
    /// The connection is gone.
    Closed,
}
