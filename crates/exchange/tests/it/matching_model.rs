//! The engine against the naive reference matcher (`ticktrade_exchange::naive`): random
//! streams of limit/market/IOC/FOK/post-only orders, cancels and edits from several accounts
//! must give identical fills, resting books (levels and FIFO queues) and positions.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use proptest::prelude::*;
use ticktrade_core::{Decimal, InstrumentId, Price, Qty, Side, Utc};
use ticktrade_exchange::naive::{NaiveFill, NaiveKind, NaiveMatcher};
use ticktrade_exchange::{
    AccountId, Catalogue, CatalogueParams, Config, EditParams, Event, Exchange, Liquidity, Money, OrderType,
    PlaceParams, Request, TimeInForce,
};

#[derive(Clone, Debug)]
enum Op {
    Place { account: u32, side: Side, kind: NaiveKind, price: i64, qty: i64 },
    Cancel { pick: usize },
    Edit { pick: usize, price_delta: i64, qty: i64 },
}

fn kind() -> impl Strategy<Value = NaiveKind> {
    prop_oneof![
        6 => Just(NaiveKind::Limit),
        2 => Just(NaiveKind::Ioc),
        1 => Just(NaiveKind::Fok),
        1 => Just(NaiveKind::PostOnly),
        1 => Just(NaiveKind::PostOnlyReject),
        1 => Just(NaiveKind::Market),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let side = prop_oneof![Just(Side::Buy), Just(Side::Sell)];
    prop_oneof![
        6 => (0u32..3, side, kind(), 99_990i64..100_010, 1i64..6)
            .prop_map(|(account, side, kind, price, qty)| Op::Place { account, side, kind, price, qty }),
        2 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        2 => (any::<usize>(), -3i64..4, 1i64..6).prop_map(|(pick, price_delta, qty)| Op::Edit { pick, price_delta, qty }),
    ]
}

struct Pair {
    ex: Exchange,
    naive: NaiveMatcher,
    perp: InstrumentId,
    ids: Vec<u64>,
    out: Vec<Event>,
}

fn dec_price(ticks: i64) -> Decimal {
    // BTC-PERPETUAL tick is 0.5.
    Decimal::new(ticks * 5, 1).unwrap()
}

fn dec_amount(lots: i64) -> Decimal {
    Decimal::from_int(lots * 10)
}

impl Pair {
    fn new() -> Pair {
        let cat = Catalogue::builtin(CatalogueParams::default()).unwrap();
        let perp = cat.lookup("BTC-PERPETUAL").unwrap();
        let config =
            Config { initial_balances: vec![("BTC".into(), Money::from_int(1_000_000_000_000))], ..Config::default() };
        Pair { ex: Exchange::new(cat, config), naive: NaiveMatcher::new(), perp, ids: Vec::new(), out: Vec::new() }
    }

    fn engine_fills(&self) -> Vec<NaiveFill> {
        let trades: Vec<_> = self
            .out
            .iter()
            .filter_map(|e| match e {
                Event::UserTrade(t) => Some(*t),
                _ => None,
            })
            .collect();
        trades
            .chunks(2)
            .map(|pair| {
                assert_eq!((pair[0].liquidity, pair[1].liquidity), (Liquidity::Maker, Liquidity::Taker));
                assert_eq!(pair[0].trade_id, pair[1].trade_id);
                NaiveFill {
                    maker: pair[0].order_id,
                    taker: pair[1].order_id,
                    price: pair[0].price.raw(),
                    qty: pair[0].qty.raw(),
                }
            })
            .collect()
    }

    fn apply(&mut self, op: &Op) -> Result<(), TestCaseError> {
        self.out.clear();
        let mut fills = Vec::new();
        match *op {
            Op::Place { account, side, kind, price, qty } => {
                let base = PlaceParams::limit(self.perp, side, dec_amount(qty), dec_price(price));
                let params = match kind {
                    NaiveKind::Limit => base,
                    NaiveKind::Ioc => PlaceParams { time_in_force: TimeInForce::ImmediateOrCancel, ..base },
                    NaiveKind::Fok => PlaceParams { time_in_force: TimeInForce::FillOrKill, ..base },
                    NaiveKind::PostOnly => PlaceParams { post_only: true, ..base },
                    NaiveKind::PostOnlyReject => PlaceParams { post_only: true, reject_post_only: true, ..base },
                    NaiveKind::Market => PlaceParams { order_type: OrderType::Market, price: None, ..base },
                };
                let got = self.ex.handle(Utc(0), AccountId(account), Request::Place(params), &mut self.out);
                let id = match got {
                    Ok(ticktrade_exchange::Reply::Order(o)) => o.id,
                    _ => u64::MAX,
                };
                let want = self.naive.place(id, account, side, kind, price, qty, &mut fills);
                prop_assert_eq!(got.is_ok(), want.is_ok(), "{:?} {:?}", got, want);
                if id != u64::MAX {
                    self.ids.push(id);
                }
            }
            Op::Cancel { pick } => {
                if self.ids.is_empty() {
                    return Ok(());
                }
                let id = self.ids[pick % self.ids.len()];
                let account = self.ex.order(id).unwrap().account;
                let got = self.ex.handle(Utc(0), account, Request::Cancel { order_id: id }, &mut self.out);
                let want = self.naive.cancel(id);
                prop_assert_eq!(got.is_ok(), want.is_ok());
            }
            Op::Edit { pick, price_delta, qty } => {
                if self.ids.is_empty() {
                    return Ok(());
                }
                let id = self.ids[pick % self.ids.len()];
                let order = *self.ex.order(id).unwrap();
                if order.post_only || order.price.is_none() {
                    return Ok(());
                }
                let price = order.price.unwrap().raw() + price_delta;
                let amount = order.filled.raw() + qty;
                let edit = EditParams::new(id, dec_amount(amount), Some(dec_price(price)));
                let got = self.ex.handle(Utc(0), order.account, Request::Edit(edit), &mut self.out);
                let want = self.naive.edit(id, price, qty, &mut fills);
                prop_assert_eq!(got.is_ok(), want.is_ok(), "{:?} {:?}", got, want);
            }
        }
        prop_assert_eq!(self.engine_fills(), fills);
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        let book = self.ex.book(self.perp).unwrap();
        for side in [Side::Buy, Side::Sell] {
            let levels: Vec<_> = book.levels(side).map(|l| (l.price.raw(), l.qty.raw(), l.n_orders)).collect();
            prop_assert_eq!(&levels, &self.naive.levels(side));
            for &(price, _, _) in &levels {
                let queue: Vec<_> = book.orders_at(side, Price::from_raw(price)).map(|o| (o.id, o.qty.raw())).collect();
                prop_assert_eq!(queue, self.naive.queue(side, price));
            }
        }
        for account in 0..3u32 {
            let want = self.naive.positions.get(&account).copied().unwrap_or(0);
            prop_assert_eq!(self.ex.position(AccountId(account), self.perp).size, want);
        }
        // Every resting order is live in the engine with the right remaining size.
        for o in &self.naive.orders {
            let e = self.ex.order(o.id).unwrap();
            prop_assert_eq!(e.remaining(), Qty::from_raw(o.qty));
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    #[test]
    fn engine_matches_naive_reference(ops in prop::collection::vec(op(), 1..300)) {
        let mut pair = Pair::new();
        for op in &ops {
            pair.apply(op)?;
            pair.check()?;
        }
    }
}
