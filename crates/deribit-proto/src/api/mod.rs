//! Typed Deribit API v2 method params, results and notification payloads, both directions.
//!
//! Owns: the serde shapes of what travels inside the JSON-RPC envelope (`params` of a request,
//! `result` of a response, `params.data` of a subscription notification), with Deribit's own
//! field names. The simulator decodes requests into the `*Params` types and encodes the
//! result/notification types; a client does the opposite with the same types.
//! Must not: know about sockets, sessions, the envelope (`id`, `usIn`…) or matching; hold a
//! float for a price or amount (numbers are [`Num`], exact decimals written as JSON numbers).
//!
//! # Layout
//! - `num`: [`Num`], an exact decimal that reads and writes as a JSON number.
//! - `params`: request params per method (`BuyParams`, `EditParams`, `AuthParams`…).
//! - `objects`: result and notification objects (`Order`, `UserTrade`, `Position`, `Ticker`…).
//! - `market`: public market-data results (`Instrument`, `OrderBook`, `BookSummary`…).
//! - `market_data`: trade history by time, index names, expirations, volumes, funding.
//! - `quotes`: mass quotes and market maker protection.
//! - `history`: funding, mark, delivery, volatility and index history; settlements; the
//!   transaction log.
//! - `account`: subaccounts, user locks, self-trading config, announcements, combos.

mod account;
mod history;
mod market;
mod market_data;
mod num;
mod objects;
mod params;
mod quotes;

pub use account::*;
pub use history::*;
pub use market::*;
pub use market_data::*;
pub use num::{Num, OrderPrice};
pub use objects::*;
pub use params::*;
pub use quotes::*;
