"use strict";
// The super-bench run viewer. Everything it shows is embedded in this file: the run summary and task
// table as JSON, and each task's trajectory as gzip-compressed JSON, decoded only when the task is opened.
// This script runs before the trajectories are parsed, so the table shows while a large file still loads.

const DATA = JSON.parse(document.getElementById("run-data").textContent);
const NAMES = DATA.names; // from Python: the metrics, the names of a completed task and of a step that went well, the badges of the answer, cause, replay and reproduced columns
const METRICS = NAMES.metrics;
const COL = Object.fromEntries(DATA.columns.map((name, i) => [name, i]));
const ROW_KEY = DATA.columns.length; // the task's payload number follows the visible columns
const NUMERIC = new Set(["steps", "cost", "time", ...METRICS]);
const FIGURE_TYPES = new Set(["image/png", "image/jpeg"]); // the only images a page makes data: URLs of
const ROWS_SHOWN = 250; // more on request: laying out a table of thousands of rows takes a noticeable time
const parsed = document.readyState === "loading"
  ? new Promise((resolve) => document.addEventListener("DOMContentLoaded", resolve, { once: true }))
  : Promise.resolve();
const state = { limit: ROWS_SHOWN,  sort: { col: "task", dir: 1 }, filter: { text: "", status: "", set: "", category: "", stop: "", result: "", answer: "", cause: "", replay: "", reproduced: "" }, order: [] };

// -- helpers --------------------------------------------------------------------------------------
function el(tag, props, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(props || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "text") node.textContent = value;
    else if (key === "class") node.className = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value === true ? "" : value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}
const pct = (v) => (v === null || v === undefined ? "–" : (v * 100).toFixed(1) + "%");
const label = (name) => name.replace(/_/g, " ");
function duration(seconds) {
  if (seconds === null || seconds === undefined) return "–";
  if (seconds < 60) return seconds.toFixed(seconds < 10 ? 1 : 0) + " s";
  const m = Math.floor(seconds / 60), s = Math.round(seconds % 60);
  if (m < 60) return `${m} min ${s} s`;
  return `${Math.floor(m / 60)} h ${String(m % 60).padStart(2, "0")} min`;
}
function offset(seconds) {
  const s = Math.max(0, Math.round(seconds));
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60);
  return `+${h}:${String(m).padStart(2, "0")}:${String(s % 60).padStart(2, "0")}`;
}
function scoreClass(v) {
  if (v === null || v === undefined) return "";
  return v >= 1 ? "v-full" : v <= 0 ? "v-zero" : "v-part";
}
function money(v) { return v ? "$" + v.toFixed(v < 1 ? 4 : 2) : "–"; }
// Where time went without result (a row's or the run's waste), as "interrupted cells 12 s · idle sandbox 3.0 s".
function wasteText(waste, waited) {
  const parts = waste ? Object.entries(waste).filter(([, v]) => v > 0).map(([k, v]) => `${label(k)} ${duration(v)}`) : [];
  if (waited > 0) parts.push(`waited for room ${duration(waited)}`);
  return parts.join(" · ");
}

// -- summary and table ----------------------------------------------------------------------------
function renderHeader() {
  const run = DATA.run;
  const who = [run.agent, run.model].filter(Boolean).join(" / ") || "unknown agent";
  const bits = [who, run.set && `set ${run.set}`, `${DATA.n_tasks} tasks`, `scoring: ${run.mode}`,
    run.imported_from && `imported from ${run.imported_from}`, `page made ${DATA.generated}`];
  document.getElementById("top").append(
    el("h1", { text: `Run ${run.name}` }), el("div", { class: "meta", text: bits.filter(Boolean).join(" · ") }));
}

function renderSummary() {
  const cards = DATA.metrics.filter((m) => m.n > 0).map((m) => el("div", { class: "card" },
    el("div", { class: "label", text: label(m.name) }),
    el("div", { class: "value", text: pct(m.mean) }),
    el("div", { class: "ci", text: `95% CI ${pct(m.low)} – ${pct(m.high)} · n=${m.n}` })));
  const usage = DATA.usage;
  cards.push(el("div", { class: "card" }, el("div", { class: "label", text: "cost" }),
    el("div", { class: "value", text: money(usage.cost) }),
    el("div", { class: "ci", text: `${usage.model_calls} calls · ${usage.prompt_tokens.toLocaleString()} + ${usage.completion_tokens.toLocaleString()} tokens` })));
  if (DATA.answers_traced) {
    cards.push(el("div", { class: "card", id: "answer-observed" }, el("div", { class: "label", text: "answer observed" }),
      el("div", { class: "value", text: pct(DATA.answer_observed) }),
      el("div", { class: "ci", text: `of ${DATA.answers_traced} submitted answers: every value shown by the run's own output` })));
    if (DATA.answer_given) {
      cards.push(el("div", { class: "card", id: "answer-given" }, el("div", { class: "label", text: "answer given" }),
        el("div", { class: "value", text: pct(DATA.answer_given) }),
        el("div", { class: "ci", text: `of ${DATA.answers_traced} submitted answers: some values shown only by pre-executed (given) cells` })));
    }
  }
  if (DATA.reproduced) {
    const r = DATA.reproduced;
    cards.push(el("div", { class: "card", id: "reproduced" }, el("div", { class: "label", text: "reproduced" }),
      el("div", { class: "value", text: `${r.reproduced} of ${r.reproduced + r.not_reproduced}` }),
      el("div", { class: "ci", text: `answers shown again by a replay (super-bench verify)${r.unchecked ? `; ${r.unchecked} not checked` : ""}` })));
  }
  cards.push(el("div", { class: "card" }, el("div", { class: "label", text: "time" }),
    el("div", { class: "value", text: duration(DATA.wall_time) }),
    el("div", { class: "ci", text: `executing: ${duration(DATA.execution_time)}` })));
  if (DATA.waste) {  // the kinds overlap (an install that timed out is both), so they are not added up
    cards.push(el("div", { class: "card" }, el("div", { class: "label", text: "time without result" }),
      el("div", { class: "ci", text: wasteText(DATA.waste, DATA.waited) || "none" })));
  }
  const counts = (title, obj) => el("div", { class: "counts" }, el("b", { text: title + ": " }),
    Object.entries(obj).sort((a, b) => b[1] - a[1]).map(([k, v]) => el("span", { text: `${k} ${v}` })));
  document.getElementById("summary").append(
    el("div", { class: "cards" }, cards),
    counts("status", DATA.status),
    counts("stop reasons", DATA.stop),
    el("div", { class: "counts", text: `${DATA.n_scored} of ${DATA.n_tasks} tasks scored (infrastructure failures are left out of the means); intervals are a bootstrap over tasks.` }));
}

function distinct(col) {
  const values = new Set();
  for (const row of DATA.rows) {
    const v = row[COL[col]];
    if (col === "category") String(v).split(",").filter(Boolean).forEach((c) => values.add(c));
    else if (v !== "" && v !== null) values.add(v);
  }
  return [...values].sort();
}

function renderFilters() {
  const box = document.getElementById("filters");
  const primary = DATA.run.primary;
  box.append(el("input", { type: "search", placeholder: "filter task ids (text or /regex/)", "aria-label": "filter task ids",
    oninput: (e) => { state.filter.text = e.target.value; state.limit = ROWS_SHOWN; refresh(); } }));
  // A filter of one value is shown where that value marks some rows apart from the blank others.
  const select = (key, title, options, least = 2) => {
    if (options.length < least && key !== "result") return;
    box.append(el("select", { "aria-label": title, onchange: (e) => { state.filter[key] = e.target.value; state.limit = ROWS_SHOWN; refresh(); } },
      el("option", { value: "", text: `${title}: all` }), options.map(([value, text]) => el("option", { value, text }))));
  };
  select("status", "status", distinct("status").map((v) => [v, v]));
  select("set", "set", distinct("set").map((v) => [v, v]));
  select("category", "category", distinct("category").map((v) => [v, v]));
  select("stop", "stop reason", distinct("stop").map((v) => [v, v]));
  select("result", label(primary), [["solved", "solved (1.0)"], ["partial", "partial"], ["failed", "0"], ["unsubmitted", "not submitted"]]);
  select("answer", "answer", distinct("answer").map((v) => [v, v]), 1);
  select("cause", "failure cause", distinct("cause").map((v) => [v, v]), 1);
  if (COL.replay !== undefined) select("replay", "replay divergence", distinct("replay").map((v) => [v, v]), 1);
  if (COL.reproduced !== undefined) select("reproduced", "reproduced", distinct("reproduced").map((v) => [v, v]), 1);
  state.primary = primary;
}

function matches(row) {
  const f = state.filter;
  if (f.text) {
    const id = row[COL.task];
    const m = /^\/(.+)\/$/.exec(f.text);
    if (m) {
      try { if (!new RegExp(m[1], "i").test(id)) return false; } catch (_) { return false; }
    } else if (!id.toLowerCase().includes(f.text.toLowerCase())) return false;
  }
  for (const key of ["status", "set", "stop", "answer", "cause", "replay", "reproduced"]) if (f[key] && row[COL[key]] !== f[key]) return false;
  if (f.category && !String(row[COL.category]).split(",").includes(f.category)) return false;
  if (f.result) {
    const v = row[COL[state.primary]];
    if (f.result === "unsubmitted") return !row[COL[NAMES.submitted]];
    if (v === null || v === undefined) return false;
    if (f.result === "solved" && v < 1) return false;
    if (f.result === "failed" && v > 0) return false;
    if (f.result === "partial" && (v <= 0 || v >= 1)) return false;
  }
  return true;
}

function compare(a, b) {
  const i = COL[state.sort.col], dir = state.sort.dir;
  const x = a[i], y = b[i];
  const missing = (v) => v === null || v === undefined || v === "";
  if (missing(x) || missing(y)) return missing(x) === missing(y) ? 0 : missing(x) ? 1 : -1; // blanks last
  if (NUMERIC.has(state.sort.col)) return (x - y) * dir;
  return String(x).localeCompare(String(y), undefined, { numeric: true }) * dir;
}

function renderTableHead() {
  const row = el("tr");
  for (const name of DATA.columns) {
    row.append(el("th", { scope: "col", class: NUMERIC.has(name) ? "num" : null, "data-col": name, tabindex: "0",
      text: label(name), onclick: () => sortBy(name),
      onkeydown: (e) => { if (e.key === "Enter") sortBy(name); } }));
  }
  document.querySelector("#tasks thead").append(row);
}

function sortBy(name) {
  state.sort = { col: name, dir: state.sort.col === name ? -state.sort.dir : NUMERIC.has(name) ? -1 : 1 };
  refresh();
}

function cell(name, value) {
  if (METRICS.includes(name)) return el("td", { class: `num ${scoreClass(value)}`, text: value === null ? "–" : value.toFixed(2) });
  if (name === "cost") return el("td", { class: "num", text: money(value) });
  if (name === "time") return el("td", { class: "num", text: duration(value) });
  if (name === "steps") return el("td", { class: "num", text: value });
  if (name === "status") return el("td", null, el("span", { class: `badge ${value === NAMES.completed ? "good" : "bad"}`, text: value }));
  if ((name === "answer" || name === "cause" || name === "replay" || name === "reproduced") && value) {
    return el("td", null, el("span", { class: `badge ${NAMES[name][value] || ""}`, text: value }));
  }
  return el("td", { class: name === "task" ? "task" : null, text: value });
}

function refresh() {
  const rows = DATA.rows.filter(matches).sort((a, b) => compare(a, b) || a[COL.task].localeCompare(b[COL.task]));
  state.order = rows.map((r) => r[COL.task]);
  const body = document.createDocumentFragment();
  for (const row of rows.slice(0, state.limit)) {
    const id = row[COL.task];
    const tr = el("tr", { tabindex: "0", "data-task": id, onclick: () => openHash(id),
      onkeydown: (e) => { if (e.key === "Enter") openHash(id); } });
    DATA.columns.forEach((name, i) => tr.append(cell(name, row[i])));
    body.append(tr);
  }
  const tbody = document.querySelector("#tasks tbody");
  tbody.replaceChildren(body);
  for (const th of document.querySelectorAll("#tasks th")) {
    th.setAttribute("aria-sort", th.dataset.col === state.sort.col ? (state.sort.dir > 0 ? "ascending" : "descending") : "none");
  }
  const count = document.getElementById("count");
  const hidden = rows.length - Math.min(rows.length, state.limit);
  count.replaceChildren(`${rows.length} of ${DATA.rows.length} tasks shown`);
  if (hidden > 0) {
    count.append(` (the first ${state.limit} listed) `, el("button", { type: "button", text: `list all ${rows.length}`,
      onclick: () => { state.limit = Infinity; refresh(); } }));
  }
}

// -- one task ---------------------------------------------------------------------------------------
function openHash(id) { location.hash = "task=" + encodeURIComponent(id); }

async function decodeTask(k) {
  await parsed;
  const node = document.getElementById("t" + k);
  if (!node) throw new Error("this task's data is missing from the page");
  if (typeof DecompressionStream === "undefined") throw new Error("this browser cannot decompress the embedded data (it lacks DecompressionStream)");
  const text = atob(node.textContent.trim());
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) bytes[i] = text.charCodeAt(i);
  const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
}

function excerptNode(ex, landmarks) {
  const pre = el("pre", { class: "text" });
  let end = 0;
  for (const [start, text] of ex.p) {
    if (start > end) pre.append(el("span", { class: "gap", text: `[… ${(start - end).toLocaleString()} characters not shown …]` }));
    const stop = start + text.length;
    let at = start;
    const marks = ex.m.filter(([s, e]) => s < stop && e > start).sort((a, b) => a[0] - b[0]);
    for (const [s, e, n] of marks) {
      const from = Math.max(s, at), to = Math.min(e, stop);
      if (from < at || to <= from) continue;
      pre.append(text.slice(at - start, from - start));
      const shown = text.slice(from - start, to - start);
      // A landmark is marked by its number; a submitted value by its field (a string).
      pre.append(typeof n === "string"
        ? el("mark", { class: "ans", "data-field": n, title: `the submitted ${n}, as printed`, text: shown })
        : el("mark", { class: "lm", "data-landmark": n, title: `landmark ${n + 1}: ${landmarks[n] ? landmarks[n][0] : ""}`, text: shown }));
      at = to;
    }
    pre.append(text.slice(at - start));
    end = stop;
  }
  if (ex.n > end) pre.append(el("span", { class: "gap", text: `[… ${(ex.n - end).toLocaleString()} characters not shown …]` }));
  return pre;
}

function answerNode(d) {
  const box = el("div");
  if (d.gold === undefined) {
    box.append(el("p", { class: "muted", text: DATA.run.has_gold
      ? "No gold answer: this task is not among the run's gold tasks (tasks.jsonl)."
      : "No gold answer: the run keeps no tasks.jsonl (give the tasks: super-bench view RUN_DIR --tasks SOURCE)." }));
    box.append(el("pre", { class: "text", text: "submitted: " + JSON.stringify(d.submission, null, 1) }));
    return box;
  }
  if (!d.answer) {
    box.append(el("p", { class: "muted", text: "This task has no gold answer." }));
    if (d.submission !== null) box.append(el("pre", { class: "text", text: JSON.stringify(d.submission, null, 1) }));
    return box;
  }
  const table = el("table", { class: "answer" }, el("thead", null, el("tr", null,
    ["field", "gold", "submitted", ""].map((h) => el("th", { text: h })))));
  const body = el("tbody");
  for (const [field, gold, sub, status] of d.answer) {
    body.append(el("tr", { class: status }, el("td", { text: field }), el("td", { text: gold ?? "" }),
      el("td", { text: sub ?? "(none)" }), el("td", { text: status === "match" ? "✓" : status })));
  }
  table.append(body);
  if (d.submission === null) box.append(el("p", { class: "error", text: "Nothing was submitted." }));
  box.append(table);
  return box;
}

function stepNode(step, d) {
  const classes = ["step", step.outcome];
  if (step.pre) classes.push("pre");
  if (step.lm.length) classes.push("has-lm");
  const evidence = d.failure && d.failure.step === step.i;
  const diverged = d.divergence && d.divergence.step === step.i;
  if (evidence) classes.push("cause");
  if (diverged) classes.push("diverged");
  const kind = step.label !== null && step.label !== undefined ? (step.label === "" ? "unparsable reply" : step.label) : step.type;
  const head = el("div", { class: "step-head" },
    el("span", { class: "n", text: `Step ${step.i + 1}` }),
    el("span", { class: "badge", text: kind }),
    step.did && step.did !== kind && el("span", { class: `badge did${step.did === "edit not applied" ? " bad" : ""}`, title: "what the step did, read in its agent's grammar", text: step.did }),
    step.pre && el("span", { class: "badge pre", text: "pre-executed" }),
    step.outcome !== NAMES.ok && el("span", { class: "badge bad", text: step.outcome }),
    step.exit !== null && step.exit !== undefined && step.exit !== 0 && el("span", { class: "badge bad", text: `exit ${step.exit}` }),
    step.lm.map((n) => el("span", { class: "badge lm", title: d.landmarks[n] ? d.landmarks[n][0] : "", text: `landmark ${n + 1}` })),
    (step.ans || []).map((field) => el("span", { class: "badge ans", title: "the submitted value is first shown here", text: `answer: ${field}` })),
    evidence && el("span", { class: "badge bad cause", title: d.failure.reason, text: `failure cause: ${label(d.failure.cause)}` }),
    diverged && el("span", { class: "badge warn diverged", title: "the replay first ended this step otherwise than the recording", text: `replay diverged: ${label(d.divergence.kind)}` }),
    el("span", { class: "time", text: step.untimed ? "time not recorded" : `${step.clock} (${offset(step.t)}) · ${duration(step.dur)}` }));
  const node = el("section", { class: classes.join(" "), id: `step-${step.i}` }, head);
  if (evidence && d.failure.quote) node.append(el("blockquote", { class: "cause-quote", text: d.failure.quote }));
  if (step.thought) node.append(el("div", { class: "thought", text: step.thought }));
  if (step.action) node.append(el("div", { class: "part-label", text: "action" }), excerptNode(step.action, d.landmarks));
  if (step.obs && step.obs.n) node.append(el("div", { class: "part-label", text: "observation" }), excerptNode(step.obs, d.landmarks));
  if (step.raw) {
    const raw = el("details", { open: step.raw.m.length > 0 }, el("summary", { text: "raw output (what landmarks are matched on)" }), excerptNode(step.raw, d.landmarks));
    node.append(raw);
  }
  const figures = (step.figs || []).filter(([mime, data]) => FIGURE_TYPES.has(mime) && /^[A-Za-z0-9+/]*={0,2}$/.test(data));
  if (figures.length) {
    node.append(el("div", { class: "part-label", text: figures.length === 1 ? "figure" : `${figures.length} figures` }),
      el("div", { class: "figures" }, figures.map(([mime, data], n) =>
        el("img", { src: `data:${mime};base64,${data}`, alt: `figure ${n + 1} of step ${step.i + 1}` }))));
  }
  if (step.figs_omitted) {
    node.append(el("p", { class: "muted", text: `${step.figs_omitted} more figure(s), not embedded in this page to keep it small: see the task's trajectory.json or trajectory.ipynb.` }));
  }
  return node;
}

function goToStep(i, markSelector = "mark.lm") {
  const node = document.getElementById(`step-${i}`);
  if (!node) return;
  const mark = node.querySelector(markSelector);
  if (mark && mark.closest("details")) mark.closest("details").open = true;
  (mark || node).scrollIntoView({ block: "center" });
}

function fieldName(f) { return f.field || "(answer)"; }

function provenanceNode(d) {
  const box = el("div", { id: "provenance" });
  if (d.provenance === false) {
    box.append(el("p", { class: "muted", text: "Not traced: this row was scored before super-bench traced answers. Re-score the run (super-bench score RUN_DIR) to see where each value came from." }));
    return box;
  }
  if (!d.provenance) {
    box.append(el("p", { class: "muted", text: "Nothing was submitted." }));
    return box;
  }
  const list = el("ul", { class: "provenance" });
  for (const f of d.provenance.fields) {
    const head = [el("code", { text: `${fieldName(f)} = ${JSON.stringify(f.value)}` }), " — "];
    if (f.step !== null) {
      list.append(el("li", { class: "observed" }, head, el("a", { class: "step-link",
        onclick: () => goToStep(f.step, `mark.ans[data-field="${CSS.escape(fieldName(f))}"]`),
        text: `shown in step ${f.step + 1}` }), ` as `, el("code", { text: f.text })));
      continue;
    }
    const why = ["never shown by the agent's own output"];
    if (f.typed_step !== null) why.push(`its code spelled it out in step ${f.typed_step + 1} before any output showed it`);
    if (f.pre_executed_step !== null) {
      list.append(el("li", { class: "given" }, head, `${why.join("; ")}; given: `, el("a", { class: "step-link",
        onclick: () => goToStep(f.pre_executed_step, `mark.ans[data-field="${CSS.escape(fieldName(f))}"]`),
        text: `shown only by the pre-executed step ${f.pre_executed_step + 1}` }), f.text ? ` as ` : "", f.text ? el("code", { text: f.text }) : ""));
      continue;
    }
    list.append(el("li", { class: "unobserved" }, head, el("span", { class: "v-zero", text: why.join("; ") })));
  }
  box.append(list);
  if (d.provenance.untraced) box.append(el("p", { class: "muted", text: `${d.provenance.untraced} more value(s) looked for in order after the last one shown: ${d.provenance.untraced_shown || 0} found.` }));
  return box;
}

// Why the task failed: its primary cause, the step that shows it (linked) and the line quoted from it.
function failureNode(f) {
  const box = el("div", { id: "failure" }, el("p", null,
    el("span", { class: `badge ${NAMES.cause[label(f.cause)] || "bad"}`, text: label(f.cause) }),
    ` ${f.reason || ""} (confidence ${f.confidence.toFixed(2)}, by ${f.by})`));
  if (f.step !== null) {
    box.append(el("p", null, "Evidence: ", el("a", { class: "step-link", onclick: () => goToStep(f.step, ".cause-quote"), text: `step ${f.step + 1}` }),
      f.quote ? ": " : "", f.quote ? el("code", { text: f.quote }) : ""));
  } else if (f.quote) {
    box.append(el("p", null, "Evidence: ", el("code", { text: f.quote })));
  }
  return box;
}

// Where a replay of a recorded trajectory first did otherwise than the recording.
function divergenceNode(v) {
  const box = el("div", { id: "divergence" }, el("p", null,
    el("span", { class: `badge ${NAMES.replay[label(v.kind)] || "warn"}`, text: label(v.kind) }), " "));
  if (v.step === null) box.append(el("p", { class: "muted", text: "Every step ended as recorded." }));
  else {
    box.append(el("p", null, el("a", { class: "step-link", onclick: () => goToStep(v.step), text: `first at step ${v.step + 1}` }),
      `: recorded ${v.recorded ?? "–"}, replayed ${v.replayed ?? "–"}`));
  }
  return box;
}

function reproductionNode(v) {
  const verdict = v.reproduced === true ? "reproduced" : v.reproduced === false ? "not reproduced" : "not checked";
  const box = el("div", { id: "reproduction" }, el("p", null,
    el("span", { class: `badge ${v.reproduced === true ? "good" : v.reproduced === false ? "bad" : ""}`, text: verdict }),
    v.reason ? ` ${v.reason}` : ""));
  const list = el("ul", { class: "provenance" });
  for (const f of v.fields) {
    list.append(el("li", { class: f.step !== null ? "observed" : "unobserved" }, el("code", { text: `${fieldName(f)} = ${JSON.stringify(f.value)}` }),
      " — ", f.step !== null ? `shown in step ${f.step + 1} of the replay as ` : "not shown by the replay",
      f.step !== null ? el("code", { text: f.text }) : null));
  }
  box.append(list);
  const facts = [v.trajectory && `replay: ${v.trajectory}`, v.stop_reason && `ended: ${v.stop_reason}`, v.status && `status ${v.status}`];
  box.append(el("p", { class: "muted", text: facts.filter(Boolean).join(" · ") }));
  return box;
}

function renderTask(row, d) {
  const view = document.getElementById("task-view");
  const position = state.order.indexOf(d.id);
  const neighbour = (delta) => state.order[position + delta];
  const nav = el("div", { class: "nav" },
    el("a", { href: "#", text: "← all tasks" }),
    neighbour(-1) && el("a", { onclick: () => openHash(neighbour(-1)), text: "‹ previous" }),
    neighbour(1) && el("a", { onclick: () => openHash(neighbour(1)), text: "next ›" }),
    position >= 0 && el("span", { class: "muted", text: `${position + 1} of ${state.order.length}` }));
  const metrics = METRICS.filter((m) => d.metrics[m] !== null).map((m) =>
    el("span", { class: `badge ${scoreClass(d.metrics[m])}`, text: `${label(m)} ${d.metrics[m].toFixed(2)}` }));
  const facts = [`status ${d.status}`, `stop: ${d.stop || "unknown"}`, `${d.steps.length} steps`, `time ${duration(d.wall_time)}`,
    `executing ${duration(d.execution_time)}`, d.usage.cost ? `cost ${money(d.usage.cost)}` : null,
    d.kernel_restarts ? `${d.kernel_restarts} kernel restarts` : null, [d.agent, d.model].filter(Boolean).join(" / ") || null,
    d.node ? `ran on ${d.node}` : null];
  view.replaceChildren(nav, el("div", { class: "task-title", text: d.id }), el("div", null, metrics),
    el("div", { class: "muted", text: facts.filter(Boolean).join(" · ") }));
  if (d.times) view.append(el("div", { class: "muted", text: `Step times: ${d.times} (as recorded in the notebook).` }));
  const wasted = wasteText(d.waste, d.waited);
  if (wasted) view.append(el("div", { class: "muted", text: `Time without result: ${wasted}.` }));
  if (d.error) view.append(el("p", { class: "error", text: d.error }));
  if (d.load_error) view.append(el("p", { class: "error", text: d.load_error }));
  if (d.query) view.append(el("details", { open: true }, el("summary", { text: "query" }), el("div", { class: "query", text: d.query })));
  if (d.recorded) view.append(el("p", { class: "muted", text: "Metrics recorded by the original harness: " + JSON.stringify(d.recorded) }));
  view.append(el("h2", { text: "Submission against gold" }), answerNode(d));
  view.append(el("h2", { text: "Where the answer came from" }), provenanceNode(d));
  if (d.failure) view.append(el("h2", { text: "Why it failed" }), failureNode(d.failure));
  if (d.divergence) view.append(el("h2", { text: "Replay divergence" }), divergenceNode(d.divergence));
  if (d.verified) view.append(el("h2", { text: "Reproduction (super-bench verify)" }), reproductionNode(d.verified));
  if (d.landmarks.length) {
    view.append(el("h2", { text: "Landmarks" }), el("ol", { class: "landmarks" }, d.landmarks.map(([pattern, step]) =>
      el("li", null, el("code", { text: pattern }), " — ",
        step === null ? el("span", { class: "v-zero", text: "not found" })
          : el("a", { class: "step-link", onclick: () => goToStep(step), text: `found in step ${step + 1}` })))));
  }
  if (d.entrypoint) {
    view.append(el("h2", { text: `Entrypoint ${d.entrypoint}` }));
    if (!d.entrypoint_runs.length) view.append(el("p", { class: "v-zero", text: "never run" }));
    for (const r of d.entrypoint_runs) {
      view.append(el("div", null, el("a", { class: "step-link", onclick: () => goToStep(r.step_index), text: `step ${r.step_index + 1}` }),
        ` · ${duration(r.duration)} · `, el("span", { class: r.success ? "v-full" : "v-zero", text: r.success ? "counts" : "does not count" }), ` · ${r.reason}`));
    }
  }
  view.append(el("h2", { text: `Trajectory (${d.steps.length} steps, numbered from 1)` }));
  const steps = document.createDocumentFragment();
  for (const step of d.steps) steps.append(stepNode(step, d));
  view.append(steps);
}

async function showTask(id) {
  const row = DATA.rows.find((r) => r[COL.task] === id);
  const view = document.getElementById("task-view");
  document.getElementById("list-view").hidden = true;
  view.hidden = false;
  if (!row) {
    view.replaceChildren(el("p", { class: "error", text: `No task ${id} in this run.` }), el("a", { href: "#", text: "← all tasks" }));
    return;
  }
  view.replaceChildren(el("p", { class: "muted", text: `Loading ${id} …` }));
  try {
    const d = await decodeTask(row[ROW_KEY]);
    if (location.hash !== "#task=" + encodeURIComponent(id)) return; // another task was opened meanwhile
    renderTask(row, d);
    window.scrollTo(0, 0);
  } catch (err) {
    view.replaceChildren(el("p", { class: "error", text: `Cannot show ${id}: ${err.message}` }), el("a", { href: "#", text: "← all tasks" }));
  }
}

function route() {
  const m = /^#task=(.*)$/.exec(location.hash);
  if (m) {
    showTask(decodeURIComponent(m[1]));
  } else {
    document.getElementById("task-view").hidden = true;
    document.getElementById("list-view").hidden = false;
  }
}

renderHeader();
renderSummary();
renderFilters();
renderTableHead();
refresh();
window.addEventListener("hashchange", route);
document.addEventListener("keydown", (e) => {
  if (e.key === "Escape" && location.hash) location.hash = "";
});
route();
