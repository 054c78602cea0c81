#![allow(clippy::unwrap_used, clippy::expect_used)]
//! The trading shell (library side) scripted against the embedded simulator on loopback:
//! every command, JSON output, final positions and balances equal to the venue's own
//! account, and no secret in any output.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use ticktrade::shell::Shell;
use ticktrade_core::Decimal;
use ticktrade_gateway::venue::{Credentials, Filter, Secret, Venue};
use ticktrade_gateway::venues::{self, SessionOptions};
use ticktrade_sim::{ApiKey, SimConfig, SimHandle};

const INSTRUMENT: &str = "BTC-PERPETUAL";
/// Longest wait for the output a test expects.
const WAIT: Duration = Duration::from_secs(20);

/// A still market (no synthetic activity), so equity, which moves with the mark, reads
/// the same from the shell and from the auditing session a moment later.
async fn sim(keys: Vec<ApiKey>) -> SimHandle {
    ticktrade_sim::spawn_loopback(SimConfig { rate_per_s: 0, min_heartbeat_s: 1, keys, ..SimConfig::default() })
        .await
        .unwrap()
}

/// Through the venue-neutral entry point only: nothing here names a venue's own types.
fn venue(sim: &SimHandle, key: &ApiKey) -> impl Venue + Clone + std::fmt::Debug {
    let mut options = SessionOptions::new(sim.ws_url());
    options.credentials =
        Some(Credentials { client_id: key.client_id.clone(), client_secret: Secret::new(key.client_secret.expose()) });
    options.heartbeat_s = 1;
    options.request_timeout = Duration::from_secs(5);
    venues::open(options)
}

/// A price well below the market on the tick grid (half the best bid, whole dollars).
async fn far_bid(sim: &SimHandle) -> String {
    let top = sim.book_top(INSTRUMENT, 1).await.unwrap();
    let best = top.bids.first().map(|l| l.0).unwrap_or(Decimal::from_int(40_000));
    let whole = best.mantissa() / 10i64.pow(u32::from(best.scale()));
    (whole / 2).to_string()
}

fn script(price: &str) -> String {
    format!(
        "# a whole session\n\
         help buy\n\
         status\n\
         instruments BTC future\n\
         ticker {INSTRUMENT}\n\
         book {INSTRUMENT} 5\n\
         buy {INSTRUMENT} 100 market label=s-buy\n\
         sell {INSTRUMENT} 30 market ioc\n\
         buy {INSTRUMENT} 10 @ {price} post-only label=rest1\n\
         edit rest1 20 @ {price}\n\
         orders\n\
         orders BTC\n\
         cancel rest1\n\
         sell {INSTRUMENT} 10 @ 999999 post-only label=rest2\n\
         cancel-all {INSTRUMENT}\n\
         positions\n\
         account BTC\n\
         trades {INSTRUMENT}\n\
         sub book:{INSTRUMENT} ticker:{INSTRUMENT} trades:{INSTRUMENT} orders user-trades\n\
         book {INSTRUMENT} 3\n\
         watch {INSTRUMENT}\n\
         unsub\n\
         latency\n"
    )
}

async fn run<V: Venue>(shell: &mut Shell<V>, text: &str, json: bool) -> (u64, String) {
    let mut out = Vec::new();
    let failures = shell.run_script(std::io::Cursor::new(text.to_owned()), &mut out, json).await.unwrap();
    (failures, String::from_utf8(out).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scripted_session_matches_the_venue_account() {
    let key = ApiKey { client_id: "alice".into(), client_secret: ticktrade_sim::Secret::new("alice-secret-7f3a9c") };
    let sim = sim(vec![key.clone()]).await;
    let trader = venue(&sim, &key);
    trader.connect().await.unwrap();
    let mut shell = Shell::new(trader);
    assert!(shell.load_instruments().await.unwrap() > 0);
    let price = far_bid(&sim).await;

    let (failures, text) = run(&mut shell, &script(&price), false).await;
    assert_eq!(failures, 0, "{text}");
    assert!(text.contains("latency: round trip"), "{text}");
    assert!(text.contains("order_id"), "{text}");

    let (failures, json) = run(&mut shell, "positions\naccount BTC\norders\n", true).await;
    assert_eq!(failures, 0, "{json}");
    let lines: Vec<Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l["ok"] == true));

    // The venue's own view, from a second session on the same account.
    let auditor = venue(&sim, &key);
    auditor.connect().await.unwrap();
    let positions = auditor.positions(Filter::All).await.unwrap();
    let pos = positions.iter().find(|p| p.instrument == INSTRUMENT).unwrap();
    assert_eq!(pos.size, Decimal::from_int(70));
    let rows = lines[0]["rows"].as_array().unwrap();
    let row = rows.iter().find(|r| r["instrument"] == INSTRUMENT).unwrap();
    assert_eq!(row["size"], pos.size.to_string());
    assert_eq!(row["average_price"], pos.average_price.to_string());
    let balance = &auditor.account(Some("BTC")).await.unwrap()[0];
    assert_eq!(lines[1]["rows"][0]["balance"], balance.balance.to_string());
    assert_eq!(lines[1]["rows"][0]["equity"], balance.equity.to_string());
    assert!(lines[2]["rows"].as_array().unwrap().is_empty(), "everything was cancelled");

    // No secret anywhere a person or a log could see.
    let debug = format!("{:?} {:?}", shell.venue(), shell.venue().info());
    for haystack in [&text, &json, &debug] {
        assert!(!haystack.contains("alice-secret-7f3a9c"), "secret leaked");
    }
    sim.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_are_one_line_with_code_and_counted() {
    let sim = sim(Vec::new()).await;
    let trader = venue(&sim, &ApiKey::default_key());
    trader.connect().await.unwrap();
    let mut shell = Shell::new(trader);
    shell.load_instruments().await.unwrap();
    let input = format!(
        "frobnicate\nbuy {INSTRUMENT} 10 @ 1.3\nbuy NOPE-X 10\ncancel no-such-order\norder 424242\nsub bogus\nquit\nstatus\n"
    );
    let (failures, text) = run(&mut shell, &input, false).await;
    assert_eq!(failures, 6, "{text}");
    let errors: Vec<&str> = text.lines().filter(|l| l.starts_with("error: ")).collect();
    assert_eq!(errors.len(), 6, "{text}");
    assert!(errors[0].contains("unknown command"), "{text}");
    assert!(errors[1].contains("tick grid"), "{text}");
    assert!(errors[2].contains("unknown instrument"), "{text}");
    // Venue rejections carry Deribit's code and its meaning.
    assert!(errors[4].contains("10004") || errors[4].contains("order_not_found"), "{text}");
    assert!(!text.contains("authenticated"), "nothing after quit runs: {text}");

    let (failures, json) = run(&mut shell, "order 424242\n", true).await;
    assert_eq!(failures, 1);
    let value: Value = serde_json::from_str(json.trim()).unwrap();
    assert_eq!(value["ok"], false);
    assert!(value["error"]["code"].is_i64(), "{json}");
    sim.shutdown().await;
}

/// The shell's output, readable by the input side while the shell still writes it.
#[derive(Clone, Default)]
struct Output(Arc<Mutex<Vec<u8>>>);

impl Output {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

impl std::io::Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Input that stays open (idle) after its last line, like a pipe from a script that waits,
/// until the output shows what the test waits for (or `WAIT` passed; the asserts then fail).
struct IdleUntil {
    output: Output,
    done: fn(&str) -> bool,
}

impl std::io::Read for IdleUntil {
    fn read(&mut self, _buf: &mut [u8]) -> std::io::Result<usize> {
        let deadline = std::time::Instant::now() + WAIT;
        while !(self.done)(&self.output.text()) && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(0)
    }
}

fn idle_input(text: &str, output: &Output, done: fn(&str) -> bool) -> impl std::io::BufRead + Send + 'static {
    use std::io::Read as _;
    let idle = IdleUntil { output: output.clone(), done };
    std::io::BufReader::new(std::io::Cursor::new(text.to_owned()).chain(idle))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscribed_notifications_print_between_results_and_while_idle() {
    let sim = sim(Vec::new()).await;
    let trader = venue(&sim, &ApiKey::default_key());
    trader.connect().await.unwrap();
    let mut shell = Shell::new(trader);
    shell.load_instruments().await.unwrap();

    // Text: nothing is printed for channels nobody subscribed to; once subscribed, ticker and
    // book lines arrive while the input is idle, and our own order and fill as they happen.
    let script = format!(
        "ticker {INSTRUMENT}\n\
         sub ticker:{INSTRUMENT} book:{INSTRUMENT} orders user-trades\n\
         buy {INSTRUMENT} 10 market label=n-1\n"
    );
    let mut out = Output::default();
    let idle = idle_input(&script, &out, |text| {
        let has = |tag: &str| text.lines().any(|l| l.starts_with(tag));
        has("[ticker] BTC-PERPETUAL")
            && has("[book] BTC-PERPETUAL bid")
            && has("[fill] BTC-PERPETUAL buy 10 @")
            && text.lines().any(|l| l.starts_with("[order] ") && l.contains("label=n-1"))
    });
    let failures = shell.run_script(idle, &mut out, false).await.unwrap();
    let text = out.text();
    assert_eq!(failures, 0, "{text}");
    let lines: Vec<&str> = text.lines().collect();
    let subscribed = lines.iter().position(|l| l.starts_with("subscribed ")).expect(&text);
    assert!(lines[..subscribed].iter().all(|l| !l.starts_with('[')), "notification before `sub`:\n{text}");
    for tag in ["[ticker] BTC-PERPETUAL", "[book] BTC-PERPETUAL bid", "[fill] BTC-PERPETUAL buy 10 @"] {
        assert!(lines.iter().any(|l| l.starts_with(tag)), "no {tag:?} line:\n{text}");
    }
    assert!(lines.iter().any(|l| l.starts_with("[order] ") && l.contains("label=n-1")), "{text}");
    // Book lines only when the top moved: never the same line twice in a row.
    let books: Vec<&str> =
        lines.iter().filter(|l| l.starts_with("[book]")).map(|l| l.split(" (change_id").next().unwrap()).collect();
    assert!(books.windows(2).all(|w| w[0] != w[1]), "{text}");

    // JSON: every line parses; results carry "command", notifications "event".
    let mut out = Output::default();
    let script = format!("unsub\nsub trades:{INSTRUMENT} ticker:{INSTRUMENT}\nsell {INSTRUMENT} 10 market\n");
    let idle = idle_input(&script, &out, |json| {
        json.lines().filter(|l| l.contains("\"command\"")).count() >= 3
            && json.lines().any(|l| l.contains("\"event\":\"ticker\""))
            && json.lines().any(|l| l.contains("\"event\":\"trade\""))
    });
    shell.run_script(idle, &mut out, true).await.unwrap();
    let json = out.text();
    let values: Vec<Value> = json.lines().map(|l| serde_json::from_str(l).expect(l)).collect();
    let results: Vec<&Value> = values.iter().filter(|v| v.get("command").is_some()).collect();
    assert_eq!(results.len(), 3, "{json}");
    let events: Vec<&Value> = values.iter().filter(|v| v.get("event").is_some()).collect();
    assert!(events.iter().any(|e| e["event"] == "ticker" && e["instrument"] == INSTRUMENT), "{json}");
    assert!(events.iter().any(|e| e["event"] == "trade" && e["price"].is_string()), "{json}");
    // A book line that arrived while still subscribed (between the two scripts) may print
    // before `unsub` runs; after its result, no unsubscribed channel prints.
    let unsub = values.iter().position(|v| v["command"] == "unsub").expect(&json);
    let after: Vec<&Value> = values[unsub..].iter().filter(|v| v.get("event").is_some()).collect();
    assert!(after.iter().all(|e| e["event"] != "book" && e["event"] != "order"), "unsubscribed channels: {json}");
    sim.shutdown().await;
}

/// The issue's command list, as `help` must show it.
const ISSUE_COMMANDS: &[&str] = &[
    "help [cmd]",
    "status",
    "instruments [currency] [kind]",
    "book <instr> [depth]",
    "ticker <instr>",
    "buy <instr> <amount> [@ <price>|market]",
    "sell <instr> <amount> [@ <price>|market]",
    "edit <order_id|label> <amount> [@ <price>]",
    "cancel <order_id|label>",
    "cancel-all [instr|currency]",
    "orders [instr|currency]",
    "order <order_id>",
    "positions [currency]",
    "account [currency]",
    "trades [instr]",
    "sub <channel>…",
    "unsub [channel…]",
    "watch <instr>",
    "latency",
    "logout",
    "quit",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_of_the_issue_is_listed_and_runs() {
    let sim = sim(Vec::new()).await;
    let trader = venue(&sim, &ApiKey::default_key());
    trader.connect().await.unwrap();
    let mut shell = Shell::new(trader);
    shell.load_instruments().await.unwrap();

    let (_, help) = run(&mut shell, "help\nhelp buy\n", false).await;
    for usage in ISSUE_COMMANDS {
        assert!(help.lines().any(|l| l.starts_with(usage)), "help lacks {usage:?}:\n{help}");
    }
    for option in [
        "[gtc|gtd|ioc|fok]",
        "[post-only]",
        "[reduce-only]",
        "[label=<l>]",
        "[stop|take @ <trigger> [last|mark|index]]",
    ] {
        assert!(help.contains(option), "help buy lacks {option}:\n{help}");
    }

    // The commands the other tests do not reach, in JSON so each result can be inspected.
    let price = far_bid(&sim).await;
    let script = format!(
        "buy {INSTRUMENT} 10 @ {price} post-only label=one\n\
         buy {INSTRUMENT} 10 @ {price} gtc post-only\n\
         sell {INSTRUMENT} 10 stop @ 1000 mark\n\
         buy {INSTRUMENT} 10 @ {price} take @ 999999 index\n\
         cancel-all BTC\n\
         latency\n\
         logout\n\
         status\n"
    );
    let (_, json) = run(&mut shell, &script, true).await;
    let results: Vec<Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).expect(l))
        .filter(|v: &Value| v.get("command").is_some())
        .collect();
    assert_eq!(results.len(), 7, "nothing runs after logout:\n{json}");
    assert_eq!(results[0]["ok"], true, "{json}");
    let id = results[1]["rows"][0]["order_id"].as_str().unwrap().to_owned();
    // Trigger orders reach the venue: accepted as untriggered, or refused with Deribit's code.
    for trigger in &results[2..4] {
        match trigger["ok"].as_bool().unwrap() {
            true => assert_eq!(trigger["rows"][0]["state"], "untriggered", "{trigger}"),
            false => assert!(trigger["error"]["code"].is_i64(), "{trigger}"),
        }
    }
    assert_eq!(results[4]["ok"], true, "{json}");
    assert!(results[4]["message"].as_str().unwrap().starts_with(|c: char| c.is_ascii_digit() && c != '0'), "{json}");
    // The latency table splits the round trip with usIn/usOut.
    let rows = results[5]["rows"].as_array().unwrap();
    let row = |name: &str| rows.iter().find(|r| r["order path (µs)"].as_str().unwrap().trim() == name).unwrap();
    assert!(row("round trip")["count"].as_str().unwrap().parse::<u64>().unwrap() >= 3, "{json}");
    assert!(row("exchange")["count"].as_str().unwrap().parse::<u64>().unwrap() >= 1, "{json}");
    assert!(row("local: parsed → written")["p50"].as_str().unwrap() != "0.0", "{json}");
    assert_eq!(results[6]["command"], "logout");

    // `order <id>` on a fresh session: the cancelled order's final state.
    let trader = venue(&sim, &ApiKey::default_key());
    trader.connect().await.unwrap();
    let mut shell = Shell::new(trader);
    let (failures, json) = run(&mut shell, &format!("order {id}\ncancel {id}\nquit\n"), true).await;
    let results: Vec<Value> = json.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(results[0]["rows"][0]["state"], "cancelled", "{json}");
    assert_eq!(failures, 1, "cancelling a cancelled order fails: {json}");
    assert_eq!(results[1]["ok"], false);
    assert_eq!(results[2]["command"], "quit");
    sim.shutdown().await;
}
