//! Closed orders kept for queries: a fixed-size ring plus an id index.
//!
//! Owns: the last `capacity` closed orders (oldest overwritten) and `id → ring slot`.
//! Must not: grow past its capacity (the engine runs for days) or move orders around: the
//! ring is written in place, the index holds 12-byte entries. Measured in `ticktrade bench
//! match`: a `HashMap<u64, Order>` + `VecDeque` cost ~2× the whole op; this ring costs little.

use rustc_hash::FxHashMap;

use crate::order::Order;

#[derive(Debug, Default)]
pub(crate) struct History {
    ring: Vec<Order>,
    next: usize,
    capacity: usize,
    index: FxHashMap<u64, u32>,
}

impl History {
    pub fn new(capacity: usize) -> History {
        let mut index = FxHashMap::default();
        index.reserve(capacity);
        History { ring: Vec::with_capacity(capacity), next: 0, capacity, index }
    }

    pub fn push(&mut self, order: Order) {
        if self.capacity == 0 {
            return;
        }
        let slot = self.next;
        if self.ring.len() < self.capacity {
            self.ring.push(order);
        } else {
            let old = self.ring[slot].id;
            if self.index.get(&old) == Some(&(slot as u32)) {
                self.index.remove(&old);
            }
            self.ring[slot] = order;
        }
        self.index.insert(order.id, slot as u32);
        self.next = (slot + 1) % self.capacity;
    }

    pub fn get(&self, id: u64) -> Option<&Order> {
        self.index.get(&id).and_then(|&slot| self.ring.get(slot as usize)).filter(|o| o.id == id)
    }

    /// Newest first.
    pub fn iter(&self) -> impl Iterator<Item = &Order> + '_ {
        let (older, newer) = self.ring.split_at(self.next.min(self.ring.len()));
        newer.iter().rev().chain(older.iter().rev()).filter(|o| self.index.contains_key(&o.id))
    }
}
