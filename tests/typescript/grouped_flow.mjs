// The invoice example served grouped (`--exposition grouped`) through the official
// TypeScript SDK client (see flowcheck.mjs).
//
//   node grouped_flow.mjs v1|v2 2025-11-25|2026-07-28 SERVER [TOKEN]
//
// TOKEN is the clerk's bearer token (`--token clerk=…`), who may amend a draft's amount.
// One tool, `invoice`, with an `action` argument. v1 validates every result's
// structuredContent against the tool's outputSchema (refusals too): the grouped schema must
// admit each action's result. On a 2025-11-25 session the `action` enum lists what the
// invoice's state allows and changes with it; at 2026-07-28 it lists every action, always.
import { check, connect, LEGACY, passed, run, show, waitFor } from "./flowcheck.mjs";

const freshId = () => `INV-${100000000 + Math.floor(Math.random() * 900000000)}`;
const same = (a, b) => show([...a].sort()) === show([...b].sort());

async function flow(sdk, protocol, server, token) {
  const session = protocol === LEGACY;
  const id = freshId();
  const mcp = await connect(sdk, protocol, server, token);
  const actions = async () => {
    const options = sdk === "v2" ? { cacheMode: "refresh" } : undefined;
    const { tools } = await mcp.client.listTools(undefined, options);
    check(same(tools.map((t) => t.name), ["invoice"]), `tools/list: ${show(tools.map((t) => t.name))}`);
    return tools[0].inputSchema.properties.action.enum;
  };
  const every = ["amend", "approve", "discharge", "reject", "submit", "view"];
  const first = await actions();
  check(same(first, session ? ["amend", "submit", "view"] : every), `invoice's actions: ${show(first)}`);
  passed(`tools/list: invoice with ${show(first)}`);

  const early = await mcp.refused("invoice", { action: "discharge", id }, "FORBIDDEN");
  check(early.tool === "discharge" && same(early.next, ["amend", "submit", "view"]), `FORBIDDEN: ${show(early)}`);
  passed("invoice discharge in draft -> FORBIDDEN naming the action, next amend/submit/view");

  const before = mcp.toolsChanged;
  const submitted = await mcp.ok("invoice", { action: "submit", id });
  check(submitted.state === "review", `invoice submit: ${show(submitted)}`);
  check(same(submitted.next, ["approve", "reject", "view"]), `invoice submit's next: ${show(submitted.next)}`);
  passed("invoice submit -> review, next approve/reject/view");
  if (session) {
    await waitFor(() => mcp.toolsChanged > before, "tools/list_changed after invoice submit");
  }
  const after = await actions();
  check(same(after, session ? ["approve", "reject", "view"] : every), `invoice's actions after submit: ${show(after)}`);
  passed(`tools/list after submit: ${show(after)}`);

  const wrong = await mcp.refused("invoice", { action: "pay", id }, "INVALID_ARGUMENT");
  check(wrong.errors[0].field === "/action", `a wrong action: ${show(wrong)}`);
  passed("invoice pay -> INVALID_ARGUMENT on /action");
  await mcp.close();
}

await run(flow, "grouped_flow.mjs v1|v2 2025-11-25|2026-07-28 SERVER [TOKEN]", 3, 4);
