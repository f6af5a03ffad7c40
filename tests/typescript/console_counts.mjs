// The console's machines page in a real browser (Debian's chromium, driven by
// playwright-core): the invoice machine's diagram shows, on each state's node, the number
// of invoices the clients' calls left there — first those the test's rmcp client made, then,
// without a reload, those this script's official TypeScript SDK client makes while the
// page is open. Saves a screenshot.
// usage: node console_counts.mjs <console url> <operator token> <MCP url> <clerk token> <screenshot dir> <expected JSON>
//   expected: {"review": n, "approved": n, "discharged": n} after the test's calls
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { fail, launchChromium } from "./console_chromium.mjs";

const [consoleUrl, token, mcpUrl, clerk, shots, expectedArg] = process.argv.slice(2);
const expected = JSON.parse(expectedArg);
const browser = await launchChromium();

// What the node of each state shows ("review · 5" → 5), read from the diagram as drawn.
const onNodes = (page) =>
  page.$$eval("#diagram tspan.count[data-machine=invoice]", (counts) =>
    Object.fromEntries(counts.map((count) => {
      const node = count.closest("text").querySelector("tspan").firstChild.textContent;
      return [node, Number(count.textContent.replace(/^\s*·\s*/, ""))];
    })));

async function shows(page, wanted, what) {
  await page.waitForFunction(
    (wanted) => {
      const counts = Object.fromEntries([...document.querySelectorAll("#diagram tspan.count[data-machine=invoice]")]
        .map((count) => [count.dataset.state, Number(count.textContent.replace(/^\s*·\s*/, ""))]));
      return Object.entries(wanted).every(([state, n]) => counts[state] === n);
    },
    wanted,
    { timeout: 10000 },
  ).catch(async () => fail(`${what}: the diagram shows ${JSON.stringify(await onNodes(page))}, not ${JSON.stringify(wanted)}`));
  const drawn = await onNodes(page);
  for (const [state, n] of Object.entries(wanted)) {
    if (drawn[state] !== n) fail(`${what}: the node ${state} shows ${drawn[state]}, not ${n}`);
  }
}

try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1100 } });
  const problems = [];
  page.on("pageerror", (error) => problems.push(String(error)));
  await page.goto(`${consoleUrl}/`);
  await page.fill("input[name=token]", token);
  await page.click("button[type=submit]");
  await shows(page, expected, "after the test's calls");
  console.log("ok: the diagram shows the counts the calls produced");

  // More calls while the page is open: four invoices submitted, one of them approved.
  const client = new Client({ name: "toolgate-console-test", version: "0.0.0" });
  const headers = { Authorization: `Bearer ${clerk}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
  for (const [id, tools] of [["INV-901", ["invoice_submit", "invoice_approve"]], ["INV-902", ["invoice_submit"]],
    ["INV-903", ["invoice_submit"]], ["INV-904", ["invoice_submit"]]]) {
    for (const name of tools) {
      const result = await client.callTool({ name, arguments: { domain: "invoice", id } });
      if (result.isError) fail(`${name} ${id} was refused: ${JSON.stringify(result.structuredContent)}`);
    }
  }
  await client.close();
  const later = { ...expected, review: expected.review + 3, approved: expected.approved + 1 };
  await shows(page, later, "after the script's calls, without a reload");
  const pending = await page.textContent(".machine[data-machine=invoice] .pending");
  if (!/0 timers pending, 0 tasks running/.test(pending)) fail(`the invoice machine's timers and tasks: ${pending}`);
  console.log("ok: the counts follow the calls without a reload");
  await page.screenshot({ path: `${shots}/console-machines.png`, fullPage: true });
  if (problems.length) fail(`the page reported: ${problems.join("; ")}`);
} finally {
  await browser.close();
}
console.log("PASS");
