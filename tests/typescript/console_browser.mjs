// The operator's console in a real browser: Debian's chromium, headless, driven by
// playwright-core. Signs in with the login form, searches an instance by its key and
// checks what a person sees: its state and its timeline, in order. Saves a screenshot.
// A burst of refused calls the test makes meanwhile appears on the refusals page.
// usage: node console_browser.mjs <console url> <operator token> <invoice key> <screenshot dir> <burst>
import { fail, launchChromium } from "./console_chromium.mjs";

const [consoleUrl, token, key, shots, burstArg] = process.argv.slice(2);
const burst = Number(burstArg ?? "0");
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  const problems = [];
  page.on("pageerror", (error) => problems.push(String(error)));
  // (A search that finds nothing is answered 404, which the browser logs: not a problem.)
  page.on("console", (message) => {
    if (message.type() === "error" && !message.text().includes("status of 404")) problems.push(message.text());
  });

  const first = await page.goto(`${consoleUrl}/`);
  if (first.status() !== 401) fail(`the console answered ${first.status()} without a token, not 401`);
  // The sign-in form is styled (its style inline, allowed by its hash), and nothing of it
  // is refused by the policy.
  const width = await page.$eval("main.login", (form) => getComputedStyle(form).maxWidth);
  if (width !== "416px") fail(`the sign-in form is not styled (max-width ${width})`);
  const refused = problems.filter((problem) => problem.includes("Content Security Policy"));
  if (refused.length) fail(`the sign-in page's policy refused: ${refused.join("; ")}`);
  await page.fill("input[name=token]", token);
  await page.click("button[type=submit]");
  await page.waitForSelector("#search-machine option[value=invoice]", { state: "attached", timeout: 10000 })
    .catch(async () => fail(`no machine to search at ${page.url()}: ${(await page.content()).slice(-900)} ${problems}`));
  console.log("ok: signed in through the form");
  // (The browser logs the sign-in page's own 401 as an error: not a problem.)
  problems.length = 0;

  await page.fill("#search-key", key);
  await page.click("#search button[type=submit]");
  await page.waitForSelector("#instance-found:not([hidden])", { timeout: 10000 });
  const state = await page.textContent("#instance-state");
  if (state !== "approved") fail(`the state shown is ${state}, not approved`);
  const steps = await page.$$eval("#instance-timeline li", (items) => items.map((item) => item.textContent));
  const moves = steps.map((step) => step.match(/(\w+) → (\w+)/)?.slice(1, 3).join(">"));
  const expected = ["draft>review", "review>draft", "draft>review", "review>approved"];
  if (JSON.stringify(moves) !== JSON.stringify(expected)) fail(`the timeline shows ${JSON.stringify(steps)}`);
  if (!steps.every((step) => step.includes("carl via invoice_"))) fail(`who called is missing: ${steps}`);
  console.log("ok: the timeline in order");
  await page.screenshot({ path: `${shots}/console-instance.png`, fullPage: true });

  // A key that is markup is searched as text: nothing runs, the answer says none was found.
  await page.fill("#search-key", "<img src=x onerror=window.__ran=1>");
  await page.click("#search button[type=submit]");
  await page.waitForFunction(() => document.getElementById("instance-found").hidden);
  if (await page.evaluate(() => window.__ran === 1)) fail("a searched key ran as markup");
  if (problems.length) fail(`the page reported: ${problems.join("; ")}`);
  console.log("ok: a key of markup stays text");

  // A burst of refused calls, which the test makes meanwhile, appears on the refusals page
  // within a few seconds, without a reload.
  const before = await page.textContent("#refusals-total");
  if (burst > 0) {
    await page.waitForFunction(
      (n) => [...document.querySelectorAll("#refusals-by-code tr")].some((row) =>
        row.cells[0].textContent === "FORBIDDEN" && Number(row.cells[1].textContent) >= n),
      burst,
      { timeout: 15000 },
    ).catch(async () => fail(`the burst did not appear: ${before} then ${await page.textContent("#refusals-total")}`));
    const tools = await page.$$eval("#refusals-by-tool td", (cells) => cells.map((cell) => cell.textContent));
    if (!tools.includes("invoice_approve")) fail(`the refused tool is not shown: ${tools}`);
    const who = await page.$$eval("#refusals-by-principal td", (cells) => cells.map((cell) => cell.textContent));
    if (!who.includes("carl")) fail(`the refused principal is not shown: ${who}`);
    await page.screenshot({ path: `${shots}/console-refusals.png`, fullPage: true });
    console.log("ok: the burst of refusals appears");
  }
} finally {
  await browser.close();
}
console.log("PASS");
