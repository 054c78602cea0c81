//! The bus counters both roles keep, whichever server they are in (`serve`, `hl`): a publisher
//! counts what it handed to NATS and what its bounded queue dropped, an edge what it received,
//! skipped, found missing and resynced, and both the connection's losses and slow-consumer
//! events.
//!
//! Owns: [`BusStats`] (the live atomics), [`BusCounters`] (a copy at one moment, for
//! `/metrics`, web views and status lines) and how a NATS connection event moves them.
//! Must not: decide what to do about an event (the edge resyncs; here it is only counted).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

/// Bus counters, shared by the sink or edge tasks and whoever shows them.
#[derive(Debug, Default)]
pub struct BusStats {
    pub publisher: AtomicBool,
    pub connected: AtomicBool,
    pub published: AtomicU64,
    pub dropped: AtomicU64,
    pub publish_errors: AtomicU64,
    pub requests: AtomicU64,
    pub received: AtomicU64,
    pub malformed: AtomicU64,
    pub gaps: AtomicU64,
    pub resyncs: AtomicU64,
    pub slow_consumers: AtomicU64,
    pub disconnects: AtomicU64,
}

/// The bus counters at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BusCounters {
    /// This server publishes (`--publish`); otherwise it is an edge (`--upstream nats://…`).
    pub publisher: bool,
    /// Connected to a NATS server now.
    pub connected: bool,
    /// Messages handed to NATS (publisher).
    pub published: u64,
    /// Messages the sink's bounded queues had no room for (publisher).
    pub dropped: u64,
    /// Publishes NATS refused (publisher).
    pub publish_errors: u64,
    /// Snapshot (and JSON-RPC) requests answered (publisher).
    pub requests: u64,
    /// Messages received on data subjects (edge).
    pub received: u64,
    /// Messages skipped because their subject, headers or payload were not the scheme's (edge).
    pub malformed: u64,
    /// Sequence gaps and publisher restarts seen (edge).
    pub gaps: u64,
    /// Snapshots applied to resync (edge).
    pub resyncs: u64,
    /// NATS slow-consumer events (the server or the client dropped messages for us).
    pub slow_consumers: u64,
    /// Connections to NATS lost.
    pub disconnects: u64,
}

impl BusStats {
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    pub fn counters(&self) -> BusCounters {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        BusCounters {
            publisher: self.publisher.load(Ordering::Relaxed),
            connected: self.connected.load(Ordering::Relaxed),
            published: get(&self.published),
            dropped: get(&self.dropped),
            publish_errors: get(&self.publish_errors),
            requests: get(&self.requests),
            received: get(&self.received),
            malformed: get(&self.malformed),
            gaps: get(&self.gaps),
            resyncs: get(&self.resyncs),
            slow_consumers: get(&self.slow_consumers),
            disconnects: get(&self.disconnects),
        }
    }

    /// Counts a connection event: `Some(true)` for a connect after a loss (or the first),
    /// `Some(false)` for a loss, `None` for anything else.
    pub fn on_event(&self, event: &async_nats::Event) -> Option<bool> {
        match event {
            async_nats::Event::Connected => Some(!self.connected.swap(true, Ordering::Relaxed)),
            async_nats::Event::Disconnected => {
                if self.connected.swap(false, Ordering::Relaxed) {
                    Self::bump(&self.disconnects);
                }
                Some(false)
            }
            async_nats::Event::SlowConsumer(_) => {
                Self::bump(&self.slow_consumers);
                None
            }
            _ => None,
        }
    }
}

impl std::fmt::Display for BusCounters {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "bus {}: published {} dropped {} errors {} requests {} | received {} malformed {} gaps {} resyncs {} | \
             slow consumers {} disconnects {}",
            if self.connected { "connected" } else { "DISCONNECTED" },
            self.published,
            self.dropped,
            self.publish_errors,
            self.requests,
            self.received,
            self.malformed,
            self.gaps,
            self.resyncs,
            self.slow_consumers,
            self.disconnects
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loss_counts_once_and_a_reconnect_is_told_apart() {
        let stats = BusStats::default();
        assert_eq!(stats.on_event(&async_nats::Event::Connected), Some(true), "the first connect");
        assert_eq!(stats.on_event(&async_nats::Event::Connected), Some(false), "already connected");
        assert_eq!(stats.on_event(&async_nats::Event::Disconnected), Some(false));
        assert_eq!(stats.on_event(&async_nats::Event::Disconnected), Some(false));
        assert_eq!(stats.counters().disconnects, 1, "one loss, however often it is reported");
        assert!(!stats.counters().connected);
        assert_eq!(stats.on_event(&async_nats::Event::Connected), Some(true), "back after a loss");
        let text = stats.counters().to_string();
        assert!(text.starts_with("bus connected:") && text.ends_with("disconnects 1"), "{text}");
    }
}
