#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The Deribit client against the embedded simulator on loopback, through the `Venue` trait
//! only: orders, books, and recovery under the simulator's fault injection.

use std::time::Duration;

use ticktrade_core::{Decimal, Side};
use ticktrade_gateway::deribit::{Credentials, Deribit, DeribitConfig, Secret};
use ticktrade_gateway::venue::{
    ConnState, Filter, OrderRequest, OrderStatus, Subscription, TimeInForce, Venue, VenueError, VenueEvent,
};
use ticktrade_sim::{ApiKey, Fault, SimClock, SimConfig, SimHandle};
use tokio::sync::broadcast;

const WAIT: Duration = Duration::from_secs(20);
const INSTRUMENT: &str = "BTC-PERPETUAL";

async fn sim() -> SimHandle {
    ticktrade_sim::spawn_loopback(SimConfig { rate_per_s: 200, min_heartbeat_s: 1, ..SimConfig::default() })
        .await
        .unwrap()
}

/// A simulator on tokio's clock, for the tests that run with paused time
/// (`start_paused = true`): token lifetimes, heartbeats and backoffs pass without waiting,
/// and the simulator's token expiry moves with the client's timers.
async fn paused_sim(config: SimConfig) -> SimHandle {
    let clock = SimClock::tokio(SimClock::system().utc());
    ticktrade_sim::spawn_loopback(SimConfig { clock, ..config }).await.unwrap()
}

fn config(sim: &SimHandle) -> DeribitConfig {
    let mut config = DeribitConfig::new(sim.ws_url());
    config.credentials = Some(Credentials {
        client_id: ApiKey::DEFAULT_ID.to_owned(),
        client_secret: Secret::new(ApiKey::DEFAULT_SECRET),
    });
    config.heartbeat_s = 1;
    config.request_timeout = Duration::from_secs(3);
    config.backoff_base = Duration::from_millis(50);
    config.backoff_max = Duration::from_millis(500);
    config
}

async fn connected(sim: &SimHandle) -> Deribit {
    let venue = Deribit::new(config(sim));
    venue.connect().await.unwrap();
    venue
}

/// Waits for an event matching `pred`.
async fn wait_event(rx: &mut broadcast::Receiver<VenueEvent>, pred: impl Fn(&VenueEvent) -> bool) -> VenueEvent {
    tokio::time::timeout(WAIT, async {
        loop {
            match rx.recv().await {
                Ok(event) if pred(&event) => return event,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => panic!("event channel closed"),
            }
        }
    })
    .await
    .expect("timed out waiting for an event")
}

async fn wait_reconnected(venue: &Deribit, rx: &mut broadcast::Receiver<VenueEvent>) {
    wait_event(rx, |e| *e == VenueEvent::Connection(ConnState::Disconnected)).await;
    wait_event(rx, |e| *e == VenueEvent::Connection(ConnState::Ready)).await;
    assert!(venue.info().authenticated);
}

/// A resting buy far below the market.
async fn resting_buy(venue: &Deribit, label: &str) -> String {
    let book = venue.book_snapshot(INSTRUMENT, 1).await.unwrap();
    let best_bid = book.bids.first().map(|l| l.0).unwrap_or(Decimal::from_int(50_000));
    let price = Decimal::from_int(best_bid.mantissa() / 10i64.pow(u32::from(best_bid.scale())) / 2);
    let placed = venue
        .place(OrderRequest {
            instrument: INSTRUMENT.into(),
            side: Side::Buy,
            amount: Decimal::from_int(10),
            price: Some(price),
            time_in_force: TimeInForce::Gtc,
            post_only: true,
            reduce_only: false,
            label: Some(label.to_owned()),
            trigger: None,
        })
        .await
        .unwrap();
    assert_eq!(placed.order.status, OrderStatus::Open);
    assert!(placed.timing.local_ns > 0);
    placed.order.order_id
}

/// The local book equals the simulator's own, once both are at the same change id.
async fn assert_book_matches_sim(venue: &Deribit, sim: &SimHandle) {
    tokio::time::timeout(WAIT, async {
        loop {
            if let (Some(local), Some(truth)) = (venue.local_book(INSTRUMENT, 10), sim.book_top(INSTRUMENT, 10).await)
                && local.change_id as i64 == truth.change_id
            {
                assert_eq!(local.bids, truth.bids);
                assert_eq!(local.asks, truth.asks);
                return;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("local book never caught up with the simulator");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn trading_round_trip_through_the_trait() {
    let sim = sim().await;
    let venue = connected(&sim).await;
    let instruments = venue.instruments(Some("BTC"), None).await.unwrap();
    assert!(instruments.iter().any(|i| i.name == INSTRUMENT));
    let id = resting_buy(&venue, "rt-1").await;
    let open = venue.open_orders(Filter::Instrument(INSTRUMENT.into())).await.unwrap();
    assert!(open.iter().any(|o| o.order_id == id && o.label == "rt-1"));
    let (cancelled, _) = venue.cancel(ticktrade_gateway::venue::OrderRef::Label("rt-1".into())).await.unwrap();
    assert_eq!(cancelled.status, OrderStatus::Cancelled);
    // A rejection carries Deribit's code and meaning.
    let err = venue
        .place(OrderRequest {
            instrument: "NOPE-PERPETUAL".into(),
            side: Side::Buy,
            amount: Decimal::from_int(10),
            price: Some(Decimal::from_int(1)),
            time_in_force: TimeInForce::Gtc,
            post_only: false,
            reduce_only: false,
            label: None,
            trigger: None,
        })
        .await
        .unwrap_err();
    assert!(matches!(err, VenueError::Rejected { .. }), "{err}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn disconnect_recovers_books_and_orders_without_duplicates() {
    let sim = sim().await;
    let mut cfg = config(&sim);
    cfg.cancel_on_disconnect = false; // orders must survive the drop
    let venue = Deribit::new(cfg);
    venue.connect().await.unwrap();
    let mut events = venue.events();
    venue.subscribe(&[Subscription::Book(INSTRUMENT.into())]).await.unwrap();
    assert_book_matches_sim(&venue, &sim).await;
    let id = resting_buy(&venue, "dc-1").await;

    sim.inject(Fault::Disconnect { session: None });
    wait_reconnected(&venue, &mut events).await;
    assert!(venue.info().connects >= 2);
    assert!(venue.info().subscriptions.contains(&Subscription::Book(INSTRUMENT.into())));
    assert_book_matches_sim(&venue, &sim).await;
    let open = venue.open_orders(Filter::All).await.unwrap();
    assert_eq!(open.iter().filter(|o| o.label == "dc-1").count(), 1, "no duplicate, none lost");
    assert_eq!(venue.tracker().order(&id).map(|o| o.status), Some(OrderStatus::Open));
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_on_disconnect_is_reconciled() {
    let sim = sim().await;
    let venue = connected(&sim).await; // COD on by default
    let mut events = venue.events();
    let id = resting_buy(&venue, "cod-1").await;
    sim.inject(Fault::Disconnect { session: None });
    wait_reconnected(&venue, &mut events).await;
    // The venue cancelled it; reconciliation learned that without being asked.
    assert_eq!(venue.tracker().order(&id).map(|o| o.status), Some(OrderStatus::Cancelled));
    assert!(venue.open_orders(Filter::All).await.unwrap().is_empty());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn book_gap_is_detected_and_resynced() {
    let sim = sim().await;
    let venue = connected(&sim).await;
    let mut events = venue.events();
    venue.subscribe(&[Subscription::Book(INSTRUMENT.into())]).await.unwrap();
    assert_book_matches_sim(&venue, &sim).await;
    sim.inject(Fault::DropChange { instrument: Some(INSTRUMENT.into()) });
    wait_event(&mut events, |e| matches!(e, VenueEvent::BookStale { .. })).await;
    wait_event(&mut events, |e| matches!(e, VenueEvent::BookSynced { .. })).await;
    assert_book_matches_sim(&venue, &sim).await;
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn too_many_requests_backs_off_and_recovers() {
    let sim = sim().await;
    let venue = connected(&sim).await;
    let mut events = venue.events();
    sim.inject(Fault::TooManyRequests { responses: 1 });
    let err = venue.ticker(INSTRUMENT).await.unwrap_err();
    assert_eq!(err.code(), Some(10028), "{err}");
    wait_event(&mut events, |e| matches!(e, VenueEvent::Throttled { .. })).await;
    assert_eq!(venue.info().throttled, 1);
    // The session comes back by itself and works.
    tokio::time::timeout(WAIT, async {
        loop {
            if venue.ticker(INSTRUMENT).await.is_ok() {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn unanswered_heartbeat_probe_reconnects() {
    let sim = paused_sim(SimConfig { rate_per_s: 200, min_heartbeat_s: 1, ..SimConfig::default() }).await;
    let venue = connected(&sim).await;
    let mut events = venue.events();
    // The venue stops answering (requests are delayed past the probe's deadline).
    sim.inject(Fault::Delay { ms: 2_500, responses: 1 });
    wait_reconnected(&venue, &mut events).await;
    assert!(venue.ticker(INSTRUMENT).await.is_ok());
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_credentials_fail_without_retry_loop_or_leak() {
    let sim = sim().await;
    let mut cfg = config(&sim);
    cfg.credentials = Some(Credentials { client_id: "nobody".into(), client_secret: Secret::new("s3cr3t-xyz") });
    let venue = Deribit::new(cfg.clone());
    let err = venue.connect().await.unwrap_err();
    assert!(matches!(err, VenueError::NotAuthenticated(_)), "{err}");
    let text = format!("{err} {err:?} {cfg:?} {venue:?}");
    assert!(!text.contains("s3cr3t-xyz"), "{text}");
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_get_their_own_answers() {
    let sim = sim().await;
    let venue = connected(&sim).await;
    // The first answer is held back; every caller must still get the answer to its own
    // request (matched by id), never "the latest message".
    sim.inject(Fault::Delay { ms: 200, responses: 1 });
    let names = ["BTC-PERPETUAL", "ETH-PERPETUAL", "BTC-PERPETUAL", "ETH-PERPETUAL"];
    let calls = names.into_iter().map(|name| {
        let venue = venue.clone();
        tokio::spawn(async move { venue.ticker(name).await })
    });
    let results: Vec<_> = futures_util::future::join_all(calls).await;
    for (name, result) in names.into_iter().zip(results) {
        assert_eq!(result.unwrap().unwrap().instrument, name);
    }
    assert_eq!(venue.unmatched_responses(), 0);
    sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn token_is_refreshed_before_it_expires() {
    let sim =
        paused_sim(SimConfig { rate_per_s: 50, min_heartbeat_s: 1, token_expires_s: 3, ..SimConfig::default() }).await;
    let venue = connected(&sim).await;
    // Outlive two token lifetimes (virtual time: the test's tokio clock is paused); private
    // calls keep working on the same connection.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(7);
    while tokio::time::Instant::now() < deadline {
        venue.positions(Filter::All).await.unwrap();
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    assert_eq!(venue.info().connects, 1, "refreshed in place, no reconnect");
    sim.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn expired_token_mid_session_reauthenticates_and_retries() {
    // The token lives 2 s; the first keepalive probe (and with it any refresh) comes only
    // after 10 s, so the token expires under a live session and the venue answers 13009.
    // Time is virtual (paused tokio clock, the simulator on it): the sleeps cost no wall time.
    let sim =
        paused_sim(SimConfig { rate_per_s: 50, min_heartbeat_s: 1, token_expires_s: 2, ..SimConfig::default() }).await;
    let mut cfg = config(&sim);
    cfg.heartbeat_s = 10;
    let venue = Deribit::new(cfg);
    venue.connect().await.unwrap();
    venue.positions(Filter::All).await.unwrap();
    tokio::time::sleep(Duration::from_millis(2_600)).await;
    // Several requests race into the expired token; each is retried after one re-auth.
    let calls = (0..3).map(|_| {
        let venue = venue.clone();
        tokio::spawn(async move { venue.account(Some("BTC")).await })
    });
    for result in futures_util::future::join_all(calls).await {
        result.unwrap().unwrap();
    }
    // An order sent on an expired token is placed exactly once.
    tokio::time::sleep(Duration::from_millis(2_600)).await;
    let id = resting_buy(&venue, "exp-1").await;
    let open = venue.open_orders(Filter::All).await.unwrap();
    assert_eq!(open.iter().filter(|o| o.label == "exp-1").map(|o| o.order_id.as_str()).collect::<Vec<_>>(), [id]);
    assert_eq!(venue.info().connects, 1, "recovered in place, no reconnect");
    assert!(venue.info().authenticated);
    sim.shutdown().await;
}

fn resting_request(price: Decimal, label: &str) -> OrderRequest {
    OrderRequest {
        instrument: INSTRUMENT.into(),
        side: Side::Buy,
        amount: Decimal::from_int(10),
        price: Some(price),
        time_in_force: TimeInForce::Gtc,
        post_only: true,
        reduce_only: false,
        label: Some(label.to_owned()),
        trigger: None,
    }
}

#[tokio::test(start_paused = true)]
async fn forced_disconnect_mid_session_loses_and_duplicates_no_order() {
    // Paused tokio time: the 2 s backoff passes without waiting.
    let sim = paused_sim(SimConfig { rate_per_s: 200, min_heartbeat_s: 1, ..SimConfig::default() }).await;
    let mut cfg = config(&sim);
    cfg.cancel_on_disconnect = false; // orders must survive the drop
    cfg.backoff_base = Duration::from_secs(2); // a 1–2 s gap in which the account changes
    cfg.backoff_max = Duration::from_secs(2);
    let venue = Deribit::new(cfg.clone());
    venue.connect().await.unwrap();
    let mut auditor_cfg = config(&sim);
    auditor_cfg.cancel_on_disconnect = false;
    let auditor = Deribit::new(auditor_cfg);
    auditor.connect().await.unwrap();
    let mut events = venue.events();
    venue.subscribe(&[Subscription::Book(INSTRUMENT.into()), Subscription::UserOrders]).await.unwrap();

    let top = sim.book_top(INSTRUMENT, 1).await.unwrap();
    let best = top.bids.first().map(|l| l.0).unwrap_or(Decimal::from_int(50_000));
    let price = Decimal::from_int(best.mantissa() / 10i64.pow(u32::from(best.scale())) / 2);
    let mut placed = Vec::new();
    for label in ["dc-a", "dc-b", "dc-c"] {
        placed.push(venue.place(resting_request(price, label)).await.unwrap().order.order_id);
    }
    // One order is in flight when the connection drops.
    let in_flight = {
        let venue = venue.clone();
        tokio::spawn(async move { venue.place(resting_request(price, "dc-flight")).await })
    };
    let mut auditor_events = auditor.events();
    sim.inject(Fault::Disconnect { session: None });
    wait_event(&mut events, |e| *e == VenueEvent::Connection(ConnState::Disconnected)).await;
    // The fault closes every session, the auditor's too: it is back (short backoff) long before
    // the venue under test (2 s), and only then can it act.
    wait_event(&mut auditor_events, |e| *e == VenueEvent::Connection(ConnState::Disconnected)).await;
    wait_event(&mut auditor_events, |e| *e == VenueEvent::Connection(ConnState::Ready)).await;
    // While we are away, another session of the account cancels one of our orders.
    auditor.open_orders(Filter::All).await.unwrap();
    auditor.cancel(ticktrade_gateway::venue::OrderRef::Label("dc-b".into())).await.unwrap();
    wait_event(&mut events, |e| *e == VenueEvent::Connection(ConnState::Ready)).await;
    let in_flight = in_flight.await.unwrap();

    // Re-authenticated, resubscribed, the book equal to the simulator's.
    let info = venue.info();
    assert!(info.authenticated && info.connects >= 2, "{info:?}");
    assert!(info.subscriptions.contains(&Subscription::Book(INSTRUMENT.into())));
    assert_book_matches_sim(&venue, &sim).await;
    // Reconciled: the order cancelled behind our back is known as cancelled, the others open.
    let tracker = venue.tracker();
    assert_eq!(tracker.order(&placed[1]).map(|o| o.status), Some(OrderStatus::Cancelled));
    for id in [&placed[0], &placed[2]] {
        assert_eq!(tracker.order(id).map(|o| o.status), Some(OrderStatus::Open), "{id}");
    }
    // No order lost, none doubled: count by label on the venue itself.
    let open = auditor.open_orders(Filter::All).await.unwrap();
    let count = |label: &str| open.iter().filter(|o| o.label == label).count();
    assert_eq!((count("dc-a"), count("dc-b"), count("dc-c")), (1, 0, 1), "{open:?}");
    match in_flight {
        Ok(p) => {
            assert_eq!(count("dc-flight"), 1, "acknowledged, so it exists exactly once");
            assert!(open.iter().any(|o| o.order_id == p.order.order_id));
        }
        // An error means the venue does not have it (the label was looked up after the drop).
        Err(err) => assert_eq!(count("dc-flight"), 0, "{err}, yet the venue has it"),
    }
    sim.shutdown().await;
}
