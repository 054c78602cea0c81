//! ticktrade's embedded Deribit-compatible exchange: matching engine, accounts, positions,
//! instrument catalogue and a synthetic market.
//!
//! Owns: price-time matching over `ticktrade_book::l4::L4Book` (limit, market, market_limit,
//! stop/take/trailing triggers; GTC/GTD/IOC/FOK; post-only with and without reject; reduce-only;
//! self-trade prevention), order ids and labels, fills with fees, positions and balances, the
//! margin check behind `10009 not_enough_funds`, book-change batches with `change_id`, tickers,
//! recent trades and candles; a deterministic synthetic market that keeps books deep.
//! Must not: do I/O, read a clock or decode JSON. Time comes in as `Utc`; requests come in as
//! typed values; events go out into a caller-owned `Vec<Event>`. `ticktrade-sim` serves this
//! engine over Deribit's WebSocket/HTTP protocol.
//!
//! ```text
//! let reply = exchange.handle(now, account, Request::Place(params), &mut events)?;
//! for event in events.drain(..) { /* publish user.orders, user.trades, book.*, trades.* … */ }
//! ```
//!
//! Not modelled (yet): price bands (`10005`–`10007`), iceberg `display_amount`, linked
//! orders (OTO/OCO), `advanced` usd/implv option orders, MMP vega limits, combo instruments, perpetual
//! funding and daily settlement. At expiry a dated instrument cancels its orders, settles
//! positions at the mark price and answers `10012 book_closed` (`Exchange::advance`).
//!
//! # Layout
//! - `catalogue`: `Instrument`, `Catalogue` (built-in Deribit-like, or from parsed specs).
//! - `order`: `Order`, `PlaceParams`, `EditParams`, the wire enums, `Label`.
//! - `reject`: `Reject`, Deribit's error codes and verbatim messages.
//! - `event`: `Reply`, `Event`, `UserTrade`, `PublicTrade`, `BookLevel`, `BookBatch`.
//! - `engine`: `Exchange`, `Config`, `Request`, placement and validation.
//! - `matching`: the match loop, fills, and the per-request event flush.
//! - `manage`: cancel, cancel-all, edit, close-position, GTD expiry, triggers.
//! - `mmp`: market maker protection, `mass_quote`, `cancel_quotes`.
//! - `money`: `Money`, exact fixed-point (10^-12) balances, fees, PnL and margins.
//! - `ledger`: balance changes per account (fills, deliveries) and expiries, bounded.
//! - `account`: positions, balances, fees, the margin model.
//! - `query`: price inputs and read-only queries (orders, positions, summary, book, ticker…).
//! - `naive`: `NaiveMatcher`, the linear-scan reference matcher (tests, bench baseline).
//! - `synth`: the seeded synthetic market (makers, takers, random-walk index and mark).

pub mod account;
pub mod catalogue;
pub mod engine;
pub mod event;
mod history;
pub mod ledger;
mod manage;
mod matching;
pub mod mmp;
pub mod money;
pub mod naive;
pub mod order;
pub mod query;
pub mod reject;
pub mod synth;

pub use account::{AccountSummary, Position};
pub use catalogue::{Catalogue, CatalogueParams, CurrencyId, IndexId, Instrument};
pub use engine::{Candle, Config, Exchange, Request, SelfTrade, session_end};
pub use event::{BookAction, BookBatch, BookLevel, Event, PublicTrade, Reply, UserTrade};
pub use ledger::{Delivery, LedgerEntry, LedgerKind};
pub use mmp::{Frozen, MassQuote, MassQuoteReply, MmpConfig, MmpKey, Quote, QuoteFilter, QuoteSide};
pub use money::Money;
pub use order::{
    AccountId, CancelReason, ConnectionId, EditParams, InlineText, Label, Liquidity, Order, OrderFilter, OrderRef,
    OrderState, OrderType, PlaceParams, QuoteIds, Size, Tag, TimeInForce, Trigger, TriggerKind, TypeFilter,
};
pub use query::{PositionView, Ticker, TradeFilter, parse_order_id};
pub use reject::Reject;
pub use synth::{StepStats, SynthConfig, SynthMarket};
