// blackbox view: renders the run embedded in this page. Text from the run only ever enters the page
// through text nodes (el(), textContent): never as markup. Step contents are built when opened.
"use strict";
(function () {
  const DATA = JSON.parse(document.getElementById("blackbox-data").textContent);
  const POOL = DATA.pool;
  const TYPES = ["model_input", "model_output", "tool_call", "tool_result", "metadata"];
  const COLORS = { model_input: "var(--mi)", model_output: "var(--mo)", tool_call: "var(--tc)", tool_result: "var(--tr)", metadata: "var(--md)" };
  const LONG = 4000; // characters shown before a text is folded
  const BATCH = 150; // step rows built at a time
  const $ = (id) => document.getElementById(id);

  // -- small helpers ------------------------------------------------------------------------
  function el(tag, attrs, ...kids) {
    const node = document.createElement(tag);
    if (attrs) {
      for (const [k, v] of Object.entries(attrs)) {
        if (v === undefined || v === null || v === false) continue;
        if (k === "class") node.className = v;
        else if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
        else if (k === "text") node.textContent = v;
        else node.setAttribute(k, String(v));
      }
    }
    for (const kid of kids.flat()) {
      if (kid === null || kid === undefined || kid === false) continue;
      node.appendChild(typeof kid === "string" || typeof kid === "number" ? document.createTextNode(String(kid)) : kid);
    }
    return node;
  }
  function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); return node; }
  const encoder = new TextEncoder();
  function bytes(s) { return encoder.encode(s).length; }
  function size(n) {
    if (n < 1024) return n + " B";
    if (n < 1024 * 1024) return (n / 1024).toFixed(1) + " KB";
    return (n / 1024 / 1024).toFixed(1) + " MB";
  }
  function offset(ms) {
    const sign = ms < 0 ? "-" : "+";
    const s = Math.abs(ms) / 1000;
    if (s < 60) return sign + s.toFixed(2) + "s";
    if (s < 3600) { const m = Math.floor(s / 60); return sign + m + "m" + String(Math.floor(s % 60)).padStart(2, "0") + "s"; }
    const h = Math.floor(s / 3600); return sign + h + "h" + String(Math.floor((s % 3600) / 60)).padStart(2, "0") + "m";
  }
  function span(ms) { return offset(ms).slice(1); }
  function when(ms) {
    const d = new Date(ms);
    return isNaN(d) ? ms + " ms since the epoch" : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
  }
  function json(v) { try { return JSON.stringify(v, null, 2); } catch (e) { return String(v); } }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // -- the runs ---------------------------------------------------------------------------
  const stepCache = {};
  function stepsOf(key) {
    if (stepCache[key]) return stepCache[key];
    const run = DATA.runs[key];
    let steps = run.steps;
    if (run.shared) steps = stepsOf(run.shared.run).slice(0, run.shared.count).concat(steps);
    return (stepCache[key] = steps);
  }
  function payloadOf(step) {
    const p = step[4];
    if (step[1] !== "model_input" || !p || typeof p !== "object") return p;
    if (p.raw !== undefined) return p.raw;
    const out = Object.assign({}, p.x || {});
    out.messages = p.m.map((i) => POOL[i]);
    out.tools = p.t.map((i) => POOL[i]);
    if ("s" in p) out.systemPrompt = POOL[p.s];
    return out;
  }

  // -- search -----------------------------------------------------------------------------
  let query = "";
  const poolText = [];
  function poolLower(i) {
    if (poolText[i] === undefined) { const v = POOL[i]; poolText[i] = (typeof v === "string" ? v : JSON.stringify(v)).toLowerCase(); }
    return poolText[i];
  }
  const searchCache = {};
  // A text is found at the step where it first appears: a model_input matches on its new turn, and on
  // its system prompt or tool definitions only when they changed from the request before.
  function matches(key, i) {
    const cache = (searchCache[key] = searchCache[key] || []);
    const steps = stepsOf(key);
    const step = steps[i];
    if (cache[i] === undefined) {
      const p = step[4];
      if (step[1] === "model_input" && p && p.m) {
        const prev = previousInput(steps, i);
        const refs = p.m.slice(p.h || 0);
        if (!prev || prev.s !== p.s) if ("s" in p) refs.push(p.s);
        if (!prev || prev.t.join() !== p.t.join()) refs.push(...p.t);
        cache[i] = { refs, own: (step[3] + " " + JSON.stringify(p.x || {})).toLowerCase() };
      } else {
        cache[i] = { refs: [], own: (step[3] + " " + JSON.stringify(p)).toLowerCase() };
      }
    }
    const c = cache[i];
    return c.own.includes(query) || c.refs.some((r) => poolLower(r).includes(query));
  }
  function previousInput(steps, i) {
    for (let j = i - 1; j >= 0; j--) if (steps[j][1] === "model_input" && steps[j][4] && steps[j][4].m) return steps[j][4];
    return null;
  }
  // Text with the search query marked; `at` marks one character (a divergence) instead.
  function marked(text, at) {
    const frag = document.createDocumentFragment();
    if (at !== undefined && at !== null) {
      const chars = Array.from(text);
      frag.append(chars.slice(0, at).join(""));
      frag.append(el("mark", { class: "hl" }, at < chars.length ? chars[at] : "⟂ (ends here)"));
      frag.append(chars.slice(at + 1).join(""));
      return frag;
    }
    if (!query) { frag.append(text); return frag; }
    const lower = text.toLowerCase();
    let from = 0;
    for (let hit = lower.indexOf(query); hit !== -1 && query; hit = lower.indexOf(query, from)) {
      frag.append(text.slice(from, hit), el("mark", null, text.slice(hit, hit + query.length)));
      from = hit + query.length;
    }
    frag.append(text.slice(from));
    return frag;
  }

  // -- content blocks ------------------------------------------------------------------------
  function textBlock(text, cls) {
    const pre = el("pre", { class: cls || "text" });
    if (text.length <= LONG) { pre.append(marked(text)); return pre; }
    const box = el("div", { class: "long" });
    pre.append(marked(text.slice(0, LONG)), "…");
    const btn = el("button", { type: "button", class: "fold", on: { click: () => { clear(pre).append(marked(text)); btn.remove(); } } },
      "show all " + size(bytes(text)) + " (" + text.length.toLocaleString() + " characters)");
    box.append(pre, btn);
    return box;
  }
  function valueBlock(v) { return typeof v === "string" ? textBlock(v) : textBlock(json(v), "json"); }
  function folded(label, build) {
    const d = el("details", null, el("summary", null, label));
    let built = false;
    d.addEventListener("toggle", () => { if (d.open && !built) { built = true; d.append(build()); } });
    return d;
  }
  function part(p) {
    if (!p || typeof p !== "object") return valueBlock(p);
    if (p.type === "text") return el("div", { class: "part" }, textBlock(String(p.text)));
    if (p.type === "tool_use")
      return el("div", { class: "part" }, el("div", { class: "label" }, "tool call ", el("code", null, String(p.toolName)), " (" + p.toolCallId + ")"), valueBlock(p.toolInput));
    if (p.type === "tool_result") {
      const err = "error" in p;
      return el("div", { class: "part" }, el("div", { class: "label" }, (err ? "tool error " : "tool result ") + "from ", el("code", null, String(p.toolName)), " (" + p.toolCallId + ")"),
        valueBlock(err ? p.error : p.result));
    }
    return valueBlock(p);
  }
  function message(m, i) {
    const content = m && m.content;
    const body = typeof content === "string" ? [textBlock(content)] : Array.isArray(content) ? content.map(part) : [valueBlock(content)];
    return el("div", { class: "msg" }, el("div", { class: "role" }, "#" + i + " " + String(m && m.role)), body);
  }
  function toolDef(t) {
    return el("div", { class: "msg" }, el("div", { class: "role" }, String(t && t.name)),
      t && t.description ? textBlock(String(t.description)) : null, folded("input schema", () => valueBlock(t && t.inputSchema)));
  }

  function inputBody(step) {
    const p = step[4];
    if (!p || !p.m) return [el("h3", null, "payload (not the spec's model_input shape)"), valueBlock(p && p.raw !== undefined ? p.raw : p)];
    const x = p.x || {};
    const out = [];
    const facts = [];
    if (x.model !== undefined) facts.push(["model", String(x.model)]);
    facts.push(["messages", p.m.length + (p.h ? " (" + p.h + " earlier, " + (p.m.length - p.h) + " new)" : "")]);
    for (const [k, v] of Object.entries(x)) if (k !== "model") facts.push([k, JSON.stringify(v)]);
    out.push(kv(facts));
    const start = p.h || 0;
    out.push(el("h3", null, start ? "new turn" : "messages"));
    for (let i = start; i < p.m.length; i++) out.push(message(POOL[p.m[i]], i));
    if (start) out.push(folded("earlier history: " + plural(start, "message"), () => el("div", null, p.m.slice(0, start).map((r, i) => message(POOL[r], i)))));
    if ("s" in p) {
      const sys = POOL[p.s];
      const text = typeof sys === "string" ? sys : JSON.stringify(sys);
      out.push(folded("system prompt (" + size(bytes(text)) + ")", () => textBlock(text)));
    }
    const defs = p.t.map((r) => POOL[r]);
    const defsSize = defs.reduce((n, t) => n + bytes(JSON.stringify(t)), 0);
    out.push(folded(plural(defs.length, "tool definition") + " (" + size(defsSize) + "): " + defs.map((t) => t && t.name).join(", "),
      () => el("div", null, defs.map(toolDef))));
    return out;
  }
  function outputBody(p) {
    const out = [];
    if (p && p.stop) out.push(el("div", { class: "badge bad" }, p.stop === "length" ? "cut off at max tokens" : p.stop === "refusal" ? "the model refused" : "stop: " + p.stop));
    if (p && typeof p.text === "string") out.push(el("h3", null, p.type === "final_answer" ? "answer" : "text"), textBlock(p.text));
    const calls = p && p.type === "tool_call" ? [p] : p && Array.isArray(p.calls) ? p.calls : [];
    if (calls.length) out.push(el("h3", null, plural(calls.length, "tool call")));
    for (const c of calls) out.push(el("div", { class: "part" }, el("div", { class: "label" }, el("code", null, String(c.toolName)), " (" + c.toolCallId + ")"), valueBlock(c.toolInput)));
    if (!out.length) out.push(valueBlock(p));
    return out;
  }
  function toolPair(key, step) {
    const steps = stepsOf(key);
    const p = step[4] || {};
    const id = p.toolCallId;
    const call = step[1] === "tool_call" ? step : steps.find((s) => s[1] === "tool_call" && s[4] && s[4].toolCallId === id);
    const result = step[1] === "tool_result" ? step : steps.find((s) => s[0] > step[0] && s[1] === "tool_result" && s[4] && s[4].toolCallId === id);
    const side = (s, title) => {
      if (!s) return el("div", { class: "absent" }, el("h3", null, title), "not recorded in this run");
      const q = s[4] || {};
      const body = s[1] === "tool_call" ? valueBlock(q.toolInput) : "error" in q ? [el("div", { class: "badge bad" }, "error"), valueBlock(q.error)] : valueBlock(q.result);
      return el("div", { class: s === step ? "here" : "" }, el("h3", null, title + " · step " + s[0]),
        el("div", { class: "label" }, el("code", null, String(q.toolName)), " (" + q.toolCallId + ")"), body);
    };
    return [el("div", { class: "pair" }, side(call, "tool call"), side(result, "tool result"))];
  }
  function kv(rows) { return el("div", { class: "kv" }, rows.flatMap(([k, v]) => [el("div", { class: "k" }, k), el("div", null, v)])); }
  function stepBody(key, step) {
    const p = step[4];
    const extra = [];
    const rep = reportAt(key, step[0]);
    if (rep) extra.push(rep);
    switch (step[1]) {
      case "model_input": return extra.concat(inputBody(step));
      case "model_output": return extra.concat(outputBody(p));
      case "tool_call": case "tool_result": return extra.concat(toolPair(key, step));
      default:
        if (p && typeof p === "object" && !Array.isArray(p))
          return extra.concat([kv(Object.entries(p).map(([k, v]) => [k, typeof v === "string" ? marked(v) : JSON.stringify(v)]))]);
        return extra.concat([valueBlock(p)]);
    }
  }

  // -- the current view -------------------------------------------------------------------
  let current = DATA.main;
  let shown = []; // indexes of steps listed (all, or the search's matches)
  let built = 0;
  const opened = new Set();

  function header(key) {
    const run = DATA.runs[key];
    const chain = run.verify.ok
      ? el("div", { class: "v good", id: "chain" }, "verifies")
      : el("div", { class: "v bad", id: "chain" }, "FAILS (" + plural(run.verify.count, "problem") + ")");
    const parentKey = Object.keys(DATA.runs).find((k) => DATA.runs[k].id === run.parentId && k !== key);
    const parentName = parentKey ? el("a", { on: { click: () => go(parentKey) } }, run.parentId) : run.parentId;
    const lineage = run.parentId
      ? [el("div", { class: "v", id: "lineage" }, "fork of ", parentName), el("div", { class: "sub" }, "cut at step " + (run.forkStep === null ? "?" : run.forkStep) + (run.forkedFromStepId ? " (" + run.forkedFromStepId + ")" : ""))]
      : [el("div", { class: "v", id: "lineage" }, "original run")];
    const fig = (k, v, id, cls) => el("div", { class: "figure" }, el("div", { class: "k" }, k), el("div", { class: "v " + (cls || ""), id }, v));
    const head = clear($("head"));
    head.append(
      el("h1", null, "run ", el("span", { id: "run-id" }, run.id)),
      el("div", { class: "sub" }, run.file ? run.file + " · " : "", "trace format v" + run.version + " · " + plural(run.stepCount, "step")),
      el("div", { class: "figures" },
        fig("recorded", when(run.createdAt), "recorded"),
        fig("duration", span(run.durationMs), "duration"),
        fig("model calls", String(run.modelCalls), "model-calls"),
        fig("tool calls", String(run.toolCalls), "tool-calls"),
        run.tokens ? fig("tokens", run.tokens.input.toLocaleString("en-US") + " in / " + run.tokens.output.toLocaleString("en-US") + " out", "tokens") : null,
        fig("how it ended", run.outcome.replace(/^ended: /, ""), "ended", run.terminal && run.terminal.event === "run_completed" ? "good" : "bad"),
        el("div", { class: "figure" }, el("div", { class: "k" }, "hash chain"), chain, run.verify.ok ? null : el("div", { class: "sub" }, run.verify.problems[0] || "")),
        el("div", { class: "figure" }, el("div", { class: "k" }, "lineage"), lineage)));
    document.title = "blackbox · " + run.id;
  }

  function banner(key) {
    const box = $("banner");
    clear(box);
    box.hidden = key === DATA.main;
    if (box.hidden) return;
    const run = DATA.runs[key];
    const node = findFork(DATA.forks, key);
    box.append(el("strong", null, key === (DATA.diff && DATA.diff.b) ? "the other run of the diff: " : "a fork: "), run.id,
      node ? " — cut at step " + node.fork_step + "; first divergence from its parent: " + (node.first_divergence ? "step " + node.first_divergence.index + " (" + node.first_divergence.kind + "): " + node.first_divergence.explanation : "none") : "",
      " ", el("a", { href: "#", on: { click: (e) => { e.preventDefault(); go(DATA.main); } } }, "back to " + DATA.runs[DATA.main].id));
  }
  function findFork(nodes, key) {
    for (const n of nodes) { if (n.key === key) return n; const f = findFork(n.children, key); if (f) return f; }
    return null;
  }

  function chart(key) {
    const run = DATA.runs[key];
    const steps = stepsOf(key);
    const box = clear($("chart"));
    const legend = clear($("legend"));
    for (const t of TYPES) legend.append(el("span", null, el("span", { class: "swatch" }), t));
    Array.from(legend.querySelectorAll(".swatch")).forEach((s, i) => { s.style.background = COLORS[TYPES[i]]; });
    legend.append(el("span", null, "bars: each model call from its request to its answer (latency); overlapping calls get their own lanes"));
    let end = 0;
    for (const s of steps) end = Math.max(end, s[2] - run.origin);
    for (const c of run.calls) end = Math.max(end, c[3]);
    const total = end || 1;
    const pct = (ms) => Math.min(100, Math.max(0, (ms / total) * 100)) + "%";
    const at = (ms) => "min(" + pct(ms) + ", calc(100% - 3px))"; // a mark at the very end stays in view
    // Other steps: ticks in one lane.
    const ticks = el("div", { class: "lane" }, el("span", { class: "lane-label" }, ""));
    for (const s of steps) {
      if (s[1] === "model_input" || s[1] === "model_output") continue;
      const t = el("div", { class: "tick", title: "step " + s[0] + " " + s[1] + " " + offset(s[2] - run.origin) + ": " + s[3], on: { click: () => reveal(s[0]) } });
      t.style.left = at(s[2] - run.origin);
      t.style.background = COLORS[s[1]] || "var(--muted)";
      ticks.append(t);
    }
    box.append(ticks);
    // Model calls: the first lane that is free when the call starts.
    const lanes = [];
    const laneEls = [];
    for (const c of run.calls.slice().sort((a, b) => a[2] - b[2])) {
      let lane = lanes.findIndex((endAt) => endAt <= c[2]);
      if (lane === -1) { lane = lanes.length; lanes.push(0); laneEls.push(el("div", { class: "lane" })); }
      lanes[lane] = c[3];
      const summary = steps[c[1] === null ? c[0] : c[1]][3];
      const bar = el("div", { class: "bar" + (c[1] === null ? " open-bar" : ""), "data-step": c[0],
        title: "model call at step " + c[0] + ": " + offset(c[2]) + " → " + offset(c[3]) + " (" + span(c[3] - c[2]) + ")\n" + summary,
        on: { click: () => reveal(c[0]) } });
      bar.style.left = at(c[2]);
      bar.style.width = "max(" + pct(c[3] - c[2]) + ", 3px)";
      laneEls[lane].append(bar);
    }
    for (const l of laneEls) box.append(l);
    const axis = el("div", { class: "axis" });
    for (const f of [0, 0.25, 0.5, 0.75, 1]) { const a = el("span", null, offset(total * f)); a.style.left = f * 100 + "%"; axis.append(a); }
    box.append(axis);
  }

  function row(key, step) {
    const run = DATA.runs[key];
    const badges = [];
    if (run.parentId && run.forkStep === step[0]) badges.push(el("span", { class: "badge cut" }, "fork cut"));
    const rep = DATA.report && key === DATA.main ? DATA.report : null;
    if (rep && rep.first_divergence && rep.first_divergence.step === step[0]) badges.push(el("span", { class: "badge bad" }, "replay diverged here"));
    if (rep && (rep.incomplete || []).includes(step[0])) badges.push(el("span", { class: "badge" }, "never asked for in the replay"));
    if (DATA.diff && !DATA.diff.identical && (key === DATA.diff.a || key === DATA.diff.b) && DATA.diff.divergence.index === step[0])
      badges.push(el("span", { class: "badge bad" }, "first divergence (diff)"));
    const node = el("div", { class: "step t-" + step[1], "data-index": step[0] });
    const flip = () => toggle(node, key, step);
    const keys = (e) => { if (e.key === "Enter" || e.key === " ") { e.preventDefault(); flip(); } };
    const head = el("div", { class: "head", role: "button", tabindex: "0", "aria-expanded": "false", on: { click: flip, keydown: keys } },
      el("span", { class: "idx" }, String(step[0])), el("span", { class: "type" }, step[1]),
      el("span", { class: "when" }, offset(step[2] - run.origin)), el("span", { class: "summary" }, marked(step[3])), el("span", null, badges));
    node.append(head);
    if (opened.has(step[0])) toggle(node, key, step, true);
    return node;
  }
  function toggle(node, key, step, force) {
    const body = node.querySelector(":scope > .body");
    const head = node.querySelector(":scope > .head");
    if (body && !force) { body.remove(); node.classList.remove("open"); head.setAttribute("aria-expanded", "false"); opened.delete(step[0]); return; }
    if (body) body.remove();
    node.append(el("div", { class: "body" }, stepBody(key, step)));
    node.classList.add("open");
    head.setAttribute("aria-expanded", "true");
    opened.add(step[0]);
  }

  function list(key) {
    const steps = stepsOf(key);
    shown = query ? steps.map((s, i) => i).filter((i) => matches(key, i)) : steps.map((s, i) => i);
    built = 0;
    clear($("steps"));
    $("search-count").textContent = query ? shown.length + " of " + plural(steps.length, "step") + " match" : plural(steps.length, "step");
    more(key);
  }
  function more(key, upto) {
    const steps = stepsOf(key);
    const run = DATA.runs[key];
    const box = $("steps");
    const frag = document.createDocumentFragment();
    const stop = Math.min(shown.length, Math.max(built + BATCH, upto === undefined ? 0 : upto + 1));
    for (; built < stop; built++) {
      const step = steps[shown[built]];
      if (!query && run.parentId && run.forkStep === step[0] && step[0] > 0)
        frag.append(el("div", { class: "cut-line" }, "── forked here: the steps above are " + run.parentId + "'s, copied; the steps below are this run's own ──"));
      frag.append(row(key, step));
    }
    box.append(frag);
    const moreBox = clear($("more"));
    if (built < shown.length) moreBox.append(el("button", { type: "button", id: "more-button", on: { click: () => more(key) } }, "show " + Math.min(BATCH, shown.length - built) + " more of " + (shown.length - built)));
  }
  // Open a step (building rows down to it first) and scroll to it.
  function reveal(index) {
    if (query) { query = ""; $("search").value = ""; list(current); }
    const pos = shown.indexOf(index);
    if (pos === -1) return;
    if (pos >= built) more(current, pos);
    const node = $("steps").querySelector('.step[data-index="' + index + '"]');
    if (!node) return;
    if (!node.classList.contains("open")) toggle(node, current, stepsOf(current)[index]);
    node.scrollIntoView({ block: "center" });
  }

  // -- forks ------------------------------------------------------------------------------
  function forks(key) {
    const box = clear($("forks"));
    const nodes = key === DATA.main ? DATA.forks : (findFork(DATA.forks, key) || { children: [] }).children;
    box.hidden = !nodes.length && !(DATA.skipped || []).length;
    if (box.hidden) return;
    box.className = "panel";
    box.append(el("h2", null, "Forks of " + DATA.runs[key].id + " (" + countForks(nodes) + ")"),
      el("div", { class: "sub" }, "found beside the cassette, as `blackbox forks` finds them; click one to open it"), tree(nodes));
    for (const s of DATA.skipped || []) box.append(el("div", { class: "sub" }, "skipped " + s.file + ": " + s.why));
  }
  function countForks(nodes) { return nodes.reduce((n, f) => n + 1 + countForks(f.children), 0); }
  function tree(nodes) {
    return el("ul", { class: "tree" }, nodes.map((f) => el("li", null,
      el("a", { class: "fork", "data-run": f.key, on: { click: (e) => { e.preventDefault(); go(f.key); } } }, f.run),
      el("span", { class: "sub" }, " " + (f.file || "")),
      el("div", null, "cut at step " + f.fork_step + " · " + f.outcome + " · " + plural(f.steps, "step") + " · delta " + signed(f.delta.steps) + " steps, " + signed(f.delta.errors) + " errors",
        f.diverged_before_cut ? el("span", { class: "badge bad" }, "diverged before the cut") : null),
      el("div", { class: "sub" }, "first divergence: " + (f.first_divergence ? "step " + f.first_divergence.index + " (" + f.first_divergence.kind + "): " + f.first_divergence.explanation : "none")),
      f.children.length ? tree(f.children) : null)));
  }
  function signed(n) { return (n > 0 ? "+" : "") + n; }
  function exchangesPanel(key) {
    const box = clear($("exchanges"));
    const ex = DATA.runs[key].exchanges;
    box.hidden = !ex;
    if (box.hidden) return;
    box.className = "panel" + (ex.error ? " alarm" : "");
    box.append(el("h2", null, "Other HTTP exchanges (" + ex.rows.length + ")"),
      el("div", { class: "sub" }, ex.error || "kept beside the cassette and served by an offline replay; not model calls"));
    if (ex.rows.length) {
      box.append(el("table", { class: "exchanges" },
        el("tr", null, ["#", "method", "status", "size", "time", "where"].map((h) => el("th", null, h))),
        ex.rows.map((r) => el("tr", { class: r.notKept ? "not-kept" : "" },
          el("td", null, String(r.index)), el("td", null, r.method), el("td", null, String(r.status)), el("td", null, size(r.bytes)),
          el("td", null, offset(r.offsetMs)), el("td", null, r.host + r.path, r.notKept ? el("span", { class: "badge bad" }, "body not kept") : null)))));
    }
    for (const n of ex.notKept) box.append(el("div", { class: "sub" }, "not kept: " + n));
  }

  function mediaPanel(key) {
    const box = clear($("media"));
    const m = DATA.runs[key].media;
    box.hidden = !m;
    if (box.hidden) return;
    box.className = "panel" + (m.error ? " alarm" : "");
    box.append(el("h2", null, "Media (" + m.rows.filter((r) => r.kept).length + " stored once each)"),
      el("div", { class: "sub" }, m.error || "images, documents and audio the steps name by SHA-256, kept beside the cassette"));
    if (m.rows.length) {
      box.append(el("table", { class: "exchanges" },
        el("tr", null, ["type", "size", "sha256", ""].map((h) => el("th", null, h))),
        m.rows.map((r) => el("tr", { class: r.kept ? "" : "not-kept" },
          el("td", null, r.mediaType || "?"), el("td", null, size(r.size || 0)), el("td", null, el("code", null, r.sha256)),
          el("td", null, r.src ? el("img", { class: "media", src: r.src, alt: r.mediaType + " " + r.sha256.slice(0, 12) }) : null,
            r.kept ? null : el("span", { class: "badge bad" }, "not kept: " + r.why))))));
    }
  }

  // -- diff -------------------------------------------------------------------------------
  function resolve(value, segments) {
    let v = value;
    for (const s of segments) { if (v === null || typeof v !== "object") return undefined; v = v[s]; }
    return v;
  }
  function pathText(segments) {
    return "payload" + segments.map((s) => typeof s === "number" ? "[" + s + "]" : /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(s) ? "." + s : "[" + JSON.stringify(s) + "]").join("");
  }
  function excerpt(text, at) {
    const chars = Array.from(text);
    const from = Math.max(0, at - 300);
    const piece = chars.slice(from, at + 300).join("");
    const box = el("pre", { class: "text" });
    if (from) box.append("…");
    box.append(marked(piece, at - from));
    if (chars.length > at + 300) box.append("…");
    return box;
  }
  function diffPanel() {
    const box = clear($("diff"));
    const d = DATA.diff;
    box.hidden = !d || current !== DATA.main;
    if (box.hidden) return;
    box.className = "panel" + (d.identical ? "" : " alarm");
    const a = DATA.runs[d.a], b = DATA.runs[d.b];
    const sa = stepsOf(d.a), sb = stepsOf(d.b);
    box.append(el("h2", null, "Diff: a = " + a.id + ", b = " + b.id),
      el("div", { class: "sub" }, "a: " + (a.file || a.id) + " (" + plural(sa.length, "step") + ") · b: " + (b.file || b.id) + " (" + plural(sb.length, "step") + ") · ",
        el("a", { on: { click: () => go(d.b) } }, "open b")));
    if (d.identical) { box.append(el("p", { id: "diff-explanation" }, "identical: the same " + plural(sa.length, "step") + " in both (every hash matches)")); return; }
    const dv = d.divergence;
    box.append(el("p", { id: "diff-explanation" }, el("strong", null, "first divergence at step " + dv.index + " (" + dv.kind + "): "), dv.explanation));
    if (dv.segments && dv.index < sa.length && dv.index < sb.length) box.append(fieldDiff(dv, sa[dv.index], sb[dv.index]));
    const grid = el("div", { class: "diffgrid", id: "diff-grid" }, el("div", { class: "hdr" }, "#"), el("div", { class: "hdr" }, "a: " + a.id), el("div", { class: "hdr" }, "b: " + b.id));
    if (dv.index > 0) {
      const same = el("div", { class: "same" }, dv.index > 1 ? "steps 0–" + (dv.index - 1) + " are the same in both runs" : "step 0 is the same in both runs");
      grid.append(el("div", { class: "same" }, "…"), same, el("div", { class: "same" }, "(same hashes)"));
    }
    const rows = Math.max(sa.length, sb.length);
    let n = dv.index;
    const addRows = (upto) => {
      for (; n < Math.min(rows, upto); n++) {
        const i = n;
        const cls = i === dv.index ? "divergent" : "";
        const cell = (steps, key) => i < steps.length
          ? el("div", { class: cls, title: steps[i][3] }, el("a", { on: { click: () => go(key, i) } }, "open"), " ", el("span", { class: "type" }, steps[i][1] + " "), steps[i][3])
          : el("div", { class: cls + " absent" }, "(ended)");
        grid.append(el("div", { class: cls }, String(i)), cell(sa, d.a), cell(sb, d.b));
      }
    };
    addRows(dv.index + 40);
    box.append(grid);
    if (n < rows) {
      const btn = el("button", { type: "button", on: { click: () => { addRows(rows); btn.remove(); } } }, "show the other " + (rows - n) + " rows");
      box.append(btn);
    }
  }
  function fieldDiff(dv, stepA, stepB) {
    const va = resolve(payloadOf(stepA), dv.segments), vb = resolve(payloadOf(stepB), dv.segments);
    const side = (v, who) => {
      let body;
      if (typeof v === "string" && dv.atChar !== null) body = excerpt(v, dv.atChar);
      else body = el("pre", { class: "json" }, el("mark", { class: "hl" }, v === undefined ? "(absent)" : json(v)));
      return el("div", null, el("h3", null, who + " · step " + stepA[0]), body);
    };
    return el("div", { class: "field", id: "diff-field" },
      el("div", null, "differing field: ", el("code", { class: "path" }, pathText(dv.segments)), dv.atChar !== null ? " — first differing character: " + dv.atChar : ""),
      el("div", { class: "sides" }, side(va, "a"), side(vb, "b")));
  }

  // -- a replay report ----------------------------------------------------------------------
  function reportPanel() {
    const box = clear($("report"));
    const r = DATA.report;
    box.hidden = !r || current !== DATA.main;
    if (box.hidden) return;
    box.className = "panel" + (r.verdict === "ok" ? "" : " alarm");
    const fd = r.first_divergence;
    box.append(el("h2", null, "Replay report: " + r.verdict),
      el("div", { class: "sub" }, r.file),
      kv([["model calls served", r.model_calls_served + " of " + r.model_calls + " (" + r.steps_served + " of " + r.steps + " steps)"],
        ["exhausted calls", String(r.exhausted_calls)], ["divergences", String(r.divergences)],
        ["never asked for", (r.incomplete || []).length ? "model_input step " + r.incomplete.join(", ") : "none"],
        ["unmatched exchanges", (r.unmatched_exchanges || []).length ? r.unmatched_exchanges.map((u) => u.method + " " + u.host + u.path).join(", ") : "none"]]),
      fd ? el("p", null, "diverged at ", el("a", { id: "report-step", on: { click: () => reveal(fd.step) } }, "step " + fd.step), ": " + (fd.message || "")) : null,
      r.divergences > 1 ? el("div", { class: "sub" }, "the report keeps the first divergence in full; " + r.divergences + " requests were refused in all") : null);
  }
  function reportAt(key, index) {
    const r = DATA.report;
    if (!r || key !== DATA.main || !r.first_divergence || r.first_divergence.step !== index) return null;
    const fd = r.first_divergence, df = fd.difference;
    const box = el("div", { class: "panel alarm report-at" }, el("strong", null, "the replay left the recorded path here: "), fd.message || "");
    if (df) {
      const at = df.at_char === null || df.at_char === undefined ? null : df.at_char - Math.max(0, df.at_char - 40);
      const quote = (q) => q === null || q === undefined ? el("pre", { class: "absent" }, "(absent)") : at === null ? textBlock(q) : el("pre", { class: "text" }, marked(q, at));
      box.append(el("div", { class: "sides" }, el("div", null, el("h3", null, "recorded"), quote(df.recorded)), el("div", null, el("h3", null, "the agent sent"), quote(df.got))));
    }
    return box;
  }

  // -- navigation -------------------------------------------------------------------------
  function go(key, index) {
    location.hash = "run=" + encodeURIComponent(key) + (index === undefined ? "" : "&step=" + index);
  }
  function route() {
    const params = new URLSearchParams(location.hash.slice(1));
    const key = params.get("run");
    const next = key && DATA.runs[key] ? key : DATA.main;
    if (next !== current || !$("head").firstChild) {
      current = next;
      opened.clear();
      render();
    }
    const step = params.get("step");
    if (step !== null && /^\d+$/.test(step)) reveal(Number(step));
  }
  function render() {
    header(current); banner(current); reportPanel(); diffPanel(); forks(current); exchangesPanel(current); mediaPanel(current); chart(current); list(current);
  }

  let timer = null;
  $("search").addEventListener("input", (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => { query = e.target.value.trim().toLowerCase(); list(current); }, 150);
  });
  $("expand-all").addEventListener("click", () => {
    for (const node of $("steps").querySelectorAll(".step:not(.open)")) toggle(node, current, stepsOf(current)[Number(node.dataset.index)]);
  });
  $("collapse-all").addEventListener("click", () => { opened.clear(); list(current); });
  window.addEventListener("hashchange", route);
  $("foot").textContent = DATA.generator + " · one self-contained page: it loads nothing from anywhere";
  route();
  document.body.dataset.ready = String(Math.round(performance.now()));
  // After the first frame is laid out and painted: what the load-time benchmark measures to.
  requestAnimationFrame(() => setTimeout(() => { document.body.dataset.painted = String(Math.round(performance.now())); }, 0));
})();
