//! What the venue sends besides book frames: request results and errors, order reports and
//! trades, each applied to the strategy's order state (another client's orders on the account
//! are journaled and left alone).
//!
//! Owns: the decoding of answers and notifications into `Runner` calls.
//! Must not: write to the connection (replies go through `outgoing`).

use super::*;

impl<S: Strategy> Core<S> {
    /// Everything that is not a book notification in the usual layout.
    #[cold]
    pub(super) fn on_other(&mut self, payload: &[u8], t0: RawTicks) -> Option<RawStamps> {
        // An order's acknowledgement in the usual layout: its result is decoded whole by
        // `decode_order_result`, which refuses anything but one complete order result, so
        // the envelope need not walk it first.
        if let Some((id, result)) = result_in_usual_layout(payload)
            && matches!(self.inflight.peek(id), Some(Pending::Place(_) | Pending::Edit(_)))
            && let Some(pending) = self.inflight.take(id)
        {
            self.stats.results += 1;
            let now = self.now();
            self.on_result(pending, result, now);
            self.after_answer(now);
            return None;
        }
        let frame = match scan_frame(payload) {
            Ok(frame) => frame,
            Err(_) => {
                self.malformed("frame that is not JSON-RPC");
                return None;
            }
        };
        let now = self.now();
        match frame {
            Frame::Notification { kind: ChannelKind::Book, channel, .. } => {
                let instrument = self.instruments.of_book_channel(channel.as_bytes())?;
                return self.on_book(instrument, payload, t0);
            }
            Frame::Notification { kind, data, .. } => {
                self.stats.notifications += 1;
                match kind {
                    ChannelKind::UserOrders => self.apply_orders(data, now),
                    ChannelKind::UserTrades => self.apply_trades(data, now, false),
                    _ => {}
                }
            }
            Frame::Heartbeat(ticktrade_deribit_proto::envelope::Heartbeat::TestRequest) => {
                self.stats.test_requests += 1;
                let id = self.inflight.issue(Pending::Test);
                self.request(Class::NonMatching, |out| requests::test(out, id));
            }
            Frame::Heartbeat(_) => {}
            Frame::Result { id, result } => {
                self.stats.results += 1;
                let pending = id.and_then(|id| self.inflight.take(id))?;
                self.on_result(pending, result, now);
            }
            Frame::Error { id, error } => {
                let pending = id.and_then(|id| self.inflight.take(id));
                if error.code == 10028 {
                    // The venue counts differently from us: wait for a full refill.
                    self.credits.drain(now.0);
                }
                self.on_error(pending, error.code, error.message, now);
            }
        }
        self.after_answer(now);
        None
    }

    /// What the strategy queued while an answer or notification was applied goes out in the
    /// same turn; the journal entries follow.
    fn after_answer(&mut self, now: Mono) {
        if !self.outbox.is_empty() {
            self.send_actions(now);
        }
        self.flush_journal();
    }

    pub(super) fn on_result(&mut self, pending: Pending, result: &[u8], now: Mono) {
        match pending {
            Pending::Place(_) | Pending::Edit(_) => {
                let mut trades = 0usize;
                let decoded = ticktrade_deribit_proto::report::decode_order_result(result, |_, _| trades += 1);
                match decoded {
                    Ok((order, _)) => self.apply_order(&order, now),
                    Err(_) => self.malformed("order result"),
                }
                if trades > 0 {
                    self.apply_result_trades(result, now);
                }
            }
            Pending::Cancel(_) => self.apply_orders(result, now),
            Pending::CancelAll => self.on_cancel_all_done(),
            other => self.on_control_result(other, result, now),
        }
    }

    pub(super) fn on_error(&mut self, pending: Option<Pending>, code: i64, message: &str, now: Mono) {
        let reason = Reason::new(i32::try_from(code).unwrap_or(i32::MIN), message);
        match pending {
            Some(Pending::Place(label)) => self.reject(&label, Request::Place, reason, now),
            Some(Pending::Edit(label)) => self.reject(&label, Request::Edit, reason, now),
            Some(Pending::Cancel(label)) => self.reject(&label, Request::Cancel, reason, now),
            other => self.on_control_error(other, code, message, now),
        }
    }

    pub fn reject(&mut self, label: &Label, request: Request, reason: Reason, now: Mono) {
        self.stats.rejects += 1;
        self.runner.on_reject(label, request, reason, &self.books, now, &mut self.outbox);
    }

    /// An order object or an array of them (notifications, cancel results, queries).
    pub fn apply_orders(&mut self, json: &[u8], now: Mono) {
        let decoded = ticktrade_deribit_proto::report::for_each_order(json, |order, _| self.apply_order(&order, now));
        if decoded.is_err() {
            self.malformed("order report");
        }
    }

    /// One order report: ours reaches the strategy; another client's is counted and journaled.
    pub(super) fn apply_order(&mut self, order: &ticktrade_deribit_proto::report::OrderReport<'_>, now: Mono) {
        match order_report(order, &self.instruments) {
            Ok(report) if self.runner.orders().is_ours(&report.label) => {
                self.runner.on_report(&report, &self.books, now, &mut self.outbox)
            }
            Ok(report) => {
                self.stats.foreign_reports += 1;
                self.pending_journal_push(Entry::NotOurs { at: now, label: report.label });
            }
            Err(_) => self.stats.dropped_reports += 1,
        }
    }

    /// The trades of an order result (`{"order":…,"trades":[…]}`).
    pub(super) fn apply_result_trades(&mut self, result: &[u8], now: Mono) {
        let Core { runner, instruments, books, outbox, stats, last_trade_seq, .. } = self;
        let _ = ticktrade_deribit_proto::report::decode_order_result(result, |trade, _| {
            book_fill(runner, instruments, books, outbox, stats, last_trade_seq, &trade, now, false);
        });
    }

    /// A trade array or object (`user.trades` notifications). With `known_only`, trades of
    /// labels this session does not know are skipped (a catch-up query that may reach back
    /// before this run).
    pub fn apply_trades(&mut self, json: &[u8], now: Mono, known_only: bool) {
        let Core { runner, instruments, books, outbox, stats, last_trade_seq, .. } = self;
        let decoded = ticktrade_deribit_proto::report::for_each_trade(json, |trade, _| {
            book_fill(runner, instruments, books, outbox, stats, last_trade_seq, &trade, now, known_only);
        });
        if decoded.is_err() {
            self.malformed("trade report");
        }
    }
}

/// Books one trade of ours; keeps the highest `trade_seq` seen per instrument.
#[allow(clippy::too_many_arguments)]
pub(in crate::live) fn book_fill<S: Strategy>(
    runner: &mut Runner<Journaled<S>>,
    instruments: &Instruments,
    books: &[L2Book],
    outbox: &mut Outbox,
    stats: &mut LiveStats,
    last_trade_seq: &mut [Option<u64>],
    trade: &ticktrade_deribit_proto::report::TradeReport<'_>,
    now: Mono,
    known_only: bool,
) {
    match fill_report(trade, instruments) {
        Ok(fill) => {
            let seq = &mut last_trade_seq[fill.instrument.0 as usize];
            *seq = Some(seq.map_or(trade.trade_seq, |s| s.max(trade.trade_seq)));
            if known_only && runner.orders().get(&fill.label).is_none() {
                return;
            }
            runner.on_fill(&fill, books, now, outbox);
        }
        Err(_) => stats.dropped_reports += 1,
    }
}
