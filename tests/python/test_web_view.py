"""The live web view of `ticktrade serve`, in a real headless browser (Debian's chromium driven
by selenium): the page loads without console errors, its price ladder shows the book's best bid
and ask exactly as the server quotes them (checked against `public/get_order_book` fetched by
this test on the same change_id), and it keeps updating. A screenshot is kept at
target/test-artifacts/web_view.png. An edge's page shows its NATS bus going and coming back.

chromium and chromium-driver are installed by tests/python/setup.sh when it runs as root; if
they are missing this test fails (it does not skip).
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
import websocket

from conftest import ROOT, Server, wait_until

ARTIFACTS = ROOT / "target" / "test-artifacts"
INSTRUMENT = "BTC-PERPETUAL"


@pytest.fixture(scope="module")
def serve():
    server = Server(
        ["serve", "--listen", "127.0.0.1:0", "--sim-rate", "200", "--stats-interval-s", "0"],
        r"ws://127\.0\.0\.1:(\d+)/ws/api/v2",
    )
    server.port = int(server.match.group(1))
    yield server
    alive = server.proc.poll() is None
    server.stop()
    assert alive, "ticktrade serve died during the test:\n" + server.output()[-5000:]
    assert "panicked" not in server.output(), server.output()


@pytest.fixture(scope="module")
def browser():
    chromium = shutil.which("chromium")
    driver_bin = shutil.which("chromedriver")
    if not chromium or not driver_bin:
        pytest.fail(
            "Debian's chromium and chromium-driver are not installed: run tests/python/setup.sh as root "
            "(it installs them with apt-get) or `apt-get install chromium chromium-driver`"
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError as e:
        pytest.fail(f"selenium is not installed in the test venv ({e}): run tests/python/setup.sh")
    profile = tempfile.mkdtemp(prefix="ticktrade-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for arg in [
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--window-size=1600,1000",
        "--force-device-scale-factor=1",
        "--no-first-run",
        "--disable-extensions",
        "--disable-background-networking",
        f"--user-data-dir={profile}",
    ]:
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=driver_bin), options=options)
    driver.set_page_load_timeout(30)
    # A 1600×1000 viewport (--window-size counts the window, not the page).
    driver.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride", {"width": 1600, "height": 1000, "deviceScaleFactor": 1, "mobile": False}
    )
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


def ws_call(port, method, params):
    """One JSON-RPC call over a fresh WebSocket; numbers are kept as the exact text sent."""
    ws = websocket.create_connection(f"ws://127.0.0.1:{port}/ws/api/v2", timeout=10)
    try:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params}))
        while True:
            msg = json.loads(ws.recv(), parse_float=str, parse_int=str)
            if msg.get("id") == "1":
                assert "error" not in msg, msg
                return msg["result"]
    finally:
        ws.close()


class Follower:
    """Another local client of the server (a strategy subscribed to books), so the page's
    per-client table and fan-out histogram have more than the page itself in them."""

    def __init__(self, port, channels):
        self.ws = websocket.create_connection(f"ws://127.0.0.1:{port}/ws/api/v2", timeout=10)
        self.ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "public/subscribe", "params": {"channels": channels}}))
        self.frames = 0
        self.stopped = False
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        while not self.stopped:
            try:
                self.ws.recv()
                self.frames += 1
            except Exception:
                return

    def close(self):
        self.stopped = True
        try:
            self.ws.close()
        except Exception:
            pass


PAGE_STATE = """
const q = (sel) => { const el = document.querySelector(sel); return el ? el.textContent : null; };
return {
  ladderBid: q('#ladder .row.best-bid .px'),
  ladderAsk: q('#ladder .row.best-ask .px'),
  headerBid: q('#best-bid-price'),
  headerAsk: q('#best-ask-price'),
  changeId: q('#change-id'),
  updates: q('#updates'),
  instrument: document.getElementById('instrument').value,
  clientRows: document.querySelectorAll('#clients tbody tr').length,
  meRow: document.querySelector('#clients tbody tr.me') ? document.querySelector('#clients tbody tr.me').textContent : null,
  tapeRows: document.querySelectorAll('#tape .t').length,
};
"""


def severe(logs):
    return [e for e in logs if e.get("level") == "SEVERE" or "ticktrade:" in e.get("message", "")]


def test_web_view_live_ladder_matches_the_book(serve, browser):
    followers = [
        Follower(serve.port, [f"book.{INSTRUMENT}.100ms"]),
        Follower(serve.port, [f"book.{INSTRUMENT}.100ms", f"trades.{INSTRUMENT}.100ms"]),
        Follower(serve.port, [f"book.{INSTRUMENT}.none.10.100ms", f"ticker.{INSTRUMENT}.100ms"]),
    ]
    try:
        browser.get(f"http://127.0.0.1:{serve.port}/")
        assert browser.title == "ticktrade serve"

        state = wait_until(
            lambda: (s := browser.execute_script(PAGE_STATE))["ladderBid"] and s["ladderAsk"] and s,
            timeout_s=20,
            what="the ladder to show a best bid and ask",
        )
        assert state["instrument"] == INSTRUMENT

        # The ladder shows the book's best bid and ask, exactly as the server quotes them: read
        # the page, fetch the book, and compare when both are on the same change_id.
        matched = None
        seen = []
        deadline = time.monotonic() + 20
        while matched is None and time.monotonic() < deadline:
            page = browser.execute_script(PAGE_STATE)
            book = ws_call(serve.port, "public/get_order_book", {"instrument_name": INSTRUMENT, "depth": 5})
            seen.append((page["changeId"], book["change_id"]))
            if page["changeId"] == book["change_id"]:
                matched = (page, book)
        assert matched, f"never read the page and the book on the same change_id: {seen[-10:]}"
        page, book = matched
        assert book["best_bid_price"] is not None and book["best_ask_price"] is not None, book
        assert page["ladderBid"] == book["best_bid_price"], (page, book)
        assert page["ladderAsk"] == book["best_ask_price"], (page, book)
        assert page["headerBid"] == book["best_bid_price"], (page, book)
        assert page["headerAsk"] == book["best_ask_price"], (page, book)
        assert page["ladderBid"] == book["bids"][0][0] and page["ladderAsk"] == book["asks"][0][0]

        # It updates: the change_id chain and the update counter move within a few seconds.
        first = browser.execute_script(PAGE_STATE)
        later = wait_until(
            lambda: (s := browser.execute_script(PAGE_STATE))["changeId"] != first["changeId"]
            and int(s["updates"].replace("\u2009", "")) > int(first["updates"].replace("\u2009", ""))
            and s,
            timeout_s=5,
            what="the ladder to update",
        )
        assert int(later["changeId"]) > int(first["changeId"])

        # The server's stats arrive over the same WebSocket: this page and the followers are listed.
        stats = wait_until(
            lambda: (s := browser.execute_script(PAGE_STATE))["clientRows"] >= 1 + len(followers) and s,
            timeout_s=10,
            what="the per-client table",
        )
        assert stats["meRow"], "the page's own connection is not marked in the per-client table"
        assert all(f.frames > 0 for f in followers), [f.frames for f in followers]
        wait_until(lambda: browser.execute_script(PAGE_STATE)["tapeRows"] > 0, timeout_s=10, what="trades on the tape")

        time.sleep(2.5)  # let the stats and the histogram fill in for the screenshot
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        assert browser.save_screenshot(str(ARTIFACTS / "web_view.png"))

        logs = browser.get_log("browser")
        assert not severe(logs), f"console errors: {severe(logs)}"
    finally:
        for f in followers:
            f.close()


def test_web_view_resyncs_on_instrument_switch(serve, browser):
    """Picking another instrument re-subscribes; the ladder shows that instrument's book."""
    futures = [
        i
        for i in ws_call(serve.port, "public/get_instruments", {"currency": "BTC", "kind": "future"})
        if i["instrument_name"] != INSTRUMENT
    ]
    assert futures, "the simulator lists no dated BTC future"
    other = futures[0]["instrument_name"]
    browser.execute_script(
        "const s = document.getElementById('instrument'); s.value = arguments[0];"
        "s.dispatchEvent(new Event('change'));",
        other,
    )

    def on_other():
        page = browser.execute_script(PAGE_STATE)
        if page["instrument"] != other or not page["ladderBid"]:
            return None
        book = ws_call(serve.port, "public/get_order_book", {"instrument_name": other, "depth": 1})
        return (page, book) if page["changeId"] == book["change_id"] else None

    page, book = wait_until(on_other, timeout_s=20, what=f"the ladder to show {other}")
    assert page["ladderBid"] == book["best_bid_price"] and page["ladderAsk"] == book["best_ask_price"], (page, book)
    assert browser.current_url.endswith("#" + other)
    logs = browser.get_log("browser")
    assert not severe(logs), f"console errors: {severe(logs)}"


class NatsServer:
    """The project's pinned nats-server (tests/nats/install.sh puts it in .tools/bin) on a free
    loopback port, restartable on the same port."""

    def __init__(self):
        self.bin = os.environ.get("NATS_SERVER_BIN", str(ROOT / ".tools" / "bin" / "nats-server"))
        if not Path(self.bin).exists():
            pytest.fail(f"nats-server not found at {self.bin}: run tests/nats/install.sh")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [self.bin, "-a", "127.0.0.1", "-p", str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )

        def listening():
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False

        wait_until(listening, timeout_s=10, what="nats-server to listen")

    def kill(self):
        self.proc.kill()
        self.proc.wait()

    @property
    def url(self):
        return f"nats://127.0.0.1:{self.port}"


def test_web_view_of_an_edge_shows_the_bus_going_and_coming_back(browser):
    """An edge (`serve --upstream nats://…`) says on its page whether its NATS bus is connected:
    DISCONNECTED while the server is down, connected again once it is back."""
    nats = NatsServer()
    ready = r"ws://127\.0\.0\.1:(\d+)/ws/api/v2"
    publisher = Server(
        ["serve", "--listen", "127.0.0.1:0", "--sim-rate", "200", "--publish", nats.url, "--stats-interval-s", "0"],
        ready,
    )
    edge = Server(["serve", "--upstream", nats.url, "--listen", "127.0.0.1:0", "--stats-interval-s", "0"], ready)
    try:
        port = int(edge.match.group(1))
        browser.get(f"http://127.0.0.1:{port}/")
        meta = "return document.getElementById('clients-meta').textContent;"
        wait_until(lambda: "NATS bus connected" in browser.execute_script(meta), what="the bus shown connected")
        wait_until(lambda: browser.execute_script(PAGE_STATE)["ladderBid"], what="the edge's ladder")
        nats.kill()
        wait_until(lambda: "NATS bus DISCONNECTED" in browser.execute_script(meta), what="the bus shown gone")
        nats.start()
        wait_until(
            lambda: "NATS bus connected" in browser.execute_script(meta), timeout_s=30, what="the bus shown back"
        )
        logs = browser.get_log("browser")
        assert not severe(logs), f"console errors: {severe(logs)}"
    finally:
        edge.stop()
        publisher.stop()
        nats.kill()
    assert "panicked" not in edge.output() + publisher.output()
