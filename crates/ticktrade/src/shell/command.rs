//! The shell's command language: one line → one typed `Command`.
//!
//! Owns: the grammar of every command, the help texts, the command names (for completion).
//! Must not: talk to a venue or validate against instruments (the shell does that).

use ticktrade_core::{Decimal, Side};

use ticktrade_gateway::venue::{OrderRequest, Subscription, TimeInForce, Trigger, TriggerSource};

/// One shell command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    Help(Option<String>),
    Status,
    Instruments { currency: Option<String>, kind: Option<String> },
    Book { instrument: String, depth: u32 },
    Ticker(String),
    Order(OrderRequest),
    Edit { order: String, amount: Decimal, price: Option<Decimal> },
    Cancel(String),
    CancelAll(Option<String>),
    Orders(Option<String>),
    OrderState(String),
    Positions(Option<String>),
    Account(Option<String>),
    Trades(Option<String>),
    Sub(Vec<Subscription>),
    Unsub(Vec<Subscription>),
    Watch(String),
    Latency,
    Logout,
    Quit,
}

/// Every command name, for help and completion.
pub const COMMANDS: &[(&str, &str, &str)] = &[
    ("help", "help [cmd]", "list commands, or explain one"),
    ("status", "status", "connection, authentication, subscriptions, stale books"),
    ("instruments", "instruments [currency] [kind]", "tradable instruments (kind: future, option, spot…)"),
    ("book", "book <instr> [depth]", "order book (the live local book when subscribed, else a snapshot)"),
    ("ticker", "ticker <instr>", "best bid/ask, last, mark, index"),
    ("buy", "buy <instr> <amount> [@ <price>|market] [options…]", "place a buy order (no price = market; `help buy`)"),
    ("sell", "sell <instr> <amount> [@ <price>|market] [options…]", "place a sell order (same options as buy)"),
    ("edit", "edit <order_id|label> <amount> [@ <price>]", "amend an open order"),
    ("cancel", "cancel <order_id|label>", "cancel one order"),
    ("cancel-all", "cancel-all [instr|currency]", "cancel every open order (of an instrument or currency)"),
    ("orders", "orders [instr|currency]", "open orders"),
    ("order", "order <order_id>", "one order's state"),
    ("positions", "positions [currency]", "open positions"),
    ("account", "account [currency]", "balances and margins"),
    ("trades", "trades [instr]", "your recent fills"),
    ("sub", "sub <channel>…", "subscribe: book:<instr> trades:<instr> ticker:<instr> orders user-trades changes"),
    ("unsub", "unsub [channel…]", "unsubscribe (everything when no channel is given)"),
    ("watch", "watch <instr>", "live ladder with trades, redrawn in place until a key is pressed"),
    ("latency", "latency", "order round-trip and local-path percentiles of this session"),
    ("logout", "logout", "log out and close the session"),
    ("quit", "quit", "leave the shell"),
];

/// The options of `buy` and `sell`, for `help buy`.
pub const ORDER_OPTIONS: &[(&str, &str)] = &[
    ("gtc|gtd|ioc|fok", "time in force (default gtc)"),
    ("post-only", "rest only; never take liquidity"),
    ("reduce-only", "may only reduce the position"),
    ("label=<l>", "client label: a retry with the same label never creates a second order"),
    (
        "stop|take @ <trigger> [last|mark|index]",
        "stop or take-profit, triggered by the last (default), mark or index price",
    ),
];

/// The full grammar of an order command.
pub const ORDER_USAGE: &str = "buy|sell <instr> <amount> [@ <price>|market] [gtc|gtd|ioc|fok] [post-only] [reduce-only] \
     [label=<l>] [stop|take @ <trigger> [last|mark|index]]";

/// Why a line is not a command.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    #[error("unknown command {0:?} (try `help`)")]
    Unknown(String),
    #[error("usage: {0}")]
    Usage(&'static str),
    #[error("{what} {text:?} is not a decimal number")]
    Number { what: &'static str, text: String },
    #[error("unexpected {0:?}")]
    Unexpected(String),
    #[error("unknown channel {0:?} (book:<instr>, trades:<instr>, ticker:<instr>, orders, user-trades, changes)")]
    Channel(String),
}

fn usage(name: &str) -> &'static str {
    COMMANDS.iter().find(|c| c.0 == name).map(|c| c.1).unwrap_or("help")
}

fn number(what: &'static str, text: &str) -> Result<Decimal, ParseError> {
    Decimal::parse(text).map_err(|_| ParseError::Number { what, text: text.to_owned() })
}

fn positive(what: &'static str, text: &str) -> Result<Decimal, ParseError> {
    let value = number(what, text)?;
    if value.is_negative() || value.is_zero() {
        return Err(ParseError::Number { what, text: text.to_owned() });
    }
    Ok(value)
}

/// Splits `@50000` into `@`, `50000` so both spellings work.
fn tokens(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    for word in line.split_whitespace() {
        match word.strip_prefix('@') {
            Some(rest) if !rest.is_empty() => {
                out.push("@".to_owned());
                out.push(rest.to_owned());
            }
            _ => out.push(word.to_owned()),
        }
    }
    out
}

/// Parses one line; `Ok(None)` for a blank line or a `#` comment.
pub fn parse(line: &str) -> Result<Option<Command>, ParseError> {
    let line = line.trim();
    if line.is_empty() || line.starts_with('#') {
        return Ok(None);
    }
    let words = tokens(line);
    let (name, args) = (words[0].to_ascii_lowercase(), &words[1..]);
    let arg = |i: usize| args.get(i).cloned();
    let at_most = |n: usize| {
        if args.len() > n { Err(ParseError::Unexpected(args[n].clone())) } else { Ok(()) }
    };
    let need = |i: usize| args.get(i).cloned().ok_or(ParseError::Usage(usage(&name)));
    let command = match name.as_str() {
        "help" | "?" => Command::Help(arg(0)),
        "status" => Command::Status,
        "instruments" => {
            at_most(2)?;
            Command::Instruments { currency: arg(0), kind: arg(1) }
        }
        "book" => {
            at_most(2)?;
            let depth = match arg(1) {
                Some(d) => d.parse().map_err(|_| ParseError::Number { what: "depth", text: d.clone() })?,
                None => 10,
            };
            Command::Book { instrument: need(0)?, depth }
        }
        "ticker" => {
            at_most(1)?;
            Command::Ticker(need(0)?)
        }
        "buy" | "sell" => Command::Order(parse_order(&name, args)?),
        "edit" => {
            let order = need(0)?;
            let amount = positive("amount", &need(1)?)?;
            let price = match args.get(2).map(String::as_str) {
                Some("@") => Some(positive("price", &need(3)?)?),
                Some(other) => return Err(ParseError::Unexpected(other.to_owned())),
                None => None,
            };
            at_most(if price.is_some() { 4 } else { 2 })?;
            Command::Edit { order, amount, price }
        }
        "cancel" => {
            at_most(1)?;
            Command::Cancel(need(0)?)
        }
        "cancel-all" | "cancel_all" => {
            at_most(1)?;
            Command::CancelAll(arg(0))
        }
        "orders" => {
            at_most(1)?;
            Command::Orders(arg(0))
        }
        "order" => {
            at_most(1)?;
            Command::OrderState(need(0)?)
        }
        "positions" => {
            at_most(1)?;
            Command::Positions(arg(0))
        }
        "account" => {
            at_most(1)?;
            Command::Account(arg(0))
        }
        "trades" => {
            at_most(1)?;
            Command::Trades(arg(0))
        }
        "sub" | "unsub" => {
            let subs = args
                .iter()
                .map(|a| Subscription::parse(a).ok_or_else(|| ParseError::Channel(a.clone())))
                .collect::<Result<Vec<_>, _>>()?;
            if name == "sub" {
                if subs.is_empty() {
                    return Err(ParseError::Usage(usage("sub")));
                }
                Command::Sub(subs)
            } else {
                Command::Unsub(subs)
            }
        }
        "watch" => {
            at_most(1)?;
            Command::Watch(need(0)?)
        }
        "latency" => Command::Latency,
        "logout" => Command::Logout,
        "quit" | "exit" => Command::Quit,
        _ => return Err(ParseError::Unknown(name)),
    };
    Ok(Some(command))
}

fn parse_order(name: &str, args: &[String]) -> Result<OrderRequest, ParseError> {
    let usage = ParseError::Usage(usage(name));
    let instrument = args.first().cloned().ok_or(usage.clone())?;
    let amount = positive("amount", args.get(1).ok_or(usage.clone())?)?;
    let mut cmd = OrderRequest {
        instrument,
        side: if name == "buy" { Side::Buy } else { Side::Sell },
        amount,
        price: None,
        time_in_force: TimeInForce::Gtc,
        post_only: false,
        reduce_only: false,
        label: None,
        trigger: None,
    };
    let mut i = 2;
    while let Some(word) = args.get(i) {
        let lower = word.to_ascii_lowercase();
        match lower.as_str() {
            "@" => {
                let text = args.get(i + 1).ok_or(usage.clone())?;
                if !text.eq_ignore_ascii_case("market") {
                    cmd.price = Some(positive("price", text)?);
                }
                i += 1;
            }
            "market" => cmd.price = None,
            "gtc" => cmd.time_in_force = TimeInForce::Gtc,
            "gtd" => cmd.time_in_force = TimeInForce::Gtd,
            "ioc" => cmd.time_in_force = TimeInForce::Ioc,
            "fok" => cmd.time_in_force = TimeInForce::Fok,
            "post-only" | "post_only" => cmd.post_only = true,
            "reduce-only" | "reduce_only" => cmd.reduce_only = true,
            "stop" | "take" => {
                if args.get(i + 1).map(String::as_str) != Some("@") {
                    return Err(usage);
                }
                let price = positive("trigger", args.get(i + 2).ok_or(usage.clone())?)?;
                i += 2;
                let source = match args.get(i + 1).map(|s| s.to_ascii_lowercase()).as_deref() {
                    Some("last") => Some(TriggerSource::Last),
                    Some("mark") => Some(TriggerSource::Mark),
                    Some("index") => Some(TriggerSource::Index),
                    _ => None,
                };
                if source.is_some() {
                    i += 1;
                }
                cmd.trigger = Some(Trigger { take: lower == "take", price, source: source.unwrap_or_default() });
            }
            _ => match word.split_once('=') {
                Some((key, value)) if key.eq_ignore_ascii_case("label") && !value.is_empty() => {
                    cmd.label = Some(value.to_owned());
                }
                _ => return Err(ParseError::Unexpected(word.clone())),
            },
        }
        i += 1;
    }
    Ok(cmd)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dec(text: &str) -> Decimal {
        Decimal::parse(text).unwrap()
    }

    #[track_caller]
    fn check(line: &str, expected: Result<Option<Command>, ParseError>) {
        assert_eq!(parse(line), expected, "{line}");
    }

    #[test]
    fn orders() {
        let base = OrderRequest {
            side: Side::Buy,
            instrument: "BTC-PERPETUAL".into(),
            amount: dec("10"),
            price: Some(dec("50000.5")),
            time_in_force: TimeInForce::Gtc,
            post_only: false,
            reduce_only: false,
            label: None,
            trigger: None,
        };
        check("buy BTC-PERPETUAL 10 @ 50000.5", Ok(Some(Command::Order(base.clone()))));
        check("buy BTC-PERPETUAL 10 @50000.5", Ok(Some(Command::Order(base.clone()))));
        check(
            "sell BTC-PERPETUAL 10 market ioc reduce-only label=x1",
            Ok(Some(Command::Order(OrderRequest {
                side: Side::Sell,
                price: None,
                time_in_force: TimeInForce::Ioc,
                reduce_only: true,
                label: Some("x1".into()),
                ..base.clone()
            }))),
        );
        check(
            "buy BTC-PERPETUAL 10 @ 50000.5 fok post-only stop @ 49000 mark",
            Ok(Some(Command::Order(OrderRequest {
                time_in_force: TimeInForce::Fok,
                post_only: true,
                trigger: Some(Trigger { take: false, price: dec("49000"), source: TriggerSource::Mark }),
                ..base.clone()
            }))),
        );
        check(
            "buy BTC-PERPETUAL 10 take @ 51000",
            Ok(Some(Command::Order(OrderRequest {
                price: None,
                trigger: Some(Trigger { take: true, price: dec("51000"), source: TriggerSource::Last }),
                ..base
            }))),
        );
        check("buy BTC-PERPETUAL", Err(ParseError::Usage(usage("buy"))));
        check("buy BTC-PERPETUAL ten", Err(ParseError::Number { what: "amount", text: "ten".into() }));
        check("buy BTC-PERPETUAL -1", Err(ParseError::Number { what: "amount", text: "-1".into() }));
        check("buy BTC-PERPETUAL 1 @ 1e400", Err(ParseError::Number { what: "price", text: "1e400".into() }));
        check("buy BTC-PERPETUAL 1 bogus", Err(ParseError::Unexpected("bogus".into())));
    }

    #[test]
    fn other_commands() {
        check("", Ok(None));
        check("  # comment", Ok(None));
        check("book BTC-PERPETUAL", Ok(Some(Command::Book { instrument: "BTC-PERPETUAL".into(), depth: 10 })));
        check("book BTC-PERPETUAL 5", Ok(Some(Command::Book { instrument: "BTC-PERPETUAL".into(), depth: 5 })));
        check(
            "edit abc 20 @ 100",
            Ok(Some(Command::Edit { order: "abc".into(), amount: dec("20"), price: Some(dec("100")) })),
        );
        check("edit abc 20", Ok(Some(Command::Edit { order: "abc".into(), amount: dec("20"), price: None })));
        check("cancel-all BTC", Ok(Some(Command::CancelAll(Some("BTC".into())))));
        check(
            "sub book:X orders",
            Ok(Some(Command::Sub(vec![Subscription::Book("X".into()), Subscription::UserOrders]))),
        );
        check("sub", Err(ParseError::Usage(usage("sub"))));
        check("unsub", Ok(Some(Command::Unsub(vec![]))));
        check("sub nope", Err(ParseError::Channel("nope".into())));
        check(
            "instruments BTC future",
            Ok(Some(Command::Instruments { currency: Some("BTC".into()), kind: Some("future".into()) })),
        );
        check("frobnicate", Err(ParseError::Unknown("frobnicate".into())));
        check("ticker", Err(ParseError::Usage(usage("ticker"))));
        check("status extra", Ok(Some(Command::Status)));
        check("QUIT", Ok(Some(Command::Quit)));
    }
}
