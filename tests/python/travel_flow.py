"""The travel example through the MCP Python SDK's default client.

    python travel_flow.py URL TOKEN OUTBOX [OTHER_KEY_URL] [SHORT_TTL_URL]

Flow state lives in a signed handle the client passes back as the `flow` argument; the
server refuses drift between domains and any handle it did not sign, or signed too long
ago. OTHER_KEY_URL serves the same example under another `TOOLGATE_HANDLE_KEY`;
SHORT_TTL_URL serves it with `--handle-ttl 100ms`; either may be `-` to skip its checks.
`tools/list` never changes. Booking is transactional and confirmed: the traveller's
client presents TOKEN, and the code comes from the server's development OUTBOX.
"""

import asyncio
from typing import Any

from mcp.client import Client

from flowcheck import bearer_client, check, confirmed, expect, ok, passed, refused, run, same_listing, show, tool_listing

BUS_SEARCH = {
    "domain": "bus",
    "origin": "Madrid",
    "destination": "Valencia",
    "departure": "2026-12-04T08:00:00+01:00",
    "passengers": 2,
}
CAR_SEARCH = {
    "domain": "car_rental",
    "pickup_location": "Valencia Airport",
    "pickup_at": "2026-12-04T10:00:00+01:00",
    "days": 3,
    "passengers": 2,
}
SWITCH_TO_BUS = {"domain": "bus", "reason": "the user wants a bus"}


def handle_of(content: dict[str, Any], what: str) -> str:
    """The `flow` handle a result carries."""
    flow = content.get("flow")
    check(isinstance(flow, str) and flow != "", f"{what}: expected a string `flow` handle, got {show(content)}")
    return flow


def tampered(handle: str) -> str:
    """`handle` with its middle character changed (to another base64url character)."""
    middle = len(handle) // 2
    flipped = "B" if handle[middle] == "A" else "A"
    return handle[:middle] + flipped + handle[middle + 1 :]


async def switch_to_bus(client: Client) -> str:
    """Selects the bus domain and returns the new flow handle."""
    switched = await ok(client, "switch_domain", SWITCH_TO_BUS)
    expect(switched, "domain", "bus", "switch_domain to bus")
    return handle_of(switched, "switch_domain to bus")


async def flow(url: str, token: str, outbox: str, other_key_url: str = "-", short_ttl_url: str = "-") -> None:
    async with bearer_client(url, token) as client:
        passed(f"negotiated {client.protocol_version}")
        listing = await tool_listing(client)
        passed(f"tools/list: {[name for name, _ in listing]}")

        unselected = await refused(client, "bus_search", BUS_SEARCH, "DOMAIN_NOT_SELECTED")
        check(isinstance(unselected.get("hint"), str), f"DOMAIN_NOT_SELECTED without a hint: {show(unselected)}")
        passed("bus_search without a handle -> DOMAIN_NOT_SELECTED with a hint")

        handle = await switch_to_bus(client)
        passed("switch_domain bus -> a flow handle")

        quoted = await ok(client, "bus_search", {**BUS_SEARCH, "flow": handle})
        expect(quoted, "state", "quoted", "bus_search")
        offers = quoted.get("offers")
        check(isinstance(offers, list) and len(offers) > 0, f"bus_search: expected offers, got {show(quoted)}")
        handle = handle_of(quoted, "bus_search")
        passed(f"bus_search -> quoted, {len(offers)} offers")

        booked = await confirmed(client, "bus_book", {"domain": "bus", "offer_id": offers[0]["id"], "flow": handle}, outbox)
        expect(booked, "state", "booked", "bus_book")
        handle = booked.get("flow", handle)
        passed(f"bus_book {offers[0]['id']} -> booked")

        await refused(client, "car_rental_search", {**CAR_SEARCH, "flow": handle}, "DOMAIN_MISMATCH")
        passed("car_rental_search in the bus flow -> DOMAIN_MISMATCH")

        forged = await refused(client, "bus_search", {**BUS_SEARCH, "flow": tampered(handle)}, "INVALID_HANDLE")
        check(isinstance(forged.get("hint"), str), f"INVALID_HANDLE without a hint: {show(forged)}")
        passed("a tampered handle -> INVALID_HANDLE with a hint")

        await refused(client, "bus_search", {**BUS_SEARCH, "flow": "abc"}, "INVALID_HANDLE")
        passed("a made-up handle -> INVALID_HANDLE")

        if other_key_url != "-":
            async with Client(other_key_url) as other:
                await refused(other, "bus_search", {**BUS_SEARCH, "flow": handle}, "INVALID_HANDLE")
            passed("a handle signed under another key -> INVALID_HANDLE")

        if short_ttl_url != "-":
            async with Client(short_ttl_url) as short:
                stale = await switch_to_bus(short)
                await asyncio.sleep(0.2)  # the server's --handle-ttl is 100ms
                expired = await refused(short, "bus_search", {**BUS_SEARCH, "flow": stale}, "HANDLE_EXPIRED")
                check("flow" not in expired, f"HANDLE_EXPIRED must not start a new flow, got {show(expired)}")
            passed("a handle past its TTL -> HANDLE_EXPIRED, no new flow")

        same_listing(listing, await tool_listing(client, fresh=True))
        passed("tools/list unchanged")


if __name__ == "__main__":
    run(flow, "travel_flow.py URL TOKEN OUTBOX [OTHER_KEY_URL] [SHORT_TTL_URL]", 3, 5)
