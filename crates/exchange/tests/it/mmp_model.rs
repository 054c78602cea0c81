//! Market maker protection against a naive model: a maker quotes both sides of
//! BTC-PERPETUAL with `private/mass_quote` under a random MMP config, a taker hits the quotes
//! at random times and sizes, and the maker sometimes calls `reset_mmp`. A model that keeps
//! every fill and re-sums the window from scratch says when the group must freeze; the engine
//! must freeze exactly then (quotes cancelled with `mmp_trigger`, re-quotes refused with
//! `13030`), stay frozen exactly until `frozen_time` passes or `reset_mmp`, and quote again
//! afterwards.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use proptest::prelude::*;
use ticktrade_core::{Decimal, InstrumentId, Side, Utc};
use ticktrade_exchange::{
    AccountId, CancelReason, Catalogue, CatalogueParams, Config, Event, Exchange, IndexId, MassQuote, MmpConfig,
    OrderFilter, OrderType, PlaceParams, Quote, QuoteSide, Reject, Reply, Request, Size, Tag, TimeInForce,
};

const MAKER: AccountId = AccountId(1);
const TAKER: AccountId = AccountId(2);
const T0_MS: i64 = 1_767_254_400_000;
/// BTC-PERPETUAL: 10 USD contracts, index 50 000, so a fill of `usd` is `usd / 10` contracts
/// and `usd / 50 000` coin of delta.
const INDEX: i64 = 50_000;

#[derive(Clone, Debug)]
enum Step {
    /// The taker buys (lifts the ask) or sells (hits the bid) `usd`.
    Hit {
        side: Side,
        usd: i64,
    },
    Reset,
}

#[derive(Clone, Debug)]
struct Scenario {
    interval_s: u32,
    frozen_time_s: u32,
    quantity_limit: Option<i64>,
    /// The delta limit in USD of net size (the coin limit is this over the index).
    delta_limit_usd: Option<i64>,
    steps: Vec<(i64, Step)>,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let step = prop_oneof![
        8 => (prop_oneof![Just(Side::Buy), Just(Side::Sell)], 1i64..=20)
            .prop_map(|(side, n)| Step::Hit { side, usd: n * 10 }),
        1 => Just(Step::Reset),
    ];
    (
        1u32..=5,
        0u32..=3,
        proptest::option::of(3i64..=40),
        proptest::option::of(5i64..=60),
        // Steps on a 250 ms grid half of the time, so fills land exactly on window and
        // freeze boundaries.
        proptest::collection::vec((prop_oneof![(0i64..=10).prop_map(|k| k * 250), 0i64..=2_500], step), 1..60),
    )
        .prop_filter("some limit", |s| s.2.is_some() || s.3.is_some())
        .prop_map(|(interval_s, frozen_time_s, quantity_limit, delta, steps)| Scenario {
            interval_s,
            frozen_time_s,
            quantity_limit,
            delta_limit_usd: delta.map(|n| n * 10),
            steps,
        })
}

/// The naive model: every fill since the last freeze or reset, re-summed at each fill.
#[derive(Default)]
struct Model {
    fills: Vec<(i64, i64, i64)>, // (ms, contracts, signed usd)
    /// `Some(None)`: until reset; `Some(Some(ms))`: until then.
    frozen: Option<Option<i64>>,
}

impl Model {
    fn frozen_at(&self, now_ms: i64) -> bool {
        match self.frozen {
            Some(None) => true,
            Some(Some(until)) => now_ms < until,
            None => false,
        }
    }

    /// Records a fill; returns whether it froze the group.
    fn fill(&mut self, s: &Scenario, now_ms: i64, contracts: i64, usd: i64) -> bool {
        self.fills.push((now_ms, contracts, usd));
        let window_ms = i64::from(s.interval_s) * 1_000;
        let in_window = self.fills.iter().filter(|f| now_ms - f.0 < window_ms);
        let (quantity, net_usd) = in_window.fold((0, 0), |(q, d), f| (q + f.1, d + f.2));
        let hit =
            s.quantity_limit.is_some_and(|l| quantity >= l) || s.delta_limit_usd.is_some_and(|l| net_usd.abs() >= l);
        if hit {
            self.fills.clear();
            self.frozen =
                Some(if s.frozen_time_s == 0 { None } else { Some(now_ms + i64::from(s.frozen_time_s) * 1_000) });
        }
        hit
    }
}

fn quote_request(perp: InstrumentId) -> MassQuote {
    let side = |price: i64| QuoteSide {
        price: Decimal::from_int(price),
        size: Size::amount(Decimal::from_int(100_000)),
        post_only: false,
        reject_post_only: false,
    };
    MassQuote {
        mmp_group: Tag::try_new("g").unwrap(),
        quote_id: Tag::try_new("q").unwrap(),
        valid_until: None,
        quotes: vec![Quote {
            instrument: perp,
            quote_set_id: Tag::try_new("set").unwrap(),
            bid: Some(side(INDEX - 10)),
            ask: Some(side(INDEX + 10)),
        }],
        connection: None,
    }
}

/// The built-in catalogue's exchange, BTC-PERPETUAL and the `btc_usd` index.
fn market() -> (Exchange, InstrumentId, IndexId) {
    let cat = Catalogue::builtin(CatalogueParams::default()).unwrap();
    let perp = cat.lookup("BTC-PERPETUAL").unwrap();
    let index = cat.index("btc_usd").unwrap();
    (Exchange::new(cat, Config::default()), perp, index)
}

fn run(s: &Scenario) -> Result<(), TestCaseError> {
    let (mut ex, perp, index) = market();
    let mut out = Vec::new();
    ex.set_index(Utc::from_millis(T0_MS), index, Decimal::from_int(INDEX), &mut out);
    ex.set_margin_exempt(TAKER, true);
    let group = Tag::try_new("g").unwrap();
    let config = MmpConfig {
        interval_s: s.interval_s,
        frozen_time_s: s.frozen_time_s,
        quantity_limit: s.quantity_limit.map(Decimal::from_int),
        // usd / 50 000 coin = usd × 2 / 100 000.
        delta_limit: s.delta_limit_usd.map(|usd| Decimal::new(usd * 2, 5).unwrap()),
        vega_limit: None,
        max_quote_quantity: None,
    };
    ex.set_mmp_config(MAKER, index, group, config);
    let mut model = Model::default();
    let mut now_ms = T0_MS;
    for (dt, step) in &s.steps {
        now_ms += dt;
        let now = Utc::from_millis(now_ms);
        // The maker (re)quotes both sides: refused exactly while the model is frozen.
        out.clear();
        let reply = ex.mass_quote(now, MAKER, &quote_request(perp), &mut out).unwrap();
        if model.frozen_at(now_ms) {
            prop_assert!(reply.orders.is_empty(), "quoted while frozen at {now_ms}");
            prop_assert!(reply.errors.iter().all(|e| e.2 == Reject::MMP_TRIGGER) && reply.errors.len() == 2);
        } else {
            prop_assert!(reply.errors.is_empty(), "refused while not frozen at {now_ms}: {:?}", reply.errors);
            prop_assert_eq!(reply.orders.len(), 2);
            prop_assert!(reply.orders.iter().all(|o| o.quote.is_some() && o.mmp && o.mmp_group == group));
        }
        prop_assert_eq!(ex.mmp_frozen(now, MAKER, index, group), model.frozen_at(now_ms));
        match *step {
            Step::Reset => {
                ex.reset_mmp(MAKER, index, group);
                model.frozen = None;
                model.fills.clear();
                prop_assert!(!ex.mmp_frozen(now, MAKER, index, group));
            }
            Step::Hit { side, usd } => {
                let price = if side == Side::Buy { INDEX + 10 } else { INDEX - 10 };
                let params = PlaceParams {
                    time_in_force: TimeInForce::ImmediateOrCancel,
                    ..PlaceParams::limit(perp, side, Decimal::from_int(usd), Decimal::from_int(price))
                };
                out.clear();
                let was_frozen = model.frozen_at(now_ms);
                let Reply::Order(taker) = ex.handle(now, TAKER, Request::Place(params), &mut out).unwrap() else {
                    return Err(TestCaseError::fail("count reply"));
                };
                let mmp_cancels = out
                    .iter()
                    .filter(|e| matches!(e, Event::Order(o) if o.cancel_reason == Some(CancelReason::MmpTrigger)))
                    .count();
                if was_frozen {
                    prop_assert!(taker.filled.is_zero(), "filled against a frozen group");
                    prop_assert_eq!(mmp_cancels, 0);
                } else {
                    prop_assert_eq!(taker.filled, taker.amount);
                    // The maker's side moves opposite to the taker's.
                    let signed = if side == Side::Buy { -usd } else { usd };
                    let froze = model.fill(s, now_ms, usd / 10, signed);
                    let live = ex.open_orders(MAKER, OrderFilter::default());
                    if froze {
                        prop_assert_eq!(mmp_cancels, 2, "both quotes cancelled by the trigger");
                        prop_assert!(live.is_empty());
                    } else {
                        prop_assert_eq!(mmp_cancels, 0, "froze early at {}", now_ms);
                        prop_assert_eq!(live.len(), 2);
                        prop_assert!(live.iter().all(|o| o.order_type == OrderType::Limit));
                    }
                }
            }
        }
        prop_assert_eq!(ex.mmp_frozen(now, MAKER, index, group), model.frozen_at(now_ms));
        let status = ex.mmp_status(now, MAKER);
        prop_assert_eq!(status.len(), usize::from(model.frozen_at(now_ms)));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn engine_freezes_exactly_when_the_model_says(s in scenario()) {
        run(&s)?;
    }
}

/// A plain `mmp: true` order counts against the account's default group and a frozen group
/// refuses new MMP orders, while orders without `mmp` still trade.
#[test]
fn mmp_orders_use_the_default_group_and_are_refused_while_frozen() {
    let (mut ex, perp, index) = market();
    let mut out = Vec::new();
    let now = Utc::from_millis(T0_MS);
    ex.set_index(now, index, Decimal::from_int(INDEX), &mut out);
    ex.set_margin_exempt(TAKER, true);
    let config = MmpConfig {
        interval_s: 10,
        frozen_time_s: 5,
        quantity_limit: Some(Decimal::from_int(2)),
        delta_limit: None,
        vega_limit: None,
        max_quote_quantity: None,
    };
    ex.set_mmp_config(MAKER, index, Tag::EMPTY, config);
    let ask = |mmp| PlaceParams {
        mmp,
        ..PlaceParams::limit(perp, Side::Sell, Decimal::from_int(100), Decimal::from_int(INDEX + 10))
    };
    ex.handle(now, MAKER, Request::Place(ask(true)), &mut out).unwrap();
    ex.handle(now, MAKER, Request::Place(ask(true)), &mut out).unwrap();
    let buy = PlaceParams::limit(perp, Side::Buy, Decimal::from_int(20), Decimal::from_int(INDEX + 10));
    out.clear();
    ex.handle(now, TAKER, Request::Place(buy), &mut out).unwrap();
    assert!(ex.mmp_frozen(now, MAKER, index, Tag::EMPTY));
    assert!(ex.open_orders(MAKER, OrderFilter::default()).is_empty());
    assert_eq!(ex.handle(now, MAKER, Request::Place(ask(true)), &mut out).unwrap_err(), Reject::MMP_TRIGGER);
    assert!(ex.handle(now, MAKER, Request::Place(ask(false)), &mut out).is_ok());
    let later = Utc::from_millis(T0_MS + 5_000);
    assert!(!ex.mmp_frozen(later, MAKER, index, Tag::EMPTY));
    assert!(ex.handle(later, MAKER, Request::Place(ask(true)), &mut out).is_ok());
    // Removing the config (interval 0) leaves MMP orders unprotected.
    ex.set_mmp_config(MAKER, index, Tag::EMPTY, MmpConfig { interval_s: 0, ..config });
    assert!(ex.mmp_configs(MAKER).is_empty());
}

/// A mass quote needs a configured group, replaces the previous quote of the same side,
/// refuses one bad side without dropping the others, and `cancel_quotes` cancels quotes
/// only, with `freeze_quotes` pausing new ones for one second.
#[test]
fn mass_quotes_replace_reject_per_side_and_cancel() {
    let (mut ex, perp, index) = market();
    let mut out = Vec::new();
    let now = Utc::from_millis(T0_MS);
    ex.set_index(now, index, Decimal::from_int(INDEX), &mut out);
    let request = quote_request(perp);
    let reply = ex.mass_quote(now, MAKER, &request, &mut out).unwrap();
    assert_eq!(reply.errors.iter().map(|e| e.2).collect::<Vec<_>>(), vec![Reject::MMP_REQUIRED; 2]);
    let group = Tag::try_new("g").unwrap();
    let config = MmpConfig {
        interval_s: 1,
        frozen_time_s: 0,
        quantity_limit: Some(Decimal::from_int(1_000_000)),
        delta_limit: None,
        vega_limit: None,
        max_quote_quantity: None,
    };
    ex.set_mmp_config(MAKER, index, group, config);
    let first = ex.mass_quote(now, MAKER, &request, &mut out).unwrap();
    assert_eq!(first.orders.len(), 2);
    // Same sides again, the bid off the tick grid: the bid is refused and the old bid stays,
    // the ask is replaced.
    let mut second = request.clone();
    second.quotes[0].bid =
        Some(QuoteSide { price: Decimal::new(499_901, 1).unwrap(), ..second.quotes[0].bid.unwrap() });
    let reply = ex.mass_quote(now, MAKER, &second, &mut out).unwrap();
    assert_eq!(reply.errors, vec![(perp, Side::Buy, Reject::PRICE_WRONG_TICK)]);
    let live: Vec<u64> = ex.open_orders(MAKER, OrderFilter::default()).iter().map(|o| o.id).collect();
    assert_eq!(live, vec![first.orders[0].id, reply.orders[0].id]);
    // A plain order is not a quote: cancel_quotes leaves it.
    ex.handle(
        now,
        MAKER,
        Request::Place(PlaceParams::limit(perp, Side::Buy, Decimal::from_int(10), Decimal::from_int(40_000))),
        &mut out,
    )
    .unwrap();
    let n = ex.cancel_quotes(
        now,
        MAKER,
        ticktrade_exchange::QuoteFilter::Delta { min: Decimal::new(9, 1).unwrap(), max: Decimal::ONE },
        true,
        &mut out,
    );
    assert_eq!(n, 2);
    assert_eq!(ex.open_orders(MAKER, OrderFilter::default()).len(), 1);
    assert_eq!(ex.mass_quote(now, MAKER, &request, &mut out).unwrap_err(), Reject::QUOTES_FROZEN);
    let later = Utc::from_millis(T0_MS + 1_000);
    assert_eq!(ex.mass_quote(later, MAKER, &request, &mut out).unwrap().orders.len(), 2);
    let by_set = ticktrade_exchange::QuoteFilter::QuoteSet(Tag::try_new("other").unwrap());
    assert_eq!(ex.cancel_quotes(later, MAKER, by_set, false, &mut out), 0);
    assert_eq!(ex.cancel_quotes(later, MAKER, ticktrade_exchange::QuoteFilter::All, false, &mut out), 2);
}
