// The console's instance page in a real browser (Debian's chromium, driven by
// playwright-core): a travel quote's timer counts down, then the quote shows `expired`.
// Saves a screenshot of each. The quote is made by the official TypeScript SDK client only
// once the person has signed in, so a slow browser start never eats the quote's time.
// usage: node console_timer.mjs <console url> <operator token> <MCP url> <traveller token> <screenshot dir>
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { fail, launchChromium } from "./console_chromium.mjs";

const [consoleUrl, token, mcpUrl, traveller, shots] = process.argv.slice(2);
const machine = "bus";
const browser = await launchChromium();

// The traveller's bus quote, through the SDK client: its id is the key the person searches.
async function quote() {
  const client = new Client({ name: "toolgate-console-test", version: "0.0.0" });
  const headers = { Authorization: `Bearer ${traveller}` };
  await client.connect(new StreamableHTTPClientTransport(new URL(mcpUrl), { requestInit: { headers } }));
  const call = async (name, args) => {
    const result = await client.callTool({ name, arguments: args });
    if (result.isError) fail(`${name} was refused: ${JSON.stringify(result.structuredContent)}`);
    return result.structuredContent;
  };
  await call("switch_domain", { domain: "bus", reason: "the user wants a bus" });
  const found = await call("bus_search", { domain: "bus", origin: "Madrid", destination: "Valencia",
    departure: "2027-03-04T08:00:00+01:00", passengers: 2 });
  await client.close();
  return found.quote_id;
}
const secondsLeft = async (page) => Number((await page.textContent("#instance-timer")).match(/^(\d+) s left/)?.[1]);
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  await page.goto(`${consoleUrl}/`);
  await page.fill("input[name=token]", token);
  await page.click("button[type=submit]");
  await page.waitForSelector(`#search-machine option[value=${machine}]`, { state: "attached", timeout: 10000 });
  const problems = [];
  page.on("pageerror", (error) => problems.push(String(error)));
  const key = await quote();

  await page.selectOption("#search-machine", machine);
  await page.fill("#search-key", key);
  await page.click("#search button[type=submit]");
  await page.waitForSelector("#instance-found:not([hidden])", { timeout: 10000 });
  const state = await page.textContent("#instance-state");
  if (state !== "quoted") fail(`the quote shows ${state}, not quoted`);
  const first = await secondsLeft(page);
  if (!(first > 0)) fail(`no time left shown: ${await page.textContent("#instance-timer")}`);
  if (!(await page.textContent("#instance-timer")).includes("to expired")) fail("the timer does not say where it leads");
  // The machines page counts the quote, and the tasks and timers page lists its timer.
  const counted = (state, n) => page.waitForFunction(
    ([machine, state, n]) => document.querySelector(`.machine[data-machine=${machine}] li[data-state=${state}] .count`)
      ?.textContent === `: ${n}`,
    [machine, state, n],
    { timeout: 10000 },
  ).catch(() => fail(`the ${machine} machine does not count ${n} ${state}`));
  await counted("quoted", 1);
  await page.waitForFunction(
    (key) => [...document.querySelectorAll("#timers-list td")].some((cell) => cell.textContent === key),
    key,
    { timeout: 10000 },
  ).catch(() => fail("the quote's timer is not among the timers due next"));
  await page.screenshot({ path: `${shots}/console-timer.png`, fullPage: true });
  await page.waitForTimeout(1500);
  const later = await secondsLeft(page);
  if (!(later < first)) fail(`the timer did not count down: ${first} s, then ${later} s`);
  console.log("ok: the timer counts down");

  await page.waitForFunction(() => document.getElementById("instance-state").textContent === "expired (final)", null, {
    timeout: 30000,
  });
  const timeline = await page.$$eval("#instance-timeline li", (items) => items.map((item) => item.textContent));
  if (!timeline.at(-1)?.includes("quoted → expired") || !timeline.at(-1)?.includes("by timer")) {
    fail(`the timeline does not end with time's move: ${JSON.stringify(timeline)}`);
  }
  await counted("expired", 1);
  await counted("quoted", 0);
  await page.screenshot({ path: `${shots}/console-expired.png`, fullPage: true });
  if (problems.length) fail(`the page reported: ${problems.join("; ")}`);
  console.log("ok: then the quote shows expired");
} finally {
  await browser.close();
}
console.log("PASS");
