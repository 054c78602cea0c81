//! Behaviour of the matching engine through its public API: one scenario per rule.

#![allow(clippy::unwrap_used)] // Tests: a panic is the failure report.

use ticktrade_core::{Decimal, InstrumentId, Price, Qty, Side, Utc};
use ticktrade_exchange::{
    AccountId, BookAction, CancelReason, Catalogue, CatalogueParams, Config, ConnectionId, EditParams, Event, Exchange,
    Label, Liquidity, Money, OrderFilter, OrderState, OrderType, PlaceParams, Reject, Reply, Request, SelfTrade, Size,
    TimeInForce, TriggerKind,
};

const A: AccountId = AccountId(1);
const B: AccountId = AccountId(2);
const T0: Utc = Utc::from_millis(1_767_254_400_000); // 2026-01-01T08:00:00Z

fn d(text: &str) -> Decimal {
    Decimal::parse(text).unwrap()
}

fn m(text: &str) -> Money {
    Money::from_decimal(d(text))
}

struct Env {
    ex: Exchange,
    out: Vec<Event>,
    perp: InstrumentId,
}

impl Env {
    fn new() -> Env {
        Env::with_config(Config::default())
    }

    fn with_config(config: Config) -> Env {
        let cat = Catalogue::builtin(CatalogueParams::default()).unwrap();
        let perp = cat.lookup("BTC-PERPETUAL").unwrap();
        let mut ex = Exchange::new(cat, config);
        let mut out = Vec::new();
        let index = ex.catalogue().index("btc_usd").unwrap();
        ex.set_index(T0, index, d("50000"), &mut out);
        Env { ex, out, perp }
    }

    fn req(&mut self, account: AccountId, request: Request) -> Result<Reply, Reject> {
        self.out.clear();
        self.ex.handle(T0, account, request, &mut self.out)
    }

    fn place(&mut self, account: AccountId, params: PlaceParams) -> Result<ticktrade_exchange::Order, Reject> {
        match self.req(account, Request::Place(params))? {
            Reply::Order(o) => Ok(o),
            Reply::Count(_) => panic!("count reply"),
        }
    }

    fn limit(&mut self, account: AccountId, side: Side, amount: &str, price: &str) -> ticktrade_exchange::Order {
        self.place(account, PlaceParams::limit(self.perp, side, d(amount), d(price))).unwrap()
    }

    fn levels(&self, side: Side) -> Vec<(i64, i64, u32)> {
        self.ex.book(self.perp).unwrap().levels(side).map(|l| (l.price.raw(), l.qty.raw(), l.n_orders)).collect()
    }

    fn trades(&self) -> Vec<(u32, Side, i64, i64, Liquidity)> {
        self.out
            .iter()
            .filter_map(|e| match e {
                Event::UserTrade(t) => Some((t.account.0, t.side, t.price.raw(), t.qty.raw(), t.liquidity)),
                _ => None,
            })
            .collect()
    }
}

#[test]
fn limit_orders_rest_and_match_in_price_time_order() {
    let mut env = Env::new();
    let a1 = env.limit(A, Side::Sell, "100", "50001");
    let a2 = env.limit(B, Side::Sell, "50", "50001");
    env.limit(B, Side::Sell, "10", "50000.5");
    assert_eq!(a1.state, OrderState::Open);
    assert_eq!(env.levels(Side::Sell), vec![(100_001, 1, 1), (100_002, 15, 2)]);
    let taker = env.limit(AccountId(3), Side::Buy, "120", "50001");
    assert_eq!(taker.state, OrderState::Filled);
    assert_eq!(taker.filled, Qty::from_raw(12));
    assert_eq!(
        env.trades(),
        vec![
            (2, Side::Sell, 100_001, 1, Liquidity::Maker),
            (3, Side::Buy, 100_001, 1, Liquidity::Taker),
            (1, Side::Sell, 100_002, 10, Liquidity::Maker),
            (3, Side::Buy, 100_002, 10, Liquidity::Taker),
            (2, Side::Sell, 100_002, 1, Liquidity::Maker),
            (3, Side::Buy, 100_002, 1, Liquidity::Taker),
        ]
    );
    assert_eq!(env.levels(Side::Sell), vec![(100_002, 4, 1)]);
    assert_eq!(env.ex.order(a2.id).unwrap().filled, Qty::from_raw(1));
    assert_eq!(env.ex.order(a1.id).unwrap().state, OrderState::Filled);
    // Average price over 1 lot at 100 001 and 11 at 100 002 ticks.
    assert!((taker.average_price_ticks() - (100_001.0 + 11.0 * 100_002.0) / 12.0).abs() < 1e-9);
    assert_eq!(env.ex.position(AccountId(3), env.perp).size, 12);
    assert_eq!(env.ex.position(A, env.perp).size, -10);
}

#[test]
fn book_changes_come_in_batches_with_change_ids() {
    let mut env = Env::new();
    env.limit(A, Side::Buy, "10", "49000");
    let batch = |out: &[Event]| -> Vec<(BookAction, i64, i64)> {
        out.iter()
            .filter_map(|e| match e {
                Event::BookLevel(l) => Some((l.action, l.price.raw(), l.qty.raw())),
                _ => None,
            })
            .collect()
    };
    let ids = |out: &[Event]| -> Vec<(u64, u64)> {
        out.iter()
            .filter_map(|e| match e {
                Event::BookBatch(b) => Some((b.prev_change_id, b.change_id)),
                _ => None,
            })
            .collect()
    };
    assert_eq!(batch(&env.out), vec![(BookAction::New, 98_000, 1)]);
    assert_eq!(ids(&env.out), vec![(0, 1)]);
    env.limit(B, Side::Buy, "20", "49000");
    assert_eq!(batch(&env.out), vec![(BookAction::Change, 98_000, 3)]);
    assert_eq!(ids(&env.out), vec![(1, 2)]);
    env.limit(AccountId(3), Side::Sell, "30", "49000");
    assert_eq!(batch(&env.out), vec![(BookAction::Delete, 98_000, 0)]);
    assert_eq!(ids(&env.out), vec![(2, 3)]);
    assert!(env.out.iter().any(|e| matches!(e, Event::Ticker { .. })));
    assert_eq!(env.ex.change_id(env.perp), 3);
}

#[test]
fn ioc_fok_market_and_market_limit() {
    let mut env = Env::new();
    env.limit(A, Side::Sell, "50", "50000");
    env.limit(A, Side::Sell, "50", "50010");
    let ioc = PlaceParams {
        time_in_force: TimeInForce::ImmediateOrCancel,
        ..PlaceParams::limit(env.perp, Side::Buy, d("80"), d("50000"))
    };
    let o = env.place(B, ioc).unwrap();
    assert_eq!((o.state, o.filled.raw()), (OrderState::Cancelled, 5));
    let fok = PlaceParams {
        time_in_force: TimeInForce::FillOrKill,
        ..PlaceParams::limit(env.perp, Side::Buy, d("60"), d("50010"))
    };
    let o = env.place(B, fok).unwrap();
    assert_eq!((o.state, o.filled.raw()), (OrderState::Cancelled, 0));
    assert!(env.trades().is_empty());
    env.limit(A, Side::Sell, "50", "50020");
    let o = env.place(B, PlaceParams::market(env.perp, Side::Buy, d("70"))).unwrap();
    assert_eq!((o.state, o.filled.raw()), (OrderState::Filled, 7));
    assert_eq!(env.levels(Side::Sell), vec![(100_040, 3, 1)]);
    let ml = PlaceParams { order_type: OrderType::MarketLimit, ..PlaceParams::market(env.perp, Side::Buy, d("50")) };
    let o = env.place(B, ml).unwrap();
    assert_eq!(
        (o.state, o.order_type, o.original_order_type),
        (OrderState::Open, OrderType::Limit, Some(OrderType::MarketLimit))
    );
    assert_eq!(env.levels(Side::Buy), vec![(100_040, 2, 1)]);
    // A market order into an empty side is cancelled, not rejected.
    let o = env.place(B, PlaceParams::market(env.perp, Side::Buy, d("10"))).unwrap();
    assert_eq!(o.state, OrderState::Cancelled);
}

#[test]
fn post_only_reprices_or_rejects() {
    let mut env = Env::new();
    env.limit(A, Side::Sell, "10", "50000");
    let po = PlaceParams { post_only: true, ..PlaceParams::limit(env.perp, Side::Buy, d("10"), d("50005")) };
    let o = env.place(B, po).unwrap();
    assert_eq!((o.state, o.price), (OrderState::Open, Some(Price::from_raw(99_999))));
    assert!(env.trades().is_empty());
    let rpo = PlaceParams { reject_post_only: true, ..po };
    assert_eq!(env.place(B, rpo).unwrap_err(), Reject::POST_ONLY_REJECT);
    let ioc_po = PlaceParams { time_in_force: TimeInForce::ImmediateOrCancel, ..po };
    assert_eq!(env.place(B, ioc_po).unwrap_err().code, 11029);
}

#[test]
fn validation_uses_deribits_codes() {
    let mut env = Env::new();
    let perp = env.perp;
    let check = |env: &mut Env, params: PlaceParams, code: i32| {
        assert_eq!(env.place(A, params).unwrap_err().code, code, "{params:?}");
        assert!(env.out.is_empty());
    };
    check(&mut env, PlaceParams::limit(perp, Side::Buy, d("10"), d("50000.25")), 10043);
    check(&mut env, PlaceParams::limit(perp, Side::Buy, d("15"), d("50000")), 10027);
    check(&mut env, PlaceParams::limit(perp, Side::Buy, d("0"), d("50000")), 10021);
    check(&mut env, PlaceParams::limit(perp, Side::Buy, d("100000000000000"), d("50000")), 10021);
    check(&mut env, PlaceParams::limit(perp, Side::Buy, d("10"), d("-5")), 10023);
    check(&mut env, PlaceParams::limit(perp, Side::Buy, d("10"), d("1000000000000000")), 10023);
    check(&mut env, PlaceParams::limit(InstrumentId(9_999), Side::Buy, d("10"), d("50000")), 10020);
    let both = PlaceParams {
        size: Size { amount: Some(d("20")), contracts: Some(d("3")) },
        ..PlaceParams::limit(perp, Side::Buy, d("10"), d("50000"))
    };
    check(&mut env, both, 10021);
    let contracts = PlaceParams { size: Size { amount: Some(d("30")), contracts: Some(d("3")) }, ..both };
    assert_eq!(env.place(A, contracts).unwrap().amount, Qty::from_raw(3));
    let opt = env.ex.catalogue().lookup("BTC-27MAR26-90000-C").unwrap();
    check(&mut env, PlaceParams::limit(opt, Side::Buy, d("0.05"), d("0.01")), 10002);
    check(&mut env, PlaceParams::limit(opt, Side::Buy, d("0.1"), d("0.1005")), 10043);
    let no_price = PlaceParams { price: None, ..PlaceParams::limit(perp, Side::Buy, d("10"), d("1")) };
    check(&mut env, no_price, -32602);
    assert_eq!(Label::new(&"l".repeat(65)).unwrap_err().code, -32602);
    let late =
        PlaceParams { valid_until: Some(Utc(T0.0 - 1)), ..PlaceParams::limit(perp, Side::Buy, d("10"), d("50000")) };
    check(&mut env, late, 13888);
    // 10 BTC at 2 % initial margin carries 500 BTC of notional: 30 M USD at 50 000 is too much.
    check(&mut env, PlaceParams::limit(perp, Side::Buy, d("30000000"), d("50000")), 10009);
    env.limit(A, Side::Buy, "20000000", "50000");
    check(&mut env, PlaceParams::limit(perp, Side::Buy, d("10000000"), d("50000")), 10009);
}

#[test]
fn edit_keeps_priority_only_when_size_goes_down_at_the_same_price() {
    let mut env = Env::new();
    let first = env.limit(A, Side::Buy, "50", "49000");
    let second = env.limit(B, Side::Buy, "50", "49000");
    let queue = |env: &Env| {
        env.ex.book(env.perp).unwrap().orders_at(Side::Buy, Price::from_raw(98_000)).map(|o| o.id).collect::<Vec<_>>()
    };
    env.req(A, Request::Edit(EditParams::new(first.id, d("30"), Some(d("49000"))))).unwrap();
    assert_eq!(queue(&env), vec![first.id, second.id]);
    let Reply::Order(o) = env.req(A, Request::Edit(EditParams::new(first.id, d("40"), None))).unwrap() else {
        panic!()
    };
    assert!(o.replaced);
    assert_eq!(queue(&env), vec![second.id, first.id]);
    env.req(B, Request::Edit(EditParams::new(second.id, d("50"), Some(d("49000.5"))))).unwrap();
    assert_eq!(env.levels(Side::Buy), vec![(98_001, 5, 1), (98_000, 4, 1)]);
    assert_eq!(
        env.req(B, Request::Edit(EditParams::new(first.id, d("10"), None))).unwrap_err(),
        Reject::NOT_OWNER_OF_ORDER
    );
    assert_eq!(env.req(A, Request::Edit(EditParams::new(7, d("10"), None))).unwrap_err(), Reject::ORDER_NOT_FOUND);
    // An edit that crosses trades as a taker.
    env.limit(A, Side::Sell, "10", "49500");
    let Reply::Order(o) = env.req(B, Request::Edit(EditParams::new(second.id, d("50"), Some(d("49500"))))).unwrap()
    else {
        panic!()
    };
    assert_eq!(o.filled.raw(), 1);
    assert_eq!(env.trades().len(), 2);
}

#[test]
fn cancel_cancel_all_and_labels() {
    let mut env = Env::new();
    let o = env.limit(A, Side::Buy, "10", "49000");
    let Reply::Order(c) = env.req(A, Request::Cancel { order_id: o.id }).unwrap() else { panic!() };
    assert_eq!(c.state, OrderState::Cancelled);
    assert_eq!(env.req(A, Request::Cancel { order_id: o.id }).unwrap_err(), Reject::NOT_OPEN_ORDER);
    let label = Label::new("grid").unwrap();
    for price in ["48000", "48500", "49000"] {
        env.place(A, PlaceParams { label, ..PlaceParams::limit(env.perp, Side::Buy, d("10"), d(price)) }).unwrap();
    }
    let eth = env.ex.catalogue().lookup("ETH-PERPETUAL").unwrap();
    env.place(A, PlaceParams::limit(eth, Side::Buy, d("1"), d("2000"))).unwrap();
    env.place(B, PlaceParams::limit(env.perp, Side::Buy, d("10"), d("47000"))).unwrap();
    let edit = EditParams {
        order: ticktrade_exchange::OrderRef::Label { instrument: env.perp, label },
        ..EditParams::new(0, d("10"), None)
    };
    assert_eq!(env.req(A, Request::Edit(edit)).unwrap_err(), Reject::NON_UNIQUE_ORDER_LABEL);
    assert_eq!(env.req(A, Request::CancelByLabel { label, currency: None }).unwrap(), Reply::Count(3));
    let filter = OrderFilter { instrument: Some(env.perp), ..OrderFilter::default() };
    assert_eq!(env.req(A, Request::CancelAll(filter)).unwrap(), Reply::Count(0));
    assert_eq!(env.ex.open_orders(A, OrderFilter::default()).len(), 1);
    assert_eq!(env.req(A, Request::CancelAll(OrderFilter::default())).unwrap(), Reply::Count(1));
    assert_eq!(env.levels(Side::Buy), vec![(94_000, 1, 1)]);
}

#[test]
fn self_trade_cancels_the_maker_or_rejects_the_taker() {
    let mut env = Env::new();
    let own = env.limit(A, Side::Sell, "10", "50000");
    env.limit(B, Side::Sell, "10", "50000");
    let o = env.limit(A, Side::Buy, "10", "50000");
    assert_eq!(o.state, OrderState::Filled);
    assert_eq!(env.ex.order(own.id).unwrap().state, OrderState::Cancelled);
    assert_eq!(env.trades().iter().map(|t| t.0).collect::<Vec<_>>(), vec![2, 1]);

    let mut env = Env::with_config(Config { self_trade: SelfTrade::RejectTaker, ..Config::default() });
    env.limit(A, Side::Sell, "10", "50000");
    assert_eq!(
        env.place(A, PlaceParams::limit(env.perp, Side::Buy, d("10"), d("50000"))).unwrap_err(),
        Reject::ORDER_OVERLAP
    );
    assert_eq!(env.levels(Side::Sell), vec![(100_000, 1, 1)]);
}

#[test]
fn positions_fees_and_account_summary() {
    let mut env = Env::new();
    let btc = env.ex.catalogue().currency("BTC").unwrap();
    env.limit(A, Side::Sell, "10000", "50000");
    env.limit(B, Side::Buy, "10000", "50000");
    let fee = match env.out.iter().find(|e| matches!(e, Event::UserTrade(t) if t.account == B)) {
        Some(Event::UserTrade(t)) => t.fee,
        _ => panic!(),
    };
    assert_eq!(fee, m("0.0001")); // 0.05 % of 0.2 BTC, exactly
    let s = env.ex.account_summary(B, btc);
    assert_eq!(s.balance, m("9.9999"));
    assert_eq!(s.initial_margin, m("0.004")); // 2 % of 0.2 BTC
    // Price doubles: long 10 000 USD gains 0.2 − 0.1 = 0.1 BTC.
    env.ex.set_mark(T0, env.perp, d("100000"), &mut env.out);
    let s = env.ex.account_summary(B, btc);
    assert_eq!(s.session_upl, m("0.1"), "{s:?}");
    assert_eq!((s.equity, s.available_funds), (m("10.0999"), m("10.0999") - s.initial_margin));
    let pos = env.ex.position(B, env.perp);
    assert_eq!((pos.size, pos.direction()), (1_000, "buy"));
    let view = env.ex.position_view(B, env.perp).unwrap();
    assert_eq!((view.floating_pnl, view.size_amount), (m("0.1"), m("10000")));
    assert_eq!((view.size_currency, view.initial_margin), (m("0.1"), m("0.002")));
    let trade_id = env.ex.recent_trades(env.perp).last().unwrap().trade_id;
    let mut text = String::new();
    env.ex.write_trade_id(env.perp, trade_id, &mut text);
    assert_eq!(text, format!("BTC-{trade_id}"));
    assert_eq!(env.ex.ticker(env.perp).unwrap().open_interest, 1_000);
    env.limit(A, Side::Buy, "10000", "100000");
    let Reply::Order(close) = env
        .req(
            B,
            Request::ClosePosition {
                instrument: env.perp,
                order_type: OrderType::Market,
                price: None,
                connection: None,
            },
        )
        .unwrap()
    else {
        panic!()
    };
    assert!(close.reduce_only && close.state == OrderState::Filled);
    let pos = env.ex.position(B, env.perp);
    assert_eq!(pos.size, 0);
    assert_eq!(pos.realized_pnl, m("0.1"));
    assert_eq!(env.ex.ticker(env.perp).unwrap().open_interest, 0);
    // Reduce-only cannot open a position.
    let ro = PlaceParams { reduce_only: true, ..PlaceParams::limit(env.perp, Side::Buy, d("10"), d("40000")) };
    assert_eq!(env.place(B, ro).unwrap_err().code, 11029);
}

#[test]
fn stop_and_trailing_orders_fire_on_their_trigger() {
    let mut env = Env::new();
    env.limit(A, Side::Buy, "100", "49000");
    let stop = PlaceParams {
        order_type: OrderType::StopMarket,
        trigger: Some(TriggerKind::MarkPrice),
        trigger_price: Some(d("49500")),
        ..PlaceParams::market(env.perp, Side::Sell, d("50"))
    };
    let o = env.place(B, stop).unwrap();
    assert_eq!(o.state, OrderState::Untriggered);
    assert!(env.ex.order_id_text(&o).starts_with("BTC-SLMS-"));
    env.out.clear();
    env.ex.set_mark(T0, env.perp, d("49600"), &mut env.out);
    assert_eq!(env.ex.order(o.id).unwrap().state, OrderState::Untriggered);
    env.ex.set_mark(T0, env.perp, d("49400"), &mut env.out);
    assert_eq!(env.ex.order(o.id).unwrap().state, OrderState::Triggered);
    let fired = env.out.iter().find_map(|e| match e {
        Event::Order(x) if x.trigger_order_id == Some(o.id) => Some(*x),
        _ => None,
    });
    assert_eq!(fired.map(|f| (f.state, f.filled.raw())), Some((OrderState::Filled, 5)));
    assert_eq!(env.ex.position(B, env.perp).size, -5);

    // Trailing buy stop 100 USD above the trough of the index.
    let index = env.ex.catalogue().index("btc_usd").unwrap();
    env.limit(A, Side::Sell, "100", "48000");
    let trail = PlaceParams {
        order_type: OrderType::TrailingStop,
        trigger: Some(TriggerKind::IndexPrice),
        trigger_offset: Some(d("100")),
        ..PlaceParams::market(env.perp, Side::Buy, d("10"))
    };
    let t = env.place(B, trail).unwrap();
    env.ex.set_index(T0, index, d("47000"), &mut env.out);
    env.ex.set_index(T0, index, d("47050"), &mut env.out);
    assert_eq!(env.ex.order(t.id).unwrap().state, OrderState::Untriggered);
    assert_eq!(env.ex.order(t.id).unwrap().trigger.unwrap().price, Price::from_raw(94_200));
    env.ex.set_index(T0, index, d("47100"), &mut env.out);
    assert_eq!(env.ex.order(t.id).unwrap().state, OrderState::Triggered);
    assert_eq!(env.ex.position(B, env.perp).size, -4);
}

#[test]
fn good_til_day_expires_at_the_0800_session_end() {
    let mut env = Env::new();
    let gtd = PlaceParams {
        time_in_force: TimeInForce::GoodTilDay,
        ..PlaceParams::limit(env.perp, Side::Buy, d("10"), d("49000"))
    };
    let o = env.place(A, gtd).unwrap();
    assert_eq!(o.expires, Some(Utc::from_millis(T0.as_millis() + 86_400_000)));
    env.out.clear();
    env.ex.advance(Utc::from_millis(T0.as_millis() + 86_399_999), &mut env.out);
    assert!(env.out.is_empty());
    env.ex.advance(Utc::from_millis(T0.as_millis() + 86_400_000), &mut env.out);
    assert_eq!(env.ex.order(o.id).unwrap().state, OrderState::Cancelled);
    assert!(env.levels(Side::Buy).is_empty());
    assert!(env.out.iter().any(|e| matches!(e, Event::BookLevel(l) if l.action == BookAction::Delete)));
}

#[test]
fn spot_moves_balances_and_queries_see_history() {
    let mut env = Env::new();
    let spot = env.ex.catalogue().lookup("BTC_USDC").unwrap();
    let (btc, usdc) = (env.ex.catalogue().currency("BTC").unwrap(), env.ex.catalogue().currency("USDC").unwrap());
    env.place(A, PlaceParams::limit(spot, Side::Sell, d("1"), d("50000"))).unwrap();
    let o = env.place(B, PlaceParams::market(spot, Side::Buy, d("0.5"))).unwrap();
    assert_eq!(o.state, OrderState::Filled);
    assert_eq!(env.ex.account_summary(B, btc).balance, m("10.5"));
    assert_eq!(env.ex.account_summary(B, usdc).balance, m("975000"));
    assert_eq!(env.ex.user_trades(B, Default::default()).count(), 1);
    assert_eq!(env.ex.recent_trades(spot).count(), 1);
    assert_eq!(env.ex.order_history(B, OrderFilter::default()).len(), 1);
    let candles = env.ex.candles(spot, Utc(0), Utc(i64::MAX), 60);
    assert_eq!(candles.len(), 1);
    assert_eq!(candles[0].volume, Qty::from_raw(5_000));
}

#[test]
fn expiry_cancels_orders_and_settles_positions_at_the_mark() {
    let mut env = Env::new();
    let fut = env.ex.catalogue().lookup("BTC-9JAN26").unwrap();
    let expiry = env.ex.catalogue().get(fut).unwrap().expiration_timestamp.unwrap();
    let btc = env.ex.catalogue().currency("BTC").unwrap();
    env.place(A, PlaceParams::limit(fut, Side::Sell, d("10000"), d("50000"))).unwrap();
    env.place(B, PlaceParams::limit(fut, Side::Buy, d("10000"), d("50000"))).unwrap();
    let resting = env.place(B, PlaceParams::limit(fut, Side::Buy, d("10"), d("40000"))).unwrap();
    env.ex.set_mark(T0, fut, d("100000"), &mut env.out);
    let before = env.ex.account_summary(B, btc).balance;
    env.out.clear();
    env.ex.advance(Utc(expiry.0 - 1), &mut env.out); // Earlier option expiries settle here.
    assert_eq!(env.ex.order(resting.id).unwrap().state, OrderState::Open);
    env.ex.advance(expiry, &mut env.out);
    let cancelled = env.ex.order(resting.id).unwrap();
    assert_eq!(
        (cancelled.state, cancelled.cancel_reason),
        (OrderState::Cancelled, Some(ticktrade_exchange::CancelReason::Expired))
    );
    assert_eq!(env.ex.position(B, fut).size, 0);
    // Long 10 000 USD from 50 000 settled at 100 000: +0.1 BTC.
    assert_eq!(env.ex.account_summary(B, btc).balance - before, m("0.1"));
    assert_eq!(env.ex.account_summary(A, btc).session_rpl, -m("0.1"));
    assert_eq!(env.ex.ticker(fut).unwrap().open_interest, 0);
    assert!(env.out.iter().any(|e| matches!(e, Event::Position { account, .. } if *account == B)));
    env.out.clear();
    let err =
        env.ex.handle(expiry, B, Request::Place(PlaceParams::limit(fut, Side::Buy, d("10"), d("40000"))), &mut env.out);
    assert_eq!(err.unwrap_err(), Reject::BOOK_CLOSED);
}

/// Deribit's documented `private/buy` example: ETH-PERPETUAL market buy of 40 with a label,
/// filled at 203.3 with Deribit's taker fee of the time (0.075 %).
#[test]
fn reproduces_the_documented_private_buy_example() {
    let mut catalogue = Catalogue::builtin(CatalogueParams::default()).unwrap();
    let eth = catalogue.lookup("ETH-PERPETUAL").unwrap();
    catalogue.set_commissions(eth, d("0"), d("0.00075"));
    assert_eq!(catalogue.get(eth).unwrap().taker_commission, d("0.00075"));
    let mut ex = Exchange::new(catalogue, Config { first_order_id: 584_849_852, ..Config::default() });
    let mut out = Vec::new();
    ex.handle(T0, B, Request::Place(PlaceParams::limit(eth, Side::Sell, d("100"), d("203.3"))), &mut out).unwrap();
    let buy =
        PlaceParams { label: Label::new("market0000234").unwrap(), ..PlaceParams::market(eth, Side::Buy, d("40")) };
    out.clear();
    let Reply::Order(order) = ex.handle(T0, A, Request::Place(buy), &mut out).unwrap() else { panic!() };
    assert_eq!(ex.order_id_text(&order), "ETH-584849853");
    assert_eq!(
        (order.state, order.order_type, order.label.as_str()),
        (OrderState::Filled, OrderType::Market, "market0000234")
    );
    let spec = &ex.catalogue().get(eth).unwrap().spec;
    assert_eq!(spec.format_qty(order.filled), "40");
    let trade = out
        .iter()
        .find_map(|e| match e {
            Event::UserTrade(t) if t.order_id == order.id => Some(*t),
            _ => None,
        })
        .unwrap();
    let mut trade_id = String::new();
    ex.write_trade_id(eth, trade.trade_id, &mut trade_id);
    assert_eq!(trade_id, "ETH-2696083");
    assert_eq!(
        (spec.format_price(trade.price), trade.liquidity, trade.trade_seq),
        ("203.3".to_owned(), Liquidity::Taker, 1)
    );
    // 40 / 203.3 × 0.00075 = 0.000147565174…; Deribit prints it to 8 places.
    assert_eq!(trade.fee.to_string(), "0.000147565175");
    assert!((trade.fee - m("0.00014757")).abs() < m("0.000000005"), "{}", trade.fee);
}

#[test]
fn cancel_on_disconnect_cancels_the_connections_orders_with_its_own_reason() {
    const C1: ConnectionId = ConnectionId(1);
    const C2: ConnectionId = ConnectionId(2);
    let mut env = Env::new();
    let perp = env.perp;
    let via = |connection, side, price: &str| PlaceParams {
        connection: Some(connection),
        ..PlaceParams::limit(perp, side, d("10"), d(price))
    };
    let a1 = env.place(A, via(C1, Side::Buy, "48000")).unwrap();
    let a2 = env.place(A, via(C1, Side::Sell, "52000")).unwrap();
    // An edit keeps the order's connection.
    env.req(A, Request::Edit(EditParams::new(a2.id, d("20"), Some(d("52500"))))).unwrap();
    let stop = PlaceParams {
        order_type: OrderType::StopMarket,
        trigger: Some(TriggerKind::MarkPrice),
        trigger_price: Some(d("40000")),
        connection: Some(C1),
        ..PlaceParams::market(env.perp, Side::Sell, d("10"))
    };
    let untriggered = env.place(A, stop).unwrap();
    let other_connection = env.place(A, via(C2, Side::Buy, "47000")).unwrap();
    let no_connection = env.limit(A, Side::Buy, "10", "46000");
    let b = env.place(B, via(C1, Side::Buy, "47000")).unwrap();
    let by_user = env.place(A, via(C1, Side::Buy, "47500")).unwrap();
    env.req(A, Request::Cancel { order_id: by_user.id }).unwrap();
    assert_eq!(env.req(A, Request::CancelOnDisconnect { connection: C1 }).unwrap(), Reply::Count(3));
    for id in [a1.id, a2.id, untriggered.id] {
        let o = *env.ex.order(id).unwrap();
        assert_eq!((o.state, o.cancel_reason), (OrderState::Cancelled, Some(CancelReason::CancelOnDisconnect)));
        assert_eq!(CancelReason::CancelOnDisconnect.as_str(), "cancel_on_disconnect");
    }
    let o = *env.ex.order(by_user.id).unwrap();
    assert_eq!(o.cancel_reason, Some(CancelReason::UserRequest));
    for (id, why) in [
        (other_connection.id, "another connection's order stays"),
        (no_connection.id, "an order placed without a connection stays"),
        (b.id, "another account's order stays"),
    ] {
        assert_eq!(env.ex.order(id).unwrap().state, OrderState::Open, "{why}");
    }
}

#[test]
fn an_order_a_trigger_fires_keeps_the_triggers_connection() {
    let mut env = Env::new();
    let stop = PlaceParams {
        order_type: OrderType::StopLimit,
        trigger: Some(TriggerKind::MarkPrice),
        trigger_price: Some(d("49500")),
        price: Some(d("40000")),
        connection: Some(ConnectionId(7)),
        ..PlaceParams::market(env.perp, Side::Sell, d("50"))
    };
    let o = env.place(B, stop).unwrap();
    env.out.clear();
    env.ex.set_mark(T0, env.perp, d("49400"), &mut env.out);
    let fired = env
        .out
        .iter()
        .find_map(|e| match e {
            Event::Order(x) if x.trigger_order_id == Some(o.id) => Some(*x),
            _ => None,
        })
        .unwrap();
    assert_eq!(fired.connection, Some(ConnectionId(7)), "{fired:?}");
}

#[test]
fn trailing_stop_before_any_trade_starts_at_the_mark_and_its_offset_can_be_edited() {
    let mut env = Env::new();
    let trail = PlaceParams {
        order_type: OrderType::TrailingStop,
        trigger: Some(TriggerKind::LastPrice),
        trigger_offset: Some(d("100")),
        ..PlaceParams::market(env.perp, Side::Sell, d("10"))
    };
    let t = env.place(B, trail).unwrap();
    let trigger = t.trigger.unwrap();
    assert!(trigger.reference > 0.0, "no trade yet: the mark stands in for the last price");
    let mark_ticks = (trigger.reference * 2.0).round() as i64;
    assert_eq!(trigger.price, Price::from_raw(mark_ticks - 200));
    assert_eq!(trigger.offset, Some(200));
    let edit = EditParams { trigger_offset: Some(d("50")), ..EditParams::new(t.id, d("10"), None) };
    let Reply::Order(edited) = env.req(B, Request::Edit(edit)).unwrap() else { panic!("not an order") };
    let trigger = edited.trigger.unwrap();
    assert_eq!((trigger.offset, trigger.price), (Some(100), Price::from_raw(mark_ticks - 100)));
    let bad = EditParams { trigger_offset: Some(d("0")), ..EditParams::new(t.id, d("10"), None) };
    assert!(env.req(B, Request::Edit(bad)).is_err());
}
