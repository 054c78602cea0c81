//! Interval channels of the simulator: `100ms`/`agg2` books (each an `IntervalBook`, the rule
//! shared with the fan-out server in `ticktrade_deribit_proto::interval`), grouped-book windows
//! and tickers, flushed on the engine's timer.
//!
//! Owns: the flush of each interval (aggregated book changes through the change faults,
//! windows and tickers sent only when they changed), book frames of the market's books.
//! Must not: await (every send is an offer to a session's queue).

use super::*;

/// The instrument's whole book as the market holds it now.
pub(super) fn book_of(market: &Market, instr: InstrumentId) -> L2Book {
    let mut levels = Vec::new();
    for side in [Side::Buy, Side::Sell] {
        levels.extend(market.levels(instr, side, usize::MAX).into_iter().map(|(p, q)| new_level(side, p, q)));
    }
    let mut book = L2Book::new();
    book.apply_snapshot(market.change_id(instr).max(0) as u64, &levels);
    book
}

/// A whole `book.*` frame.
#[allow(clippy::too_many_arguments)]
pub(super) fn book_frame(
    out: &mut Vec<u8>,
    market: &Market,
    channel: &str,
    instr: InstrumentId,
    kind: BookKind,
    change_id: i64,
    prev_change_id: Option<i64>,
    timestamp_ms: i64,
    levels: &[LevelUpdate],
) -> Arc<str> {
    out.clear();
    let header = BookHeader {
        channel,
        instrument: market.name(instr),
        kind,
        change_id: change_id.max(0) as u64,
        prev_change_id: prev_change_id.map(|p| p.max(0) as u64),
        timestamp_ms: timestamp_ms.max(0) as u64,
    };
    encode_book_units(out, &header, market.spec(instr), levels);
    Arc::from(String::from_utf8_lossy(out).as_ref())
}

pub(super) fn snapshot_levels(book: &L2Book) -> Vec<LevelUpdate> {
    let mut levels = Vec::new();
    book_levels(book, &mut levels);
    levels
}

/// Groups levels into buckets `width` ticks wide (bids down, asks up) and keeps the top `depth`.
fn grouped(levels: Vec<(Price, Qty)>, side: Side, width: i64, depth: usize) -> Vec<(Price, Qty)> {
    let mut out: Vec<(Price, Qty)> = Vec::new();
    for (price, qty) in levels {
        let raw = price.raw();
        let bucket = match side {
            Side::Buy => raw.div_euclid(width) * width,
            Side::Sell => -((-raw).div_euclid(width) * width),
        };
        match out.last_mut() {
            Some((p, q)) if p.raw() == bucket => *q += qty,
            _ => {
                if out.len() == depth {
                    break;
                }
                out.push((Price::from_raw(bucket), qty));
            }
        }
    }
    out
}

impl Subscriptions {
    /// A `book.*` snapshot of `book` on channel `name`, laid out in the reused frame buffer.
    pub(super) fn snapshot_text(
        &mut self,
        market: &Market,
        name: &str,
        instr: InstrumentId,
        book: &L2Book,
        timestamp_ms: i64,
    ) -> Arc<str> {
        let levels = snapshot_levels(book);
        let change_id = book.last_change_id().unwrap_or(0) as i64;
        let mut frame = std::mem::take(&mut self.frame);
        let text =
            book_frame(&mut frame, market, name, instr, BookKind::Snapshot, change_id, None, timestamp_ms, &levels);
        self.frame = frame;
        text
    }

    pub(super) fn flush_book_agg(
        &mut self,
        market: &Market,
        name: &str,
        instr: InstrumentId,
    ) -> Option<(i64, Arc<str>)> {
        let agg = self.aggs.get_mut(name)?;
        if agg.flushed().last_change_id() == Some(market.change_id(instr).max(0) as u64) {
            return None;
        }
        let mut levels = Vec::new();
        let change = agg.flush(&book_of(market, instr), &mut levels)?;
        let (prev, change_id) = (change.prev_change_id as i64, change.change_id as i64);
        let mut frame = std::mem::take(&mut self.frame);
        let ts = market.last_change_ms(instr);
        let text = book_frame(&mut frame, market, name, instr, BookKind::Change, change_id, Some(prev), ts, &levels);
        self.frame = frame;
        Some((change_id, text))
    }

    /// A grouped book's top-`depth` window (`book.X.{group}.{depth}.{interval}`) as a frame.
    pub(super) fn grouped_window(
        &self,
        market: &Market,
        name: &str,
        instr: InstrumentId,
        group: u16,
        depth: usize,
    ) -> String {
        let spec = market.spec(instr);
        let width = if group == 0 {
            1
        } else {
            let ticks = ticktrade_exchange::Money::from_int(i64::from(group))
                / ticktrade_exchange::Money::from_decimal(spec.tick());
            let ticks = ticks.to_decimal();
            (ticks.mantissa() / 10_i64.pow(u32::from(ticks.scale()))).max(1)
        };
        let mut levels = Vec::new();
        for side in [Side::Buy, Side::Sell] {
            let window = grouped(market.levels(instr, side, usize::MAX), side, width, depth);
            levels.extend(window.into_iter().map(|(p, q)| new_level(side, p, q)));
        }
        let mut frame = Vec::new();
        let ts = market.last_change_ms(instr);
        let text =
            book_frame(&mut frame, market, name, instr, BookKind::Window, market.change_id(instr), None, ts, &levels);
        text.to_string()
    }

    /// Timer flush of `interval` channels: aggregated books, grouped books, tickers.
    pub fn flush_aggregated(
        &mut self,
        market: &Market,
        now: Utc,
        interval: Interval,
        faults: &mut Faults,
        log: &FaultLog,
    ) {
        let now_ms = now.as_millis();
        let names: Vec<(String, Sub)> = self.by_channel.iter().map(|(n, (c, _))| (n.clone(), c.clone())).collect();
        for (name, channel) in names {
            match channel {
                Sub::Book { instr, interval: i } if i == interval => {
                    if let Some((change_id, text)) = self.flush_book_agg(market, &name, instr) {
                        let instrument = market.name(instr).to_owned();
                        self.emit_change(&name, &instrument, change_id, text, faults, log);
                    }
                }
                Sub::GroupedBook { instr, group, depth, interval: i }
                    if i == interval || (i == Interval::Raw && interval == Interval::Ms100) =>
                {
                    let text = self.grouped_window(market, &name, instr, group, depth);
                    if self.last_sent.get(&name) != Some(&text) {
                        self.send_all(&name, &Arc::from(text.as_str()));
                        self.last_sent.insert(name, text);
                    }
                }
                Sub::Ticker { instr, interval: i } if i == interval => {
                    let key = format!("{}:{}", market.change_id(instr), market.tape_len(instr));
                    if self.last_sent.get(&name) != Some(&key) {
                        let text = rpc::notification(&name, &to_text(&market.ticker(instr, now_ms)), None);
                        self.send_all(&name, &Arc::from(text));
                        self.last_sent.insert(name, key);
                    }
                }
                Sub::IncrementalTicker { instr } if interval == Interval::Ms100 => {
                    let key = format!("{}:{}", market.change_id(instr), market.tape_len(instr));
                    if self.last_sent.get(&name).is_some_and(|k| *k != key) {
                        let text =
                            rpc::notification(&name, &incremental(&market.ticker(instr, now_ms), "change"), None);
                        self.send_all(&name, &Arc::from(text));
                    }
                    self.last_sent.insert(name, key);
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouping_buckets_levels() {
        let levels = vec![
            (Price::from_raw(105), Qty::from_raw(1)),
            (Price::from_raw(103), Qty::from_raw(2)),
            (Price::from_raw(99), Qty::from_raw(4)),
        ];
        let bids = grouped(levels, Side::Buy, 5, 10);
        assert_eq!(
            bids,
            vec![
                (Price::from_raw(105), Qty::from_raw(1)),
                (Price::from_raw(100), Qty::from_raw(2)),
                (Price::from_raw(95), Qty::from_raw(4))
            ]
        );
        let asks = grouped(
            vec![(Price::from_raw(101), Qty::from_raw(1)), (Price::from_raw(104), Qty::from_raw(1))],
            Side::Sell,
            5,
            1,
        );
        assert_eq!(asks, vec![(Price::from_raw(105), Qty::from_raw(2))]);
    }
}
