//! The outbound path every server shares: one bounded queue per client with the slow-client
//! policies, an optional direct write to the client's transport, and the fan-out loop.
//!
//! A server hands each frame to [`Outbound::send`] (or [`fan_out`] for one frame to many
//! clients): when nothing is queued and the client's [`Sink`] takes the whole frame now, it is
//! written at once (no task wake-up, no copy); otherwise it is queued, at most `capacity`
//! items, for the client's writer ([`Outbound::flush`] on a sink that can write without
//! blocking, or [`Outbound::recv`] in a writer task that owns an async socket). A full queue
//! applies the client's [`SlowPolicy`]:
//! - `Conflate`: a frame offered with a conflation key replaces the newest queued frame of
//!   that key (the client gets the latest state of that channel, not every step); any other
//!   frame is dropped and the caller is told ([`Offer::Dropped`]), so it can resend a
//!   snapshot once the client has caught up.
//! - `Disconnect`: the queue refuses everything from then on ([`Offer::Disconnect`]) and the
//!   caller closes the connection with a reason.
//!
//! Owns: the queue, its bound and policy, the order frames leave in, and what a full queue does.
//! Must not: block or await on the sending side (the lock is held for a push or one
//! non-blocking write), read a clock, or know a venue's protocol (frames are opaque).
//!
//! Sinks: [`Queued`] (every frame goes through the queue: the writer task owns the socket, as
//! with yawc), a `TcpStream` (a frame already framed for the wire is written straight from the
//! caller), or any other non-blocking byte sink (a message bus publisher).

use std::collections::VecDeque;
use std::io;
use std::sync::Mutex;

use bytes::{Buf, Bytes};
use tokio::sync::Notify;

/// What happens to a client whose queue is full.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SlowPolicy {
    /// Keep the latest frame per conflation key; drop other frames until the queue has room
    /// again (the caller resends a snapshot).
    #[default]
    Conflate,
    /// Close the connection with a reason.
    Disconnect,
}

/// What happened to a frame offered to a client.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    /// The sink took the whole frame at once.
    Written,
    /// Queued behind earlier frames (or its unwritten rest queued after a partial write).
    Queued,
    /// The queue was full: the frame replaced the newest queued frame of its key.
    Conflated,
    /// The queue was full and the policy is `Conflate`: the frame was dropped.
    Dropped,
    /// The queue was full and the policy is `Disconnect`: nothing more is accepted; close the
    /// connection.
    Disconnect,
    /// The connection is gone or closing.
    Closed,
}

impl Offer {
    /// The frame will reach the client (written, queued, or in place of an older one).
    pub fn delivered(self) -> bool {
        matches!(self, Offer::Written | Offer::Queued | Offer::Conflated)
    }
}

/// A client transport that can take bytes without blocking.
pub trait Sink {
    /// Writes a prefix of `buf` now; `ErrorKind::WouldBlock` when it takes nothing now.
    fn try_write(&self, buf: &[u8]) -> io::Result<usize>;
}

/// No direct writes: every frame is queued for the connection's writer task.
#[derive(Clone, Copy, Debug, Default)]
pub struct Queued;

impl Sink for Queued {
    fn try_write(&self, _: &[u8]) -> io::Result<usize> {
        Err(io::ErrorKind::WouldBlock.into())
    }
}

impl Sink for tokio::net::TcpStream {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        tokio::net::TcpStream::try_write(self, buf)
    }
}

impl<S: Sink> Sink for std::sync::Arc<S> {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        S::try_write(self, buf)
    }
}

impl<S: Sink> Sink for Option<S> {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Some(sink) => sink.try_write(buf),
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }
}

/// A queue item that can be written to a [`Sink`] in pieces.
pub trait Frame {
    /// The bytes still to write.
    fn bytes(&self) -> &[u8];
    /// Forgets the first `n` bytes (they were written).
    fn advance(&mut self, n: usize);
}

impl Frame for Bytes {
    fn bytes(&self) -> &[u8] {
        self
    }

    fn advance(&mut self, n: usize) {
        Buf::advance(self, n);
    }
}

struct Entry<T> {
    item: T,
    key: Option<u64>,
    /// Partly written (or a control frame): never replaced.
    pinned: bool,
}

struct State<T> {
    queue: VecDeque<Entry<T>>,
    /// Nothing more is accepted; the writer ends once the queue is empty.
    closing: bool,
}

/// What [`Outbound::flush`] left behind.
#[derive(Debug)]
pub enum Flushed {
    /// The queue is empty.
    Idle,
    /// The sink took no more: wait until it is writable and flush again.
    Blocked,
    /// The queue is empty and the connection is closing.
    Closing,
}

/// One client's outgoing side: the bounded queue, its policy and the client's sink. Shared
/// (by reference) between whoever publishes to the client and the client's writer.
pub struct Outbound<T, S = Queued> {
    state: Mutex<State<T>>,
    notify: Notify,
    sink: S,
    capacity: usize,
    policy: SlowPolicy,
}

impl<T, S> std::fmt::Debug for Outbound<T, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbound")
            .field("queued", &self.len())
            .field("capacity", &self.capacity)
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl<T, S> Outbound<T, S> {
    /// A queue of at most `capacity` items (at least 1) in front of `sink`.
    pub fn new(sink: S, capacity: usize, policy: SlowPolicy) -> Outbound<T, S> {
        Outbound {
            state: Mutex::new(State { queue: VecDeque::new(), closing: false }),
            notify: Notify::new(),
            sink,
            capacity: capacity.max(1),
            policy,
        }
    }

    /// The client's sink.
    pub fn sink(&self) -> &S {
        &self.sink
    }

    /// The queue's bound, in items.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Items waiting for the writer.
    pub fn len(&self) -> usize {
        self.state.lock().map_or(0, |st| st.queue.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Nothing more is accepted (closed, or refused under `Disconnect`).
    pub fn is_closing(&self) -> bool {
        self.state.lock().map_or(true, |st| st.closing)
    }

    /// Queues `item` without trying the sink (see [`Outbound::send`] for the rules).
    pub fn offer(&self, item: T, key: Option<u64>) -> Offer {
        let Ok(mut st) = self.state.lock() else { return Offer::Closed };
        let offer = self.enqueue(&mut st, item, key);
        drop(st);
        if offer == Offer::Queued || offer == Offer::Disconnect {
            self.notify.notify_one();
        }
        offer
    }

    /// Queues `item` only if the queue has room, without applying the policy: for a frame the
    /// client can do without (a pong). `false`: not queued.
    pub fn offer_if_room(&self, item: T) -> bool {
        let Ok(mut st) = self.state.lock() else { return false };
        if st.closing || st.queue.len() >= self.capacity {
            return false;
        }
        st.queue.push_back(Entry { item, key: None, pinned: false });
        drop(st);
        self.notify.notify_one();
        true
    }

    fn enqueue(&self, st: &mut State<T>, item: T, key: Option<u64>) -> Offer {
        if st.closing {
            return Offer::Closed;
        }
        if st.queue.len() < self.capacity {
            st.queue.push_back(Entry { item, key, pinned: false });
            return Offer::Queued;
        }
        match self.policy {
            SlowPolicy::Conflate => {
                let older = key.and_then(|k| st.queue.iter_mut().rev().find(|e| !e.pinned && e.key == Some(k)));
                match older {
                    Some(entry) => {
                        entry.item = item;
                        Offer::Conflated
                    }
                    None => Offer::Dropped,
                }
            }
            SlowPolicy::Disconnect => {
                st.closing = true;
                Offer::Disconnect
            }
        }
    }

    /// Queues a control item past the bound (a pong, a close); `last`: nothing is accepted
    /// after it, and the writer ends once it is written.
    pub fn control(&self, item: T, last: bool) {
        if let Ok(mut st) = self.state.lock() {
            if st.closing {
                return;
            }
            st.queue.push_back(Entry { item, key: None, pinned: true });
            st.closing |= last;
        }
        self.notify.notify_one();
    }

    /// Accepts nothing more; the writer ends once what is queued is written.
    pub fn finish(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.closing = true;
        }
        self.notify.notify_one();
    }

    /// Accepts nothing more and forgets what is queued; a waiting writer ends.
    pub fn shutdown(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.closing = true;
            st.queue.clear();
        }
        self.notify.notify_one();
    }

    /// Takes every queued item (tests of a publisher with no writer).
    pub fn take_queued(&self) -> Vec<T> {
        self.state.lock().map_or_else(|_| Vec::new(), |mut st| st.queue.drain(..).map(|e| e.item).collect())
    }

    /// Waits for queued items and moves up to `max` of them (at least one) into `out`, in
    /// order. `false`: the queue is empty and closing (the writer is done).
    pub async fn recv(&self, out: &mut Vec<T>, max: usize) -> bool {
        loop {
            {
                let Ok(mut st) = self.state.lock() else { return false };
                if !st.queue.is_empty() {
                    let n = st.queue.len().min(max.max(1));
                    out.extend(st.queue.drain(..n).map(|e| e.item));
                    return true;
                }
                if st.closing {
                    return false;
                }
            }
            self.notify.notified().await;
        }
    }

    /// Waits until something was queued (or the queue closed) since the last wake-up.
    pub async fn notified(&self) {
        self.notify.notified().await;
    }
}

impl<T: Frame + Clone, S: Sink> Outbound<T, S> {
    /// Writes `item` to the sink now if nothing is queued and the sink takes it whole; else
    /// queues it (or its unwritten rest), applying the policy when the queue is full. `key`:
    /// the conflation key of a frame that supersedes earlier frames of the same key.
    pub fn send(&self, item: &T, key: Option<u64>) -> Offer {
        let Ok(mut st) = self.state.lock() else { return Offer::Closed };
        if st.closing {
            return Offer::Closed;
        }
        if st.queue.is_empty() {
            match self.sink.try_write(item.bytes()) {
                Ok(n) if n == item.bytes().len() => return Offer::Written,
                Ok(n) => {
                    let mut rest = item.clone();
                    rest.advance(n);
                    // The rest must follow, whatever the bound: it is pinned.
                    st.queue.push_back(Entry { item: rest, key: None, pinned: true });
                    drop(st);
                    self.notify.notify_one();
                    return Offer::Queued;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => {
                    st.closing = true;
                    drop(st);
                    self.notify.notify_one();
                    return Offer::Closed;
                }
            }
        }
        let offer = self.enqueue(&mut st, item.clone(), key);
        drop(st);
        if offer == Offer::Queued || offer == Offer::Disconnect {
            self.notify.notify_one();
        }
        offer
    }

    /// Writes what is queued until the queue is empty or the sink takes no more; `written`
    /// sees each item whose last byte the sink took. An error from the sink closes the queue.
    pub fn flush(&self, mut written: impl FnMut(&T)) -> io::Result<Flushed> {
        let Ok(mut st) = self.state.lock() else { return Ok(Flushed::Closing) };
        loop {
            let Some(front) = st.queue.front_mut() else {
                return Ok(if st.closing { Flushed::Closing } else { Flushed::Idle });
            };
            match self.sink.try_write(front.item.bytes()) {
                Ok(n) if n == front.item.bytes().len() => {
                    if let Some(entry) = st.queue.pop_front() {
                        written(&entry.item);
                    }
                }
                Ok(n) => {
                    front.item.advance(n);
                    front.pinned = true;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(Flushed::Blocked),
                Err(e) => {
                    st.closing = true;
                    return Err(e);
                }
            }
        }
    }
}

/// Offers one frame to many clients in one loop: nothing between two writes but the next
/// target's lookup (`targets` yields them lazily), its lock and `each`, which sees each
/// target's key and what the offer did right after it (keep it to a push: the bookkeeping
/// belongs after the loop).
pub fn fan_out<'a, K, T, S>(
    frame: &T,
    key: Option<u64>,
    targets: impl Iterator<Item = (K, &'a Outbound<T, S>)>,
    mut each: impl FnMut(K, Offer),
) where
    T: Frame + Clone + 'a,
    S: Sink + 'a,
{
    for (id, out) in targets {
        each(id, out.send(frame, key));
    }
}

#[cfg(test)]
#[path = "outbound_tests.rs"]
mod tests;
