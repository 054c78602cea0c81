//! Deribit's credit-based rate limits: leaky buckets that refill continuously.
//!
//! Owns: one bucket per request class (non-matching-engine, matching-engine, subscribe) and
//! the decision "enough credits or 10028".
//! Must not: read a clock (time comes in as nanoseconds) or close anything itself; the session
//! answers 10028 and then disconnects, as Deribit does.

/// One bucket: `cost` per request, at most `max` credits, `refill_per_s` credits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BucketRule {
    pub cost: u64,
    pub max: u64,
    pub refill_per_s: u64,
}

/// The three classes (RL defaults: non-ME 500/50 000/10 000 → 20 req/s burst 100; subscribe
/// 3 000/30 000/10 000 → 3.3/s burst 10; ME tier at 20 req/s burst 50).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub non_matching: BucketRule,
    pub matching: BucketRule,
    pub subscribe: BucketRule,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            non_matching: BucketRule { cost: 500, max: 50_000, refill_per_s: 10_000 },
            matching: BucketRule { cost: 1_000, max: 50_000, refill_per_s: 20_000 },
            subscribe: BucketRule { cost: 3_000, max: 30_000, refill_per_s: 10_000 },
        }
    }
}

impl Limits {
    /// No limits at all (for benchmarks and tests that flood on purpose elsewhere).
    pub fn unlimited() -> Limits {
        let free = BucketRule { cost: 0, max: 1, refill_per_s: 1 };
        Limits { non_matching: free, matching: free, subscribe: free }
    }
}

/// What a request costs from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    NonMatching,
    Matching,
    Subscribe,
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    rule: BucketRule,
    /// Credits × 1e9, so refill by nanoseconds stays integer.
    nano_credits: u128,
    last_ns: u64,
}

impl Bucket {
    fn new(rule: BucketRule, now_ns: u64) -> Bucket {
        Bucket { rule, nano_credits: u128::from(rule.max) * 1_000_000_000, last_ns: now_ns }
    }

    fn take(&mut self, now_ns: u64) -> bool {
        let elapsed = u128::from(now_ns.saturating_sub(self.last_ns));
        self.last_ns = self.last_ns.max(now_ns);
        let cap = u128::from(self.rule.max) * 1_000_000_000;
        self.nano_credits = (self.nano_credits + elapsed * u128::from(self.rule.refill_per_s)).min(cap);
        let cost = u128::from(self.rule.cost) * 1_000_000_000;
        if self.nano_credits >= cost {
            self.nano_credits -= cost;
            true
        } else {
            false
        }
    }
}

/// The buckets of one session (or one HTTP client).
#[derive(Clone, Debug)]
pub struct Credits {
    non_matching: Bucket,
    matching: Bucket,
    subscribe: Bucket,
}

impl Credits {
    pub fn new(limits: Limits, now_ns: u64) -> Credits {
        Credits {
            non_matching: Bucket::new(limits.non_matching, now_ns),
            matching: Bucket::new(limits.matching, now_ns),
            subscribe: Bucket::new(limits.subscribe, now_ns),
        }
    }

    /// Spends the credits of one request; `false` = answer 10028.
    pub fn take(&mut self, class: Class, now_ns: u64) -> bool {
        match class {
            Class::NonMatching => self.non_matching.take(now_ns),
            Class::Matching => self.matching.take(now_ns),
            Class::Subscribe => self.subscribe.take(now_ns),
        }
    }
}

/// Which bucket a method spends from (REFERENCE §5: trading writes are matching-engine requests).
pub fn class_of(method: &str) -> Class {
    match method {
        "private/buy"
        | "private/sell"
        | "private/edit"
        | "private/edit_by_label"
        | "private/cancel"
        | "private/cancel_all"
        | "private/cancel_all_by_instrument"
        | "private/cancel_all_by_currency"
        | "private/cancel_all_by_kind_or_type"
        | "private/cancel_by_label"
        | "private/close_position" => Class::Matching,
        "public/subscribe" | "private/subscribe" => Class::Subscribe,
        _ => Class::NonMatching,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn burst_then_refill() {
        let mut credits = Credits::new(Limits::default(), 0);
        let granted = (0..150).filter(|_| credits.take(Class::NonMatching, 0)).count();
        assert_eq!(granted, 100, "burst of 100 requests at 500 credits from 50 000");
        assert!(!credits.take(Class::NonMatching, 0));
        assert!(credits.take(Class::NonMatching, 50_000_000), "50 ms refills 500 credits");
        assert!(!credits.take(Class::NonMatching, 50_000_000));
    }

    proptest! {
        /// Never grants more than burst + elapsed × rate, whatever the arrival pattern.
        #[test]
        fn never_exceeds_the_budget(gaps in proptest::collection::vec(0u64..20_000_000, 1..500)) {
            let rule = Limits::default().non_matching;
            let mut credits = Credits::new(Limits::default(), 0);
            let mut now = 0u64;
            let mut granted = 0u64;
            for gap in gaps {
                now += gap;
                if credits.take(Class::NonMatching, now) { granted += 1; }
            }
            let budget = (rule.max as u128 + now as u128 * rule.refill_per_s as u128 / 1_000_000_000) / rule.cost as u128;
            prop_assert!(granted as u128 <= budget);
        }
    }
}
