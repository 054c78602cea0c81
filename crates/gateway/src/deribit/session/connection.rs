//! One connection's life: the supervisor that connects, sets up and reconnects with backoff,
//! the reader task, and the keepalive task that probes the venue and refreshes the token.
//!
//! Owns: `supervise`, `read_loop`, `keepalive`.
//! Must not: block the reader on a request, or log a token.

use super::*;

/// Reads frames until the socket closes, errors, goes silent, or the session is killed.
async fn read_loop(inner: Arc<Inner>, mut stream: SplitStream<WsStream>, kill: Arc<Notify>) {
    // The venue sends a heartbeat every interval; three intervals of silence mean it is gone.
    let silence = Duration::from_secs(inner.config.heartbeat_s.max(1) * 3);
    loop {
        let next = tokio::select! {
            _ = kill.notified() => break,
            next = tokio::time::timeout(silence, stream.next()) => next,
        };
        let received = Instant::now();
        match next {
            Err(_) | Ok(None) | Ok(Some(Err(_))) => break,
            Ok(Some(Ok(Message::Text(text)))) => inner.on_text(text.as_str(), received),
            Ok(Some(Ok(Message::Close(_)))) => break,
            Ok(Some(Ok(_))) => {}
        }
    }
}

/// Probes the venue every heartbeat interval with `public/test` and refreshes the token
/// before it expires. An unanswered probe kills the connection.
async fn keepalive(inner: Arc<Inner>, kill: Arc<Notify>) {
    let interval = Duration::from_secs(inner.config.heartbeat_s.max(1));
    loop {
        tokio::time::sleep(interval).await;
        let probe = inner.rpc.call("public/test", &api::TestParams::default(), interval, Instant::now()).await;
        if matches!(probe, Err(VenueError::Timeout { .. }) | Err(VenueError::Disconnected(_))) {
            tracing::warn!("heartbeat probe unanswered; dropping the connection");
            kill.notify_one();
            return;
        }
        let refresh_due = inner
            .token
            .lock()
            .ok()
            .and_then(|t| {
                t.as_ref().map(|t| {
                    // Refresh at 80 % of the lifetime, and never later than two probes before expiry.
                    let margin = (t.lifetime / 5).max(interval * 2);
                    t.expires_at.saturating_duration_since(tokio::time::Instant::now()) < margin
                })
            })
            .unwrap_or(false);
        if refresh_due && let Err(err) = inner.authenticate(Gate::Setup, true).await {
            tracing::warn!(error = %err, "token refresh refused; reconnecting");
            // Refresh refused: a full re-auth on a new connection.
            kill.notify_one();
            return;
        }
    }
}

/// Connects, sets up, reads until the connection ends, backs off, and does it again, until
/// the session is closed.
pub(crate) async fn supervise(inner: Arc<Inner>) {
    let mut backoff = Backoff::new(inner.config.backoff_base, inner.config.backoff_max);
    while !inner.closed.load(Ordering::Relaxed) {
        inner.set_state(ConnState::Connecting);
        let ws = match connect_ws(&inner.config.url, &inner.config.connect).await {
            Ok(ws) => ws,
            Err(err) => {
                tracing::debug!(url = %inner.config.url, error = %err, "connect failed");
                if let Ok(mut last) = inner.last_error.lock() {
                    *last = Some(VenueError::Disconnected(err.to_string()));
                }
                inner.set_state(ConnState::Disconnected);
                tokio::time::sleep(backoff.next_delay()).await;
                continue;
            }
        };
        let (sink, stream) = ws.split();
        inner.rpc.install(sink).await;
        let kill = Arc::new(Notify::new());
        if let Ok(mut k) = inner.kill.lock() {
            *k = Some(kill.clone());
        }
        let reader = tokio::spawn(read_loop(inner.clone(), stream, kill.clone()));
        match inner.setup().await {
            Ok(()) => {
                inner.connects.fetch_add(1, Ordering::Relaxed);
                if let Ok(mut last) = inner.last_error.lock() {
                    *last = None;
                }
                tracing::info!(url = %inner.config.url, connects = inner.connects.load(Ordering::Relaxed), "session ready");
                inner.set_state(ConnState::Ready);
                let alive = tokio::spawn(keepalive(inner.clone(), kill.clone()));
                let connected_at = Instant::now();
                let _ = reader.await;
                alive.abort();
                if connected_at.elapsed() > inner.config.backoff_max {
                    backoff.reset();
                }
            }
            Err(err) => {
                tracing::warn!(error = %err, "session setup failed");
                let fatal = matches!(err, VenueError::NotAuthenticated(_));
                if let Ok(mut last) = inner.last_error.lock() {
                    *last = Some(err);
                }
                kill.notify_one();
                let _ = reader.await;
                if fatal {
                    // Bad credentials do not get better by retrying.
                    inner.closed.store(true, Ordering::Relaxed);
                }
            }
        }
        inner.rpc.disconnect().await;
        inner.authenticated.store(false, Ordering::Relaxed);
        if let Ok(mut books) = inner.books.lock() {
            books.mark_all_stale();
        }
        if inner.closed.load(Ordering::Relaxed) {
            break;
        }
        inner.set_state(ConnState::Disconnected);
        let delay = backoff.next_delay();
        tracing::info!(delay_ms = delay.as_millis() as u64, "connection lost; reconnecting after backoff");
        tokio::time::sleep(delay).await;
    }
    inner.set_state(ConnState::Closed);
}
