#!/usr/bin/env bash
# Creates the project-local Python environment ./.venv with the pinned third-party clients the
# tests drive (ccxt, Hyperliquid's SDK). Idempotent: reinstalls only when the pins change.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="$root/.venv"
req="$root/tests/python/requirements.txt"
lock="$root/tests/python/constraints.txt"
stamp="$venv/.ticktrade-installed"
# The web view test (test_web_view.py) drives Debian's headless chromium through chromedriver.
if ! command -v chromium >/dev/null 2>&1 || ! command -v chromedriver >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        echo "chromium/chromium-driver missing; installing them with apt-get" >&2
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
    else
        echo "chromium/chromium-driver missing and not root: install them (apt-get install chromium chromium-driver) for test_web_view.py" >&2
    fi
fi
want="$( { cat "$req"; [ -f "$lock" ] && cat "$lock" || true; } | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    echo "python3-venv missing; installing it with apt-get" >&2
    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null
fi
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip==25.3
if [ -f "$lock" ]; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" -c "$lock"
else
    "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req"
fi
echo "$want" > "$stamp"
