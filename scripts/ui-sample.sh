#!/usr/bin/env bash
# Starts a daemon in a throwaway STROBE_HOME with a few real sessions to look
# at in the web UI (a finished traced one, a two-thread one, a crash and a
# live ticker), and prints the UI's URL. For working on ui/ by hand:
#   scripts/ui-sample.sh            # uses target/debug/strobe (cargo build -p strobe)
# Stop it: kill the printed daemon pid (it stops the live ticker session with it).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STROBE=${STROBE:-$ROOT/target/debug/strobe}
export STROBE_HOME=${STROBE_HOME:-$(mktemp -d /tmp/strobe-ui-sample.XXXXXX)}
chmod 700 "$STROBE_HOME"
export STROBE_VENV=${STROBE_VENV:-$HOME/.cache/strobe/venv-frida-$(tr -d '[:space:]' < crates/strobe-frida/FRIDA_VERSION)}
bin=$STROBE_HOME/fixtures
mkdir -p "$bin"
for f in trace_c trace_threads crash ticker; do
    gcc -g -O0 -o "$bin/$f" "tests/fixtures/$f.c" -lpthread
done
call() { # id tool json-arguments
    printf '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}\n' "$1" "$2" "$3"
}
{
    echo '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"ui-sample","version":"0"}}}'
    echo '{"jsonrpc":"2.0","method":"notifications/initialized"}'
    call 1 debug_trace '{"add":["fib","process_point","add","work","middle","leaf","tick_work","tick_leaf"]}'
    call 2 debug_launch "{\"command\":\"$bin/trace_c\",\"projectRoot\":\"$bin\"}"
    sleep 4
    call 3 debug_launch "{\"command\":\"$bin/trace_threads\",\"args\":[\"2000\"],\"projectRoot\":\"$bin\"}"
    sleep 6
    call 4 debug_launch "{\"command\":\"$bin/crash\",\"args\":[\"segv\"],\"projectRoot\":\"$bin\"}"
    sleep 4
    call 5 debug_launch "{\"command\":\"$bin/ticker\",\"args\":[\"-1\",\"250\"],\"projectRoot\":\"$bin\"}"
    sleep 3
    sleep 1
} | "$STROBE" mcp > "$STROBE_HOME/ui-sample.log"
grep -o '"text":"Launched [^"]*' "$STROBE_HOME/ui-sample.log" | sed 's/"text":"/  /' >&2
echo "STROBE_HOME=$STROBE_HOME (daemon pid $(cat "$STROBE_HOME/strobe.pid"))" >&2
"$STROBE" ui
