//! The book faults as subscribers see them: change frames dropped, duplicated or held back
//! and sent after the next one (reorder), and the book restart's fresh snapshots.
//!
//! Owns: the reorder buffer (one held frame per channel).
//! Must not: decide when a fault happens (`crate::fault::Faults` does).

use super::interval::book_of;
use super::*;

impl Subscriptions {
    /// Sends a book change frame through the change faults.
    pub(super) fn emit_change(
        &mut self,
        name: &str,
        instrument: &str,
        change_id: i64,
        text: Arc<str>,
        faults: &mut Faults,
        log: &FaultLog,
    ) {
        match faults.on_change(instrument) {
            ChangeAction::Send => {
                self.send_all(name, &text);
                if let Some(held) = self.held.remove(name) {
                    self.send_all(name, &held);
                }
            }
            ChangeAction::Drop => log.record("drop_change", format!("{name} change_id {change_id}")),
            ChangeAction::Duplicate => {
                log.record("duplicate_change", format!("{name} change_id {change_id}"));
                self.send_all(name, &text);
                self.send_all(name, &text);
            }
            ChangeAction::Reorder => {
                log.record("reorder_change", format!("{name} change_id {change_id}"));
                if let Some(previous) = self.held.insert(name.to_owned(), text) {
                    self.send_all(name, &previous);
                }
            }
        }
    }

    /// The book restart fault: every book subscriber of `instr` gets a new snapshot.
    pub fn restart(&mut self, market: &Market, instr: InstrumentId, now: Utc) {
        for (name, channel) in self.channels_of(instr) {
            if let Sub::Book { interval, .. } = channel {
                let book = book_of(market, instr);
                if interval != Interval::Raw {
                    self.aggs.insert(name.clone(), IntervalBook::new(&book));
                }
                self.held.remove(&name);
                let text = self.snapshot_text(market, &name, instr, &book, now.as_millis());
                self.send_all(&name, &text);
            }
        }
    }
}
