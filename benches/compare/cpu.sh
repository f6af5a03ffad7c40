#!/usr/bin/env bash
# One `wrk` run of keyed transitions on Postgres (`invoice_submit` on a new invoice a call,
# sessionless, benches/wrk/submit_many.lua) against toolgate's invoice example or the
# hand-written anchor (rmcp_state), with the CPU each side spent: the server's and every
# Postgres process's, read from /proc, and how much of both cores idled. For A/B comparisons
# alternated in the same minutes (this machine's throughput drifts by tens of percent within
# an hour): run it for each build in turn, several times.
#
# Usage, from the project's root:  benches/compare/cpu.sh toolgate|anchor|anchor-history CONNS
# Env: TG_POSTGRES_URL (required), TG=<built invoice example> (default
#      target/release/examples/invoice), ANCHOR=<built rmcp_state> (default: the one
#      compare.sh builds, $TMPDIR/toolgate-perf/compare-target/release/rmcp_state), DUR=8.
# Each run drops the schema it writes (`toolgate` or `anchor`) first.
set -u
: "${TG_POSTGRES_URL:?set TG_POSTGRES_URL=postgres://USER@HOST:PORT/DB}"
PSQL=$(command -v psql || ls /usr/lib/postgresql/*/bin/psql | head -1)
TG=${TG:-target/release/examples/invoice}
ANCHOR=${ANCHOR:-${TMPDIR:-/tmp}/toolgate-perf/compare-target/release/rmcp_state}
DUR=${DUR:-8}
export TOOLGATE_HANDLE_KEY=compare-bench-handle-key-00000000000000001
port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
log=$(mktemp)
if [ "$1" = toolgate ]; then
  "$PSQL" -q "$TG_POSTGRES_URL" -c "DROP SCHEMA IF EXISTS toolgate CASCADE" >/dev/null 2>&1
  "$TG" --http 127.0.0.1:$port --stateless --store "$TG_POSTGRES_URL" >"$log" 2>&1 &
else
  "$PSQL" -q "$TG_POSTGRES_URL" -c "DROP SCHEMA IF EXISTS anchor CASCADE" >/dev/null 2>&1
  history=""; [ "$1" = anchor-history ] && history=history
  "$ANCHOR" $port "$TG_POSTGRES_URL" $history >"$log" 2>&1 &
fi
server=$!
for _ in $(seq 1 100); do curl -s -o /dev/null -m 1 http://127.0.0.1:$port/mcp && break; sleep 0.1; done
cpu() { awk '{print $14+$15}' /proc/$1/stat; }
postgres_cpu() {
  local total=0
  for p in $(pgrep -u postgres postgres); do total=$((total + $(awk '{print $14+$15}' /proc/$p/stat 2>/dev/null || echo 0))); done
  echo $total
}
idle() { awk '/^cpu /{print $5+$6}' /proc/stat; }
s0=$(cpu $server); g0=$(postgres_cpu); i0=$(idle)
threads=2; [ "$2" = 1 ] && threads=1
out=$(wrk -t$threads -c$2 -d${DUR}s --latency -s benches/wrk/submit_many.lua http://127.0.0.1:$port/mcp -- $RANDOM$RANDOM 2>&1)
s1=$(cpu $server); g1=$(postgres_cpu); i1=$(idle)
rps=$(awk '/Requests\/sec/{print $2}' <<<"$out"); p50=$(awk '/^ +50%/{print $2}' <<<"$out")
calls=$(python3 -c "print(max(1, int(float('$rps') * $DUR)))")
ticks=$(getconf CLK_TCK)
per_call() { python3 -c "print(round($1 * 1e6 / $ticks / $calls, 1))"; }
echo "$1 c$2: $rps/s p50 $p50  server $(per_call $((s1 - s0))) us/call  postgres $(per_call $((g1 - g0))) us/call  idle $((i1 - i0)) of $(($(nproc) * ticks * DUR)) ticks"
kill $server; wait $server 2>/dev/null
rm -f "$log"
