//! What the live session's benchmarks and tests share with it: the synthetic feed, the
//! stage-stamp recorder, the floor probe and thread pinning. The in-process venues and the
//! order client of the benchmarks live beside them (`ticktrade bench`).
//!
//! Owns: `feed` (`SyntheticFeed`, seeded BTC-PERPETUAL book frames byte-for-byte as the
//! simulator publishes them), `record` (`RawStamps` read on the timed path, `to_stamps`,
//! `spawn_recorder`/`Recorded`: histograms filled off the hot thread), [`FLOOR_PROBE`] and
//! [`pin_current_thread`].
//! Must not: trade. Nothing here authenticates, keeps order state or checks risk; that is the
//! live session's.
//!
//! # Code layout
//! The functions a tick runs out of line (`WsReader::next_message` and `fill`, the session's
//! `on_text`/`on_book`/`send_actions`/`encode_action`, `FastBookDecoder::decode` and its number
//! and level helpers, `L2Book::apply_change`, `Ladder::set`/`remove`, the order encoders and
//! their digit writers) carry `#[link_section = "ticktrade_hot"]` on Linux: the linker puts
//! them together in one section, so a tick that starts with the caches emptied by the kernel's
//! read and write paths fetches its code from a few adjacent pages instead of lines spread among
//! cold code (`nm -n target/release/ticktrade` lists them side by side).

pub mod feed;
pub mod record;

pub use record::{RawStamps, Recorded, spawn_recorder, to_stamps};

/// A text frame that asks the session to write its last order's bytes again and time only the
/// write: the same bytes on the same socket, in the same run (the benchmarks' `write_floor`).
pub const FLOOR_PROBE: &[u8] = br#"{"jsonrpc":"2.0","method":"ticktrade/write_floor"}"#;

/// Pins the calling thread to core `index` (by position in `core_affinity::get_core_ids`);
/// false when there is no such core or the OS refused.
pub fn pin_current_thread(index: usize) -> bool {
    core_affinity::get_core_ids().and_then(|ids| ids.get(index).copied()).is_some_and(core_affinity::set_for_current)
}
