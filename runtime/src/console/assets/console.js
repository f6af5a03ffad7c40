// The console's one script. It writes what the server answers with textContent only:
// instance keys and contexts come from clients, and are never parsed as markup.
"use strict";

async function loadMachines() {
  const answer = await fetch("/api/machines", { credentials: "same-origin" });
  if (!answer.ok) return;
  const { machines } = await answer.json();
  const list = document.getElementById("machine-list");
  list.replaceChildren();
  for (const machine of machines) {
    const block = document.createElement("div");
    block.className = "machine";
    const title = document.createElement("h3");
    title.textContent = machine.id;
    block.append(title);
    const states = document.createElement("ul");
    for (const state of machine.states) {
      const item = document.createElement("li");
      item.textContent = state.final ? `${state.name} (final)` : state.name;
      item.dataset.state = state.name;
      states.append(item);
    }
    block.append(states);
    list.append(block);
  }
}

document.addEventListener("DOMContentLoaded", loadMachines);
