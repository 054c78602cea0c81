//! Book notification encoder: what the simulator and the fan-out server publish.
//!
//! Owns: the byte layout of the frames we send, in Deribit's own key order
//! (`type, timestamp, prev_change_id, instrument_name, change_id, bids, asks`), so our frames
//! take the decoder's fast path and look like the venue's.
//! Must not: allocate beyond `out`'s growth, or format through `fmt`.

use ticktrade_core::{InstrumentSpec, Side};

use super::{Action, BookHeader, BookKind, DecimalLevel, LevelUpdate};
use crate::envelope::write_json_str;

/// Appends a whole notification frame for `header` and `levels` (bids and asks are taken
/// from `levels` by side, each in the order given). A [`BookKind::Window`] header writes the
/// grouped form (`[price, amount]` entries, no `type`/`prev_change_id`).
pub fn encode_book(out: &mut Vec<u8>, header: &BookHeader<'_>, levels: &[DecimalLevel]) {
    encode_with(
        out,
        header,
        levels,
        |l| (l.side, l.action),
        |l, out| {
            l.price.write(out);
            out.push(b',');
            l.amount.write(out);
        },
    );
}

/// [`encode_book`] for levels in `spec`'s units.
pub fn encode_book_units(out: &mut Vec<u8>, header: &BookHeader<'_>, spec: &InstrumentSpec, levels: &[LevelUpdate]) {
    encode_with(
        out,
        header,
        levels,
        |l| (l.side, l.action),
        |l, out| {
            super::units::write(l.price.raw(), spec.tick(), out);
            out.push(b',');
            super::units::write(l.qty.raw(), spec.qty_unit, out);
        },
    );
}

fn encode_with<L>(
    out: &mut Vec<u8>,
    header: &BookHeader<'_>,
    levels: &[L],
    side_action: impl Fn(&L) -> (Side, Action),
    write_numbers: impl Fn(&L, &mut Vec<u8>),
) {
    out.extend_from_slice(br#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"#);
    write_json_str(out, header.channel);
    out.extend_from_slice(br#","data":{"#);
    let grouped = header.kind == BookKind::Window;
    if !grouped {
        out.extend_from_slice(br#""type":""#);
        out.extend_from_slice(header.kind.as_str().as_bytes());
        out.extend_from_slice(br#"","#);
    }
    out.extend_from_slice(br#""timestamp":"#);
    write_u64(out, header.timestamp_ms);
    if let (false, Some(prev)) = (grouped, header.prev_change_id) {
        out.extend_from_slice(br#","prev_change_id":"#);
        write_u64(out, prev);
    }
    out.extend_from_slice(br#","instrument_name":"#);
    write_json_str(out, header.instrument);
    out.extend_from_slice(br#","change_id":"#);
    write_u64(out, header.change_id);
    for (key, side) in [(&br#","bids":["#[..], Side::Buy), (&br#"],"asks":["#[..], Side::Sell)] {
        out.extend_from_slice(key);
        let mut first = true;
        for level in levels {
            let (level_side, action) = side_action(level);
            if level_side != side {
                continue;
            }
            if !first {
                out.push(b',');
            }
            first = false;
            out.push(b'[');
            if !grouped {
                out.extend_from_slice(match action {
                    Action::New => br#""new","#.as_slice(),
                    Action::Change => br#""change","#.as_slice(),
                    Action::Delete => br#""delete","#.as_slice(),
                });
            }
            write_numbers(level, out);
            out.push(b']');
        }
    }
    out.extend_from_slice(b"]}}}");
}

pub(crate) fn write_u64(out: &mut Vec<u8>, value: u64) {
    let mut buf = itoa::Buffer::new();
    out.extend_from_slice(buf.format(value).as_bytes());
}
