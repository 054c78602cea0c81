//! `L4Book` allocates nothing in steady state once its capacity is reached.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use ticktrade_book::l4::L4Book;
use ticktrade_core::{Price, Qty, Side};

#[global_allocator]
static ALLOC: ticktrade_testkit::CountingAlloc = ticktrade_testkit::CountingAlloc::new();

/// Adds, reduces, modifies, fills and removes orders over 500 levels per side.
fn churn(book: &mut L4Book<u32>, next_id: &mut u64, rounds: u64) {
    for r in 0..rounds {
        let id = *next_id;
        *next_id += 1;
        let (side, price) = if r % 2 == 0 {
            (Side::Buy, 1_000 - (r / 2 * 7919) % 500)
        } else {
            (Side::Sell, 1_001 + (r / 2 * 104_729) % 500)
        };
        let price = Price::from_raw(price as i64);
        book.add(id, side, price, Qty::from_raw(1 + (r % 9) as i64), r as u32).unwrap();
        // Orders live at most 2 000 rounds: the book stays under its capacity.
        book.remove(id.saturating_sub(2_000));
        match r % 5 {
            0 => {
                book.remove(id.saturating_sub(50));
                book.remove(id.saturating_sub(51));
            }
            1 => {
                let _ = book.reduce(id.saturating_sub(30), Qty::from_raw(1));
            }
            2 => {
                let _ = book.modify(id.saturating_sub(40), price, Qty::from_raw(12));
            }
            _ => {
                book.fill_front(side.opposite(), Qty::from_raw(20));
            }
        }
    }
}

#[test]
fn steady_state_allocates_nothing() {
    let mut book = L4Book::<u32>::with_capacity(16_384, 1_024);
    let mut next_id = 1;
    churn(&mut book, &mut next_id, 20_000);
    assert!(
        book.depth(Side::Buy) > 150 && book.depth(Side::Sell) > 150,
        "{} {} {}",
        book.depth(Side::Buy),
        book.depth(Side::Sell),
        book.len()
    );
    let n = ALLOC.count_in(|| churn(&mut book, &mut next_id, 50_000));
    assert_eq!(n, 0);
}
