//! What moved each account's balances, and what each expiry settled: the records behind
//! Deribit's `private/get_transaction_log`, `private/get_settlement_history_by_*` and
//! `public/get_last_settlements_by_*`.
//!
//! Owns: `LedgerEntry` (one balance change of one account in one currency: a fill or a
//! delivery, with the balance and equity right after it), `Delivery` (one instrument's
//! expiry: its delivery price, index and open interest), and the two bounded rings that keep
//! them (`Config::history_len` entries each, oldest dropped).
//! Must not: grow past its capacity, allocate once the rings are full (entries are `Copy`,
//! written in place), or record the house accounts (margin-exempt: the synthetic market's
//! makers and takers), whose entries would evict every user's within seconds.
//!
//! The simulator has no deposits, transfers or funding, so a fill's `change` (realised PnL
//! minus fee; a spot fill moves both its coins) and a delivery's PnL are every change a
//! balance sees: each entry's `balance` is exact.

use std::collections::VecDeque;

use ticktrade_core::{InstrumentId, InstrumentKind, Price, Qty, Side, Utc};

use crate::catalogue::{CurrencyId, Instrument};
use crate::engine::Exchange;
use crate::money::Money;
use crate::order::{AccountId, Liquidity};

/// What changed the balance.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LedgerKind {
    /// A fill of one of the account's orders.
    Trade {
        trade_id: u64,
        order_id: u64,
        side: Side,
        price: Price,
        qty: Qty,
        liquidity: Liquidity,
        /// Signed position in lots before and after the fill (0 for spot).
        position_before: i64,
        position_after: i64,
    },
    /// The instrument expired and the position was settled at the delivery price.
    Delivery {
        /// Signed position in lots that was settled.
        position: i64,
        price: Money,
    },
}

/// One balance change of one account in one currency.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LedgerEntry {
    /// Increasing over all entries (Deribit's `id` and `user_seq`).
    pub seq: u64,
    pub account: AccountId,
    pub currency: CurrencyId,
    pub instrument: InstrumentId,
    pub timestamp: Utc,
    pub kind: LedgerKind,
    /// The balance change (PnL minus fee; for spot, the coin or its counter value).
    pub change: Money,
    pub fee: Money,
    /// Realised PnL of the entry (0 for spot).
    pub profit_loss: Money,
    /// Balance and equity (balance plus floating PnL of the currency's positions) right after.
    pub balance: Money,
    pub equity: Money,
    pub mark_price: Money,
    pub index_price: Money,
}

/// One instrument's expiry.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Delivery {
    pub instrument: InstrumentId,
    pub timestamp: Utc,
    /// The mark price the positions settled at.
    pub price: Money,
    pub index_price: Money,
    /// Sum of the long positions, in lots, before settlement.
    pub open_interest: i64,
    /// PnL the longs realised at delivery (the shorts realised its negative).
    pub profit_loss: Money,
}

/// The two rings.
#[derive(Debug, Default)]
pub(crate) struct Ledger {
    entries: VecDeque<LedgerEntry>,
    deliveries: VecDeque<Delivery>,
    next_seq: u64,
}

fn push_bounded<T>(ring: &mut VecDeque<T>, capacity: usize, item: T) {
    if capacity == 0 {
        return;
    }
    if ring.len() >= capacity {
        ring.pop_front();
    }
    ring.push_back(item);
}

impl Exchange {
    /// Records a balance change of a non-house account; fills in `seq`, balance and equity.
    pub(crate) fn record_ledger(&mut self, mut entry: LedgerEntry) {
        let Some(acc) = self.accounts.get(&entry.account) else { return };
        if acc.margin_exempt {
            return;
        }
        entry.balance = acc.balances.get(usize::from(entry.currency.0)).map_or(Money::ZERO, |b| b.balance);
        let mut floating = Money::ZERO;
        for pos in acc.positions.values().filter(|p| p.size != 0) {
            if let Some(inst) = self.catalogue.get(pos.instrument)
                && inst.settlement_currency == entry.currency
                && inst.spec.kind != InstrumentKind::Spot
            {
                floating += pos.floating_pnl(inst, self.mark_price(pos.instrument));
            }
        }
        entry.equity = entry.balance + floating;
        entry.seq = self.ledger.next_seq;
        self.ledger.next_seq += 1;
        let capacity = self.config.history_len;
        push_bounded(&mut self.ledger.entries, capacity, entry);
    }

    pub(crate) fn record_delivery(&mut self, delivery: Delivery) {
        let capacity = self.config.history_len;
        push_bounded(&mut self.ledger.deliveries, capacity, delivery);
    }

    /// The account's balance changes, oldest first (the last `Config::history_len` of all
    /// accounts are kept).
    pub fn ledger(&self, account: AccountId) -> impl DoubleEndedIterator<Item = &LedgerEntry> + '_ {
        self.ledger.entries.iter().filter(move |e| e.account == account)
    }

    /// Every expiry, oldest first.
    pub fn deliveries(&self) -> impl DoubleEndedIterator<Item = &Delivery> + '_ {
        self.ledger.deliveries.iter()
    }
}

/// The ledger entry of a fill (balance and equity are filled in by `record_ledger`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn trade_entry(
    inst: &Instrument,
    account: AccountId,
    currency: CurrencyId,
    now: Utc,
    kind: LedgerKind,
    change: Money,
    fee: Money,
    profit_loss: Money,
    marks: (Money, Money),
) -> LedgerEntry {
    LedgerEntry {
        seq: 0,
        account,
        currency,
        instrument: inst.spec.id,
        timestamp: now,
        kind,
        change,
        fee,
        profit_loss,
        balance: Money::ZERO,
        equity: Money::ZERO,
        mark_price: marks.0,
        index_price: marks.1,
    }
}
