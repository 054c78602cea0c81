//! Consistency check: the books rebuilt from files against a snapshot of the same height.
//!
//! Owns: the comparison, order by order (oid, side, price, size, FIFO position) per coin.
//! Must not: fetch the snapshot. Where it comes from decides the cost: a snapshot computed
//! offline with `hl-node compute-l4-snapshots` from `periodic_abci_states` costs the node
//! nothing; asking the live node (`fileSnapshot`) makes it write ~300 MB and stall block
//! processing for seconds, which is why `ticktrade hl` never does it on a timer.

use ticktrade_core::Side;
use ticktrade_hl_proto::snapshot::Snapshot;

use crate::books::Books;

/// Differences between `books` and `snapshot` (empty when they agree), at most `limit`.
pub fn compare(books: &Books, snapshot: &Snapshot<'_>, limit: usize) -> Vec<String> {
    let mut diffs = Vec::new();
    if books.height() != snapshot.height() {
        diffs.push(format!("books at block {}, snapshot at block {}", books.height(), snapshot.height()));
        return diffs;
    }
    let mut seen = std::collections::HashSet::new();
    for coin in &snapshot.1 {
        seen.insert(coin.0.to_string());
        let Some(id) = books.coins.id(&coin.0) else {
            if !coin.1.0.is_empty() || !coin.1.1.is_empty() {
                diffs.push(format!("{}: in the snapshot, never seen in the files", coin.0));
            }
            continue;
        };
        let spec = books.coins.spec(id);
        if books.book(id).is_some_and(|b| b.stale) {
            diffs.push(format!("{}: stale (a damaged line touched it)", coin.0));
            continue;
        }
        let ours = books.l4_orders(id);
        for (i, (entries, side)) in [(&coin.1.0, Side::Buy), (&coin.1.1, Side::Sell)].into_iter().enumerate() {
            let theirs: Vec<(u64, Option<i64>, Option<i64>)> = entries
                .iter()
                .map(|e| {
                    (e.1.oid, spec.parse_px(e.1.limit_px).map(|p| p.raw()), spec.parse_sz(e.1.sz).map(|q| q.raw()))
                })
                .collect();
            let mine: Vec<(u64, Option<i64>, Option<i64>)> = ours[i]
                .iter()
                .map(|o| (o.oid, spec.parse_px(&o.px).map(|p| p.raw()), spec.parse_sz(&o.sz).map(|q| q.raw())))
                .collect();
            if theirs != mine {
                let at = theirs.iter().zip(&mine).position(|(a, b)| a != b).unwrap_or(theirs.len().min(mine.len()));
                diffs.push(format!(
                    "{} {side:?}: {} orders in the files' book, {} in the snapshot; first difference at position {at}",
                    coin.0,
                    mine.len(),
                    theirs.len()
                ));
            }
        }
        if diffs.len() >= limit {
            return diffs;
        }
    }
    for (id, spec) in books.coins.iter() {
        if !seen.contains(&spec.name) && books.book(id).is_some_and(|b| !b.book.is_empty()) {
            diffs.push(format!("{}: orders in the files' book, absent from the snapshot", spec.name));
        }
    }
    diffs.truncate(limit);
    diffs
}
