//! ticktrade's core types: exact prices and sizes, sides, instruments and time.
//!
//! Owns: `Decimal` (exact text numbers), `Price`/`Qty` (integer ticks/lots), `Side`,
//! `InstrumentSpec` with its tick rule, `Mono`/`Utc` timestamps and the `Clock` trait.
//! Must not: do I/O, read a clock, or let an `f64` carry an order value. Everything above
//! this crate depends on it, so it stays small: `thiserror`, and on x86-64 `safe_arch` for
//! the prefetch hint.
//!
//! # Layout
//! - `decimal`: exact decimal parsing/printing and conversion to integer units.
//! - `num`: `Price`, `Qty`, `Side`.
//! - `hint`: `prefetch`, `prefetch_lines` (cache hints for the hot paths, no effect on values).
//! - `rng`: `SplitMix64`, the seeded generator behind every synthetic stream.
//! - `instrument`: `InstrumentId`, `InstrumentKind`, `InstrumentSpec`, `TickRule`.
//! - `time`: `Mono`, `Utc`, `Clock`, `ManualClock`.

pub mod decimal;
pub mod hint;
pub mod instrument;
pub mod num;
pub mod rng;
pub mod time;

pub use decimal::{Decimal, POW10_I128, POW10_U64, write_units};
pub use instrument::{
    InstrumentId, InstrumentKind, InstrumentSpec, OptionType, Settlement, SpecError, TickRule, TickStep,
};
pub use num::{Price, Qty, Side};
pub use rng::SplitMix64;
pub use time::{Clock, ManualClock, Mono, Utc};

/// A number that cannot be taken exactly.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, thiserror::Error)]
pub enum NumberError {
    #[error("empty number")]
    Empty,
    #[error("not a decimal number")]
    Syntax,
    #[error("number out of range")]
    Overflow,
    #[error("more than 18 decimal places")]
    TooPrecise,
    #[error("value is not a multiple of the instrument's step (off the tick or lot grid)")]
    OffGrid,
    #[error("step size must be positive")]
    BadUnit,
}
