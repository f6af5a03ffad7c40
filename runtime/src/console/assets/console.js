// The console's one script. It writes what the server answers with textContent only:
// instance keys and contexts come from clients, and are never parsed as markup.
"use strict";

// The machines page: describe's diagram, drawn in the page, with the live number of
// instances in each state on its node, refreshed every two seconds.
const countOnNode = new Map(); // "machine\u0000state" → the <tspan> showing its count
let diagramDrawn = false;

// The diagram as describe draws it (the server's own SVG, never a client's), inlined so
// that its nodes can carry counts. It holds no <style> (its fonts are attributes of its
// texts): the Content-Security-Policy allows no inline style. Each node's first line is
// its state's name, after the node naming its machine ("machine invoice · …").
async function loadDiagram(machines) {
  const answer = await fetch("/diagram.svg", { credentials: "same-origin" });
  if (!answer.ok) return;
  const parsed = new DOMParser().parseFromString(await answer.text(), "image/svg+xml").documentElement;
  if (parsed.localName !== "svg") return;
  const svg = document.importNode(parsed, true);
  document.getElementById("diagram").replaceChildren(svg);
  const statesOf = new Map(machines.map((machine) => [machine.id, new Set(machine.states.map((s) => s.name))]));
  let machine = null;
  for (const label of svg.querySelectorAll("text")) {
    const first = label.querySelector("tspan");
    if (!first) continue;
    const title = /^machine (\S+)/.exec(first.textContent);
    if (title) {
      machine = title[1];
    } else if (machine && statesOf.get(machine)?.has(first.textContent)) {
      const count = document.createElementNS("http://www.w3.org/2000/svg", "tspan");
      count.setAttribute("class", "count");
      count.dataset.machine = machine;
      count.dataset.state = first.textContent;
      first.append(count);
      countOnNode.set(`${machine}\u0000${first.textContent}`, count);
    }
  }
  fitDiagram(svg, machines);
}

// The smallest the diagram is drawn, of its size as drawn by describe: its 14 px labels
// stay readable (7 px) at half.
const MIN_SCALE = 0.5;

// The diagram scaled down to the page's width (never up), to MIN_SCALE at most; one wider
// still scrolls sideways, shown scrolled to the first machine's initial state.
function fitDiagram(svg, machines) {
  const width = Number((svg.getAttribute("viewBox") ?? "").trim().split(/[\s,]+/)[2]);
  if (!(width > 0)) return;
  // Set through the CSSOM, which the policy allows (a style attribute it would refuse).
  svg.style.maxWidth = `${width}px`;
  svg.style.minWidth = `${Math.ceil(width * MIN_SCALE)}px`;
  const box = document.getElementById("diagram");
  if (box.scrollWidth <= box.clientWidth) return;
  box.classList.add("scrolls");
  const first = machines[0];
  const initial = first && countOnNode.get(`${first.id}\u0000${first.initial}`)?.closest("text");
  if (!initial) return;
  const node = initial.getBoundingClientRect();
  box.scrollLeft += node.left + node.width / 2 - box.getBoundingClientRect().left - box.clientWidth / 2;
}

function plural(n, one, many) {
  return `${n} ${n === 1 ? one : many}`;
}

async function loadMachines() {
  const answer = await fetch("/api/machines", { credentials: "same-origin" });
  if (!answer.ok) return;
  const { machines } = await answer.json();
  if (!diagramDrawn) {
    diagramDrawn = true;
    await loadDiagram(machines);
  }
  const list = document.getElementById("machine-list");
  list.replaceChildren();
  for (const machine of machines) {
    const block = document.createElement("div");
    block.className = "machine";
    block.dataset.machine = machine.id;
    const title = document.createElement("h3");
    title.textContent = machine.id;
    block.append(title);
    const states = document.createElement("ul");
    for (const state of machine.states) {
      const item = document.createElement("li");
      item.textContent = state.final ? `${state.name} (final)` : state.name;
      item.dataset.state = state.name;
      if (state.instances !== null && state.instances !== undefined) {
        const count = document.createElement("span");
        count.className = "count";
        count.textContent = `: ${state.instances}`;
        item.append(count);
        const node = countOnNode.get(`${machine.id}\u0000${state.name}`);
        if (node) node.textContent = ` · ${state.instances}`;
      }
      states.append(item);
    }
    block.append(states);
    if (machine.timers !== null && machine.timers !== undefined) {
      const pending = document.createElement("p");
      pending.className = "pending";
      pending.textContent = `${plural(machine.timers, "timer", "timers")} pending, ${plural(machine.tasks, "task", "tasks")} running`;
      block.append(pending);
    }
    list.append(block);
    if (machine.keyed && !document.querySelector(`#search-machine option[value="${CSS.escape(machine.id)}"]`)) {
      const option = document.createElement("option");
      option.value = machine.id;
      option.textContent = machine.id;
      document.getElementById("search-machine").append(option);
    }
  }
}

// The instance page: one instance found by its key, in the operator's tenant.
let countdown = null;

function text(id, value) {
  document.getElementById(id).textContent = value;
}

function showTimer(timer, answeredAt) {
  if (countdown) clearInterval(countdown);
  countdown = null;
  if (!timer) {
    text("instance-timer", "none");
    return;
  }
  const tick = () => {
    const left = Math.max(0, timer.left_ms - (Date.now() - answeredAt));
    const to = timer.to ? ` to ${timer.to}` : "";
    const due = dateTime(timer.due);
    // Counted down in whole seconds in its last minute, then as a duration.
    const shown = left < 60000 ? `${Math.ceil(left / 1000)} s` : duration(left);
    text("instance-timer", left > 0 ? `${shown} left${to} (due ${due})` : `due now${to}`);
    if (left === 0) {
      clearInterval(countdown);
      countdown = null;
      // Time moved it: ask again once the sweep has committed the move.
      setTimeout(findInstance, 1000);
    }
  };
  tick();
  countdown = setInterval(tick, 250);
}

// An instance's address in the console: `#instance?machine=…&key=…`, which opens it; the
// search form sets it too.
function instanceAddress(machine, key) {
  return `#instance?${new URLSearchParams({ machine, key })}`;
}

// A link to the instance `key` of `machine`, as a row shows it.
function instanceLink(machine, key) {
  const link = document.createElement("a");
  link.href = instanceAddress(machine, key);
  link.textContent = key;
  link.dataset.machine = machine;
  link.dataset.key = key;
  return link;
}

// The instance a row names: a link, whatever its machine. An owned machine's instance is
// judged when it is opened, by the rule the server judges every principal by: the rows
// list only instances the operator may see.
function instanceCell(machine, key) {
  if (!key) return "";
  if (!machine) return key;
  return instanceLink(machine, key);
}

// Opens the instance the address names, if it names one: fills in the search and finds it.
function openFromAddress() {
  const [route, query] = location.hash.slice(1).split("?");
  if (route !== "instance" || !query) return;
  const params = new URLSearchParams(query);
  const machine = params.get("machine") ?? "";
  const select = document.getElementById("search-machine");
  if (machine && ![...select.options].some((option) => option.value === machine)) {
    const option = document.createElement("option");
    option.value = machine;
    option.textContent = machine;
    select.append(option);
  }
  select.value = machine;
  document.getElementById("search-key").value = params.get("key") ?? "";
  findInstance().then(() => document.getElementById("instance").scrollIntoView());
}

function effectsText(effects, dead) {
  const pending = effects.map((e) =>
    `${e.effect}: ${plural(e.attempts, "attempt", "attempts")}, next try ${dateTime(e.due)}${e.reason ? ` (${e.reason})` : ""}`);
  const letters = dead.map((e) => `${e.effect}: dead after ${plural(e.attempts, "attempt", "attempts")} (${e.reason ?? "no reason kept"})`);
  return [...pending, ...letters].join("; ") || "none";
}

async function findInstance() {
  const machine = document.getElementById("search-machine").value;
  const key = document.getElementById("search-key").value;
  if (!machine || !key) return;
  const query = new URLSearchParams({ machine, key });
  const answer = await fetch(`/api/instance?${query}`, { credentials: "same-origin" });
  const found = document.getElementById("instance-found");
  if (!answer.ok) {
    found.hidden = true;
    const { error } = await answer.json().catch(() => ({ error: `the console answered ${answer.status}` }));
    text("instance-status", error);
    return;
  }
  const instance = await answer.json();
  const answeredAt = Date.now();
  text("instance-status", `${instance.machine} ${instance.key}`);
  text("instance-state", instance.final ? `${instance.state} (final)` : instance.state);
  const task = instance.task;
  text("instance-task", task ? `${task.tool} (${task.id}), running ${Math.round(task.running_ms / 1000)} s` : "none");
  text("instance-effects", effectsText(instance.effects ?? [], instance.dead_effects ?? []));
  text("instance-context", instance.context === null ? "none" : JSON.stringify(instance.context, null, 2));
  const timeline = document.getElementById("instance-timeline");
  timeline.replaceChildren();
  for (const entry of instance.timeline) {
    const item = document.createElement("li");
    item.className = entry.kind;
    const who = entry.kind === "timer" ? "timer" : `${entry.principal ?? "anonymous"} via ${entry.tool}`;
    const note = entry.note ? ` — ${entry.note}` : "";
    item.textContent = `${entry.time}  ${entry.from} → ${entry.to} (${entry.event}) by ${who}${note}`;
    timeline.append(item);
  }
  found.hidden = false;
  showTimer(instance.timer, answeredAt);
}

// The refusals page: this server's refused calls in the operator's tenant, refreshed
// every two seconds.
function fillTally(id, rows, name) {
  const body = document.querySelector(`#${id} tbody`);
  body.replaceChildren();
  for (const [key, count] of rows) {
    const row = document.createElement("tr");
    const label = document.createElement("td");
    label.textContent = name(key);
    const number = document.createElement("td");
    number.textContent = String(count);
    number.className = "count";
    row.append(label, number);
    body.append(row);
  }
}

async function loadRefusals() {
  const minutes = document.getElementById("refusals-window").value;
  const answer = await fetch(`/api/refusals?minutes=${encodeURIComponent(minutes)}`, { credentials: "same-origin" });
  if (!answer.ok) return;
  const { refusals } = await answer.json();
  text("refusals-total", `${refusals.total} refused`);
  // A call asked for its code is a step of it, not a refusal: said apart.
  const asked = refusals.confirmations_asked ?? 0;
  text("refusals-confirmations", asked ? `(and ${plural(asked, "confirmation asked", "confirmations asked")})` : "");
  fillTally("refusals-by-code", refusals.by_code, (code) => code);
  fillTally("refusals-by-tool", refusals.by_tool, (tool) => tool);
  fillTally("refusals-by-principal", refusals.by_principal, (who) => who ?? "(not authenticated)");
  const minutesList = document.getElementById("refusals-per-minute");
  minutesList.replaceChildren();
  for (const [at, count] of refusals.per_minute.slice(-15)) {
    const item = document.createElement("li");
    item.textContent = `${new Date(at).toISOString().slice(11, 16)} UTC: ${count}`;
    minutesList.append(item);
  }
}

// The tasks and timers page: the tasks started lately in the operator's tenant, with their
// status and how long they ran, and the timers due next; refreshed every two seconds.
// A table row of `cells`: text (appended as text, never parsed) or elements of this
// script's own (links, times).
function row(cells, className) {
  const line = document.createElement("tr");
  if (className) line.className = className;
  for (const cell of cells) {
    const data = document.createElement("td");
    data.append(cell ?? "");
    line.append(data);
  }
  return line;
}

// A length of time as a person reads it: "4.2 s", "3 min 20 s", "5 h 12 min", "6 d 23 h".
function duration(ms) {
  if (ms < 10000) return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
  const total = Math.round(ms / 1000);
  const [days, hours, minutes, seconds] =
    [Math.floor(total / 86400), Math.floor((total % 86400) / 3600), Math.floor((total % 3600) / 60), total % 60];
  if (days) return `${days} d ${hours} h`;
  if (hours) return `${hours} h ${minutes} min`;
  if (minutes) return `${minutes} min ${seconds} s`;
  return `${seconds} s`;
}

// A moment (RFC 3339) as the browser's date and time, with its time zone.
const dateTimeFormat = new Intl.DateTimeFormat(undefined, {
  year: "numeric", month: "short", day: "numeric", hour: "2-digit", minute: "2-digit", timeZoneName: "short",
});

function dateTime(rfc3339) {
  const at = new Date(rfc3339);
  return Number.isNaN(at.getTime()) ? rfc3339 : dateTimeFormat.format(at);
}

// A moment as a <time> element: the date and time, the RFC 3339 moment as its value.
function timeElement(rfc3339) {
  const time = document.createElement("time");
  time.dateTime = rfc3339;
  time.textContent = dateTime(rfc3339);
  return time;
}

async function loadTasks() {
  const answer = await fetch("/api/tasks", { credentials: "same-origin" });
  if (!answer.ok) return;
  const { tasks, timers } = await answer.json();
  const taskRows = document.querySelector("#tasks-list tbody");
  taskRows.replaceChildren(...tasks.map((task) =>
    row([task.tool, task.status, instanceCell(task.machine, task.instance),
      task.principal ?? "(not authenticated)", timeElement(task.started), duration(task.duration_ms)],
    task.running ? "running" : "ended")));
  if (!tasks.length) taskRows.append(row(["none lately", "", "", "", "", ""]));
  const timerRows = document.querySelector("#timers-list tbody");
  timerRows.replaceChildren(...timers.map((timer) =>
    row([timer.machine, instanceCell(timer.machine, timer.key), `${timer.state} → ${timer.to ?? "?"}`,
      timeElement(timer.due), duration(timer.left_ms)])));
  if (!timers.length) timerRows.append(row(["none pending", "", "", "", ""]));
}

// The effects page: the effects waiting to run (their attempts, their next try, why the
// last failed) and the dead letters (their reason); refreshed every two seconds.
async function loadEffects() {
  const answer = await fetch("/api/effects", { credentials: "same-origin" });
  if (!answer.ok) return;
  const { pending, dead } = await answer.json();
  const pendingRows = document.querySelector("#effects-pending tbody");
  pendingRows.replaceChildren(...pending.map((effect) => {
    const next = document.createElement("span");
    next.append(effect.left_ms > 0 ? `in ${duration(effect.left_ms)} (` : "now (", timeElement(effect.due), ")");
    return row([effect.machine, instanceCell(effect.machine, effect.key), effect.effect,
      `${effect.attempts} of ${effect.attempts_most}`, next, effect.reason ?? ""]);
  }));
  if (!pending.length) pendingRows.append(row(["none waiting", "", "", "", "", ""]));
  const deadRows = document.querySelector("#effects-dead tbody");
  deadRows.replaceChildren(...dead.map((effect) =>
    row([effect.machine, instanceCell(effect.machine, effect.key), effect.effect, String(effect.attempts),
      effect.reason ?? "(no reason kept)"], "dead")));
  if (!dead.length) deadRows.append(row(["none lately", "", "", "", ""]));
}

document.addEventListener("DOMContentLoaded", () => {
  loadMachines();
  setInterval(loadMachines, 2000);
  loadRefusals();
  setInterval(loadRefusals, 2000);
  loadTasks();
  setInterval(loadTasks, 2000);
  loadEffects();
  setInterval(loadEffects, 2000);
  openFromAddress();
  window.addEventListener("hashchange", openFromAddress);
  // A link to the instance already shown changes no address: it opens it again.
  document.addEventListener("click", (event) => {
    const link = event.target.closest?.("a[href^='#instance?']");
    if (link && link.hash === location.hash) openFromAddress();
  });
  document.getElementById("refusals-window").addEventListener("change", loadRefusals);
  document.getElementById("search").addEventListener("submit", (event) => {
    event.preventDefault();
    const value = (id) => document.getElementById(id).value;
    history.replaceState(null, "", instanceAddress(value("search-machine"), value("search-key")));
    findInstance();
  });
});
