//! The synthetic market: deep, moving, trading books, reproducible from a seed.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use ticktrade_core::{InstrumentKind, Side, Utc};
use ticktrade_exchange::{
    AccountId, Catalogue, CatalogueParams, Config, Event, Exchange, PlaceParams, Request, StepStats, SynthConfig,
    SynthMarket,
};

const T0: Utc = Utc::from_millis(1_767_254_400_000);

fn market(seed: u64) -> (Exchange, SynthMarket) {
    let mut ex = Exchange::new(Catalogue::builtin(CatalogueParams::default()).unwrap(), Config::default());
    let synth = SynthMarket::new(&mut ex, SynthConfig { seed, ..SynthConfig::default() });
    (ex, synth)
}

/// Runs `n_steps` steps of 10 ms; returns all events and summed stats.
fn run(ex: &mut Exchange, synth: &mut SynthMarket, n_steps: i64) -> (Vec<Event>, StepStats) {
    let mut out = Vec::new();
    let mut total = StepStats::default();
    for i in 0..=n_steps {
        let s = synth.step(ex, Utc(T0.0 + i * 10_000_000), &mut out);
        total.actions += s.actions;
        total.book_changes += s.book_changes;
        total.trades += s.trades;
    }
    (out, total)
}

#[test]
fn books_are_deep_and_stay_deep_while_trading() {
    let (mut ex, mut synth) = market(7);
    let (_, stats) = run(&mut ex, &mut synth, 300);
    assert!(stats.trades > 100, "{stats:?}");
    assert!(stats.book_changes > 10_000, "{stats:?}");
    for inst in ex.catalogue().iter() {
        let book = ex.book(inst.spec.id).unwrap();
        let (bid, ask) = (book.best_price(Side::Buy), book.best_price(Side::Sell));
        if inst.spec.expiry.is_none() && inst.kind() == InstrumentKind::Future {
            assert!(book.depth(Side::Buy) >= 500 && book.depth(Side::Sell) >= 500, "{}", inst.name());
            // Quotes follow the index: the mid is within 1 % of it.
            let mid = (inst.price_f64(bid.unwrap()) + inst.price_f64(ask.unwrap())) / 2.0;
            let index = ex.index_price_of(inst.spec.id).to_f64_lossy();
            assert!((mid / index - 1.0).abs() < 0.01, "{} mid {mid} index {index}", inst.name());
        }
        if let (Some(bid), Some(ask)) = (bid, ask) {
            assert!(bid < ask, "{} crossed", inst.name());
        } else {
            assert!(ask.is_some(), "{} has no asks", inst.name());
        }
    }
    // Sizes vary.
    let perp = ex.catalogue().lookup("BTC-PERPETUAL").unwrap();
    let sizes: std::collections::BTreeSet<_> = ex.book(perp).unwrap().levels(Side::Buy).map(|l| l.qty).collect();
    assert!(sizes.len() > 20);
}

#[test]
fn the_same_seed_gives_the_same_events() {
    let (mut ex1, mut s1) = market(42);
    let (mut ex2, mut s2) = market(42);
    let (a, _) = run(&mut ex1, &mut s1, 50);
    let (b, _) = run(&mut ex2, &mut s2, 50);
    assert_eq!(a.len(), b.len());
    assert!(a == b);
    let (mut ex3, mut s3) = market(43);
    let (c, _) = run(&mut ex3, &mut s3, 50);
    assert!(a != c);
}

#[test]
fn users_trade_against_the_synthetic_book() {
    let (mut ex, mut synth) = market(1);
    run(&mut ex, &mut synth, 10);
    let perp = ex.catalogue().lookup("ETH-PERPETUAL").unwrap();
    let amount = ticktrade_core::Decimal::from_int(100);
    let mut out = Vec::new();
    let reply =
        ex.handle(T0, AccountId(5), Request::Place(PlaceParams::market(perp, Side::Buy, amount)), &mut out).unwrap();
    let ticktrade_exchange::Reply::Order(order) = reply else { panic!() };
    assert_eq!(order.filled.raw(), 100);
    assert_eq!(ex.position(AccountId(5), perp).size, 100);
}
