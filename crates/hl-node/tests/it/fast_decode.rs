//! The one-pass scanner (`ticktrade_hl_proto::node::fast`) against the general serde decoder:
//! the generator's lines all take the fast path and decode identically, and on mutated lines
//! the fast path never panics and never disagrees (it either gives up or agrees).

use proptest::prelude::*;
use ticktrade_core::Utc;
use ticktrade_hl_node::synth::{GenConfig, Generator};
use ticktrade_hl_proto::node::{BookDiff, OrderStatus, RestingStatus, TypedBatch, fast};

/// Both decoders agree on an order-status line (all statuses, and resting ones only); true
/// when the fast path took it.
fn check_statuses(line: &str) -> Result<bool, TestCaseError> {
    let mut took = true;
    for all in [true, false] {
        let mut out = Vec::new();
        let header = fast::statuses(line, all, &mut out);
        let general: Option<(u64, Vec<OrderStatus<'_>>)> = if all {
            TypedBatch::<OrderStatus<'_>>::parse(line).ok().map(|b| (b.block_number, b.events))
        } else {
            TypedBatch::<RestingStatus<'_>>::parse(line)
                .ok()
                .map(|b| (b.block_number, b.events.into_iter().filter_map(|r| r.0).collect()))
        };
        match (header, general) {
            (Some(header), Some((height, events))) => {
                prop_assert_eq!(header.block_number, height);
                prop_assert_eq!(out, events);
            }
            (Some(_), None) => prop_assert!(false, "fast path accepted what serde rejects: {}", line),
            (None, _) => {
                prop_assert!(out.is_empty());
                took = false;
            }
        }
    }
    Ok(took)
}

fn check_diffs(line: &str) -> Result<bool, TestCaseError> {
    let mut out = Vec::new();
    let header = fast::diffs(line, &mut out);
    match (header, TypedBatch::<BookDiff<'_>>::parse(line)) {
        (Some(header), Ok(batch)) => {
            prop_assert_eq!(header.block_number, batch.block_number);
            prop_assert_eq!(header.block_time, batch.block_time);
            prop_assert_eq!(out, batch.events);
            Ok(true)
        }
        (Some(_), Err(_)) => {
            prop_assert!(false, "fast path accepted what serde rejects: {}", line);
            Ok(true)
        }
        (None, _) => {
            prop_assert!(out.is_empty());
            Ok(false)
        }
    }
}

/// A few small generated blocks: `(statuses, diffs)` lines.
fn lines() -> Vec<(String, String)> {
    let mut g = Generator::new(&GenConfig { n_coins: 6, orders_per_block: 12, ..GenConfig::default() });
    (0..8)
        .map(|i| {
            let block = g.next_block(Utc::from_millis(1_777_582_003_304 + i * 100));
            (block.statuses, block.diffs)
        })
        .collect()
}

#[test]
fn generated_lines_take_the_fast_path_and_decode_identically() {
    let mut g = Generator::new(&GenConfig { n_coins: 40, orders_per_block: 400, ..GenConfig::default() });
    let (mut n_statuses, mut n_diffs) = (0, 0);
    for i in 0..40 {
        let block = g.next_block(Utc::from_millis(1_777_582_003_304 + i * 100));
        assert!(check_statuses(&block.statuses).unwrap(), "{}", block.statuses);
        assert!(check_diffs(&block.diffs).unwrap(), "{}", block.diffs);
        let mut out = Vec::new();
        fast::statuses(&block.statuses, true, &mut out).unwrap();
        n_statuses += out.len();
        // Decoded in two parts at the split guess: the same statuses, with and without l4.
        let split = fast::statuses_split(&block.statuses, block.statuses.len() / 2).unwrap();
        for (all, whole) in [(true, out.clone()), (false, out.iter().filter(|s| s.may_rest()).cloned().collect())] {
            let (mut head, mut tail) = (Vec::new(), Vec::new());
            assert!(fast::statuses_head(&block.statuses, split, all, &mut head).is_some());
            assert!(fast::statuses_tail(&block.statuses, split, all, &mut tail).is_some());
            head.extend(tail);
            assert_eq!(head, whole);
        }
        let mut out = Vec::new();
        fast::diffs(&block.diffs, &mut out).unwrap();
        n_diffs += out.len();
    }
    assert!(n_statuses > 1000 && n_diffs > 1000, "{n_statuses} {n_diffs}");
}

/// Bytes a mutation inserts or writes: JSON's structure, digits, escapes, whitespace, letters
/// of the literals and of the field names.
const ALPHABET: &[u8] = b"{}[]\",:0123456789.-+eE \n\t\\/ntrufalsAB\x01";

#[derive(Clone, Debug)]
enum Mutation {
    Delete(usize),
    Insert(usize, u8),
    Replace(usize, u8),
    Truncate(usize),
    /// Removes a run of bytes (drops whole fields or values).
    Cut(usize, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let byte = (0..ALPHABET.len()).prop_map(|i| ALPHABET[i]);
    prop_oneof![
        any::<usize>().prop_map(Mutation::Delete),
        (any::<usize>(), byte.clone()).prop_map(|(at, b)| Mutation::Insert(at, b)),
        (any::<usize>(), byte).prop_map(|(at, b)| Mutation::Replace(at, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (any::<usize>(), 1usize..40).prop_map(|(at, n)| Mutation::Cut(at, n)),
    ]
}

fn mutate(line: &str, mutations: &[Mutation]) -> String {
    // The lines are ASCII and so is the alphabet: every byte position is a char boundary.
    let mut bytes = line.as_bytes().to_vec();
    for m in mutations {
        let len = bytes.len().max(1);
        match *m {
            Mutation::Delete(at) if !bytes.is_empty() => {
                bytes.remove(at % len);
            }
            Mutation::Insert(at, b) => bytes.insert(at % (bytes.len() + 1), b),
            Mutation::Replace(at, b) if !bytes.is_empty() => bytes[at % len] = b,
            Mutation::Truncate(at) => bytes.truncate(at % (bytes.len() + 1)),
            Mutation::Cut(at, n) if !bytes.is_empty() => {
                let at = at % len;
                bytes.drain(at..(at + n).min(bytes.len()));
            }
            _ => {}
        }
    }
    String::from_utf8(bytes).unwrap_or_default()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn fast_path_never_disagrees_on_mutated_lines(
        which in 0usize..8,
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let lines = lines();
        let (statuses, diffs) = &lines[which % lines.len()];
        check_statuses(&mutate(statuses, &mutations))?;
        check_diffs(&mutate(diffs, &mutations))?;
        // A status line's mutations applied to a diff line's shape and back, too.
        check_statuses(&mutate(diffs, &mutations))?;
        check_diffs(&mutate(statuses, &mutations))?;
    }
}
