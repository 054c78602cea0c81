//! Fault injection: misbehaviour on purpose, by seeded rate, by schedule, or on demand.
//!
//! Owns: the [`Fault`] kinds, the rules parsed from `--fault`, the seeded decisions, and the
//! log of every injected fault (also emitted as a `tracing` event with target
//! `ticktrade_sim::fault`), so a test can check that a client saw exactly what was injected.
//! Must not: touch sockets; the engine and sessions apply the decisions.

use std::sync::Mutex;

use ticktrade_core::SplitMix64;

/// One fault, injected at runtime with `SimHandle::inject` or produced by a rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Drop the next book change notification (of `instrument`, or of any).
    DropChange { instrument: Option<String> },
    /// Send the next book change notification twice.
    DuplicateChange { instrument: Option<String> },
    /// Hold the next book change notification back and send it after the following one.
    ReorderChange { instrument: Option<String> },
    /// Close one session (or all) with a reason.
    Disconnect { session: Option<u64> },
    /// Delay the next `responses` responses by `ms` each.
    Delay { ms: u64, responses: u32 },
    /// Answer the next `responses` requests with 10028 (and disconnect, as Deribit does).
    TooManyRequests { responses: u32 },
    /// Send one malformed (truncated JSON) text frame to one session (or all).
    MalformedFrame { session: Option<u64> },
    /// Remove the top `levels` levels of each side without publishing changes and send every
    /// book subscriber a fresh snapshot.
    RestartBook { instrument: Option<String>, levels: usize },
}

impl Fault {
    pub fn name(&self) -> &'static str {
        match self {
            Fault::DropChange { .. } => "drop_change",
            Fault::DuplicateChange { .. } => "duplicate_change",
            Fault::ReorderChange { .. } => "reorder_change",
            Fault::Disconnect { .. } => "disconnect",
            Fault::Delay { .. } => "delay",
            Fault::TooManyRequests { .. } => "too_many_requests",
            Fault::MalformedFrame { .. } => "malformed_frame",
            Fault::RestartBook { .. } => "restart_book",
        }
    }

    fn is_change_fault(&self) -> bool {
        matches!(self, Fault::DropChange { .. } | Fault::DuplicateChange { .. } | Fault::ReorderChange { .. })
    }
}

/// When a rule fires: with a probability per opportunity, or every Nth opportunity.
/// Opportunities: each book change frame (change faults), each response (delay, 10028), each
/// second (disconnect, malformed frame, book restart).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Schedule {
    /// Probability in millionths.
    Rate(u64),
    Every(u64),
}

/// A `--fault` rule: `KIND[:rate=P|:every=N][:ms=MS][:levels=N]`.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    pub fault: Fault,
    pub schedule: Schedule,
}

/// A bad `--fault` value.
#[derive(Debug, thiserror::Error)]
#[error(
    "bad --fault {text:?}: {why} (expected KIND[:rate=P|:every=N][:ms=MS][:levels=N], KIND one of drop_change, duplicate_change, reorder_change, disconnect, delay, too_many_requests, malformed_frame, restart_book)"
)]
pub struct FaultParseError {
    text: String,
    why: &'static str,
}

impl std::str::FromStr for FaultRule {
    type Err = FaultParseError;
    fn from_str(text: &str) -> Result<FaultRule, FaultParseError> {
        let err = |why| FaultParseError { text: text.to_owned(), why };
        let mut parts = text.split(':');
        let kind = parts.next().unwrap_or_default().replace('-', "_");
        let (mut schedule, mut ms, mut levels) = (Schedule::Every(1), 100u64, 3usize);
        for part in parts {
            let (key, value) = part.split_once('=').ok_or(err("option without '='"))?;
            match key {
                "rate" => {
                    let p = ticktrade_core::Decimal::parse(value).map_err(|_| err("rate is not a number"))?;
                    let ppm =
                        p.checked_mul(ticktrade_core::Decimal::from_int(1_000_000)).ok_or(err("rate out of range"))?;
                    let ppm = ppm.to_units(ticktrade_core::Decimal::ONE).map_err(|_| err("rate finer than 1e-6"))?;
                    if !(0..=1_000_000).contains(&ppm) {
                        return Err(err("rate must be in 0..=1"));
                    }
                    schedule = Schedule::Rate(ppm as u64);
                }
                "every" => {
                    schedule = Schedule::Every(
                        value.parse().ok().filter(|n| *n > 0).ok_or(err("every must be a positive integer"))?,
                    )
                }
                "ms" => ms = value.parse().map_err(|_| err("ms must be an integer"))?,
                "levels" => levels = value.parse().map_err(|_| err("levels must be an integer"))?,
                _ => return Err(err("unknown option")),
            }
        }
        let fault = match kind.as_str() {
            "drop_change" => Fault::DropChange { instrument: None },
            "duplicate_change" => Fault::DuplicateChange { instrument: None },
            "reorder_change" => Fault::ReorderChange { instrument: None },
            "disconnect" => Fault::Disconnect { session: None },
            "delay" => Fault::Delay { ms, responses: 1 },
            "too_many_requests" => Fault::TooManyRequests { responses: 1 },
            "malformed_frame" => Fault::MalformedFrame { session: None },
            "restart_book" => Fault::RestartBook { instrument: None, levels },
            _ => return Err(err("unknown kind")),
        };
        Ok(FaultRule { fault, schedule })
    }
}

/// One injected fault, as logged.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FaultRecord {
    pub kind: &'static str,
    /// Human-readable specifics: channel and change id, session id, levels removed…
    pub detail: String,
}

/// The log of injected faults (bounded; oldest dropped).
#[derive(Debug, Default)]
pub struct FaultLog {
    records: Mutex<Vec<FaultRecord>>,
}

const LOG_CAP: usize = 10_000;

impl FaultLog {
    pub fn record(&self, kind: &'static str, detail: String) {
        tracing::warn!(target: "ticktrade_sim::fault", kind, %detail, "fault injected");
        if let Ok(mut records) = self.records.lock() {
            if records.len() >= LOG_CAP {
                records.remove(0);
            }
            records.push(FaultRecord { kind, detail });
        }
    }

    pub fn snapshot(&self) -> Vec<FaultRecord> {
        self.records.lock().map(|r| r.clone()).unwrap_or_default()
    }
}

/// Seeded decisions over the configured rules plus one-shot injected faults.
#[derive(Debug)]
pub struct Faults {
    rules: Vec<(FaultRule, u64)>,
    pending: Vec<Fault>,
    rng: SplitMix64,
}

/// What to do with one book change frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChangeAction {
    Send,
    Drop,
    Duplicate,
    Reorder,
}

impl Faults {
    pub fn new(rules: Vec<FaultRule>, seed: u64) -> Faults {
        Faults {
            rules: rules.into_iter().map(|r| (r, 0)).collect(),
            pending: Vec::new(),
            rng: crate::seeded_rng(seed ^ 0xFA17),
        }
    }

    pub fn inject(&mut self, fault: Fault) {
        self.pending.push(fault);
    }

    fn fires(rng: &mut SplitMix64, schedule: Schedule, counter: &mut u64) -> bool {
        *counter += 1;
        match schedule {
            Schedule::Rate(ppm) => rng.chance(ppm, 1_000_000),
            Schedule::Every(n) => (*counter).is_multiple_of(n),
        }
    }

    /// Decides the fate of one book change frame of `instrument`.
    pub fn on_change(&mut self, instrument: &str) -> ChangeAction {
        let applies = |i: &Option<String>| i.as_deref().is_none_or(|i| i == instrument);
        if let Some(pos) = self.pending.iter().position(|f| match f {
            Fault::DropChange { instrument: i }
            | Fault::DuplicateChange { instrument: i }
            | Fault::ReorderChange { instrument: i } => applies(i),
            _ => false,
        }) {
            return action_of(&self.pending.remove(pos));
        }
        for (rule, counter) in &mut self.rules {
            if rule.fault.is_change_fault() && Self::fires(&mut self.rng, rule.schedule, counter) {
                return action_of(&rule.fault);
            }
        }
        ChangeAction::Send
    }

    /// Per-second rules and pending session/book faults due now.
    pub fn take_due(&mut self) -> Vec<Fault> {
        let mut due: Vec<Fault> = Vec::new();
        let mut keep = Vec::new();
        for fault in self.pending.drain(..) {
            match fault {
                Fault::Disconnect { .. } | Fault::MalformedFrame { .. } | Fault::RestartBook { .. } => due.push(fault),
                other => keep.push(other),
            }
        }
        self.pending = keep;
        due
    }

    /// Called once a second: rules for disconnect, malformed frame and book restart.
    pub fn tick_second(&mut self) -> Vec<Fault> {
        let mut due = Vec::new();
        for (rule, counter) in &mut self.rules {
            if matches!(rule.fault, Fault::Disconnect { .. } | Fault::MalformedFrame { .. } | Fault::RestartBook { .. })
                && Self::fires(&mut self.rng, rule.schedule, counter)
            {
                due.push(rule.fault.clone());
            }
        }
        due
    }

    /// Per-response faults: `(delay_ms, answer_10028)`. Pending ones first, then rules.
    pub fn on_response(&mut self) -> (u64, bool) {
        let mut delay = 0;
        let mut too_many = false;
        self.pending.retain_mut(|f| match f {
            Fault::Delay { ms, responses } if delay == 0 => {
                delay = *ms;
                *responses -= 1;
                *responses > 0
            }
            Fault::TooManyRequests { responses } if !too_many => {
                too_many = true;
                *responses -= 1;
                *responses > 0
            }
            _ => true,
        });
        for (rule, counter) in &mut self.rules {
            match rule.fault {
                Fault::Delay { ms, .. } if delay == 0 && Self::fires(&mut self.rng, rule.schedule, counter) => {
                    delay = ms
                }
                Fault::TooManyRequests { .. } if !too_many && Self::fires(&mut self.rng, rule.schedule, counter) => {
                    too_many = true
                }
                _ => {}
            }
        }
        (delay, too_many)
    }
}

fn action_of(fault: &Fault) -> ChangeAction {
    match fault {
        Fault::DropChange { .. } => ChangeAction::Drop,
        Fault::DuplicateChange { .. } => ChangeAction::Duplicate,
        Fault::ReorderChange { .. } => ChangeAction::Reorder,
        _ => ChangeAction::Send,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_parse() {
        let rule: FaultRule = "drop_change:rate=0.01".parse().unwrap();
        assert_eq!(rule.schedule, Schedule::Rate(10_000));
        let rule: FaultRule = "delay:every=5:ms=250".parse().unwrap();
        assert_eq!(rule.fault, Fault::Delay { ms: 250, responses: 1 });
        assert!("explode".parse::<FaultRule>().is_err());
        assert!("drop_change:rate=2".parse::<FaultRule>().is_err());
    }

    #[test]
    fn injected_change_fault_applies_once_to_its_instrument() {
        let mut faults = Faults::new(Vec::new(), 1);
        faults.inject(Fault::DropChange { instrument: Some("A".into()) });
        assert_eq!(faults.on_change("B"), ChangeAction::Send);
        assert_eq!(faults.on_change("A"), ChangeAction::Drop);
        assert_eq!(faults.on_change("A"), ChangeAction::Send);
    }

    #[test]
    fn every_n_is_deterministic() {
        let mut faults = Faults::new(vec!["duplicate_change:every=3".parse().unwrap()], 1);
        let actions: Vec<_> = (0..6).map(|_| faults.on_change("A")).collect();
        assert_eq!(actions.iter().filter(|a| **a == ChangeAction::Duplicate).count(), 2);
        assert_eq!(actions[2], ChangeAction::Duplicate);
    }
}
