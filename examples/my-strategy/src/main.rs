//! `my-strategy`: a strategy of your own, run by ticktrade's live session exactly as
//! `ticktrade run` runs the built-in ones: the same command line (`--venue`, `--config`,
//! `--dry-run`, `--flatten`, `--report` …), the embedded simulator by default, risk checks,
//! journal, status line, kill switch and final report.
//!
//!     cargo run --release -p my-strategy -- --config examples/my-strategy/my-strategy.toml
//!
//! The strategy keeps one post-only bid `ticks_under` ticks under the best bid, follows the
//! bid with edits, and stops buying at `max_position` (the example of docs/STRATEGIES.md, with
//! its parameters read from the config's `[custom]` table).

use std::process::ExitCode;

use anyhow::{Context as _, anyhow};
use ticktrade_book::L2Book;
use ticktrade_core::{Decimal, InstrumentId, Qty, Side};
use ticktrade_strategy::{Blocked, Context, Label, Order, OrderEvent, OrderRequest, Setup, Strategy};

/// One bid under the best bid until the position reaches `max`.
struct UnderBid {
    instrument: InstrumentId,
    size: Qty,
    max: Qty,
    ticks_under: i64,
    live: Option<Label>,
    last_blocked: Option<Blocked>,
}

impl Strategy for UnderBid {
    fn on_book(&mut self, ctx: &mut Context<'_>, instrument: InstrumentId, book: &L2Book) {
        if instrument != self.instrument {
            return;
        }
        let Some(best) = book.best_bid() else { return };
        let price = best.price.offset(-self.ticks_under);
        let room = self.max.raw() - ctx.position(instrument).raw();
        let live = self.live.and_then(|l| ctx.order(&l).copied()).filter(|o| o.status.is_live());
        let result = match live {
            _ if room <= 0 => match live {
                Some(order) if !order.pending_cancel => ctx.cancel(order.label),
                _ => Ok(()),
            },
            None => {
                let mut order = OrderRequest::limit(instrument, Side::Buy, price, self.size);
                order.post_only = true;
                ctx.place(order).map(|label| self.live = Some(label))
            }
            // Move it only once the venue has it and no other request is in flight.
            Some(order) if order.price != price && order.pending_edit.is_none() && !order.pending_cancel => {
                ctx.edit(order.label, price, order.qty)
            }
            Some(_) => Ok(()),
        };
        if let Err(why) = result {
            self.last_blocked = Some(why);
        }
    }

    fn on_order(&mut self, _ctx: &mut Context<'_>, order: &Order, _event: OrderEvent) {
        if order.status.is_terminal() && self.live == Some(order.label) {
            self.live = None;
        }
    }
}

/// Builds the strategy from the checked configuration: its `[custom]` table, in the units of
/// the instrument it names.
fn build(setup: &Setup) -> anyhow::Result<UnderBid> {
    let custom = setup.custom.as_ref().ok_or_else(|| anyhow!("the config has no [custom] table"))?;
    // `custom.instrument` was checked against the venue's list: it is instrument 0.
    let spec = setup.specs.first().context("no instrument")?;
    let amount = |key: &str| -> anyhow::Result<Qty> {
        let text = custom.get(key).and_then(|v| v.as_str()).with_context(|| format!("custom.{key}: missing"))?;
        let value = Decimal::parse(text).map_err(|e| anyhow!("custom.{key}: {e}"))?;
        spec.qty_from_decimal(value).map_err(|e| anyhow!("custom.{key}: {value} for {}: {e}", spec.name))
    };
    let ticks_under = custom.get("ticks_under").and_then(|v| v.as_integer()).unwrap_or(1);
    if ticks_under < 0 {
        return Err(anyhow!("custom.ticks_under: must not be negative, got {ticks_under}"));
    }
    Ok(UnderBid {
        instrument: spec.id,
        size: amount("amount")?,
        max: amount("max_position")?,
        ticks_under,
        live: None,
        last_blocked: None,
    })
}

fn main() -> ExitCode {
    ticktrade::run::main_with(build)
}
