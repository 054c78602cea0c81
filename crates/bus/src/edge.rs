//! What an edge acts on among its NATS connection's events, the same for both edges (`serve`
//! and `hl`): the connection was lost, it is back, or messages were dropped for a slow
//! consumer. Each of the three may have lost messages on any subject, so an edge resyncs
//! every followed book (whole-state feed) from a snapshot on the way out of it; gap detection
//! alone would miss a loss at the end of a quiet subject.
//!
//! Owns: [`BusEvent`] and [`classify`] (which also counts the event in [`BusStats`]).
//! Must not: resync anything itself (each edge does it its own way).

use crate::stats::BusStats;

/// What the NATS connection did, as an edge acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BusEvent {
    /// The connection is gone: the books are stale until it is back and resynced.
    Lost,
    /// Connected again (the client resubscribed): every book resyncs.
    Restored,
    /// The client dropped messages for a subscription whose queue was full: every book
    /// resyncs. (A server that cannot write to a slow consumer closes the connection:
    /// [`BusEvent::Lost`], then [`BusEvent::Restored`].)
    SlowConsumer,
}

/// Maps a NATS event to what an edge does about it, counting it in `stats` on the way.
pub fn classify(stats: &BusStats, event: &async_nats::Event) -> Option<BusEvent> {
    match (stats.on_event(event), event) {
        (_, async_nats::Event::SlowConsumer(_)) => Some(BusEvent::SlowConsumer),
        (Some(true), _) => Some(BusEvent::Restored),
        (Some(false), async_nats::Event::Disconnected) => Some(BusEvent::Lost),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_map_to_what_an_edge_does_and_are_counted() {
        let stats = BusStats::default();
        assert_eq!(classify(&stats, &async_nats::Event::Connected), Some(BusEvent::Restored), "the first connect");
        assert_eq!(classify(&stats, &async_nats::Event::Connected), None, "already connected");
        assert_eq!(classify(&stats, &async_nats::Event::SlowConsumer(3)), Some(BusEvent::SlowConsumer));
        assert_eq!(classify(&stats, &async_nats::Event::SlowConsumer(4)), Some(BusEvent::SlowConsumer));
        assert_eq!(classify(&stats, &async_nats::Event::Disconnected), Some(BusEvent::Lost));
        assert_eq!(classify(&stats, &async_nats::Event::Disconnected), Some(BusEvent::Lost), "still lost");
        assert_eq!(classify(&stats, &async_nats::Event::Connected), Some(BusEvent::Restored));
        assert_eq!(classify(&stats, &async_nats::Event::LameDuckMode), None);
        let c = stats.counters();
        assert_eq!((c.slow_consumers, c.disconnects, c.connected), (2, 1, true), "{c}");
    }
}
