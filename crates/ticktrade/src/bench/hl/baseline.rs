//! The baseline: per block, apply to plain per-coin order maps, clone every book, and
//! recompute and encode all seven L2 variants for every coin (what OBS does each block).

use std::collections::{BTreeMap, HashMap};
use std::hint::black_box;
use std::time::Instant;

use ticktrade_book::l4::L4Level;
use ticktrade_core::{Price, Qty, Side};
use ticktrade_hl_node::books::Books;
use ticktrade_hl_node::coins::CoinSpec;
use ticktrade_hl_node::l2::aggregate;
use ticktrade_hl_node::synth::GenBlock;
use ticktrade_hl_proto::node::{Batch, BookDiff, OrderStatus, RawBookDiff, is_bid};
use ticktrade_hl_proto::ws::{L2Variant, write_l2_frame};

type Orders = HashMap<u64, (bool, i64, i64)>;

pub struct Baseline {
    specs: Vec<CoinSpec>,
    index: HashMap<String, usize>,
    books: Vec<Orders>,
}

impl Baseline {
    pub fn new(books: &Books) -> Baseline {
        let mut specs = Vec::new();
        let mut index = HashMap::new();
        let mut orders = Vec::new();
        for (id, spec) in books.coins.iter() {
            index.insert(spec.name.clone(), specs.len());
            specs.push(spec.clone());
            let mut map = Orders::new();
            if let Some(book) = books.book(id) {
                for o in book.book.iter() {
                    map.insert(o.id, (o.side == Side::Buy, o.price.raw(), o.qty.raw()));
                }
            }
            orders.push(map);
        }
        Baseline { specs, index, books: orders }
    }

    /// Processes one block; returns its nanoseconds.
    pub fn block(&mut self, block: &GenBlock) -> anyhow::Result<u64> {
        let started = Instant::now();
        let statuses = Batch::parse(&block.statuses)?;
        let diffs = Batch::parse(&block.diffs)?;
        let statuses: Vec<OrderStatus<'_>> =
            statuses.events.iter().map(|e| serde_json::from_str(e.get())).collect::<Result<_, _>>()?;
        let diffs: Vec<BookDiff<'_>> =
            diffs.events.iter().map(|e| serde_json::from_str(e.get())).collect::<Result<_, _>>()?;
        black_box(&statuses);
        for d in &diffs {
            let Some(&c) = self.index.get(&*d.coin) else { continue };
            let spec = &self.specs[c];
            let px = spec.parse_px(d.px).map(Price::raw).unwrap_or(0);
            match d.raw_book_diff {
                RawBookDiff::New { sz } => {
                    let sz = spec.parse_sz(sz).map(Qty::raw).unwrap_or(0);
                    self.books[c].insert(d.oid, (is_bid(d.side.unwrap_or("B")).unwrap_or(true), px, sz));
                }
                RawBookDiff::Update { new_sz, .. } => {
                    if let Some(o) = self.books[c].get_mut(&d.oid) {
                        o.2 = spec.parse_sz(new_sz).map(Qty::raw).unwrap_or(0);
                    }
                }
                RawBookDiff::Remove => {
                    self.books[c].remove(&d.oid);
                }
            }
        }
        let cloned = self.books.clone();
        let (mut bids, mut asks, mut frame) = (Vec::new(), Vec::new(), Vec::new());
        for (c, orders) in cloned.iter().enumerate() {
            let mut sides: [BTreeMap<i64, (i64, u32)>; 2] = [BTreeMap::new(), BTreeMap::new()];
            for &(bid, px, sz) in orders.values() {
                let level = sides[usize::from(!bid)].entry(px).or_default();
                level.0 += sz;
                level.1 += 1;
            }
            let level = |(&px, &(sz, n)): (&i64, &(i64, u32))| L4Level {
                price: Price::from_raw(px),
                qty: Qty::from_raw(sz),
                n_orders: n,
            };
            for variant in L2Variant::ALL {
                aggregate(sides[0].iter().rev().map(level), true, variant, 20, &mut bids);
                aggregate(sides[1].iter().map(level), false, variant, 20, &mut asks);
                frame.clear();
                write_l2_frame(
                    &mut frame,
                    &self.specs[c].name,
                    block.time.as_millis() as u64,
                    self.specs[c].units,
                    &bids,
                    &asks,
                );
                black_box(&frame);
            }
        }
        Ok(started.elapsed().as_nanos() as u64)
    }
}
