// The payments example's console in a real browser (Debian's chromium, driven by
// playwright-core), at 1,280 px wide. Every check runs, and every one that fails is said:
// - the page loads with no Content-Security-Policy violation (the browser's log and the
//   `securitypolicyviolation` events);
// - every state of the payment diagram is inside the diagram's box and the window;
// - the timer of the authorized payment shows a duration ("6 d 23 h") and a deadline, and
//   its row links to the payment, which the link opens;
// - the CONFIRMATION_REQUIRED the test drew is counted apart from the refusals;
// - the failing notice is listed pending (attempts, next try), then dead with its reason,
//   its row linking to the payment.
// Saves screenshots.
// usage: node console_payments.mjs <console url> <operator token> <screenshot dir> <expected JSON>
//   expected: {"timer": "PAY-1", "effect": "PAY-2", "effect_name": "notify_settled"}
import { fail, launchChromium } from "./console_chromium.mjs";

const [consoleUrl, token, shots, expectedArg] = process.argv.slice(2);
const expected = JSON.parse(expectedArg);
const failures = [];
const check = (ok, why) => {
  if (!ok) failures.push(why);
};
const browser = await launchChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
  // What is not there is not waited on for long: a missing piece is a failure said.
  page.setDefaultTimeout(3000);
  const logged = [];
  page.on("console", (message) => logged.push(`${message.type()}: ${message.text()}`));
  page.on("pageerror", (error) => logged.push(`pageerror: ${error}`));
  // Every violation the page's policy reports, whatever reports it.
  await page.addInitScript(() => {
    window.__violations = [];
    document.addEventListener("securitypolicyviolation", (event) =>
      window.__violations.push(`${event.violatedDirective} ${event.blockedURI || "inline"}`));
  });
  await page.goto(`${consoleUrl}/`);
  await page.fill("input[name=token]", token);
  await page.click("button[type=submit]");
  await page.waitForSelector("#diagram svg tspan.count[data-machine=payment]", { state: "attached", timeout: 10000 })
    .catch(() => fail(`the diagram was not drawn: ${logged.join("; ")}`));
  console.log("ok: signed in, the diagram drawn");

  // The pending effect: the notice failed, to be tried again.
  const effectRow = (table) => `#${table} tbody tr:has(a[data-key="${expected.effect}"])`;
  // (A page without the table is not waited on.)
  const patience = async (selector, ms) => ((await page.$(selector)) ? ms : 1);
  const pending = await page.waitForSelector(effectRow("effects-pending"),
    { timeout: await patience("#effects-pending", 10000) }).catch(() => null);
  check(pending, `no pending effect of ${expected.effect} is listed`);
  if (pending) {
    const cells = await page.$$eval(`${effectRow("effects-pending")} td`, (tds) => tds.map((td) => td.textContent));
    check(cells.includes(expected.effect_name), `the pending effect's row: ${cells}`);
    check(cells.some((cell) => /^\d+ of \d+$/.test(cell)), `the pending effect's attempts: ${cells}`);
    check(cells.some((cell) => /\bin \d+(\.\d)? s\b|\bnow\b/.test(cell)), `the pending effect's next try: ${cells}`);
    console.log("ok: the pending effect checked");
  }

  // No violation, once the page has drawn and refreshed.
  await page.waitForTimeout(2500);
  const violations = await page.evaluate(() => window.__violations);
  const refusedInLog = logged.filter((line) => line.includes("Content Security Policy"));
  check(violations.length === 0, `the page's policy reported violations: ${violations.join("; ")}`);
  check(refusedInLog.length === 0, `the browser logged: ${refusedInLog.join("; ")}`);
  console.log("ok: the policy checked");

  // Every state of the payment machine inside the diagram's box and the window.
  const placed = await page.evaluate(async () => {
    const { machines } = await (await fetch("/api/machines")).json();
    const payment = machines.find((machine) => machine.id === "payment");
    const box = document.getElementById("diagram").getBoundingClientRect();
    const states = payment.states.map((state) => {
      const count = document.querySelector(
        `#diagram tspan.count[data-machine=payment][data-state="${CSS.escape(state.name)}"]`);
      if (!count) return { state: state.name, drawn: false };
      const label = count.closest("text");
      // The node: its label and the shape drawn just before it.
      const rects = [label.getBoundingClientRect()];
      const shape = label.previousElementSibling;
      if (shape?.localName === "g") rects.push(shape.getBoundingClientRect());
      const left = Math.min(...rects.map((r) => r.left));
      const right = Math.max(...rects.map((r) => r.right));
      return { state: state.name, drawn: true, left, right };
    });
    return { box: { left: box.left, right: box.right }, width: window.innerWidth, states };
  });
  for (const node of placed.states) {
    const inside = node.drawn && node.left >= placed.box.left - 0.5 && node.right <= placed.box.right + 0.5 &&
      node.left >= 0 && node.right <= placed.width;
    check(inside, `the state ${node.state} is not inside the page: ${JSON.stringify(node)} in ${JSON.stringify(placed.box)}`);
  }
  check(placed.states.length === 7, `the payment machine has ${placed.states.length} states, not 7`);
  const fontSize = await page.$eval("#diagram svg text", (text) => text.getBoundingClientRect().height);
  console.log(`ok: the diagram's states placed (a label ${fontSize.toFixed(1)} px high)`);
  await page.screenshot({ path: `${shots}/console-payments.png`, fullPage: true });

  // The confirmation asked is not a refusal.
  await page.waitForFunction(() => document.getElementById("refusals-total").textContent.includes("refused"));
  const codes = await page.$$eval("#refusals-by-code td:first-child", (tds) => tds.map((td) => td.textContent));
  check(JSON.stringify(codes) === JSON.stringify(["FORBIDDEN"]), `the refusals by code: ${codes}`);
  const asked = await page.textContent("#refusals-confirmations").catch(() => "");
  check(/\b1 confirmation asked\b/.test(asked ?? ""), `the confirmations asked: ${asked}`);
  console.log("ok: the confirmations counted apart");

  // The timer: a duration and a deadline, and a link to the payment.
  const timerRow = `#timers-list tbody tr:has(a[data-key="${expected.timer}"])`;
  const timer = await page.waitForSelector(timerRow, { timeout: 5000 }).catch(() => null);
  check(timer, `the timer of ${expected.timer} has no link: ${await page.textContent("#timers-list tbody")}`);
  const timerCells = await page.$$eval("#timers-list tbody tr td", (tds) => tds.map((td) => td.textContent));
  check(timerCells.some((cell) => /^6 d 23 h$/.test(cell)), `the time left is not a duration: ${timerCells}`);
  const deadline = await page.$eval("#timers-list tbody time", (time) => time.dateTime).catch(() => null);
  const inAWeek = Date.now() + 7 * 24 * 3600 * 1000;
  check(deadline && Math.abs(Date.parse(deadline) - inAWeek) < 10 * 60 * 1000, `the deadline: ${deadline}`);
  const shown = await page.textContent("#timers-list tbody time").catch(() => "");
  check(shown && shown.includes(String(new Date(inAWeek).getUTCFullYear())), `the deadline shown: ${shown}`);
  if (timer) {
    await page.click(`${timerRow} a`);
    const found = await page.waitForSelector("#instance-found:not([hidden])", { timeout: 5000 }).catch(() => null);
    check(found, "the timer's link did not show the payment");
    if (found) {
      const state = await page.textContent("#instance-state");
      const status = await page.textContent("#instance-status");
      check(state === "authorized" && status.includes(expected.timer), `the link showed ${status}: ${state}`);
      check(page.url().endsWith(`#instance?machine=payment&key=${expected.timer}`), `the address: ${page.url()}`);
      const visible = await page.$eval("#instance", (section) => {
        const box = section.getBoundingClientRect();
        return box.top < window.innerHeight && box.bottom > 0;
      });
      check(visible, "the instance shown is not scrolled into view");
    }
  }
  console.log("ok: the timer checked");

  // The dead letter, once its last attempt failed, with its reason and a link.
  const dead = await page.waitForSelector(effectRow("effects-dead"),
    { timeout: await patience("#effects-dead", 40000) }).catch(() => null);
  check(dead, `no dead letter of ${expected.effect} is listed`);
  if (dead) {
    const cells = await page.$$eval(`${effectRow("effects-dead")} td`, (tds) => tds.map((td) => td.textContent));
    check(cells.includes(expected.effect_name), `the dead letter's row: ${cells}`);
    check(cells.some((cell) => /No such file|os error/.test(cell)), `the dead letter's reason: ${cells}`);
    await page.click(`${effectRow("effects-dead")} a`);
    await page.waitForFunction((key) => document.getElementById("instance-status").textContent.includes(key),
      expected.effect, { timeout: 5000 }).catch(() => check(false, "the dead letter's link did not show the payment"));
    await page.screenshot({ path: `${shots}/console-effects.png`, fullPage: true });
  }
  console.log("ok: the dead letter checked");
  const errors = logged.filter((line) => line.startsWith("pageerror") || line.includes("Content Security Policy"));
  check(errors.length === 0, `the page reported: ${errors.join("; ")}`);
  if (failures.length) fail(`${failures.length} checks failed:\n- ${failures.join("\n- ")}`);
} finally {
  await browser.close();
}
console.log("PASS");
