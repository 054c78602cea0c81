//! The strategy side of the hot path: the API strategies are written against, order state by
//! label, pre-trade risk checks, and two built-in strategies.
//!
//! Owns: `Strategy` and `Context`, `Orders`, `Risk`, `Outbox`, the built-in `Quote` and `Take`,
//! and the TOML `Config` with its template.
//! Must not: do I/O, read a clock (time comes in as `Mono` arguments), or allocate after
//! start-up. The live session owns sockets and codecs; it feeds this crate decoded values and
//! drains the outbox into encoded requests.
//!
//! # Layout
//! - `label`: inline strings, `LabelGen`, `FixedIndex`, recent trade ids.
//! - `pnl`: positions and exact PnL for linear and inverse instruments.
//! - `order`: `Orders`, the order state by label and positions.
//! - `risk`: `Risk`, the pre-trade checks, and `Blocked`.
//! - `context`: `Action`, `Outbox`, `Context`, the `Strategy` trait, `Runner`.
//! - `quote`, `take`: the built-in strategies.
//! - `config`: the TOML file, its validation and `template()`.

pub mod config;
pub mod context;
pub mod label;
pub mod order;
pub mod pnl;
pub mod quote;
pub mod risk;
pub mod take;

pub use config::{BuiltIn, Config, ConfigError, Setup, template};
pub use context::{Action, Context, OrderRequest, Outbox, Runner, RunnerParts, Strategy, TimeInForce, Trade};
pub use label::{Label, LabelGen, TradeId, VenueId};
pub use order::{FillReport, Order, OrderEvent, OrderReport, Orders, Reason, Request, Status, VenueState};
pub use risk::{Blocked, Limits, Risk};

/// The worked example of `docs/STRATEGIES.md`, compiled and run as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/STRATEGIES.md")]
pub struct StrategiesDoc;
