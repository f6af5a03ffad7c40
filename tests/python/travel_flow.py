"""The travel example through the MCP Python SDK's default client.

    python travel_flow.py 2025-11-25|2026-07-28 SERVER TOKEN OUTBOX [OTHER_KEY_URL] [SHORT_TTL_URL]

SERVER is the endpoint's URL or `stdio:` and the server's JSON spec (see flowcheck.py).

The intent lock: nothing is callable before a domain is selected, `switch_domain` is the
way in, and a call into another domain is refused with DOMAIN_MISMATCH. Booking is
transactional and confirmed: over HTTP the traveller's client presents TOKEN (`-` for
none), over stdio the traveller is the connection's principal, and the code comes from the
server's development OUTBOX.

Where the listing follows the conversation — a 2025-11-25 session or a stdio connection
that initialized at it — it lists only the active domain's tools and announces each change
with `notifications/tools/list_changed`. At 2026-07-28, over stdio too, the listing is the
same for everyone and never changes. Over HTTP at 2026-07-28 flow state lives in a signed
handle the client passes back as the `flow` argument, every client gets the same listing,
which never changes, and the client listens (`subscriptions/listen`) for changes to it;
the server refuses any handle it did not sign, or signed too long ago. OTHER_KEY_URL serves
the same example under another `TOOLGATE_HANDLE_KEY`; SHORT_TTL_URL serves it with
`--handle-ttl 100ms`; either may be `-` (or absent) to skip its checks.
"""

import asyncio
from contextlib import AsyncExitStack
from typing import Any

from mcp.client import Client

from flowcheck import (
    LEGACY,
    MODERN,
    Heard,
    bearer_client,
    check,
    confirmed,
    connect,
    expect,
    is_stdio,
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


def names(listing: list[tuple[str, str | None]]) -> list[str]:
    return sorted(name for name, _ in listing)


async def flow(
    protocol: str, server: str, token: str, outbox: str, other_key_url: str = "-", short_ttl_url: str = "-"
) -> None:
    # The conversation is the connection on a 2025-11-25 session and on stdio; the listing
    # follows it only at 2025-11-25 (2026-07-28 forbids a list that changes with calls).
    connection_flow = protocol == LEGACY or is_stdio(server)
    per_conversation = protocol == LEGACY
    heard = Heard()
    async with connect(server, protocol, heard, None if token == "-" else token) as client:
        negotiated(client, protocol)
        listing = await tool_listing(client)
        if per_conversation:
            check(names(listing) == ["switch_domain"], f"tools/list before a domain is selected: {names(listing)}")
        else:
            for tool in ["switch_domain", "bus_search", "bus_book", "car_rental_search"]:
                check(tool in names(listing), f"tools/list lacks {tool}: {names(listing)}")
        passed(f"tools/list: {names(listing)}")

        async def list_changed(what: str, changes_before: int, expected: list[str]) -> None:
            """Where the listing follows the conversation: the list_changed `what` caused,
            and the listing asked again (as a client does before calling what it brought)."""
            if not per_conversation:
                return
            await wait_for(lambda: heard.tools_changed > changes_before, f"tools/list_changed after {what}")
            after = names(await tool_listing(client, fresh=True))
            check(after == expected, f"tools/list after {what}: {after}, expected {expected}")
            passed(f"tools/list_changed -> {after}")

        # Where the conversation is a handle, each result carries the next one; elsewhere none.
        handle: str | None = None

        def follow(content: dict[str, Any], what: str) -> None:
            nonlocal handle
            if connection_flow:
                check("flow" not in content, f"{what}: a flow handle where the connection is the flow: {show(content)}")
            else:
                handle = content.get("flow", handle)
                check(isinstance(handle, str) and handle != "", f"{what}: no `flow` handle in {show(content)}")

        def with_flow(arguments: dict[str, Any]) -> dict[str, Any]:
            return arguments if handle is None else {**arguments, "flow": handle}

        async with AsyncExitStack() as stack:
            if protocol == MODERN:
                subscription = await stack.enter_async_context(client.listen(tools_list_changed=True))
                check(subscription.honored.tools_list_changed is True, f"listen: {subscription.honored}")
                passed(f"subscriptions/listen acknowledged: {subscription.honored}")

            unselected = await refused(client, "bus_search", BUS_SEARCH, "DOMAIN_NOT_SELECTED")
            check(isinstance(unselected.get("hint"), str), f"DOMAIN_NOT_SELECTED without a hint: {show(unselected)}")
            passed("bus_search before switch_domain -> DOMAIN_NOT_SELECTED with a hint")

            changes_before = heard.tools_changed
            switched = await ok(client, "switch_domain", SWITCH_TO_BUS)
            expect(switched, "domain", "bus", "switch_domain to bus")
            follow(switched, "switch_domain")
            passed("switch_domain bus")
            await list_changed("switch_domain", changes_before, ["bus_book", "bus_search", "switch_domain"])

            quoted = await ok(client, "bus_search", with_flow(BUS_SEARCH))
            expect(quoted, "state", "quoted", "bus_search")
            offers = quoted.get("offers")
            check(isinstance(offers, list) and len(offers) > 0, f"bus_search: expected offers, got {show(quoted)}")
            follow(quoted, "bus_search")
            passed(f"bus_search -> quote {quoted.get('quote_id')}, {len(offers)} offers")

            booking = with_flow({"domain": "bus", "quote_id": quoted.get("quote_id"), "offer_id": offers[0]["id"]})
            booked = await confirmed(client, "bus_book", booking, outbox)
            expect(booked, "state", "booked", "bus_book")
            follow(booked, "bus_book")
            passed(f"bus_book {offers[0]['id']} with the code -> booked")

            drift = await refused(client, "car_rental_search", with_flow(CAR_SEARCH), "DOMAIN_MISMATCH")
            expect(drift, "active_domain", "bus", "car_rental_search in the bus flow")
            passed("car_rental_search in the bus flow -> DOMAIN_MISMATCH")

            if handle is not None:
                await handle_checks(client, handle, token, other_key_url, short_ttl_url)
                same_listing(listing, await tool_listing(client, fresh=True))
                passed("tools/list unchanged")
    heard.check_quiet()


async def handle_checks(client: Client, handle: str, token: str, other_key_url: str, short_ttl_url: str) -> None:
    """Handles the server did not sign, or signed too long ago, are refused (to the same
    traveller: a quote is its searcher's, so searching takes a principal)."""
    forged = await refused(client, "bus_search", {**BUS_SEARCH, "flow": tampered(handle)}, "INVALID_HANDLE")
    check(isinstance(forged.get("hint"), str), f"INVALID_HANDLE without a hint: {show(forged)}")
    passed("a tampered handle -> INVALID_HANDLE with a hint")

    await refused(client, "bus_search", {**BUS_SEARCH, "flow": "abc"}, "INVALID_HANDLE")
    passed("a made-up handle -> INVALID_HANDLE")

    if other_key_url != "-":
        async with bearer_client(other_key_url, token) as other:
            await refused(other, "bus_search", {**BUS_SEARCH, "flow": handle}, "INVALID_HANDLE")
        passed("a handle signed under another key -> INVALID_HANDLE")

    if short_ttl_url != "-":
        async with bearer_client(short_ttl_url, token) as short:
            stale = await switch_to_bus(short)
            await asyncio.sleep(0.2)  # the server's --handle-ttl is 100ms
            expired = await refused(short, "bus_search", {**BUS_SEARCH, "flow": stale}, "HANDLE_EXPIRED")
            check("flow" not in expired, f"HANDLE_EXPIRED must not start a new flow, got {show(expired)}")
        passed("a handle past its TTL -> HANDLE_EXPIRED, no new flow")


if __name__ == "__main__":
    run(flow, "travel_flow.py 2025-11-25|2026-07-28 SERVER TOKEN OUTBOX [OTHER_KEY_URL] [SHORT_TTL_URL]", 4, 6)
