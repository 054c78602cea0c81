//! The network side of `ticktrade hl`: `/ws` (Hyperliquid's WebSocket API) and `POST /info`
//! on one port, plus the file watcher that wakes the engine.
//!
//! Owns: accepting connections (axum; the WebSocket itself is yawc's, which negotiates
//! permessage-deflate when the client offers it), one reader and one writer task per
//! connection, the writer that drains each client's bounded queue (`ticktrade_net::outbound`,
//! items of one frame or of a coin's `l2Book` frames: `publish::Frames`; the writer sends
//! every frame queued, each item's frames as separate text frames in order, and flushes once),
//! the watcher (`follow::watch_dir`) with the engine's polling interval as the fallback, and
//! the `/info` answers that read only the start-up documents (`meta`, `spotMeta`, `perpDexs`,
//! `exchangeStatus`; the asset contexts ask the engine for their book parts); every other
//! `/info` request goes to the engine thread.
//! Must not: touch books (the engine thread does) or answer before the books are loaded (the
//! engine is built from a loaded snapshot before `start` is called).

pub mod bus;
pub mod edge;
pub mod engine;
pub mod publish;

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::serve::ListenerExt;
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use tokio::sync::oneshot;
use yawc::close::CloseCode;
use yawc::frame::{Frame, OpCode};
use yawc::{CompressionLevel, HttpWebSocket, IncomingUpgrade, Options};

use ticktrade_hl_proto::asset_ctx::{BaseCtxs, exchange_status_json, perp_ctx, spot_ctx, with_ctxs};
use ticktrade_hl_proto::info::{InfoRequest, Meta, SpotMeta, deserialize_error, meta_for_dex, perp_dexs_json};
use ticktrade_hl_proto::ws::{ClientMessage, errors};

use engine::{Engine, EngineMsg};
use publish::Frames;
use ticktrade_hl_proto::asset_ctx::BookCtx;
use ticktrade_hl_proto::info::spot_pair_coin;

/// The `meta` and `spotMeta` documents served verbatim by `/info`, and the base asset
/// contexts (`ticktrade_hl_proto::asset_ctx`): the fields of `metaAndAssetCtxs` /
/// `spotMetaAndAssetCtxs` the books do not determine (funding, open interest, oracle and mark
/// price, volumes, supplies), as the node's info server or `hl gen` gave them at start.
#[derive(Clone, Debug, Default)]
pub struct MetaDocs {
    pub meta: String,
    pub spot_meta: String,
    pub perp_ctxs: BaseCtxs,
    pub spot_ctxs: BaseCtxs,
}

/// Server options.
#[derive(Clone, Debug)]
pub struct ServeConfig {
    /// Queue items a client may have unread before it is disconnected as too slow. An item is
    /// one frame, or up to `publish::BATCH` (8) `l2Book` frames of one coin (a client's frames
    /// of a coin in one block).
    pub queue: usize,
    /// Run each block on the engine thread and its helper under `SCHED_FIFO` at this priority,
    /// in the normal class between blocks (`--rt-priority`, see `crate::sched::BlockClass`);
    /// `start` fails with the reason when that is not permitted. `None`: the normal class.
    pub rt_priority: Option<u8>,
}

impl Default for ServeConfig {
    fn default() -> ServeConfig {
        ServeConfig { queue: 4096, rt_priority: None }
    }
}

struct AppState {
    engine: std::sync::mpsc::Sender<EngineMsg>,
    next_id: AtomicU64,
    docs: MetaDocs,
    config: ServeConfig,
}

/// A running server; dropping it does not stop it, call `stop`.
pub struct Running {
    pub addr: SocketAddr,
    engine: std::sync::mpsc::Sender<EngineMsg>,
    thread: Option<std::thread::JoinHandle<()>>,
    _watcher: Option<notify::RecommendedWatcher>,
    server: tokio::task::JoinHandle<()>,
}

impl Running {
    /// Stops the engine thread and the listener.
    pub fn stop(mut self) {
        let _ = self.engine.send(EngineMsg::Stop);
        self.server.abort();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }

    /// A handle to wake or drive the engine (tests and benchmarks).
    pub fn engine(&self) -> std::sync::mpsc::Sender<EngineMsg> {
        self.engine.clone()
    }
}

/// Starts the engine thread, the file watcher and the HTTP/WebSocket server on `listener`.
pub fn start(
    listener: tokio::net::TcpListener,
    engine: Engine,
    data_dir: &Path,
    docs: MetaDocs,
    config: ServeConfig,
) -> std::io::Result<Running> {
    let addr = listener.local_addr()?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::fs::create_dir_all(data_dir)?;
    let watcher = watch(data_dir, tx.clone());
    let rt_priority = config.rt_priority;
    let (class_tx, class_rx) = std::sync::mpsc::sync_channel(1);
    let base = (docs.perp_ctxs.clone(), docs.spot_ctxs.clone());
    let thread = std::thread::Builder::new().name("hl-engine".into()).spawn(move || {
        // Each block under SCHED_FIFO, the threads in the normal class between blocks; the
        // permission checked now (a switch up and down), so a refusal fails `start`.
        let mut engine = engine;
        engine.set_base_ctxs(base.0, base.1);
        let class = match rt_priority.map(crate::sched::BlockClass::new).transpose() {
            Ok(Some(class)) => class.probe().map(|()| {
                engine.realtime_blocks(class);
            }),
            Ok(None) => Ok(()),
            Err(err) => Err(err),
        };
        let refused = class.is_err();
        let _ = class_tx.send(class);
        if !refused {
            engine.run(rx);
        }
    })?;
    match class_rx.recv() {
        Ok(Ok(())) => {}
        Ok(Err(err)) => {
            let _ = thread.join();
            return Err(std::io::Error::other(err));
        }
        Err(_) => return Err(std::io::Error::other("the engine thread ended before it started")),
    }
    let state = Arc::new(AppState { engine: tx.clone(), next_id: AtomicU64::new(1), docs, config });
    let app = Router::new().route("/ws", get(ws_upgrade)).route("/info", post(info)).with_state(state);
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = tokio::spawn(async move {
        if let Err(err) = axum::serve(listener, app).await {
            tracing::error!("server stopped: {err}");
        }
    });
    Ok(Running { addr, engine: tx, thread: Some(thread), _watcher: watcher, server })
}

/// Wakes the engine on the data directory's notifications (`follow::watch_dir`).
fn watch(data_dir: &Path, tx: std::sync::mpsc::Sender<EngineMsg>) -> Option<notify::RecommendedWatcher> {
    crate::follow::watch_dir(data_dir, move || {
        let _ = tx.send(EngineMsg::Files);
    })
}

/// An `/info` body as a request, or Hyperliquid's 422 answer naming what failed to
/// deserialize (the server and the edge answer bad bodies alike).
pub(crate) fn info_request(body: &[u8]) -> Result<InfoRequest, (StatusCode, String)> {
    serde_json::from_slice::<InfoRequest>(body)
        .map_err(|err| (StatusCode::UNPROCESSABLE_ENTITY, deserialize_error(&err)))
}

/// A JSON document as an `/info` answer.
pub(crate) fn json_body(text: String) -> Response {
    ([(header::CONTENT_TYPE, "application/json")], text).into_response()
}

async fn info(State(state): State<Arc<AppState>>, body: Bytes) -> Response {
    let request = match info_request(&body) {
        Ok(request) => request,
        Err(refusal) => return refusal.into_response(),
    };
    let json = json_body;
    match request {
        InfoRequest::Meta { dex } => match meta_for_dex(&state.docs.meta, dex.as_deref()) {
            Ok(text) => json(text),
            Err(err) => (StatusCode::INTERNAL_SERVER_ERROR, format!("meta document: {err}")).into_response(),
        },
        InfoRequest::SpotMeta => json(state.docs.spot_meta.clone()),
        InfoRequest::PerpDexs => match serde_json::from_str::<Meta>(&state.docs.meta) {
            Ok(meta) => json(perp_dexs_json(&meta)),
            Err(_) => json("[null]".to_owned()),
        },
        InfoRequest::ExchangeStatus => {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            json(exchange_status_json(now.as_millis() as u64))
        }
        InfoRequest::MetaAndAssetCtxs { dex } => match meta_and_ctxs(&state, dex.as_deref()).await {
            Ok(text) => json(text),
            Err(response) => response,
        },
        InfoRequest::SpotMetaAndAssetCtxs => match spot_meta_and_ctxs(&state).await {
            Ok(text) => json(text),
            Err(response) => response,
        },
        other => {
            let (reply, wait) = oneshot::channel();
            if state.engine.send(EngineMsg::Info { request: other, reply }).is_err() {
                return (StatusCode::SERVICE_UNAVAILABLE, "engine stopped").into_response();
            }
            match wait.await {
                Ok(text) => json(text),
                Err(_) => (StatusCode::SERVICE_UNAVAILABLE, "engine stopped").into_response(),
            }
        }
    }
}

fn doc_error(what: &str, err: impl std::fmt::Display) -> Response {
    (StatusCode::INTERNAL_SERVER_ERROR, format!("{what} document: {err}")).into_response()
}

/// The books' part of the contexts of `coins`, from the engine thread.
async fn book_ctxs(state: &AppState, coins: Vec<(String, bool)>) -> Result<Vec<BookCtx>, Response> {
    let (reply, wait) = oneshot::channel();
    let stopped = || (StatusCode::SERVICE_UNAVAILABLE, "engine stopped").into_response();
    state.engine.send(EngineMsg::BookCtxs { coins, reply }).map_err(|_| stopped())?;
    wait.await.map_err(|_| stopped())
}

/// `[meta, [ctx, …]]` for the perps of `dex` (see `MetaDocs` for where each field comes from).
async fn meta_and_ctxs(state: &AppState, dex: Option<&str>) -> Result<String, Response> {
    let meta_text = meta_for_dex(&state.docs.meta, dex).map_err(|e| doc_error("meta", e))?;
    let meta: Meta = serde_json::from_str(&meta_text).map_err(|e| doc_error("meta", e))?;
    let names: Vec<(String, bool)> = meta.universe.iter().map(|a| (a.name.clone(), true)).collect();
    let books = book_ctxs(state, names).await?;
    let ctxs = meta.universe.iter().zip(&books).map(|(a, b)| perp_ctx(state.docs.perp_ctxs.get(&a.name), b)).collect();
    with_ctxs(&meta_text, ctxs).map_err(|e| doc_error("meta", e))
}

/// `[spotMeta, [ctx, …]]`, one context per pair, named as the L1 names it (`@N`, `PURR/USDC`).
async fn spot_meta_and_ctxs(state: &AppState) -> Result<String, Response> {
    let spot: SpotMeta = serde_json::from_str(&state.docs.spot_meta).map_err(|e| doc_error("spotMeta", e))?;
    let names: Vec<(String, bool)> = spot.universe.iter().map(|p| (spot_pair_coin(p), false)).collect();
    let books = book_ctxs(state, names.clone()).await?;
    let ctxs =
        names.iter().zip(&books).map(|((coin, _), b)| spot_ctx(coin, state.docs.spot_ctxs.get(coin), b)).collect();
    with_ctxs(&state.docs.spot_meta, ctxs).map_err(|e| doc_error("spotMeta", e))
}

/// Hyperliquid's answer to a subscription this server does not serve: a coin it does not
/// keep (unknown, or left out by `--coins`) or parameters it does not allow. The one home of
/// the rule's answer: the direct server (`engine::requests`) and the edge (`edge`, which
/// knows the coins from its publisher) give the same frame.
pub(crate) fn invalid_subscription(sub: &ticktrade_hl_proto::ws::Subscription) -> String {
    ticktrade_hl_proto::ws::error_frame(&errors::invalid(&sub.to_json()))
}

/// Options of every `/ws` connection: deflate (fast level, as the official server) only when
/// the client offers it.
pub(crate) fn ws_options() -> Options {
    Options::default().with_compression_level(CompressionLevel::fast()).with_no_delay()
}

async fn ws_upgrade(State(state): State<Arc<AppState>>, ws: IncomingUpgrade) -> Response {
    upgrade(ws, move |socket| connection(socket, state))
}

/// Answers a `/ws` upgrade request and serves the connection with `serve` once it is done
/// (the direct server and the edge alike).
pub(crate) fn upgrade<F, Fut>(ws: IncomingUpgrade, serve: F) -> Response
where
    F: FnOnce(HttpWebSocket) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send,
{
    match ws.upgrade(ws_options()) {
        Ok((response, upgrade)) => {
            tokio::spawn(async move {
                match upgrade.await {
                    Ok(socket) => serve(socket).await,
                    Err(err) => tracing::debug!("websocket upgrade failed: {err}"),
                }
            });
            response.map(axum::body::Body::new)
        }
        Err(err) => (StatusCode::BAD_REQUEST, format!("websocket upgrade: {err}")).into_response(),
    }
}

/// Items written before one flush, at most (each up to `publish::BATCH` frames).
const WRITE_ITEMS: usize = 32;

async fn connection(socket: HttpWebSocket, state: Arc<AppState>) {
    let id = state.next_id.fetch_add(1, Ordering::Relaxed);
    let out = publish::client_queue(state.config.queue);
    let (kill_tx, kill_rx) = oneshot::channel::<String>();
    if state.engine.send(EngineMsg::Connect { id, tx: Arc::clone(&out), kill: kill_tx }).is_err() {
        return;
    }
    let (sink, mut stream) = socket.split();
    let writer = tokio::spawn(write_queue(sink, Arc::clone(&out), kill_rx));
    while let Some(frame) = stream.next().await {
        let text = match incoming(&frame) {
            Incoming::Text(text) => text,
            Incoming::Skip => continue,
            Incoming::End => break,
        };
        match ClientMessage::parse(text) {
            Ok(ClientMessage::Ping) => {
                // Dropped when the queue is full (the engine disconnects the client on its next frame).
                let _ = out.offer_if_room(Frames::one(Bytes::from_static(br#"{"channel":"pong"}"#)));
            }
            Ok(message) => {
                if state.engine.send(EngineMsg::Request { id, message, text: text.to_owned() }).is_err() {
                    break;
                }
            }
            Err(_) => {
                let frame = ticktrade_hl_proto::ws::error_frame(&errors::parse(text));
                let _ = out.offer_if_room(Frames::one(Bytes::from(frame)));
            }
        }
    }
    let _ = state.engine.send(EngineMsg::Disconnect { id });
    // The writer ends once what is queued is written.
    out.finish();
    let _ = writer.await;
}

/// What a received `/ws` frame is to a connection's reader.
pub(crate) enum Incoming<'a> {
    Text(&'a str),
    /// Ping, pong, binary: nothing to answer here.
    Skip,
    /// A close, or text that is not UTF-8: the connection ends.
    End,
}

pub(crate) fn incoming(frame: &Frame) -> Incoming<'_> {
    match frame.opcode() {
        OpCode::Text => std::str::from_utf8(frame.payload()).map_or(Incoming::End, Incoming::Text),
        OpCode::Close => Incoming::End,
        _ => Incoming::Skip,
    }
}

/// A connection's writer: sends what `queue` holds until it is closed and empty, or until
/// `kill` gives a reason to close the connection with (a slow client). Everything already
/// queued goes out with one flush (up to `WRITE_ITEMS` items), each item's frames in order.
pub(crate) async fn write_queue(
    mut sink: futures_util::stream::SplitSink<HttpWebSocket, Frame>,
    queue: Arc<publish::ClientQueue>,
    mut kill_rx: oneshot::Receiver<String>,
) {
    let mut items = Vec::new();
    'write: loop {
        tokio::select! {
            biased;
            reason = &mut kill_rx => {
                let reason = reason.unwrap_or_else(|_| "server stopping".to_owned());
                let _ = sink.send(Frame::close(CloseCode::Policy, reason)).await;
                break;
            }
            more = queue.recv(&mut items, WRITE_ITEMS) => {
                if !more {
                    break;
                }
                for frames in items.drain(..) {
                    for frame in frames.into_frames() {
                        if sink.feed(Frame::text(frame)).await.is_err() {
                            break 'write;
                        }
                    }
                }
                if sink.flush().await.is_err() {
                    break;
                }
            }
        }
    }
    queue.shutdown();
}
