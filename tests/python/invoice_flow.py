"""The invoice example through the MCP Python SDK's default client.

    python invoice_flow.py http://127.0.0.1:PORT/mcp

Invoice state belongs to the invoice (keyed by `id`) and is shared by all clients, so the
ids are fresh per run. `tools/list` never changes: the server, not the listing, refuses
calls the invoice's state does not allow.
"""

import random

from mcp.client import Client

from flowcheck import check, expect, ok, passed, refused, run, same_listing, tool_listing

PROTOCOL = "2026-07-28"


def fresh_id() -> str:
    return f"INV-{random.randrange(10**8, 10**9)}"


async def flow(url: str) -> None:
    approved, untouched = fresh_id(), fresh_id()
    while untouched == approved:
        untouched = fresh_id()

    def on(invoice: str) -> dict[str, str]:
        return {"domain": "invoice", "id": invoice}

    async with Client(url) as client:
        check(
            client.protocol_version == PROTOCOL,
            f"negotiated protocol {client.protocol_version}, expected {PROTOCOL}",
        )
        passed(f"negotiated {PROTOCOL}")
        listing = await tool_listing(client)
        passed(f"tools/list: {[name for name, _ in listing]}")

        submitted = await ok(client, "invoice_submit", on(approved))
        expect(submitted, "state", "review", f"invoice_submit {approved}")
        passed(f"invoice_submit {approved} -> review")

        approval = await ok(client, "invoice_approve", on(approved))
        expect(approval, "state", "approved", f"invoice_approve {approved}")
        passed(f"invoice_approve {approved} -> approved")

        early = await refused(client, "invoice_discharge", on(untouched), "FORBIDDEN")
        expect(early, "instance", untouched, f"invoice_discharge of the untouched {untouched}")
        expect(early, "current_state", "draft", f"invoice_discharge of the untouched {untouched}")
        passed(f"invoice_discharge {untouched} (never touched) -> FORBIDDEN in draft")

        paid = await ok(client, "invoice_discharge", on(approved))
        expect(paid, "state", "discharged", f"invoice_discharge {approved}")
        passed(f"invoice_discharge {approved} -> discharged")

        again = await refused(client, "invoice_discharge", on(approved), "FORBIDDEN")
        expect(again, "current_state", "discharged", f"invoice_discharge {approved} a second time")
        passed(f"invoice_discharge {approved} again -> FORBIDDEN in discharged")

        viewed = await ok(client, "invoice_view", on(approved))
        expect(viewed, "state", "discharged", f"invoice_view {approved}")
        passed(f"invoice_view {approved} -> discharged")

        same_listing(listing, await tool_listing(client, fresh=True))
        passed("tools/list unchanged")


if __name__ == "__main__":
    run(flow, "invoice_flow.py URL", 1, 1)
