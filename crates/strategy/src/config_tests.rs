//! Config tests: the template is the default, conversions to units, refusals name the field.

use super::*;
use ticktrade_core::Settlement;

fn venue() -> Vec<InstrumentSpec> {
    let d = |t: &str| Decimal::parse(t).unwrap();
    let perp = InstrumentSpec::simple("BTC-PERPETUAL", d("0.5"), d("10")).unwrap();
    let mut usdc = InstrumentSpec::simple("BTC_USDC-PERPETUAL", d("1"), d("0.0001")).unwrap();
    usdc.settlement = Settlement::Linear;
    let mut combo = InstrumentSpec::simple("BTC-FS-27DEC24_PERP", d("0.5"), d("10")).unwrap();
    combo.kind = ticktrade_core::InstrumentKind::FutureCombo;
    vec![perp, usdc, combo]
}

#[track_caller]
fn refused(text: &str, field: &str) {
    let err = Config::parse(text).and_then(|c| c.validate(&venue()).map(|_| ())).unwrap_err();
    assert!(err.to_string().contains(field), "{err} does not name {field}");
}

fn edit(from: &str, to: &str) -> String {
    assert!(TEMPLATE.contains(from), "{from}");
    TEMPLATE.replacen(from, to, 1)
}

#[test]
fn template_parses_to_the_defaults_and_validates() {
    assert_eq!(Config::parse(template()).unwrap(), Config::default());
    let setup = Config::default().validate(&venue()).unwrap();
    assert_eq!(setup.specs.len(), 1);
    assert_eq!(setup.specs[0].id, InstrumentId(0));
    let l = setup.limits.instruments[0];
    assert_eq!(l.max_order_qty, Some(Qty::from_raw(100)), "1000 USD in lots of 10");
    assert_eq!(l.max_position, Some(Qty::from_raw(500)));
    assert_eq!(l.max_order_notional.map(|n| n.0), Some(100));
    assert_eq!(l.max_loss.map(|n| n.0), Some(10_000_000_000), "0.01 BTC in 1e-12");
    assert_eq!(setup.limits.rate, Some(RateLimit { max_orders: 20, window_ns: 1_000_000_000 }));
    match &setup.strategy {
        Some(BuiltIn::Quote(q)) => assert_eq!(q.params.size, Qty::from_raw(10)),
        other => panic!("{other:?}"),
    }
    let runner = setup.runner(1).unwrap();
    assert_eq!(runner.orders().capacity(), 256);
}

#[test]
fn take_is_selected_and_converted() {
    let setup =
        Config::parse(&edit("strategy = \"quote\"", "strategy = \"take\"")).unwrap().validate(&venue()).unwrap();
    match setup.strategy {
        Some(BuiltIn::Take(t)) => {
            assert_eq!((t.params.ratio_num, t.params.ratio_den, t.params.levels), (3, 1, 5));
            assert_eq!(t.params.cooldown_ns, 1_000_000_000);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_configs_are_refused_naming_the_field() {
    refused(&edit("[capacity]", "[capacity]\nspare = 1"), "spare");
    refused(&edit("levels = 5", "levels = 5\nlevel = 5"), "level");
    refused(&edit("max_position = \"5000\"", "max_position = \"-5000\""), "risk.instrument[0].max_position");
    refused(&edit("max_loss = \"0.01\"", "max_loss = 0.01"), "max_loss");
    refused(&edit("max_open_orders = 10", "max_open_orders = -1"), "risk.max_open_orders");
    refused(&edit("name = \"BTC-PERPETUAL\"", "name = \"DOGE-PERPETUAL\""), "risk.instrument[0].name");
    refused(
        &edit("[quote]\ninstrument = \"BTC-PERPETUAL\"", "[quote]\ninstrument = \"ETH-PERPETUAL\""),
        "quote.instrument",
    );
    refused(&edit("amount = \"100\"", "amount = \"105\""), "quote.amount");
    refused(&edit("distance_ticks = 10", "distance_ticks = 10\ndistance_bps = 3"), "distance_ticks");
    refused(&edit("label_prefix = \"tt\"", "label_prefix = \"t-t\""), "label_prefix");
    refused(&edit("strategy = \"quote\"", "strategy = \"hodl\""), "strategy");
    refused(&edit("order_slots = 256", "order_slots = 0"), "capacity.order_slots");
    refused(&edit("price_band_reference = \"mid\"", "price_band_reference = \"last\""), "price_band_reference");
    let twice = TEMPLATE.replace("[quote]", "[[risk.instrument]]\nname = \"BTC-PERPETUAL\"\n\n[quote]");
    refused(&twice, "risk.instrument[1].name");
    // A loss limit on an instrument whose PnL is not counted.
    refused(&edit("name = \"BTC-PERPETUAL\"", "name = \"BTC-FS-27DEC24_PERP\""), "risk.instrument[0].max_loss");
}

#[test]
fn linear_notional_is_price_times_amount() {
    let text = edit(
        "name = \"BTC-PERPETUAL\"\nmax_order_amount = \"1000\"",
        "name = \"BTC_USDC-PERPETUAL\"\nmax_order_amount = \"1\"",
    )
    .replace("max_position = \"5000\"", "max_position = \"2\"");
    let setup = Config::parse(&text).unwrap().validate(&venue()).unwrap();
    assert_eq!(setup.specs.len(), 2);
    let l = setup.limits.instruments[1];
    // 1000 USDC in units of 1 × 0.0001.
    assert_eq!(l.max_order_notional.map(|n| n.0), Some(10_000_000));
    assert_eq!(l.notional, Notional::PriceTimesAmount);
    assert_eq!(l.max_order_qty, Some(Qty::from_raw(10_000)));
}

#[test]
fn a_custom_strategy_names_its_instrument_and_keeps_its_table() {
    let text = format!(
        "{}\n[custom]\ninstrument = \"BTC-PERPETUAL\"\nspread = 4\n",
        edit("strategy = \"quote\"", "strategy = \"custom\"")
    );
    let setup = Config::parse(&text).unwrap().validate(&venue()).unwrap();
    assert!(setup.strategy.is_none());
    assert_eq!(setup.custom.as_ref().and_then(|c| c.get("spread")).and_then(|v| v.as_integer()), Some(4));
    assert_eq!(setup.specs[0].name, "BTC-PERPETUAL");
    assert!(setup.runner(1).is_err(), "a custom strategy has no built-in runner");

    let missing = Config::parse(&edit("strategy = \"quote\"", "strategy = \"custom\"")).unwrap();
    let error = missing.validate(&venue()).unwrap_err().to_string();
    assert!(error.starts_with("custom:"), "{error}");
}
