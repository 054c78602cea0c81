//! The NATS bus between one upstream market-data connection and many edge servers on other
//! hosts: a publishing `ticktrade serve --publish nats://…` puts every served instrument's
//! book changes, trades and tickers on the bus, and edges (`ticktrade serve --upstream
//! nats://…`) serve their local clients from it as if from the venue.
//!
//! Owns: the subject scheme ([`subject`]), the message envelope ([`envelope`]: the upstream
//! frame as received, plus a per-subject publisher sequence in NATS headers), gap detection
//! on a subject ([`gap`]), the connect options NATS users expect ([`config`]), and what an
//! edge acts on among its connection's events ([`edge`]).
//! Must not: keep books or clients (serve does), or show a secret in a log, error or `Debug`.
//! `subject`, `envelope` and `gap` do no I/O.
//!
//! Subjects (see [`subject`] for the full list): `ticktrade.deribit.book.<instrument>`,
//! `ticktrade.deribit.trades.<instrument>`, `ticktrade.deribit.ticker.<instrument>`, and the
//! request–reply subjects `ticktrade.deribit.snapshot.<instrument>` and `ticktrade.deribit.rpc`.
//! Hyperliquid's (`ticktrade hl --publish` / `--upstream`, see [`hl`]) live under `ticktrade.hl`:
//! `l2Book.<coin>.<variant>` (every aggregation at the default depth), `trades.<coin>`,
//! `bbo.<coin>`, `allMids`, and `snapshot.<data subject>` for the latest frame of one.
//!
//! # Layout
//! - `subject`: subject names, upstream channel ↔ subject.
//! - `hl`: the Hyperliquid subjects, coin and variant tokens.
//! - `envelope`: the two headers (publisher run, sequence) and their encoding.
//! - `gap`: a subject's sequence state: next, old, gap, publisher restart.
//! - `config`: URLs, credentials (URL or environment), TLS, [`connect`].
//! - `edge`: connection events as an edge acts on them (lost, restored, slow consumer).
//! - `stats`: the counters a publisher or an edge keeps, and how connection events move them.

pub mod config;
pub mod edge;
pub mod envelope;
pub mod gap;
pub mod hl;
pub mod stats;
pub mod subject;

pub use async_nats;
pub use config::{Auth, BusConfig, BusError, ConfigError, connect};
pub use edge::{BusEvent, classify};
pub use envelope::{Envelope, EnvelopeError};
pub use gap::{Seen, SeqTracker};
pub use hl::{HlSubject, HlSubjects, Variant};
pub use stats::{BusCounters, BusStats};
pub use subject::{Kind, Subjects};
