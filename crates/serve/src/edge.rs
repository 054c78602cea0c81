//! The bus as upstream (`--upstream nats://…`): an edge serves its clients from the NATS bus
//! a publisher (`--publish`) feeds, opening no venue connection. To the hub this task looks
//! like the upstream WebSocket: it takes the hub's JSON-RPC requests and hands back frames.
//!
//! - `public/subscribe` to an upstream channel (`book|trades|ticker.X.100ms`) follows its
//!   subject; a book first fetches a snapshot from the publisher (`<root>.snapshot.X`), then
//!   applies the messages after it. Subscribing to a channel already followed restarts it:
//!   the hub resyncs a book by unsubscribing and subscribing again, as with a venue.
//! - Any other public method goes to the publisher as a request (`<root>.rpc`).
//! - On a sequence gap or a publisher restart on a book subject, or a malformed book
//!   message, the book is resynced from a fresh snapshot; its clients get the difference on
//!   their own chain (the hub's resync). Trades and tickers have nothing to resync: a gap is
//!   counted and the stream goes on.
//! - A lost NATS connection is a lost upstream to the hub (books stale); when NATS is back
//!   the hub resubscribes and every book resyncs. A slow-consumer event resyncs every book.
//!
//! Owns: the followed subjects, their sequence trackers, snapshot fetches, edge counters.
//! Must not: send the hub a message out of order on a subject, or one the snapshot it
//! applied already includes.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures_util::StreamExt;
use serde::Deserialize;
use ticktrade_bus::async_nats;
use ticktrade_bus::{BusEvent, Envelope, Kind, Seen, SeqTracker, Subjects};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::bus::{BusOrigins, BusStats};
use crate::hub::{HubMsg, UpEvent};

/// Counts a NATS event and says what the edge does about it (shared with the hl edge).
pub(crate) use ticktrade_bus::classify;

/// How long a snapshot or JSON-RPC request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a book without a snapshot asks again.
const SNAPSHOT_RETRY: Duration = Duration::from_millis(250);

#[derive(Clone)]
struct Ctx {
    client: async_nats::Client,
    subjects: Subjects,
    hub: mpsc::Sender<HubMsg>,
    stats: Arc<BusStats>,
    origins: Option<Arc<BusOrigins>>,
}

impl Ctx {
    /// Hands a frame to the hub, stamped now, or at `origin` (the benchmark hook).
    async fn to_hub(&self, text: String, origin: Option<Instant>) -> bool {
        let at = origin.unwrap_or_else(Instant::now);
        self.hub.send(HubMsg::Upstream(UpEvent::Frame(text, at))).await.is_ok()
    }
}

#[derive(Deserialize)]
struct Request {
    id: u64,
    method: String,
    #[serde(default)]
    params: Option<Box<serde_json::value::RawValue>>,
}

#[derive(Deserialize)]
struct Channels {
    #[serde(default)]
    channels: Vec<String>,
}

/// Runs the edge's upstream until the hub goes away.
pub(crate) async fn run(
    client: async_nats::Client,
    subjects: Subjects,
    mut requests: mpsc::Receiver<String>,
    hub: mpsc::Sender<HubMsg>,
    stats: Arc<BusStats>,
    mut events: mpsc::UnboundedReceiver<BusEvent>,
    origins: Option<Arc<BusOrigins>>,
) {
    let ctx = Ctx { client, subjects, hub, stats, origins };
    let mut follows: HashMap<String, JoinHandle<()>> = HashMap::new();
    if ctx.hub.send(HubMsg::Upstream(UpEvent::Connected)).await.is_err() {
        return;
    }
    loop {
        tokio::select! {
            request = requests.recv() => match request {
                Some(text) => on_request(&ctx, &mut follows, &text).await,
                None => break,
            },
            Some(event) = events.recv() => {
                let up = match event {
                    BusEvent::Lost => UpEvent::Disconnected,
                    BusEvent::Restored => UpEvent::Connected,
                    BusEvent::SlowConsumer => {
                        // Messages were dropped for us: every book takes a fresh snapshot.
                        let books: Vec<String> =
                            follows.keys().filter(|ch| ch.starts_with("book.")).cloned().collect();
                        for ch in books {
                            start(&ctx, &mut follows, &ch);
                        }
                        continue;
                    }
                };
                if ctx.hub.send(HubMsg::Upstream(up)).await.is_err() {
                    break;
                }
            }
        }
    }
    for (_, task) in follows.drain() {
        task.abort();
    }
}

/// (Re)starts following upstream channel `ch`; `false` if it is not carried on the bus. A
/// restart (the hub resubscribing after a reconnect, or a slow-consumer event) makes the
/// book's first snapshot a resync.
fn start(ctx: &Ctx, follows: &mut HashMap<String, JoinHandle<()>>, ch: &str) -> bool {
    let Some((kind, instrument)) = ticktrade_bus::subject::parse_channel(ch) else { return false };
    let Ok(subject) = ctx.subjects.data(kind, instrument) else { return false };
    let Ok(snapshot) = ctx.subjects.snapshot(instrument) else { return false };
    let restart = match follows.remove(ch) {
        Some(old) => {
            old.abort();
            true
        }
        None => false,
    };
    let task = tokio::spawn(follow(ctx.clone(), ch.to_owned(), kind, subject, snapshot, restart));
    follows.insert(ch.to_owned(), task);
    true
}

async fn on_request(ctx: &Ctx, follows: &mut HashMap<String, JoinHandle<()>>, text: &str) {
    let Ok(request) = serde_json::from_str::<Request>(text) else {
        tracing::warn!("edge: the hub sent a request that is not JSON-RPC");
        return;
    };
    let id = request.id;
    match request.method.as_str() {
        "public/subscribe" | "public/unsubscribe" => {
            let channels = request
                .params
                .as_ref()
                .and_then(|p| serde_json::from_str::<Channels>(p.get()).ok())
                .map(|c| c.channels)
                .unwrap_or_default();
            let mut accepted = Vec::new();
            for ch in channels {
                let ok = if request.method == "public/subscribe" {
                    start(ctx, follows, &ch)
                } else {
                    follows.remove(&ch).map(|task| task.abort()).is_some()
                };
                if ok {
                    accepted.push(ch);
                }
            }
            let result = serde_json::to_string(&accepted).unwrap_or_else(|_| "[]".to_owned());
            ctx.to_hub(format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#), None).await;
        }
        _ => {
            let ctx = ctx.clone();
            let params = request.params.map_or_else(|| "{}".to_owned(), |p| p.get().to_owned());
            tokio::spawn(async move {
                let text = rpc(&ctx, id, &request.method, &params).await;
                ctx.to_hub(text, None).await;
            });
        }
    }
}

/// Asks the publisher to answer a JSON-RPC method; the reply carries the hub's `id`.
async fn rpc(ctx: &Ctx, id: u64, method: &str, params: &str) -> String {
    let payload = format!(r#"{{"method":{},"params":{params}}}"#, serde_json::Value::from(method));
    let reply =
        tokio::time::timeout(REQUEST_TIMEOUT, ctx.client.request(ctx.subjects.rpc(), Bytes::from(payload))).await;
    let error = match reply {
        Ok(Ok(msg)) => match serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(&msg.payload) {
            Ok(mut map) => {
                map.insert("id".to_owned(), id.into());
                return serde_json::Value::Object(map).to_string();
            }
            Err(_) => "the publisher's reply is not JSON".to_owned(),
        },
        Ok(Err(e)) => format!("bus request: {e}"),
        Err(_) => "bus request timed out".to_owned(),
    };
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"error":{{"code":11094,"message":"internal_server_error","data":{}}}}}"#,
        serde_json::Value::from(error)
    )
}

/// Whether `payload` is a Deribit subscription notification on `channel` (the scheme's
/// only payload), as text.
fn notification<'a>(payload: &'a [u8], channel: &str) -> Option<&'a str> {
    #[derive(Deserialize)]
    struct Frame<'a> {
        #[serde(borrow)]
        method: &'a str,
        #[serde(borrow)]
        params: Params<'a>,
    }
    #[derive(Deserialize)]
    struct Params<'a> {
        #[serde(borrow)]
        channel: &'a str,
        #[serde(borrow)]
        #[allow(dead_code, reason = "only its presence is checked")]
        data: &'a serde_json::value::RawValue,
    }
    let text = std::str::from_utf8(payload).ok()?;
    let frame = serde_json::from_str::<Frame<'_>>(text).ok()?;
    (frame.method == "subscription" && frame.params.channel == channel).then_some(text)
}

/// Follows one subject and feeds its messages to the hub in order; a book starts from a
/// snapshot and goes back to one after a gap. Every snapshot after the first applied, and
/// the first too on a `restart`, is counted as a resync.
async fn follow(ctx: Ctx, channel: String, kind: Kind, subject: String, snapshot_subject: String, restart: bool) {
    let mut sub = loop {
        match ctx.client.subscribe(subject.clone()).await {
            Ok(sub) => break sub,
            Err(e) => {
                tracing::warn!("edge: subscribing to {subject}: {e}");
                tokio::time::sleep(SNAPSHOT_RETRY).await;
            }
        }
    };
    let book = kind == Kind::Book;
    let mut tracker = SeqTracker::new();
    let mut resync = restart;
    let mut synced = !book || snapshot(&ctx, &channel, &snapshot_subject, &mut tracker, resync).await;
    resync |= synced;
    let mut retry = tokio::time::interval(SNAPSHOT_RETRY);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let msg = tokio::select! {
            msg = sub.next() => match msg {
                Some(msg) => msg,
                None => return,
            },
            _ = retry.tick(), if !synced => {
                synced = snapshot(&ctx, &channel, &snapshot_subject, &mut tracker, resync).await;
                resync |= synced;
                continue;
            }
        };
        BusStats::bump(&ctx.stats.received);
        let Some(env) = Envelope::from_headers(msg.headers.as_ref()) else {
            BusStats::bump(&ctx.stats.malformed);
            continue;
        };
        let seen = tracker.observe(env);
        let Some(text) = notification(&msg.payload, &channel) else {
            // Counted and skipped; on a book it was a change, so the book resyncs.
            BusStats::bump(&ctx.stats.malformed);
            if book && synced {
                synced = snapshot(&ctx, &channel, &snapshot_subject, &mut tracker, true).await;
            }
            continue;
        };
        match seen {
            Seen::Old => continue,
            Seen::Next | Seen::First if synced => {}
            Seen::Next | Seen::First => continue,
            Seen::Gap { .. } | Seen::Restart => {
                BusStats::bump(&ctx.stats.gaps);
                if book {
                    synced = snapshot(&ctx, &channel, &snapshot_subject, &mut tracker, true).await;
                    continue;
                }
            }
        }
        let origin = ctx.origins.as_ref().and_then(|o| o.find(&subject, env));
        if !ctx.to_hub(text.to_owned(), origin).await {
            return;
        }
    }
}

/// Fetches the publisher's snapshot of a book, hands it to the hub, and moves `tracker` to
/// the last message it includes. `false`: no snapshot now (publisher away, book not synced
/// there): the caller asks again later and applies nothing meanwhile.
async fn snapshot(ctx: &Ctx, channel: &str, subject: &str, tracker: &mut SeqTracker, resync: bool) -> bool {
    let reply = tokio::time::timeout(REQUEST_TIMEOUT, ctx.client.request(subject.to_owned(), Bytes::new())).await;
    let Ok(Ok(msg)) = reply else { return false };
    let Some(env) = Envelope::from_headers(msg.headers.as_ref()) else { return false };
    let Some(text) = notification(&msg.payload, channel) else {
        BusStats::bump(&ctx.stats.malformed);
        return false;
    };
    tracker.resume_at(env);
    if resync {
        BusStats::bump(&ctx.stats.resyncs);
    }
    ctx.to_hub(text.to_owned(), None).await
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::{ServeConfig, UpstreamSource};
    use serde_json::Value;
    use ticktrade_testkit::NatsServer;

    /// The next frame the edge hands its hub, as JSON (other hub messages are skipped).
    async fn next_frame(hub: &mut mpsc::Receiver<HubMsg>) -> Value {
        loop {
            let msg = tokio::time::timeout(Duration::from_secs(10), hub.recv()).await.expect("no frame").unwrap();
            if let HubMsg::Upstream(UpEvent::Frame(text, _)) = msg {
                return serde_json::from_str(&text).unwrap();
            }
        }
    }

    /// The next book notification, snapshot or change.
    async fn next_book(hub: &mut mpsc::Receiver<HubMsg>) -> Value {
        loop {
            let frame = next_frame(hub).await;
            if frame["params"]["channel"] == "book.BTC-PERPETUAL.100ms" {
                return frame["params"]["data"].clone();
            }
        }
    }

    /// Reads book notifications until a snapshot and the change after it, which must chain on it.
    async fn snapshot_then_change(hub: &mut mpsc::Receiver<HubMsg>) {
        while next_book(hub).await["type"] != "snapshot" {}
        let mut last = None;
        loop {
            let data = next_book(hub).await;
            assert_ne!(data["type"], "snapshot", "one snapshot per resync: {data}");
            if let Some(prev) = last {
                assert_eq!(data["prev_change_id"], prev, "a broken chain after the snapshot");
                return;
            }
            last = Some(data["change_id"].clone());
        }
    }

    /// A slow-consumer event (messages dropped for us, on any subject) takes a fresh
    /// snapshot of every followed book, counted as a resync, and the changes after it chain
    /// on it; trades just go on.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_slow_consumer_event_resyncs_every_followed_book() {
        let nats = NatsServer::start();
        let sim = ticktrade_sim::spawn_loopback(ticktrade_sim::SimConfig { rate_per_s: 400, ..Default::default() })
            .await
            .unwrap();
        let bus = ticktrade_bus::BusConfig::parse(&nats.url(), None, |_| None).unwrap();
        let config = ServeConfig {
            upstream: UpstreamSource::Url(sim.ws_url()),
            publish: Some(bus.clone()),
            ..Default::default()
        };
        let publisher = crate::spawn(config).await.unwrap();
        let client = ticktrade_bus::connect(&bus, |_| {}).await.unwrap();
        let stats = Arc::new(BusStats::default());
        let (requests, requests_rx) = mpsc::channel(16);
        let (hub_tx, mut hub) = mpsc::channel(4096);
        let (events, events_rx) = mpsc::unbounded_channel();
        let edge =
            tokio::spawn(run(client, Subjects::default(), requests_rx, hub_tx, Arc::clone(&stats), events_rx, None));
        let channels = r#"["book.BTC-PERPETUAL.100ms","trades.BTC-PERPETUAL.100ms"]"#;
        let subscribe =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"public/subscribe","params":{{"channels":{channels}}}}}"#);
        requests.send(subscribe).await.unwrap();
        snapshot_then_change(&mut hub).await;
        assert_eq!(stats.counters().resyncs, 0, "the first snapshot is not a resync");

        events.send(BusEvent::SlowConsumer).unwrap();
        snapshot_then_change(&mut hub).await;
        assert_eq!(stats.counters().resyncs, 1, "{}", stats.counters());
        loop {
            if next_frame(&mut hub).await["params"]["channel"] == "trades.BTC-PERPETUAL.100ms" {
                break;
            }
        }
        edge.abort();
        publisher.shutdown().await;
        sim.shutdown().await;
    }
}
