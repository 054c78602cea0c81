//! The NATS sink (`ticktrade hl --publish nats://…`): every coin's `l2Book` at each of the
//! seven aggregations (default depth), its `trades` and `bbo`, and `allMids` go to the bus
//! (`ticktrade_bus::hl` subjects) as the frames the engine already writes for its WebSocket
//! clients, each with its subject's publisher sequence (`ticktrade_bus::envelope`); and the
//! publisher answers edges' snapshot requests with each feed's latest frame, and their
//! requests for the coin list.
//!
//! The sink is eight subscribers of the engine, like clients (`Subscribers::connect_sink`):
//! one per aggregation (each subscribed to every coin), and one for trades, `bbo` and
//! `allMids`. So the engine computes, encodes and queues exactly as for a client that asked for
//! them (a frame shared with the clients of the same view, never encoded twice), and the sink
//! knows a frame's aggregation by the subscriber it came to. A subscriber's queue is bounded
//! and drops what does not fit (counted); its writer task alone awaits NATS. After a drop,
//! every subject of that queue skips one sequence number, so edges see a gap and resync.
//!
//! Owns: the sink's subscribers and queues, the per-subject sequences and latest frames, the
//! writer tasks and the snapshot responder. The counters ([`BusStats`], also kept by the edge,
//! `server::edge`) are the bus crate's.
//! Must not: slow the engine (it only offers to bounded queues), change a frame, or encode one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::StreamExt;
use serde::Deserialize;
use ticktrade_bus::async_nats::{self, HeaderMap, Subject};
use ticktrade_bus::{Envelope, HlSubject, HlSubjects, Variant};
use ticktrade_hl_proto::ws::{ClientMessage, DEFAULT_N_LEVELS, L2Variant, Subscription};
use ticktrade_net::outbound::{Outbound, Queued, SlowPolicy};
use tokio::task::JoinHandle;

use super::engine::EngineMsg;
use super::publish::{ClientId, Frames};

pub use ticktrade_bus::{BusCounters, BusStats};

/// Connects to the bus as `config` says; every connection event is counted in `stats`, and
/// what an edge acts on comes out of the receiver (a publisher may drop it).
pub async fn connect(
    config: &ticktrade_bus::BusConfig,
    stats: Arc<BusStats>,
) -> Result<(async_nats::Client, tokio::sync::mpsc::UnboundedReceiver<super::edge::BusEvent>), ticktrade_bus::BusError>
{
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let client = ticktrade_bus::connect(config, move |event| {
        if let Some(event) = super::edge::classify(&stats, &event) {
            let _ = tx.send(event);
        }
    })
    .await?;
    Ok((client, rx))
}

/// The `l2Book` depth carried on the bus: the default, what a subscription without `nLevels`
/// gets.
pub const CARRIED_LEVELS: u16 = DEFAULT_N_LEVELS as u16;

/// The subject variant of `variant` at the carried depth (`mantissa` 1 is written as none,
/// as Hyperliquid treats them as one).
pub fn carried_variant(variant: L2Variant) -> Variant {
    Variant {
        n_sig_figs: variant.n_sig_figs().map(|s| s as u8),
        mantissa: (variant.mantissa() != 1).then_some(variant.mantissa() as u8),
        n_levels: CARRIED_LEVELS,
    }
}

/// The position in `L2Variant::ALL` of a carried subject variant.
pub fn carried_index(variant: &Variant) -> Option<usize> {
    L2Variant::ALL.iter().position(|v| carried_variant(*v) == *variant)
}

/// What a frame written for clients is: its feed (`l2Book` without its variant, which the
/// frame does not say) and coin; `None` for a frame the bus does not carry (a
/// `subscriptionResponse`, an error).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    L2Book,
    Trades,
    Bbo,
    AllMids,
}

/// The kind and coin (empty for `allMids`) of a frame, read from its start only (the engine
/// writes the channel and the coin first).
pub fn frame_feed(frame: &[u8]) -> Option<(FrameKind, String)> {
    const PREFIXES: [(&[u8], FrameKind); 3] = [
        (br#"{"channel":"l2Book","data":{"coin":"#, FrameKind::L2Book),
        (br#"{"channel":"trades","data":[{"coin":"#, FrameKind::Trades),
        (br#"{"channel":"bbo","data":{"coin":"#, FrameKind::Bbo),
    ];
    if frame.starts_with(br#"{"channel":"allMids","data":{"mids":"#) {
        return Some((FrameKind::AllMids, String::new()));
    }
    let (kind, rest) = PREFIXES.iter().find_map(|(p, k)| frame.strip_prefix(*p).map(|rest| (*k, rest)))?;
    let mut de = serde_json::Deserializer::from_slice(rest);
    let coin = String::deserialize(&mut de).ok()?;
    Some((kind, coin))
}

/// The feed index of a topic table: 0-6 the aggregations, then trades, bbo, allMids.
const FEEDS: usize = 10;
const TRADES: usize = 7;
const BBO: usize = 8;
const ALL_MIDS: usize = 9;

fn feed_index(feed: &HlSubject) -> Option<(usize, &str)> {
    Some(match feed {
        HlSubject::L2Book { coin, variant } => (carried_index(variant)?, coin),
        HlSubject::Trades { coin } => (TRADES, coin),
        HlSubject::Bbo { coin } => (BBO, coin),
        HlSubject::AllMids => (ALL_MIDS, ""),
    })
}

/// One subject's publisher state.
struct Topic {
    subject: Subject,
    seq: u64,
    /// Its queue dropped a frame since its last message: the next one skips a number.
    skip: bool,
    latest: Bytes,
}

type Topics = [HashMap<String, Topic>; FEEDS];

/// Options of the sink.
#[derive(Clone, Debug)]
pub struct SinkConfig {
    pub subjects: HlSubjects,
    /// Items each of the sink's eight queues holds before it drops (an item: a frame).
    pub queue: usize,
    /// The coins published (every coin the engine keeps).
    pub coins: Vec<String>,
}

/// A running sink.
pub struct Sink {
    stats: Arc<BusStats>,
    tasks: Vec<JoinHandle<()>>,
    queues: Vec<Arc<Outbound<Frames>>>,
    drops: Vec<Arc<AtomicU64>>,
    /// This run's id (`Ticktrade-Publisher`).
    pub publisher: u64,
}

impl Sink {
    /// The counters now (drops summed over the queues).
    pub fn counters(&self) -> BusCounters {
        let mut counters = self.stats.counters();
        counters.dropped = self.drops.iter().map(|d| d.load(Ordering::Relaxed)).sum();
        counters
    }

    /// Stops the writers and the responder (the engine's subscriptions stay until it stops).
    pub fn stop(self) {
        for queue in &self.queues {
            queue.shutdown();
        }
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// The ids of the sink's subscribers: from the top of the id space, far from the clients'
/// (counted from 1).
const SINK_IDS: ClientId = u64::MAX - 16;

/// A run id that differs between runs (the clock's nanoseconds mixed with the process id).
pub fn run_id() -> u64 {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 48)
}

/// Subscribes the sink to every coin through `engine` and starts its writers and the
/// snapshot responder on `client`. `stats` is also the one given to `connect`'s events.
pub fn start_sink(
    client: async_nats::Client,
    engine: &std::sync::mpsc::Sender<EngineMsg>,
    config: SinkConfig,
    stats: Arc<BusStats>,
) -> Sink {
    let publisher = run_id();
    let topics: Arc<Mutex<Topics>> = Arc::new(Mutex::new(Default::default()));
    let mut sink =
        Sink { stats: Arc::clone(&stats), tasks: Vec::new(), queues: Vec::new(), drops: Vec::new(), publisher };
    for lane in 0..=L2Variant::ALL.len() {
        let id = SINK_IDS + lane as u64;
        let queue = Arc::new(Outbound::new(Queued, config.queue, SlowPolicy::Conflate));
        let drops = Arc::new(AtomicU64::new(0));
        let _ = engine.send(EngineMsg::ConnectSink { id, tx: Arc::clone(&queue), drops: Arc::clone(&drops) });
        for sub in lane_subscriptions(lane, &config.coins) {
            let text = serde_json::json!({"method": "subscribe", "subscription": &sub}).to_string();
            let _ =
                engine.send(EngineMsg::Request { id, message: ClientMessage::Subscribe { subscription: sub }, text });
        }
        let writer = Writer {
            lane,
            client: client.clone(),
            subjects: config.subjects.clone(),
            topics: Arc::clone(&topics),
            stats: Arc::clone(&stats),
            drops: Arc::clone(&drops),
            publisher,
        };
        sink.tasks.push(tokio::spawn(writer.run(Arc::clone(&queue))));
        sink.queues.push(queue);
        sink.drops.push(drops);
    }
    let coins = Bytes::from(serde_json::to_vec(&config.coins).unwrap_or_default());
    sink.tasks.push(tokio::spawn(respond(client, config.subjects, topics, stats, publisher, coins)));
    sink
}

/// What subscriber `lane` asks the engine for: aggregation `lane` of every coin, or (the last
/// lane) every coin's trades and `bbo`, and `allMids`.
fn lane_subscriptions(lane: usize, coins: &[String]) -> Vec<Subscription> {
    match L2Variant::ALL.get(lane) {
        Some(variant) => coins
            .iter()
            .map(|coin| Subscription::L2Book {
                coin: coin.clone(),
                n_sig_figs: variant.n_sig_figs(),
                mantissa: (variant.mantissa() != 1).then_some(variant.mantissa()),
                n_levels: None,
                fast: None,
            })
            .collect(),
        None => coins
            .iter()
            .flat_map(|coin| [Subscription::Trades { coin: coin.clone() }, Subscription::Bbo { coin: coin.clone() }])
            .chain([Subscription::AllMids { dex: None }])
            .collect(),
    }
}

pub(crate) fn headers(env: Envelope) -> HeaderMap {
    let mut headers = HeaderMap::new();
    for (name, value) in env.headers() {
        headers.insert(name, value.as_str());
    }
    headers
}

/// One subscriber's writer: its queue's frames to NATS, in order.
struct Writer {
    lane: usize,
    client: async_nats::Client,
    subjects: HlSubjects,
    topics: Arc<Mutex<Topics>>,
    stats: Arc<BusStats>,
    drops: Arc<AtomicU64>,
    publisher: u64,
}

impl Writer {
    async fn run(self, queue: Arc<Outbound<Frames>>) {
        let mut batch = Vec::with_capacity(256);
        let mut seen_drops = 0;
        while queue.recv(&mut batch, 256).await {
            let drops = self.drops.load(Ordering::Relaxed);
            if drops != seen_drops {
                seen_drops = drops;
                self.mark_gap();
            }
            for item in batch.drain(..) {
                for frame in item.into_frames() {
                    let Some((subject, env)) = self.next(&frame) else { continue };
                    match self.client.publish_with_headers(subject, headers(env), frame).await {
                        Ok(()) => BusStats::bump(&self.stats.published),
                        Err(_) => BusStats::bump(&self.stats.publish_errors),
                    }
                }
            }
        }
    }

    /// The lane's feeds in the topic table.
    fn feeds(&self) -> &'static [usize] {
        const L2: [usize; 7] = [0, 1, 2, 3, 4, 5, 6];
        match self.lane {
            l if l < L2.len() => &L2[l..=l],
            _ => &[TRADES, BBO, ALL_MIDS],
        }
    }

    fn mark_gap(&self) {
        let Ok(mut topics) = self.topics.lock() else { return };
        for &feed in self.feeds() {
            for topic in topics[feed].values_mut() {
                topic.skip = true;
            }
        }
    }

    /// The subject of `frame` and its next envelope, keeping it as the subject's latest.
    fn next(&self, frame: &Bytes) -> Option<(Subject, Envelope)> {
        let (kind, coin) = frame_feed(frame)?;
        let (feed, subject) = match (kind, L2Variant::ALL.get(self.lane)) {
            (FrameKind::L2Book, Some(v)) => {
                (self.lane, HlSubject::L2Book { coin: coin.clone(), variant: carried_variant(*v) })
            }
            (FrameKind::Trades, None) => (TRADES, HlSubject::Trades { coin: coin.clone() }),
            (FrameKind::Bbo, None) => (BBO, HlSubject::Bbo { coin: coin.clone() }),
            (FrameKind::AllMids, None) => (ALL_MIDS, HlSubject::AllMids),
            _ => return None,
        };
        let mut topics = self.topics.lock().ok()?;
        let topic = topics[feed].entry(coin).or_insert_with(|| Topic {
            subject: Subject::from(self.subjects.data(&subject)),
            seq: 0,
            skip: false,
            latest: Bytes::new(),
        });
        topic.seq += if std::mem::take(&mut topic.skip) { 2 } else { 1 };
        topic.latest = frame.clone();
        Some((topic.subject.clone(), Envelope { publisher: self.publisher, seq: topic.seq }))
    }
}

/// Answers snapshot requests (`<root>.snapshot.<data subject>`) with the subject's latest
/// frame and its envelope; an empty reply without headers when there is none (nothing
/// published on it yet, or not a carried feed). Answers `<root>.coins` with `coins` (a JSON
/// array of the coins published) under this run's id (sequence 0).
async fn respond(
    client: async_nats::Client,
    subjects: HlSubjects,
    topics: Arc<Mutex<Topics>>,
    stats: Arc<BusStats>,
    publisher: u64,
    coins: Bytes,
) {
    let (mut snapshots, mut coin_requests) =
        match (client.subscribe(subjects.snapshot_all()).await, client.subscribe(subjects.coins()).await) {
            (Ok(snapshots), Ok(coin_requests)) => (snapshots, coin_requests),
            (Err(err), _) | (_, Err(err)) => {
                tracing::warn!("bus: could not subscribe to the request subjects ({err}); edges get no snapshots");
                return;
            }
        };
    loop {
        let (request, is_snapshot) = tokio::select! {
            Some(m) = snapshots.next() => (m, true),
            Some(m) = coin_requests.next() => (m, false),
            else => return,
        };
        let Some(reply) = request.reply else { continue };
        BusStats::bump(&stats.requests);
        let answer = if is_snapshot {
            subjects.parse_snapshot(&request.subject).and_then(|feed| {
                let (index, coin) = feed_index(&feed)?;
                let topics = topics.lock().ok()?;
                let topic = topics[index].get(coin)?;
                Some((topic.latest.clone(), Envelope { publisher, seq: topic.seq }))
            })
        } else {
            Some((coins.clone(), Envelope { publisher, seq: 0 }))
        };
        let sent = match answer {
            Some((frame, env)) => client.publish_with_headers(reply, headers(env), frame).await,
            None => client.publish(reply, Bytes::new()).await,
        };
        if sent.is_err() {
            BusStats::bump(&stats.publish_errors);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_known_by_their_start() {
        let l2 = br#"{"channel":"l2Book","data":{"coin":"PURR/USDC","time":1,"levels":[[],[]]}}"#;
        assert_eq!(frame_feed(l2), Some((FrameKind::L2Book, "PURR/USDC".to_owned())));
        let trades = br#"{"channel":"trades","data":[{"coin":"@107","side":"B"}]}"#;
        assert_eq!(frame_feed(trades), Some((FrameKind::Trades, "@107".to_owned())));
        let bbo = br#"{"channel":"bbo","data":{"coin":"B\"TC","time":1,"bbo":[null,null]}}"#;
        assert_eq!(frame_feed(bbo), Some((FrameKind::Bbo, "B\"TC".to_owned())));
        let mids = br#"{"channel":"allMids","data":{"mids":{"BTC":"1.0"}}}"#;
        assert_eq!(frame_feed(mids), Some((FrameKind::AllMids, String::new())));
        for other in [
            &br#"{"channel":"subscriptionResponse","data":{}}"#[..],
            br#"{"channel":"error","data":"x"}"#,
            br#"{"channel":"l2Book","data":{"coin":12}}"#,
            b"",
        ] {
            assert_eq!(frame_feed(other), None);
        }
    }

    #[test]
    fn every_variant_is_carried_once_at_the_default_depth() {
        let tokens: Vec<String> = L2Variant::ALL.iter().map(|v| carried_variant(*v).token()).collect();
        assert_eq!(tokens, ["full-20", "s5-20", "s5m2-20", "s5m5-20", "s4-20", "s3-20", "s2-20"]);
        for (i, v) in L2Variant::ALL.iter().enumerate() {
            assert_eq!(carried_index(&carried_variant(*v)), Some(i));
        }
        assert_eq!(carried_index(&Variant { n_levels: 10, ..carried_variant(L2Variant::Full) }), None);
        // The subscriptions each lane makes are valid ones, each coin once per lane.
        let coins = ["BTC".to_owned(), "ETH".to_owned()];
        for lane in 0..L2Variant::ALL.len() {
            let subs = lane_subscriptions(lane, &coins);
            assert_eq!(subs.len(), 2);
            for sub in subs {
                let Subscription::L2Book { n_sig_figs, mantissa, .. } = sub else { panic!("{sub:?}") };
                assert_eq!(L2Variant::from_params(n_sig_figs, mantissa), Some(L2Variant::ALL[lane]));
            }
        }
        assert_eq!(lane_subscriptions(7, &coins).len(), 5);
    }
}
