"""ccxt, unchanged, against `ticktrade sim`: only its URLs are overridden.

This is the proof that the embedded exchange speaks Deribit's API well enough for a widely used
third-party client: REST (GET with query strings, `deri-hmac-sha256` signed private calls) and
WebSocket subscriptions, over plain http/ws and over TLS with the client's verification off;
and the calls market-data users make: start-up (markets, currencies, time, status), tickers,
OHLCV candles and funding rates.
"""

import asyncio

import ccxt
import ccxt.pro
import pytest

from conftest import SIM_CLIENT_ID, SIM_CLIENT_SECRET

PERP = "BTC/USD:BTC"  # ccxt's symbol for BTC-PERPETUAL


def rest_client(port, scheme="http"):
    exchange = ccxt.deribit({"apiKey": SIM_CLIENT_ID, "secret": SIM_CLIENT_SECRET, "timeout": 20000})
    exchange.urls["api"] = {"rest": f"{scheme}://127.0.0.1:{port}"}
    if scheme == "https":
        exchange.verify = False
    return exchange


def ws_client(port, scheme="ws"):
    options = {"apiKey": SIM_CLIENT_ID, "secret": SIM_CLIENT_SECRET, "timeout": 20000}
    if scheme == "wss":
        options["verify"] = False
    exchange = ccxt.pro.deribit(options)
    exchange.urls["api"] = {
        "ws": f"{scheme}://127.0.0.1:{port}/ws/api/v2",
        "rest": f"{'https' if scheme == 'wss' else 'http'}://127.0.0.1:{port}",
    }
    return exchange


def position_size(exchange, symbol):
    for position in exchange.fetch_positions([symbol]):
        if position["symbol"] == symbol:
            contracts = position.get("contracts") or 0
            return contracts if position.get("side") != "short" else -contracts
    return 0


@pytest.fixture(scope="module")
def exchange(sim):
    client = rest_client(sim.port)
    client.load_markets()
    return client


def test_load_markets_has_deribit_catalogue(exchange):
    markets = exchange.markets
    assert PERP in markets, sorted(markets)[:20]
    perp = markets[PERP]
    assert perp["id"] == "BTC-PERPETUAL"
    assert perp["swap"] and perp["inverse"]
    assert perp["precision"]["price"] == 0.5
    assert any(m["option"] for m in markets.values()), "no options in the catalogue"
    assert any(m["spot"] for m in markets.values()), "no spot pairs in the catalogue"


def test_fetch_order_book_and_ticker(exchange):
    book = exchange.fetch_order_book(PERP)
    assert book["bids"] and book["asks"]
    assert book["bids"][0][0] < book["asks"][0][0], "crossed book"
    assert all(b[0] > c[0] for b, c in zip(book["bids"], book["bids"][1:])), "bids not best first"
    ticker = exchange.fetch_ticker(PERP)
    assert ticker["symbol"] == PERP
    assert ticker["bid"] is not None and ticker["ask"] is not None
    assert ticker["bid"] <= ticker["ask"]


def test_start_up_calls_all_succeed(sim):
    """A fresh client's start-up (markets, currencies, time, status): every reply is a result."""
    client = rest_client(sim.port)
    replies = []
    original = client.fetch

    def recording_fetch(url, method="GET", headers=None, body=None):
        reply = original(url, method, headers, body)
        replies.append((url, reply))
        return reply

    client.fetch = recording_fetch
    client.load_markets()
    client.fetch_currencies()
    client.fetch_time()
    client.fetch_status()
    assert len(replies) >= 3, replies
    errors = [(url, reply) for url, reply in replies if not isinstance(reply, dict) or "error" in reply]
    assert errors == [], errors
    assert any(m["future"] and not m["swap"] for m in client.markets.values()), "no dated futures"


def test_fetch_tickers_of_a_currency(exchange):
    # ccxt asks Deribit's book summaries of one base currency at a time.
    dated = next(s for s, m in exchange.markets.items() if m["future"] and m["base"] == "BTC" and not m["swap"])
    tickers = exchange.fetch_tickers([PERP, dated])
    assert PERP in tickers and dated in tickers, sorted(tickers)[:20]
    for symbol in (PERP, dated):
        ticker = tickers[symbol]
        assert ticker["bid"] is not None and ticker["ask"] is not None, ticker
        assert ticker["bid"] <= ticker["ask"], ticker


def test_fetch_ohlcv_candles_are_consistent(exchange):
    # A trade first, so the current minute has a candle of its own.
    exchange.create_order(PERP, "market", "buy", 10)
    candles = exchange.fetch_ohlcv(PERP, "1m", limit=5)
    assert 1 <= len(candles) <= 5, candles
    for ts, o, h, low, c, v in candles:
        assert ts % 60_000 == 0, ts
        assert low <= min(o, c) and h >= max(o, c), (o, h, low, c)
        assert v >= 0
    assert [c[0] for c in candles] == sorted(c[0] for c in candles)
    exchange.create_order(PERP, "market", "sell", 10)


def test_fetch_funding_rate_and_history(exchange):
    rate = exchange.fetch_funding_rate(PERP)
    assert rate["symbol"] == PERP
    assert rate["fundingRate"] == 0, rate  # the simulator has no funding model
    history = exchange.fetch_funding_rate_history(PERP)
    # The simulator samples its index on the hour; the first sample is taken at start.
    assert len(history) >= 1, history
    now = exchange.milliseconds()
    for entry in history:
        assert entry["symbol"] == PERP
        assert entry["fundingRate"] == 0
        assert now - 30 * 86_400_000 <= entry["timestamp"] <= now, entry


def test_limit_order_lifecycle(exchange):
    best_bid = exchange.fetch_order_book(PERP)["bids"][0][0]
    price = best_bid - 500  # far from the touch: rests
    order = exchange.create_order(PERP, "limit", "buy", 100, price)
    assert order["status"] == "open"
    assert order["id"] in [o["id"] for o in exchange.fetch_open_orders(PERP)]
    fetched = exchange.fetch_order(order["id"], PERP)
    assert fetched["status"] == "open" and fetched["price"] == price and fetched["amount"] == 100

    edited = exchange.edit_order(order["id"], PERP, "limit", "buy", 50, price - 10)
    assert edited["amount"] == 50 and edited["price"] == price - 10

    cancelled = exchange.cancel_order(order["id"], PERP)
    assert cancelled["status"] == "canceled"
    assert order["id"] not in [o["id"] for o in exchange.fetch_open_orders(PERP)]
    book = exchange.fetch_order_book(PERP, 1000)
    assert all(level[0] != price - 10 or level[1] != 50 for level in book["bids"])


def test_market_orders_move_position_and_balance(exchange):
    before_position = position_size(exchange, PERP)
    before_balance = exchange.fetch_balance()
    assert "BTC" in before_balance["total"]

    bought = exchange.create_order(PERP, "market", "buy", 100)
    assert bought["status"] == "closed" and bought["filled"] == 100
    # ccxt reports Deribit's position `size`, which is in USD for inverse perpetuals.
    assert position_size(exchange, PERP) == before_position + 100

    trades = exchange.fetch_my_trades(PERP)
    assert bought["id"] in [t["order"] for t in trades]

    sold = exchange.create_order(PERP, "market", "sell", 100)
    assert sold["status"] == "closed" and sold["filled"] == 100
    assert position_size(exchange, PERP) == before_position

    after_balance = exchange.fetch_balance()
    # Two taker fills paid fees (and the round trip may have lost the spread).
    assert after_balance["total"]["BTC"] < before_balance["total"]["BTC"]


def test_sell_limit_and_cancel_all(exchange):
    best_ask = exchange.fetch_order_book(PERP)["asks"][0][0]
    ids = [exchange.create_order(PERP, "limit", "sell", 10, best_ask + 1000 + i)["id"] for i in range(3)]
    open_ids = {o["id"] for o in exchange.fetch_open_orders(PERP)}
    assert set(ids) <= open_ids
    exchange.cancel_all_orders(PERP)
    assert exchange.fetch_open_orders(PERP) == []


def test_bad_requests_get_deribit_errors(exchange):
    # ccxt rounds amounts and prices to the market's precision in create_order, so send the
    # raw Deribit call through its implicit API to see the venue's own validation.
    base = {"instrument_name": "BTC-PERPETUAL", "type": "limit"}
    with pytest.raises(ccxt.BaseError) as amount_error:
        exchange.private_get_buy({**base, "amount": 15, "price": 1000})  # not a multiple of 10 USD
    assert "non_integer_contract_amount" in str(amount_error.value) or "10027" in str(amount_error.value)
    with pytest.raises(ccxt.BaseError) as tick_error:
        exchange.private_get_buy({**base, "amount": 10, "price": 1000.25})  # off the 0.5 tick
    assert "price_wrong_tick" in str(tick_error.value) or "10043" in str(tick_error.value)


def run(coro):
    return asyncio.run(asyncio.wait_for(coro, 60))


def test_watch_streams(sim):
    async def go():
        client = ws_client(sim.port)
        try:
            await client.load_markets()
            book = await client.watch_order_book(PERP)
            assert book["bids"] and book["asks"]
            assert book["bids"][0][0] < book["asks"][0][0]
            book = await client.watch_order_book(PERP)  # a later update applied on top
            assert book["bids"] and book["asks"]
            ticker = await client.watch_ticker(PERP)
            assert ticker["symbol"] == PERP and ticker["last"] is not None
            trades = await client.watch_trades(PERP)
            assert trades and all(t["symbol"] == PERP for t in trades)
        finally:
            await client.close()

    run(go())


def test_tls_rest_and_ws(sim_tls):
    client = rest_client(sim_tls.port, "https")
    client.load_markets()
    assert client.fetch_order_book(PERP)["bids"]
    order = client.create_order(PERP, "market", "buy", 10)
    assert order["status"] == "closed"
    client.create_order(PERP, "market", "sell", 10)

    async def go():
        ws = ws_client(sim_tls.port, "wss")
        try:
            await ws.load_markets()
            book = await ws.watch_order_book(PERP)
            assert book["bids"] and book["asks"]
        finally:
            await ws.close()

    run(go())
