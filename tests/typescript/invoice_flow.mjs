// The invoice example through the official TypeScript SDK client (see flowcheck.mjs).
//
//   node invoice_flow.mjs v1|v2 2025-11-25|2026-07-28 SERVER [TOKEN]
//
// Over HTTP, TOKEN is the clerk's bearer token (`--token clerk=…`): the clerk may amend a
// draft's amount, so the listing has `invoice_amend` as it has over stdio, whose person at
// the terminal is the clerk.
// Invoice state belongs to the invoice (keyed by `id`), shared by every client, so the ids
// are fresh per run. At 2025-11-25 (a session, or stdio) the listing follows the invoice
// the conversation works on, and a transition that changes it is announced with
// `notifications/tools/list_changed`. At 2026-07-28, over HTTP and stdio, every client gets
// the same listing, and the change a client can
// hear is on a `subscriptions/listen` stream: `notifications/resources/updated` for the
// invoice's receipt when the invoice moves.
import { check, connect, LEGACY, MODERN, passed, run, show, waitFor } from "./flowcheck.mjs";

const DRAFT_TOOLS = ["invoice_amend", "invoice_submit", "invoice_view"];
const REVIEW_TOOLS = ["invoice_approve", "invoice_reject", "invoice_view"];
const ALL_TOOLS = [...new Set([...DRAFT_TOOLS, ...REVIEW_TOOLS, "invoice_discharge"])].sort();

const freshId = () => `INV-${100000000 + Math.floor(Math.random() * 900000000)}`;
const on = (id) => ({ domain: "invoice", id });
const receipt = (id) => `invoice://${id}/receipt`;
const sorted = (names) => [...names].sort();

function sameNames(names, expected, what) {
  check(show(sorted(names)) === show(sorted(expected)), `${what}: listed ${show(names)}, expected ${show(expected)}`);
}

async function flow(sdk, protocol, server, token) {
  const approved = freshId();
  let untouched = freshId();
  while (untouched === approved) untouched = freshId();
  // The listing follows the conversation only at 2025-11-25: 2026-07-28 forbids a list that
  // changes with other requests, over stdio too.
  const perConversation = protocol === LEGACY;

  const mcp = await connect(sdk, protocol, server, token === "-" ? undefined : token);
  const listing = await mcp.toolNames();
  sameNames(listing, perConversation ? DRAFT_TOOLS : ALL_TOOLS, "tools/list");
  passed(`tools/list: ${show(listing)}`);

  let subscription;
  if (protocol === MODERN) {
    subscription = await mcp.listen({ toolsListChanged: true, resourceSubscriptions: [receipt(approved)] });
    const honored = subscription.honoredFilter;
    check(honored.toolsListChanged === true, `listen did not honor toolsListChanged: ${show(honored)}`);
    check(
      show(honored.resourceSubscriptions) === show([receipt(approved)]),
      `listen did not honor the receipt: ${show(honored)}`,
    );
    passed(`subscriptions/listen acknowledged: ${show(honored)}`);
  }

  const early = await mcp.refused("invoice_discharge", on(untouched), "FORBIDDEN");
  check(early.instance === untouched, `FORBIDDEN names ${early.instance}, not ${untouched}`);
  check(early.current_state === "draft", `FORBIDDEN says ${early.current_state}, not draft`);
  check(early.allowed_tools.includes("invoice_submit"), `FORBIDDEN allows ${show(early.allowed_tools)}`);
  sameNames(early.next, DRAFT_TOOLS, "FORBIDDEN's next");
  passed(`invoice_discharge ${untouched} (never touched) -> FORBIDDEN in draft`);

  // Where the listing follows the conversation: the list_changed `what` caused, and the
  // listing asked again (as a client does on list_changed, before it calls a tool the
  // change brought).
  const relisted = async (what, before) => {
    await waitFor(() => mcp.toolsChanged > before, `tools/list_changed after ${what}`);
    return mcp.toolNames();
  };

  let before = mcp.toolsChanged;
  const submitted = await mcp.ok("invoice_submit", on(approved));
  check(submitted.state === "review", `invoice_submit: state ${submitted.state}, expected review`);
  sameNames(submitted.next, REVIEW_TOOLS, "invoice_submit's next");
  passed(`invoice_submit ${approved} -> review`);
  if (perConversation) {
    const after = await relisted("invoice_submit", before);
    sameNames(after, REVIEW_TOOLS, "tools/list after invoice_submit");
    passed(`tools/list_changed -> ${show(after)}`);
  }
  if (subscription) {
    const heard = (update) => update.uri === receipt(approved);
    await waitFor(() => mcp.updates.some(heard), `resources/updated for ${receipt(approved)} on the listen stream`);
    const update = mcp.updates.find(heard);
    check(
      update._meta?.["io.modelcontextprotocol/subscriptionId"] !== undefined,
      `resources/updated without its subscription id: ${show(update)}`,
    );
    passed(`the listen stream delivered resources/updated for ${receipt(approved)}`);
  }

  before = mcp.toolsChanged;
  const approval = await mcp.ok("invoice_approve", on(approved));
  check(approval.state === "approved", `invoice_approve: state ${approval.state}, expected approved`);
  passed(`invoice_approve ${approved} -> approved`);
  if (perConversation) {
    const after = await relisted("invoice_approve", before);
    check(after.includes("invoice_discharge"), `tools/list after invoice_approve: ${show(after)}`);
    passed(`tools/list_changed -> ${show(after)}`);
  }

  before = mcp.toolsChanged;
  const paid = await mcp.ok("invoice_discharge", on(approved));
  check(paid.state === "discharged", `invoice_discharge: state ${paid.state}, expected discharged`);
  passed(`invoice_discharge ${approved} -> discharged`);
  if (perConversation) {
    const after = await relisted("invoice_discharge", before);
    check(!after.includes("invoice_discharge"), `tools/list after invoice_discharge: ${show(after)}`);
    passed(`tools/list_changed -> ${show(after)}`);
  }

  const again = await mcp.refused("invoice_discharge", on(approved), "FORBIDDEN");
  check(again.current_state === "discharged", `the second discharge: FORBIDDEN in ${again.current_state}`);
  passed(`invoice_discharge ${approved} again -> FORBIDDEN in discharged`);

  if (!perConversation) {
    sameNames(await mcp.toolNames(), listing, "tools/list after the transitions");
    passed("tools/list unchanged");
  }
  if (subscription) await subscription.close();
  await mcp.close();
}

await run(flow, "invoice_flow.mjs v1|v2 2025-11-25|2026-07-28 SERVER [TOKEN]", 3, 4);
