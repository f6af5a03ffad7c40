// The console's one script. It writes what the server answers with textContent only:
// instance keys and contexts come from clients, and are never parsed as markup.
"use strict";

// The machines page: describe's diagram, drawn in the page, with the live number of
// instances in each state on its node, refreshed every two seconds.
const countOnNode = new Map(); // "machine\u0000state" → the <tspan> showing its count
let diagramDrawn = false;

// The diagram as describe draws it (the server's own SVG, never a client's), inlined so
// that its nodes can carry counts. Its <style> is dropped (the page's stylesheet styles it:
// the Content-Security-Policy allows no inline style). Each node's first line is its
// state's name, after the node naming its machine ("machine invoice · …").
async function loadDiagram(machines) {
  const answer = await fetch("/diagram.svg", { credentials: "same-origin" });
  if (!answer.ok) return;
  const parsed = new DOMParser().parseFromString(await answer.text(), "image/svg+xml").documentElement;
  if (parsed.localName !== "svg") return;
  for (const style of parsed.querySelectorAll("style")) style.remove();
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
    text("instance-timer", left > 0 ? `${Math.ceil(left / 1000)} s left${to} (due ${timer.due})` : `due now${to}`);
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

async function findInstance() {
  const machine = document.getElementById("search-machine").value;
  const key = document.getElementById("search-key").value;
  const owner = document.getElementById("search-owner").value;
  if (!machine || !key) return;
  const query = new URLSearchParams({ machine, key, owner });
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
function row(cells, className) {
  const line = document.createElement("tr");
  if (className) line.className = className;
  for (const cell of cells) {
    const data = document.createElement("td");
    data.textContent = cell;
    line.append(data);
  }
  return line;
}

function seconds(ms) {
  return ms < 10000 ? `${(ms / 1000).toFixed(1)} s` : `${Math.round(ms / 1000)} s`;
}

async function loadTasks() {
  const answer = await fetch("/api/tasks", { credentials: "same-origin" });
  if (!answer.ok) return;
  const { tasks, timers } = await answer.json();
  const taskRows = document.querySelector("#tasks-list tbody");
  taskRows.replaceChildren(...tasks.map((task) =>
    row([task.tool, task.status, task.instance ?? "", task.principal ?? "(not authenticated)", task.started,
      seconds(task.duration_ms)], task.running ? "running" : "ended")));
  if (!tasks.length) taskRows.append(row(["none lately", "", "", "", "", ""]));
  const timerRows = document.querySelector("#timers-list tbody");
  timerRows.replaceChildren(...timers.map((timer) =>
    row([timer.machine, timer.key, `${timer.state} → ${timer.to ?? "?"}`, timer.due, seconds(timer.left_ms)])));
  if (!timers.length) timerRows.append(row(["none pending", "", "", "", ""]));
}

document.addEventListener("DOMContentLoaded", () => {
  loadMachines();
  setInterval(loadMachines, 2000);
  loadRefusals();
  setInterval(loadRefusals, 2000);
  loadTasks();
  setInterval(loadTasks, 2000);
  document.getElementById("refusals-window").addEventListener("change", loadRefusals);
  document.getElementById("search").addEventListener("submit", (event) => {
    event.preventDefault();
    findInstance();
  });
});
