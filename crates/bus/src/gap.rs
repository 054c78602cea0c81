//! Gap detection on one subject: follows the publisher's sequence and says, per message,
//! whether it is the next one, an old one, or whether something was lost.
//!
//! Owns: the last publisher run and sequence seen on one subject.
//! Must not: do I/O or resync on its own: the caller fetches a snapshot on [`Seen::Gap`] or
//! [`Seen::Restart`] and calls [`SeqTracker::resume_at`] with the snapshot's envelope.

use crate::envelope::Envelope;

/// What one message is, relative to what came before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Seen {
    /// The first message seen (nothing to compare with): apply it only on top of a snapshot.
    First,
    /// The next in sequence.
    Next,
    /// Already covered (a duplicate, or older than the snapshot applied): skip it.
    Old,
    /// Messages `expected..seq` were lost.
    Gap { expected: u64, got: u64 },
    /// Another publisher run: its sequence starts afresh.
    Restart,
}

impl Seen {
    /// Whether the caller must resync before applying anything more.
    pub fn needs_resync(self) -> bool {
        matches!(self, Seen::Gap { .. } | Seen::Restart)
    }
}

/// The sequence state of one subject.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeqTracker {
    last: Option<Envelope>,
}

impl SeqTracker {
    pub fn new() -> SeqTracker {
        SeqTracker::default()
    }

    /// The envelope of the last message (or snapshot) accounted for.
    pub fn last(&self) -> Option<Envelope> {
        self.last
    }

    /// Classifies `env` and moves on to it (after a gap or restart too, so one lost stretch is
    /// reported once).
    pub fn observe(&mut self, env: Envelope) -> Seen {
        let seen = match self.last {
            None => Seen::First,
            Some(last) if last.publisher != env.publisher => Seen::Restart,
            Some(last) if env.seq <= last.seq => return Seen::Old,
            Some(last) if env.seq == last.seq + 1 => Seen::Next,
            Some(last) => Seen::Gap { expected: last.seq + 1, got: env.seq },
        };
        self.last = Some(env);
        seen
    }

    /// After a snapshot that includes everything up to `env`: later messages follow it, and
    /// messages up to it are [`Seen::Old`].
    pub fn resume_at(&mut self, env: Envelope) {
        self.last = Some(env);
    }

    /// Forgets everything (the next message is [`Seen::First`]).
    pub fn reset(&mut self) {
        self.last = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn env(publisher: u64, seq: u64) -> Envelope {
        Envelope { publisher, seq }
    }

    #[test]
    fn sequence_gaps_duplicates_and_restarts() {
        let mut t = SeqTracker::new();
        assert_eq!(t.observe(env(1, 5)), Seen::First);
        assert_eq!(t.observe(env(1, 6)), Seen::Next);
        assert_eq!(t.observe(env(1, 6)), Seen::Old);
        assert_eq!(t.observe(env(1, 9)), Seen::Gap { expected: 7, got: 9 });
        assert_eq!(t.observe(env(1, 10)), Seen::Next);
        assert_eq!(t.observe(env(2, 1)), Seen::Restart);
        assert_eq!(t.observe(env(2, 2)), Seen::Next);
        t.resume_at(env(2, 7));
        assert_eq!(t.observe(env(2, 5)), Seen::Old);
        assert_eq!(t.observe(env(2, 8)), Seen::Next);
        assert!(Seen::Restart.needs_resync() && Seen::Gap { expected: 1, got: 3 }.needs_resync());
        assert!(!Seen::Next.needs_resync() && !Seen::Old.needs_resync() && !Seen::First.needs_resync());
        t.reset();
        assert_eq!(t.observe(env(2, 9)), Seen::First);
    }

    proptest! {
        /// Against a naive model: the set of sequences delivered so far. A message is `Next`
        /// exactly when it is one past the highest seen, `Old` when not above it, and a gap
        /// is reported with the first missing number.
        #[test]
        fn matches_a_naive_model(steps in proptest::collection::vec((0u64..2, 1u64..4), 1..200)) {
            let mut t = SeqTracker::new();
            let mut publisher = 0u64;
            let mut high: Option<u64> = None;
            let mut seq = 0u64;
            for (restart, jump) in steps {
                if restart == 1 && jump == 3 {
                    publisher += 1;
                    let got = t.observe(env(publisher, 1));
                    prop_assert_eq!(got, if high.is_none() { Seen::First } else { Seen::Restart });
                    high = Some(1);
                    seq = 1;
                    continue;
                }
                // jump 1: next; 2: skip one; 3: replay the previous.
                let next = match jump { 1 => seq + 1, 2 => seq + 2, _ => seq.max(1) };
                let got = t.observe(env(publisher, next));
                let want = match high {
                    None => Seen::First,
                    Some(h) if next <= h => Seen::Old,
                    Some(h) if next == h + 1 => Seen::Next,
                    Some(h) => Seen::Gap { expected: h + 1, got: next },
                };
                prop_assert_eq!(got, want);
                high = Some(high.map_or(next, |h| h.max(next)));
                seq = seq.max(next);
            }
        }
    }
}
