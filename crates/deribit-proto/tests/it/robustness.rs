//! The book decoder on real recorded frames: every proper prefix of every recorded book
//! notification is `Incomplete` (a partial frame is an expected outcome, not a failure), and
//! corrupting any byte never panics.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap (working agreement).

use proptest::prelude::*;
use ticktrade_deribit_proto::DecodeError;
use ticktrade_deribit_proto::book::{DecimalLevel, decode_book};

fn book_frames() -> Vec<String> {
    let mut frames = Vec::new();
    for file in ["DERIBIT-5dd9ce.0__2021-04-05.frames.jsonl", "DERIBIT.ws.30.0__2021-04-17.frames.jsonl"] {
        frames
            .extend(ticktrade_testkit::recorded_frames(file).into_iter().filter(|f| f.contains(r#""channel":"book."#)));
    }
    frames
}

#[test]
fn every_prefix_of_a_recorded_frame_is_incomplete() {
    let frames = book_frames();
    assert!(frames.len() > 200);
    let mut levels: Vec<DecimalLevel> = Vec::new();
    for frame in &frames {
        assert!(decode_book(frame.as_bytes(), &mut levels).is_ok(), "{frame}");
        for cut in 0..frame.len() {
            assert_eq!(
                decode_book(&frame.as_bytes()[..cut], &mut levels),
                Err(DecodeError::Incomplete),
                "{cut}: {frame}"
            );
        }
    }
}

proptest! {
    #[test]
    fn corrupted_recorded_frames_never_panic(
        index in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let frames = book_frames();
        let mut frame = index.get(&frames).clone().into_bytes();
        for (at, byte) in edits {
            let at = at.index(frame.len());
            frame[at] = byte;
        }
        let mut levels: Vec<DecimalLevel> = Vec::new();
        let _ = decode_book(&frame, &mut levels);
    }
}

/// Order and trade frames a session receives (vectors, both layouts and pretty-printed ones).
fn order_frames() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/deribit/examples/");
    [
        "private_buy.response.json",
        "private_cancel.response.json",
        "private_get_order_state_by_label.response.json",
        "private_get_user_trades_by_instrument.response.json",
        "user.orders.kind.currency.raw.notification.real_ccxt.json",
        "user.trades.kind.currency.interval.notification.real_ccxt.json",
        "user.changes.instrument_name.interval.notification.docs_v2_1_1.json",
    ]
    .iter()
    .map(|f| std::fs::read_to_string(format!("{dir}{f}")).unwrap())
    .collect()
}

/// Runs every report decoder that could apply; `Ok` if one accepts the frame.
fn decode_any(frame: &[u8]) -> Result<usize, ticktrade_deribit_proto::DecodeError> {
    use ticktrade_deribit_proto::frame::{Frame, scan_frame};
    use ticktrade_deribit_proto::report;
    let mut n = 0;
    let payload = match scan_frame(frame)? {
        Frame::Result { result, .. } => result,
        Frame::Notification { data, .. } => data,
        _ => return Ok(0),
    };
    let orders = report::for_each_order(payload, |_, _| n += 1);
    let result = report::decode_order_result(payload, |_, _| n += 1).map(|_| 1);
    let trades = report::for_each_trade(payload, |_, _| n += 1);
    let user_trades = report::decode_user_trades(payload, |_, _| n += 1).map(|_| 1);
    let changes = report::decode_user_changes(payload, |_, _| {}, |_, _| {}).map(|_| 1);
    orders.or(result).or(trades).or(user_trades).or(changes)
}

#[test]
fn every_prefix_of_an_order_frame_is_an_error() {
    for frame in order_frames() {
        assert!(decode_any(frame.as_bytes()).is_ok(), "{frame}");
        for cut in 0..frame.trim_end().len() {
            assert!(decode_any(&frame.as_bytes()[..cut]).is_err(), "{cut}: {frame}");
        }
    }
}

proptest! {
    #[test]
    fn corrupted_order_frames_never_panic(
        index in any::<prop::sample::Index>(),
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..4),
    ) {
        let frames = order_frames();
        let mut frame = index.get(&frames).clone().into_bytes();
        for (at, byte) in edits {
            let at = at.index(frame.len());
            frame[at] = byte;
        }
        let _ = decode_any(&frame);
    }
}
