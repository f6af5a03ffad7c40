#!/usr/bin/env bash
# Instructions per `tools/call invoice_view` over sessionless Streamable HTTP (2026-07-28, JSON
# replies), counted by callgrind inside a running server: WARM requests first, then counters
# zeroed, N requests, a dump. Deterministic, unlike wall-clock load; run it on toolgate's
# invoice example and on the plain rmcp baseline of ../shared/perf and compare.
# MODE=stateful: over one stateful session instead (2025-11-25, opened first, as
# ../shared/perf/compare.sh does; replies as the server sends them).
# MODE=transition: a keyed transition, sessionless: `invoice_submit` on an invoice id no
# request used before (draft → review, committed to the store; run it with `--store memory`
# to count toolgate's own work, not a database's).
#
#   benches/callgrind_http.sh <port> <server command...>
#   e.g. benches/callgrind_http.sh 9311 target/release/examples/invoice --http 127.0.0.1:9311 --stateless
#        benches/callgrind_http.sh 9312 $TMPDIR/toolgate-perf/rust-target/release/rmcp_srv_cached 9312 stateless json
# Prints instructions per request; the profile is left in $OUT (default /tmp/callgrind-http.out.1).
set -euo pipefail
port=$1; shift
N=${N:-1000} WARM=${WARM:-200} OUT=${OUT:-/tmp/callgrind-http.out}
valgrind --tool=callgrind --callgrind-out-file="$OUT" "$@" >"$OUT.log" 2>&1 &
vp=$!
trap 'kill $vp 2>/dev/null || true' EXIT
for _ in $(seq 120); do curl -s -o /dev/null "http://127.0.0.1:$port/mcp" && break; sleep 0.5; done
MODE=${MODE:-sessionless}
SESSION=""
if [ "$MODE" = stateful ]; then
  SESSION=$(python3 - "$port" <<'PY'
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
h = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
     "MCP-Protocol-Version": "2025-11-25"}
c.request("POST", "/mcp", '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":'
          '"2025-11-25","capabilities":{},"clientInfo":{"name":"callgrind","version":"0"}}}', h)
r = c.getresponse(); r.read(); sid = r.getheader("Mcp-Session-Id")
h["Mcp-Session-Id"] = sid
c.request("POST", "/mcp", '{"jsonrpc":"2.0","method":"notifications/initialized"}', h)
r = c.getresponse(); r.read()
print(sid)
PY
)
fi
calls() { # n first_invoice_number
  python3 - "$port" "$1" "$SESSION" "$MODE" "$2" <<'PY'
import http.client, sys
port, n, session, mode, first = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4], int(sys.argv[5])
c = http.client.HTTPConnection("127.0.0.1", port)
if mode == "transition":
    body = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"invoice_submit",'
            '"arguments":{"id":"INV-%d","domain":"invoice"},"_meta":{"io.modelcontextprotocol/protocolVersion":'
            '"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}')
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "invoice_submit"}
elif session:
    body = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"invoice_view",'
            '"arguments":{"id":"INV-1","domain":"invoice"}}}')
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2025-11-25", "Mcp-Session-Id": session}
else:
    body = ('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"invoice_view",'
            '"arguments":{"id":"INV-1","domain":"invoice"},"_meta":{"io.modelcontextprotocol/protocolVersion":'
            '"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}')
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "invoice_view"}
for i in range(n):
    c.request("POST", "/mcp", (body % (i, first + i)) if mode == "transition" else (body % i), headers)
    r = c.getresponse(); d = r.read()
    assert r.status == 200 and b'"isError":false' in d, d
PY
}
calls "$WARM" 1
callgrind_control -z "$vp" >/dev/null
calls "$N" "$((WARM + 1))"
callgrind_control -d "$vp" >/dev/null
sleep 1
total=$(callgrind_annotate "$OUT.1" 2>/dev/null | grep -m1 'PROGRAM TOTALS' | awk '{gsub(",","",$1); print $1}')
echo "instructions per request: $((total / N))"
