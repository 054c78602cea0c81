//! The WebSocket front end at `/ws/api/v2`: one reader loop and one writer task per socket.
//!
//! Owns: the socket of one session, the writer that drains its outbound queue
//! (`ticktrade_net::outbound`, policy `Disconnect`), heartbeats (`test_request`
//! every interval; close 4000 "heartbeat close" when unanswered), the idle close, the close
//! reason sent on every server-side close, and cancel-on-disconnect on the way out.
//! Time: the idle check reads the `SimClock`; the heartbeat interval and the idle check's
//! period wait on tokio's timer, so a test with paused tokio time and a `TokioClock` drives
//! both without waiting.
//! Must not: block the engine: the engine only ever offers to this session's queue.
//!
//! The socket is `yawc`'s (see `server` for why): it answers pings itself, negotiates
//! permessage-deflate when the client offers it, and closes with 1009 ("Frame too large") or
//! 1002/1007 on frames over the limit or malformed, before the stream here ends.

use std::sync::Arc;
use std::sync::atomic::Ordering;

use futures_util::{SinkExt, StreamExt};
use tokio::sync::watch;
use yawc::close::CloseCode;
use yawc::{Frame, HttpWebSocket, OpCode};

use ticktrade_net::outbound::{Offer, Queued, SlowPolicy};

use crate::engine::{Command, Kill, SessionFrame, SessionQueue, SessionTx};
use crate::rpc;
use crate::session::{Reply, Session, Shared, handle_text};

/// A session with no subscription, no heartbeat and no request for this long is closed.
pub const IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(60);
const IDLE_CHECK: std::time::Duration = std::time::Duration::from_secs(5);

/// Serves one upgraded socket until either side closes.
pub async fn serve(socket: HttpWebSocket, shared: Arc<Shared>, mut shutdown: watch::Receiver<bool>) {
    let id = shared.next_session.fetch_add(1, Ordering::Relaxed);
    let out = Arc::new(SessionQueue::new(Queued, shared.queue_capacity, SlowPolicy::Disconnect));
    let kill = Arc::new(Kill::default());
    if shared
        .engine
        .send(Command::Register { session: id, tx: SessionTx { out: Arc::clone(&out), kill: kill.clone() } })
        .await
        .is_err()
    {
        return;
    }
    tracing::debug!(session = id, "websocket session opened");
    let (sink, mut stream) = socket.split();
    let writer = tokio::spawn(write_loop(sink, Arc::clone(&out), kill.watch()));
    let mut session = Session::new(id, true, shared.limits, shared.clock.mono());
    let mut killed = kill.watch();
    let mut heartbeat: Option<tokio::time::Interval> = None;
    let mut heartbeat_secs = None;
    let mut closing_reply = false;
    // Deribit drops a socket that sends nothing and subscribes to nothing after about 60 s.
    let mut last_request = shared.clock.mono();
    let mut subscribed = false;
    let mut idle_check = tokio::time::interval(IDLE_CHECK);
    loop {
        if session.heartbeat != heartbeat_secs {
            heartbeat_secs = session.heartbeat;
            heartbeat = session.heartbeat.map(|every| {
                let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
                timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                timer
            });
        }
        tokio::select! {
            frame = stream.next() => {
                // `None`: the peer closed, or yawc refused a frame (over the size limit,
                // malformed) and has already queued its close frame with the code.
                let Some(frame) = frame else {
                    // Polling once more writes yawc's pending close frame (1009 and friends).
                    let _ = tokio::time::timeout(std::time::Duration::from_millis(500), stream.next()).await;
                    break;
                };
                match frame.opcode() {
                    OpCode::Text | OpCode::Binary => {
                        last_request = shared.clock.mono();
                        let text = String::from_utf8_lossy(frame.payload());
                        subscribed |= text.contains("subscribe");
                        let reply = handle_text(&shared, &mut session, &text).await;
                        if !deliver(&out, &kill, reply).await {
                            closing_reply = true;
                            break;
                        }
                    }
                    OpCode::Close => break,
                    // yawc answers pings itself; pongs and continuations need nothing.
                    _ => {}
                }
            }
            _ = tick(&mut heartbeat) => {
                if session.awaiting_test {
                    tracing::info!(session = id, "heartbeat unanswered; closing");
                    kill.fire(4000, "heartbeat close");
                    break;
                }
                session.awaiting_test = true;
                if !out.offer(SessionFrame::Text(Arc::from(rpc::test_request())), None).delivered() {
                    kill.fire(4003, "slow consumer: outbound queue full");
                    break;
                }
            }
            _ = idle_check.tick() => {
                if !subscribed && session.heartbeat.is_none() && shared.clock.mono().since(last_request) >= IDLE_TIMEOUT.as_nanos() as u64 {
                    kill.fire(4004, "idle connection: no requests or subscriptions");
                    break;
                }
            }
            _ = killed.changed() => break,
            _ = shutdown.changed() => {
                kill.fire(1001, "simulator shutting down");
                break;
            }
        }
    }
    // Server-side close: keep reading (and discarding) until the peer answers the close frame,
    // so unread requests in flight do not turn the close into a TCP reset that loses it.
    let server_closed = kill.reason().is_some() || session.logged_out || closing_reply;
    // The writer ends once what is queued is written.
    out.finish();
    if server_closed {
        let drain = async {
            while let Some(frame) = stream.next().await {
                if frame.opcode() == OpCode::Close {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(std::time::Duration::from_secs(2), drain).await;
    }
    let cancel_orders_of = if session.cancel_on_disconnect && !session.logged_out {
        session.grant.as_ref().map(|g| g.account)
    } else {
        None
    };
    let _ = shared.engine.send(Command::Unregister { session: id, cancel_orders_of }).await;
    let _ = writer.await;
    tracing::debug!(session = id, reason = ?kill.reason(), "websocket session closed");
}

async fn tick(timer: &mut Option<tokio::time::Interval>) {
    match timer {
        Some(timer) => {
            timer.tick().await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// Sends a reply (after an injected delay) and applies its close; `false` = session over.
async fn deliver(out: &SessionQueue, kill: &Kill, reply: Reply) -> bool {
    if reply.delay_ms > 0 {
        tokio::time::sleep(std::time::Duration::from_millis(reply.delay_ms)).await;
    }
    if let Some(text) = reply.text
        && out.offer(SessionFrame::Text(Arc::from(text)), None) == Offer::Disconnect
    {
        kill.fire(4003, "slow consumer: outbound queue full");
        return false;
    }
    if let Some((code, reason)) = reply.close {
        // Queued frames (the reply itself) go out before the close frame.
        out.control(SessionFrame::Close(code, reason), true);
        return false;
    }
    true
}

fn close_frame(code: u16, reason: &str) -> Frame {
    Frame::close(CloseCode::from(code), reason.as_bytes())
}

/// Frames taken off the queue per wake-up.
const WRITE_BATCH: usize = 64;

async fn write_loop(
    mut sink: futures_util::stream::SplitSink<HttpWebSocket, Frame>,
    out: Arc<SessionQueue>,
    mut killed: watch::Receiver<Option<(u16, String)>>,
) {
    let mut batch = Vec::with_capacity(WRITE_BATCH);
    'write: loop {
        tokio::select! {
            biased;
            _ = killed.changed() => {
                let reason = killed.borrow().clone();
                if let Some((code, reason)) = reason {
                    let _ = sink.send(close_frame(code, &reason)).await;
                }
                break;
            }
            more = out.recv(&mut batch, WRITE_BATCH) => {
                if !more {
                    break;
                }
                for frame in batch.drain(..) {
                    match frame {
                        SessionFrame::Text(text) => {
                            if sink.send(Frame::text(text.as_bytes().to_vec())).await.is_err() {
                                break 'write;
                            }
                        }
                        SessionFrame::Close(code, reason) => {
                            let _ = sink.send(close_frame(code, &reason)).await;
                            break 'write;
                        }
                    }
                }
            }
        }
    }
    out.shutdown();
    let _ = sink.close().await;
}
