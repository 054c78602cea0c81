//! The ring between two real threads: every record arrives once, in order, or is counted as
//! dropped. No sleeps: the consumer stops when the producer is gone and the ring is empty.

use ticktrade_core::{Mono, Utc};
use ticktrade_latency::{Stage, Stamps, spsc_ring};

#[test]
fn records_arrive_in_order_or_are_counted_as_dropped() {
    const N: u64 = 200_000;
    let (mut tx, mut rx) = spsc_ring::<Stamps>(64);
    let producer = std::thread::spawn(move || {
        let mut n_pushed = 0u64;
        for i in 1..=N {
            let mut stamps = Stamps::received(Mono(i), Utc(0));
            stamps.set(Stage::Sent, Mono(i + 7));
            if tx.push(stamps) {
                n_pushed += 1;
            }
        }
        (n_pushed, tx.dropped())
    });

    let mut received = Vec::new();
    loop {
        let done = rx.is_abandoned();
        rx.drain(|stamps| received.push(stamps));
        if done && rx.is_empty() {
            break;
        }
        std::hint::spin_loop();
    }
    let (n_pushed, n_dropped) = producer.join().unwrap();

    assert_eq!(received.len() as u64, n_pushed);
    assert_eq!(n_pushed + n_dropped, N);
    assert_eq!(rx.dropped(), n_dropped);
    let recvs: Vec<u64> = received.iter().map(|s| s.recv().unwrap().0).collect();
    assert!(recvs.windows(2).all(|w| w[0] < w[1]), "in order, no duplicates");
    assert!(received.iter().all(|s| s.tick_to_trade_ns() == Some(7)), "unchanged");
}
