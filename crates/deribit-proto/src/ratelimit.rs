//! Deribit's request-credit rules: which bucket a method spends from, what each bucket holds
//! and refills, and the bucket arithmetic, for both sides of the wire.
//!
//! Owns: `Class`, `Rule` and `RateLimits` (Deribit's documented defaults), the list of
//! matching-engine methods (`class_of`), and `Credits`, the leaky buckets of one sub-account
//! as a pure function of the time passed in. The simulator spends from `Credits::venue` and
//! answers 10028; the gateway spends from `Credits::client` and waits instead, so the venue
//! never has to answer 10028.
//! Must not: read a clock, sleep, or close anything: time comes in as nanoseconds since any
//! origin the caller keeps fixed, and what a refusal leads to is the caller's business.
//!
//! # The rules (Deribit's rate-limit article and API reference)
//! - Every request costs credits from a bucket that refills continuously up to a maximum.
//!   A request that finds too few credits is answered `too_many_requests` (10028) and the
//!   session is terminated; the client reconnects once credits have refilled. Limits are per
//!   sub-account, shared by WebSocket, HTTP and FIX.
//! - Non-matching-engine requests (everything not listed below): 500 credits each, at most
//!   50 000, refilled at 10 000 per second: 20 requests/s sustained, bursts of 100.
//! - Matching-engine requests (`MATCHING_ENGINE_METHODS`: every trading write) have a
//!   per-tier limit, recomputed hourly from the 7-day volume: tier 1 (over USD 25 M) 30
//!   requests/s with bursts of 100, tier 2 (over USD 5 M) 20/s with bursts of 50. Tier 2 is the
//!   default here, and what the simulator reports in `private/get_account_summary`'s `limits`;
//!   the live values of an account are in that same object. A request costs 1 000 credits.
//!   Lower tiers are lower still, so a client that has not read its account's `limits` paces
//!   its writes at 5 requests/s with bursts of 20, the usual client default
//!   (`RateLimits::client_default`, what the gateway uses): slower than any venue tier, never
//!   answered 10028.
//! - `public/subscribe` and `private/subscribe`: 3 000 credits each, at most 30 000, refilled at
//!   10 000 per second: ~3.3 calls/s, bursts of 10.
//!
//! # The arithmetic
//! Credits are kept ×10⁹ so that a refill by whole nanoseconds stays an integer: after `dt`
//! ns a bucket holds `min(cap, held + dt × refill_per_s)` nano-credits, and a request is
//! granted when that is at least `cost × 10⁹`. The venue's cap is `max`; the client's is one
//! request less (`max − cost`), so a burst that bunches up in transit still fits the venue.

/// Nano-credits per credit.
const NANO: u128 = 1_000_000_000;

/// One bucket: `cost` credits per request, at most `max`, `refill_per_s` credits per second.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub cost: u64,
    pub max: u64,
    pub refill_per_s: u64,
}

impl Rule {
    /// Non-matching-engine requests: 20/s, bursts of 100.
    pub const NON_MATCHING: Rule = Rule { cost: 500, max: 50_000, refill_per_s: 10_000 };
    /// Matching-engine tier 1 (7-day volume over USD 25 M): 30/s, bursts of 100.
    pub const MATCHING_TIER_1: Rule = Rule { cost: 1_000, max: 100_000, refill_per_s: 30_000 };
    /// Matching-engine tier 2 (7-day volume over USD 5 M): 20/s, bursts of 50.
    pub const MATCHING_TIER_2: Rule = Rule { cost: 1_000, max: 50_000, refill_per_s: 20_000 };
    /// What a client assumes of the matching engine before it knows its tier: 5/s, bursts of 20.
    pub const MATCHING_CLIENT: Rule = Rule { cost: 1_000, max: 20_000, refill_per_s: 5_000 };
    /// Subscribe calls: ~3.3/s, bursts of 10.
    pub const SUBSCRIBE: Rule = Rule { cost: 3_000, max: 30_000, refill_per_s: 10_000 };
    /// Costs nothing: every request is granted.
    pub const FREE: Rule = Rule { cost: 0, max: 1, refill_per_s: 1 };

    /// Requests a full bucket grants at once (`burst` in the account summary's `limits`).
    pub const fn burst(&self) -> u64 {
        match self.max.checked_div(self.cost) {
            Some(n) => n,
            None => u64::MAX,
        }
    }

    /// Requests per second sustained (`rate` in the account summary's `limits`).
    pub const fn rate_per_s(&self) -> u64 {
        match self.refill_per_s.checked_div(self.cost) {
            Some(n) => n,
            None => u64::MAX,
        }
    }
}

/// Which bucket a request spends from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Class {
    NonMatching,
    Matching,
    Subscribe,
}

impl Class {
    const ALL: [Class; 3] = [Class::NonMatching, Class::Matching, Class::Subscribe];
}

/// The three buckets' rules of one sub-account.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimits {
    pub non_matching: Rule,
    pub matching: Rule,
    pub subscribe: Rule,
}

impl Default for RateLimits {
    /// Deribit's defaults, with the matching engine at tier 2.
    fn default() -> RateLimits {
        RateLimits { non_matching: Rule::NON_MATCHING, matching: Rule::MATCHING_TIER_2, subscribe: Rule::SUBSCRIBE }
    }
}

impl RateLimits {
    /// A client's assumption about an account it has not asked: the documented defaults with
    /// the matching engine at `Rule::MATCHING_CLIENT`, within every tier's limits.
    pub const fn client_default() -> RateLimits {
        RateLimits { non_matching: Rule::NON_MATCHING, matching: Rule::MATCHING_CLIENT, subscribe: Rule::SUBSCRIBE }
    }

    /// No limits at all (benchmarks and tests that flood on purpose).
    pub const fn unlimited() -> RateLimits {
        RateLimits { non_matching: Rule::FREE, matching: Rule::FREE, subscribe: Rule::FREE }
    }

    /// The rule of one class.
    pub const fn rule(&self, class: Class) -> Rule {
        match class {
            Class::NonMatching => self.non_matching,
            Class::Matching => self.matching,
            Class::Subscribe => self.subscribe,
        }
    }
}

/// The methods Deribit counts as matching-engine requests: every trading write. `mass_quote`
/// has limits of its own on Deribit; it is counted here so a client paces it at least as
/// strictly as an order.
pub const MATCHING_ENGINE_METHODS: [&str; 16] = [
    "private/buy",
    "private/sell",
    "private/edit",
    "private/edit_by_label",
    "private/cancel",
    "private/cancel_by_label",
    "private/cancel_all",
    "private/cancel_all_by_instrument",
    "private/cancel_all_by_currency",
    "private/cancel_all_by_kind_or_type",
    "private/cancel_quotes",
    "private/close_position",
    "private/move_positions",
    "private/verify_block_trade",
    "private/execute_block_trade",
    "private/mass_quote",
];

/// The bucket a method spends from.
pub fn class_of(method: &str) -> Class {
    match method {
        "public/subscribe" | "private/subscribe" => Class::Subscribe,
        m if MATCHING_ENGINE_METHODS.contains(&m) => Class::Matching,
        _ => Class::NonMatching,
    }
}

/// One leaky bucket.
#[derive(Clone, Copy, Debug)]
struct Bucket {
    rule: Rule,
    /// Most nano-credits the bucket holds.
    cap: u128,
    nano_credits: u128,
    last_ns: u64,
}

impl Bucket {
    fn full(rule: Rule, cap: u128, now_ns: u64) -> Bucket {
        Bucket { rule, cap, nano_credits: cap, last_ns: now_ns }
    }

    fn refill(&mut self, now_ns: u64) {
        let elapsed = u128::from(now_ns.saturating_sub(self.last_ns));
        self.last_ns = self.last_ns.max(now_ns);
        self.nano_credits = (self.nano_credits + elapsed * u128::from(self.rule.refill_per_s)).min(self.cap);
    }

    /// The credits of `n` requests, all or none, provided `keep` more requests would still
    /// fit afterwards; `Err` says how many ns until they would.
    fn try_take(&mut self, now_ns: u64, n: u64, keep: u64) -> Result<(), u64> {
        self.refill(now_ns);
        let request = u128::from(self.rule.cost) * NANO;
        let (cost, needed) = (request * u128::from(n), request * u128::from(n + keep));
        if self.nano_credits >= needed {
            self.nano_credits -= cost;
            return Ok(());
        }
        if self.rule.refill_per_s == 0 || needed > self.cap {
            return Err(u64::MAX);
        }
        let missing = needed - self.nano_credits;
        Err(u64::try_from(missing.div_ceil(u128::from(self.rule.refill_per_s))).unwrap_or(u64::MAX))
    }
}

/// The credit buckets of one sub-account (a session, or one HTTP client).
#[derive(Clone, Debug)]
pub struct Credits {
    buckets: [Bucket; 3],
}

impl Credits {
    /// The venue's buckets, full at `now_ns`: each holds up to the rule's `max`.
    pub fn venue(limits: RateLimits, now_ns: u64) -> Credits {
        Credits::with_cap(limits, now_ns, |rule| rule.max)
    }

    /// A client's buckets, full at `now_ns`: each holds one request less than the venue's (but
    /// at least one request), so requests that bunch up in transit still fit the venue.
    pub fn client(limits: RateLimits, now_ns: u64) -> Credits {
        Credits::with_cap(limits, now_ns, |rule| rule.max.saturating_sub(rule.cost).max(rule.cost))
    }

    fn with_cap(limits: RateLimits, now_ns: u64, cap: impl Fn(Rule) -> u64) -> Credits {
        Credits {
            buckets: Class::ALL.map(|class| {
                let rule = limits.rule(class);
                Bucket::full(rule, u128::from(cap(rule)) * NANO, now_ns)
            }),
        }
    }

    /// A client's buckets switched to `limits` at `now_ns` (the account's own, read after the
    /// session started) without refilling them: each keeps what it holds now, up to the new
    /// cap. Starting full again would spend, on top of a burst the venue has already counted,
    /// a second one it refuses.
    pub fn adopt_client(&mut self, limits: RateLimits, now_ns: u64) {
        let fresh = Credits::client(limits, now_ns);
        for (bucket, mut next) in self.buckets.iter_mut().zip(fresh.buckets) {
            bucket.refill(now_ns);
            next.nano_credits = next.cap.min(bucket.nano_credits);
            *bucket = next;
        }
    }

    /// Spends one request's credits at `now_ns`, or says how many ns until there are enough
    /// (`u64::MAX`: never, the rule cannot grant it).
    pub fn try_take(&mut self, class: Class, now_ns: u64) -> Result<(), u64> {
        self.buckets[class as usize].try_take(now_ns, 1, 0)
    }

    /// Spends the credits of `n` requests at once, or none: `Err` says how many ns until all
    /// `n` fit (`u64::MAX`: never, more than the bucket holds).
    pub fn try_take_n(&mut self, class: Class, now_ns: u64, n: u64) -> Result<(), u64> {
        self.buckets[class as usize].try_take(now_ns, n, 0)
    }

    /// Spends one request's credits like [`Credits::try_take`], but only while `keep` more
    /// requests of the class would still fit afterwards (false: nothing spent). Bulk work (a
    /// reconciliation of hundreds of instruments) leaves room for the requests that cannot
    /// wait (heartbeat answers, cancels).
    pub fn try_take_keeping(&mut self, class: Class, now_ns: u64, keep: u64) -> bool {
        self.buckets[class as usize].try_take(now_ns, 1, keep).is_ok()
    }

    /// Empties every bucket at `now_ns` (the venue cut us off: wait for a refill).
    pub fn drain(&mut self, now_ns: u64) {
        for bucket in &mut self.buckets {
            bucket.refill(now_ns);
            bucket.nano_credits = 0;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_documented_defaults() {
        let limits = RateLimits::default();
        let cases = [
            (limits.non_matching, 500, 50_000, 10_000, 20, 100),
            (limits.matching, 1_000, 50_000, 20_000, 20, 50),
            (limits.subscribe, 3_000, 30_000, 10_000, 3, 10),
            (Rule::MATCHING_TIER_1, 1_000, 100_000, 30_000, 30, 100),
            (Rule::MATCHING_CLIENT, 1_000, 20_000, 5_000, 5, 20),
        ];
        for (rule, cost, max, refill, rate, burst) in cases {
            assert_eq!((rule.cost, rule.max, rule.refill_per_s), (cost, max, refill));
            assert_eq!((rule.rate_per_s(), rule.burst()), (rate, burst));
        }
    }

    #[test]
    fn adopting_the_accounts_limits_keeps_what_was_spent() {
        let mut credits = Credits::client(RateLimits::client_default(), 0);
        let rule = RateLimits::client_default().non_matching;
        for _ in 0..10 {
            credits.try_take(Class::NonMatching, 0).unwrap();
        }
        credits.adopt_client(RateLimits::default(), 0);
        // A full client bucket holds burst - 1 requests; ten of them are gone.
        let left = (0..).take_while(|_| credits.try_take(Class::NonMatching, 0).is_ok()).count() as u64;
        assert_eq!(left, rule.burst() - 1 - 10);
    }

    #[test]
    fn several_requests_take_all_their_credits_or_none() {
        let mut credits = Credits::client(RateLimits::default(), 0);
        let burst = RateLimits::default().matching.burst() - 1;
        assert_eq!(credits.try_take_n(Class::Matching, 0, burst + 1).map_err(|_| ()), Err(()));
        // The refused batch spent nothing: the whole burst is still there.
        assert_eq!(credits.try_take_n(Class::Matching, 0, burst), Ok(()));
        assert!(credits.try_take(Class::Matching, 0).is_err());
        assert_eq!(credits.try_take_n(Class::Matching, 0, 10 * (burst + 1)), Err(u64::MAX), "more than it holds");
    }

    #[test]
    fn bulk_requests_leave_room_for_the_urgent_ones() {
        let mut credits = Credits::client(RateLimits::default(), 0);
        let burst = RateLimits::default().non_matching.burst() - 1;
        let bulk = (0..).take_while(|_| credits.try_take_keeping(Class::NonMatching, 0, 5)).count() as u64;
        assert_eq!(bulk, burst - 5);
        let urgent = (0..).take_while(|_| credits.try_take(Class::NonMatching, 0).is_ok()).count() as u64;
        assert_eq!(urgent, 5);
    }

    #[test]
    fn every_trading_write_is_a_matching_engine_request() {
        for method in MATCHING_ENGINE_METHODS {
            assert_eq!(class_of(method), Class::Matching, "{method}");
        }
        assert_eq!(class_of("private/subscribe"), Class::Subscribe);
        assert_eq!(class_of("public/subscribe"), Class::Subscribe);
        for method in [
            "private/get_open_orders",
            "public/ticker",
            "private/enable_cancel_on_disconnect",
            "private/get_order_state",
            "private/unsubscribe",
            "private/buyx",
        ] {
            assert_eq!(class_of(method), Class::NonMatching, "{method}");
        }
    }

    #[test]
    fn burst_then_refill() {
        let mut credits = Credits::venue(RateLimits::default(), 0);
        let granted = (0..150).filter(|_| credits.try_take(Class::NonMatching, 0).is_ok()).count();
        assert_eq!(granted, 100, "burst of 100 requests at 500 credits from 50 000");
        assert_eq!(credits.try_take(Class::NonMatching, 0), Err(50_000_000), "500 credits at 10 000/s");
        assert!(credits.try_take(Class::NonMatching, 50_000_000).is_ok());
        assert!(credits.try_take(Class::NonMatching, 50_000_000).is_err());
        let mut client = Credits::client(RateLimits::default(), 0);
        assert_eq!((0..60).filter(|_| client.try_take(Class::Matching, 0).is_ok()).count(), 49, "one less than 50");
    }

    #[test]
    fn drain_waits_for_one_request_of_refill() {
        let mut credits = Credits::client(RateLimits::default(), 0);
        credits.drain(1_000);
        assert_eq!(credits.try_take(Class::NonMatching, 1_000), Err(50_000_000));
        assert_eq!(credits.try_take(Class::Matching, 1_000), Err(50_000_000));
        assert!(credits.try_take(Class::NonMatching, 50_001_000).is_ok());
    }

    #[test]
    fn unlimited_grants_everything_and_an_impossible_rule_says_never() {
        let mut credits = Credits::venue(RateLimits::unlimited(), 0);
        assert!((0..10_000).all(|_| credits.try_take(Class::Matching, 0).is_ok()));
        let stuck = Rule { cost: 10, max: 5, refill_per_s: 1 };
        let mut credits = Credits::venue(RateLimits { matching: stuck, ..RateLimits::default() }, 0);
        assert_eq!(credits.try_take(Class::Matching, 0), Err(u64::MAX));
    }

    proptest! {
        /// Never grants more than a full bucket plus what elapsed time refilled.
        #[test]
        fn never_exceeds_the_budget(gaps in proptest::collection::vec(0u64..20_000_000, 1..500)) {
            let rule = Rule::NON_MATCHING;
            let mut credits = Credits::venue(RateLimits::default(), 0);
            let (mut now, mut granted) = (0u64, 0u64);
            for gap in gaps {
                now += gap;
                granted += u64::from(credits.try_take(Class::NonMatching, now).is_ok());
            }
            let budget = (u128::from(rule.max) + u128::from(now) * u128::from(rule.refill_per_s) / NANO)
                / u128::from(rule.cost);
            prop_assert!(u128::from(granted) <= budget);
        }

        /// A refusal's wait is exact: one ns earlier is still refused, at the wait it is granted.
        #[test]
        fn the_wait_is_exact(gaps in proptest::collection::vec(0u64..5_000_000, 1..200)) {
            let mut credits = Credits::venue(RateLimits::default(), 0);
            let mut now = 0u64;
            for gap in gaps {
                now += gap;
                if let Err(wait) = credits.try_take(Class::Matching, now) {
                    prop_assert!(wait > 0);
                    prop_assert!(credits.clone().try_take(Class::Matching, now + wait - 1).is_err());
                    prop_assert!(credits.try_take(Class::Matching, now + wait).is_ok());
                    now += wait;
                }
            }
        }
    }
}
