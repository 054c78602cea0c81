"""ccxt, unchanged, against `ticktrade serve` (embedded simulator upstream): only its URLs are
overridden. watch_order_book, watch_trades and watch_ticker stream through the fan-out server;
ccxt's market list comes over REST from the upstream simulator the server prints.
"""

import asyncio
import re
import time

import ccxt.pro
import pytest

from conftest import Server

PERP = "BTC/USD:BTC"  # ccxt's symbol for BTC-PERPETUAL


@pytest.fixture(scope="module")
def serve():
    server = Server(
        ["serve", "--listen", "127.0.0.1:0", "--sim-rate", "400", "--stats-interval-s", "0"],
        r"ws://127\.0\.0\.1:(\d+)/ws/api/v2",
    )
    server.port = int(server.match.group(1))
    deadline = 100
    while deadline and not any("REST http://" in line for line in server.lines):
        deadline -= 1
        time.sleep(0.05)
    rest = next(re.search(r"REST (http://127\.0\.0\.1:\d+)", l).group(1) for l in server.lines if "REST http://" in l)
    server.rest = rest
    yield server
    server.stop()
    assert "panicked" not in server.output(), server.output()


def client(server):
    exchange = ccxt.pro.deribit({"timeout": 20000})
    exchange.urls["api"] = {"ws": f"ws://127.0.0.1:{server.port}/ws/api/v2", "rest": server.rest}
    return exchange


def test_watch_order_book_trades_and_ticker(serve):
    async def main():
        exchange = client(serve)
        try:
            await exchange.load_markets()
            book = None
            for _ in range(5):
                book = await exchange.watch_order_book(PERP)
            assert book["bids"] and book["asks"]
            assert book["bids"][0][0] < book["asks"][0][0]
            trades = await exchange.watch_trades(PERP)
            assert trades and all(t["symbol"] == PERP for t in trades)
            ticker = await exchange.watch_ticker(PERP)
            assert ticker["symbol"] == PERP and ticker["bid"] and ticker["ask"]
        finally:
            await exchange.close()

    asyncio.run(asyncio.wait_for(main(), 60))
