//! Subscription notifications as the shell prints them: between prompts in a terminal, as
//! lines (or JSON objects with an `"event"` key) in a script.
//!
//! Owns: which venue events the user asked to see (`Interest`: the channels of `sub`, plus
//! connection and throttling notices, which a trader always needs), and their one-line text
//! and JSON renderings.
//! Must not: block, or repeat itself: a book prints a line only when its top moved (a
//! full-depth feed changes hundreds of times a second), a ticker only when it changed.

use std::collections::{BTreeSet, HashMap};

use serde_json::{Value, json};
use ticktrade_core::Decimal;

use ticktrade_gateway::venue::{ConnState, Subscription, Venue, VenueEvent};

type Level = Option<(Decimal, Decimal)>;

/// What the user subscribed to, and what was last printed for each book.
#[derive(Debug, Default)]
pub struct Interest {
    subs: BTreeSet<Subscription>,
    last_top: HashMap<String, (Level, Level)>,
    /// The last ticker line per instrument: a ticker that did not change is not repeated.
    last_ticker: HashMap<String, String>,
    /// Set while `watch` owns the screen.
    pub paused: bool,
}

impl Interest {
    pub fn add(&mut self, subs: &[Subscription]) {
        self.subs.extend(subs.iter().cloned());
    }

    /// Empty `subs` removes everything.
    pub fn remove(&mut self, subs: &[Subscription]) {
        if subs.is_empty() {
            self.subs.clear();
        } else {
            for sub in subs {
                self.subs.remove(sub);
            }
        }
        let subs = &self.subs;
        self.last_top.retain(|instrument, _| subs.contains(&Subscription::Book(instrument.clone())));
        self.last_ticker.retain(|instrument, _| subs.contains(&Subscription::Ticker(instrument.clone())));
    }

    pub fn subscriptions(&self) -> &BTreeSet<Subscription> {
        &self.subs
    }

    /// Whether `event` belongs to a channel the user subscribed to (connection and
    /// throttling notices always do).
    pub fn wants(&self, event: &VenueEvent) -> bool {
        let has = |sub: Subscription| self.subs.contains(&sub);
        match event {
            VenueEvent::BookUpdated { instrument, .. }
            | VenueEvent::BookStale { instrument }
            | VenueEvent::BookSynced { instrument, .. } => has(Subscription::Book(instrument.clone())),
            VenueEvent::Trade(t) => has(Subscription::Trades(t.instrument.clone())),
            VenueEvent::Ticker(t) => has(Subscription::Ticker(t.instrument.clone())),
            VenueEvent::Order(_) => has(Subscription::UserOrders) || has(Subscription::UserChanges),
            VenueEvent::Fill(_) => has(Subscription::UserTrades) || has(Subscription::UserChanges),
            VenueEvent::Position(_) => has(Subscription::UserChanges),
            VenueEvent::Connection(state) => *state != ConnState::Connecting,
            VenueEvent::Throttled { .. } => true,
        }
    }

    /// The line to print for `event`, or `None` when the user did not ask for it or it would
    /// repeat the previous line (a book change below the top).
    pub fn render<V: Venue>(&mut self, venue: &V, event: &VenueEvent, json: bool) -> Option<String> {
        if self.paused || !self.wants(event) {
            return None;
        }
        if let VenueEvent::BookUpdated { instrument, change_id } = event {
            let book = venue.local_book(instrument, 1)?;
            let top = (book.bids.first().copied(), book.asks.first().copied());
            if self.last_top.get(instrument) == Some(&top) {
                return None;
            }
            self.last_top.insert(instrument.clone(), top);
            return Some(if json {
                book_json(instrument, *change_id, top)
            } else {
                book_text(instrument, *change_id, top)
            });
        }
        let text = event_text(event);
        if let VenueEvent::Ticker(t) = event {
            if self.last_ticker.get(&t.instrument) == Some(&text) {
                return None;
            }
            self.last_ticker.insert(t.instrument.clone(), text.clone());
        }
        Some(if json { event_json(event).to_string() } else { text })
    }
}

fn level_text(level: Level) -> String {
    match level {
        Some((price, amount)) => format!("{amount} @ {price}"),
        None => "-".to_owned(),
    }
}

fn opt(value: Option<Decimal>) -> String {
    value.map(|v| v.to_string()).unwrap_or_else(|| "-".to_owned())
}

fn book_text(instrument: &str, change_id: u64, (bid, ask): (Level, Level)) -> String {
    format!("[book] {instrument} bid {} | ask {} (change_id {change_id})", level_text(bid), level_text(ask))
}

fn level_json(level: Level) -> Value {
    match level {
        Some((price, amount)) => json!({"price": price.to_string(), "amount": amount.to_string()}),
        None => Value::Null,
    }
}

fn book_json(instrument: &str, change_id: u64, (bid, ask): (Level, Level)) -> String {
    json!({"event": "book", "instrument": instrument, "change_id": change_id, "bid": level_json(bid), "ask": level_json(ask)})
        .to_string()
}

fn state_name(state: ConnState) -> &'static str {
    match state {
        ConnState::Connecting => "connecting",
        ConnState::Ready => "ready",
        ConnState::Disconnected => "disconnected",
        ConnState::Closed => "closed",
    }
}

/// One line for a person.
pub fn event_text(event: &VenueEvent) -> String {
    match event {
        VenueEvent::BookUpdated { instrument, change_id } => format!("[book] {instrument} change_id {change_id}"),
        VenueEvent::BookStale { instrument } => format!("[book] {instrument} sequence gap: resyncing"),
        VenueEvent::BookSynced { instrument, change_id } => {
            format!("[book] {instrument} synced from a snapshot (change_id {change_id})")
        }
        VenueEvent::Trade(t) => {
            format!("[trade] {} {} {} @ {} (trade {})", t.instrument, t.side.as_str(), t.amount, t.price, t.trade_id)
        }
        VenueEvent::Ticker(t) => format!(
            "[ticker] {} bid {} | ask {} last {} mark {} index {}",
            t.instrument,
            level_text(t.best_bid),
            level_text(t.best_ask),
            opt(t.last),
            opt(t.mark),
            opt(t.index)
        ),
        VenueEvent::Order(o) => format!(
            "[order] {} {}{} {} {} @ {} {} (filled {})",
            o.order_id,
            o.instrument,
            if o.label.is_empty() { String::new() } else { format!(" label={}", o.label) },
            o.side.as_str(),
            o.amount,
            o.price.map(|p| p.to_string()).unwrap_or_else(|| "market".into()),
            o.status.as_str(),
            o.filled
        ),
        VenueEvent::Fill(f) => format!(
            "[fill] {} {} {} @ {} order {} fee {} {} ({})",
            f.instrument,
            f.side.as_str(),
            f.amount,
            f.price,
            f.order_id,
            f.fee,
            f.fee_currency,
            if f.liquidity == "M" { "maker" } else { "taker" }
        ),
        VenueEvent::Position(p) => {
            format!("[position] {} size {} avg {} mark {}", p.instrument, p.size, p.average_price, p.mark_price)
        }
        VenueEvent::Connection(state) => format!("[connection] {}", state_name(*state)),
        VenueEvent::Throttled { retry_after_ms } => {
            format!("[throttled] the venue asked us to slow down; backing off {retry_after_ms} ms")
        }
    }
}

/// One JSON object for a script (decimals as strings, exactly as quoted).
pub fn event_json(event: &VenueEvent) -> Value {
    match event {
        VenueEvent::BookUpdated { instrument, change_id } => {
            json!({"event": "book", "instrument": instrument, "change_id": change_id})
        }
        VenueEvent::BookStale { instrument } => json!({"event": "book_stale", "instrument": instrument}),
        VenueEvent::BookSynced { instrument, change_id } => {
            json!({"event": "book_synced", "instrument": instrument, "change_id": change_id})
        }
        VenueEvent::Trade(t) => json!({
            "event": "trade", "instrument": t.instrument, "trade_id": t.trade_id, "side": t.side.as_str(),
            "price": t.price.to_string(), "amount": t.amount.to_string(), "timestamp_ms": t.timestamp_ms,
        }),
        VenueEvent::Ticker(t) => json!({
            "event": "ticker", "instrument": t.instrument, "timestamp_ms": t.timestamp_ms,
            "bid": level_json(t.best_bid), "ask": level_json(t.best_ask),
            "last": t.last.map(|v| v.to_string()), "mark": t.mark.map(|v| v.to_string()),
            "index": t.index.map(|v| v.to_string()),
        }),
        VenueEvent::Order(o) => json!({
            "event": "order", "order_id": o.order_id, "label": o.label, "instrument": o.instrument,
            "side": o.side.as_str(), "type": o.order_type, "state": o.status.as_str(),
            "price": o.price.map(|p| p.to_string()), "amount": o.amount.to_string(),
            "filled": o.filled.to_string(), "avg_price": o.average_price.to_string(),
        }),
        VenueEvent::Fill(f) => json!({
            "event": "fill", "trade_id": f.trade_id, "order_id": f.order_id, "instrument": f.instrument,
            "side": f.side.as_str(), "price": f.price.to_string(), "amount": f.amount.to_string(),
            "fee": f.fee.to_string(), "fee_currency": f.fee_currency, "liquidity": f.liquidity,
        }),
        VenueEvent::Position(p) => json!({
            "event": "position", "instrument": p.instrument, "size": p.size.to_string(),
            "average_price": p.average_price.to_string(), "mark_price": p.mark_price.to_string(),
        }),
        VenueEvent::Connection(state) => json!({"event": "connection", "state": state_name(*state)}),
        VenueEvent::Throttled { retry_after_ms } => json!({"event": "throttled", "retry_after_ms": retry_after_ms}),
    }
}

/// The notice printed when the terminal fell behind the venue's events.
pub fn lagged(skipped: u64, json: bool) -> String {
    if json {
        json!({"event": "lagged", "skipped": skipped}).to_string()
    } else {
        format!("[lagged] {skipped} notifications skipped (output too slow)")
    }
}

#[cfg(test)]
mod tests {
    use ticktrade_core::Side;

    use super::*;
    use ticktrade_gateway::venue::{OrderStatus, OrderView, PublicTrade};

    fn dec(text: &str) -> Decimal {
        Decimal::parse(text).unwrap()
    }

    fn trade(instrument: &str) -> VenueEvent {
        VenueEvent::Trade(PublicTrade {
            trade_id: "7".into(),
            instrument: instrument.into(),
            side: Side::Sell,
            price: dec("50000.5"),
            amount: dec("10"),
            timestamp_ms: 1,
        })
    }

    #[test]
    fn only_subscribed_channels_are_wanted() {
        let mut interest = Interest::default();
        assert!(!interest.wants(&trade("BTC-PERPETUAL")));
        assert!(interest.wants(&VenueEvent::Connection(ConnState::Disconnected)));
        assert!(!interest.wants(&VenueEvent::Connection(ConnState::Connecting)));
        interest.add(&[Subscription::Trades("BTC-PERPETUAL".into()), Subscription::UserOrders]);
        assert!(interest.wants(&trade("BTC-PERPETUAL")));
        assert!(!interest.wants(&trade("ETH-PERPETUAL")));
        let order = VenueEvent::Order(OrderView {
            order_id: "1".into(),
            label: "x".into(),
            instrument: "BTC-PERPETUAL".into(),
            side: Side::Buy,
            order_type: "limit".into(),
            status: OrderStatus::Open,
            amount: dec("10"),
            filled: dec("0"),
            price: Some(dec("49000")),
            average_price: dec("0"),
            time_in_force: "good_til_cancelled".into(),
            post_only: false,
            reduce_only: false,
            trigger_price: None,
            created_ms: 0,
            updated_ms: 0,
        });
        assert!(interest.wants(&order));
        assert_eq!(event_text(&order), "[order] 1 BTC-PERPETUAL label=x buy 10 @ 49000 open (filled 0)");
        interest.remove(&[Subscription::UserOrders]);
        assert!(!interest.wants(&order));
        interest.remove(&[]);
        assert!(!interest.wants(&trade("BTC-PERPETUAL")));
    }

    #[test]
    fn renderings_keep_exact_decimals() {
        assert_eq!(event_text(&trade("BTC-PERPETUAL")), "[trade] BTC-PERPETUAL sell 10 @ 50000.5 (trade 7)");
        let value = event_json(&trade("BTC-PERPETUAL"));
        assert_eq!(value["event"], "trade");
        assert_eq!(value["price"], "50000.5");
        let book = book_text("X", 9, (Some((dec("1.5"), dec("2"))), None));
        assert_eq!(book, "[book] X bid 2 @ 1.5 | ask - (change_id 9)");
        let value: Value = serde_json::from_str(&book_json("X", 9, (None, Some((dec("1.5"), dec("2")))))).unwrap();
        assert_eq!(value["ask"]["price"], "1.5");
        assert!(value["bid"].is_null());
    }
}
