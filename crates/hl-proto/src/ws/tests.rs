use super::*;

fn example(name: &str) -> String {
    let path = format!("{}/../../testdata/hyperliquid/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

fn value(text: &str) -> serde_json::Value {
    serde_json::from_str(text).unwrap()
}

#[test]
fn decodes_every_documented_request() {
    for name in [
        "ws.subscribe.l2Book.minimal.json",
        "ws.subscribe.l2Book.nSigFigs5.mantissa5.json",
        "ws.subscribe.trades.json",
        "ws.subscribe.l4Book.json",
        "ws.unsubscribe.trades.json",
        "ws.ping.json",
        "ws.post.l2Book.request.json",
    ] {
        let text = example(name);
        ClientMessage::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    let text = example("ws.subscribe.l2Book.nSigFigs5.mantissa5.json");
    let ClientMessage::Subscribe { subscription } = ClientMessage::parse(&text).unwrap() else { panic!() };
    let Subscription::L2Book { n_sig_figs, mantissa, n_levels, fast, .. } = subscription else { panic!() };
    assert_eq!(L2Params::new(n_sig_figs, mantissa, n_levels, fast).unwrap().variant, L2Variant::Sig5 { mantissa: 5 });
    let text = example("ws.post.l2Book.request.json");
    let ClientMessage::Post { id, request } = ClientMessage::parse(&text).unwrap() else { panic!() };
    assert_eq!((id, request.kind.as_str()), (123, "info"));
}

#[test]
fn parse_error_uses_documented_wording() {
    let text = r#"{"method":"subscribe","subscription":{"type":"l2Book"}}"#;
    assert!(ClientMessage::parse(text).is_err());
    assert_eq!(value(&error_frame(&errors::parse(text))), value(&example("ws.error.parse.json")));
}

#[test]
fn validation_matches_docs() {
    let ok = |s, m, n| L2Params::new(s, m, n, None).is_some();
    assert!(ok(None, None, None));
    assert!(ok(Some(5), Some(1), None));
    assert!(ok(Some(2), None, Some(100)));
    assert!(ok(Some(3), None, Some(20)));
    assert!(!ok(Some(4), Some(2), None));
    assert!(!ok(None, Some(5), None));
    assert!(!ok(Some(6), None, None));
    assert!(!ok(Some(1), None, None));
    assert!(!ok(Some(5), Some(3), None));
    assert!(!ok(None, None, Some(101)));
    assert!(!ok(None, None, Some(0)));
    assert_eq!(L2Params::new(None, None, None, Some(true)).unwrap().n_levels, 5);
    for (i, v) in L2Variant::ALL.iter().enumerate() {
        assert_eq!(v.index(), i);
        assert_eq!(
            L2Variant::from_params(v.n_sig_figs(), Some(v.mantissa())).or(L2Variant::from_params(v.n_sig_figs(), None)),
            Some(*v)
        );
    }
}

#[test]
fn responses_match_examples() {
    let sub = Subscription::L2Book { coin: "BTC".into(), n_sig_figs: None, mantissa: None, n_levels: None, fast: None };
    assert_eq!(value(&subscription_response(true, &sub)), value(&example("ws.subscriptionResponse.l2Book.json")));
    let trades = Subscription::Trades { coin: "BTC".into() };
    assert_eq!(
        value(&subscription_response(false, &trades)),
        value(&example("ws.subscriptionResponse.unsubscribe.trades.json"))
    );
    assert_eq!(
        value(&error_frame(&errors::already(true, &trades.to_json()))),
        value(&example("ws.error.already_subscribed.json"))
    );
    assert_eq!(value(pong()), value(&example("ws.pong.json")));
    let one =
        Subscription::L2Book { coin: "BTC".into(), n_sig_figs: Some(5), mantissa: Some(1), n_levels: None, fast: None };
    let null =
        Subscription::L2Book { coin: "BTC".into(), n_sig_figs: Some(5), mantissa: None, n_levels: None, fast: None };
    assert_eq!(one.normalised(), null);
}

#[test]
fn l2_frame_round_trips_the_documented_message() {
    let doc = value(&example("ws.l2Book.message.json"));
    let units = Units { px: Decimal::new(1, 1).unwrap(), sz: Decimal::new(1, 5).unwrap() };
    let side = |i: usize| -> Vec<UnitLevel> {
        doc["data"]["levels"][i]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| UnitLevel {
                px: Decimal::parse(l["px"].as_str().unwrap()).unwrap().to_units(units.px).unwrap(),
                sz: Decimal::parse(l["sz"].as_str().unwrap()).unwrap().to_units(units.sz).unwrap(),
                n: l["n"].as_u64().unwrap() as u32,
            })
            .collect()
    };
    let mut out = Vec::new();
    let coin = doc["data"]["coin"].as_str().unwrap();
    write_l2_frame(&mut out, coin, doc["data"]["time"].as_u64().unwrap(), units, &side(0), &side(1));
    assert_eq!(serde_json::from_slice::<serde_json::Value>(&out).unwrap(), doc);
    let mut book = Vec::new();
    write_ws_book(
        &mut book,
        "ETH",
        1_754_450_974_231,
        units,
        &[UnitLevel { px: 30071, sz: 279_540, n: 1 }],
        &[UnitLevel { px: 30401, sz: 394_990, n: 1 }],
    );
    let reply = post_l2_response(123, std::str::from_utf8(&book).unwrap());
    assert_eq!(value(&reply), value(&example("ws.post.l2Book.response.json")));
}

#[test]
fn l4_frames_match_examples() {
    use crate::node::{Batch, BookDiff, OrderStatus};
    let updates = value(&example("ws.l4Book.updates.message.json"));
    let diff_line = example("node_raw_book_diffs_by_block.line.json");
    let batch = Batch::parse(diff_line.trim()).unwrap();
    let diffs: Vec<BookDiff<'_>> = batch.events.iter().map(|e| serde_json::from_str(e.get()).unwrap()).collect();
    let status_line = value(&example("node_order_statuses_by_block.line.trimmed.json")).to_string();
    let batch = Batch::parse(&status_line).unwrap();
    let statuses: Vec<OrderStatus<'_>> = batch.events.iter().map(|e| serde_json::from_str(e.get()).unwrap()).collect();
    let kept: Vec<L4Status<'_>> =
        statuses.iter().filter(|s| s.status != "badAloPxRejected").map(L4Status::from_node).collect();
    let l4_diffs: Vec<L4Diff<'_>> = diffs.iter().map(L4Diff::from_node).collect();
    let frame = l4_updates_frame(1_777_582_003_304, 978_995_377, &kept, &l4_diffs);
    assert_eq!(value(&frame), updates);

    let snapshot = value(&example("ws.l4Book.snapshot.message.json"));
    let body = &snapshot["data"]["Snapshot"];
    let orders: Vec<Vec<String>> =
        (0..2).map(|i| body["levels"][i].as_array().unwrap().iter().map(|o| o.to_string()).collect()).collect();
    #[derive(serde::Deserialize)]
    struct WithUser<'a> {
        user: &'a str,
        #[serde(flatten, borrow)]
        order: crate::node::NodeOrder<'a>,
    }
    let parsed: Vec<Vec<WithUser<'_>>> =
        orders.iter().map(|side| side.iter().map(|o| serde_json::from_str(o).unwrap()).collect()).collect();
    let l4: Vec<Vec<L4Order<'_>>> =
        parsed.iter().map(|side| side.iter().map(|o| L4Order::from_node(Some(o.user), &o.order)).collect()).collect();
    let frame = l4_snapshot_frame("BTC", 1_777_582_003_304, 978_995_377, &l4[0], &l4[1]);
    assert_eq!(value(&frame), snapshot);
}

#[test]
fn fast_decimal_writer_matches_the_exact_one() {
    let cases = [
        (0i64, 0u8),
        (5, 0),
        (764_500, 1),
        (153, 5),
        (100_000, 5),
        (1, 8),
        (10, 8),
        (123_456_789, 3),
        (-153, 5),
        (-764_500, 1),
        (i64::MAX, 18),
    ];
    for (units, scale) in cases {
        let unit = Decimal::new(1, scale).unwrap();
        let mut fast = Vec::new();
        write_hl_decimal(units, unit, &mut fast);
        let mut exact = Vec::new();
        ticktrade_core::write_units(units, unit, &mut exact);
        if !exact.contains(&b'.') {
            exact.extend_from_slice(b".0");
        }
        assert_eq!(String::from_utf8(fast).unwrap(), String::from_utf8(exact).unwrap(), "{units} e-{scale}");
    }
    let mut odd = Vec::new();
    write_hl_decimal(3, Decimal::new(5, 1).unwrap(), &mut odd);
    assert_eq!(odd, b"1.5");
}

#[test]
fn cached_view_encoder_writes_what_the_plain_writer_writes() {
    // A seeded walk of books: levels move, appear and vanish; unchanged ones are copied from
    // the previous frame, so every frame is compared with a fresh full encoding.
    let units = Units { px: Decimal::new(1, 1).unwrap(), sz: Decimal::new(1, 5).unwrap() };
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let mut view = L2View::new("BTC");
    let (mut out, mut scratch) = (bytes::BytesMut::new(), Vec::new());
    let mut book: [Vec<UnitLevel>; 2] = [Vec::new(), Vec::new()];
    let (mut copied_any, mut frames) = (false, 0);
    for step in 0..400u64 {
        for (i, side) in book.iter_mut().enumerate() {
            for _ in 0..next(4) {
                let px = if i == 0 { 1_000_000 - next(40) as i64 } else { 1_000_001 + next(40) as i64 };
                match side.iter().position(|l| l.px == px) {
                    Some(k) if next(3) == 0 => {
                        side.remove(k);
                    }
                    Some(k) => side[k].sz += 1 + next(1000) as i64,
                    None => side.push(UnitLevel { px, sz: 1 + next(100_000) as i64, n: 1 + next(5) as u32 }),
                }
            }
            side.sort_by_key(|l| if i == 0 { -l.px } else { l.px });
        }
        let (bids, asks) = (&book[0][..book[0].len().min(20)], &book[1][..book[1].len().min(20)]);
        if step == 200 {
            view.reset();
        }
        if view.unchanged(bids, asks) {
            continue;
        }
        copied_any |= !view.levels().0.is_empty() && view.levels().0.first() == bids.first();
        let (n_bids, deepest_bid) = view.deepest(0);
        assert_eq!((n_bids, view.levels().0.last().map_or(0, |l| l.px)), (view.levels().0.len(), deepest_bid));
        let frame = view.encode(&mut out, &mut scratch, 1_700_000_000_000 + step, units, bids, asks);
        let mut want = Vec::new();
        write_l2_frame(&mut want, "BTC", 1_700_000_000_000 + step, units, bids, asks);
        assert_eq!(std::str::from_utf8(&frame).unwrap(), std::str::from_utf8(&want).unwrap(), "step {step}");
        assert_eq!(view.levels(), (bids.to_vec(), asks.to_vec()));
        frames += 1;
    }
    assert!(copied_any && frames > 300, "the walk exercised copies ({frames} frames)");
    let empty = L2View::new("X");
    assert!(!empty.unchanged(&[], &[]), "a new view always sends its first frame");
}

#[test]
fn stack_level_writer_writes_what_the_plain_writer_writes() {
    // Every scale a `Decimal` has (0..=18), around the point and the digit counts, signs,
    // zeros, the extremes; against `write_l2_frame`'s per-number writer.
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut values = vec![0i64, 1, -1, 9, 10, 99, 100, 101, 1_000, 153, 100_000, 764_500, i64::MAX, i64::MIN + 1];
    for _ in 0..300 {
        let v = (next() >> (next() % 63)) as i64;
        values.extend([v, -v, v - v % 1_000]);
    }
    for scale in 0..=18u8 {
        for pair in values.windows(2) {
            let units = Units { px: Decimal::new(1, scale).unwrap(), sz: Decimal::new(1, 18 - scale).unwrap() };
            let level = UnitLevel { px: pair[0], sz: pair[1], n: (next() % 5_000) as u32 };
            let mut want = Vec::new();
            write_l2_frame(&mut want, "X", 0, units, &[level], &[]);
            let text = super::l2frame::level_text(units, &level);
            let want = String::from_utf8(want).unwrap();
            assert!(want.contains(&format!("[[{text}],[]]")), "{want} vs {text} (scale {scale})");
        }
    }
    let odd = Units { px: Decimal::new(5, 1).unwrap(), sz: Decimal::new(1, 0).unwrap() };
    let text = super::l2frame::level_text(odd, &UnitLevel { px: 3, sz: 2, n: 1 });
    assert_eq!(text, r#"{"px":"1.5","sz":"2.0","n":1}"#);
}

#[test]
fn a_shared_frame_is_the_other_views_and_later_frames_still_encode_right() {
    let units = Units { px: Decimal::new(1, 1).unwrap(), sz: Decimal::new(1, 3).unwrap() };
    let level = |px: i64, sz: i64| UnitLevel { px, sz, n: 1 };
    let (mut out, mut scratch) = (bytes::BytesMut::new(), Vec::new());
    let (mut full, mut sig5) = (L2View::new("ETH"), L2View::new("ETH"));
    assert!(!sig5.shares_frame_with(&full), "fresh views share nothing");
    let bids = [level(30_000, 5), level(29_990, 7), level(29_980, 1)];
    let asks = [level(30_010, 2), level(30_020, 9)];
    let frame = full.encode(&mut out, &mut scratch, 7, units, &bids, &asks);
    assert!(!sig5.shares_frame_with(&full) && !full.shares_frame_with(&sig5));
    let shared = sig5.share(&full);
    assert_eq!(shared, frame);
    assert!(sig5.shares_frame_with(&full) && full.shares_frame_with(&sig5));
    assert!(sig5.unchanged(&bids, &asks) && !sig5.is_fresh());
    assert_eq!((sig5.levels(), sig5.deepest(0), sig5.deepest(1)), (full.levels(), (3, 29_980), (2, 30_020)));
    // The next frame of the sharing view copies its unchanged levels from the shared bytes.
    let bids = [level(30_000, 5), level(29_990, 8), level(29_980, 1)];
    let next = sig5.encode(&mut out, &mut scratch, 8, units, &bids, &asks);
    let mut want = Vec::new();
    write_l2_frame(&mut want, "ETH", 8, units, &bids, &asks);
    assert_eq!(std::str::from_utf8(&next).unwrap(), std::str::from_utf8(&want).unwrap());
    assert_eq!(full.frame(), &frame, "the other view keeps its frame");
    assert!(!sig5.shares_frame_with(&full), "one view encoded since");
    // The same bytes encoded by each view on its own are two frames, not one shared.
    let mut other = L2View::new("ETH");
    other.encode(&mut out, &mut scratch, 7, units, &bids, &asks);
    let again = full.encode(&mut out, &mut scratch, 7, units, &bids, &asks);
    assert_eq!(again, *other.frame());
    assert!(!other.shares_frame_with(&full));
    other.share(&full);
    assert!(other.shares_frame_with(&full));
    other.reset();
    assert!(!other.shares_frame_with(&full), "a reset view has no frame");
}

#[test]
fn encode_changed_skips_exactly_the_unchanged_views_and_writes_what_the_plain_writer_writes() {
    // A seeded walk where many steps leave the shown levels as they were (no change, or
    // changes below the 10 shown levels) and others change one level anywhere, grow or shrink
    // a side: `encode_changed` answers None exactly when `unchanged` is true, and leaves the
    // view and the buffer as they were; its frames are the plain writer's.
    let units = Units { px: Decimal::new(1, 2).unwrap(), sz: Decimal::new(1, 3).unwrap() };
    let mut state = 0x1234_5678_9abc_def1u64;
    let mut next = move |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % n
    };
    let (mut view, mut twin) = (L2View::new("@7"), L2View::new("@7"));
    let (mut out, mut scratch) = (bytes::BytesMut::new(), Vec::new());
    let mut book: [Vec<UnitLevel>; 2] = [Vec::new(), Vec::new()];
    let (mut skipped, mut sent) = (0, 0);
    for step in 0..600u64 {
        for (i, side) in book.iter_mut().enumerate() {
            for _ in 0..next(3) {
                let px = if i == 0 { 5_000 - next(25) as i64 } else { 5_001 + next(25) as i64 };
                match side.iter().position(|l| l.px == px) {
                    Some(k) if next(3) == 0 => {
                        side.remove(k);
                    }
                    Some(k) => side[k].n += 1,
                    None => side.push(UnitLevel { px, sz: 1 + next(100) as i64, n: 1 }),
                }
            }
            side.sort_by_key(|l| if i == 0 { -l.px } else { l.px });
        }
        let (bids, asks) = (&book[0][..book[0].len().min(10)], &book[1][..book[1].len().min(10)]);
        if step == 300 {
            view.reset();
            twin.reset();
        }
        let before = (view.frame().clone(), view.levels(), view.deepest(0), view.deepest(1));
        let unchanged = twin.unchanged(bids, asks);
        let time = 1_700_000_000_000 + step;
        match view.encode_changed(&mut out, &mut scratch, time, units, bids, asks) {
            None => {
                assert!(unchanged, "step {step}: skipped a changed view");
                assert!(out.is_empty(), "step {step}: the skipped frame was left in the buffer");
                assert_eq!((view.frame().clone(), view.levels(), view.deepest(0), view.deepest(1)), before);
                skipped += 1;
            }
            Some(frame) => {
                assert!(!unchanged, "step {step}: sent an unchanged view");
                let mut want = Vec::new();
                write_l2_frame(&mut want, "@7", time, units, bids, asks);
                assert_eq!(std::str::from_utf8(&frame).unwrap(), std::str::from_utf8(&want).unwrap(), "step {step}");
                assert_eq!(view.levels(), (bids.to_vec(), asks.to_vec()));
                assert_eq!(view.frame(), &frame);
                assert_eq!(twin.encode(&mut out, &mut scratch, time, units, bids, asks), frame);
                sent += 1;
            }
        }
    }
    assert!(skipped > 100 && sent > 100, "the walk exercised both ({skipped} skipped, {sent} sent)");
    // A new view sends its first frame, even an empty one; then the same levels send nothing.
    let mut empty = L2View::new("X");
    assert!(empty.encode_changed(&mut out, &mut scratch, 1, units, &[], &[]).is_some());
    assert!(empty.encode_changed(&mut out, &mut scratch, 2, units, &[], &[]).is_none());
    // A side that only grows by a level (the old ones all equal and in place) is a change.
    let l = |px: i64| UnitLevel { px, sz: 1, n: 1 };
    assert!(empty.encode_changed(&mut out, &mut scratch, 3, units, &[l(9)], &[]).is_some());
    assert!(empty.encode_changed(&mut out, &mut scratch, 4, units, &[l(9), l(8)], &[]).is_some());
    assert!(empty.encode_changed(&mut out, &mut scratch, 5, units, &[l(9)], &[]).is_some());
    assert!(empty.encode_changed(&mut out, &mut scratch, 6, units, &[l(9)], &[]).is_none());
    assert!(empty.encode_changed(&mut out, &mut scratch, 7, units, &[l(9)], &[l(10)]).is_some());
}

#[test]
fn prefetch_changes_nothing_at_any_size() {
    let units = Units { px: Decimal::new(1, 1).unwrap(), sz: Decimal::new(1, 3).unwrap() };
    let (mut out, mut scratch) = (bytes::BytesMut::new(), Vec::new());
    let mut view = L2View::new("SOL");
    view.prefetch();
    assert!(view.is_fresh() && view.frame().is_empty());
    for n in [1, 3, 40, 200] {
        let bids: Vec<UnitLevel> = (0..n).map(|k| UnitLevel { px: 20_000 - k, sz: 10 + k, n: 1 }).collect();
        let asks: Vec<UnitLevel> = (0..n).map(|k| UnitLevel { px: 20_001 + k, sz: 3 * k + 1, n: 2 }).collect();
        let frame = view.encode(&mut out, &mut scratch, 9, units, &bids, &asks);
        view.prefetch();
        assert!(view.unchanged(&bids, &asks) && view.frame() == &frame, "{n} levels a side");
    }
    view.reset();
    view.prefetch();
    assert!(view.is_fresh());
}
