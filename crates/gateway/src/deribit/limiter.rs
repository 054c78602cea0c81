//! The local rate limiter: Deribit's credit buckets kept on our side, so the venue never has
//! to answer 10028 (`too_many_requests`, which also ends the session).
//!
//! Owns: one session's client-side `Credits` (the rules, defaults and bucket arithmetic are
//! `ticktrade_deribit_proto::ratelimit`'s, the same the simulator answers 10028 by; our buckets
//! hold one request less than the venue's), the "wait this long" answer, and the count of
//! times the venue throttled us anyway.
//! Must not: read a clock or sleep; time comes in as ns since an origin the session keeps.

use ticktrade_deribit_proto::ratelimit::{Class, Credits, RateLimits};

/// The buckets of one session.
#[derive(Clone, Debug)]
pub struct Limiter {
    credits: Credits,
    throttled: u64,
}

impl Limiter {
    /// Full buckets at time 0 of the session's origin.
    pub fn new(limits: RateLimits) -> Limiter {
        Limiter { credits: Credits::client(limits, 0), throttled: 0 }
    }

    /// Takes the credits for one request now, or says how many ns to wait before retrying.
    pub fn try_take(&mut self, class: Class, now_ns: u64) -> Result<(), u64> {
        self.credits.try_take(class, now_ns)
    }

    /// The venue answered 10028 anyway: empty every bucket, so what follows waits for a
    /// refill of credits rather than hammering a venue that just cut us off.
    pub fn on_too_many_requests(&mut self, now_ns: u64) {
        self.throttled += 1;
        self.credits.drain(now_ns);
    }

    /// How many times the venue throttled us.
    pub fn throttled(&self) -> u64 {
        self.throttled
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use ticktrade_deribit_proto::ratelimit::Rule;

    const CLASSES: [Class; 3] = [Class::NonMatching, Class::Matching, Class::Subscribe];

    fn rule() -> impl Strategy<Value = Rule> {
        (1u64..5_000, 1u64..200, 1u64..100_000).prop_map(|(cost, burst, refill_per_s)| Rule {
            cost,
            max: cost * burst,
            refill_per_s,
        })
    }

    fn limits() -> impl Strategy<Value = RateLimits> {
        prop_oneof![
            Just(RateLimits::default()),
            Just(RateLimits::client_default()),
            (rule(), rule(), rule()).prop_map(|(non_matching, matching, subscribe)| RateLimits {
                non_matching,
                matching,
                subscribe
            }),
        ]
    }

    proptest! {
        /// Whatever the schedule, a request the limiter lets through (at once, or after the
        /// wait it asked for) is one the simulator's credits grant, both built from one rule set.
        #[test]
        fn never_lets_through_what_the_simulator_refuses(
            limits in limits(),
            requests in proptest::collection::vec((0usize..3, 0u64..200_000_000, any::<bool>()), 1..400),
            throttle_at in proptest::option::of(0usize..400),
        ) {
            let mut ours = Limiter::new(limits);
            let mut venue = Credits::venue(limits, 0);
            let mut now = 0u64;
            for (i, (class, gap, wait_when_told)) in requests.into_iter().enumerate() {
                let class = CLASSES[class];
                now += gap;
                if throttle_at == Some(i) {
                    ours.on_too_many_requests(now);
                    venue.drain(now);
                }
                match ours.try_take(class, now) {
                    Ok(()) => {
                        prop_assert!(venue.try_take(class, now).is_ok(), "{class:?} at {now} ns: venue says 10028");
                    }
                    Err(wait) if wait_when_told => {
                        prop_assert!(wait > 0);
                        now += wait;
                        prop_assert!(ours.try_take(class, now).is_ok(), "granted after the wait it asked for");
                        prop_assert!(venue.try_take(class, now).is_ok(), "{class:?} at {now} ns: venue says 10028");
                    }
                    Err(_) => {}
                }
            }
        }
    }

    #[test]
    fn a_flood_paced_by_the_limiter_keeps_the_venues_sustained_rate() {
        let limits = RateLimits::default();
        for class in CLASSES {
            let rule = limits.rule(class);
            let mut ours = Limiter::new(limits);
            let mut venue = Credits::venue(limits, 0);
            let (mut now, mut sent) = (0u64, 0u64);
            while sent < 500 {
                match ours.try_take(class, now) {
                    Ok(()) => {
                        assert!(venue.try_take(class, now).is_ok(), "{class:?}: 10028 at request {sent}");
                        sent += 1;
                    }
                    Err(wait) => now += wait,
                }
            }
            // After the burst (one request less than the venue's), one request per refill.
            let expected_ns = (500 * rule.cost - (rule.max - rule.cost)) * 1_000_000_000 / rule.refill_per_s;
            assert!(now + 1_000_000_000 / rule.rate_per_s() >= expected_ns, "{class:?} too fast: {now} ns");
            assert!(now <= expected_ns + sent, "{class:?} slower than the venue allows: {now} ns");
        }
    }

    #[test]
    fn the_gateways_default_is_never_refused_by_a_tier_two_venue() {
        // The gateway does not know its account's tier; the simulator reports tier 2.
        let mut ours = Limiter::new(RateLimits::client_default());
        let mut venue = Credits::venue(RateLimits::default(), 0);
        let (mut now, mut sent) = (0u64, 0u64);
        while sent < 500 {
            match ours.try_take(Class::Matching, now) {
                Ok(()) => {
                    assert!(venue.try_take(Class::Matching, now).is_ok(), "10028 at request {sent}");
                    sent += 1;
                }
                Err(wait) => now += wait,
            }
        }
        // 19 at once, then 5 a second.
        assert!(now >= (500 - 19) * 200_000_000, "faster than 5/s: {now} ns");
    }

    #[test]
    fn throttle_empties_buckets() {
        let mut limiter = Limiter::new(RateLimits::default());
        assert!(limiter.try_take(Class::NonMatching, 0).is_ok());
        limiter.on_too_many_requests(0);
        assert_eq!(limiter.throttled(), 1);
        let wait = limiter.try_take(Class::NonMatching, 0).unwrap_err();
        assert_eq!(wait, 50_000_000); // 500 credits at 10 000/s
        assert!(limiter.try_take(Class::NonMatching, wait).is_ok());
    }
}
