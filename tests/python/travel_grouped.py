"""The travel example served grouped (`--exposition grouped`), through the MCP Python
SDK's default client.

    python travel_grouped.py 2025-11-25|2026-07-28 URL TOKEN OUTBOX

A tool per domain (`bus`, `car_rental`, `flight`) with an `action` argument, and
`switch_domain`. Each action is judged as its flat tool: the strict intent lock, the state
of the quote it books, the code that confirms a booking. Results name what may follow as
actions (`next`). At 2026-07-28 the `action` enum is every action, always; on a 2025-11-25
session it lists only what the state allows, so a booked quote's `book` leaves the menu.
"""

from typing import Any

from flowcheck import (
    LEGACY,
    Heard,
    check,
    confirmed,
    connect,
    expect,
    negotiated,
    ok,
    passed,
    refused,
    run,
    show,
    wait_for,
)

BUS_SEARCH = {
    "action": "search",
    "origin": "Madrid",
    "destination": "Valencia",
    "departure": "2026-12-04T08:00:00+01:00",
    "passengers": 2,
}
CAR_SEARCH = {
    "action": "search",
    "pickup_location": "Valencia Airport",
    "pickup_at": "2026-12-04T10:00:00+01:00",
    "days": 3,
    "passengers": 2,
}


async def listed(client: Any) -> dict[str, Any]:
    """Every listed tool by name, asked afresh."""
    page = await client.list_tools(cache_mode="refresh")
    return {tool.name: tool for tool in page.tools}


def actions(tool: Any) -> list[str]:
    """The actions a grouped tool's `action` enum offers."""
    return sorted(tool.input_schema["properties"]["action"]["enum"])


async def flow(protocol: str, url: str, token: str, outbox: str) -> None:
    session = protocol == LEGACY
    heard = Heard()
    async with connect(url, protocol, heard, token) as client:
        negotiated(client, protocol)
        tools = await listed(client)
        if session:
            check(sorted(tools) == ["switch_domain"], f"tools/list before a domain is selected: {sorted(tools)}")
        else:
            check(sorted(tools) == ["bus", "car_rental", "flight", "switch_domain"], f"tools/list: {sorted(tools)}")
            check(actions(tools["bus"]) == ["book", "search"], f"bus's actions: {actions(tools['bus'])}")
            branches = tools["bus"].input_schema["oneOf"]
            check(len(branches) == 2 and all(b.get("description") for b in branches), f"bus's branches: {branches}")
        passed(f"tools/list: {sorted(tools)}")

        handle: str | None = None

        def follow(content: dict[str, Any]) -> None:
            nonlocal handle
            handle = content.get("flow", handle)

        def with_flow(arguments: dict[str, Any]) -> dict[str, Any]:
            return arguments if handle is None else {**arguments, "flow": handle}

        # The strict lock holds inside a grouped tool.
        await refused(client, "bus", BUS_SEARCH, "DOMAIN_NOT_SELECTED")
        passed("bus search before switch_domain -> DOMAIN_NOT_SELECTED")

        changes = heard.tools_changed
        switched = await ok(client, "switch_domain", {"domain": "bus", "reason": "the user wants a bus"})
        follow(switched)
        expect(switched, "next", ["bus.book", "bus.search", "switch_domain"], "switch_domain's next")
        passed(f"switch_domain bus -> next {switched['next']}")
        if session:
            await wait_for(lambda: heard.tools_changed > changes, "tools/list_changed after switch_domain")
            tools = await listed(client)
            check(sorted(tools) == ["bus", "switch_domain"], f"tools/list after switch_domain: {sorted(tools)}")
            check(actions(tools["bus"]) == ["book", "search"], f"bus's actions: {actions(tools['bus'])}")

        # An action that is not one: a clear refusal naming the actions.
        wrong = await refused(client, "bus", with_flow({"action": "fly"}), "INVALID_ARGUMENT")
        check(wrong["errors"][0]["field"] == "/action", f"a wrong action: {show(wrong)}")
        passed("bus fly -> INVALID_ARGUMENT on /action")

        quoted = await ok(client, "bus", with_flow(BUS_SEARCH))
        follow(quoted)
        expect(quoted, "state", "quoted", "bus search")
        expect(quoted, "next", ["book"], "bus search's next")
        passed(f"bus search -> quote {quoted['quote_id']}, next {quoted['next']}")

        booking = with_flow({"action": "book", "quote_id": quoted["quote_id"], "offer_id": quoted["offers"][0]["id"]})
        changes = heard.tools_changed
        booked = await confirmed(client, "bus", booking, outbox)
        follow(booked)
        expect(booked, "state", "booked", "bus book")
        expect(booked, "next", [], "a booked quote's next")
        passed("bus book with the code -> booked, nothing next")

        # Gated per action: the booked quote refuses `book`, naming the action.
        again = await refused(client, "bus", with_flow({**booking, "flow": handle}), "FORBIDDEN")
        expect(again, "tool", "book", "bus book again")
        expect(again, "current_state", "booked", "bus book again")
        passed("bus book again -> FORBIDDEN for `book` in booked")
        if session:
            # The step leaves the menu: the session's quote is booked.
            await wait_for(lambda: heard.tools_changed > changes, "tools/list_changed after bus book")
            tools = await listed(client)
            check(actions(tools["bus"]) == ["search"], f"bus's actions once booked: {actions(tools['bus'])}")
            passed("tools/list after booking: bus offers only search")

        drift = await refused(client, "car_rental", with_flow(CAR_SEARCH), "DOMAIN_MISMATCH")
        expect(drift, "active_domain", "bus", "car_rental search in the bus flow")
        passed("car_rental search in the bus flow -> DOMAIN_MISMATCH")
    heard.check_quiet()


if __name__ == "__main__":
    run(flow, "travel_grouped.py 2025-11-25|2026-07-28 URL TOKEN OUTBOX", 4, 4)
