use proptest::prelude::*;

use super::fields::side;
use super::*;

fn dec(text: &str) -> Decimal {
    Decimal::parse(text).unwrap()
}

/// What the simulator sends: `api::Order` serialised.
fn sim_order() -> String {
    let order = crate::api::Order {
        order_id: "BTC-17".into(),
        instrument_name: "BTC-PERPETUAL".into(),
        direction: "buy".into(),
        amount: crate::api::Num::parse("30").unwrap(),
        contracts: crate::api::Num::parse("3"),
        filled_amount: crate::api::Num::parse("10").unwrap(),
        price: crate::api::Num::parse("64250.5").unwrap().into(),
        average_price: crate::api::Num::parse("64250.5").unwrap(),
        order_state: "open".into(),
        order_type: "limit".into(),
        time_in_force: "good_til_cancelled".into(),
        post_only: true,
        label: "tt.1700000000123456789.42".into(),
        creation_timestamp: 1_700_000_000_123,
        last_update_timestamp: 1_700_000_000_456,
        reject_post_only: Some(false),
        ..Default::default()
    };
    serde_json::to_string(&order).unwrap()
}

#[test]
fn the_simulators_order_takes_the_fixed_path() {
    let text = sim_order();
    let (order, path) = decode_order(text.as_bytes()).unwrap();
    assert_eq!(path, DecodePath::Fixed);
    assert_eq!(
        order,
        OrderReport {
            order_id: "BTC-17",
            label: "tt.1700000000123456789.42",
            instrument_name: "BTC-PERPETUAL",
            order_state: OrderState::Open,
            direction: Side::Buy,
            price: Some(dec("64250.5")),
            amount: dec("30"),
            filled_amount: dec("10"),
            average_price: dec("64250.5"),
            order_type: OrderType::Limit,
            time_in_force: TimeInForce::GoodTilCancelled,
            post_only: true,
            reduce_only: false,
            creation_timestamp: 1_700_000_000_123,
            last_update_timestamp: 1_700_000_000_456,
            cancel_reason: None,
            reject_post_only: Some(false),
        }
    );
    assert_eq!(decode_order_general(text.as_bytes()), Ok(order));
}

#[test]
fn deribits_order_takes_the_fixed_path() {
    // A live `user.orders` object (members in descending order).
    let text = br#"{"web":true,"time_in_force":"good_til_cancelled","replaced":false,"reduce_only":false,"profit_loss":0,"price":50000,"post_only":false,"order_type":"limit","order_state":"open","order_id":"46094375191","max_show":10,"last_update_timestamp":1655401625037,"label":"","is_liquidation":false,"instrument_name":"BTC-PERPETUAL","filled_amount":0,"direction":"sell","creation_timestamp":1655401625037,"commission":0,"average_price":0,"api":false,"amount":10}"#;
    let (order, path) = decode_order(text).unwrap();
    assert_eq!(path, DecodePath::Fixed);
    assert_eq!((order.order_id, order.direction, order.price), ("46094375191", Side::Sell, Some(dec("50000"))));
    assert_eq!(decode_order_general(text), Ok(order));
}

#[test]
fn market_price_orders_and_counts() {
    let text = br#"{"order_type":"stop_market","price":"market_price","order_state":"untriggered","order_id":"ETH-SLIS-12","last_update_timestamp":1,"instrument_name":"ETH-PERPETUAL","direction":"sell","creation_timestamp":1,"amount":5,"time_in_force":"good_til_cancelled"}"#;
    let (order, _) = decode_order(text).unwrap();
    assert_eq!((order.price, order.filled_amount, order.order_state), (None, Decimal::ZERO, OrderState::Untriggered));
    let bad = br#"{"price":"limit_price"}"#;
    assert!(matches!(decode_order(bad), Err(DecodeError::Unexpected { at: 9, .. })));
    assert_eq!(decode_count(b" 4 "), Ok(4));
    assert_eq!(decode_count(b"17"), Ok(17));
    assert_eq!(decode_count(b""), Err(DecodeError::Incomplete));
    assert!(decode_count(&[b'1'; 40]).is_err());
    assert!(decode_count(b"-1").is_err());
}

#[test]
fn order_results_with_trades_and_changes() {
    let trade = r#"{"trade_seq":30289432,"trade_id":"48079254","timestamp":1590484156350,"tick_direction":0,"state":"filled","reduce_only":false,"price":8954,"post_only":false,"order_type":"market","order_id":"4008965646","matching_id":null,"mark_price":8952.86,"liquidity":"T","instrument_name":"BTC-PERPETUAL","index_price":8956.73,"fee_currency":"BTC","fee":1.68e-6,"direction":"sell","amount":20}"#;
    let order = sim_order();
    let result = format!(r#"{{"trades":[{trade},{trade}],"order":{order}}}"#);
    let mut trades = Vec::new();
    let (report, path) = decode_order_result(result.as_bytes(), |t, p| trades.push((t, p))).unwrap();
    assert_eq!((report.order_id, path), ("BTC-17", DecodePath::Fixed));
    assert_eq!(trades.len(), 2);
    let (t, p) = trades[0];
    assert_eq!(p, DecodePath::Fixed);
    assert_eq!((t.fee, t.liquidity, t.trade_seq, t.label), (dec("0.00000168"), Liquidity::Taker, 30_289_432, ""));
    let changes = format!(
        r#"{{"instrument_name":"BTC-PERPETUAL","orders":[{order}],"trades":[{trade}],"positions":[{{"size":1}}]}}"#
    );
    let (mut n_orders, mut n_trades) = (0, 0);
    let name = decode_user_changes(changes.as_bytes(), |_, _| n_orders += 1, |_, _| n_trades += 1).unwrap();
    assert_eq!((name, n_orders, n_trades), ("BTC-PERPETUAL", 1, 1));
    assert_eq!(decode_order_result(b"{}", |_, _| {}), Err(DecodeError::Missing("order")));
}

/// One generated member: its key, its JSON text, and whether the simulator's layout has it.
type Member = (&'static str, String);

fn text_value() -> impl Strategy<Value = String> {
    // Raw JSON string bodies, escapes included.
    prop_oneof!["[A-Za-z0-9.-]{0,12}", "[a-z]{0,4}(\\\\\"|\\\\\\\\|\\\\n|\\\\u00e9)[a-z]{0,4}",]
}

fn number() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["0", "10", "0.5", "64250.5", "1e3", "2.5E-2", "1.68e-6", "-3", "123456789.123456789"])
        .prop_map(str::to_owned)
}

fn pick(values: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop::sample::select(values).prop_map(str::to_owned)
}

fn order_members() -> impl Strategy<Value = Vec<Member>> {
    let required = (
        text_value(),
        text_value(),
        pick(&["buy", "sell"]),
        number(),
        pick(&["open", "filled", "rejected", "cancelled", "untriggered"]),
        pick(&["limit", "market", "stop_limit"]),
        pick(&["good_til_cancelled", "immediate_or_cancel", "fill_or_kill"]),
        any::<u64>(),
        any::<u64>(),
    );
    let optional = (
        proptest::option::of(text_value()),
        proptest::option::of(prop_oneof![number(), Just("\"market_price\"".to_owned()), Just("null".to_owned())]),
        proptest::option::of(number()),
        proptest::option::of(number()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(text_value()),
        proptest::option::of(any::<bool>()),
        proptest::option::of(pick(&["true", "10", "{\"a\":[1,\"]\"]}", "null"])),
    );
    (required, optional).prop_map(|(r, o)| {
        let quoted = |s: &str| format!("\"{s}\"");
        let mut m: Vec<Member> = vec![
            ("order_id", quoted(&r.0)),
            ("instrument_name", quoted(&r.1)),
            ("direction", quoted(&r.2)),
            ("amount", r.3),
            ("order_state", quoted(&r.4)),
            ("order_type", quoted(&r.5)),
            ("time_in_force", quoted(&r.6)),
            ("creation_timestamp", r.7.to_string()),
            ("last_update_timestamp", r.8.to_string()),
        ];
        let optional: [(&'static str, Option<String>); 9] = [
            ("label", o.0.map(|s| quoted(&s))),
            ("price", o.1),
            ("filled_amount", o.2),
            ("average_price", o.3),
            ("post_only", o.4.map(|b| b.to_string())),
            ("reduce_only", o.5.map(|b| b.to_string())),
            ("cancel_reason", o.6.map(|s| quoted(&s))),
            ("reject_post_only", o.7.map(|b| b.to_string())),
            ("api", o.8),
        ];
        m.extend(optional.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))));
        m
    })
}

fn render(members: &[Member]) -> String {
    let body: Vec<String> = members.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
    format!("{{{}}}", body.join(","))
}

fn in_layout<F>(members: &mut [Member], layout: &[Key<F>]) {
    let index = |k: &str| layout.iter().position(|key| key.text == format!("\"{k}\":").as_bytes()).unwrap();
    members.sort_by_key(|(k, _)| index(k));
}

/// The model: each member's meaning, computed without the scanner.
fn expected_order(members: &[Member]) -> Option<OrderReport<'_>> {
    let get = |k: &str| members.iter().find(|(key, _)| *key == k).map(|(_, v)| v.as_str());
    let unq = |v: &str| v.trim_matches('"').to_owned();
    let unq = |v: Option<&str>| v.map(unq);
    let s = |k: &str| get(k).map(|v| &v[1..v.len() - 1]);
    let number = |k: &str| get(k).map(Decimal::parse).transpose().ok();
    let flag = |k: &str| get(k).map(|v| v == "true");
    Some(OrderReport {
        order_id: s("order_id")?,
        label: s("label").unwrap_or(""),
        instrument_name: s("instrument_name")?,
        order_state: OrderState::parse(unq(get("order_state"))?.as_bytes())?,
        direction: side(unq(get("direction"))?.as_bytes())?,
        price: match get("price") {
            Some("\"market_price\"" | "null") | None => None,
            Some(v) => Some(Decimal::parse(v).ok()?),
        },
        amount: number("amount")??,
        filled_amount: number("filled_amount")?.unwrap_or(Decimal::ZERO),
        average_price: number("average_price")?.unwrap_or(Decimal::ZERO),
        order_type: OrderType::parse(unq(get("order_type"))?.as_bytes())?,
        time_in_force: TimeInForce::parse(unq(get("time_in_force"))?.as_bytes())?,
        post_only: flag("post_only").unwrap_or(false),
        reduce_only: flag("reduce_only").unwrap_or(false),
        creation_timestamp: get("creation_timestamp")?.parse().ok()?,
        last_update_timestamp: get("last_update_timestamp")?.parse().ok()?,
        cancel_reason: s("cancel_reason"),
        reject_post_only: flag("reject_post_only"),
    })
}

fn trade_members() -> impl Strategy<Value = Vec<Member>> {
    (
        (text_value(), text_value(), text_value(), pick(&["buy", "sell"]), number(), number(), number()),
        (text_value(), pick(&["M", "T"]), any::<u64>(), any::<u64>(), pick(&["open", "filled", "archive"])),
        (proptest::option::of(text_value()), proptest::option::of(pick(&["null", "1.5", "\"x\""]))),
    )
        .prop_map(|(a, b, c)| {
            let quoted = |s: &str| format!("\"{s}\"");
            let mut m: Vec<Member> = vec![
                ("trade_id", quoted(&a.0)),
                ("order_id", quoted(&a.1)),
                ("instrument_name", quoted(&a.2)),
                ("direction", quoted(&a.3)),
                ("price", a.4),
                ("amount", a.5),
                ("fee", a.6),
                ("fee_currency", quoted(&b.0)),
                ("liquidity", quoted(&b.1)),
                ("timestamp", b.2.to_string()),
                ("trade_seq", b.3.to_string()),
                ("state", quoted(&b.4)),
            ];
            if let Some(label) = c.0 {
                m.push(("label", quoted(&label)));
            }
            if let Some(mark) = c.1 {
                m.push(("mark_price", mark));
            }
            m
        })
}

proptest! {
    #[test]
    fn orders_fixed_and_general_agree(
        members in order_members(),
        shuffled in any::<bool>(),
        seed in any::<prop::sample::Index>(),
        sim_layout in any::<bool>(),
    ) {
        let mut members = members;
        let layout = if sim_layout { layouts::ORDER_SIM } else { layouts::ORDER_DERIBIT };
        in_layout(&mut members, layout);
        if shuffled {
            let n = members.len();
            members.rotate_left(seed.index(n));
            members.swap(0, seed.index(n) / 2);
        }
        let text = render(&members);
        let fast = decode_order(text.as_bytes());
        let general = decode_order_general(text.as_bytes());
        prop_assert_eq!(fast.map(|(o, _)| o), general);
        match expected_order(&members) {
            Some(want) => {
                prop_assert_eq!(general, Ok(want));
                if !shuffled {
                    prop_assert_eq!(fast.map(|(_, p)| p), Ok(DecodePath::Fixed));
                }
            }
            None => prop_assert!(general.is_err(), "{text}"),
        }
        // A shuffled object read with whitespace between members: still the same answer.
        let spaced = text.replace(",\"", " , \"");
        prop_assert_eq!(decode_order(spaced.as_bytes()).map(|(o, _)| o), general);
    }

    #[test]
    fn trades_fixed_and_general_agree(
        members in trade_members(),
        shuffled in any::<bool>(),
        seed in any::<prop::sample::Index>(),
        sim_layout in any::<bool>(),
    ) {
        let mut members = members;
        let layout = if sim_layout { layouts::TRADE_SIM } else { layouts::TRADE_DERIBIT };
        in_layout(&mut members, layout);
        if shuffled {
            let n = members.len();
            members.rotate_left(seed.index(n));
        }
        let text = render(&members);
        let fast = decode_trade(text.as_bytes());
        let general = decode_trade_general(text.as_bytes());
        prop_assert_eq!(fast.map(|(t, _)| t), general);
        if !shuffled && general.is_ok() {
            prop_assert_eq!(fast.map(|(_, p)| p), Ok(DecodePath::Fixed));
        }
        // Every prefix is an error (never a panic), the same on both paths.
        for cut in 0..text.len() {
            let cut = &text.as_bytes()[..cut];
            prop_assert!(decode_trade_general(cut).is_err());
            prop_assert_eq!(decode_trade(cut).map(|(t, _)| t), decode_trade_general(cut));
        }
    }
}
