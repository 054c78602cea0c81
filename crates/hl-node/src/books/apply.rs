//! Applying one raw book diff to one coin's L4 book, and what each resting order keeps.
//!
//! Owns: the apply rules of REFERENCE §3.1 for a single diff (diff `px` and `sz` are
//! authoritative; any `open`/`triggered` status may rest, the `new` diff decides; triggered and
//! Ioc residuals rest as `Gtc`) and the touched-price bookkeeping the L2 skip rule reads.
//! Must not: see other coins or the block as a whole (`Books::plan_block`/`apply_coin` do):
//! one coin's diffs can then be applied on any thread.

use std::borrow::Cow;

use rustc_hash::FxHashMap;

use ticktrade_book::l4::L4Book;
use ticktrade_core::Side;
use ticktrade_hl_proto::node::{BookDiff, NodeOrder, OrderStatus, RawBookDiff, is_bid};

use super::{ApplyError, Touched};
use crate::coins::CoinSpec;

/// What an order on the book keeps besides id, side, price and size.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderMeta {
    pub user: Box<str>,
    pub timestamp: u64,
    pub trigger_condition: Cow<'static, str>,
    pub is_position_tpsl: bool,
    pub reduce_only: bool,
    pub order_type: Cow<'static, str>,
    pub tif: Option<Cow<'static, str>>,
    pub cloid: Option<Box<str>>,
}

/// The values `triggerCondition`, `orderType` and `tif` take on almost every order
/// (REFERENCE §1.4), kept without an allocation per order; anything else is copied.
const COMMON_WORDS: [&str; 15] = [
    "N/A",
    "Triggered",
    "Limit",
    "Market",
    "Stop Market",
    "Stop Limit",
    "Take Profit Market",
    "Take Profit Limit",
    "Gtc",
    "Alo",
    "Ioc",
    "FrontendMarket",
    "LiquidationMarket",
    "Vault",
    "Scale",
];

#[inline]
fn word(text: &str) -> Cow<'static, str> {
    match COMMON_WORDS.iter().find(|w| **w == text) {
        Some(w) => Cow::Borrowed(w),
        None => Cow::Owned(text.to_owned()),
    }
}

impl OrderMeta {
    pub(super) fn from_node(user: &str, order: &NodeOrder<'_>) -> OrderMeta {
        OrderMeta {
            user: user.into(),
            timestamp: order.timestamp,
            trigger_condition: word(&order.trigger_condition),
            is_position_tpsl: order.is_position_tpsl,
            reduce_only: order.reduce_only,
            order_type: word(&order.order_type),
            tif: order.tif.map(word),
            cloid: order.cloid.map(Into::into),
        }
    }
}

pub(super) fn apply_diff(
    spec: &CoinSpec,
    book: &mut L4Book<OrderMeta>,
    touched: &mut Touched,
    diff: &BookDiff<'_>,
    statuses: &[OrderStatus<'_>],
    resting: &FxHashMap<u64, u32>,
) -> Result<(), ApplyError> {
    let name = || spec.name.clone();
    let px = spec.parse_px(diff.px).ok_or_else(|| ApplyError::BadNumber { coin: name(), oid: diff.oid })?;
    let book_err = |source| ApplyError::Book { coin: spec.name.clone(), source };
    match diff.raw_book_diff {
        RawBookDiff::New { sz } => {
            let sz = spec.parse_sz(sz).ok_or_else(|| ApplyError::BadNumber { coin: name(), oid: diff.oid })?;
            let status = resting
                .get(&diff.oid)
                .and_then(|&i| statuses.get(i as usize))
                .ok_or_else(|| ApplyError::MissingStatus { coin: name(), oid: diff.oid })?;
            let side_text = diff.side.unwrap_or(status.order.side);
            let side = match is_bid(side_text) {
                Some(true) => Side::Buy,
                Some(false) => Side::Sell,
                None => return Err(ApplyError::BadSide { coin: name(), oid: diff.oid }),
            };
            let mut meta = OrderMeta::from_node(status.user, &status.order);
            if status.order.is_trigger || status.status == "triggered" {
                meta.trigger_condition = Cow::Borrowed("Triggered");
                meta.tif = Some(Cow::Borrowed("Gtc"));
                if let Ok(t) = ticktrade_hl_proto::time::parse_node_time(status.time) {
                    meta.timestamp = t.as_millis() as u64;
                }
            } else if status.order.tif == Some("Ioc") {
                meta.tif = Some(Cow::Borrowed("Gtc"));
            }
            if sz.is_zero() {
                return Ok(());
            }
            touched.add(side, px.raw());
            book.add(diff.oid, side, px, sz, meta).map_err(book_err)
        }
        RawBookDiff::Update { new_sz, .. } => {
            let sz = spec.parse_sz(new_sz).ok_or_else(|| ApplyError::BadNumber { coin: name(), oid: diff.oid })?;
            // The level the order rests at, and the diff's price if it moves there.
            if let Some(order) = book.get(diff.oid) {
                touched.add(order.side, order.price.raw());
                touched.add(order.side, px.raw());
            }
            match book.reduce(diff.oid, sz) {
                Ok(()) => Ok(()),
                Err(ticktrade_book::l4::L4Error::Increase) => {
                    book.modify(diff.oid, px, sz).map(|_| ()).map_err(book_err)
                }
                Err(e) => Err(book_err(e)),
            }
        }
        RawBookDiff::Remove => match book.remove(diff.oid) {
            Some(order) => {
                touched.add(order.side, order.price.raw());
                Ok(())
            }
            None => Err(book_err(ticktrade_book::l4::L4Error::UnknownId(diff.oid))),
        },
    }
}
