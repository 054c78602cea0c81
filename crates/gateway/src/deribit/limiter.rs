//! The local rate limiter: Deribit's credit buckets kept on our side, so the venue never has
//! to answer 10028 (`too_many_requests`, which also ends the session).
//!
//! Owns: one leaky bucket per request class (non-matching-engine, matching-engine,
//! subscribe), refilled continuously, and the "wait this long" answer.
//! Must not: read a clock or sleep; time comes in as µs since an arbitrary origin.
//!
//! Defaults follow REFERENCE §10: non-matching 500 credits of 50 000 refilled at 10 000/s
//! (20 req/s, burst 100), subscribe 3 000 of 30 000 at 10 000/s, matching-engine at the
//! conservative client default of 5 req/s burst 20. Our buckets hold one request less than
//! the venue's, so bursts that bunch up in transit still fit.

/// One bucket: `cost` credits per request, at most `max`, `refill_per_s` per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub cost: u64,
    pub max: u64,
    pub refill_per_s: u64,
}

/// Which bucket a method draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    NonMatching,
    Matching,
    Subscribe,
}

/// The three rules.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimits {
    pub non_matching: Rule,
    pub matching: Rule,
    pub subscribe: Rule,
}

impl Default for RateLimits {
    fn default() -> RateLimits {
        RateLimits {
            non_matching: Rule { cost: 500, max: 50_000, refill_per_s: 10_000 },
            matching: Rule { cost: 1_000, max: 20_000, refill_per_s: 5_000 },
            subscribe: Rule { cost: 3_000, max: 30_000, refill_per_s: 10_000 },
        }
    }
}

/// The class of a Deribit method (REFERENCE §5 lists the matching-engine ones).
pub fn class_of(method: &str) -> Class {
    match method {
        "public/subscribe" | "private/subscribe" => Class::Subscribe,
        m if m.starts_with("private/buy")
            || m.starts_with("private/sell")
            || m.starts_with("private/edit")
            || m.starts_with("private/cancel")
            || m == "private/close_position" =>
        {
            Class::Matching
        }
        _ => Class::NonMatching,
    }
}

#[derive(Clone, Copy, Debug)]
struct Bucket {
    rule: Rule,
    /// Credits × 1e6 (refill per µs stays integral).
    micro_credits: u128,
    last_us: u64,
}

impl Bucket {
    fn new(rule: Rule) -> Bucket {
        let cap = Self::cap(rule);
        Bucket { rule, micro_credits: cap, last_us: 0 }
    }

    /// One request less than the venue's bucket.
    fn cap(rule: Rule) -> u128 {
        u128::from(rule.max.saturating_sub(rule.cost).max(rule.cost)) * 1_000_000
    }

    fn refill(&mut self, now_us: u64) {
        let elapsed = u128::from(now_us.saturating_sub(self.last_us));
        self.last_us = self.last_us.max(now_us);
        self.micro_credits =
            (self.micro_credits + elapsed * u128::from(self.rule.refill_per_s)).min(Self::cap(self.rule));
    }

    fn try_take(&mut self, now_us: u64) -> Result<(), u64> {
        self.refill(now_us);
        let cost = u128::from(self.rule.cost) * 1_000_000;
        if self.micro_credits >= cost {
            self.micro_credits -= cost;
            return Ok(());
        }
        let missing = cost - self.micro_credits;
        let per_us = u128::from(self.rule.refill_per_s.max(1));
        Err(u64::try_from(missing.div_ceil(per_us)).unwrap_or(u64::MAX))
    }
}

/// The buckets of one session.
#[derive(Clone, Debug)]
pub struct Limiter {
    buckets: [Bucket; 3],
    throttled: u64,
}

impl Limiter {
    pub fn new(limits: RateLimits) -> Limiter {
        Limiter {
            buckets: [Bucket::new(limits.non_matching), Bucket::new(limits.matching), Bucket::new(limits.subscribe)],
            throttled: 0,
        }
    }

    fn bucket(&mut self, class: Class) -> &mut Bucket {
        &mut self.buckets[class as usize]
    }

    /// Takes the credits for one request now, or says how many µs to wait before retrying.
    pub fn try_take(&mut self, class: Class, now_us: u64) -> Result<(), u64> {
        self.bucket(class).try_take(now_us)
    }

    /// The venue answered 10028 anyway: empty every bucket, so what follows waits for a full
    /// refill of credits rather than hammering a venue that just cut us off.
    pub fn on_too_many_requests(&mut self, now_us: u64) {
        self.throttled += 1;
        for bucket in &mut self.buckets {
            bucket.refill(now_us);
            bucket.micro_credits = 0;
        }
    }

    /// How many times the venue throttled us.
    pub fn throttled(&self) -> u64 {
        self.throttled
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The venue's bucket (same rule as the simulator's `credits` module: full cap).
    struct VenueBucket {
        rule: Rule,
        micro: u128,
        last: u64,
    }

    impl VenueBucket {
        fn take(&mut self, now: u64) -> bool {
            self.micro = (self.micro + u128::from(now - self.last) * u128::from(self.rule.refill_per_s))
                .min(u128::from(self.rule.max) * 1_000_000);
            self.last = now;
            let cost = u128::from(self.rule.cost) * 1_000_000;
            if self.micro >= cost {
                self.micro -= cost;
                true
            } else {
                false
            }
        }
    }

    #[test]
    fn a_flood_paced_by_the_limiter_never_exceeds_the_venue() {
        let limits = RateLimits::default();
        for (class, rule) in [
            (Class::NonMatching, limits.non_matching),
            (Class::Matching, limits.matching),
            (Class::Subscribe, limits.subscribe),
        ] {
            let mut ours = Limiter::new(limits);
            let mut venue = VenueBucket { rule, micro: u128::from(rule.max) * 1_000_000, last: 0 };
            let (mut now, mut sent) = (0u64, 0u32);
            while sent < 500 {
                match ours.try_take(class, now) {
                    Ok(()) => {
                        assert!(venue.take(now), "{class:?}: venue would answer 10028 at request {sent}");
                        sent += 1;
                    }
                    Err(wait) => {
                        assert!(wait > 0);
                        now += wait;
                    }
                }
            }
            // Sustained rate is the venue's refill rate (within a burst).
            let expected_s = (500 * rule.cost).saturating_sub(rule.max) / rule.refill_per_s;
            assert!(now / 1_000_000 + 1 >= expected_s, "{class:?} too fast: {now} µs");
        }
    }

    #[test]
    fn throttle_empties_buckets() {
        let mut limiter = Limiter::new(RateLimits::default());
        assert!(limiter.try_take(Class::NonMatching, 0).is_ok());
        limiter.on_too_many_requests(0);
        assert_eq!(limiter.throttled(), 1);
        let wait = limiter.try_take(Class::NonMatching, 0).unwrap_err();
        assert_eq!(wait, 50_000); // 500 credits at 10 000/s
        assert!(limiter.try_take(Class::NonMatching, wait).is_ok());
    }

    #[test]
    fn classes() {
        assert_eq!(class_of("private/buy"), Class::Matching);
        assert_eq!(class_of("private/cancel_all_by_currency"), Class::Matching);
        assert_eq!(class_of("private/edit_by_label"), Class::Matching);
        assert_eq!(class_of("private/subscribe"), Class::Subscribe);
        assert_eq!(class_of("private/get_open_orders"), Class::NonMatching);
        assert_eq!(class_of("public/ticker"), Class::NonMatching);
    }
}
