//! `L4Book` against a naive model: a `Vec` of orders in arrival order, scanned linearly.
//! Random add/remove/reduce/modify/update/fill streams must give the same L2 view, the same FIFO
//! queues and the same fills.

use proptest::prelude::*;
use ticktrade_book::l4::{L4Book, L4Level};
use ticktrade_core::{Price, Qty, Side};

#[derive(Clone, Debug)]
enum Op {
    Add {
        id: u64,
        side: Side,
        price: i64,
        qty: i64,
    },
    Remove {
        id: u64,
    },
    Reduce {
        id: u64,
        qty: i64,
    },
    Modify {
        id: u64,
        price: i64,
        qty: i64,
    },
    Update {
        id: u64,
        price: i64,
        qty: i64,
    },
    Fill {
        side: Side,
        qty: i64,
    },
    /// `warm` reads and changes nothing.
    Warm {
        ids: Vec<u64>,
    },
}

#[derive(Clone, Copy, Debug)]
struct ModelOrder {
    id: u64,
    side: Side,
    price: i64,
    qty: i64,
    payload: u64,
}

#[derive(Default)]
struct Model {
    /// Arrival order; an order that loses priority is moved to the end.
    orders: Vec<ModelOrder>,
}

impl Model {
    fn find(&self, id: u64) -> Option<usize> {
        self.orders.iter().position(|o| o.id == id)
    }

    fn levels(&self, side: Side) -> Vec<L4Level> {
        let mut prices: Vec<i64> = self.orders.iter().filter(|o| o.side == side).map(|o| o.price).collect();
        prices.sort_unstable();
        prices.dedup();
        if side == Side::Buy {
            prices.reverse();
        }
        prices
            .into_iter()
            .map(|price| {
                let at: Vec<_> = self.orders.iter().filter(|o| o.side == side && o.price == price).collect();
                L4Level {
                    price: Price::from_raw(price),
                    qty: Qty::from_raw(at.iter().map(|o| o.qty).sum()),
                    n_orders: at.len() as u32,
                }
            })
            .collect()
    }

    fn queue(&self, side: Side, price: i64) -> Vec<(u64, i64)> {
        self.orders.iter().filter(|o| o.side == side && o.price == price).map(|o| (o.id, o.qty)).collect()
    }

    /// (id, price, qty, remaining, payload) of a fill against the front of `side`.
    fn fill(&mut self, side: Side, qty: i64) -> Option<(u64, i64, i64, i64, u64)> {
        if qty <= 0 {
            return None;
        }
        let best = self.levels(side).first()?.price.raw();
        let idx = self.orders.iter().position(|o| o.side == side && o.price == best)?;
        let o = &mut self.orders[idx];
        let take = o.qty.min(qty);
        o.qty -= take;
        let out = (o.id, o.price, take, o.qty, o.payload);
        if o.qty == 0 {
            self.orders.remove(idx);
        }
        Some(out)
    }
}

fn side() -> impl Strategy<Value = Side> {
    prop_oneof![Just(Side::Buy), Just(Side::Sell)]
}

fn op() -> impl Strategy<Value = Op> {
    let id = 0u64..40;
    prop_oneof![
        4 => (id.clone(), side(), 90i64..110, 1i64..20).prop_map(|(id, side, price, qty)| Op::Add { id, side, price, qty }),
        1 => id.clone().prop_map(|id| Op::Remove { id }),
        1 => (id.clone(), 0i64..20).prop_map(|(id, qty)| Op::Reduce { id, qty }),
        1 => (id.clone(), 90i64..110, 0i64..20).prop_map(|(id, price, qty)| Op::Modify { id, price, qty }),
        1 => (id, 90i64..110, 0i64..20).prop_map(|(id, price, qty)| Op::Update { id, price, qty }),
        1 => (side(), 0i64..30).prop_map(|(side, qty)| Op::Fill { side, qty }),
        1 => prop::collection::vec(0u64..40, 0..6).prop_map(|ids| Op::Warm { ids }),
    ]
}

fn apply(book: &mut L4Book<u64>, model: &mut Model, op: &Op, n: u64) -> Result<(), TestCaseError> {
    match *op {
        Op::Add { id, side, price, qty } => {
            let got = book.add(id, side, Price::from_raw(price), Qty::from_raw(qty), n);
            prop_assert_eq!(got.is_ok(), model.find(id).is_none());
            if got.is_ok() {
                model.orders.push(ModelOrder { id, side, price, qty, payload: n });
            }
        }
        Op::Remove { id } => {
            let got = book.remove(id).map(|o| (o.id, o.side, o.price.raw(), o.qty.raw(), o.payload));
            let want =
                model.find(id).map(|i| model.orders.remove(i)).map(|o| (o.id, o.side, o.price, o.qty, o.payload));
            prop_assert_eq!(got, want);
        }
        Op::Reduce { id, qty } => {
            let got = book.reduce(id, Qty::from_raw(qty));
            match model.find(id) {
                None => prop_assert!(got.is_err()),
                Some(i) if qty > model.orders[i].qty => prop_assert!(got.is_err()),
                Some(i) if qty == 0 => {
                    prop_assert!(got.is_ok());
                    model.orders.remove(i);
                }
                Some(i) => {
                    prop_assert!(got.is_ok());
                    model.orders[i].qty = qty;
                }
            }
        }
        Op::Modify { id, price, qty } => {
            let got = book.modify(id, Price::from_raw(price), Qty::from_raw(qty));
            match model.find(id) {
                None => prop_assert!(got.is_err()),
                Some(i) => {
                    let o = model.orders[i];
                    let keep = o.price == price && qty <= o.qty;
                    prop_assert_eq!(got, Ok(keep));
                    if keep && qty > 0 {
                        model.orders[i].qty = qty;
                    } else {
                        model.orders.remove(i);
                        if qty > 0 {
                            model.orders.push(ModelOrder { price, qty, ..o });
                        }
                    }
                }
            }
        }
        Op::Update { id, price, qty } => {
            // Not above the current quantity: lowered in place at its own price (zero
            // removes); above it: to the back of the queue at `price`.
            let got = book.update(id, Price::from_raw(price), Qty::from_raw(qty));
            match model.find(id) {
                None => prop_assert!(got.is_err()),
                Some(i) => {
                    let o = model.orders[i];
                    prop_assert_eq!(got, Ok((o.side, Price::from_raw(o.price))));
                    if qty == 0 {
                        model.orders.remove(i);
                    } else if qty <= o.qty {
                        model.orders[i].qty = qty;
                    } else {
                        model.orders.remove(i);
                        model.orders.push(ModelOrder { price, qty, ..o });
                    }
                }
            }
        }
        Op::Fill { side, qty } => {
            let got = book
                .fill_front(side, Qty::from_raw(qty))
                .map(|f| (f.id, f.price.raw(), f.qty.raw(), f.remaining.raw(), f.payload));
            prop_assert_eq!(got, model.fill(side, qty));
        }
        Op::Warm { ref ids } => book.warm(ids.iter().copied()),
    }
    Ok(())
}

fn check_same(book: &L4Book<u64>, model: &Model) -> Result<(), TestCaseError> {
    prop_assert_eq!(book.len(), model.orders.len());
    for side in [Side::Buy, Side::Sell] {
        let levels = model.levels(side);
        prop_assert_eq!(book.levels(side).collect::<Vec<_>>(), levels.clone());
        prop_assert_eq!(book.depth(side), levels.len());
        prop_assert_eq!(book.best(side), levels.first().copied());
        for level in &levels {
            let queue: Vec<_> = book.orders_at(side, level.price).map(|o| (o.id, o.qty.raw())).collect();
            prop_assert_eq!(queue, model.queue(side, level.price.raw()));
        }
        let front = model
            .orders
            .iter()
            .find(|o| Some(o.side) == Some(side) && levels.first().map(|l| l.price.raw()) == Some(o.price));
        prop_assert_eq!(book.front(side).map(|o| o.id), front.map(|o| o.id));
    }
    for o in &model.orders {
        let got = book.get(o.id).map(|b| (b.side, b.price.raw(), b.qty.raw(), b.payload));
        prop_assert_eq!(got, Some((o.side, o.price, o.qty, o.payload)));
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn l4_book_matches_naive_model(ops in prop::collection::vec(op(), 0..400)) {
        let mut book = L4Book::<u64>::with_capacity(16, 8);
        let mut model = Model::default();
        for (n, op) in ops.iter().enumerate() {
            apply(&mut book, &mut model, op, n as u64)?;
            check_same(&book, &model)?;
        }
    }
}
