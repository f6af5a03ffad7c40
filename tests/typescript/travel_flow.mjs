// The travel example through the official TypeScript SDK client (see flowcheck.mjs).
//
//   node travel_flow.mjs v1|v2 2025-11-25|2026-07-28 SERVER TOKEN OUTBOX
//
// The intent lock: nothing is callable before a domain is selected, `switch_domain` is the
// way in, and a call into another domain is refused with DOMAIN_MISMATCH. At 2025-11-25 (a
// session, or stdio) it lists only the active domain's tools and announces each change with
// `notifications/tools/list_changed`; at 2026-07-28, over stdio too, the listing never
// changes. Over HTTP at 2026-07-28 the conversation travels in
// a signed `flow` handle the client passes back, every client gets the same listing, and
// the client listens (`subscriptions/listen`) for changes to it. Booking is confirmed with
// a one-time code from the server's development OUTBOX; over HTTP the traveller presents
// TOKEN (`-` for none), over stdio the traveller is the connection's principal.
import { readFileSync } from "node:fs";

import { check, connect, Failed, LEGACY, MODERN, passed, run, show, waitFor } from "./flowcheck.mjs";

const BUS_SEARCH = {
  domain: "bus",
  origin: "Madrid",
  destination: "Valencia",
  departure: "2026-12-04T08:00:00+01:00",
  passengers: 2,
};
const CAR_SEARCH = {
  domain: "car_rental",
  pickup_location: "Valencia Airport",
  pickup_at: "2026-12-04T10:00:00+01:00",
  days: 3,
  passengers: 2,
};

const sorted = (names) => [...names].sort();

function sameNames(names, expected, what) {
  check(show(sorted(names)) === show(sorted(expected)), `${what}: listed ${show(names)}, expected ${show(expected)}`);
}

/// The one-time code the development outbox holds for `challenge`.
function codeFor(outbox, challenge) {
  for (const line of readFileSync(outbox, "utf8").split("\n").filter(Boolean)) {
    const delivery = JSON.parse(line);
    if (delivery.challenge_id === challenge) return delivery.otp;
  }
  throw new Failed(`no code for ${challenge} in ${outbox}`);
}

async function flow(sdk, protocol, server, token, outbox) {
  // The conversation is the connection on a 2025-11-25 session and on stdio; the listing
  // follows it only at 2025-11-25 (2026-07-28 forbids a list that changes with calls).
  const connectionFlow = protocol === LEGACY || server.startsWith("stdio:");
  const perConversation = protocol === LEGACY;
  const mcp = await connect(sdk, protocol, server, token === "-" ? undefined : token);

  const listing = await mcp.toolNames();
  if (perConversation) {
    sameNames(listing, ["switch_domain"], "tools/list before a domain is selected");
  } else {
    for (const tool of ["switch_domain", "bus_search", "bus_book", "car_rental_search"]) {
      check(listing.includes(tool), `tools/list lacks ${tool}: ${show(listing)}`);
    }
  }
  passed(`tools/list: ${show(listing)}`);

  let subscription;
  if (protocol === MODERN) {
    subscription = await mcp.listen({ toolsListChanged: true });
    check(subscription.honoredFilter.toolsListChanged === true, `listen: ${show(subscription.honoredFilter)}`);
    passed(`subscriptions/listen acknowledged: ${show(subscription.honoredFilter)}`);
  }

  const unselected = await mcp.refused("bus_search", BUS_SEARCH, "DOMAIN_NOT_SELECTED");
  check(typeof unselected.hint === "string", `DOMAIN_NOT_SELECTED without a hint: ${show(unselected)}`);
  passed("bus_search before switch_domain -> DOMAIN_NOT_SELECTED");

  // Where the conversation is a handle, each result carries the next one; elsewhere none.
  let handle;
  const follow = (content, what) => {
    if (connectionFlow) {
      check(!("flow" in content), `${what}: a flow handle in a conversation that is the connection: ${show(content)}`);
      return;
    }
    if (typeof content.flow === "string") handle = content.flow;
    check(typeof handle === "string" && handle !== "", `${what}: no flow handle in ${show(content)}`);
  };
  const withFlow = (args) => (handle === undefined ? args : { ...args, flow: handle });
  const listChanged = async (before, expected, what) => {
    if (!perConversation) return;
    await waitFor(() => mcp.toolsChanged > before, `tools/list_changed after ${what}`);
    sameNames(await mcp.toolNames(), expected, `tools/list after ${what}`);
    passed(`tools/list_changed -> ${show(expected)}`);
  };

  let before = mcp.toolsChanged;
  const switched = await mcp.ok("switch_domain", { domain: "bus", reason: "the user wants a bus" });
  check(switched.domain === "bus", `switch_domain: ${show(switched)}`);
  follow(switched, "switch_domain");
  passed("switch_domain bus");
  await listChanged(before, ["bus_book", "bus_search", "switch_domain"], "switch_domain");

  const quoted = await mcp.ok("bus_search", withFlow(BUS_SEARCH));
  check(quoted.state === "quoted", `bus_search: state ${quoted.state}, expected quoted`);
  check(Array.isArray(quoted.offers) && quoted.offers.length > 0, `bus_search offers nothing: ${show(quoted)}`);
  follow(quoted, "bus_search");
  passed(`bus_search -> quote ${quoted.quote_id}, ${quoted.offers.length} offers`);

  const book = withFlow({ domain: "bus", quote_id: quoted.quote_id, offer_id: quoted.offers[0].id });
  const required = await mcp.refused("bus_book", book, "CONFIRMATION_REQUIRED");
  const code = codeFor(outbox, required.challenge_id);
  const booked = await mcp.ok("bus_book", { ...book, challenge_id: required.challenge_id, otp: code });
  check(booked.state === "booked", `bus_book: state ${booked.state}, expected booked`);
  follow(booked, "bus_book");
  passed(`bus_book ${quoted.offers[0].id} with the code -> booked`);

  const drift = await mcp.refused("car_rental_search", withFlow(CAR_SEARCH), "DOMAIN_MISMATCH");
  check(drift.active_domain === "bus", `DOMAIN_MISMATCH names ${drift.active_domain}, not bus`);
  passed("car_rental_search in the bus flow -> DOMAIN_MISMATCH");

  if (!perConversation) {
    sameNames(await mcp.toolNames(), listing, "tools/list after the flow");
    passed("tools/list unchanged");
  }
  if (subscription) await subscription.close();
  await mcp.close();
}

await run(flow, "travel_flow.mjs v1|v2 2025-11-25|2026-07-28 SERVER TOKEN OUTBOX", 5, 5);
