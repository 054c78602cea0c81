//! Steady state allocates nothing: once the caller's buffers are warm, decoding a book
//! notification (both forms) and encoding one do not touch the allocator.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Tests may unwrap (working agreement).

use ticktrade_core::{Decimal, InstrumentSpec};
use ticktrade_deribit_proto::book::{DecimalLevel, LevelUpdate, decode_book, decode_book_units, encode_book_units};

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

#[test]
fn book_codec_allocates_nothing_once_warm() {
    let frames: Vec<String> = ticktrade_testkit::recorded_frames("DERIBIT-5dd9ce.0__2021-04-05.frames.jsonl")
        .into_iter()
        .filter(|f| f.contains(r#""channel":"book."#))
        .collect();
    assert!(frames.len() > 150);
    // Every option in this recording is on a 0.0005 grid with amounts in 0.1 steps.
    let spec =
        InstrumentSpec::simple("any", Decimal::parse("0.0005").unwrap(), Decimal::parse("0.1").unwrap()).unwrap();
    let mut decimals: Vec<DecimalLevel> = Vec::new();
    let mut units: Vec<LevelUpdate> = Vec::new();
    let mut out: Vec<u8> = Vec::new();
    let pass = |decimals: &mut Vec<DecimalLevel>, units: &mut Vec<LevelUpdate>, out: &mut Vec<u8>| {
        let mut n = 0;
        for frame in &frames {
            decode_book(frame.as_bytes(), decimals).unwrap();
            let header = decode_book_units(frame.as_bytes(), &spec, units).unwrap();
            out.clear();
            encode_book_units(out, &header, &spec, units);
            n += decimals.len() + units.len() + out.len();
        }
        n
    };
    let warm = pass(&mut decimals, &mut units, &mut out);
    let (again, count) = ALLOC.measure(|| pass(&mut decimals, &mut units, &mut out));
    assert_eq!(again, warm);
    assert_eq!(count.n_allocs, 0, "{count:?}");
    // The counter is live: this test could fail.
    assert_eq!(ALLOC.count_in(|| drop(std::hint::black_box(Vec::<u8>::with_capacity(8)))), 1);
}
