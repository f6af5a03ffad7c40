"""A ticket and its credit, across two domains, through the MCP Python SDK's default client.

    python desk_flow.py 2025-11-25|2026-07-28 SERVER follow|naive

SERVER is the endpoint's URL or `stdio:` and the server's JSON spec (see flowcheck.py).

The desk example keeps tickets in one domain (`ticket_*`) and credits in another
(`billing_credit`), gated on the ticket. The client plays a model that does as it is told:
it carries the conversation's `flow` handle wherever a result returns one, re-lists the
tools when the server says they changed (as hosts do), and picks each step from what the
last result names:
- `follow`: a tool in `next` is called; one in `next_after_switch` is called after a
  `switch_domain` to the domain it is under. The run fails on any refusal.
- `naive`: only `next` is read; a tool not in it is called anyway, and a `DOMAIN_MISMATCH`
  is answered with a switch and a retry (the only way before `next_after_switch`).
Either way it prints the count of calls, switches and refusals (`ok: counts …`).
"""

import random
from typing import Any

from flowcheck import Heard, check, connect, negotiated, passed, run, show, tool_listing
from flowcheck import call as call_tool


async def flow(protocol: str, server: str, mode: str) -> None:
    check(mode in ("follow", "naive"), f"unknown mode {mode}")
    heard = Heard()
    counts = {"calls": 0, "switches": 0, "refusals": 0}
    handle: dict[str, Any] = {}
    async with connect(server, protocol, heard) as client:
        negotiated(client, protocol)
        listed_after = -1

        async def call(tool: str, arguments: dict[str, Any]) -> tuple[dict[str, Any], bool]:
            nonlocal listed_after
            # A host re-lists once it heard the list changed: the SDK then validates each
            # result against the listing the call was made from.
            if listed_after != heard.tools_changed:
                listed_after = heard.tools_changed
                await tool_listing(client, fresh=True)
            counts["calls"] += 1
            content, is_error = await call_tool(client, tool, {**arguments, **handle})
            if "flow" in content:
                handle["flow"] = content["flow"]
            counts["refusals"] += is_error
            return content, is_error

        async def switch(domain: str) -> dict[str, Any]:
            counts["switches"] += 1
            content, is_error = await call("switch_domain", {"domain": domain, "reason": "the next step is there"})
            check(not is_error, f"switch_domain to {domain}: {show(content)}")
            return content

        async def step(last: dict[str, Any], tool: str, domain: str, arguments: dict[str, Any]) -> dict[str, Any]:
            if tool not in last.get("next", []):
                elsewhere = [d for d, tools in last.get("next_after_switch", {}).items() if tool in tools]
                if mode == "follow":
                    check(elsewhere == [domain], f"{tool} is named neither next nor after a switch: {show(last)}")
                    await switch(domain)
            content, is_error = await call(tool, {"domain": domain, **arguments})
            if is_error and mode == "naive" and content.get("code") == "DOMAIN_MISMATCH":
                await switch(domain)
                content, is_error = await call(tool, {"domain": domain, **arguments})
            check(not is_error, f"{tool}: {show(content)}")
            passed(f"{tool}: {content.get('state')}")
            return content

        # A conversation starts as a model's does, with a search: from then on it holds a
        # domain (at 2026-07-28, in the `flow` handle the result returns).
        found, is_error = await call("ticket_search", {"domain": "ticket", "words": "printer"})
        check(not is_error, f"ticket_search: {show(found)}")
        opened, is_error = await call("ticket_open", {"domain": "ticket", "problem": f"printer {random.random()}"})
        check(not is_error and opened.get("state") == "open", f"ticket_open: {show(opened)}")
        ticket = {"id": opened["id"]}
        resolved = await step(opened, "ticket_resolve", "ticket", ticket)
        credited = await step(resolved, "billing_credit", "billing", {**ticket, "amount": {"amount": "20.00", "currency": "EUR"}})
        closed = await step(credited, "ticket_close", "ticket", ticket)
        check(closed.get("state") == "closed", f"ticket_close: {show(closed)}")
        heard.check_quiet()
    passed(f"counts {show(counts)}")
    if mode == "follow":
        check(counts["refusals"] == 0, f"a client that follows the results was refused: {show(counts)}")


if __name__ == "__main__":
    run(flow, "desk_flow.py 2025-11-25|2026-07-28 SERVER follow|naive", 3, 3)
