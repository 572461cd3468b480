"use strict";
// The timeline of one kvsim run (embedded as JSON above): swimlanes, block tables, block pool,
// store jobs and transfers, event log, trace text. Only what is visible is drawn.
const D = JSON.parse(document.getElementById("kvsim-data").textContent);
const COLORS = {waiting: "#6baed6", skipped: "#fdae6b", waiting_for_remote_kvs: "#9e9ac8", running: "#74c476",
                preempted: "#fb6a4a", finished: "#bdbdbd"};
const F = D.finding;
const FB = new Set(F ? F.blocks : []);
const SLICE_EVENTS = new Set(D.slice.events);
const SLICE_REQUESTS = new Set(D.slice.requests);
const $ = (id) => document.getElementById(id);
const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
let pos = 0;          // index into D.steps
let sliceOnly = false;

// Per lane and per block: the changes in step order, found by binary search.
const laneChanges = D.lanes.map(() => []);
const blockChanges = Array.from({length: D.num_blocks}, () => []);
const scheduled = D.lanes.map(() => new Map());
const chosen = new Map();
for (const st of D.steps) {
  for (const [lane, status, name, computed, blocks] of st.r) laneChanges[lane].push({s: st.s, status, name, computed, blocks});
  for (const [id, ref, cached, pins, gen] of st.b) blockChanges[id].push({s: st.s, ref, cached, pins, gen});
  for (const [lane, tokens] of st.k) scheduled[lane].set(st.s, tokens);
  for (const [lane, child] of st.c) chosen.set(lane, {s: st.s, child});
}
const maxStep = D.steps.length ? D.steps[D.steps.length - 1].s : 0;
function at(list, s) {
  let lo = 0, hi = list.length - 1, found = null;
  while (lo <= hi) { const mid = (lo + hi) >> 1; if (list[mid].s <= s) { found = list[mid]; lo = mid + 1; } else hi = mid - 1; }
  return found;
}
const curStep = () => (D.steps.length ? D.steps[pos].s : 0);

// A virtualised list: only the rows in view exist in the DOM.
function vlist(el, rowsFn, renderRow) {
  const H = 20;
  const spacer = document.createElement("div");
  el.appendChild(spacer);
  let rows = [];
  const draw = () => {
    const first = Math.floor(el.scrollTop / H), last = Math.min(rows.length, first + Math.ceil(el.clientHeight / H) + 1);
    for (const n of [...el.querySelectorAll(".row")]) n.remove();
    for (let i = first; i < last; i++) {
      const div = document.createElement("div");
      div.className = "row"; div.style.top = (i * H) + "px";
      renderRow(rows[i], div);
      el.appendChild(div);
    }
  };
  el.addEventListener("scroll", draw);
  return {refresh() {
            rows = rowsFn();
            spacer.style.height = (rows.length * H) + "px";
            el.style.height = Math.min(260, Math.max(2, rows.length) * H + 4) + "px";  // short lists stay short
            draw();
          },
          scrollTo(i) { if (i >= 0) el.scrollTop = Math.max(0, i * H - el.clientHeight / 3); draw(); },
          rows: () => rows};
}

function blockSpan(id, s) {
  const b = at(blockChanges[id], s) || {ref: 0, cached: 0, pins: 0, gen: 0};
  const cls = ["blk", b.pins ? "pinned" : (b.cached ? "cached" : ""), FB.has(id) ? "hl" : ""].join(" ");
  const flags = (b.cached ? " c" : "") + (b.pins ? " p" + b.pins : "");
  return `<span class="${cls}" title="block ${id}: ref ${b.ref}${b.cached ? ", cached" : ""}, ${b.pins} store pin(s), handed out ${b.gen}x">${id}<sub>r${b.ref}${flags}</sub></span>`;
}

function renderHeader() {
  $("title").textContent = `kvsim run ${D.trace} --variant ${D.variant}: ${D.verdict}`;
  const p = $("finding");
  if (!F) { p.className = "panel pass"; p.innerHTML = `<div>verdict pass: every invariant held</div><div class="mono">repro: ${esc(D.repro)}</div>`; return; }
  const names = [];
  if (F.request) names.push(`request <b id="finding-request">${esc(F.request)}</b>`);
  if (F.blocks.length) names.push(`blocks <b id="finding-blocks">[${F.blocks.join(",")}]</b>`);
  if (F.job !== null) names.push(`job <b>${F.job}</b>`);
  if (F.rank !== null) names.push(`rank <b>${F.rank}</b>`);
  p.innerHTML = `<div><b>${esc(F.signature)}</b> at <b id="finding-step">step ${F.step}</b>${names.length ? ": " + names.join(", ") : ""}</div>
    <div class="quote" id="finding-quote">${esc(F.quote)}</div>
    <div id="finding-causes">${causesHtml()}</div>
    <div id="finding-settings">${settingsHtml()}</div>
    <div class="mono">repro: ${esc(D.repro)}</div>`;
}

// The registry's classification: the cause set in the order the fixes removed them, and the residue.
function causesHtml() {
  const R = D.registry;
  if (!R || R.outcome === "none") return "registry: not classified";
  const causes = R.causes.map((c) => `<b class="cause">${esc(c.id)}</b> (${esc(c.upstream.state)}${c.upstream.references.length ? " " + esc(c.upstream.references.join(" ")) : ""}; fix ${esc(c.fix)})`);
  if (R.outcome === "known") return `registry: known: ${causes.join(", then ")}`;
  const after = causes.length ? ` after ${causes.join(", then ")}` : "";
  return `registry: <b>NEW</b>: ${esc(R.residue.signature)} under ${esc(R.residue.variant)}${after}`;
}

// The settings that differ from upstream's defaults for the variant (sizing and environment apart).
function settingsHtml() {
  const S = D.settings.filter((d) => d.group === "setting" || d.group === "test_double");
  if (!S.length) return "settings: upstream's defaults";
  return "settings that differ from upstream's defaults: " + S.map((d) =>
    `<span class="setting" title="${esc(d.source)}">${esc(d.key)}=${esc(d.value)} <i>(upstream ${esc(d.upstream || "sizes it")})</i></span>`).join(", ");
}

// Swimlanes: one row per request, one column per step, coloured by status, scheduled tokens inside.
const LANE_H = 16, LABEL_W = 70;
let pxPerStep = 1;
function drawLanes() {
  const scroll = $("lanes-scroll"), canvas = $("lanes");
  const w = scroll.clientWidth, h = scroll.clientHeight;
  canvas.width = w; canvas.height = h;
  const ctx = canvas.getContext("2d");
  ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, w, h);
  ctx.font = "11px sans-serif"; ctx.textBaseline = "middle";
  const firstLane = Math.floor(scroll.scrollTop / LANE_H), lastLane = Math.min(D.lanes.length, firstLane + Math.ceil(h / LANE_H));
  const s0 = Math.floor(scroll.scrollLeft / pxPerStep), s1 = s0 + Math.ceil((w - LABEL_W) / pxPerStep) + 1;
  const x = (s) => LABEL_W + (s - s0) * pxPerStep;
  for (let lane = firstLane; lane < lastLane; lane++) {
    const y = (lane - firstLane) * LANE_H, changes = laneChanges[lane];
    for (let i = 0; i < changes.length; i++) {
      const c = changes[i], end = i + 1 < changes.length ? changes[i + 1].s : maxStep + 1;
      if (end <= s0 || c.s > s1 || c.status === "freed") continue;
      ctx.fillStyle = COLORS[c.status];
      ctx.fillRect(Math.max(LABEL_W, x(c.s)), y + 2, x(end) - Math.max(LABEL_W, x(c.s)), LANE_H - 4);
    }
    if (pxPerStep >= 14) {
      ctx.fillStyle = "#000";
      for (const [s, t] of scheduled[lane]) if (s >= s0 && s <= s1) ctx.fillText(String(t), x(s) + 1, y + LANE_H / 2, pxPerStep - 2);
    }
    const name = D.lanes[lane];
    if (F && name === F.request) { ctx.strokeStyle = "#d00"; ctx.lineWidth = 2; ctx.strokeRect(LABEL_W, y + 1, w - LABEL_W, LANE_H - 2); }
    ctx.fillStyle = "#fff"; ctx.fillRect(0, y, LABEL_W, LANE_H);
    ctx.fillStyle = SLICE_REQUESTS.has(name) ? "#b00" : "#222";
    ctx.font = SLICE_REQUESTS.has(name) ? "bold 11px sans-serif" : "11px sans-serif";
    ctx.fillText(name, 4, y + LANE_H / 2, LABEL_W - 6);
  }
  const mark = (s, color) => { if (s < s0 || s > s1) return; ctx.fillStyle = color; ctx.fillRect(x(s) + pxPerStep / 2 - 1, 0, 2, h); };
  if (F) mark(F.step, "#d00");
  mark(curStep(), "#1f5fd0");
}
function setupLanes() {
  const scroll = $("lanes-scroll");
  pxPerStep = Math.max(2, Math.min(40, Math.floor((scroll.clientWidth - LABEL_W) / (maxStep + 1))));
  $("lanes-spacer").style.width = (LABEL_W + (maxStep + 1) * pxPerStep) + "px";
  $("lanes-spacer").style.height = (D.lanes.length * LANE_H) + "px";
  scroll.style.height = Math.min(320, D.lanes.length * LANE_H + 20) + "px";
  scroll.addEventListener("scroll", drawLanes);
  $("lanes").addEventListener("click", (e) => {
    const s = Math.floor(scroll.scrollLeft / pxPerStep) + Math.floor((e.offsetX - LABEL_W) / pxPerStep);
    goToStep(s);
  });
  $("legend").innerHTML = Object.entries(COLORS).map(([k, c]) => `<span><i style="background:${c}"></i>${k}</span>`).join("") +
    `<span><i style="background:#d00"></i>finding</span><span><i style="background:#1f5fd0"></i>current step</span>`;
}

// The block table of every live request at the current step.
const tables = vlist($("tables"), () => {
  const s = curStep(), rows = [];
  for (let lane = 0; lane < D.lanes.length; lane++) {
    const c = at(laneChanges[lane], s);
    if (!c || c.status === "freed") continue;
    if (sliceOnly && !SLICE_REQUESTS.has(D.lanes[lane])) continue;
    rows.push({lane, c});
  }
  return rows;
}, ({lane, c}, div) => {
  const s = curStep(), t = scheduled[lane].get(s), ch = chosen.get(lane);
  div.innerHTML = `<b>${esc(D.lanes[lane])}</b> ${c.name}${t ? " sched=" + t : ""} computed=${c.computed}` +
    (ch && ch.s <= s ? ` via ${ch.child}` : "") + " " + c.blocks.map((id) => blockSpan(id, s)).join("");
  if (F && D.lanes[lane] === F.request) div.classList.add("hl");
});

// The pool: one cell per block; free, held (green by ref count), cached, pinned, the finding's outlined.
const CELL = 12;
function drawPool() {
  const canvas = $("pool"), cols = Math.max(8, Math.floor(($("pool").parentElement.clientWidth - 4) / CELL));
  const rows = Math.ceil(D.num_blocks / cols), s = curStep();
  canvas.width = cols * CELL; canvas.height = Math.min(rows * CELL, 2400);
  const ctx = canvas.getContext("2d");
  for (let id = 0; id < D.num_blocks && Math.floor(id / cols) * CELL < canvas.height; id++) {
    const b = at(blockChanges[id], s) || {ref: 0, cached: 0, pins: 0, gen: 0};
    const x = (id % cols) * CELL, y = Math.floor(id / cols) * CELL;
    ctx.fillStyle = b.ref > 0 ? (b.ref > 1 ? "#238b45" : "#74c476") : (b.cached ? "#fff3a0" : "#f4f4f4");
    ctx.fillRect(x + 1, y + 1, CELL - 2, CELL - 2);
    if (b.pins) { ctx.strokeStyle = "#7b3fbf"; ctx.lineWidth = 2; ctx.strokeRect(x + 2, y + 2, CELL - 4, CELL - 4); }
    if (FB.has(id)) { ctx.strokeStyle = "#d00"; ctx.lineWidth = 2; ctx.strokeRect(x + 1, y + 1, CELL - 2, CELL - 2); }
  }
  canvas.onmousemove = (e) => {
    const id = Math.floor(e.offsetY / CELL) * cols + Math.floor(e.offsetX / CELL);
    if (id < D.num_blocks) $("pool-tip").innerHTML = "hover: " + blockSpan(id, curStep());
  };
  $("pool-note").innerHTML = F && F.blocks.length ? "finding's blocks now: " + F.blocks.map((id) => blockSpan(id, s)).join("")
    : `<span class="muted">${D.num_blocks} blocks; green held (dark: shared), yellow free and cached, purple frame store-pinned</span>`;
}

function jobTouches(j) {
  if (!F) return false;
  return j.request === F.request || (F.job !== null && j.job === F.job) || j.blocks.some((id) => FB.has(id));
}
const jobs = vlist($("jobs"), () => D.jobs.filter((j) => !sliceOnly || jobTouches(j)), (j, div) => {
  const reports = j.reports.map(([rank, s, outcome]) => (rank < 0 ? "" : `rank${rank}`) + `@${s} ${outcome}`).join(", ");
  div.innerHTML = `job ${j.job} ${esc(j.request)} @${j.step} tokens=[${j.tokens[0]},${j.tokens[1]}) ` +
    j.blocks.map((id) => blockSpan(id, curStep())).join("") + ` ${reports}${j.put !== null ? " put@" + j.put : ""}`;
  if (jobTouches(j)) div.classList.add(F.job !== null && j.job === F.job ? "finding" : "hl");
  if (j.step === curStep()) div.classList.add("cur");
});
const transfers = vlist($("transfers"), () => {
  const rows = D.transfers.filter((t) => !sliceOnly || jobTouches(t));
  for (const [lane, c] of chosen) if (!sliceOnly || SLICE_REQUESTS.has(D.lanes[lane])) rows.push({choice: c, lane});
  return rows;
}, (t, div) => {
  if (t.choice) { div.textContent = `MultiConnector: ${D.lanes[t.lane]} loads through ${t.choice.child} (@${t.choice.s})`; return; }
  div.innerHTML = `${t.connector} ${t.kind} ${esc(t.request)} @${t.step}${t.done !== null ? "→" + t.done : ""} ` +
    t.blocks.map((id) => blockSpan(id, curStep())).join("") + ` ${esc(t.outcome)}`;
  if (jobTouches(t)) div.classList.add("hl");
});

const events = vlist($("events"), () => {
  const rows = [];
  for (let i = 0; i < D.events.length; i++) if (!sliceOnly || SLICE_EVENTS.has(i)) rows.push(i);
  return rows;
}, (i, div) => {
  const [s, cat, text] = D.events[i];
  div.textContent = `${s} ${cat} ${text}`;
  if (s === curStep()) div.classList.add("cur");
  if (SLICE_EVENTS.has(i)) div.classList.add(["crash", "violation", "liveness"].includes(cat) ? "finding" : "hl");
  div.onclick = () => goToStep(s);
});

function renderTrace() {
  const lines = new Set(D.slice.trace_lines);
  $("trace").innerHTML = D.trace_text.split("\n").map((l, i) =>
    lines.has(i + 1) ? `<span class="hl">${esc(l)}</span>` : (sliceOnly ? "" : esc(l) + "\n")).join("");
  const first = $("trace").querySelector(".hl");
  if (first) $("trace").scrollTop = first.offsetTop - 60;  // the slice's first trace line in view
}

function render() {
  const s = curStep();
  $("step-label").textContent = `step ${s} (${pos + 1}/${D.steps.length})`;
  for (const n of document.querySelectorAll(".cur-step")) n.textContent = "step " + s;
  drawLanes(); tables.refresh(); drawPool(); jobs.refresh(); transfers.refresh(); events.refresh();
  const st = D.steps[pos];
  if (st) events.scrollTo(events.rows().findIndex((i) => i >= st.e[0]));
}
function goToStep(s) {
  let best = 0;
  for (let i = 0; i < D.steps.length; i++) if (D.steps[i].s <= s) best = i;
  pos = best; render();
}
function move(delta) { pos = Math.max(0, Math.min(D.steps.length - 1, pos + delta)); render(); }
function toggleSlice(on) { sliceOnly = on; $("slice").checked = on; renderTrace(); render(); }

document.addEventListener("keydown", (e) => {
  if (e.target.tagName === "INPUT" && e.key !== "s") return;
  const n = e.shiftKey ? 10 : 1;
  if (e.key === "ArrowRight" || e.key === "j") move(n);
  else if (e.key === "ArrowLeft" || e.key === "k") move(-n);
  else if (e.key === "Home") move(-D.steps.length);
  else if (e.key === "End") move(D.steps.length);
  else if (e.key === "f" && F) goToStep(F.step);
  else if (e.key === "s") toggleSlice(!sliceOnly);
  else return;
  e.preventDefault();
});
$("prev").onclick = () => move(-1);
$("next").onclick = () => move(1);
$("to-finding").onclick = () => F && goToStep(F.step);
$("slice").onchange = (e) => toggleSlice(e.target.checked);
window.addEventListener("resize", render);

renderHeader(); setupLanes(); renderTrace();
if (F) goToStep(F.step); else render();
