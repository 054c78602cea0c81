//! Invariants over random request streams that include trigger orders, market_limit,
//! reduce-only, edits, cancels and mark/index moves on two instruments:
//! - the `book.*` events, applied to a shadow L2 book, reproduce the engine's book exactly,
//!   and `change_id`s chain (`prev_change_id` = the previous `change_id`);
//! - the book is never crossed; every resting order has an open record with the same size;
//! - positions sum to zero per instrument and open interest is the sum of longs;
//! - fills come in maker/taker pairs at prices within the taker's limit.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use std::collections::BTreeMap;

use proptest::prelude::*;
use ticktrade_core::{Decimal, InstrumentId, Price, Qty, Side, Utc};
use ticktrade_exchange::{
    AccountId, BookAction, Catalogue, CatalogueParams, Config, EditParams, Event, Exchange, Liquidity, Money,
    OrderFilter, OrderState, OrderType, PlaceParams, Request, TimeInForce, TriggerKind,
};

#[derive(Clone, Debug)]
enum Op {
    Place {
        inst: usize,
        account: u32,
        side: Side,
        order_type: OrderType,
        tif: u8,
        price: i64,
        lots: i64,
        reduce_only: bool,
        trigger: u8,
    },
    Cancel {
        pick: usize,
    },
    Edit {
        pick: usize,
        price_delta: i64,
        lots: i64,
    },
    CancelAll {
        account: u32,
    },
    Mark {
        inst: usize,
        price: i64,
    },
}

fn op() -> impl Strategy<Value = Op> {
    let side = prop_oneof![Just(Side::Buy), Just(Side::Sell)];
    let order_type = prop_oneof![
        8 => Just(OrderType::Limit),
        2 => Just(OrderType::Market),
        1 => Just(OrderType::MarketLimit),
        1 => Just(OrderType::StopLimit),
        1 => Just(OrderType::StopMarket),
        1 => Just(OrderType::TakeLimit),
        1 => Just(OrderType::TrailingStop),
    ];
    prop_oneof![
        8 => (0usize..2, 0u32..4, side, order_type, 0u8..4, -8i64..8, 1i64..6, prop::bool::weighted(0.1), 0u8..3).prop_map(
            |(inst, account, side, order_type, tif, price, lots, reduce_only, trigger)| Op::Place {
                inst, account, side, order_type, tif, price, lots, reduce_only, trigger
            }
        ),
        2 => any::<usize>().prop_map(|pick| Op::Cancel { pick }),
        2 => (any::<usize>(), -3i64..4, 1i64..6).prop_map(|(pick, price_delta, lots)| Op::Edit { pick, price_delta, lots }),
        1 => (0u32..4).prop_map(|account| Op::CancelAll { account }),
        1 => (0usize..2, -10i64..10).prop_map(|(inst, price)| Op::Mark { inst, price }),
    ]
}

struct World {
    ex: Exchange,
    insts: [InstrumentId; 2],
    /// Centre price in ticks per instrument.
    mid: [i64; 2],
    ids: Vec<u64>,
    shadow: BTreeMap<(u32, bool, i64), i64>,
    change_ids: BTreeMap<u32, u64>,
    out: Vec<Event>,
    now: i64,
}

impl World {
    fn new() -> World {
        let cat = Catalogue::builtin(CatalogueParams::default()).unwrap();
        let insts = [cat.lookup("BTC-PERPETUAL").unwrap(), cat.lookup("ETH_USDC-PERPETUAL").unwrap()];
        let config = Config {
            initial_balances: vec![
                ("BTC".into(), Money::from_int(1_000_000_000)),
                ("USDC".into(), Money::from_int(1_000_000_000_000)),
            ],
            ..Config::default()
        };
        World {
            ex: Exchange::new(cat, config),
            insts,
            mid: [100_000, 60_000],
            ids: Vec::new(),
            shadow: BTreeMap::new(),
            change_ids: BTreeMap::new(),
            out: Vec::new(),
            now: 1_767_254_400_000_000_000,
        }
    }

    fn price(&self, inst: usize, ticks: i64) -> Decimal {
        let spec = &self.ex.catalogue().get(self.insts[inst]).unwrap().spec;
        spec.price_to_decimal(Price::from_raw(ticks))
    }

    fn amount(&self, inst: usize, lots: i64) -> Decimal {
        let spec = &self.ex.catalogue().get(self.insts[inst]).unwrap().spec;
        spec.qty_to_decimal(Qty::from_raw(lots))
    }

    fn apply(&mut self, op: &Op) {
        self.now += 1_000_000_000;
        let now = Utc(self.now);
        self.out.clear();
        match *op {
            Op::Place { inst, account, side, order_type, tif, price, lots, reduce_only, trigger } => {
                let ticks = self.mid[inst] + price;
                let mut p =
                    PlaceParams::limit(self.insts[inst], side, self.amount(inst, lots), self.price(inst, ticks));
                p.order_type = order_type;
                p.reduce_only = reduce_only;
                p.time_in_force = [
                    TimeInForce::GoodTilCancelled,
                    TimeInForce::GoodTilDay,
                    TimeInForce::ImmediateOrCancel,
                    TimeInForce::FillOrKill,
                ][usize::from(tif)];
                if !order_type.needs_price() {
                    p.price = None;
                }
                if order_type.is_trigger() {
                    p.trigger = Some(
                        [TriggerKind::LastPrice, TriggerKind::MarkPrice, TriggerKind::IndexPrice][usize::from(trigger)],
                    );
                    p.trigger_price = Some(self.price(inst, ticks + side.sign() * 2));
                    if order_type == OrderType::TrailingStop {
                        p.trigger_price = None;
                        p.trigger_offset = Some(self.price(inst, 3));
                    }
                }
                if let Ok(ticktrade_exchange::Reply::Order(o)) =
                    self.ex.handle(now, AccountId(account), Request::Place(p), &mut self.out)
                {
                    self.ids.push(o.id);
                }
            }
            Op::Cancel { pick } if !self.ids.is_empty() => {
                let id = self.ids[pick % self.ids.len()];
                let account = self.ex.order(id).map_or(AccountId(0), |o| o.account);
                let _ = self.ex.handle(now, account, Request::Cancel { order_id: id }, &mut self.out);
            }
            Op::Edit { pick, price_delta, lots } if !self.ids.is_empty() => {
                let id = self.ids[pick % self.ids.len()];
                if let Some(o) = self.ex.order(id).copied() {
                    let inst = usize::from(o.instrument != self.insts[0]);
                    let price = o.price.map(|p| self.price(inst, p.raw() + price_delta));
                    let edit = EditParams::new(id, self.amount(inst, o.filled.raw() + lots), price);
                    let _ = self.ex.handle(now, o.account, Request::Edit(edit), &mut self.out);
                }
            }
            Op::CancelAll { account } => {
                let _ =
                    self.ex.handle(now, AccountId(account), Request::CancelAll(OrderFilter::default()), &mut self.out);
            }
            Op::Mark { inst, price } => {
                let value = self.price(inst, self.mid[inst] + price);
                self.ex.set_mark(now, self.insts[inst], value, &mut self.out);
                let index = self.ex.catalogue().get(self.insts[inst]).unwrap().index;
                self.ex.set_index(now, index, value, &mut self.out);
            }
            _ => {}
        }
    }

    fn check(&mut self) -> Result<(), TestCaseError> {
        // Book events reproduce the book; change ids chain.
        let mut pending = Vec::new();
        let mut last_taker: Option<(Liquidity, u64, Qty, Price)> = None;
        for e in &self.out {
            match e {
                Event::BookLevel(l) => {
                    let key = (l.instrument.0, l.side == Side::Buy, l.price.raw());
                    let existed = self.shadow.contains_key(&key);
                    match l.action {
                        BookAction::New => prop_assert!(!existed && l.qty.is_positive()),
                        BookAction::Change => prop_assert!(existed && l.qty.is_positive()),
                        BookAction::Delete => prop_assert!(existed && l.qty.is_zero()),
                    }
                    pending.push((key, l.qty.raw()));
                }
                Event::BookBatch(b) => {
                    let prev = self.change_ids.insert(b.instrument.0, b.change_id).unwrap_or(0);
                    prop_assert_eq!(b.prev_change_id, prev);
                    prop_assert_eq!(b.change_id, prev + 1);
                    for (key, qty) in pending.drain(..) {
                        prop_assert_eq!(key.0, b.instrument.0);
                        if qty == 0 {
                            self.shadow.remove(&key);
                        } else {
                            self.shadow.insert(key, qty);
                        }
                    }
                }
                Event::UserTrade(t) => match last_taker.take() {
                    None => {
                        prop_assert_eq!(t.liquidity, Liquidity::Maker);
                        last_taker = Some((t.liquidity, t.trade_id, t.qty, t.price));
                    }
                    Some((_, trade_id, qty, price)) => {
                        prop_assert_eq!(t.liquidity, Liquidity::Taker);
                        prop_assert_eq!((t.trade_id, t.qty, t.price), (trade_id, qty, price));
                        let taker = self.ex.order(t.order_id).unwrap();
                        if let Some(limit) = taker.price
                            && taker.original_order_type.is_none()
                        {
                            prop_assert!(t.side.crosses(limit, t.price));
                        }
                    }
                },
                _ => {}
            }
        }
        prop_assert!(pending.is_empty(), "book levels without a closing batch");
        prop_assert!(last_taker.is_none(), "a maker trade without its taker");
        for (i, &inst) in self.insts.iter().enumerate() {
            let book = self.ex.book(inst).unwrap();
            for side in [Side::Buy, Side::Sell] {
                let ours: Vec<_> = book.levels(side).map(|l| (l.price.raw(), l.qty.raw())).collect();
                let mut shadow: Vec<_> = self
                    .shadow
                    .iter()
                    .filter(|((n, buy, _), _)| *n == inst.0 && *buy == (side == Side::Buy))
                    .map(|((_, _, p), q)| (*p, *q))
                    .collect();
                if side == Side::Buy {
                    shadow.reverse();
                }
                prop_assert_eq!(ours, shadow, "instrument {}", i);
            }
            if let (Some(bid), Some(ask)) = (book.best_price(Side::Buy), book.best_price(Side::Sell)) {
                prop_assert!(bid < ask, "crossed book");
            }
            for resting in book.iter() {
                let o = self.ex.order(resting.id).unwrap();
                prop_assert_eq!(o.state, OrderState::Open);
                prop_assert_eq!(o.remaining(), resting.qty);
                prop_assert!(o.filled <= o.amount);
            }
            let sizes: Vec<i64> = (0..4).map(|a| self.ex.position(AccountId(a), inst).size).collect();
            prop_assert_eq!(sizes.iter().sum::<i64>(), 0);
            let longs: i64 = sizes.iter().filter(|s| **s > 0).sum();
            prop_assert_eq!(self.ex.ticker(inst).unwrap().open_interest, longs);
        }
        for o in self.ex.open_orders(AccountId(0), OrderFilter::default()) {
            prop_assert!(o.state.is_live());
            if o.state == OrderState::Untriggered {
                prop_assert!(!self.ex.book(o.instrument).unwrap().contains(o.id));
            }
        }
        Ok(())
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn engine_invariants_hold(ops in prop::collection::vec(op(), 1..250)) {
        let mut world = World::new();
        for op in &ops {
            world.apply(op);
            world.check()?;
        }
    }
}
