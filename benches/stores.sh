#!/usr/bin/env bash
# What each store costs a gated call, measured from outside with wrk against the release
# invoice example served sessionless: transitions per second on many instances (each
# request submits an invoice of its own, 8 connections) and on one hot instance (submit and
# reject in turn, 1 connection), the p50 of a read (`invoice_view`, 1 connection), and the
# bytes an idle instance takes once 20,000 have been submitted.
#
#   benches/stores.sh                       # memory and SQLite
#   REDIS_URL=redis://127.0.0.1:6379/15 benches/stores.sh   # and Redis (the DB is flushed!)
#
# DUR (seconds per run, default 8). Compare figures from one run only.
set -euo pipefail
cd "$(dirname "$0")/.."
DUR=${DUR:-8}
TG=${TG:-target/release/examples/invoice}
[ -x "$TG" ] || cargo build --quiet --release --example invoice
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
export TOOLGATE_HANDLE_KEY=stores-bench-handle-key-000000000000001

port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
up() { for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$1/mcp" && return 0; sleep 0.1; done; return 1; }
rate() { grep -E "Requests/sec" | awk '{print $2}'; }
p50() { grep -E "^ +50%" | awk '{print $2}'; }

run() { # name store
  local name=$1 store=$2 p pid
  p=$(port)
  "$TG" --http "127.0.0.1:$p" --stateless --store "$store" >"$WORK/$name.log" 2>&1 &
  pid=$!
  up "$p" || { echo "$name did not start"; cat "$WORK/$name.log"; exit 1; }
  local url="http://127.0.0.1:$p/mcp"
  local many hot view
  many=$(wrk -t2 -c8 -d"${DUR}s" -s benches/wrk/submit_many.lua "$url" -- 0 | tee "$WORK/$name.many" | rate)
  hot=$(wrk -t1 -c1 -d"${DUR}s" -s benches/wrk/hot_instance.lua "$url" -- INV-7 | tee "$WORK/$name.hot" | rate)
  view=$(wrk -t1 -c1 -d"${DUR}s" --latency -s ../shared/perf/wrk/call_sessionless.lua "$url" | tee "$WORK/$name.view" | p50)
  grep -H "bad=" "$WORK/$name.many" "$WORK/$name.hot" "$WORK/$name.view" | grep -v "bad=0" | sed "s|$WORK/||" || true
  printf "%-8s  transitions/s many: %8s   hot: %8s   invoice_view p50: %s\n" "$name" "$many" "$hot" "$view"
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

run memory memory
run sqlite "sqlite:$WORK/bench.db"
echo "sqlite file after the runs: $(du -b "$WORK/bench.db" | cut -f1) bytes (+ WAL $(du -b "$WORK/bench.db-wal" 2>/dev/null | cut -f1 || echo 0))"
if [ -n "${REDIS_URL:-}" ]; then
  redis-cli -u "$REDIS_URL" flushdb >/dev/null
  run redis "$REDIS_URL"
  key=$(redis-cli -u "$REDIS_URL" --scan --pattern 'toolgate:{instance:*}:record' | head -1 || true)
  echo "redis: $(redis-cli -u "$REDIS_URL" memory usage "$key" || echo ?) bytes for one instance record ($key), plus its revision counter $(redis-cli -u "$REDIS_URL" memory usage "${key%:record}:revision") bytes"
fi
