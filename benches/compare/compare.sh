#!/usr/bin/env bash
# toolgate's invoice example against a plain rmcp 3.11 server serving the same tool (router built once)
# and against a ceiling (bare hyper writing rmcp's answer bytes, no MCP at all), with wrk sending
# identical requests to all three, alternating servers for ROUNDS rounds (this machine's throughput swings
# by tens of percent between runs: only same-run ratios of medians mean anything).
#
# Scenarios:
#   view        tools/call invoice_view on one invoice (a read), stateful session or sessionless
#   transition  tools/call invoice_submit on an invoice id no request used before: toolgate commits a
#               keyed transition (draft -> review) on a fresh instance, plain rmcp and the ceiling echo,
#               and the anchor (rmcp_state: plain rmcp with the state row committed by hand, one durable
#               upsert per call, to the same store: a fresh SQLite file, or Postgres's schema `anchor`)
#               commits what a user without toolgate would. Sessionless only (MCP 2026-07-28, JSON
#               replies); skipped in stateful mode. The anchor runs on TG_STORE=sqlite and postgres,
#               and so does a second one (anchor-history: rmcp_state ... history) that also writes, in
#               the same transaction, what toolgate's commit writes beside the state: a history row and
#               the count of invoices in review — the same work, by hand.
#
# Run from the project's root:  benches/compare/compare.sh        (needs wrk: apt-get install wrk)
# Env: DUR=8 (seconds per run), ROUNDS=3, MODES="stateful sessionless", CONNS="32 1",
#      SCENARIOS="view transition", TG_STORE=sqlite (a fresh SQLite file per server run), memory, or
#      postgres (TG_POSTGRES_URL=postgres://USER@HOST:PORT/DB; toolgate's schema dropped before each run),
#      TG=<path to a built invoice example> (default: builds `cargo build --release --example invoice`),
#      PERF_WORK=<build and scratch directory> (default: $TMPDIR/toolgate-perf).
# Prints one line per run and a summary: median calls/s, the ratios, median p50 latency, max RSS.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DUR=${DUR:-8}; ROUNDS=${ROUNDS:-3}; MODES=${MODES:-"stateful sessionless"}; CONNS=${CONNS:-"32 1"}
SCENARIOS=${SCENARIOS:-"view transition"}; TG_STORE=${TG_STORE:-sqlite}
command -v wrk >/dev/null || { echo "wrk is not installed (apt-get install wrk)"; exit 1; }
for s in $SCENARIOS; do case $s in view|transition) ;; *) echo "unknown scenario $s (view, transition)"; exit 1;; esac; done
for m in $MODES; do case $m in stateful|sessionless) ;; *) echo "unknown mode $m (stateful, sessionless)"; exit 1;; esac; done
case $TG_STORE in sqlite|memory) ;;
  postgres) [ -n "${TG_POSTGRES_URL:-}" ] || { echo "TG_STORE=postgres needs TG_POSTGRES_URL"; exit 1; }
            PSQL=$(command -v psql || ls /usr/lib/postgresql/*/bin/psql | tail -1) ;;
  *) echo "TG_STORE is sqlite, memory or postgres, not $TG_STORE"; exit 1;; esac
WORK=${PERF_WORK:-${TMPDIR:-/tmp}/toolgate-perf}; mkdir -p "$WORK/compare"
if [ -z "${TG:-}" ]; then
  cargo build --quiet --release --example invoice
  TG="$(cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys;print(json.load(sys.stdin)["target_directory"])')/release/examples/invoice"
fi
# Its own target directory: ../shared/perf's copy of this crate builds into $WORK/rust-target.
(cd "$HERE/rust" && CARGO_TARGET_DIR="$WORK/compare-target" cargo build --quiet --release --locked)
BASE="$WORK/compare-target/release/rmcp_srv_cached"; CEIL="$WORK/compare-target/release/ceiling"
ANCHOR="$WORK/compare-target/release/rmcp_state"
export TOOLGATE_HANDLE_KEY=compare-bench-handle-key-00000000000000001
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' -H 'MCP-Protocol-Version: 2025-11-25')
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"0"}}}'
port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
up() { for _ in $(seq 1 100); do curl -s -o /dev/null -m 1 "http://127.0.0.1:$1/mcp" && return 0; sleep 0.1; done; return 1; }
session() {
  local sid; sid=$(curl -s -D - -o /dev/null -X POST "http://127.0.0.1:$1/mcp" "${H[@]}" -d "$INIT" | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}' | tr -d '\r')
  curl -s -o /dev/null -X POST "http://127.0.0.1:$1/mcp" "${H[@]}" -H "Mcp-Session-Id: $sid" -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'; echo "$sid"; }
RES="$WORK/compare/results.tsv"; : > "$RES"
PID=""; RUN=""
cleanup() { [ -n "$PID" ] && kill "$PID" 2>/dev/null; [ -n "$RUN" ] && rm -rf "$RUN"; return 0; }
trap cleanup EXIT
stop() { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=""; [ -n "$RUN" ] && rm -rf "$RUN"; RUN=""; }
one() { # server mode scenario round
  local server=$1 mode=$2 scenario=$3 round=$4 p sid="" script k=0 log="$WORK/compare/$1.log"
  p=$(port)
  case $server in
    toolgate)
      local store=memory
      # A fresh store per run: transitions on fresh ids must not pile up across runs (nor touch ./invoice.db).
      if [ "$TG_STORE" = sqlite ]; then RUN=$(mktemp -d "$WORK/compare/tg.XXXXXX"); store="sqlite:$RUN/invoice.db"; fi
      if [ "$TG_STORE" = postgres ]; then
        "$PSQL" -q "$TG_POSTGRES_URL" -c "DROP SCHEMA IF EXISTS toolgate CASCADE" >/dev/null 2>&1; store="$TG_POSTGRES_URL"
      fi
      if [ "$mode" = sessionless ]; then "$TG" --http "127.0.0.1:$p" --stateless --store "$store" >"$log" 2>&1 &
      else "$TG" --http "127.0.0.1:$p" --store "$store" >"$log" 2>&1 & fi ;;
    rmcp)
      if [ "$mode" = sessionless ]; then "$BASE" "$p" stateless json >"$log" 2>&1 & else "$BASE" "$p" stateful >"$log" 2>&1 & fi ;;
    anchor|anchor-history)
      local store history=""; [ "$server" = anchor-history ] && history=history
      if [ "$TG_STORE" = postgres ]; then
        "$PSQL" -q "$TG_POSTGRES_URL" -c "DROP SCHEMA IF EXISTS anchor CASCADE" >/dev/null 2>&1; store="$TG_POSTGRES_URL"
      else RUN=$(mktemp -d "$WORK/compare/anchor.XXXXXX"); store="sqlite:$RUN/anchor.db"; fi
      "$ANCHOR" "$p" "$store" $history >"$log" 2>&1 & ;;
    ceiling)
      if [ "$mode" = sessionless ]; then "$CEIL" "$p" stateless >"$log" 2>&1 & else "$CEIL" "$p" stateful >"$log" 2>&1 & fi ;;
  esac
  PID=$!
  up "$p" || { echo "$server ($mode) did not start:"; cat "$log"; exit 1; }
  if [ "$scenario" = transition ]; then script="$HERE/../wrk/submit_many.lua"
  elif [ "$mode" = stateful ]; then sid=$(session "$p"); script="$HERE/wrk/call_session.lua"
  else script="$HERE/wrk/call_sessionless.lua"; fi
  for c in $CONNS; do
    local t=2; [ "$c" = 1 ] && t=1
    # Each wrk run against this server starts its invoice ids 10^9 further (transition only).
    local out; out=$(MCP_SESSION_ID="$sid" wrk -t$t -c"$c" -d"${DUR}s" --latency -s "$script" "http://127.0.0.1:$p/mcp" -- $((k * 1000000000)) 2>&1)
    k=$((k + 1))
    local rps p50 bad rss
    rps=$(awk '/Requests\/sec/{print $2}' <<<"$out"); p50=$(awk '/^ +50%/{print $2}' <<<"$out")
    bad=$(grep -o 'bad=[0-9]*' <<<"$out" | cut -d= -f2 || true); rss=$(ps -o rss= -p "$PID" | tr -d ' ')
    [ "${bad:-1}" = 0 ] || { echo "$server ($mode, $scenario, c$c): ${bad:-?} responses were not a successful tool result"; echo "$out"; exit 1; }
    printf "%s\t%s\t%s\tc%s\t%s\t%s\t%s\t%s\n" "$server" "$mode" "$scenario" "$c" "$round" "$rps" "$p50" "$rss" | tee -a "$RES"
  done
  stop
}
for round in $(seq 1 "$ROUNDS"); do for mode in $MODES; do for scenario in $SCENARIOS; do
  if [ "$mode" = stateful ] && [ "$scenario" = transition ]; then
    [ "$round" = 1 ] && echo "(transition is sessionless only: skipped in stateful mode)"; continue; fi
  servers="rmcp toolgate ceiling"
  if [ "$scenario" = transition ] && [ "$TG_STORE" != memory ]; then servers="rmcp anchor toolgate anchor-history ceiling"; fi
  for server in $servers; do one "$server" "$mode" "$scenario" "$round"; done
done; done; done
python3 - "$RES" <<'PY'
import sys, statistics, collections, re
def us(s):  # wrk's latency: 87.00us, 1.29ms, 1.00s
    v, unit = re.fullmatch(r"([\d.]+)(us|ms|s|m)", s).groups()
    return float(v) * {"us": 1, "ms": 1e3, "s": 1e6, "m": 6e7}[unit]
def fmt(u):
    return f"{u:.0f}us" if u < 1000 else f"{u / 1000:.2f}ms"
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    server, mode, scenario, conns, _round, rps, p50, rss = line.rstrip("\n").split("\t")
    rows[(mode, scenario, conns, server)].append((float(rps), us(p50), int(rss)))
S = ("rmcp", "toolgate", "ceiling")
print("\ncalls/s: median over rounds; p50: median of the runs' p50; RSS: max KB after a run. tg = toolgate, ceil = ceiling")
print(f"{'mode':12} {'scenario':10} {'conns':5} {'rmcp/s':>8} {'tg/s':>8} {'ceil/s':>8}  {'tg/rmcp':>7} {'tg/ceil':>7} {'rmcp/ceil':>9}"
      f"   {'p50 rmcp / tg / ceil':>26}   {'RSS KB rmcp / tg / ceil':>23}")
order = {"stateful": 0, "sessionless": 1, "view": 0, "transition": 1}
for mode, scenario, conns in sorted({k[:3] for k in rows}, key=lambda k: (order[k[0]], order[k[1]], -int(k[2][1:]))):
    runs = {s: rows.get((mode, scenario, conns, s), []) for s in S}
    if not all(runs.values()):
        continue
    rps = {s: statistics.median(x[0] for x in runs[s]) for s in S}
    p50 = " / ".join(fmt(statistics.median(x[1] for x in runs[s])) for s in S)
    rss = " / ".join(str(max(x[2] for x in runs[s])) for s in S)
    print(f"{mode:12} {scenario:10} {conns:5} {rps['rmcp']:8.0f} {rps['toolgate']:8.0f} {rps['ceiling']:8.0f}  "
          f"{rps['toolgate'] / rps['rmcp']:7.2f} {rps['toolgate'] / rps['ceiling']:7.2f} {rps['rmcp'] / rps['ceiling']:9.2f}   {p50:>26}   {rss:>23}")
    for name, what in (("anchor", "state row by hand"), ("anchor-history", "state, history, count by hand")):
        anchor = rows.get((mode, scenario, conns, name), [])
        if anchor:
            a_rps = statistics.median(x[0] for x in anchor)
            a_p50 = fmt(statistics.median(x[1] for x in anchor))
            print(f"{'':12} {'':10} {conns:5} {name} ({what}): {a_rps:8.0f}/s, p50 {a_p50}, RSS {max(x[2] for x in anchor)} KB"
                  f"  ->  tg/{name} {rps['toolgate'] / a_rps:.2f}")
PY
