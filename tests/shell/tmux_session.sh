#!/usr/bin/env bash
# Drives the interactive trading shell in a real terminal (tmux): tab completion of commands
# and instrument names, history across sessions, `watch` redrawing in place until a key.
# Usage: tests/shell/tmux_session.sh /path/to/ticktrade [args…]   (default: no subcommand,
# i.e. the embedded simulator). Exits non-zero with the pane's contents on any failure.
set -euo pipefail

BIN=${1:?usage: $0 /path/to/ticktrade [args…]}
shift
command -v tmux >/dev/null || { echo "tmux is not installed (apt-get install -y tmux)" >&2; exit 2; }

WORK=$(mktemp -d)
SOCK="$WORK/tmux.sock"
SESSION=tt
export TICKTRADE_HISTORY="$WORK/history"
cleanup() { tmux -S "$SOCK" kill-server 2>/dev/null || true; rm -rf "$WORK"; }
trap cleanup EXIT

t() { tmux -S "$SOCK" "$@"; }
pane() { t capture-pane -p -t "$SESSION" -S -200; }
fail() { echo "FAIL: $*" >&2; echo "----- pane -----" >&2; pane >&2 || true; exit 1; }

# Waits (up to 20 s) until the pane matches an extended regex.
wait_for() {
    local pattern=$1 what=$2
    for _ in $(seq 1 200); do
        if pane | grep -Eq -- "$pattern"; then return 0; fi
        sleep 0.1
    done
    fail "$what (no /$pattern/)"
}

start() {
    t new-session -d -s "$SESSION" -x 160 -y 50 "$(printf '%q ' "$BIN" "$@"); echo EXITED:\$?; sleep 30"
    wait_for '^ticktrade>' "prompt did not appear"
}

start "$@"

# 1. Completion of a command name.
t send-keys -t "$SESSION" 'lat' Tab
wait_for 'ticktrade> latency$' "command completion"
t send-keys -t "$SESSION" Enter
wait_for 'order path' "latency table"

# 2. Completion of an instrument name, then the book.
t send-keys -t "$SESSION" 'book BTC-PERP' Tab
wait_for 'ticktrade> book BTC-PERPETUAL$' "instrument completion"
t send-keys -t "$SESSION" '3' Enter
wait_for 'bid_amount +bid +ask +ask_amount' "book table"

# 3. History within the session: Up recalls the last command.
t send-keys -t "$SESSION" 'clear-screen-marker' Enter
wait_for 'unknown command "clear-screen-marker"' "error line"
t send-keys -t "$SESSION" Up
wait_for 'ticktrade> clear-screen-marker$' "history recall (Up)"
t send-keys -t "$SESSION" C-u 'status' Enter
wait_for 'authenticated +true' "status"

# 4. Notifications of subscribed channels print between prompts; the line being typed
#    survives them (rustyline's external printer repaints it) and still runs.
t send-keys -t "$SESSION" 'sub book:BTC-PERPETUAL ticker:BTC-PERPETUAL trades:BTC-PERPETUAL' Enter
wait_for '^subscribed book:BTC-PERPETUAL' "sub"
t send-keys -t "$SESSION" 'buy BTC-PERPETUAL 10 mar'
wait_for 'ticktrade> buy BTC-PERPETUAL 10 mar$' "typed text"
before=$(pane | grep -Ec '^\[(book|ticker|trade)\] BTC-PERPETUAL' || true)
for _ in $(seq 1 150); do
    now=$(pane | grep -Ec '^\[(book|ticker|trade)\] BTC-PERPETUAL' || true)
    [ "$now" -gt "$before" ] && break
    sleep 0.1
done
[ "$now" -gt "$before" ] || fail "no notification while typing"
last=$(pane | grep -v '^$' | tail -1)
[ "$last" = 'ticktrade> buy BTC-PERPETUAL 10 mar' ] || fail "typed line not repainted below the notification (last line: $last)"
t send-keys -t "$SESSION" 'ket' Enter
wait_for 'buy 10 @ market → order .* filled' "the typed order ran intact"
t send-keys -t "$SESSION" 'unsub' Enter
wait_for '^unsubscribed ' "unsub"

# 5. watch: a live ladder redrawn in place, left with any key.
t send-keys -t "$SESSION" 'watch BTC-PERPETUAL' Enter
wait_for 'press any key to stop' "watch screen"
wait_for '^change_id [0-9]+' "watch ladder"
first=$(pane | grep -Eo '^change_id [0-9]+' | tail -1)
for _ in $(seq 1 100); do
    now=$(pane | grep -Eo '^change_id [0-9]+' | tail -1)
    [ "$now" != "$first" ] && break
    sleep 0.1
done
[ "$now" != "$first" ] || fail "watch did not redraw (still $first)"
t send-keys -t "$SESSION" q
wait_for '^ticktrade>$' "prompt after watch"
pane | grep -q 'press any key' && fail "watch screen left behind"

t send-keys -t "$SESSION" 'quit' Enter
wait_for 'EXITED:0' "clean exit"
t kill-session -t "$SESSION"

# 6. History across sessions: a new session recalls the previous one's last command.
grep -q '^quit$' "$TICKTRADE_HISTORY" || fail "history file not written"
start "$@"
t send-keys -t "$SESSION" Up
wait_for 'ticktrade> quit$' "history across sessions"
t send-keys -t "$SESSION" Enter
wait_for 'EXITED:0' "clean exit (second session)"
echo "tmux shell session: ok"
