//! The hub without sockets: upstream frames in, client queues out. Slow-client policies,
//! the chain across an upstream gap, demand-driven upstream subscriptions.

use super::*;
use crate::SlowPolicy;
use ticktrade_book::l2::L2Book;
use ticktrade_core::{Decimal, Side};

fn frame(kind: &str, change: u64, prev: Option<u64>, bids: &str) -> String {
    let prev = prev.map(|p| format!(",\"prev_change_id\":{p}")).unwrap_or_default();
    format!(
        r#"{{"jsonrpc":"2.0","method":"subscription","params":{{"channel":"book.X.100ms","data":{{"type":"{kind}","timestamp":5,"instrument_name":"X","change_id":{change}{prev},"bids":[{bids}],"asks":[["new",101.0,3]]}}}}}}"#
    )
}

struct Rig {
    hub: Hub,
    up: mpsc::Receiver<String>,
}

fn rig(policy: SlowPolicy) -> Rig {
    let cfg = ServeConfig { queue_capacity: 4, slow_policy: policy, ..ServeConfig::default() };
    let (up_tx, up) = mpsc::channel(64);
    let (ready, _) = watch::channel(false);
    let mut hub = Hub::new(&cfg, up_tx, ready);
    let spec = InstrumentSpec::simple("X", Decimal::parse("0.5").unwrap(), Decimal::ONE).unwrap();
    hub.specs.insert("X".into(), spec);
    hub.connected = true;
    Rig { hub, up }
}

fn join(hub: &mut Hub, id: ClientId) -> (Arc<Outbound>, oneshot::Receiver<String>) {
    join_channel(hub, id, "book.X.raw")
}

fn join_channel(hub: &mut Hub, id: ClientId, channel: &str) -> (Arc<Outbound>, oneshot::Receiver<String>) {
    let out = Outbound::detached(&hub.cfg);
    let (kill, killed) = oneshot::channel();
    hub.on_msg(HubMsg::Join { id, out: Arc::clone(&out), kill });
    let req =
        format!(r#"{{"jsonrpc":"2.0","id":1,"method":"public/subscribe","params":{{"channels":["{channel}"]}}}}"#);
    hub.on_msg(HubMsg::Request { id, text: req, us_in: 0 });
    (out, killed)
}

fn up(hub: &mut Hub, text: String) {
    hub.on_msg(HubMsg::Upstream(UpEvent::Frame(text, Instant::now())));
}

fn drain(out: &mut Arc<Outbound>) -> Vec<serde_json::Value> {
    out.take_queued().iter().map(|f| serde_json::from_slice(crate::wire::payload(f)).unwrap()).collect()
}

/// Follows a client's book frames like a strict client: panics on a gap.
#[derive(Default)]
struct Follower {
    last: Option<u64>,
    snapshots: usize,
    changes: usize,
}

impl Follower {
    fn feed(&mut self, frames: &[serde_json::Value]) {
        for f in frames.iter().filter(|f| f["method"] == "subscription") {
            let data = &f["params"]["data"];
            let id = data["change_id"].as_u64().unwrap();
            if data["type"] == "snapshot" {
                self.snapshots += 1;
            } else {
                assert_eq!(data["prev_change_id"].as_u64(), self.last, "gap in {f}");
                self.changes += 1;
            }
            self.last = Some(id);
        }
    }
}

#[test]
fn slow_client_is_conflated_then_gets_a_fresh_snapshot_on_its_chain() {
    let Rig { mut hub, up: mut up_rx } = rig(SlowPolicy::Conflate);
    let (mut rx, _killed) = join(&mut hub, 1);
    assert!(up_rx.try_recv().unwrap().contains(r#""public/subscribe","params":{"channels":["book.X.100ms"]}"#));
    up(&mut hub, frame("snapshot", 10, None, r#"["new",100.0,5]"#));
    for c in 11..20 {
        up(&mut hub, frame("change", c, Some(c - 1), &format!(r#"["change",100.0,{c}]"#)));
    }
    let totals = hub.totals.clone();
    assert!(totals.drops >= 1 && totals.conflations >= 1, "{totals:?}");
    let mut follower = Follower::default();
    follower.feed(&drain(&mut rx));
    assert_eq!(follower.snapshots, 1);
    up(&mut hub, frame("change", 20, Some(19), r#"["change",100.0,20]"#));
    up(&mut hub, frame("change", 21, Some(20), r#"["change",100.0,21]"#));
    let frames = drain(&mut rx);
    follower.feed(&frames);
    assert_eq!(follower.snapshots, 2, "{frames:?}");
    assert_eq!(frames.last().unwrap()["params"]["data"]["bids"], serde_json::json!([["change", 100, 21]]));
}

#[test]
fn slow_client_is_disconnected_with_a_reason_under_that_policy() {
    let Rig { mut hub, .. } = rig(SlowPolicy::Disconnect);
    let (_rx, mut killed) = join(&mut hub, 1);
    let (mut fast, _k) = join(&mut hub, 2);
    up(&mut hub, frame("snapshot", 10, None, r#"["new",100.0,5]"#));
    let mut follower = Follower::default();
    for c in 11..30 {
        up(&mut hub, frame("change", c, Some(c - 1), r#"["change",100.0,6]"#));
        follower.feed(&drain(&mut fast));
    }
    assert!(killed.try_recv().unwrap().contains("slow consumer"));
    assert!(!hub.clients.contains_key(&1));
    assert_eq!(hub.totals.disconnects, 1);
    // The reader that kept up saw every change.
    assert_eq!((follower.snapshots, follower.changes), (1, 19));
}

#[test]
fn upstream_gap_resyncs_and_clients_get_the_diff_on_their_own_chain() {
    let Rig { mut hub, up: mut up_rx } = rig(SlowPolicy::Conflate);
    let (mut rx, _k) = join(&mut hub, 1);
    up(&mut hub, frame("snapshot", 10, None, r#"["new",100.0,5],["new",99.5,2]"#));
    up(&mut hub, frame("change", 11, Some(10), r#"["change",100.0,7]"#));
    let mut follower = Follower::default();
    follower.feed(&drain(&mut rx));
    while up_rx.try_recv().is_ok() {}
    // 12 is lost upstream.
    up(&mut hub, frame("change", 13, Some(12), r#"["delete",100.0,0]"#));
    let resync: Vec<String> = std::iter::from_fn(|| up_rx.try_recv().ok()).collect();
    assert!(resync[0].contains("public/unsubscribe") && resync[1].contains("public/subscribe"), "{resync:?}");
    assert!(drain(&mut rx).is_empty());
    up(&mut hub, frame("snapshot", 40, None, r#"["new",99.5,2],["new",99.0,4]"#));
    let frames = drain(&mut rx);
    follower.feed(&frames);
    assert_eq!((follower.snapshots, follower.changes), (1, 2));
    assert_eq!(hub.totals.resyncs, 1);
    assert_eq!(hub.clients[&1].counters.resyncs, 1, "the client's own resync counter");
    let data = &frames[0]["params"]["data"];
    assert_eq!(data["bids"], serde_json::json!([["delete", 100, 0], ["new", 99, 4]]));
    // The published book equals the upstream's new snapshot.
    let book: &L2Book = &hub.books["X"].book;
    let bids: Vec<i64> = book.levels(Side::Buy).map(|l| l.qty.raw()).collect();
    assert_eq!(bids, vec![2, 4]);
}

#[test]
fn upstream_subscription_lingers_then_drops_when_the_last_client_leaves() {
    let Rig { mut hub, up: mut up_rx } = rig(SlowPolicy::Conflate);
    let (_rx, _k) = join(&mut hub, 1);
    while up_rx.try_recv().is_ok() {}
    hub.on_msg(HubMsg::Leave { id: 1 });
    let t0 = Instant::now();
    hub.sweep(t0);
    assert!(up_rx.try_recv().is_err(), "dropped before the linger passed");
    hub.sweep(t0 + hub.cfg.linger + Duration::from_millis(1));
    assert!(up_rx.try_recv().unwrap().contains("public/unsubscribe"));
    assert!(hub.books.is_empty() && hub.upstream.is_empty());
}

#[test]
fn interval_channels_get_one_net_change_per_interval_on_an_unbroken_chain() {
    let Rig { mut hub, .. } = rig(SlowPolicy::Conflate);
    let (mut raw, _k1) = join(&mut hub, 1);
    let (mut batched, _k2) = join_channel(&mut hub, 2, "book.X.100ms");
    up(&mut hub, frame("snapshot", 10, None, r#"["new",100.0,5],["new",99.5,2]"#));
    let (mut raw_f, mut batched_f) = (Follower::default(), Follower::default());
    raw_f.feed(&drain(&mut raw));
    batched_f.feed(&drain(&mut batched));
    assert_eq!((raw_f.snapshots, batched_f.snapshots), (1, 1));
    let t0 = Instant::now();
    hub.flush_batches(t0 + Duration::from_millis(100));
    assert!(drain(&mut batched).is_empty(), "nothing changed, nothing sent");
    // Three changes within one interval: raw sees three, 100ms one frame with the net change.
    up(&mut hub, frame("change", 11, Some(10), r#"["change",100.0,7]"#));
    up(&mut hub, frame("change", 12, Some(11), r#"["delete",99.5,0]"#));
    up(&mut hub, frame("change", 13, Some(12), r#"["change",100.0,5]"#));
    raw_f.feed(&drain(&mut raw));
    assert_eq!(raw_f.changes, 3);
    assert!(drain(&mut batched).is_empty(), "sent before the interval ended");
    hub.flush_batches(t0 + Duration::from_millis(300));
    let frames = drain(&mut batched);
    batched_f.feed(&frames);
    assert_eq!(frames.len(), 1, "{frames:?}");
    let data = &frames[0]["params"]["data"];
    assert_eq!(data["bids"], serde_json::json!([["delete", 99.5, 0]]));
    assert_eq!(data["change_id"], raw_f.last.unwrap());
    // A client joining between flushes gets the last flushed book, and the chain goes on.
    up(&mut hub, frame("change", 14, Some(13), r#"["new",99.0,1]"#));
    let (mut late, _k3) = join_channel(&mut hub, 3, "book.X.100ms");
    let mut late_f = Follower::default();
    late_f.feed(&drain(&mut late));
    assert_eq!(late_f.last, batched_f.last);
    hub.flush_batches(t0 + Duration::from_millis(500));
    batched_f.feed(&drain(&mut batched));
    late_f.feed(&drain(&mut late));
    assert_eq!((batched_f.changes, late_f.changes), (2, 1));
    assert_eq!(late_f.last, raw_f.last.map(|c| c + 1));
}
