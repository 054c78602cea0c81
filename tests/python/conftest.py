"""Fixtures that start real ticktrade processes on loopback for third-party-client tests.

Each server is started as its own process on 127.0.0.1 with port 0; the fixture reads the
address the process prints, and stops the process (and checks it did not crash) afterwards.
"""

import os
import re
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BIN = os.environ.get("TICKTRADE_BIN", str(ROOT / "target" / "debug" / "ticktrade"))

SIM_CLIENT_ID = "ticktrade-sim"
SIM_CLIENT_SECRET = "ticktrade-sim-secret"


class Server:
    """A ticktrade subprocess whose output is collected while it runs."""

    def __init__(self, args, ready_pattern, timeout_s=60.0):
        if not Path(BIN).exists():
            raise RuntimeError(f"ticktrade binary not found at {BIN}; run `cargo build -p ticktrade`")
        self.lines = []
        self._ready = threading.Event()
        self._match = None
        self._pattern = re.compile(ready_pattern)
        self.proc = subprocess.Popen(
            [BIN, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            env={**os.environ, "RUST_LOG": os.environ.get("RUST_LOG", "info"), "NO_COLOR": "1"},
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._ready.wait(timeout_s):
            self.stop()
            raise RuntimeError("server did not report its address:\n" + "\n".join(self.lines[-50:]))

    def _read(self):
        for line in self.proc.stdout:
            line = line.rstrip("\n")
            self.lines.append(line)
            if self._match is None:
                m = self._pattern.search(line)
                if m:
                    self._match = m
                    self._ready.set()
        self._ready.set()

    @property
    def match(self):
        if self._match is None:
            raise RuntimeError("server exited early:\n" + "\n".join(self.lines[-50:]))
        return self._match

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._reader.join(timeout=5)

    def output(self):
        return "\n".join(self.lines)


def start_sim(*extra):
    server = Server(["sim", "--listen", "127.0.0.1:0", "--seed", "7", *extra], r"127\.0\.0\.1:(\d+)")
    server.port = int(server.match.group(1))
    return server


@pytest.fixture(scope="module")
def sim():
    server = start_sim()
    yield server
    alive = server.proc.poll() is None
    server.stop()
    assert alive, "the simulator died during the tests:\n" + server.output()[-5000:]


@pytest.fixture(scope="module")
def sim_tls():
    server = start_sim("--tls")
    yield server
    alive = server.proc.poll() is None
    server.stop()
    assert alive, "the TLS simulator died during the tests:\n" + server.output()[-5000:]


def wait_until(predicate, timeout_s=20.0, what="condition"):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")
