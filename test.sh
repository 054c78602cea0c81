#!/usr/bin/env bash
# Runs ticktrade's whole test suite on a fresh machine: formatting, lints, every Rust test
# (unit, property, replay, integration on loopback), and the third-party-client tests.
# Whatever it needs beyond Rust it installs itself, pinned, into the project (./.venv).
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n==> %s\n' "$*"; }

step "toolchain"
cargo --version
rustc --version

step "system tools the tests drive (tmux for the interactive shell)"
if ! command -v tmux >/dev/null 2>&1; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq && apt-get install -y -qq tmux >/dev/null
    else
        sudo apt-get update -qq && sudo apt-get install -y -qq tmux >/dev/null
    fi
fi
tmux -V

step "NATS server for the bus tests (pinned, built once into ./.tools/bin)"
./tests/nats/install.sh
.tools/bin/nats-server --version

step "format check"
cargo fmt --all -- --check

step "clippy (all targets, warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings

step "cargo test (workspace)"
cargo test --workspace --locked

if [ -f tests/python/requirements.txt ] && compgen -G "tests/python/test_*.py" >/dev/null; then
    step "third-party clients (Python, project-local venv)"
    ./tests/python/setup.sh
    TICKTRADE_BIN="${CARGO_TARGET_DIR:-$PWD/target}/debug/ticktrade" .venv/bin/python -m pytest -q tests/python
fi

step "all tests passed"
