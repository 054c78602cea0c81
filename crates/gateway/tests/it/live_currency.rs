//! Reconciliation and the stop by currency, against the simulator on loopback: a currency-wide
//! answer lists instruments the session does not trade (another client's order on the same
//! account is neither the session's order state nor its to cancel, by the stop or by the
//! session's cancel-on-disconnect), and the stop's trades
//! catch-up pages through the currency's trades with `has_more`, booking none of them twice.

#![allow(clippy::unwrap_used)] // tests may unwrap

use std::time::{Duration, Instant};

use serde_json::Value;
use ticktrade_core::InstrumentKind;
use ticktrade_gateway::live::{self, LiveConfig, LiveReport, Query, Session, StopHandle};
use ticktrade_gateway::venue::{Credentials, Secret};
use ticktrade_net::hot::HotOptions;
use ticktrade_strategy::{BuiltIn, Config};

const WAIT: Duration = Duration::from_secs(60);

fn credentials() -> Credentials {
    let key = ticktrade_sim::ApiKey::default_key();
    Credentials { client_id: key.client_id, client_secret: Secret::new(key.client_secret.expose()) }
}

/// Another client of the same account.
fn other_client(url: &str) -> Query {
    let mut query = Query::connect(url, &HotOptions::default()).unwrap();
    query.auth(&credentials()).unwrap();
    query
}

fn call(query: &mut Query, method: &str, params: &str) -> Value {
    serde_json::from_str(&query.call(method, params).unwrap()).unwrap()
}

/// A session of the built-in market maker on BTC-PERPETUAL.
fn session(url: &str, edit: impl FnOnce(&mut Config, &mut LiveConfig)) -> (Session<BuiltIn>, StopHandle) {
    let connect = HotOptions::default();
    let venue = live::fetch_instruments(url, &connect).unwrap();
    let mut strategy = Config::parse(ticktrade_strategy::template()).unwrap();
    let mut live_config = LiveConfig::new(url);
    live_config.connect = connect;
    live_config.credentials = Some(credentials());
    live_config.status_every = None;
    edit(&mut strategy, &mut live_config);
    let setup = strategy.validate(&venue).unwrap();
    let outbox = setup.outbox;
    let (builtin, parts) = setup.into_parts(0xc0ffee).unwrap();
    let stop = StopHandle::default();
    let session = Session::new(live_config, builtin.unwrap(), parts, outbox, None, None, stop.clone());
    (session, stop)
}

fn run_until(session: &mut Session<BuiltIn>, what: &str, mut done: impl FnMut(&Session<BuiltIn>) -> bool) {
    let deadline = Instant::now() + WAIT;
    while !done(session) {
        assert!(Instant::now() < deadline, "{what}: not within {WAIT:?}: {:?}", session.stats());
        assert!(!session.poll().unwrap(), "{what}: the session ended");
    }
}

fn stop(session: &mut Session<BuiltIn>, handle: &StopHandle) -> LiveReport {
    handle.stop();
    let deadline = Instant::now() + WAIT;
    while !session.poll().unwrap() {
        assert!(Instant::now() < deadline, "the stop did not end");
    }
    session.finish()
}

#[test]
fn a_currency_answer_lists_instruments_the_session_does_not_trade() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let sim = runtime.block_on(ticktrade_sim::spawn_loopback(ticktrade_sim::SimConfig::default())).unwrap();
    let url = sim.ws_url();
    let venue = live::fetch_instruments(&url, &HotOptions::default()).unwrap();
    // A BTC future the session does not trade, filed under the same currency.
    let other = venue
        .iter()
        .find(|s| {
            s.kind == InstrumentKind::Future
                && s.base_currency == "BTC"
                && s.settlement_currency == "BTC"
                && s.name != "BTC-PERPETUAL"
        })
        .unwrap();
    let mut client = other_client(&url);
    let ticker = call(&mut client, "public/ticker", &format!(r#"{{"instrument_name":"{}"}}"#, other.name));
    let mark = ticker["mark_price"].as_f64().unwrap();
    let price = (mark * 0.9 / 10.0).floor() * 10.0;
    let placed = call(
        &mut client,
        "private/buy",
        &format!(
            r#"{{"instrument_name":"{}","amount":10,"price":{price},"post_only":true,"label":"not-the-session"}}"#,
            other.name
        ),
    );
    let order_id = placed["order"]["order_id"].as_str().unwrap().to_owned();

    // The session keeps its default cancel-on-disconnect (connection scope): its closing
    // connection cancels the orders it placed, not the other client's.
    let (mut session, handle) = session(&url, |_, live_config| assert!(live_config.cancel_on_disconnect));
    session.start().unwrap();
    run_until(&mut session, "live", |s| s.is_live());
    let queries_to_live = session.stats().queries;
    run_until(&mut session, "quoting", |s| s.stats().places > 0);
    let report = stop(&mut session, &handle);
    // The other instrument's order did not make the stop cancel again until its deadline.
    assert_eq!(report.exit, live::Exit::Clean, "{:?}", report.stats);
    // Nor did it reach the session's order state (it would be dropped as another instrument's).
    assert_eq!(report.stats.dropped_reports, 0, "{:?}", report.stats);
    // Start-up: the open orders and the positions of BTC, one request each.
    assert_eq!(queries_to_live, 2, "{:?}", report.stats);
    // The stop owns the session's instruments only: the other client's order is still there.
    let open = call(&mut client, "private/get_open_orders_by_currency", r#"{"currency":"BTC"}"#);
    let ids: Vec<&str> = open.as_array().unwrap().iter().filter_map(|o| o["order_id"].as_str()).collect();
    let state = call(&mut client, "private/get_order_state", &format!(r#"{{"order_id":"{order_id}"}}"#));
    assert_eq!(ids, [order_id.as_str()], "{open} {state}");
    // Nor does the session's disconnect take it along.
    drop(session);
    wait_disconnected(&sim);
    let open = call(&mut client, "private/get_open_orders_by_currency", r#"{"currency":"BTC"}"#);
    let ids: Vec<&str> = open.as_array().unwrap().iter().filter_map(|o| o["order_id"].as_str()).collect();
    let state = call(&mut client, "private/get_order_state", &format!(r#"{{"order_id":"{order_id}"}}"#));
    assert_eq!(ids, [order_id.as_str()], "after the disconnect: {open} {state}");
    runtime.block_on(sim.shutdown());
}

/// Waits until the other client's is the simulator's only connection. The engine counts a
/// connection gone once it has handled its end, cancel-on-disconnect included, so what the
/// other client reads afterwards is after the cancel.
fn wait_disconnected(sim: &ticktrade_sim::SimHandle) {
    let deadline = Instant::now() + WAIT;
    while sim.stats().connections > 1 {
        assert!(Instant::now() < deadline, "the session's connection did not end");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn the_stop_pages_the_trades_catch_up_and_books_no_trade_twice() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let config = ticktrade_sim::SimConfig { rate_per_s: 2_000, seed: 3, ..Default::default() };
    let sim = runtime.block_on(ticktrade_sim::spawn_loopback(config)).unwrap();
    let url = sim.ws_url();
    let (mut session, handle) = session(&url, |strategy, live_config| {
        // Quotes one tick from the mid are filled now and then.
        let quote = strategy.quote.as_mut().unwrap();
        quote.distance_ticks = Some(1);
        quote.requote_ticks = 0;
        strategy.risk.max_orders_per_window = Some(1_000);
        // One trade id remembered: only the catch-up's sequence filter keeps a trade seen
        // before from being booked again.
        strategy.capacity.trade_memory = 1;
        // Two trades a page: the catch-up of a handful must follow `has_more`.
        live_config.trades_page = 2;
    });
    session.start().unwrap();
    run_until(&mut session, "live", |s| s.is_live());
    run_until(&mut session, "five fills", |s| s.runner().strategy().fills >= 5);
    let before = session.stats().queries;
    let report = stop(&mut session, &handle);
    assert_eq!(report.exit, live::Exit::Clean, "{:?}", report.stats);
    let fills = session.runner().strategy().fills;

    let mut client = other_client(&url);
    let trades = call(&mut client, "private/get_user_trades_by_currency", r#"{"currency":"BTC","count":1000}"#);
    let venue_trades = trades["trades"].as_array().unwrap().len() as u64;
    assert!(venue_trades >= 5, "{trades}");
    // Verify (one request), then the catch-up of every trade since the session began, two a
    // page.
    let stop_queries = report.stats.queries - before;
    eprintln!("{venue_trades} trades, {fills} fills, the stop's queries {stop_queries}");
    assert!(stop_queries >= 3, "{stop_queries} queries for {venue_trades} trades");
    // Every trade booked once: as many fills as the venue lists, and the same position.
    assert_eq!(fills, venue_trades, "{:?}", report.stats);
    let position = call(&mut client, "private/get_position", r#"{"instrument_name":"BTC-PERPETUAL"}"#);
    let size = position["size"].as_f64().unwrap();
    let lots = report.positions.iter().find(|(name, _)| name == "BTC-PERPETUAL").unwrap().1;
    assert_eq!(lots as f64 * 10.0, size, "{position}");
    drop(session);
    runtime.block_on(sim.shutdown());
}
