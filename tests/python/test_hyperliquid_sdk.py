"""Hyperliquid's official Python SDK, unchanged, against `ticktrade hl`: only its base URL differs.

`ticktrade hl gen` writes synthetic hl-node files in real time into a temporary data directory;
`ticktrade hl` follows them and serves `/info` and `/ws`. The SDK asks `/info` for metadata at
start-up, then takes an `l2_snapshot`, the markets with their asset contexts, mids, candles, a
generated user's open orders and their status, and live `l2Book`, `trades`, `candle`, `allMids`
and `userFills` subscriptions.
"""

import threading
import time
from decimal import Decimal

import pytest
from hyperliquid.info import Info

from conftest import Server


@pytest.fixture(scope="module")
def hl_server(tmp_path_factory):
    data = tmp_path_factory.mktemp("hl") / "data"
    gen = Server(
        ["hl", "gen", "--out", str(data), "--coins", "24", "--block-ms", "100", "--blocks", "3000", "--seed", "5"],
        r"snapshot at block",
    )
    server = Server(
        [
            "hl",
            "--data-dir", str(data),
            "--snapshot", str(data / "snapshot.json"),
            "--meta", str(data / "meta.json"),
            "--spot-meta", str(data / "spotMeta.json"),
            "--listen", "127.0.0.1:0",
        ],
        r"http://127\.0\.0\.1:(\d+)/info",
    )
    server.port = int(server.match.group(1))
    yield server
    alive = server.proc.poll() is None
    server.stop()
    gen.stop()
    assert alive, "ticktrade hl died during the tests:\n" + server.output()[-5000:]


@pytest.fixture(scope="module")
def info(hl_server):
    client = Info(base_url=f"http://127.0.0.1:{hl_server.port}", skip_ws=False)
    yield client
    client.disconnect_websocket()


def collect(info, subscription, want, timeout_s=30.0):
    got = []
    done = threading.Event()

    def on_message(message):
        got.append(message)
        if len(got) >= want:
            done.set()

    sub_id = info.subscribe(subscription, on_message)
    assert done.wait(timeout_s), f"only {len(got)} messages for {subscription}"
    info.unsubscribe(subscription, sub_id)
    return got


def test_meta_and_spot_meta(info):
    names = [asset["name"] for asset in info.meta()["universe"]]
    assert "BTC" in names and "ETH" in names
    assert all(isinstance(asset["szDecimals"], int) for asset in info.meta()["universe"])
    assert "universe" in info.spot_meta() and "tokens" in info.spot_meta()


def test_l2_snapshot(info):
    snap = info.l2_snapshot("BTC")
    assert snap["coin"] == "BTC"
    bids, asks = snap["levels"]
    assert bids and asks
    bid_px = [Decimal(level["px"]) for level in bids]
    ask_px = [Decimal(level["px"]) for level in asks]
    assert bid_px == sorted(bid_px, reverse=True) and ask_px == sorted(ask_px)
    assert bid_px[0] < ask_px[0]
    assert all(level["n"] >= 1 and Decimal(level["sz"]) > 0 for level in bids + asks)


def test_live_l2_book(info):
    messages = collect(info, {"type": "l2Book", "coin": "BTC"}, want=3)
    for message in messages:
        assert message["channel"] == "l2Book"
        data = message["data"]
        assert data["coin"] == "BTC" and isinstance(data["time"], int)
        bids, asks = data["levels"]
        assert bids and asks and Decimal(bids[0]["px"]) < Decimal(asks[0]["px"])
    times = [m["data"]["time"] for m in messages]
    assert times == sorted(times)


def test_live_l2_book_at_three_significant_figures(info):
    messages = collect(info, {"type": "l2Book", "coin": "BTC", "nSigFigs": 3}, want=2)
    for message in messages:
        for side in message["data"]["levels"]:
            for level in side:
                digits = Decimal(level["px"]).normalize().as_tuple().digits
                assert len(digits) <= 3, level


def test_live_trades(info):
    messages = collect(info, {"type": "trades", "coin": "BTC"}, want=2)
    for message in messages:
        assert message["channel"] == "trades"
        for trade in message["data"]:
            assert trade["coin"] == "BTC" and trade["side"] in ("A", "B")
            assert Decimal(trade["px"]) > 0 and Decimal(trade["sz"]) > 0
            assert len(trade["users"]) == 2


def check_candle(candle, interval_ms):
    assert sorted(candle) == ["T", "c", "h", "i", "l", "n", "o", "s", "t", "v"], candle
    assert candle["s"] == "BTC" and candle["T"] == candle["t"] + interval_ms - 1
    low, high = Decimal(candle["l"]), Decimal(candle["h"])
    assert 0 < low <= min(Decimal(candle["o"]), Decimal(candle["c"])) <= high
    assert candle["n"] >= 1 and Decimal(candle["v"]) > 0


def test_candles_snapshot_and_subscription(info):
    # Candles are built from the trades since the server started (the generator stamps its
    # blocks with the wall clock): wait for one.
    collect(info, {"type": "trades", "coin": "BTC"}, want=1)
    now_ms = int(time.time() * 1000)
    candles = info.candles_snapshot("BTC", "1m", now_ms - 3_600_000, now_ms + 60_000)
    assert candles, "a trade was seen, so its minute has a candle"
    for candle in candles:
        check_candle(candle, 60_000)
        assert candle["i"] == "1m"
    assert [c["t"] for c in candles] == sorted({c["t"] for c in candles})
    hourly = info.candles_snapshot("BTC", "1h", now_ms - 3_600_000, now_ms + 60_000)
    assert sum(c["n"] for c in hourly) >= sum(c["n"] for c in candles if c["t"] >= hourly[0]["t"])
    messages = collect(info, {"type": "candle", "coin": "BTC", "interval": "1m"}, want=2)
    for message in messages:
        assert message["channel"] == "candle" and message["data"]["i"] == "1m"
        check_candle(message["data"], 60_000)


def test_start_up_with_perp_dexs(hl_server):
    # With perp_dexs given, Info() also asks POST /info {"type":"perpDexs"} at start-up.
    client = Info(base_url=f"http://127.0.0.1:{hl_server.port}", skip_ws=True, perp_dexs=[""])
    assert client.perp_dexs()[0] is None
    assert client.name_to_coin["BTC"] == "BTC"


def generated_user(n):
    """The address `ticktrade hl gen` writes for its user number `n`."""
    return "0x" + format(0xABC0000 + n, "040x")


def test_all_mids(info):
    mids = info.all_mids()
    assert "BTC" in mids and "ETH" in mids
    assert all(Decimal(mid) > 0 for mid in mids.values())


def test_meta_and_asset_ctxs(info):
    meta, ctxs = info.meta_and_asset_ctxs()
    assert len(meta["universe"]) == len(ctxs)
    btc = ctxs[[a["name"] for a in meta["universe"]].index("BTC")]
    bid, ask = (Decimal(px) for px in btc["impactPxs"])
    assert bid < Decimal(btc["midPx"]) < ask
    spot_meta, spot_ctxs = info.spot_meta_and_asset_ctxs()
    assert len(spot_meta["universe"]) == len(spot_ctxs)
    assert spot_ctxs[0]["coin"] == "PURR/USDC"


def test_a_users_open_orders_and_their_status(info):
    user = generated_user(7)
    orders = info.open_orders(user)
    assert orders, "the generated user has resting orders"
    frontend = info.frontend_open_orders(user)
    # The two answers are read at different blocks: compare what both still list.
    common = {o["oid"] for o in orders} & {o["oid"] for o in frontend}
    assert common
    for order in frontend:
        assert order["isTrigger"] is False and Decimal(order["origSz"]) >= Decimal(order["sz"])
        assert order["side"] in ("A", "B") and order["orderType"]
    oid = next(iter(common))
    status = info.query_order_by_oid(user, oid)
    if status["status"] == "order":
        assert status["order"]["order"]["oid"] == oid and status["order"]["status"] == "open"
    else:
        # Filled or canceled since: it left the book, and only resting orders are known.
        assert status == {"status": "unknownOid"}
        assert oid not in {o["oid"] for o in info.open_orders(user)}
    assert info.query_order_by_oid(generated_user(8), oid) == {"status": "unknownOid"}


def test_user_fills_subscription(info):
    user = generated_user(7)
    messages = collect(info, {"type": "userFills", "user": user}, want=3)
    assert messages[0]["data"] == {"isSnapshot": True, "user": user, "fills": []}
    fills = [f for m in messages[1:] for f in m["data"]["fills"]]
    assert fills and all(m["data"]["user"] == user for m in messages)
    for fill in fills:
        assert fill["side"] in ("A", "B") and Decimal(fill["px"]) > 0 and isinstance(fill["tid"], int)


def test_all_mids_subscription(info):
    messages = collect(info, {"type": "allMids"}, want=2)
    for message in messages:
        assert "BTC" in message["data"]["mids"]
