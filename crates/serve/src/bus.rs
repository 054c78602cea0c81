//! The NATS sink (`--publish nats://…`): every served instrument's upstream book, trade and
//! ticker frames, as received, go to the bus beside the WebSocket fan-out, each with its
//! subject's publisher sequence (`ticktrade_bus::envelope`); and the publisher answers edges'
//! snapshot and JSON-RPC requests from its hub.
//!
//! Owns: the sink's bounded queue (a `ticktrade_net::outbound` queue like every client's: the
//! hub offers without waiting, a full queue drops and counts), the per-subject sequences, the
//! writer task that publishes, and the responder task (the counters are `ticktrade_bus::stats`).
//! Must not: slow the hub or the upstream read (the writer alone awaits NATS), or change a
//! frame (edges must see exactly what upstream sent).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use bytes::Bytes;
use futures_util::StreamExt;
use ticktrade_bus::async_nats::{self, HeaderMap, Subject};
use ticktrade_bus::{Envelope, Kind, Subjects};
use ticktrade_net::outbound::{Offer, Outbound as Queue, Queued, SlowPolicy};
use tokio::sync::{mpsc, oneshot};

use crate::hub::HubMsg;

pub use ticktrade_bus::{BusCounters, BusStats};

/// One message for the bus.
pub(crate) struct BusItem {
    subject: Subject,
    env: Envelope,
    payload: Bytes,
}

/// A benchmark hook, off (`None`) in `ticktrade serve`: the publisher notes when each bus
/// message's upstream frame reached it, and an edge in the same process stamps that message
/// with it instead of its own arrival, so the edge's fan-out delays (and `/metrics`) time the
/// whole path: upstream frame received by the publisher → frame written to an edge's client.
/// Only the last message per subject is kept (bounded by the subjects; an edge reads a
/// message long before the next one on its subject, 100 ms later); a message it does not hold
/// is stamped on arrival as usual. One lock per message on each side, which the product path
/// does not pay.
#[derive(Debug, Default)]
pub struct BusOrigins {
    /// Subject → the envelope of its last message and when its upstream frame was received.
    last: Mutex<HashMap<String, (Envelope, Instant)>>,
}

impl BusOrigins {
    /// The publisher handed the message `env` on `subject`, received upstream at `at`, to the bus.
    pub(crate) fn record(&self, subject: &str, env: Envelope, at: Instant) {
        let Ok(mut last) = self.last.lock() else { return };
        match last.get_mut(subject) {
            Some(slot) => *slot = (env, at),
            None => {
                last.insert(subject.to_owned(), (env, at));
            }
        }
    }

    /// When the upstream frame of message `env` on `subject` reached its publisher, if known.
    pub(crate) fn find(&self, subject: &str, env: Envelope) -> Option<Instant> {
        let last = self.last.lock().ok()?;
        last.get(subject).filter(|(e, _)| *e == env).map(|&(_, at)| at)
    }
}

/// The publisher's per-subject state.
struct Topic {
    subject: Subject,
    seq: u64,
}

/// The hub's side of the sink: sequences and the queue the writer drains.
pub(crate) struct BusSink {
    queue: Arc<Queue<BusItem, Queued>>,
    subjects: Subjects,
    /// This run's id (`Ticktrade-Publisher`).
    publisher: u64,
    /// Upstream channel (`book.X.100ms`) → its subject and last sequence.
    topics: HashMap<String, Topic>,
    stats: Arc<BusStats>,
    /// The benchmark hook ([`BusOrigins`]).
    pub(crate) origins: Option<Arc<BusOrigins>>,
}

impl BusSink {
    pub(crate) fn new(subjects: Subjects, capacity: usize, publisher: u64, stats: Arc<BusStats>) -> BusSink {
        BusSink {
            queue: Arc::new(Queue::new(Queued, capacity, SlowPolicy::Conflate)),
            subjects,
            publisher,
            topics: HashMap::new(),
            stats,
            origins: None,
        }
    }

    pub(crate) fn queue(&self) -> Arc<Queue<BusItem, Queued>> {
        Arc::clone(&self.queue)
    }

    /// Offers an upstream frame of `channel` (one of the bus's: `book|trades|ticker.X.100ms`)
    /// to the bus, as the next message of its subject. Never waits: a full queue drops it
    /// (its sequence is used all the same, so edges see the gap and resync). `at`: when the
    /// frame was received upstream.
    pub(crate) fn publish(&mut self, channel: &str, frame: Bytes, at: Instant) {
        let topic = match self.topics.get_mut(channel) {
            Some(topic) => topic,
            None => {
                let Some((kind, instrument)) = ticktrade_bus::subject::parse_channel(channel) else { return };
                let Ok(subject) = self.subjects.data(kind, instrument) else { return };
                self.topics.entry(channel.to_owned()).or_insert(Topic { subject: Subject::from(subject), seq: 0 })
            }
        };
        topic.seq += 1;
        let env = Envelope { publisher: self.publisher, seq: topic.seq };
        if let Some(origins) = &self.origins {
            origins.record(&topic.subject, env, at);
        }
        let item = BusItem { subject: topic.subject.clone(), env, payload: frame };
        if matches!(self.queue.offer(item, None), Offer::Dropped | Offer::Closed) {
            BusStats::bump(&self.stats.dropped);
        }
    }

    /// The envelope of the last message published on `channel`'s subject (seq 0 before any).
    pub(crate) fn last(&self, channel: &str) -> Envelope {
        Envelope { publisher: self.publisher, seq: self.topics.get(channel).map_or(0, |t| t.seq) }
    }
}

fn headers(env: Envelope) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in env.headers() {
        headers.insert(name, value.as_str());
    }
    headers
}

/// Publishes what the hub queued, in order, until the queue closes.
pub(crate) async fn write(client: async_nats::Client, queue: Arc<Queue<BusItem, Queued>>, stats: Arc<BusStats>) {
    let mut batch = Vec::with_capacity(256);
    while queue.recv(&mut batch, 256).await {
        for item in batch.drain(..) {
            match client.publish_with_headers(item.subject, headers(item.env), item.payload).await {
                Ok(()) => BusStats::bump(&stats.published),
                Err(_) => BusStats::bump(&stats.publish_errors),
            }
        }
    }
}

/// A snapshot the hub made for a request: the upstream-format frame and the envelope of the
/// last book message it includes.
pub(crate) type SnapshotReply = Option<(Vec<u8>, Envelope)>;

/// Answers edges' requests: book snapshots (`<root>.snapshot.<instrument>`) from the hub's
/// books, and public JSON-RPC methods (`<root>.rpc`, payload `{"method","params"}`) as the
/// hub answers its REST route. Each request is answered in its own task.
pub(crate) async fn respond(
    client: async_nats::Client,
    subjects: Subjects,
    hub: mpsc::Sender<HubMsg>,
    stats: Arc<BusStats>,
) {
    let (Ok(mut snapshots), Ok(mut rpc)) =
        (client.subscribe(subjects.snapshot_all()).await, client.subscribe(subjects.rpc()).await)
    else {
        tracing::warn!("bus: could not subscribe to the request subjects; edges get no snapshots");
        return;
    };
    loop {
        let (request, is_snapshot) = tokio::select! {
            Some(m) = snapshots.next() => (m, true),
            Some(m) = rpc.next() => (m, false),
            else => return,
        };
        let Some(reply_to) = request.reply.clone() else { continue };
        let (client, hub, stats, subjects) = (client.clone(), hub.clone(), Arc::clone(&stats), subjects.clone());
        tokio::spawn(async move {
            BusStats::bump(&stats.requests);
            let answer = if is_snapshot {
                let Some(instrument) = subjects.snapshot_instrument(&request.subject) else { return };
                let (tx, rx) = oneshot::channel();
                let msg = HubMsg::BusSnapshot { instrument: instrument.to_owned(), reply: tx };
                if hub.send(msg).await.is_err() {
                    return;
                }
                match rx.await {
                    Ok(Some((frame, env))) => Some((Bytes::from(frame), Some(env))),
                    // Not synced (or not served): an empty reply; the edge retries.
                    _ => Some((Bytes::new(), None)),
                }
            } else {
                rpc_answer(&request.payload, &hub).await.map(|text| (Bytes::from(text), None))
            };
            let Some((payload, env)) = answer else { return };
            let sent = match env {
                Some(env) => client.publish_with_headers(reply_to, headers(env), payload).await,
                None => client.publish(reply_to, payload).await,
            };
            if sent.is_err() {
                BusStats::bump(&stats.publish_errors);
            }
        });
    }
}

/// The hub's JSON-RPC response text (no id) to a `{"method","params"}` request.
async fn rpc_answer(payload: &[u8], hub: &mpsc::Sender<HubMsg>) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Request<'a> {
        #[serde(borrow)]
        method: &'a str,
        #[serde(default)]
        params: Option<&'a serde_json::value::RawValue>,
    }
    let Ok(request) = serde_json::from_slice::<Request<'_>>(payload) else {
        return Some(r#"{"jsonrpc":"2.0","error":{"code":-32600,"message":"Invalid Request"}}"#.to_owned());
    };
    let Some(method) = request.method.strip_prefix("public/") else {
        return Some(r#"{"jsonrpc":"2.0","error":{"code":-32601,"message":"Method not found"}}"#.to_owned());
    };
    let (tx, rx) = oneshot::channel();
    let params = request.params.map_or_else(|| "{}".to_owned(), |p| p.get().to_owned());
    hub.send(HubMsg::Rest { method: method.to_owned(), params, reply: tx }).await.ok()?;
    rx.await.ok()
}

/// The channels the publisher keeps subscribed upstream for `instrument`.
pub(crate) fn channels_of(instrument: &str) -> [String; 3] {
    Kind::ALL.map(|kind| ticktrade_bus::subject::channel(kind, instrument))
}

impl crate::hub::Hub {
    /// With a bus sink: keeps every served instrument's book, trades and ticker subscribed
    /// upstream for good (one reference that no client's leaving drops), so every one of
    /// them is published and its book can be snapshotted for edges.
    pub(crate) fn follow_all_for_bus(&mut self) {
        if self.bus.is_none() {
            return;
        }
        let mut names: Vec<String> = self.specs.keys().cloned().collect();
        names.sort();
        let mut new = Vec::new();
        for name in names {
            let Some(spec) = self.specs.get(&name).cloned() else { continue };
            self.books.entry(name.clone()).or_insert_with(|| crate::hub::BookState {
                spec,
                book: ticktrade_book::l2::L2Book::new(),
                published: false,
                upstream_last: None,
                upstream_stale: true,
                timestamp_ms: 0,
                channels: Vec::new(),
            });
            for ch in channels_of(&name) {
                let sub = self.upstream.entry(ch.clone()).or_default();
                if sub.refs == 0 && sub.idle_since.is_none() {
                    new.push(ch);
                }
                sub.refs += 1;
                sub.idle_since = None;
            }
        }
        self.subscribe_upstream(&new, true);
    }

    /// `instrument`'s book for an edge: a snapshot in the upstream's own format, at the
    /// upstream `change_id` (the chain edges follow), with the envelope of the last book
    /// message published; `None` while the book is not synced with upstream.
    pub(crate) fn bus_snapshot(&self, instrument: &str) -> SnapshotReply {
        use ticktrade_deribit_proto::{BookHeader, BookKind};
        let bus = self.bus.as_ref()?;
        let state = self.books.get(instrument)?;
        if !state.published || state.upstream_stale || state.book.is_stale() {
            return None;
        }
        let channel = ticktrade_bus::subject::channel(Kind::Book, instrument);
        let mut levels = Vec::new();
        ticktrade_deribit_proto::interval::book_levels(&state.book, &mut levels);
        let header = BookHeader {
            channel: &channel,
            instrument,
            kind: BookKind::Snapshot,
            change_id: state.upstream_last?,
            prev_change_id: None,
            timestamp_ms: state.timestamp_ms,
        };
        let mut buf = Vec::with_capacity(1024);
        ticktrade_deribit_proto::book::encode_book_units(&mut buf, &header, &state.spec, &levels);
        Some((buf, bus.last(&channel)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_hold_the_last_message_per_subject_only() {
        let origins = BusOrigins::default();
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_millis(100);
        let env = |seq| Envelope { publisher: 7, seq };
        assert_eq!(origins.find("a", env(1)), None);
        origins.record("a", env(1), t0);
        origins.record("b", env(1), t1);
        assert_eq!(origins.find("a", env(1)), Some(t0));
        origins.record("a", env(2), t1);
        assert_eq!(origins.find("a", env(1)), None, "an older message is stamped on arrival");
        assert_eq!(origins.find("a", env(2)), Some(t1));
        assert_eq!(origins.find("a", Envelope { publisher: 8, seq: 2 }), None, "another publisher's");
        assert_eq!(origins.find("b", env(1)), Some(t1));
    }
}
