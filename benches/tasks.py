#!/usr/bin/env python3
"""What an MCP task costs, measured from outside against the release conformance example
served sessionless (`slow_compute`, which runs as a task when the request declares the
Tasks extension):

- the round trip of a call that becomes a task (`slow_compute`, up to its `CreateTaskResult`)
  against a plain call (`greet`) on the same server, p50 over N calls each;
- with Redis, the store commands one task costs, from Redis's own `INFO commandstats`
  before and after N tasks of one second each, run to completion (so one heartbeat each).

    benches/tasks.py                                   # memory and SQLite
    REDIS_URL=redis://127.0.0.1:6379/15 benches/tasks.py   # and Redis (the DB is flushed!)

N (calls per figure, default 200). Compare figures from one run only.
"""

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

N = int(os.environ.get("N", "200"))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SERVER = os.path.join(ROOT, "target/release/examples/conformance")
TASKS = "io.modelcontextprotocol/tasks"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def request(url, method, params, opted_in, ids=[0]):
    ids[0] += 1
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS: {}}} if opted_in else {},
        "io.modelcontextprotocol/clientInfo": {"name": "tasks-bench", "version": "1"},
    }
    body = json.dumps({"jsonrpc": "2.0", "id": ids[0], "method": method, "params": {**params, "_meta": meta}})
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    }
    name = params.get("name") or params.get("taskId")
    if name:
        headers["Mcp-Name"] = name
    with urllib.request.urlopen(urllib.request.Request(url, body.encode(), headers)) as reply:
        text = reply.read().decode()
    if "data:" in text:
        text = [line[5:] for line in text.splitlines() if line.startswith("data:")][-1]
    return json.loads(text)["result"]


def timed(url, tool, arguments, opted_in):
    started = time.perf_counter()
    result = request(url, "tools/call", {"name": tool, "arguments": arguments}, opted_in)
    return time.perf_counter() - started, result


def redis(url, *args):
    return subprocess.run(["redis-cli", "-u", url, *args], capture_output=True, text=True, check=True).stdout


def commandstats(url):
    stats = {}
    for line in redis(url, "info", "commandstats").splitlines():
        if line.startswith("cmdstat_"):
            name, fields = line[len("cmdstat_"):].split(":", 1)
            stats[name] = int(dict(f.split("=") for f in fields.split(","))["calls"])
    return stats


def run(name, store):
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    log = tempfile.TemporaryFile()
    args = [SERVER, "--http", f"127.0.0.1:{port}", "--stateless", "--store", store, "--max-tasks", str(N + 16)]
    server = subprocess.Popen(args, stdout=log, stderr=log, env={**os.environ, "TOOLGATE_HANDLE_KEY": "tasks-bench-handle-key-000000000000001"})
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                break
            except OSError:
                if server.poll() is not None:
                    log.seek(0)
                    sys.exit(f"{name}: the server did not start:\n{log.read().decode()}")
                time.sleep(0.1)
        for _ in range(20):  # warm up
            timed(url, "greet", {"name": "b"}, False)
        inline = [timed(url, "greet", {"name": "b"}, False)[0] for _ in range(N)]
        before = commandstats(store) if store.startswith("redis") else None
        created, ids = [], []
        for _ in range(N):
            took, result = timed(url, "slow_compute", {"seconds": 1, "label": "b"}, True)
            assert result.get("resultType") == "task", result
            created.append(took)
            ids.append(result["taskId"])
        time.sleep(2.5)  # every one runs to its end; then one tasks/get each
        for task in ids:
            status = request(url, "tasks/get", {"taskId": task}, True)["status"]
            assert status == "completed", status
        p50_inline, p50_task = statistics.median(inline) * 1e6, statistics.median(created) * 1e6
        print(f"{name:8}  `greet` p50 {p50_inline:6.0f} µs   `slow_compute` as a task, to its CreateTaskResult, p50 {p50_task:6.0f} µs"
              f"   ({p50_task / p50_inline:.2f}×)")
        if before is not None:
            after = commandstats(store)
            # The polls above are reads too: count them apart (one load each).
            spent = {cmd: (after.get(cmd, 0) - before.get(cmd, 0)) / N for cmd in after}
            spent = {cmd: round(n, 2) for cmd, n in sorted(spent.items(), key=lambda kv: -kv[1]) if n >= 0.05}
            print(f"          redis commands per task (created, one heartbeat, ended, one tasks/get): {spent}")
    finally:
        server.terminate()
        server.wait()


def main():
    if not os.path.exists(SERVER):
        subprocess.run(["cargo", "build", "--quiet", "--release", "--example", "conformance"], cwd=ROOT, check=True)
    with tempfile.TemporaryDirectory() as work:
        run("memory", "memory")
        run("sqlite", f"sqlite:{work}/bench.db")
    if os.environ.get("REDIS_URL"):
        redis(os.environ["REDIS_URL"], "flushdb")
        run("redis", os.environ["REDIS_URL"])


if __name__ == "__main__":
    sys.exit(main())
