// Steward's dashboard: live regions and confirmations. No framework; the server renders
// everything, this only decides when to ask it again.
"use strict";

// Every kind the feed reports; EventSource delivers named events only to listeners of
// that name.
const KINDS = [
  "task.created", "task.pending", "task.running", "task.waiting", "task.paused",
  "task.succeeded", "task.failed", "task.cancelled", "task.dead_lettered",
  "step", "approval.requested", "approval.decided", "notification",
];

// A region (an element with data-live="<kind prefixes>") cares about an event if the kind
// matches and, when the region names a goal or task, the event is about it.
function concerns(region, kind, data) {
  const prefixes = region.dataset.live.split(" ");
  if (!prefixes.some((p) => kind.startsWith(p))) return false;
  if (region.dataset.goal && data.goal_id !== region.dataset.goal) return false;
  if (region.dataset.task && data.task_id !== region.dataset.task) return false;
  return true;
}

// Someone typing in a region must not lose their text to a refresh.
function busy(region) {
  const active = document.activeElement;
  return region.contains(active) && (active.value || "") !== "" &&
    (active.tagName === "TEXTAREA" || active.tagName === "INPUT");
}

let pending = new Set();
let timer = null;

// Ask the server for the page again and swap in the regions that changed (the server's
// rendering is the one truth; a burst of events is one request).
async function refresh() {
  timer = null;
  const ids = [...pending];
  pending = new Set();
  const url = document.body.dataset.refresh || location.pathname + location.search;
  const response = await fetch(url, { credentials: "same-origin" });
  if (response.redirected || !response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const id of ids) {
    const old = document.getElementById(id);
    const replacement = fresh.getElementById(id);
    if (!old || !replacement) continue;
    if (busy(old)) { pending.add(id); continue; }
    old.replaceWith(document.adoptNode(replacement));
  }
  if (pending.size) schedule(2000);
}

function schedule(delay) {
  if (timer === null) timer = setTimeout(refresh, delay);
}

function listen(after) {
  let last = after;
  const source = new EventSource("/api/v1/stream?after=" + encodeURIComponent(last));
  const onEvent = (event) => {
    last = event.lastEventId || last;
    const data = JSON.parse(event.data);
    for (const region of document.querySelectorAll("[data-live]")) {
      if (concerns(region, event.type, data)) pending.add(region.id);
    }
    if (pending.size) schedule(150);
  };
  for (const kind of KINDS) source.addEventListener(kind, onEvent);
  source.onopen = () => document.body.classList.add("live");
  // the browser would reconnect from the first position in the URL: reconnect ourselves,
  // from the last event seen
  source.onerror = () => {
    document.body.classList.remove("live");
    source.close();
    setTimeout(() => listen(last), 3000);
  };
}

document.addEventListener("submit", (event) => {
  const question = event.target.dataset.confirm;
  if (question && !window.confirm(question)) event.preventDefault();
});

if (document.body.dataset.after !== undefined && document.querySelector("[data-live]")) {
  listen(document.body.dataset.after);
}
