// The official TypeScript SDK client (pinned in tests/typescript/package.json) against a
// toolgate example over Streamable HTTP: refusals arrive as tool results with their
// structured fields, although this client validates structuredContent against each
// tool's outputSchema even on isError results; and no schema warning is printed.
//
//   node refusals.mjs URL invoice|travel [TOKEN]
// (The travel example's quotes are their searcher's: its tools take a bearer token. The
// invoice example's clerk presents one to amend an amount.)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, example, token] = process.argv.slice(2);
const warnings = [];
for (const level of ["warn", "error"]) {
  const original = console[level];
  console[level] = (...args) => { warnings.push(args.join(" ")); original(...args); };
}

function fail(message) {
  console.log(`FAIL: ${message}`);
  process.exit(1);
}

const client = new Client({ name: "toolgate-ts-test", version: "0.0.0" });
let listChanged = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => { listChanged += 1; });
const init = token ? { requestInit: { headers: { Authorization: `Bearer ${token}` } } } : undefined;
await client.connect(new StreamableHTTPClientTransport(new URL(url), init));
await client.listTools();

async function refused(name, args, code, fields) {
  let result;
  try {
    result = await client.callTool({ name, arguments: args });
  } catch (error) {
    fail(`${name} threw instead of returning its refusal: ${error}`);
  }
  const content = result.structuredContent;
  if (!result.isError || !content || content.code !== code) {
    fail(`${name}: expected isError with code ${code}, got ${JSON.stringify(result)}`);
  }
  for (const field of fields) {
    if (!(field in content)) fail(`${name}: ${code} lacks ${field}: ${JSON.stringify(content)}`);
  }
  console.log(`ok: ${name} -> ${code}`);
  return content;
}

async function ok(name, args) {
  const result = await client.callTool({ name, arguments: args });
  if (result.isError) fail(`${name} failed: ${JSON.stringify(result.structuredContent)}`);
  console.log(`ok: ${name}`);
  return result.structuredContent;
}

if (example === "invoice") {
  const inv = (id) => ({ domain: "invoice", id });
  const forbidden = await refused("invoice_discharge", inv("INV-2"), "FORBIDDEN", ["instance", "current_state", "allowed_tools"]);
  if (forbidden.instance !== "INV-2") fail(`FORBIDDEN names ${forbidden.instance}`);
  await refused("invoice_view", inv("INV-1000000000000"), "NOT_FOUND", ["message"]);
  const invalid = await refused("invoice_view", { domain: "invoice" }, "INVALID_ARGUMENT", ["errors"]);
  if (invalid.errors[0].field !== "/id") fail(`INVALID_ARGUMENT names ${invalid.errors[0].field}`);
  // Money: a float is refused before the handler; the handler's own refusal carries its advice.
  const amend = (amount) => ({ ...inv("INV-1"), amount });
  const float = await refused("invoice_amend", amend({ amount: 99.5, currency: "EUR" }), "INVALID_ARGUMENT", ["errors"]);
  if (float.errors[0].field !== "/amount") fail(`the float amount is reported at ${float.errors[0].field}`);
  const mismatch = await refused("invoice_amend", amend({ amount: "99.50", currency: "USD" }), "CURRENCY_MISMATCH", ["hint", "retryable"]);
  if (mismatch.retryable !== false) fail(`CURRENCY_MISMATCH says retryable ${mismatch.retryable}`);
  const amended = await ok("invoice_amend", amend({ amount: "99.5", currency: "EUR" }));
  if (amended.amount.amount !== "99.50") fail(`amended to ${JSON.stringify(amended.amount)}`);
  // The transition's list_changed rides the call's own stream: handled before the result.
  const before = listChanged;
  await ok("invoice_submit", inv("INV-1"));
  if (listChanged <= before) fail("no tools/list_changed arrived with invoice_submit's result");
} else {
  const search = {
    domain: "bus", origin: "Madrid", destination: "Valencia",
    departure: "2026-12-01 10:00", passengers: "two",
  };
  await refused("switch_domain", { domain: "train", reason: "" }, "INVALID_ARGUMENT", ["errors"]);
  await ok("switch_domain", { domain: "bus", reason: "a bus" });
  const invalid = await refused("bus_search", search, "INVALID_ARGUMENT", ["errors"]);
  const fields = invalid.errors.map((e) => e.field).sort();
  if (JSON.stringify(fields) !== JSON.stringify(["/departure", "/passengers"])) fail(`fields ${fields}`);
  await ok("bus_search", { ...search, departure: "2026-12-01T10:00:00+01:00", passengers: 2 });
}

await client.close();
if (warnings.length > 0) fail(`the client printed warnings: ${warnings.join(" | ")}`);
console.log("PASS");
