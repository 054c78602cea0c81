//! Book frames the hub sends: a client's snapshot of the published book, and a grouped
//! book's top-N window computed locally from the full book at the channel's precision.
//!
//! Owns: turning a `BookState` into notification bytes.
//! Must not: do I/O or change any state.

use ticktrade_book::aggregate::{Grouping, aggregate_book};
use ticktrade_book::l2::{Action, L2Book, LevelUpdate};
use ticktrade_core::{Decimal, InstrumentSpec, Side};
use ticktrade_deribit_proto::book::encode_book_units;
use ticktrade_deribit_proto::channel::{Channel, Group};
use ticktrade_deribit_proto::{BookHeader, BookKind};

use crate::hub::BookState;
use ticktrade_deribit_proto::interval::book_levels;

pub(crate) fn snapshot_frame(ch: &str, instrument: &str, state: &BookState) -> Vec<u8> {
    let mut buf = Vec::with_capacity(1024);
    match Channel::parse(ch) {
        Some(Channel::GroupedBook { .. }) => encode_window(&mut buf, ch, instrument, state),
        _ => book_snapshot(&mut buf, ch, instrument, &state.spec, &state.book, state.timestamp_ms),
    }
    buf
}

/// A `book.{instrument}.{interval}` snapshot of `book` (the published book, or an interval
/// channel's book as of its last flush).
pub(crate) fn book_snapshot(
    buf: &mut Vec<u8>,
    ch: &str,
    instrument: &str,
    spec: &InstrumentSpec,
    book: &L2Book,
    timestamp_ms: u64,
) {
    let mut levels = Vec::new();
    book_levels(book, &mut levels);
    let header = BookHeader {
        channel: ch,
        instrument,
        kind: BookKind::Snapshot,
        change_id: book.last_change_id().unwrap_or(0),
        prev_change_id: None,
        timestamp_ms,
    };
    encode_book_units(buf, &header, spec, &levels);
}

/// The grouping of a grouped-book channel for `spec`, or `None` if it does not apply.
pub(crate) fn grouping(group: Group, spec: &InstrumentSpec) -> Option<Grouping> {
    let tick = spec.tick();
    let width = match group {
        Group::None => tick,
        Group::By(n) => Decimal::from_int(i64::from(n)),
    };
    Grouping::deribit(width, tick).ok()
}

pub(crate) fn encode_window(buf: &mut Vec<u8>, ch: &str, instrument: &str, state: &BookState) {
    let Some(Channel::GroupedBook { group, depth, .. }) = Channel::parse(ch) else { return };
    let Some(grouping) = grouping(group, &state.spec) else { return };
    let mut levels = Vec::new();
    let mut agg = Vec::new();
    for side in [Side::Buy, Side::Sell] {
        aggregate_book(&state.book, side, grouping, usize::from(depth.levels()), &mut agg);
        levels.extend(agg.iter().map(|l| LevelUpdate { side, action: Action::New, price: l.price, qty: l.qty }));
    }
    let header = BookHeader {
        channel: ch,
        instrument,
        kind: BookKind::Window,
        change_id: state.book.last_change_id().unwrap_or(0),
        prev_change_id: None,
        timestamp_ms: state.timestamp_ms,
    };
    encode_book_units(buf, &header, &state.spec, &levels);
}
