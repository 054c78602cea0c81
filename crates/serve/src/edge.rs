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
use ticktrade_bus::async_nats::{self, HeaderMap};
use ticktrade_bus::{Envelope, Kind, Seen, SeqTracker, Subjects};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::bus::{BusOrigins, BusStats};
use crate::hub::{HubMsg, UpEvent};

/// What the NATS connection did, as the edge acts on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BusEvent {
    Lost,
    Restored,
    SlowConsumer,
}

/// Maps a NATS event to what the edge does about it (counting it on the way).
pub(crate) fn classify(stats: &BusStats, event: &async_nats::Event) -> Option<BusEvent> {
    match (stats.on_event(event), event) {
        (_, async_nats::Event::SlowConsumer(_)) => Some(BusEvent::SlowConsumer),
        (Some(true), _) => Some(BusEvent::Restored),
        (Some(false), async_nats::Event::Disconnected) => Some(BusEvent::Lost),
        _ => None,
    }
}

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

/// (Re)starts following upstream channel `ch`; `false` if it is not carried on the bus.
fn start(ctx: &Ctx, follows: &mut HashMap<String, JoinHandle<()>>, ch: &str) -> bool {
    let Some((kind, instrument)) = ticktrade_bus::subject::parse_channel(ch) else { return false };
    let Ok(subject) = ctx.subjects.data(kind, instrument) else { return false };
    let Ok(snapshot) = ctx.subjects.snapshot(instrument) else { return false };
    if let Some(old) = follows.remove(ch) {
        old.abort();
    }
    let task = tokio::spawn(follow(ctx.clone(), ch.to_owned(), kind, subject, snapshot));
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

fn envelope(headers: Option<&HeaderMap>) -> Option<Envelope> {
    let headers = headers?;
    Envelope::decode(|name| headers.get(name).map(AsRef::as_ref)).ok()
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
/// snapshot and goes back to one after a gap.
async fn follow(ctx: Ctx, channel: String, kind: Kind, subject: String, snapshot_subject: String) {
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
    let mut synced = !book || snapshot(&ctx, &channel, &snapshot_subject, &mut tracker, false).await;
    let mut retry = tokio::time::interval(SNAPSHOT_RETRY);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let msg = tokio::select! {
            msg = sub.next() => match msg {
                Some(msg) => msg,
                None => return,
            },
            _ = retry.tick(), if !synced => {
                synced = snapshot(&ctx, &channel, &snapshot_subject, &mut tracker, true).await;
                continue;
            }
        };
        BusStats::bump(&ctx.stats.received);
        let Some(env) = envelope(msg.headers.as_ref()) else {
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
    let Some(env) = envelope(msg.headers.as_ref()) else { return false };
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
