#!/usr/bin/env bash
# Installs the pinned NATS server the bus tests start (crates/serve/tests/it/bus.rs) into
# the project-local ./.tools/bin, built from its Go module. Idempotent and quick when the
# pinned version is already there. Debian's nats-server package is older (2.9).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
version="v2.15.2"
bin="$root/.tools/bin"
if [ -x "$bin/nats-server" ] && "$bin/nats-server" --version 2>/dev/null | grep -q "${version}\$"; then
    exit 0
fi
if ! command -v go >/dev/null 2>&1; then
    if [ -x /usr/local/go/bin/go ]; then
        export PATH="$PATH:/usr/local/go/bin"
    else
        echo "go missing: install a Go toolchain (https://go.dev/dl or apt-get install golang) to build nats-server ${version}" >&2
        exit 1
    fi
fi
mkdir -p "$bin"
echo "building nats-server ${version} into $bin" >&2
GOBIN="$bin" CGO_ENABLED=0 go install "github.com/nats-io/nats-server/v2@${version}"
"$bin/nats-server" --version
