//! Order management: the state of our orders, fills and positions, merged from RPC results and
//! from `user.orders` / `user.trades` / `user.changes` notifications that may arrive in any
//! order and more than once.
//!
//! Owns: `OrderTracker` — orders by id and by client label, fills by trade id, positions.
//! Must not: do I/O or read a clock. Callers feed it values.
//!
//! Why it converges: each order keeps the "greatest" report under a total order — terminal
//! beats live, more filled beats less, later `updated_ms` beats earlier, then a deterministic
//! tie-break on the content. Taking a maximum is commutative, associative and idempotent, so
//! any permutation of any multiset of the same reports ends in the same state (property test
//! below). Fills are a set keyed by trade id, so duplicates cannot double a position.

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};

use ticktrade_core::{Decimal, Side};

use crate::venue::{Fill, OrderView, PositionView};

/// Our orders, fills and positions.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderTracker {
    orders: BTreeMap<String, OrderView>,
    by_label: HashMap<String, String>,
    fills: BTreeMap<String, Fill>,
    positions: BTreeMap<String, PositionView>,
}

/// The total order that decides which of two reports of one order is newer.
fn precedence(a: &OrderView, b: &OrderView) -> Ordering {
    a.status
        .is_terminal()
        .cmp(&b.status.is_terminal())
        .then(a.filled.cmp(&b.filled))
        .then(a.updated_ms.cmp(&b.updated_ms))
        .then(a.status.cmp(&b.status))
        .then(a.amount.cmp(&b.amount))
        .then(a.price.cmp(&b.price))
        .then(a.average_price.cmp(&b.average_price))
        .then(a.trigger_price.cmp(&b.trigger_price))
        .then(a.label.cmp(&b.label))
        .then(a.order_type.cmp(&b.order_type))
}

impl OrderTracker {
    pub fn new() -> OrderTracker {
        OrderTracker::default()
    }

    /// Merges one report of an order. Returns true if the kept state changed.
    pub fn apply_order(&mut self, report: OrderView) -> bool {
        if !report.label.is_empty() {
            self.by_label.insert(report.label.clone(), report.order_id.clone());
        }
        match self.orders.get_mut(&report.order_id) {
            Some(current) if precedence(&report, current) == Ordering::Greater => {
                *current = report;
                true
            }
            Some(_) => false,
            None => {
                self.orders.insert(report.order_id.clone(), report);
                true
            }
        }
    }

    /// Records a fill once; returns false for a duplicate.
    pub fn apply_fill(&mut self, fill: Fill) -> bool {
        if self.fills.contains_key(&fill.trade_id) {
            return false;
        }
        self.fills.insert(fill.trade_id.clone(), fill);
        true
    }

    /// Replaces the venue's view of one position (from `user.changes` or a query).
    pub fn apply_position(&mut self, position: PositionView) {
        self.positions.insert(position.instrument.clone(), position);
    }

    /// Replaces all positions with a fresh query result (reconciliation).
    pub fn reset_positions(&mut self, positions: impl IntoIterator<Item = PositionView>) {
        self.positions = positions.into_iter().map(|p| (p.instrument.clone(), p)).collect();
    }

    pub fn order(&self, order_id: &str) -> Option<&OrderView> {
        self.orders.get(order_id)
    }

    pub fn order_by_label(&self, label: &str) -> Option<&OrderView> {
        self.by_label.get(label).and_then(|id| self.orders.get(id))
    }

    /// Orders we believe are live (open or untriggered), by id.
    pub fn live_orders(&self) -> impl Iterator<Item = &OrderView> {
        self.orders.values().filter(|o| !o.status.is_terminal())
    }

    pub fn orders(&self) -> impl Iterator<Item = &OrderView> {
        self.orders.values()
    }

    pub fn fills(&self) -> impl Iterator<Item = &Fill> {
        self.fills.values()
    }

    pub fn positions(&self) -> impl Iterator<Item = &PositionView> {
        self.positions.values()
    }

    /// Net signed amount filled on `instrument`, from our own fills (order-independent).
    pub fn net_filled(&self, instrument: &str) -> Decimal {
        self.fills.values().filter(|f| f.instrument == instrument).fold(Decimal::ZERO, |acc, f| {
            let signed = match f.side {
                Side::Buy => f.amount,
                Side::Sell => Decimal::new(-f.amount.mantissa(), f.amount.scale()).unwrap_or(Decimal::ZERO),
            };
            acc.checked_add(signed).unwrap_or(acc)
        })
    }

    /// After a reconnect: `venue_open` is the venue's full list of open orders. Returns the
    /// ids we believed live that the venue no longer lists; the caller asks for their final
    /// state (filled or cancelled while we were away) and feeds it back.
    pub fn reconcile_open(&mut self, venue_open: Vec<OrderView>) -> Vec<String> {
        let listed: std::collections::HashSet<String> = venue_open.iter().map(|o| o.order_id.clone()).collect();
        for order in venue_open {
            self.apply_order(order);
        }
        self.live_orders().filter(|o| !listed.contains(&o.order_id)).map(|o| o.order_id.clone()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::venue::OrderStatus;
    use proptest::prelude::*;

    fn dec(n: i64) -> Decimal {
        Decimal::from_int(n)
    }

    fn order(id: &str, status: OrderStatus, filled: i64, updated_ms: i64, price: i64) -> OrderView {
        OrderView {
            order_id: id.to_owned(),
            label: format!("L{id}"),
            instrument: "BTC-PERPETUAL".to_owned(),
            side: Side::Buy,
            order_type: "limit".to_owned(),
            status,
            amount: dec(100),
            filled: dec(filled),
            price: Some(dec(price)),
            average_price: Decimal::ZERO,
            time_in_force: "good_til_cancelled".to_owned(),
            post_only: false,
            reduce_only: false,
            trigger_price: None,
            created_ms: 1,
            updated_ms,
        }
    }

    fn fill(trade: u32, side: Side, amount: i64) -> Fill {
        Fill {
            trade_id: format!("T{trade}"),
            order_id: "1".to_owned(),
            instrument: "BTC-PERPETUAL".to_owned(),
            side,
            price: dec(50_000),
            amount: dec(amount),
            fee: Decimal::ZERO,
            fee_currency: "BTC".to_owned(),
            liquidity: "T".to_owned(),
            timestamp_ms: i64::from(trade),
        }
    }

    /// A realistic history of one order: open, edits, partial fills, then maybe a terminal
    /// state. Each step has a later timestamp than the one before.
    fn history() -> impl Strategy<Value = Vec<OrderView>> {
        (prop::collection::vec((0u8..3, 1i64..20), 0..8), 0u8..3).prop_map(|(steps, end)| {
            let mut out = vec![order("1", OrderStatus::Open, 0, 1, 100)];
            let (mut filled, mut price, mut ts) = (0i64, 100i64, 1i64);
            for (kind, n) in steps {
                ts += 1;
                match kind {
                    0 => price += n,
                    _ => filled = (filled + n).min(99),
                }
                out.push(order("1", OrderStatus::Open, filled, ts, price));
            }
            ts += 1;
            match end {
                0 => out.push(order("1", OrderStatus::Cancelled, filled, ts, price)),
                1 => out.push(order("1", OrderStatus::Filled, 100, ts, price)),
                _ => {}
            }
            out
        })
    }

    proptest! {
        #[test]
        fn any_order_and_duplicates_converge(
            hist in history(),
            picks in prop::collection::vec(any::<prop::sample::Index>(), 0..30),
            seed in any::<u64>(),
        ) {
            // In-order model: the last report is the truth.
            let truth = hist.last().cloned().unwrap();
            // Every report at least once, plus duplicates, shuffled.
            let mut reports = hist.clone();
            reports.extend(picks.iter().map(|i| hist[i.index(hist.len())].clone()));
            let mut state = seed | 1;
            for i in (1..reports.len()).rev() {
                state ^= state << 13; state ^= state >> 7; state ^= state << 17;
                reports.swap(i, (state % (i as u64 + 1)) as usize);
            }
            let mut tracker = OrderTracker::new();
            for report in reports {
                tracker.apply_order(report);
            }
            prop_assert_eq!(tracker.order("1"), Some(&truth));
            prop_assert_eq!(tracker.order_by_label("L1").map(|o| o.order_id.as_str()), Some("1"));
        }

        #[test]
        fn duplicate_fills_never_double_a_position(
            fills in prop::collection::vec((0u32..20, any::<bool>(), 1i64..50), 0..40),
        ) {
            // Same trade id ⇒ same fill (the venue never reuses one).
            let mut model: BTreeMap<u32, i64> = BTreeMap::new();
            let mut tracker = OrderTracker::new();
            for (id, _, _) in &fills {
                let (_, buy, amount) = fills.iter().find(|f| f.0 == *id).copied().unwrap();
                let signed = if buy { amount } else { -amount };
                model.insert(*id, signed);
                tracker.apply_fill(fill(*id, if buy { Side::Buy } else { Side::Sell }, amount));
            }
            let expected: i64 = model.values().sum();
            prop_assert_eq!(tracker.net_filled("BTC-PERPETUAL"), dec(expected));
        }
    }

    #[test]
    fn terminal_state_is_absorbing_and_reconcile_reports_missing() {
        let mut tracker = OrderTracker::new();
        assert!(tracker.apply_order(order("1", OrderStatus::Open, 0, 1, 100)));
        assert!(tracker.apply_order(order("1", OrderStatus::Cancelled, 0, 5, 100)));
        assert!(!tracker.apply_order(order("1", OrderStatus::Open, 0, 9, 101)), "late open after cancel");
        assert_eq!(tracker.order("1").map(|o| o.status), Some(OrderStatus::Cancelled));

        tracker.apply_order(order("2", OrderStatus::Open, 0, 1, 100));
        tracker.apply_order(order("3", OrderStatus::Open, 0, 1, 100));
        let missing = tracker.reconcile_open(vec![order("3", OrderStatus::Open, 10, 2, 100)]);
        assert_eq!(missing, vec!["2".to_owned()]);
        assert_eq!(tracker.order("3").map(|o| o.filled), Some(dec(10)));
        assert_eq!(tracker.live_orders().count(), 2);
    }
}
