use super::*;
use proptest::prelude::*;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A sink that takes at most `budget` bytes in all, then would block; `fail` makes it error.
#[derive(Default)]
struct Budget {
    budget: AtomicUsize,
    fail: std::sync::atomic::AtomicBool,
    taken: Mutex<Vec<u8>>,
}

impl Budget {
    fn with(budget: usize) -> Budget {
        Budget { budget: AtomicUsize::new(budget), ..Budget::default() }
    }

    fn taken(&self) -> Vec<u8> {
        self.taken.lock().map(|t| t.clone()).unwrap_or_default()
    }
}

impl Sink for Budget {
    fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let n = buf.len().min(self.budget.load(Ordering::Relaxed));
        if n == 0 {
            return Err(io::ErrorKind::WouldBlock.into());
        }
        self.budget.fetch_sub(n, Ordering::Relaxed);
        self.taken.lock().map(|mut t| t.extend_from_slice(&buf[..n])).unwrap_or(());
        Ok(n)
    }
}

fn b(text: &'static str) -> Bytes {
    Bytes::from_static(text.as_bytes())
}

#[test]
fn a_full_queue_drops_unkeyed_frames_under_conflate() {
    let out: Outbound<Bytes> = Outbound::new(Queued, 2, SlowPolicy::Conflate);
    assert_eq!(out.offer(b("a"), None), Offer::Queued);
    assert_eq!(out.offer(b("b"), Some(1)), Offer::Queued);
    assert_eq!(out.offer(b("c"), None), Offer::Dropped);
    assert_eq!(out.offer(b("d"), Some(2)), Offer::Dropped, "no queued frame of key 2");
    assert_eq!(out.offer(b("e"), Some(1)), Offer::Conflated);
    assert_eq!(out.take_queued(), vec![b("a"), b("e")]);
    assert!(!out.is_closing());
}

#[test]
fn a_full_queue_refuses_everything_under_disconnect() {
    let out: Outbound<Bytes> = Outbound::new(Queued, 1, SlowPolicy::Disconnect);
    assert_eq!(out.offer(b("a"), Some(1)), Offer::Queued);
    assert_eq!(out.offer(b("b"), Some(1)), Offer::Disconnect);
    assert!(out.is_closing());
    assert_eq!(out.offer(b("c"), None), Offer::Closed);
    out.control(b("close"), true);
    assert_eq!(out.take_queued(), vec![b("a")], "nothing after the refusal, not even a control frame");
}

#[test]
fn a_frame_offered_if_room_never_triggers_the_policy() {
    let out: Outbound<Bytes> = Outbound::new(Queued, 1, SlowPolicy::Disconnect);
    assert!(out.offer_if_room(b("pong")));
    assert!(!out.offer_if_room(b("pong")));
    assert!(!out.is_closing());
    assert_eq!(out.take_queued(), vec![b("pong")]);
}

#[test]
fn control_frames_pass_the_bound_and_are_never_conflated() {
    let out: Outbound<Bytes> = Outbound::new(Queued, 1, SlowPolicy::Conflate);
    out.control(b("pong"), false);
    assert_eq!(out.offer(b("x"), Some(7)), Offer::Dropped);
    out.control(b("close"), true);
    assert_eq!(out.offer(b("y"), None), Offer::Closed);
    assert_eq!(out.take_queued(), vec![b("pong"), b("close")]);
}

#[test]
fn direct_writes_queue_what_the_sink_did_not_take_and_flush_it_in_order() {
    let out = Outbound::new(Budget::with(4), 8, SlowPolicy::Conflate);
    assert_eq!(out.send(&b("ab"), None), Offer::Written);
    assert_eq!(out.send(&b("cdef"), Some(1)), Offer::Queued, "two bytes written, the rest queued");
    assert_eq!(out.send(&b("gh"), Some(1)), Offer::Queued, "behind the queue, never written past it");
    assert_eq!(out.len(), 2);
    let mut written = Vec::new();
    assert!(matches!(out.flush(|f: &Bytes| written.push(f.clone())), Ok(Flushed::Blocked)));
    out.sink().budget.store(100, Ordering::Relaxed);
    assert!(matches!(out.flush(|f: &Bytes| written.push(f.clone())), Ok(Flushed::Idle)));
    assert_eq!(written, vec![b("ef"), b("gh")]);
    assert_eq!(out.sink().taken(), b"abcdefgh");
    out.control(b("bye"), true);
    assert!(matches!(out.flush(|_| {}), Ok(Flushed::Closing)));
}

#[test]
fn a_partly_written_frame_is_never_replaced() {
    let out = Outbound::new(Budget::with(1), 1, SlowPolicy::Conflate);
    assert_eq!(out.send(&b("abc"), Some(1)), Offer::Queued);
    // The queue holds the rest of "abc", pinned: a frame of the same key cannot replace it.
    assert_eq!(out.send(&b("xyz"), Some(1)), Offer::Dropped);
    assert_eq!(out.take_queued(), vec![b("bc")]);
}

#[test]
fn a_failing_sink_closes_the_queue() {
    let out = Outbound::new(Budget::with(0), 4, SlowPolicy::Conflate);
    assert_eq!(out.send(&b("a"), None), Offer::Queued);
    out.sink().fail.store(true, Ordering::Relaxed);
    assert!(out.flush(|_| {}).is_err());
    assert!(out.is_closing());
    assert_eq!(out.send(&b("b"), None), Offer::Closed);
}

#[tokio::test]
async fn the_writer_receives_in_order_and_ends_after_the_last_control_frame() {
    let out: std::sync::Arc<Outbound<Bytes>> = std::sync::Arc::new(Outbound::new(Queued, 8, SlowPolicy::Conflate));
    let writer = {
        let out = std::sync::Arc::clone(&out);
        tokio::spawn(async move {
            let mut got = Vec::new();
            let mut batch = Vec::new();
            while out.recv(&mut batch, 2).await {
                assert!(batch.len() <= 2);
                got.append(&mut batch);
            }
            got
        })
    };
    for f in ["1", "2", "3"] {
        assert_eq!(out.offer(b(f), None), Offer::Queued);
        tokio::task::yield_now().await;
    }
    out.control(b("close"), true);
    let got = writer.await.unwrap();
    assert_eq!(got, vec![b("1"), b("2"), b("3"), b("close")]);
}

#[test]
fn fan_out_offers_to_every_target_in_order() {
    let clients: Vec<Outbound<Bytes, Budget>> = vec![
        Outbound::new(Budget::with(10), 1, SlowPolicy::Conflate),
        Outbound::new(Budget::with(0), 1, SlowPolicy::Disconnect),
    ];
    let mut seen = Vec::new();
    fan_out(&b("frame"), None, clients.iter().enumerate(), |id, offer| seen.push((id, offer)));
    fan_out(&b("frame"), None, clients.iter().enumerate(), |id, offer| seen.push((id, offer)));
    assert_eq!(seen, vec![(0, Offer::Written), (1, Offer::Queued), (0, Offer::Written), (1, Offer::Disconnect)]);
    assert!(Offer::Conflated.delivered() && !Offer::Dropped.delivered());
}

#[derive(Clone, Debug)]
enum Op {
    Offer(Option<u64>),
    Control,
    Pop(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => proptest::option::of(0u64..4).prop_map(Op::Offer),
        1 => Just(Op::Control),
        2 => (1usize..4).prop_map(Op::Pop),
    ]
}

/// The naive model: a list of (id, key, control); full → the newest non-control entry of the
/// same key takes the new id, or the offer is dropped.
#[derive(Default)]
struct Model {
    items: Vec<(u32, Option<u64>, bool)>,
}

impl Model {
    fn offer(&mut self, id: u32, key: Option<u64>, capacity: usize) -> Offer {
        if self.items.len() < capacity {
            self.items.push((id, key, false));
            return Offer::Queued;
        }
        let Some(k) = key else { return Offer::Dropped };
        match self.items.iter().rposition(|(_, key, control)| !control && *key == Some(k)) {
            Some(at) => {
                self.items[at].0 = id;
                Offer::Conflated
            }
            None => Offer::Dropped,
        }
    }
}

proptest! {
    /// Under `Conflate` the queue holds, in order, what the naive model holds: never more
    /// than the bound (plus control frames), the latest frame per key once full.
    #[test]
    fn conflation_matches_a_naive_model(capacity in 1usize..6, ops in proptest::collection::vec(op(), 0..80)) {
        let out: Outbound<(u32, Bytes)> = Outbound::new(Queued, capacity, SlowPolicy::Conflate);
        let mut model = Model::default();
        let mut next = 0u32;
        let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
        for op in ops {
            next += 1;
            match op {
                Op::Offer(key) => {
                    let got = out.offer((next, Bytes::new()), key);
                    prop_assert_eq!(got, model.offer(next, key, capacity));
                }
                Op::Control => {
                    out.control((next, Bytes::new()), false);
                    model.items.push((next, None, true));
                }
                Op::Pop(n) => {
                    let mut got = Vec::new();
                    if !model.items.is_empty() {
                        prop_assert!(rt.block_on(out.recv(&mut got, n)));
                    }
                    let want: Vec<u32> = model.items.drain(..n.min(model.items.len())).map(|(id, _, _)| id).collect();
                    prop_assert_eq!(got.iter().map(|(id, _)| *id).collect::<Vec<_>>(), want);
                }
            }
            let regular = model.items.iter().filter(|(_, _, control)| !control).count();
            prop_assert!(regular <= capacity);
            prop_assert_eq!(out.len(), model.items.len());
        }
        let left: Vec<u32> = out.take_queued().into_iter().map(|(id, _)| id).collect();
        prop_assert_eq!(left, model.items.iter().map(|(id, _, _)| *id).collect::<Vec<_>>());
    }
}
