//! The stop sequence: the kill switch (Ctrl-C, SIGTERM, stdin, the loss limit) cancels every
//! order on the session's instruments, asks the venue until it lists none open, catches up on
//! trades reported late, and with `--flatten` closes the positions.
//!
//! Owns: the stop steps (cancel, verify, trades, flatten) and the shutdown deadline.
//! Must not: place anything but cancels and reduce-only closing orders, or give up before the
//! deadline while the venue still lists an open order.

use ticktrade_core::{Decimal, InstrumentId, Mono};
use ticktrade_deribit_proto::order::{OrderKind, OrderRequest as WireOrder, OrderTag, TimeInForce};
use ticktrade_deribit_proto::ratelimit::Class;
use ticktrade_strategy::{Action, Blocked, Strategy};

use super::journal::Entry;
use super::session::{Core, Phase, StopStep};
use super::wire::{Pending, closing_side};

impl<S: Strategy> Core<S> {
    /// The kill switch: nothing but cancels from now on; then the stop steps.
    pub(super) fn begin_stop(&mut self, why: Blocked, now: Mono) {
        self.recon.stop_why = Some(self.runner.risk().killed().unwrap_or(why));
        self.recon.deadline = Some(Mono(now.0 + self.config.shutdown_timeout.as_nanos() as u64));
        self.runner.strategy_mut().record(Entry::Kill { at: now, why: self.recon.stop_why.unwrap_or(why) });
        self.runner.set_paused(true);
        self.runner.kill(why, &mut self.outbox);
        // The kill queued a cancel-all; the stop steps send their own.
        self.outbox.clear();
        self.deferred.clear();
        self.sync.phase = Phase::Stopping(StopStep::Cancel);
        if self.config.credentials.is_none() || self.config.dry_run {
            self.sync.phase = Phase::Done;
            return;
        }
        // The first round covers the instruments our live orders (pending ones included) are
        // on; before the first reconciliation a previous run's orders may be anywhere.
        self.recon.cancel.iter_mut().for_each(|c| *c = false);
        for order in self.runner.orders().live() {
            self.recon.cancel[order.instrument.0 as usize] = true;
        }
        if self.sync.authenticated {
            self.stop_step_cancel(now, !self.sync.ever_live);
        }
    }

    /// One cancel round of the stop: a `cancel_all_by_instrument` for every instrument
    /// (`all`) or for those marked in `recon.cancel`, paced by the matching-engine credits
    /// (what cannot go now waits in `deferred`, sent between frames as credits come back): a
    /// burst of one per instrument on hundreds of instruments got the connection dropped.
    /// The verify step that follows marks the instruments where the venue still lists open
    /// orders, of any client, for the next round.
    pub(super) fn stop_step_cancel(&mut self, now: Mono, all: bool) {
        self.sync.phase = Phase::Stopping(StopStep::Cancel);
        for i in 0..self.instruments.len() {
            if std::mem::take(&mut self.recon.cancel[i]) || all {
                self.send_or_defer(Action::CancelAll { instrument: Some(InstrumentId(i as u32)) }, now);
            }
        }
        // Nothing to cancel: verify at once.
        self.on_cancel_all_done();
    }

    pub(super) fn on_cancel_all_done(&mut self) {
        let waiting = self.inflight.any(|p| *p == Pending::CancelAll)
            || self.deferred.iter().any(|a| matches!(a, Action::CancelAll { .. }));
        if self.sync.phase != Phase::Stopping(StopStep::Cancel) || waiting {
            return;
        }
        self.sync.phase = Phase::Stopping(StopStep::Verify);
        self.recon.open.clear();
        self.query_venue(true, false);
    }

    pub(super) fn stop_verified(&mut self, now: Mono) {
        if self.recon.venue_open > 0 {
            // Something was placed or triggered meanwhile: cancel again where it is.
            self.stop_step_cancel(now, false);
            return;
        }
        let open = std::mem::take(&mut self.recon.open);
        self.runner.apply_snapshot(&open, &[], &self.books, now, &mut self.outbox);
        self.recon.open = open;
        self.outbox.clear();
        // Trades can be reported after the cancel-all's answer: catch up from the last one seen
        // before reporting fills and positions.
        self.sync.phase = Phase::Stopping(StopStep::Trades);
        self.catch_up_trades();
        self.reconcile_progress(now);
    }

    pub(super) fn stop_trades_done(&mut self) {
        if self.config.flatten {
            self.sync.phase = Phase::Stopping(StopStep::Flatten);
            self.recon.positions.clear();
            self.query_venue(false, true);
        } else {
            self.sync.phase = Phase::Done;
        }
    }

    /// Positions are in: close what is open with reduce-only market orders, then look again.
    pub(super) fn stop_flatten(&mut self, now: Mono) {
        let positions = std::mem::take(&mut self.recon.positions);
        let open: Vec<(InstrumentId, i64)> =
            positions.iter().filter(|(_, lots, _)| *lots != 0).map(|(i, lots, _)| (*i, *lots)).collect();
        let snapshot: Vec<(InstrumentId, i64, Decimal)> = positions.clone();
        self.recon.positions = positions;
        self.runner.apply_snapshot(&[], &snapshot, &self.books, now, &mut self.outbox);
        self.outbox.clear();
        if open.is_empty() {
            self.sync.phase = Phase::Done;
            return;
        }
        for (instrument, lots) in open {
            let side = closing_side(lots);
            let qty = ticktrade_core::Qty::from_raw(lots.abs());
            let id = self.inflight.issue(Pending::Flatten(instrument));
            let order = WireOrder {
                side,
                kind: OrderKind::Market,
                qty,
                label: OrderTag::None,
                time_in_force: TimeInForce::ImmediateOrCancel,
                post_only: false,
                reject_post_only: false,
                reduce_only: true,
            };
            let _ = self.credits.try_take(Class::Matching, now.0);
            let encoder = self.encoders[instrument.0 as usize].clone();
            self.request(Class::Matching, |out| encoder.encode_order(out, id, &order));
            self.runner.strategy_mut().record(Entry::Flatten { at: now, instrument, side, qty });
        }
        self.recon.positions.clear();
        self.query_venue(false, true);
    }

    /// Gives up stopping at the deadline.
    pub(super) fn stop_deadline(&mut self, now: Mono) {
        if self.recon.deadline.is_some_and(|d| now >= d) {
            self.sync.phase = Phase::Done;
            self.recon.deadline = None;
            self.recon.stage = u8::MAX;
        }
    }
}
