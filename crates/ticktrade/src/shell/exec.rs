//! What each shell command does: venue calls through the `Venue` trait, results as tables.
//!
//! Owns: local validation (instrument known, price on the tick grid, amount a multiple of
//! the lot) before anything is sent, and recording order-path latencies.
//! Must not: touch a wire format.

use ticktrade_core::{Decimal, Side};
use ticktrade_latency::{Histogram, Percentiles};

use super::command::{COMMANDS, Command, ORDER_OPTIONS, ORDER_USAGE};
use super::output::{Output, Table, micros};
use super::{Flow, Shell, ShellError};
use ticktrade_gateway::venue::{
    CancelScope, EditRequest, Fill, Filter, OrderRef, OrderRequest, OrderView, Placed, Subscription, Venue, VenueError,
};

fn opt(value: Option<Decimal>) -> String {
    value.map(|v| v.to_string()).unwrap_or_default()
}

fn side(side: Side) -> String {
    side.as_str().to_owned()
}

/// An instrument (a known name, or one shaped like `BTC-PERPETUAL` or `BTC_USDC`) or a
/// currency (`btc`, `ETH`).
fn filter_of(
    arg: Option<&str>,
    known: &std::collections::BTreeMap<String, ticktrade_gateway::venue::InstrumentInfo>,
) -> Filter {
    match arg {
        None => Filter::All,
        Some(a) if known.contains_key(a) || a.contains(['-', '_']) => Filter::Instrument(a.to_owned()),
        Some(a) => Filter::Currency(a.to_uppercase()),
    }
}

fn orders_table(orders: &[OrderView]) -> Table {
    let mut table = Table::new(&[
        "order_id",
        "label",
        "instrument",
        "side",
        "type",
        "state",
        "price",
        "amount",
        "filled",
        "avg_price",
    ]);
    for o in orders {
        table.push(vec![
            o.order_id.clone(),
            o.label.clone(),
            o.instrument.clone(),
            side(o.side),
            o.order_type.clone(),
            o.status.as_str().to_owned(),
            o.price.map(|p| p.to_string()).unwrap_or_else(|| "market".into()),
            o.amount.to_string(),
            o.filled.to_string(),
            o.average_price.to_string(),
        ]);
    }
    table
}

fn fills_table(fills: &[Fill]) -> Table {
    let mut table = Table::new(&["trade_id", "order_id", "instrument", "side", "price", "amount", "fee", "liquidity"]);
    for f in fills {
        table.push(vec![
            f.trade_id.clone(),
            f.order_id.clone(),
            f.instrument.clone(),
            side(f.side),
            f.price.to_string(),
            f.amount.to_string(),
            format!("{} {}", f.fee, f.fee_currency),
            f.liquidity.clone(),
        ]);
    }
    table
}

fn percentile_row(name: &str, h: &Histogram) -> Vec<String> {
    let p = Percentiles::from_histogram(h);
    vec![name.to_owned(), p.count.to_string(), micros(p.p50), micros(p.p90), micros(p.p99), micros(p.max)]
}

impl<V: Venue> Shell<V> {
    /// Checks an order against the instrument's spec (when known) before sending it.
    fn validate(&self, instrument: &str, amount: Decimal, price: Option<Decimal>) -> Result<(), ShellError> {
        let Some(info) = self.instruments.get(instrument) else {
            if self.instruments.is_empty() {
                return Ok(()); // list not loaded: let the venue decide
            }
            return Err(ShellError::Invalid(format!("unknown instrument {instrument}")));
        };
        if let Some(price) = price {
            info.spec.price_from_decimal(price).map_err(|_| {
                ShellError::Invalid(format!("price {price} is not on {instrument}'s tick grid ({})", info.tick_size))
            })?;
        }
        info.spec.qty_from_decimal(amount).map_err(|_| {
            ShellError::Invalid(format!(
                "amount {amount} is not a multiple of {instrument}'s step ({})",
                info.spec.qty_unit
            ))
        })?;
        Ok(())
    }

    /// An order id, or a label the session knows (from `orders`/placed orders).
    fn order_ref(&self, text: &str, known_labels: &[String]) -> OrderRef {
        match text.strip_prefix("label=") {
            Some(label) => OrderRef::Label(label.to_owned()),
            None if known_labels.iter().any(|l| l == text) => OrderRef::Label(text.to_owned()),
            None => OrderRef::Id(text.to_owned()),
        }
    }

    async fn known_labels(&self) -> Vec<String> {
        match self.venue.open_orders(Filter::All).await {
            Ok(orders) => orders.into_iter().map(|o| o.label).filter(|l| !l.is_empty()).collect(),
            Err(_) => Vec::new(),
        }
    }

    fn placed(&mut self, command: &str, placed: Placed) -> Output {
        self.latencies.record(&placed.timing);
        let o = &placed.order;
        let message = format!(
            "{} {} {} @ {} → order {} {} (filled {})",
            o.instrument,
            side(o.side),
            o.amount,
            o.price.map(|p| p.to_string()).unwrap_or_else(|| "market".into()),
            o.order_id,
            o.status.as_str(),
            o.filled
        );
        let table =
            if placed.fills.is_empty() { orders_table(std::slice::from_ref(o)) } else { fills_table(&placed.fills) };
        Output { command: command.to_owned(), message: Some(message), table: Some(table), latency: Some(placed.timing) }
    }

    /// Runs one parsed command.
    pub async fn execute(&mut self, command: Command) -> Result<(Output, Flow), ShellError> {
        let output = match command {
            Command::Help(topic) => self.help(topic)?,
            Command::Status => self.status()?,
            Command::Instruments { currency, kind } => self.instruments(currency, kind).await?,
            Command::Book { instrument, depth } => self.book(instrument, depth).await?,
            Command::Ticker(instrument) => self.ticker(instrument).await?,
            Command::Order(cmd) => self.order(cmd).await?,
            Command::Edit { order, amount, price } => self.edit(order, amount, price).await?,
            Command::Cancel(order) => self.cancel(order).await?,
            Command::CancelAll(scope) => self.cancel_all(scope).await?,
            Command::Orders(filter) => self.orders(filter).await?,
            Command::OrderState(id) => self.order_state(id).await?,
            Command::Positions(currency) => self.positions(currency).await?,
            Command::Account(currency) => self.account(currency).await?,
            Command::Trades(instrument) => self.trades(instrument).await?,
            Command::Sub(subs) => self.sub(subs).await?,
            Command::Unsub(subs) => self.unsub(subs).await?,
            Command::Watch(instrument) => {
                // Scripts get one frame of the ladder; the terminal front end redraws it live.
                self.book(instrument, 10).await?
            }
            Command::Latency => self.latency()?,
            Command::Logout => {
                self.venue.logout().await?;
                return Ok((Output::message("logout", "logged out"), Flow::Quit));
            }
            Command::Quit => return Ok((Output::message("quit", "bye"), Flow::Quit)),
        };
        Ok((output, Flow::Continue))
    }

    fn help(&mut self, topic: Option<String>) -> Result<Output, ShellError> {
        let mut table = Table::new(&["command", "what it does"]);
        for (name, usage, what) in COMMANDS {
            if topic.as_deref().is_none_or(|t| t == *name) {
                table.push(vec![(*usage).to_owned(), (*what).to_owned()]);
            }
        }
        if table.rows.is_empty() {
            return Err(ShellError::Invalid(format!("no command {:?}", topic.unwrap_or_default())));
        }
        let mut out = Output::table("help", table);
        if matches!(topic.as_deref(), Some("buy" | "sell")) {
            for (option, what) in ORDER_OPTIONS {
                out.table.get_or_insert_default().push(vec![format!("  {option}"), (*what).to_owned()]);
            }
            out.message = Some(ORDER_USAGE.to_owned());
        }
        Ok(out)
    }

    fn status(&mut self) -> Result<Output, ShellError> {
        let info = self.venue.info();
        let mut table = Table::new(&["field", "value"]);
        let subs: Vec<String> = info.subscriptions.iter().map(ToString::to_string).collect();
        for (k, v) in [
            ("venue", info.venue),
            ("endpoint", info.endpoint),
            ("state", format!("{:?}", info.state).to_lowercase()),
            ("authenticated", info.authenticated.to_string()),
            ("connects", info.connects.to_string()),
            ("subscriptions", subs.join(" ")),
            ("stale_books", info.stale_books.join(" ")),
            ("throttled", info.throttled.to_string()),
            ("instruments", self.instruments.len().to_string()),
        ] {
            table.push(vec![k.to_owned(), v]);
        }
        Ok(Output::table("status", table))
    }

    async fn instruments(&mut self, currency: Option<String>, kind: Option<String>) -> Result<Output, ShellError> {
        let list = self.venue.instruments(currency.as_deref(), kind.as_deref()).await?;
        let mut table = Table::new(&["instrument", "kind", "settlement", "tick_size", "contract_size", "min_amount"]);
        for info in &list {
            table.push(vec![
                info.name.clone(),
                info.kind.clone(),
                info.settlement.clone(),
                info.tick_size.to_string(),
                info.contract_size.to_string(),
                info.min_trade_amount.to_string(),
            ]);
            self.instruments.entry(info.name.clone()).or_insert_with(|| info.clone());
        }
        Ok(Output::table("instruments", table))
    }

    async fn book(&mut self, instrument: String, depth: u32) -> Result<Output, ShellError> {
        let (book, source) = match self.venue.local_book(&instrument, depth as usize) {
            Some(book) => (book, "local"),
            None => (self.venue.book_snapshot(&instrument, depth).await?, "snapshot"),
        };
        let mut table = Table::new(&["bid_amount", "bid", "ask", "ask_amount"]);
        let rows = book.bids.len().max(book.asks.len()).min(depth.max(1) as usize);
        for i in 0..rows {
            let bid = book.bids.get(i);
            let ask = book.asks.get(i);
            table.push(vec![
                opt(bid.map(|l| l.1)),
                opt(bid.map(|l| l.0)),
                opt(ask.map(|l| l.0)),
                opt(ask.map(|l| l.1)),
            ]);
        }
        let mut out = Output::table("book", table);
        out.message = Some(format!("{} ({source}, change_id {})", book.instrument, book.change_id));
        Ok(out)
    }

    async fn ticker(&mut self, instrument: String) -> Result<Output, ShellError> {
        let t = self.venue.ticker(&instrument).await?;
        let mut table = Table::new(&["instrument", "bid_amount", "bid", "ask", "ask_amount", "last", "mark", "index"]);
        table.push(vec![
            t.instrument.clone(),
            opt(t.best_bid.map(|l| l.1)),
            opt(t.best_bid.map(|l| l.0)),
            opt(t.best_ask.map(|l| l.0)),
            opt(t.best_ask.map(|l| l.1)),
            opt(t.last),
            opt(t.mark),
            opt(t.index),
        ]);
        Ok(Output::table("ticker", table))
    }

    async fn edit(&mut self, order: String, amount: Decimal, price: Option<Decimal>) -> Result<Output, ShellError> {
        let labels = self.known_labels().await;
        let order = self.order_ref(&order, &labels);
        let placed = self.venue.edit(EditRequest { order, amount, price }).await?;
        Ok(self.placed("edit", placed))
    }

    async fn cancel(&mut self, order: String) -> Result<Output, ShellError> {
        let labels = self.known_labels().await;
        let order = self.order_ref(&order, &labels);
        let (view, timing) = self.venue.cancel(order).await?;
        self.latencies.record(&timing);
        let mut out = Output::table("cancel", orders_table(std::slice::from_ref(&view)));
        out.message = Some(format!("order {} {}", view.order_id, view.status.as_str()));
        out.latency = Some(timing);
        Ok(out)
    }

    async fn cancel_all(&mut self, scope: Option<String>) -> Result<Output, ShellError> {
        let scope = match filter_of(scope.as_deref(), &self.instruments) {
            Filter::All => CancelScope::All,
            Filter::Instrument(i) => CancelScope::Instrument(i),
            Filter::Currency(c) => CancelScope::Currency(c),
        };
        let (count, timing) = self.venue.cancel_all(scope).await?;
        self.latencies.record(&timing);
        let mut out = Output::message("cancel-all", format!("{count} orders cancelled"));
        out.latency = Some(timing);
        Ok(out)
    }

    async fn orders(&mut self, filter: Option<String>) -> Result<Output, ShellError> {
        let orders = self.venue.open_orders(filter_of(filter.as_deref(), &self.instruments)).await?;
        Ok(Output::table("orders", orders_table(&orders)))
    }

    async fn order_state(&mut self, id: String) -> Result<Output, ShellError> {
        let order = self.venue.order_state(&id).await?;
        Ok(Output::table("order", orders_table(std::slice::from_ref(&order))))
    }

    async fn positions(&mut self, currency: Option<String>) -> Result<Output, ShellError> {
        let positions = self.venue.positions(filter_of(currency.as_deref(), &self.instruments)).await?;
        let mut table =
            Table::new(&["instrument", "kind", "size", "average_price", "mark_price", "floating_pl", "realized_pl"]);
        for p in positions.iter().filter(|p| !p.size.is_zero()) {
            table.push(vec![
                p.instrument.clone(),
                p.kind.clone(),
                p.size.to_string(),
                p.average_price.to_string(),
                p.mark_price.to_string(),
                p.floating_pl.to_string(),
                p.realized_pl.to_string(),
            ]);
        }
        Ok(Output::table("positions", table))
    }

    async fn account(&mut self, currency: Option<String>) -> Result<Output, ShellError> {
        let balances = self.venue.account(currency.as_deref()).await?;
        let mut table = Table::new(&[
            "currency",
            "balance",
            "equity",
            "available",
            "margin_balance",
            "initial_margin",
            "maintenance_margin",
            "total_pl",
        ]);
        for b in &balances {
            table.push(vec![
                b.currency.clone(),
                b.balance.to_string(),
                b.equity.to_string(),
                b.available_funds.to_string(),
                b.margin_balance.to_string(),
                b.initial_margin.to_string(),
                b.maintenance_margin.to_string(),
                b.total_pl.to_string(),
            ]);
        }
        Ok(Output::table("account", table))
    }

    async fn trades(&mut self, instrument: Option<String>) -> Result<Output, ShellError> {
        let fills = self.venue.user_trades(filter_of(instrument.as_deref(), &self.instruments)).await?;
        Ok(Output::table("trades", fills_table(&fills)))
    }

    async fn sub(&mut self, subs: Vec<Subscription>) -> Result<Output, ShellError> {
        let done = self.venue.subscribe(&subs).await?;
        let missing: Vec<String> = subs.iter().filter(|s| !done.contains(s)).map(ToString::to_string).collect();
        if !missing.is_empty() {
            return Err(ShellError::Invalid(format!("venue refused {}", missing.join(" "))));
        }
        if let Ok(mut interest) = self.interest.lock() {
            interest.add(&done);
        }
        let names: Vec<String> = done.iter().map(ToString::to_string).collect();
        Ok(Output::message("sub", format!("subscribed {} (notifications print as they arrive)", names.join(" "))))
    }

    async fn unsub(&mut self, subs: Vec<Subscription>) -> Result<Output, ShellError> {
        // No channel: everything this shell subscribed (not the session's own feeds).
        let subs = if subs.is_empty() {
            self.interest.lock().map(|i| i.subscriptions().iter().cloned().collect()).unwrap_or_default()
        } else {
            subs
        };
        if subs.is_empty() {
            return Ok(Output::message("unsub", "nothing subscribed"));
        }
        let done = self.venue.unsubscribe(&subs).await?;
        if let Ok(mut interest) = self.interest.lock() {
            interest.remove(&subs);
        }
        let names: Vec<String> = done.iter().map(ToString::to_string).collect();
        Ok(Output::message("unsub", format!("unsubscribed {}", names.join(" "))))
    }

    fn latency(&mut self) -> Result<Output, ShellError> {
        let mut table = Table::new(&["order path (µs)", "count", "p50", "p90", "p99", "max"]);
        let l = &self.latencies;
        table.push(percentile_row("local: parsed → written", &l.local));
        table.push(percentile_row("round trip", &l.round_trip));
        table.push(percentile_row("  network", &l.network));
        table.push(percentile_row("  exchange", &l.exchange));
        Ok(Output::table("latency", table))
    }

    async fn order(&mut self, cmd: OrderRequest) -> Result<Output, ShellError> {
        self.validate(&cmd.instrument, cmd.amount, cmd.price)?;
        if let Some(trigger) = cmd.trigger {
            self.validate(&cmd.instrument, cmd.amount, Some(trigger.price))?;
        }
        let name = if cmd.side == Side::Buy { "buy" } else { "sell" };
        match self.venue.place(cmd).await {
            Ok(placed) => Ok(self.placed(name, placed)),
            Err(err @ VenueError::Timeout { .. }) => Err(ShellError::Invalid(format!(
                "{err}; the order was not found by its label and was NOT resent (check `orders`)"
            ))),
            Err(err) => Err(err.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;

    #[test]
    fn instruments_and_currencies_are_told_apart() {
        let none = BTreeMap::new();
        assert_eq!(filter_of(None, &none), Filter::All);
        assert_eq!(filter_of(Some("btc"), &none), Filter::Currency("BTC".into()));
        assert_eq!(filter_of(Some("BTC-PERPETUAL"), &none), Filter::Instrument("BTC-PERPETUAL".into()));
        assert_eq!(filter_of(Some("BTC_USDC"), &none), Filter::Instrument("BTC_USDC".into()));
    }
}
