"""The invoice example through the MCP Python SDK's default client.

    python invoice_flow.py 2025-11-25|2026-07-28 SERVER [TOKEN]

SERVER is the endpoint's URL or `stdio:` and the server's JSON spec (see flowcheck.py).
Over HTTP, TOKEN is the clerk's bearer token (`--token clerk=…`): the clerk may amend a
draft's amount, so the listing has `invoice_amend`, as over stdio, whose person at the
terminal is the clerk.

Invoice state belongs to the invoice (keyed by `id`) and is shared by all clients, so the
ids are fresh per run. At 2025-11-25 (a session, or stdio) the listing follows the invoice
the conversation works on, and a transition that changes it is announced with
`notifications/tools/list_changed`. At 2026-07-28, over HTTP and stdio alike, every client
gets the same listing, which never changes: the server, not the listing, refuses calls the
invoice's state does not allow. At 2026-07-28 the client
listens (`subscriptions/listen`) to the invoice's receipt and hears it updated when the
invoice moves.
"""

import random
from contextlib import AsyncExitStack

import anyio
from mcp.client.subscriptions import ResourceUpdated

from flowcheck import (
    LEGACY,
    MODERN,
    PATIENCE,
    Heard,
    check,
    connect,
    expect,
    negotiated,
    ok,
    passed,
    refused,
    run,
    same_listing,
    show,
    tool_listing,
    wait_for,
)

DRAFT_TOOLS = ["invoice_amend", "invoice_submit", "invoice_view"]
REVIEW_TOOLS = ["invoice_approve", "invoice_reject", "invoice_view"]
ALL_TOOLS = sorted({*DRAFT_TOOLS, *REVIEW_TOOLS, "invoice_discharge"})


def fresh_id() -> str:
    return f"INV-{random.randrange(10**8, 10**9)}"


def receipt(invoice: str) -> str:
    return f"invoice://{invoice}/receipt"


def names(listing: list[tuple[str, str | None]]) -> list[str]:
    return sorted(name for name, _ in listing)


async def flow(protocol: str, server: str, token: str | None = None) -> None:
    approved, untouched = fresh_id(), fresh_id()
    while untouched == approved:
        untouched = fresh_id()
    # The listing follows the conversation only at 2025-11-25: 2026-07-28 forbids a list
    # that changes with other requests, over stdio too.
    per_conversation = protocol == LEGACY

    def on(invoice: str) -> dict[str, str]:
        return {"domain": "invoice", "id": invoice}

    heard = Heard()
    async with connect(server, protocol, heard, token) as client:
        negotiated(client, protocol)
        listing = await tool_listing(client)
        expected = DRAFT_TOOLS if per_conversation else ALL_TOOLS
        check(names(listing) == expected, f"tools/list: {names(listing)}, expected {expected}")
        passed(f"tools/list: {names(listing)}")

        async with AsyncExitStack() as stack:
            subscription = None
            if protocol == MODERN:
                subscription = await stack.enter_async_context(
                    client.listen(tools_list_changed=True, resource_subscriptions=[receipt(approved)])
                )
                honored = subscription.honored
                check(honored.tools_list_changed is True, f"listen did not honor toolsListChanged: {honored}")
                check(
                    honored.resource_subscriptions == [receipt(approved)],
                    f"listen did not honor the receipt: {honored}",
                )
                passed(f"subscriptions/listen acknowledged: {honored}")

            early = await refused(client, "invoice_discharge", on(untouched), "FORBIDDEN")
            expect(early, "instance", untouched, f"invoice_discharge of the untouched {untouched}")
            expect(early, "current_state", "draft", f"invoice_discharge of the untouched {untouched}")
            check("invoice_submit" in early.get("allowed_tools", []), f"FORBIDDEN allows {show(early)}")
            expect(early, "next", DRAFT_TOOLS, f"invoice_discharge of the untouched {untouched}: what draft allows")
            passed(f"invoice_discharge {untouched} (never touched) -> FORBIDDEN in draft")

            async def relisted(what: str, changes_before: int) -> list[str]:
                """Where the listing follows the conversation: the list_changed `what` caused,
                and the listing asked again (as a client does on list_changed, before it calls
                a tool the change brought; the SDK validates a result against the listing)."""
                await wait_for(lambda: heard.tools_changed > changes_before, f"tools/list_changed after {what}")
                return names(await tool_listing(client, fresh=True))

            changes_before = heard.tools_changed
            submitted = await ok(client, "invoice_submit", on(approved))
            expect(submitted, "state", "review", f"invoice_submit {approved}")
            expect(submitted, "next", REVIEW_TOOLS, f"invoice_submit {approved}: what may follow")
            passed(f"invoice_submit {approved} -> review")
            if per_conversation:
                after = await relisted("invoice_submit", changes_before)
                check(after == REVIEW_TOOLS, f"tools/list after invoice_submit: {after}, expected {REVIEW_TOOLS}")
                passed(f"tools/list_changed -> {after}")
            if subscription is not None:
                # At 2026-07-28 the listing never changes: the stream carries the receipt's
                # update alone.
                events = []
                with anyio.fail_after(PATIENCE):
                    while not events or events[-1] != ResourceUpdated(uri=receipt(approved)):
                        events.append(await anext(subscription))
                expected = [ResourceUpdated(uri=receipt(approved))]
                check(events == expected, f"the listen stream delivered {events}, expected {expected}")
                passed(f"the listen stream delivered {events}")

            changes_before = heard.tools_changed
            approval = await ok(client, "invoice_approve", on(approved))
            expect(approval, "state", "approved", f"invoice_approve {approved}")
            passed(f"invoice_approve {approved} -> approved")
            if per_conversation:
                after = await relisted("invoice_approve", changes_before)
                check("invoice_discharge" in after, f"tools/list after invoice_approve: {after}")
                passed(f"tools/list_changed -> {after}")

            changes_before = heard.tools_changed
            paid = await ok(client, "invoice_discharge", on(approved))
            expect(paid, "state", "discharged", f"invoice_discharge {approved}")
            passed(f"invoice_discharge {approved} -> discharged")
            if per_conversation:
                after = await relisted("invoice_discharge", changes_before)
                check("invoice_discharge" not in after, f"tools/list after invoice_discharge: {after}")
                passed(f"tools/list_changed -> {after}")

            again = await refused(client, "invoice_discharge", on(approved), "FORBIDDEN")
            expect(again, "current_state", "discharged", f"invoice_discharge {approved} a second time")
            passed(f"invoice_discharge {approved} again -> FORBIDDEN in discharged")

            viewed = await ok(client, "invoice_view", on(approved))
            expect(viewed, "state", "discharged", f"invoice_view {approved}")
            passed(f"invoice_view {approved} -> discharged")

            if not per_conversation:
                same_listing(listing, await tool_listing(client, fresh=True))
                passed("tools/list unchanged")
    heard.check_quiet()


if __name__ == "__main__":
    run(flow, "invoice_flow.py 2025-11-25|2026-07-28 SERVER [TOKEN]", 2, 3)
