//! The bus as upstream (`ticktrade hl --upstream nats://…`): an edge serving Hyperliquid
//! clients (`/ws`, `/info`) from what a publisher (`--publish`, `server::bus`) puts on NATS,
//! with no node files, no books and no engine.
//!
//! - Carried subscriptions (`l2Book` at any of the seven aggregations and the default depth,
//!   `trades`, `bbo`, `allMids`) are answered as a direct server does: `subscriptionResponse`,
//!   then the feed's latest frame (not for trades), then every frame as it comes, byte for
//!   byte what the publisher's engine wrote. A subscription to a coin the publisher does not
//!   serve gets Hyperliquid's `Invalid subscription` error, as from a direct server (the
//!   edge asks the publisher for its coin list, `<root>.coins`, at start, on a subscription
//!   while it has none, and again on a new publisher run or a reconnect). Any other
//!   subscription (`l4Book`, per-user feeds, another `nLevels`) gets an error frame that says
//!   it is not carried.
//! - Each data subject's sequence is followed (`SeqTracker`). The carried feeds other than
//!   trades are whole state, so a resync is "take the latest frame": on a gap or a publisher
//!   restart (counted), on the first message of a subject, after a lost NATS connection or a
//!   slow-consumer event, the feed is stale: nothing more is sent to its clients until the
//!   publisher's snapshot of it (`<root>.snapshot.<subject>`) is applied; then its clients get
//!   the newest of the snapshot and what came meanwhile, unless they already have it. A trades
//!   gap is counted and the stream goes on (there is nothing to resync).
//! - A malformed message (subject, headers, or a payload that is not the subject's frame) is
//!   counted and skipped; on a whole-state feed it also starts a resync.
//!
//! Owns: the edge's clients and their subscriptions, each subject's tracker and latest frame,
//! snapshot fetches, the publisher's coin list, and the edge's `/ws` and `/info`.
//! Must not: block on a client (bounded queues; a full one disconnects the client with a
//! reason) or send a feed's clients a frame older than one they have.

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use futures_util::StreamExt;
use ticktrade_bus::async_nats;
use ticktrade_bus::{Envelope, HlSubject, HlSubjects, Seen, SeqTracker};
use ticktrade_hl_proto::info::InfoRequest;
use ticktrade_hl_proto::ws::{self as proto, ClientMessage, L2Params, Subscription, errors};
use ticktrade_net::outbound::Offer;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;
use yawc::{HttpWebSocket, IncomingUpgrade};

use super::bus::{BusCounters, BusStats, CARRIED_LEVELS, FrameKind, carried_variant, frame_feed};
use super::publish::{ClientId, ClientQueue, Frames, client_queue};

/// How long a snapshot request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);
/// How often stale feeds without a request in flight ask again.
const RETRY: Duration = Duration::from_millis(250);

/// What the edge acts on among its connection's events, and how one is told (the serve
/// edge's too: `ticktrade_bus::edge`).
pub use ticktrade_bus::{BusEvent, classify};

/// Edge options.
#[derive(Clone, Debug)]
pub struct EdgeConfig {
    pub subjects: HlSubjects,
    /// Queue items a client may have unread before it is disconnected as too slow.
    pub queue: usize,
}

/// One data subject as the edge follows it.
#[derive(Default)]
struct Topic {
    tracker: SeqTracker,
    /// The newest frame known (whole-state feeds) and its envelope.
    latest: Option<(Envelope, Bytes)>,
    /// The envelope of the frame the clients last got.
    sent: Option<Envelope>,
    /// Waiting for a snapshot: nothing goes to the clients.
    stale: bool,
    /// A snapshot request is in flight.
    pending: bool,
    clients: Vec<ClientId>,
}

struct EdgeClient {
    queue: Arc<ClientQueue>,
    kill: Option<oneshot::Sender<String>>,
    subs: HashMap<Subscription, HlSubject>,
}

/// The coins a publisher run serves.
struct Coins {
    publisher: u64,
    names: HashSet<String>,
}

#[derive(Default)]
struct EdgeState {
    topics: HashMap<HlSubject, Topic>,
    clients: HashMap<ClientId, EdgeClient>,
    dead: Vec<ClientId>,
    /// The publisher's coin list; `None` until one answered.
    coins: Option<Coins>,
    /// A coin list request is in flight.
    coins_pending: bool,
}

impl EdgeState {
    /// Queues `frame` for `id`; a full queue kills the client (dropped by `reap`).
    fn send(&mut self, id: ClientId, frame: Bytes) {
        let Some(client) = self.clients.get_mut(&id) else { return };
        match client.queue.offer(Frames::one(frame), None) {
            Offer::Written | Offer::Queued | Offer::Conflated => {}
            Offer::Dropped | Offer::Disconnect | Offer::Closed => {
                if let Some(kill) = client.kill.take() {
                    let _ = kill.send(format!("slow client: {} queue items unread", client.queue.capacity()));
                }
                self.dead.push(id);
            }
        }
    }

    /// Sends `frame` to every client of `feed`.
    fn fan_out(&mut self, feed: &HlSubject, frame: &Bytes) {
        let ids = self.topics.get(feed).map(|t| t.clients.clone()).unwrap_or_default();
        for id in ids {
            self.send(id, frame.clone());
        }
    }

    /// Forgets the clients that died.
    fn reap(&mut self) {
        while let Some(id) = self.dead.pop() {
            self.drop_client(id);
        }
    }

    fn drop_client(&mut self, id: ClientId) {
        let Some(client) = self.clients.remove(&id) else { return };
        for feed in client.subs.values() {
            if let Some(topic) = self.topics.get_mut(feed) {
                topic.clients.retain(|&c| c != id);
            }
        }
        client.queue.finish();
    }
}

struct Shared {
    state: Mutex<EdgeState>,
    client: async_nats::Client,
    subjects: HlSubjects,
    stats: Arc<BusStats>,
    config: EdgeConfig,
    next_id: AtomicU64,
}

/// A running edge; call `stop`.
pub struct Edge {
    pub addr: SocketAddr,
    shared: Arc<Shared>,
    tasks: Vec<JoinHandle<()>>,
}

impl Edge {
    pub fn counters(&self) -> BusCounters {
        self.shared.stats.counters()
    }

    /// Clients connected now.
    pub fn n_clients(&self) -> usize {
        self.shared.state.lock().map_or(0, |st| st.clients.len())
    }

    pub fn stop(self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Starts an edge on `listener` fed by `client` (`events`: its connection events, from
/// [`classify`]).
pub async fn start_edge(
    listener: tokio::net::TcpListener,
    client: async_nats::Client,
    events: mpsc::UnboundedReceiver<BusEvent>,
    config: EdgeConfig,
    stats: Arc<BusStats>,
) -> std::io::Result<Edge> {
    let addr = listener.local_addr()?;
    let mut subs = Vec::new();
    for wildcard in config.subjects.data_all() {
        subs.push(client.subscribe(wildcard).await.map_err(std::io::Error::other)?);
    }
    let shared = Arc::new(Shared {
        state: Mutex::new(EdgeState::default()),
        client,
        subjects: config.subjects.clone(),
        stats,
        config,
        next_id: AtomicU64::new(1),
    });
    fetch_coins(&shared).await;
    let app = Router::new().route("/ws", get(ws_upgrade)).route("/info", post(info)).with_state(Arc::clone(&shared));
    let server = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::error!("edge server stopped: {err}");
        }
    });
    let follow = tokio::spawn(follow(Arc::clone(&shared), futures_util::stream::select_all(subs), events));
    Ok(Edge { addr, shared, tasks: vec![server, follow] })
}

/// Takes every data message and connection event, and asks again for stale feeds' snapshots.
async fn follow(
    shared: Arc<Shared>,
    mut messages: futures_util::stream::SelectAll<async_nats::Subscriber>,
    mut events: mpsc::UnboundedReceiver<BusEvent>,
) {
    let mut retry = tokio::time::interval(RETRY);
    retry.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            msg = messages.next() => match msg {
                Some(msg) => on_message(&shared, msg),
                None => return,
            },
            Some(event) = events.recv() => on_event(&shared, event),
            _ = retry.tick() => {
                let stale: Vec<HlSubject> = match shared.state.lock() {
                    Ok(st) => st.topics.iter()
                        .filter(|(f, t)| t.stale && !t.pending && f.has_snapshot() && (!t.clients.is_empty() || t.latest.is_some()))
                        .map(|(f, _)| f.clone())
                        .collect(),
                    Err(_) => return,
                };
                for feed in stale {
                    resync(&shared, feed);
                }
            }
        }
    }
}

/// Every whole-state feed goes stale (the retry tick resyncs it); trades, with nothing to
/// resync, go on (a loss shows as a counted gap), after a reconnect from the next message on.
fn on_event(shared: &Arc<Shared>, event: BusEvent) {
    {
        let Ok(mut st) = shared.state.lock() else { return };
        for (feed, topic) in st.topics.iter_mut() {
            if feed.has_snapshot() {
                topic.stale = true;
            }
            if event == BusEvent::Restored {
                topic.tracker.reset();
            }
        }
    }
    if event == BusEvent::Restored {
        refresh_coins(shared);
    }
}

impl EdgeState {
    /// Takes the coin-list request on, unless one is in flight.
    fn claim_coins(&mut self) -> bool {
        !std::mem::replace(&mut self.coins_pending, true)
    }
}

/// Asks the publisher for its coin list (unless a request is in flight) and keeps it.
async fn fetch_coins(shared: &Shared) {
    if shared.state.lock().is_ok_and(|mut st| st.claim_coins()) {
        fetch_claimed_coins(shared).await;
    }
}

/// The request [`EdgeState::claim_coins`] took on; the list is kept as it was when none answers.
async fn fetch_claimed_coins(shared: &Shared) {
    let reply =
        tokio::time::timeout(REQUEST_TIMEOUT, shared.client.request(shared.subjects.coins(), Bytes::new())).await;
    let coins = match reply {
        Ok(Ok(msg)) => Envelope::from_headers(msg.headers.as_ref()).zip(serde_json::from_slice(&msg.payload).ok()),
        _ => None,
    };
    let Ok(mut st) = shared.state.lock() else { return };
    st.coins_pending = false;
    if let Some((env, names)) = coins {
        st.coins = Some(Coins { publisher: env.publisher, names });
    }
}

/// [`fetch_coins`] in a task of its own.
fn refresh_coins(shared: &Arc<Shared>) {
    let shared = Arc::clone(shared);
    tokio::spawn(async move { fetch_coins(&shared).await });
}

/// Whether `payload` is a frame of `feed` (its channel and coin).
fn is_frame_of(payload: &[u8], feed: &HlSubject) -> bool {
    let Some((kind, coin)) = frame_feed(payload) else { return false };
    match feed {
        HlSubject::L2Book { coin: c, .. } => kind == FrameKind::L2Book && coin == *c,
        HlSubject::Trades { coin: c } => kind == FrameKind::Trades && coin == *c,
        HlSubject::Bbo { coin: c } => kind == FrameKind::Bbo && coin == *c,
        HlSubject::AllMids => kind == FrameKind::AllMids,
    }
}

fn on_message(shared: &Arc<Shared>, msg: async_nats::Message) {
    let stats = &shared.stats;
    BusStats::bump(&stats.received);
    let (Some(feed), Some(env)) =
        (shared.subjects.parse_data(&msg.subject), Envelope::from_headers(msg.headers.as_ref()))
    else {
        BusStats::bump(&stats.malformed);
        return;
    };
    let whole = feed.has_snapshot();
    let mut need_resync = false;
    let new_run;
    {
        let Ok(mut st) = shared.state.lock() else { return };
        // A new publisher run may serve other coins: ask once (the claim stops the next
        // messages of the run from asking again while the request is in flight).
        new_run = st.coins.as_ref().is_some_and(|c| c.publisher != env.publisher) && st.claim_coins();
        let topic = st.topics.entry(feed.clone()).or_default();
        let seen = topic.tracker.observe(env);
        if !is_frame_of(&msg.payload, &feed) {
            BusStats::bump(&stats.malformed);
            if whole && seen != Seen::Old {
                topic.stale = true;
                need_resync = true;
            }
        } else {
            match seen {
                Seen::Old => return,
                Seen::Next => {}
                Seen::First => {
                    topic.stale |= whole;
                    need_resync = whole;
                }
                Seen::Gap { .. } | Seen::Restart => {
                    BusStats::bump(&stats.gaps);
                    topic.stale |= whole;
                    need_resync = whole;
                }
            }
            let frame = msg.payload;
            if whole {
                topic.latest = Some((env, frame.clone()));
            }
            if !topic.stale {
                topic.sent = Some(env);
                st.fan_out(&feed, &frame);
                st.reap();
            }
        }
    }
    if need_resync {
        resync(shared, feed);
    }
    if new_run {
        let shared = Arc::clone(shared);
        tokio::spawn(async move { fetch_claimed_coins(&shared).await });
    }
}

/// Fetches `feed`'s snapshot (unless a request is in flight) and applies it.
fn resync(shared: &Arc<Shared>, feed: HlSubject) {
    let Some(subject) = shared.subjects.snapshot(&feed) else { return };
    {
        let Ok(mut st) = shared.state.lock() else { return };
        let topic = st.topics.entry(feed.clone()).or_default();
        if topic.pending {
            return;
        }
        topic.pending = true;
    }
    let shared = Arc::clone(shared);
    tokio::spawn(async move {
        let reply = tokio::time::timeout(REQUEST_TIMEOUT, shared.client.request(subject, Bytes::new())).await;
        let snapshot = match reply {
            Ok(Ok(msg)) => match Envelope::from_headers(msg.headers.as_ref()) {
                Some(env) if is_frame_of(&msg.payload, &feed) => Some((env, msg.payload)),
                Some(_) => {
                    BusStats::bump(&shared.stats.malformed);
                    None
                }
                // Nothing published on it yet: asked again by the retry tick.
                None => None,
            },
            _ => None,
        };
        let Ok(mut st) = shared.state.lock() else { return };
        let Some(topic) = st.topics.get_mut(&feed) else { return };
        topic.pending = false;
        let Some((env, frame)) = snapshot else { return };
        let newer = match &topic.latest {
            Some((latest, _)) => latest.publisher != env.publisher || env.seq >= latest.seq,
            None => true,
        };
        if newer {
            topic.tracker.resume_at(env);
            topic.latest = Some((env, frame));
        }
        topic.stale = false;
        BusStats::bump(&shared.stats.resyncs);
        if let Some((latest, frame)) = topic.latest.clone()
            && topic.sent != Some(latest)
        {
            topic.sent = Some(latest);
            st.fan_out(&feed, &frame);
            st.reap();
        }
    });
}

/// The carried feed of a subscription, or the error frame's text.
fn carried(sub: &Subscription) -> Result<HlSubject, String> {
    match sub {
        Subscription::L2Book { coin, n_sig_figs, mantissa, n_levels, fast } => {
            let params = L2Params::new(*n_sig_figs, *mantissa, *n_levels, *fast)
                .ok_or_else(|| errors::invalid(&sub.to_json()))?;
            if params.n_levels != usize::from(CARRIED_LEVELS) {
                return Err(not_carried(sub));
            }
            Ok(HlSubject::L2Book { coin: coin.clone(), variant: carried_variant(params.variant) })
        }
        Subscription::Trades { coin } => Ok(HlSubject::Trades { coin: coin.clone() }),
        Subscription::Bbo { coin } => Ok(HlSubject::Bbo { coin: coin.clone() }),
        Subscription::AllMids { .. } => Ok(HlSubject::AllMids),
        _ => Err(not_carried(sub)),
    }
}

fn not_carried(sub: &Subscription) -> String {
    format!(
        "Not available on this edge server: {} is not carried on the bus (l2Book at nLevels {CARRIED_LEVELS}, \
         trades, bbo and allMids are)",
        sub.to_json()
    )
}

fn on_client_message(shared: &Arc<Shared>, id: ClientId, message: ClientMessage, text: &str) {
    let mut resync_feed = None;
    {
        let Ok(mut st) = shared.state.lock() else { return };
        let frame = |text: String| Bytes::from(text);
        match message {
            ClientMessage::Ping => st.send(id, Bytes::from_static(br#"{"channel":"pong"}"#)),
            ClientMessage::Subscribe { subscription } => {
                let sub = subscription.normalised();
                let served = |coin: &str| st.coins.as_ref().is_none_or(|c| c.names.contains(coin));
                if sub.coin().is_some_and(|coin| !served(coin)) {
                    return st.send(id, frame(super::invalid_subscription(&sub)));
                }
                let feed = match carried(&sub) {
                    Ok(feed) => feed,
                    Err(why) => return st.send(id, frame(proto::error_frame(&why))),
                };
                let Some(client) = st.clients.get_mut(&id) else { return };
                if client.subs.contains_key(&sub) {
                    return st.send(id, frame(proto::error_frame(&errors::already(true, &sub.to_json()))));
                }
                client.subs.insert(sub.clone(), feed.clone());
                st.send(id, frame(proto::subscription_response(true, &sub)));
                let topic = st.topics.entry(feed.clone()).or_default();
                topic.clients.push(id);
                let latest = topic.latest.as_ref().map(|(_, f)| f.clone());
                match latest {
                    Some(latest) => st.send(id, latest),
                    None if feed.has_snapshot() => {
                        topic.stale = true;
                        resync_feed = Some(feed);
                    }
                    None => {}
                }
            }
            ClientMessage::Unsubscribe { subscription } => {
                let sub = subscription.normalised();
                let removed = st.clients.get_mut(&id).and_then(|c| c.subs.remove(&sub));
                match removed {
                    Some(feed) => {
                        if let Some(topic) = st.topics.get_mut(&feed)
                            && let Some(pos) = topic.clients.iter().position(|&c| c == id)
                        {
                            topic.clients.swap_remove(pos);
                        }
                        st.send(id, frame(proto::subscription_response(false, &sub)));
                    }
                    None => st.send(id, frame(proto::error_frame(&errors::already(false, &sub.to_json())))),
                }
            }
            ClientMessage::Post { id: request_id, request } => {
                let reply = match serde_json::from_value::<InfoRequest>(request.payload) {
                    Ok(InfoRequest::L2Book { coin, n_sig_figs, mantissa }) if request.kind == "info" => {
                        match l2_book(&st, &coin, n_sig_figs, mantissa) {
                            Some(book) => proto::post_l2_response(request_id, &book),
                            None => proto::post_error(request_id, &format!("Invalid l2Book request: {text}")),
                        }
                    }
                    _ => proto::post_error(
                        request_id,
                        &format!("Not available on this edge server (only info l2Book is): {text}"),
                    ),
                };
                st.send(id, frame(reply));
            }
        }
        st.reap();
    }
    if let Some(feed) = resync_feed {
        resync(shared, feed);
    }
}

/// The `l2Book` feed of an `/info` request (at the carried depth).
fn l2_feed(coin: &str, n_sig_figs: Option<u32>, mantissa: Option<u32>) -> Option<HlSubject> {
    let params = L2Params::new(n_sig_figs, mantissa, None, None)?;
    Some(HlSubject::L2Book { coin: coin.to_owned(), variant: carried_variant(params.variant) })
}

/// The `WsBook` payload of the latest `l2Book` frame of a coin and aggregation.
fn l2_book(st: &EdgeState, coin: &str, n_sig_figs: Option<u32>, mantissa: Option<u32>) -> Option<String> {
    let feed = l2_feed(coin, n_sig_figs, mantissa)?;
    let (_, frame) = st.topics.get(&feed)?.latest.as_ref()?;
    frame_data(frame, br#"{"channel":"l2Book","data":"#, b"}")
}

fn frame_data(frame: &[u8], prefix: &[u8], suffix: &[u8]) -> Option<String> {
    let data = frame.strip_prefix(prefix)?.strip_suffix(suffix)?;
    String::from_utf8(data.to_vec()).ok()
}

async fn info(State(shared): State<Arc<Shared>>, body: Bytes) -> Response {
    let request = match super::info_request(&body) {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    let json = super::json_body;
    match request {
        InfoRequest::L2Book { coin, n_sig_figs, mantissa } => {
            let Some(feed) = l2_feed(&coin, n_sig_figs, mantissa) else { return json("null".to_owned()) };
            let cached = shared.state.lock().ok().and_then(|st| l2_book(&st, &coin, n_sig_figs, mantissa));
            if let Some(book) = cached {
                return json(book);
            }
            // Not followed yet (a quiet coin): the publisher's latest frame.
            let Some(subject) = shared.subjects.snapshot(&feed) else { return json("null".to_owned()) };
            let reply = tokio::time::timeout(REQUEST_TIMEOUT, shared.client.request(subject, Bytes::new())).await;
            let book = match reply {
                Ok(Ok(msg)) if is_frame_of(&msg.payload, &feed) => {
                    frame_data(&msg.payload, br#"{"channel":"l2Book","data":"#, b"}")
                }
                _ => None,
            };
            json(book.unwrap_or_else(|| "null".to_owned()))
        }
        InfoRequest::AllMids { .. } => {
            let mids = shared.state.lock().ok().and_then(|st| {
                let (_, frame) = st.topics.get(&HlSubject::AllMids)?.latest.as_ref()?;
                frame_data(frame, br#"{"channel":"allMids","data":{"mids":"#, b"}}")
            });
            json(mids.unwrap_or_else(|| "{}".to_owned()))
        }
        _ => (
            StatusCode::BAD_REQUEST,
            "Not available on this edge server (ticktrade hl --upstream): only l2Book and allMids are served from the bus",
        )
            .into_response(),
    }
}

async fn ws_upgrade(State(shared): State<Arc<Shared>>, ws: IncomingUpgrade) -> Response {
    super::upgrade(ws, move |socket| connection(socket, shared))
}

async fn connection(socket: HttpWebSocket, shared: Arc<Shared>) {
    let id = shared.next_id.fetch_add(1, Ordering::Relaxed);
    let out = client_queue(shared.config.queue);
    let (kill_tx, kill_rx) = oneshot::channel::<String>();
    match shared.state.lock() {
        Ok(mut st) => {
            let client = EdgeClient { queue: Arc::clone(&out), kill: Some(kill_tx), subs: HashMap::new() };
            st.clients.insert(id, client);
        }
        Err(_) => return,
    }
    let (sink, mut stream) = socket.split();
    let writer = tokio::spawn(super::write_queue(sink, Arc::clone(&out), kill_rx));
    while let Some(frame) = stream.next().await {
        let text = match super::incoming(&frame) {
            super::Incoming::Text(text) => text,
            super::Incoming::Skip => continue,
            super::Incoming::End => break,
        };
        match ClientMessage::parse(text) {
            Ok(message) => {
                let unknown = shared.state.lock().is_ok_and(|st| st.coins.is_none());
                if unknown && matches!(message, ClientMessage::Subscribe { .. }) {
                    // No publisher answered yet: ask now, so the subscription is judged as a
                    // direct server would (with none still, it is taken as carried).
                    fetch_coins(&shared).await;
                }
                on_client_message(&shared, id, message, text)
            }
            Err(_) => {
                let frame = proto::error_frame(&errors::parse(text));
                let _ = out.offer_if_room(Frames::one(Bytes::from(frame)));
            }
        }
    }
    if let Ok(mut st) = shared.state.lock() {
        st.drop_client(id);
    }
    out.finish();
    let _ = writer.await;
}

#[cfg(test)]
mod tests;
