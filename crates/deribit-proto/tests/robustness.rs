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
