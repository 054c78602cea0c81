use super::*;
use crate::node::{RestingStatus, TypedBatch};

fn example(name: &str) -> String {
    let path = format!("{}/../../testdata/hyperliquid/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(path).unwrap()
}

/// Drops whitespace outside strings, keeping the field order (serde_json's `Value` would sort).
fn minify(text: &str) -> String {
    let (mut out, mut in_str, mut escaped) = (String::with_capacity(text.len()), false, false);
    for c in text.chars() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else if !c.is_whitespace() {
            in_str = c == '"';
            out.push(c);
        }
    }
    out
}

fn line_of(events: &[String]) -> String {
    format!(
        r#"{{"local_time":"2026-04-30T20:46:46.266775178","block_time":"2026-04-30T20:46:43.304461819","block_number":978995377,"events":[{}]}}"#,
        events.join(",")
    )
}

/// Both decoders agree on `line`; returns whether the fast path took it.
pub(crate) fn check_statuses(line: &str) -> bool {
    let general = TypedBatch::<OrderStatus<'_>>::parse(line);
    let mut fast = vec![];
    let header = statuses(line, true, &mut fast);
    match (&general, header) {
        (Ok(batch), Some(header)) => {
            assert_eq!(fast, batch.events, "{line}");
            assert_eq!(
                (header.local_time, header.block_time, header.block_number),
                (batch.local_time, batch.block_time, batch.block_number)
            );
        }
        (Err(_), Some(_)) => panic!("fast path accepted a line the general decoder rejects: {line}"),
        (_, None) => assert!(fast.is_empty()),
    }
    let resting = TypedBatch::<RestingStatus<'_>>::parse(line);
    let mut kept = vec![];
    let header = statuses(line, false, &mut kept);
    match (resting, header) {
        (Ok(batch), Some(_)) => {
            let expected: Vec<OrderStatus<'_>> = batch.events.into_iter().filter_map(|r| r.0).collect();
            assert_eq!(kept, expected, "{line}");
        }
        (Err(_), Some(_)) => panic!("fast path accepted a line the resting decoder rejects: {line}"),
        (_, None) => assert!(kept.is_empty()),
    }
    header.is_some()
}

pub(crate) fn check_diffs(line: &str) -> bool {
    let general = TypedBatch::<BookDiff<'_>>::parse(line);
    let mut fast = vec![];
    let header = diffs(line, &mut fast);
    match (&general, header) {
        (Ok(batch), Some(header)) => {
            assert_eq!(fast, batch.events, "{line}");
            assert_eq!((header.block_time, header.block_number), (batch.block_time, batch.block_number));
        }
        (Err(_), Some(_)) => panic!("fast path accepted a line the general decoder rejects: {line}"),
        (_, None) => assert!(fast.is_empty()),
    }
    header.is_some()
}

#[test]
fn every_example_decodes_identically() {
    // Statuses: the recorded line (pretty in the examples: the fast path must give up), compact.
    let pretty = example("node_order_statuses_by_block.line.trimmed.json");
    assert!(!check_statuses(&pretty));
    let compact = minify(&pretty);
    assert!(check_statuses(&compact));
    let mut fast = vec![];
    assert_eq!(statuses(&compact, true, &mut fast).map(|h| h.block_number), Some(978_995_377));
    assert_eq!(fast.len(), 3);
    // The trigger lifecycle, one event per line and all in one line.
    let lifecycle: Vec<serde_json::Value> =
        serde_json::from_str(&example("order_status.trigger_lifecycle.events.json")).unwrap();
    let text = example("order_status.trigger_lifecycle.events.json");
    let events: Vec<String> = split_events(&text, "\"event\":");
    assert_eq!(events.len(), lifecycle.len());
    for event in &events {
        assert!(check_statuses(&line_of(std::slice::from_ref(event))));
    }
    assert!(check_statuses(&line_of(&events)));
    // The l4Book message's statuses have no hash/builder and a `user` in the order: the fast
    // path gives up and the general decoder decides.
    let l4 = example("ws.l4Book.updates.message.json");
    let ws_statuses = split_events(&l4, "\"order_statuses\":");
    assert!(!ws_statuses.is_empty());
    assert!(!check_statuses(&line_of(&ws_statuses)));
    // Diffs: the recorded line, the update event, both.
    let diffs_line = example("node_raw_book_diffs_by_block.line.json");
    assert!(check_diffs(diffs_line.trim()));
    assert!(check_diffs(&diffs_line));
    let update = minify(&example("raw_book_diff.update.event.json"));
    assert!(check_diffs(&line_of(std::slice::from_ref(&update))));
    let mut all = split_events(diffs_line.trim(), "\"events\":");
    all.push(update);
    assert!(check_diffs(&line_of(&all)));
    assert!(check_diffs(&line_of(&[])));
}

/// The compact text of each element of the array (or of the object) following every `key`.
fn split_events(text: &str, key: &str) -> Vec<String> {
    let compact = minify(text);
    let mut out = Vec::new();
    let mut rest = compact.as_str();
    while let Some(at) = rest.find(key) {
        rest = &rest[at + key.len()..];
        let value: &serde_json::value::RawValue = serde_json::Deserializer::from_str(rest)
            .into_iter::<&serde_json::value::RawValue>()
            .next()
            .unwrap()
            .unwrap();
        let raw = value.get();
        if raw.starts_with('[') {
            let items: Vec<&serde_json::value::RawValue> = serde_json::from_str(raw).unwrap();
            out.extend(items.iter().map(|v| v.get().to_owned()));
        } else {
            out.push(raw.to_owned());
        }
        rest = &rest[raw.len()..];
    }
    out
}

#[test]
fn gives_up_on_anything_unexpected() {
    let line = minify(&example("node_order_statuses_by_block.line.trimmed.json"));
    assert!(check_statuses(&line));
    let cases = [
        line.replacen("\"oid\":", "\"oid\":0", 1),
        line.replacen("\"oid\":", "\"oid\":99999999999999999999", 1),
        line.replacen("\"oid\":", "\"oid\": ", 1),
        line.replacen("\"sz\":\"", "\"sz\":\"\\u0030", 1),
        line.replacen("\"coin\":\"BTC\"", "\"coin\":\"B\\\"TC\"", 1),
        line.replacen("\"hash\":null", "\"hash\":1.5", 1),
        line.replacen("\"tif\":", "\"x\":1,\"tif\":", 1),
        line.replacen("}]}", "}] }x", 1),
        line.replacen("\"block_number\":978995377", "\"block_number\":-1", 1),
        line[..line.len() - 1].to_owned(),
    ];
    for case in &cases {
        assert!(!check_statuses(case), "{case}");
    }
    // The largest u64 is read in both an order that cannot rest (only walked without l4
    // subscribers) and one that may; one more gives up (serde rejects it or only skips it).
    for oid in ["405401002864", "405401002917"] {
        assert!(line.contains(oid));
        assert!(check_statuses(&line.replacen(oid, "18446744073709551615", 1)));
        assert!(check_statuses(&line.replacen(oid, "9999999999999999999", 1)));
        assert!(!check_statuses(&line.replacen(oid, "18446744073709551616", 1)));
        assert!(!check_statuses(&line.replacen(oid, "99999999999999999990", 1)));
    }
    // Values of the accepted subset in skipped fields are fine.
    let builder = line.replacen("\"builder\":null", "\"builder\":{\"b\":\"0xabc\",\"f\":10,\"x\":[true,[]]}", 1);
    assert!(check_statuses(&builder));
    // Trailing whitespace is accepted by both.
    assert!(check_statuses(&format!("{line}\n")));
}

/// Head + tail from any offset either both decode and equal the whole line's decode, or one
/// of them gives up; at the real event boundaries both decode.
fn check_split_everywhere(line: &str) -> usize {
    let mut taken = 0;
    for all in [true, false] {
        let mut whole = vec![];
        let header = statuses(line, all, &mut whole).unwrap();
        for split in 0..=line.len() + 1 {
            let (mut head, mut tail) = (vec![], vec![]);
            let h = statuses_head(line, split, all, &mut head);
            let t = statuses_tail(line, split, all, &mut tail);
            if h.is_none() {
                assert!(head.is_empty());
            }
            if t.is_none() {
                assert!(tail.is_empty());
            }
            if let (Some(h), Some(())) = (h, t) {
                assert_eq!(h, header);
                head.extend(tail);
                assert_eq!(head, whole, "split at {split}");
                taken += 1;
            }
        }
    }
    taken
}

#[test]
fn a_line_splits_only_at_event_boundaries_and_decodes_the_same() {
    let line = minify(&example("node_order_statuses_by_block.line.trimmed.json"));
    // Three events: two boundaries, each found by both the all and the resting decode.
    assert_eq!(check_split_everywhere(&line), 4);
    let split = statuses_split(&line, line.len() / 2).unwrap();
    assert!(line[split..].starts_with("{\"time\":\""));
    // The split pattern inside an order's children (valid JSON the template skips): the guess
    // lands inside an event and the head refuses it.
    let children = r#""children":[{"a":[]},{"time":"x"}]"#;
    let tricky = line.replacen(r#""children":[]"#, children, 1);
    assert!(check_statuses(&tricky));
    assert_eq!(check_split_everywhere(&tricky), 4);
    let inside = tricky.find(r#"},{"time":"x"#).unwrap() + 2;
    assert!(statuses_head(&tricky, inside, true, &mut vec![]).is_none());
}

/// A middle part decodes only from an event's start (the first event's, or a boundary) to a
/// later real event boundary (tried from every start to each boundary and a byte either side
/// of it), and then holds the events between them; head + middle + tail at the two boundaries
/// of a three-event line equal the whole decode; the split pattern inside an event's children
/// is refused as either end.
#[test]
fn a_middle_part_decodes_only_between_two_event_boundaries() {
    let line = minify(&example("node_order_statuses_by_block.line.trimmed.json"));
    let children = r#""children":[{"a":[]},{"time":"x"}]"#;
    let tricky = line.replacen(r#""children":[]"#, children, 1);
    for line in [line, tricky] {
        let bounds: Vec<usize> = (2..line.len())
            .filter(|&i| line[i - 2..].starts_with("},{\"time\":\"") && !line[i..].starts_with("{\"time\":\"x"))
            .collect();
        let [b1, b2] = bounds[..] else { panic!("{bounds:?}") };
        let first = line.find("[{").unwrap() + 1;
        for all in [true, false] {
            let mut whole = vec![];
            statuses(&line, all, &mut whole).unwrap();
            let before = |at: usize| {
                let mut head = vec![];
                if at != first {
                    statuses_head(&line, at, all, &mut head).unwrap();
                }
                head
            };
            let mut ends: Vec<usize> = bounds.iter().flat_map(|&b| [b - 1, b, b + 1]).collect();
            ends.extend([0, first, line.len(), line.len() + 1]);
            ends.extend(line.find(r#"},{"time":"x"#).map(|i| i + 2));
            let mut taken = 0;
            for from in 0..=line.len() + 1 {
                for &to in &ends {
                    let mut out = vec![];
                    let got = statuses_middle(&line, from, to, all, &mut out);
                    if [first, b1].contains(&from) && [b1, b2].contains(&to) && from < to {
                        assert!(got.is_some(), "from {from} to {to}");
                        let (head, upto) = (before(from), before(to));
                        assert_eq!([&head[..], &out[..]].concat(), upto, "from {from} to {to}");
                        taken += 1;
                    } else {
                        assert!(got.is_none() && out.is_empty(), "from {from} to {to}");
                    }
                }
            }
            assert_eq!(taken, 3);
            let (mut head, mut middle, mut tail) = (vec![], vec![], vec![]);
            statuses_head(&line, b1, all, &mut head).unwrap();
            statuses_middle(&line, b1, b2, all, &mut middle).unwrap();
            statuses_tail(&line, b2, all, &mut tail).unwrap();
            assert_eq!([head, middle, tail].concat(), whole);
        }
    }
}

/// The split guess from any offset is the first `},{"time":"` boundary at or after it.
#[test]
fn the_split_guess_is_the_first_candidate_from_the_offset() {
    let line = minify(&example("node_order_statuses_by_block.line.trimmed.json"));
    let candidates: Vec<usize> = (2..line.len()).filter(|&i| line[i - 2..].starts_with("},{\"time\":\"")).collect();
    assert_eq!(candidates.len(), 2);
    for from in 0..=line.len() + 1 {
        assert_eq!(statuses_split(&line, from), candidates.iter().copied().find(|&c| c >= from), "from {from}");
    }
}

/// The eight-digits-a-step number reader against the digit-at-a-time one, on every length
/// and every following byte class, at the end of a line and not.
#[test]
fn numbers_read_eight_digits_a_step_as_one_at_a_time() {
    let mut numbers: Vec<String> = vec!["0".into(), "00".into(), "01".into(), "7".into()];
    for len in 1..=21 {
        numbers.push("9".repeat(len));
        numbers.push(format!("1{}", "0".repeat(len - 1)));
        numbers.push((0..len).map(|i| char::from(b'1' + (i * 7 % 9) as u8)).collect());
    }
    numbers.push(u64::MAX.to_string());
    numbers.push("18446744073709551616".into());
    for number in &numbers {
        for after in ["", ",", "}", "x", ":", "/", "\u{7f}", "\u{e9}", ",\"tif\":\"Alo\",\"cloid\":null}"] {
            let text = format!("{number}{after}");
            let (mut fast, mut slow) = (Cursor::new(&text), Cursor::new(&text));
            assert_eq!((fast.u64(), fast.at), (slow.u64_slow(), slow.at), "{text:?}");
        }
    }
}

/// The fixed-length string check against the scan, for every expected length around the
/// real one and every special byte (quote, backslash, control) at every position of the
/// string, at the end of a line and not: it takes a string only when the scan reads the same
/// one, and leaves the cursor where it was when it does not.
#[test]
fn fixed_length_strings_read_as_the_scan() {
    fn check<const N: usize>(text: &str) {
        let (mut fixed, mut scan) = (Cursor::new(text), Cursor::new(text));
        let want = scan.str().map(|s| (s, scan.at));
        match fixed.exact_str_span::<N>() {
            Some((start, end)) => {
                assert_eq!(Some((&text[start..end], fixed.at)), want, "{text:?} as {N}");
                assert_eq!(end - start, N);
            }
            None => assert_eq!(fixed.at, 0, "{text:?}"),
        }
        let mut of = Cursor::new(text);
        assert_eq!(of.str_of::<N>().map(|s| (s, of.at)), want, "{text:?} as {N}");
        let mut skip = Cursor::new(text);
        assert_eq!(skip.skip_str_of::<N>().map(|()| skip.at), want.map(|w| w.1), "{text:?} as {N}");
    }
    for len in 0..=70 {
        let body: String = (0..len).map(|i| char::from(b'a' + (i % 26) as u8)).collect();
        let mut texts = vec![format!("\"{body}\""), format!("\"{body}\",\"x\":1234567890123}}"), format!("\"{body}")];
        for at in 0..len {
            for special in ['"', '\\', '\u{1}', '\u{1f}', 'é'] {
                let mut b: Vec<char> = body.chars().collect();
                b[at] = special;
                let b: String = b.into_iter().collect();
                texts.push(format!("\"{b}\""));
                texts.push(format!("\"{b}\",\"tif\":null,\"cloid\":null}}"));
            }
        }
        for text in &texts {
            check::<1>(text);
            check::<3>(text);
            check::<5>(text);
            check::<7>(text);
            check::<8>(text);
            check::<9>(text);
            check::<29>(text);
            check::<34>(text);
            check::<42>(text);
            check::<66>(text);
        }
    }
}

/// A long literal read a word at a time: taken exactly when the bytes are equal, whichever
/// byte differs, and not past the end of the line.
#[test]
fn the_plain_middle_is_read_only_when_every_byte_matches() {
    let text = format!("{}true,", std::str::from_utf8(&PLAIN_MIDDLE).unwrap());
    let mut c = Cursor::new(&text);
    assert_eq!(c.long_lit(&PLAIN_MIDDLE), Some(()));
    assert_eq!(c.at, PLAIN_MIDDLE.len());
    for at in 0..PLAIN_MIDDLE.len() {
        let mut bytes = text.clone().into_bytes();
        bytes[at] ^= 0x01;
        let other = String::from_utf8(bytes).unwrap();
        let mut c = Cursor::new(&other);
        assert_eq!(c.long_lit(&PLAIN_MIDDLE), None, "byte {at}");
        assert_eq!(c.at, 0);
        let short = &text[..PLAIN_MIDDLE.len() - 1 - at % 8];
        assert_eq!(Cursor::new(short).long_lit(&PLAIN_MIDDLE), None);
    }
}

/// Every byte of an order's plain middle, of the strings read at a fixed length (time,
/// user, hash, side, orderType, tif, cloid) and of their neighbours changed to each byte of
/// JSON's structure, a digit, a letter, a space or an escape, in a status that may rest and
/// in one that cannot: both decoders still agree (or the fast path gives up).
#[test]
fn mutations_of_the_fixed_parts_never_disagree() {
    let line = minify(&example("node_order_statuses_by_block.line.trimmed.json"));
    let hashed = line.replacen("\"hash\":null", &format!("\"hash\":\"0x{}\"", "ab".repeat(32)), 1);
    let middle = std::str::from_utf8(&PLAIN_MIDDLE).unwrap();
    let first = line.find(middle).unwrap();
    let open = line.find("\"status\":\"open\"").unwrap();
    let second = open + line[open..].find(middle).unwrap();
    let limit = LIMIT_MIDDLE.len();
    let mut ranges = vec![(first - 20, first + limit + 8), (second - 20, second + limit + 8)];
    let fields = [
        "\"time\":",
        "\"user\":",
        "\"hash\":",
        "\"builder\":",
        "\"side\":",
        "\"orderType\":",
        "\"tif\":",
        "\"cloid\":",
    ];
    for field in fields {
        for (at, _) in line.match_indices(field) {
            ranges.push((at + field.len() - 2, (at + field.len() + 48).min(line.len())));
        }
    }
    let mut taken = 0;
    for (from, to) in ranges {
        for at in from..to {
            for b in *b"{}[]\",:0a \\\x01" {
                let mut bytes = line.clone().into_bytes();
                bytes[at] = b;
                let Ok(text) = String::from_utf8(bytes) else { continue };
                taken += usize::from(check_statuses(&text));
            }
        }
    }
    let at = hashed.find("\"hash\":\"").unwrap();
    for at in at..at + 80 {
        for b in *b"{}\",:0a \\\x01" {
            let mut bytes = hashed.clone().into_bytes();
            bytes[at] = b;
            taken += usize::from(check_statuses(&String::from_utf8(bytes).unwrap()));
        }
    }
    // Orders past the plain middle but not of the plain limit kind, or of neither, in both
    // kinds of status: each read as the general decoder reads it.
    for (from, to) in [
        ("\"reduceOnly\":false", "\"reduceOnly\":true"),
        ("\"orderType\":\"Limit\"", "\"orderType\":\"Stop Market\""),
        ("\"orderType\":\"Limit\"", "\"orderType\":\"Limi\""),
        ("\"isTrigger\":false", "\"isTrigger\":true"),
        ("\"triggerCondition\":\"N/A\"", "\"triggerCondition\":\"Price below 5\""),
        ("\"children\":[]", "\"children\":[null]"),
        ("\"hash\":null", "\"hash\":[]"),
        ("\"builder\":null", "\"builder\":{\"b\":\"0x1\",\"f\":1}"),
    ] {
        for text in [&line, &hashed] {
            let n = text.matches(from).count();
            assert!(n >= 1, "{from}");
            for i in 0..n {
                let at = text.match_indices(from).nth(i).unwrap().0;
                let changed = format!("{}{to}{}", &text[..at], &text[at + from.len()..]);
                assert!(check_statuses(&changed), "{changed}");
            }
        }
    }
    // Most of the changes inside strings are still hl-node's shape, and taken.
    assert!(taken > 500, "{taken}");
}

/// The diffs' fixed-length strings (user, side) changed byte by byte: both decoders agree.
#[test]
fn mutations_of_a_diffs_fixed_strings_never_disagree() {
    let line = minify(&example("node_raw_book_diffs_by_block.line.json"));
    assert!(check_diffs(&line));
    let mut taken = 0;
    for field in ["\"user\":", "\"side\":"] {
        for (at, _) in line.match_indices(field) {
            for at in at + field.len() - 2..(at + field.len() + 46).min(line.len()) {
                for b in *b"{}\",:0a \\\x01" {
                    let mut bytes = line.clone().into_bytes();
                    bytes[at] = b;
                    taken += usize::from(check_diffs(&String::from_utf8(bytes).unwrap()));
                }
            }
        }
    }
    assert!(taken > 100, "{taken}");
}
