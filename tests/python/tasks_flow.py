"""A task (the 2026-07-28 Tasks extension, `io.modelcontextprotocol/tasks`, SEP-2663)
through the MCP Python SDK's default client, against the conformance example's
`slow_compute` (which runs as a task when the request declares the extension).

    python tasks_flow.py URL complete|cancel

mcp 2.3.0 ships no tasks client, but its public extension API (SEP-2133) carries one, over
the default transport:

- a `ClientExtension` with the identifier `io.modelcontextprotocol/tasks`, passed as
  `Client(url, extensions=[...])`, is advertised in every 2026-07-28 request's
  `_meta["io.modelcontextprotocol/clientCapabilities"].extensions` (how a request declares
  the extension);
- its `ResultClaim` for `resultType: "task"` admits the CreateTaskResult as an answer to
  `tools/call`: `client.call_tool` hands it to the claim's resolver and returns the
  `CallToolResult` the resolver makes of it; `client.session.call_tool(...,
  allow_claimed=True)` returns the CreateTaskResult itself;
- `tasks/get` and `tasks/cancel` are `mcp_types.Request` subclasses sent with
  `client.session.send_request`; their `name_param = "taskId"` has the session mirror the
  task id into the `Mcp-Name` header, which Streamable HTTP requires of `tasks/*`.

`complete`: a client without the extension gets `slow_compute`'s result directly; with it,
`client.call_tool` gets a task (`working`), which the resolver polls with `tasks/get` at the
server's `pollIntervalMs` until `completed`, and returns the task's result.

`cancel`: `slow_compute` for 60 s starts as a task (`working`, at once); `tasks/cancel` is
acknowledged, and `tasks/get` then says `cancelled`, with no result.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

import mcp_types as types
from mcp.client import ClaimContext, Client, ClientExtension, ClientSession, ResultClaim
from pydantic import ConfigDict

from flowcheck import MODERN, PATIENCE, Failed, Heard, check, negotiated, passed, run, show

TASKS = "io.modelcontextprotocol/tasks"

# Task statuses: a task is live while working or waiting for input.
LIVE = ("working", "input_required")


class CreateTaskResult(types.Result):
    """`tools/call`'s answer when the server runs the call as a task."""

    model_config = ConfigDict(extra="allow")
    result_type: Literal["task"] = "task"
    task_id: str
    status: str
    poll_interval_ms: int | None = None


class TaskRef(types.RequestParams):
    task_id: str


class GetTask(types.Request[TaskRef, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskRef
    name_param = "taskId"


class CancelTask(types.Request[TaskRef, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskRef
    name_param = "taskId"


class TaskState(types.Result):
    """`tasks/get`'s answer: the task's status and, once `completed`, its `result`."""

    model_config = ConfigDict(extra="allow")
    result_type: str | None = None
    task_id: str
    status: str
    status_message: str | None = None
    poll_interval_ms: int | None = None
    result: dict[str, Any] | None = None


class Acknowledged(types.Result):
    """`tasks/cancel`'s answer."""

    model_config = ConfigDict(extra="allow")
    result_type: str | None = None


async def get_task(session: ClientSession, task_id: str) -> TaskState:
    state = await session.send_request(GetTask(params=TaskRef(task_id=task_id)), TaskState)
    check(state.task_id == task_id, f"tasks/get {task_id} answered for {state.task_id}")
    return state


async def settle(session: ClientSession, task_id: str, interval_ms: int | None, seen: list[str]) -> TaskState:
    """Polls `tasks/get` (every `interval_ms`, then as the server asks) until the task is no
    longer live, noting each status in `seen`; fails after PATIENCE seconds."""
    deadline = time.monotonic() + PATIENCE
    while True:
        await asyncio.sleep((interval_ms or 200) / 1000)
        state = await get_task(session, task_id)
        seen.append(state.status)
        if state.status not in LIVE:
            return state
        check(time.monotonic() < deadline, f"task {task_id} still {state.status} after {PATIENCE} s")
        interval_ms = state.poll_interval_ms or interval_ms


class Tasks(ClientExtension):
    """The Tasks extension, client side: a `task` answer to `tools/call` is polled with
    `tasks/get` to its end; the tasks are kept in `task_ids`, the statuses seen in `seen`."""

    identifier = TASKS

    def __init__(self) -> None:
        self.task_ids: list[str] = []
        self.seen: list[str] = []

    def claims(self) -> list[ResultClaim[Any]]:
        return [ResultClaim(result_type="task", model=CreateTaskResult, resolve=self.resolve)]

    async def resolve(self, created: CreateTaskResult, ctx: ClaimContext) -> types.CallToolResult:
        self.task_ids.append(created.task_id)
        self.seen.append(created.status)
        state = await settle(ctx.session, created.task_id, created.poll_interval_ms, self.seen)
        check(
            state.status == "completed" and state.result is not None,
            f"{ctx.tool_name}: task {created.task_id} ended {state.status}: {show(state.model_dump(mode='json'))}",
        )
        return types.CallToolResult.model_validate(state.result, by_name=False)


def text_of(result: types.CallToolResult) -> str:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    check(len(texts) == 1, f"expected one text block, got {result.content}")
    return texts[0]


def advertised(client: Client) -> None:
    """Checks that `server/discover` advertised the Tasks extension."""
    capabilities = client.server_capabilities
    extensions = (capabilities.extensions if capabilities is not None else None) or {}
    check(TASKS in extensions, f"server/discover does not advertise {TASKS}: {extensions}")
    passed(f"server/discover advertises {TASKS}")


async def complete(url: str) -> None:
    heard = Heard()
    async with Client(url, message_handler=heard) as plain:
        negotiated(plain, MODERN)
        direct = await plain.call_tool("slow_compute", {"seconds": 1, "label": "plain"})
        check(not direct.is_error, f"slow_compute without the extension failed: {direct}")
        check(text_of(direct) == "computed plain in 1 s", f"slow_compute without the extension: {text_of(direct)!r}")
        passed("slow_compute without the extension -> its result, no task")

    tasks = Tasks()
    async with Client(url, extensions=[tasks], message_handler=heard) as client:
        advertised(client)
        result = await client.call_tool("slow_compute", {"seconds": 1, "label": "as-a-task"})
        check(len(tasks.task_ids) == 1, f"slow_compute was not run as one task: {tasks.task_ids}")
        check(tasks.seen[0] == "working", f"the task was created {tasks.seen[0]}, not working")
        check(tasks.seen[-1] == "completed", f"the task ended {tasks.seen[-1]}")
        passed(f"slow_compute -> task {tasks.task_ids[0]} working; tasks/get x{len(tasks.seen) - 1} -> completed")
        check(not result.is_error, f"the task's result is an error: {result}")
        check(text_of(result) == "computed as-a-task in 1 s", f"the task's result says {text_of(result)!r}")
        passed(f"the task's result: {text_of(result)!r}")
    heard.check_quiet()


async def cancel(url: str) -> None:
    heard = Heard()
    async with Client(url, extensions=[Tasks()], message_handler=heard) as client:
        negotiated(client, MODERN)
        advertised(client)
        started = time.monotonic()
        created = await client.session.call_tool("slow_compute", {"seconds": 60, "label": "doomed"}, allow_claimed=True)
        check(isinstance(created, CreateTaskResult), f"slow_compute did not answer with a task: {created}")
        check(created.status == "working", f"the task was created {created.status}, not working")
        check(time.monotonic() - started < 10, "the task's creation waited for the computation")
        task_id = created.task_id
        passed(f"slow_compute (60 s) -> task {task_id} working")

        state = await get_task(client.session, task_id)
        check(state.status == "working", f"tasks/get before the cancel: {state.status}")
        passed("tasks/get -> working")

        acknowledged = await client.session.send_request(CancelTask(params=TaskRef(task_id=task_id)), Acknowledged)
        answer = show(acknowledged.model_dump(mode="json", by_alias=True))
        check(acknowledged.result_type == "complete", f"tasks/cancel answered {answer}")
        passed("tasks/cancel -> acknowledged")

        state = await get_task(client.session, task_id)
        if state.status in LIVE:
            state = await settle(client.session, task_id, state.poll_interval_ms, [])
        check(state.status == "cancelled", f"after tasks/cancel the task is {state.status}")
        check(state.result is None, f"the cancelled task has a result: {state.result}")
        passed(f"tasks/get -> cancelled ({state.status_message})")
    heard.check_quiet()


async def flow(url: str, mode: str) -> None:
    if mode == "complete":
        await complete(url)
    elif mode == "cancel":
        await cancel(url)
    else:
        raise Failed(f"unknown mode {mode}: complete or cancel")


if __name__ == "__main__":
    run(flow, "tasks_flow.py URL complete|cancel", 2, 2)
