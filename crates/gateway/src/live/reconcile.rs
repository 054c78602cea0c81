//! The reconciliation queries: what the session asks the venue about its orders, positions
//! and trades (one request per currency group where Deribit's currency-wide methods cover the
//! instruments, one per instrument otherwise), paced by the non-matching credits, and how the
//! answers fold into the snapshot `control` applies.
//!
//! Owns: the query queue and its pacing, the currency groups' trades catch-up (a time window
//! filtered by sequence number), and the reading of open orders and positions answers.
//! Must not: run on the timed path, or count an order or trade of an instrument the session
//! does not trade.

use ticktrade_core::{Clock, Decimal, InstrumentId, Mono};
use ticktrade_deribit_proto::api::Num;
use ticktrade_deribit_proto::ratelimit::Class;
use ticktrade_deribit_proto::requests;
use ticktrade_strategy::Strategy;

use super::session::{Core, book_fill};
use super::wire::{Group, Query, order_report, position_lots};

/// Requests of the non-matching class the queued queries leave unspent, for what cannot wait
/// for a refill (heartbeat answers, the stop's checks).
const QUERY_HEADROOM: u64 = 5;

/// How far the venue's clock may be behind this host's: a currency's trades catch-up starts
/// this much before the time this host last knew every trade of it was seen. A wider margin
/// only re-reads trades the sequence filter then drops.
const CLOCK_MARGIN_MS: u64 = 60_000;

/// The trades catch-up of currency groups. Deribit's `trade_seq` counts per instrument, so a
/// currency-wide query cannot start after the last trade seen the way
/// `get_user_trades_by_instrument`'s `start_seq` does; it reads a time window instead, oldest
/// first, and drops what was seen before by sequence number.
#[derive(Clone, Debug, Default)]
pub(super) struct CatchUp {
    /// Per group, a time (this host's clock, ms) before which every trade of the group was
    /// seen: the first connection's, then the start of the last complete catch-up. A trade of
    /// ours is never older than the first connection (our labels are this run's).
    covered_ms: Vec<u64>,
    /// When the running catch-up began (its queries went out after it).
    started_ms: u64,
    /// `last_trade_seq` when the running catch-up began: a trade at or below it was booked
    /// already. Not the live figure: a page may list one instrument's trades of one
    /// millisecond in any order, and an unseen one must not be dropped for a later seq seen
    /// first. Repeats within the catch-up (pages overlap on their boundary millisecond) are
    /// recent, and the strategy's trade-id memory drops them.
    seen_before: Vec<Option<u64>>,
}

impl<S: Strategy> Core<S> {
    /// An open orders answer: each order on an instrument `owner` names is counted, marked for
    /// the stop's next cancel round, and kept for the snapshot.
    pub(super) fn apply_open_orders(
        &mut self,
        result: &[u8],
        owner: impl Fn(&super::wire::Instruments, &str) -> Option<InstrumentId>,
    ) {
        let Core { instruments, recon, stats, .. } = self;
        let decoded = ticktrade_deribit_proto::report::for_each_order(result, |order, _| {
            let Some(instrument) = owner(instruments, order.instrument_name) else { return };
            recon.venue_open += 1;
            // The stop's next cancel round covers this instrument.
            recon.cancel[instrument.0 as usize] = true;
            match order_report(&order, instruments) {
                Ok(report) => recon.open.push(report),
                Err(_) => stats.dropped_reports += 1,
            }
        });
        if decoded.is_err() {
            self.malformed("open orders");
        }
    }

    /// This host's clock, in ms since the Unix epoch (the currency windows' time base).
    fn wall_ms(&self) -> u64 {
        (self.clock.utc().0 / 1_000_000).max(0) as u64
    }

    /// On every connection: a currency group's window starts at the first connection (no trade
    /// of this run's labels is older).
    pub(super) fn start_trades_window(&mut self) {
        if self.recon.trades.covered_ms.len() != self.instruments.currencies.len() {
            let start_ms = self.wall_ms();
            self.recon.trades.covered_ms = vec![start_ms; self.instruments.currencies.len()];
        }
    }

    /// A `get_position` answer for one instrument.
    pub(super) fn apply_position(&mut self, result: &[u8], instrument: InstrumentId) {
        let position = position_of(result).and_then(|p| {
            position_lots(self.instruments.spec(instrument), p.size.0).ok().map(|lots| (lots, p.average_price.0))
        });
        match position {
            Some((lots, avg)) => self.recon.positions.push((instrument, lots, avg)),
            None => self.malformed("position"),
        }
    }

    /// A `get_positions` answer: the group's instruments it lists, and a flat position for
    /// those it leaves out (Deribit lists only instruments with a position, or recently had).
    pub(super) fn apply_positions(&mut self, result: &[u8], group: Group) {
        let Some(rows) = positions_of(result) else {
            self.malformed("positions");
            return;
        };
        let first = self.recon.positions.len();
        for row in &rows {
            let Some(instrument) = self.instruments.in_group(&row.instrument_name, group) else { continue };
            match position_lots(self.instruments.spec(instrument), row.size.0) {
                Ok(lots) => self.recon.positions.push((instrument, lots, row.average_price.0)),
                Err(_) => self.malformed("position"),
            }
        }
        let members: Vec<InstrumentId> = self.instruments.members(group).collect();
        for instrument in members {
            if !self.recon.positions[first..].iter().any(|(i, _, _)| *i == instrument) {
                self.recon.positions.push((instrument, 0, Decimal::ZERO));
            }
        }
    }

    /// One page of a currency's trades catch-up from `from_ms`: booked, then the next page
    /// asked for, or the group's window moved on when it was the last.
    pub(super) fn on_currency_trades(&mut self, result: &[u8], group: Group, from_ms: u64, now: Mono) {
        let Some((has_more, last_ms)) = self.apply_currency_trades(result, group, now) else { return };
        match (has_more, last_ms) {
            // The next page starts at the last one's millisecond, included: trades of that
            // millisecond the page had no room for are not skipped.
            (true, Some(last)) if last > from_ms => self.query(Query::CurrencyTrades { group, from_ms: last }),
            // A full page within one millisecond: the window cannot move past it. The
            // per-instrument catch-up pages by sequence number instead.
            (true, _) => {
                let members: Vec<InstrumentId> = self.instruments.members(group).collect();
                members.into_iter().for_each(|i| self.request_trades(i));
            }
            (false, _) => {
                let covered = &mut self.recon.trades.covered_ms[group.0 as usize];
                *covered = (*covered).max(self.recon.trades.started_ms);
            }
        }
    }

    /// Books a page's trades of the group not seen before the catch-up began (only our
    /// labels). Returns `has_more` and the page's newest trade time, or `None` if the answer
    /// does not decode.
    fn apply_currency_trades(&mut self, result: &[u8], group: Group, now: Mono) -> Option<(bool, Option<u64>)> {
        let Core { runner, instruments, books, outbox, stats, last_trade_seq, recon, .. } = self;
        let seen_before = &recon.trades.seen_before;
        let mut last_ms: Option<u64> = None;
        let decoded = ticktrade_deribit_proto::report::decode_user_trades(result, |trade, _| {
            last_ms = Some(last_ms.map_or(trade.timestamp, |ms| ms.max(trade.timestamp)));
            let Some(instrument) = instruments.in_group(trade.instrument_name, group) else { return };
            if seen_before.get(instrument.0 as usize).copied().flatten().is_some_and(|seq| trade.trade_seq <= seq) {
                return;
            }
            book_fill(runner, instruments, books, outbox, stats, last_trade_seq, &trade, now, true);
        });
        match decoded {
            Ok(has_more) => Some((has_more, last_ms)),
            Err(_) => {
                self.malformed("user trades");
                None
            }
        }
    }

    pub(super) fn request_trades(&mut self, instrument: InstrumentId) {
        self.query(Query::UserTrades(instrument));
    }

    /// Trades missed since the last ones seen: a time window of each currency group (a page
    /// per `trades_page` trades of the account in it, not a request per instrument), and the
    /// per-instrument query of the instruments in no group.
    pub(super) fn catch_up_trades(&mut self) {
        let now_ms = self.wall_ms();
        let catch_up = &mut self.recon.trades;
        catch_up.started_ms = now_ms;
        catch_up.seen_before.clone_from(&self.last_trade_seq);
        let groups: Vec<Query> = (0u16..)
            .zip(&catch_up.covered_ms)
            .map(|(g, covered)| Query::CurrencyTrades {
                group: Group(g),
                from_ms: covered.saturating_sub(CLOCK_MARGIN_MS),
            })
            .collect();
        for query in groups {
            self.query(query);
        }
        for i in 0..self.instruments.len() {
            if self.instruments.group[i].is_none() {
                self.request_trades(InstrumentId(i as u32));
            }
        }
    }

    /// Queues a query; it goes out as soon as the venue's non-matching credits allow
    /// (`send_queries`), so a session on many instruments never gets `too_many_requests` back
    /// for its own reconciliation.
    pub(super) fn query(&mut self, query: Query) {
        self.recon.queries.push_back(query);
        self.send_queries(self.now());
    }

    /// Sends queued queries while credits last (and from housekeeping as they refill).
    pub(super) fn send_queries(&mut self, now: Mono) {
        while self.sync.connected {
            let Some(&query) = self.recon.queries.front() else { return };
            if !self.credits.try_take_keeping(Class::NonMatching, now.0, QUERY_HEADROOM) {
                return;
            }
            self.recon.queries.pop_front();
            self.stats.queries += 1;
            let id = self.inflight.issue(query.pending());
            let name = match query {
                Query::UserTrades(i) | Query::OpenOrders(i) | Query::Position(i) => {
                    self.instruments.spec(i).name.clone()
                }
                Query::CurrencyTrades { group: g, .. } | Query::CurrencyOpenOrders(g) | Query::CurrencyPositions(g) => {
                    self.instruments.currencies[g.0 as usize].clone()
                }
            };
            let start = match query {
                Query::UserTrades(i) => self.last_trade_seq[i.0 as usize].map(|s| s + 1),
                _ => None,
            };
            let page = self.config.trades_page.clamp(1, 1000);
            self.encode_request(|out| match query {
                Query::UserTrades(_) => match start {
                    Some(seq) => requests::get_user_trades_by_instrument(out, id, &name, Some(seq), Some(1000), true),
                    // Never saw a trade here: the newest hundred (only our labels are booked).
                    None => requests::get_user_trades_by_instrument(out, id, &name, None, Some(100), false),
                },
                Query::OpenOrders(_) => requests::get_open_orders_by_instrument(out, id, &name),
                Query::Position(_) => requests::get_position(out, id, &name),
                // Oldest first from the window's start, as many as a request may return: each
                // page starts where the last one ended, so none is skipped (`CurrencyTrades`).
                Query::CurrencyTrades { from_ms, .. } => {
                    requests::get_user_trades_by_currency(out, id, &name, Some(from_ms), Some(page), true)
                }
                Query::CurrencyOpenOrders(_) => requests::get_open_orders_by_currency(out, id, &name),
                Query::CurrencyPositions(_) => requests::get_positions(out, id, &name),
            });
        }
    }

    /// Asks the venue for the open orders and/or positions of every instrument: one request
    /// per currency group, one per instrument in none.
    pub(super) fn query_venue(&mut self, open_orders: bool, positions: bool) {
        if open_orders {
            self.recon.venue_open = 0;
        }
        for g in 0..self.instruments.currencies.len() {
            let group = Group(g as u16);
            if open_orders {
                self.query(Query::CurrencyOpenOrders(group));
            }
            if positions {
                self.query(Query::CurrencyPositions(group));
            }
        }
        for i in 0..self.instruments.len() {
            let instrument = InstrumentId(i as u32);
            if self.instruments.group[i].is_some() {
                continue;
            }
            if open_orders {
                self.query(Query::OpenOrders(instrument));
            }
            if positions {
                self.query(Query::Position(instrument));
            }
        }
    }
}

/// The members of Deribit's position object the session reads, exact.
#[derive(serde::Deserialize)]
struct PositionRow {
    #[serde(default)]
    instrument_name: String,
    size: Num,
    average_price: Num,
}

/// `get_position`'s result: one position object.
fn position_of(result: &[u8]) -> Option<PositionRow> {
    serde_json::from_slice(result).ok()
}

/// `get_positions`' result: an array of position objects.
fn positions_of(result: &[u8]) -> Option<Vec<PositionRow>> {
    serde_json::from_slice(result).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_read_exactly() {
        let p = position_of(br#"{"size":-30,"average_price":64250.5,"kind":"future"}"#).unwrap();
        assert_eq!(p.size.0, Decimal::from_int(-30));
        assert_eq!(p.average_price.0, Decimal::parse("64250.5").unwrap());
        let rows = positions_of(br#"[{"instrument_name":"BTC-PERPETUAL","size":50,"average_price":7440.18,"kind":"future"},{"instrument_name":"BTC-27DEC24","size":0,"average_price":0}]"#).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].instrument_name.as_str(), rows[0].size.0), ("BTC-PERPETUAL", Decimal::from_int(50)));
        assert!(positions_of(br#"{"size":1}"#).is_none());
    }
}
