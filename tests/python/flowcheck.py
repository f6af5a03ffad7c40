"""Shared helpers for the end-to-end scripts: call tools through the MCP Python SDK's
default high-level client (`mcp.client.Client`) and fail with a clear message.

The client connects over Streamable HTTP (a URL) or stdio (`stdio:` and a JSON object
`{"command": PATH, "args": [...], "stderr": LOG}`: the server to launch, and the file its
stderr goes to, since the server's log is not the client's output), at 2025-11-25
(`mode="legacy"`: the initialize handshake) or 2026-07-28 (the default `mode="auto"`,
which probes `server/discover` and must settle on 2026-07-28).

Output: `ok: …` lines and a final `PASS` on stdout, and nothing else anywhere. A check that
fails raises `Failed`; `run` prints it on stderr and exits with status 1. The Rust side fails
a run that prints any other line, so a warning the SDK logs (through `logging`, which `run`
sets up to name the level and logger) or issues (`warnings`) fails the run.
"""

from __future__ import annotations

import asyncio
import atexit
import json
import logging
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError

LEGACY = "2025-11-25"
"""The initialize era: a session (over HTTP) or the connection (stdio) is the conversation."""

MODERN = "2026-07-28"
"""Per-request `_meta`, `server/discover` and `subscriptions/listen`."""

PATIENCE = 10.0
"""Seconds to wait for a notification a step caused."""


class Failed(Exception):
    """A contract assertion that did not hold."""


def check(condition: bool, message: str) -> None:
    """Fails with `message` unless `condition` holds."""
    if not condition:
        raise Failed(message)


def show(value: Any) -> str:
    """`value` as compact, key-sorted JSON for messages."""
    return json.dumps(value, sort_keys=True)


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """Calls `tool` and returns its structuredContent and whether `isError` is set.

    A JSON-RPC error (instead of a tool result) and a result without structuredContent
    are failures: every toolgate result, error or not, carries structuredContent.
    """
    try:
        result = await client.call_tool(tool, arguments)
    except MCPError as error:
        raise Failed(f"{tool} {show(arguments)}: JSON-RPC error {error.code} {error.message!r} data={error.data!r}") from error
    except RuntimeError as error:  # e.g. the client's outputSchema validation of a success
        raise Failed(f"{tool} {show(arguments)}: the client rejected the result: {error}") from error
    content = result.structured_content
    check(
        isinstance(content, dict),
        f"{tool} {show(arguments)}: no structuredContent object (isError={result.is_error}, content={result.content})",
    )
    return content, result.is_error is True


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Calls `tool`, which must succeed, and returns its structuredContent."""
    content, is_error = await call(client, tool, arguments)
    check(not is_error, f"{tool} {show(arguments)} should succeed, got isError: {show(content)}")
    return content


async def refused(client: Client, tool: str, arguments: dict[str, Any], code: str) -> dict[str, Any]:
    """Calls `tool`, which must fail with `code`, and returns its structuredContent."""
    content, is_error = await call(client, tool, arguments)
    check(is_error, f"{tool} {show(arguments)} should fail with {code}, but succeeded: {show(content)}")
    check(content.get("code") == code, f"{tool} {show(arguments)}: expected code {code}, got {show(content)}")
    return content


def expect(content: dict[str, Any], field: str, value: Any, what: str) -> None:
    """Checks one structuredContent field."""
    check(content.get(field) == value, f"{what}: expected {field} == {value!r}, got {show(content)}")


async def tool_listing(client: Client, *, fresh: bool = False) -> list[tuple[str, str | None]]:
    """The (name, description) of every listed tool, all pages, in server order.

    `fresh` asks the server again even if the client's response cache (on by default,
    honoring the server's `ttlMs`) holds the listing.
    """
    tools: list[tuple[str, str | None]] = []
    page = await client.list_tools(cache_mode="refresh" if fresh else "use")
    tools += [(tool.name, tool.description) for tool in page.tools]
    while page.next_cursor is not None:
        page = await client.list_tools(cursor=page.next_cursor)
        tools += [(tool.name, tool.description) for tool in page.tools]
    return tools


def same_listing(before: list[tuple[str, str | None]], after: list[tuple[str, str | None]]) -> None:
    """Checks that `tools/list` did not change (names and descriptions)."""
    names_before, names_after = [name for name, _ in before], [name for name, _ in after]
    check(names_before == names_after, f"tools/list changed: {names_before} before, {names_after} after")
    changed = [name for (name, old), (_, new) in zip(before, after) if old != new]
    check(not changed, f"tools/list changed the descriptions of {changed}")


def code_for(outbox: str, challenge_id: str) -> str:
    """The one-time code the server's development outbox holds for `challenge_id`."""
    with open(outbox, encoding="utf-8") as lines:
        for line in lines:
            delivery = json.loads(line)
            if delivery["challenge_id"] == challenge_id:
                return delivery["otp"]
    raise Failed(f"no code for {challenge_id} in {outbox}")


async def confirmed(client: Client, tool: str, arguments: dict[str, Any], outbox: str) -> dict[str, Any]:
    """Calls the confirmed `tool`: the first call asks for a code, the second, with the code
    from `outbox`, must succeed; returns its structuredContent."""
    required = await refused(client, tool, arguments, "CONFIRMATION_REQUIRED")
    challenge = required["challenge_id"]
    return await ok(client, tool, {**arguments, "challenge_id": challenge, "otp": code_for(outbox, challenge)})


def bearer_client(url: str, token: str, **options: Any) -> Client:
    """The default client, whose HTTP requests carry the user's bearer token."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(30, read=300))
    return Client(streamable_http_client(url, http_client=http), **options)


class Heard:
    """What the server told the client outside results: the client's `message_handler`.

    Counts `notifications/tools/list_changed`, however it arrived (unsolicited on a
    session, or on a listen stream, which the SDK tees here too). An exception the
    transport hit, which the SDK hands here, is a failure, raised by `check_quiet`.
    """

    def __init__(self) -> None:
        self.tools_changed = 0
        self.faults: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self.tools_changed += 1
        elif isinstance(message, Exception):
            self.faults.append(repr(message))

    def check_quiet(self) -> None:
        check(not self.faults, f"the client's transport failed: {self.faults}")


def is_stdio(server: str) -> bool:
    return server.startswith("stdio:")


def connect(server: str, protocol: str, heard: Heard, token: str | None = None) -> Client:
    """The default client for `server` (a URL, or `stdio:` and the server's JSON spec) at
    `protocol`; over HTTP with the user's bearer `token` if given."""
    check(protocol in (LEGACY, MODERN), f"unknown protocol {protocol}")
    options: dict[str, Any] = {"mode": "legacy" if protocol == LEGACY else "auto", "message_handler": heard}
    if is_stdio(server):
        spec = json.loads(server.removeprefix("stdio:"))
        params = StdioServerParameters(command=spec["command"], args=spec["args"])
        log = open(spec["stderr"], "a", encoding="utf-8")  # the server's, open while it runs
        atexit.register(log.close)
        return Client(stdio_client(params, errlog=log), **options)
    if token is not None:
        return bearer_client(server, token, **options)
    return Client(server, **options)


def negotiated(client: Client, protocol: str) -> None:
    """Checks the revision the client settled on."""
    check(client.protocol_version == protocol, f"negotiated {client.protocol_version}, expected {protocol}")
    passed(f"negotiated {protocol}")


async def wait_for(condition: Callable[[], bool], what: str) -> None:
    """Waits until `condition()` holds; fails with `what` after PATIENCE seconds."""
    deadline = time.monotonic() + PATIENCE
    while not condition():
        check(time.monotonic() < deadline, f"{what}: nothing after {PATIENCE} s")
        await asyncio.sleep(0.02)


def passed(step: str) -> None:
    """Reports a step whose checks held."""
    print(f"ok: {step}", flush=True)


def failures(error: BaseException) -> list[Failed]:
    """The `Failed` checks in `error`; anyio wraps what escapes `async with Client` in groups."""
    if isinstance(error, Failed):
        return [error]
    if isinstance(error, BaseExceptionGroup):
        return [failure for inner in error.exceptions for failure in failures(inner)]
    return []


def run(flow: Callable[..., Awaitable[None]], usage: str, min_args: int, max_args: int) -> None:
    """Runs `flow(*argv)`; exits 2 on bad usage, 1 on a failed check or any error."""
    # Warnings name their level and logger (the default would print the bare message).
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    args = sys.argv[1:]
    if not min_args <= len(args) <= max_args:
        print(f"usage: {usage}", file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(flow(*args))
    except BaseException as error:
        if not (found := failures(error)):
            raise
        for failure in found:
            print(f"FAIL: {failure}", file=sys.stderr)
        sys.exit(1)
    print("PASS")
