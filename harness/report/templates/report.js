(function () {
  "use strict";
  // The page holds its runs as data (script#runs-data, JSON) and each run's details compressed
  // (script.run-chunk: base64 of gzip of a JSON array, a run's details each, see _details.py).
  // Rows are made a page at a time and a run's details drawn when it is opened, so a report of
  // thousands of runs opens and filters at once. Every string from the data goes in as a text node
  // (el), never as markup: what a model or a tool wrote stays inert whatever it holds.
  // Nothing here uses the network.
  var PAGE = 200;
  var dataEl = document.getElementById("runs-data");
  var runs = dataEl ? JSON.parse(dataEl.textContent) : [];
  var byN = {};
  runs.forEach(function (run) { byN[run.n] = run; });
  var chunks = Array.prototype.slice.call(document.querySelectorAll("script.run-chunk"));
  var inflated = {};

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { node.setAttribute(k, attrs[k]); });
    (children || []).forEach(function (c) {
      if (c !== null && c !== undefined) { node.appendChild(typeof c === "string" ? document.createTextNode(c) : c); }
    });
    return node;
  }
  function badge(status) { return el("span", { "class": "badge status-" + status }, [status]); }
  function cost(run) { return run.unpriced ? { "class": "num unpriced" } : { "class": "num" }; }
  // A judge score whose repeated verdicts disagree: flagged where the run is listed, not only inside it.
  function disagreeing(run) {
    return (run.disagree || []).map(function (name) {
      return el("span", { "class": "tag disagree", title: "the judge's repeated verdicts disagree: read them before trusting the score" },
        [name + ": verdicts disagree"]);
    });
  }
  function plural(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  function summaryRow(run) {
    var where = el("td", { "class": "findings-cell" }, run.findings.map(function (f) {
      var attrs = { href: f.href, title: f.message };
      if (f.expected) { attrs["class"] = "expected"; }
      return el("a", attrs, [el("span", { "class": "sev-" + f.severity }, [f.code]), " " + f.where,
        f.expected ? " " : null, f.expected ? el("span", { "class": "tag" }, ["expected"]) : null]);
    }));
    disagreeing(run).forEach(function (tag) { where.appendChild(tag); });
    (run.unmet || []).forEach(function (line) { where.appendChild(el("span", { "class": "unmet bad" }, [line])); });
    if (run.error) { where.appendChild(el("span", { "class": "bad" }, [run.error])); }
    return el("tr", { "data-run": "run-" + run.n, "data-status": run.status, "data-scenario": run.scenario }, [
      el("td", { "class": "num" }, [String(run.n)]),
      el("td", {}, [el("a", { href: "#run-" + run.n }, [run.id])]),
      el("td", {}, [badge(run.status)]),
      el("td", {}, [run.scenario]), el("td", {}, [run.model]), el("td", {}, [run.effort]), el("td", {}, [run.mode]),
      el("td", { "class": "num" }, [String(run.steps)]), el("td", { "class": "num" }, [run.tokens]),
      el("td", cost(run), [run.cost]), el("td", { "class": "num" }, [String(run.findings.length)]), where]);
  }

  // A run's place in the Runs section, made the first time it is asked for.
  function runElement(n) {
    var existing = document.getElementById("run-" + n);
    var run = byN[n];
    if (existing || !run) { return existing; }
    var details = el("details", { "class": "run", id: "run-" + n }, [
      el("summary", {}, ["#" + n + " ", el("b", {}, [run.id]), " ", badge(run.status),
        " · " + plural(run.steps, "step") + " · ", el("span", run.unpriced ? { "class": "unpriced" } : {}, [run.cost]),
        " · " + plural(run.findings.length, "finding")].concat(disagreeing(run).reduce(function (out, tag) {
          return out.concat([" · ", tag]);
        }, []))),
      el("div", { "class": "run-body" })]);
    var list = document.getElementById("runs-open");
    var after = Array.prototype.find.call(list.children, function (c) { return +c.id.slice(4) > n; });
    list.insertBefore(details, after || null);
    return details;
  }
  function chunkOf(n) {
    for (var i = 0; i < chunks.length; i++) {
      var first = +chunks[i].getAttribute("data-first"), count = +chunks[i].getAttribute("data-count");
      if (n >= first && n < first + count) { return i; }
    }
    return -1;
  }
  function details(i) {
    if (!inflated[i]) {
      var bytes = Uint8Array.from(atob(chunks[i].textContent.trim()), function (c) { return c.charCodeAt(0); });
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      inflated[i] = new Response(stream).text().then(JSON.parse);
    }
    return inflated[i];
  }

  // A run's details, drawn from its data as the harness's own template draws a step on the diff page.
  function pre(text) { return el("pre", {}, [text || ""]); }
  function tag(text) { return el("span", { "class": "tag" }, [text]); }
  function muted(text) { return el("span", { "class": "muted" }, [text]); }
  function bad(text) { return el("span", { "class": "bad" }, [text]); }
  function code(text) { return el("code", { "class": "muted" }, [text || ""]); }
  function findingItem(f) {
    return el("li", f.x ? { "class": "expected" } : {}, [
      el("a", { href: f.h }, [el("span", { "class": "sev-" + f.s }, [f.c]), " " + f.w]),
      f.x ? " " : null, f.x ? tag("expected by the scenario") : null, ": " + f.m]);
  }
  function toolResult(r, rc) {
    if (!r) { return el("div", { "class": "result missing" }, ["no tool_result for this tool_use in the thread"]); }
    return el("div", { "class": "result" + (r.err ? " is-error" : "") }, [tag("tool_result" + (r.err ? " · is_error" : "")),
      " ", muted("sent at step " + r.step), rc > 1 ? " " : null, rc > 1 ? bad("answered " + rc + " times") : null, pre(r.t)]);
  }
  // `anchor`: the step's, which a tool_use's id is put after (what a tool_result's link points at).
  function block(b, anchor) {
    var err = b.err ? " · is_error" : "";
    switch (b.k) {
      case "text": return el("div", { "class": "blk text" }, [tag("text"), pre(b.t)]);
      case "thinking": return el("details", { "class": "blk thinking" }, [el("summary", {}, [tag("thinking"),
        " " + b.len + " chars · ", b.sig ? "signature present" : bad("no signature")]), pre(b.t)]);
      case "redacted_thinking": return el("div", { "class": "blk" }, [tag("redacted_thinking"), " ", muted("encrypted, kept as is")]);
      case "tool_use": return el("div", { "class": "blk tool", id: anchor + "-tu-" + (b.id || "") }, [tag("tool_use"), " ",
        el("b", {}, [b.n || ""]), " ", code(b.id), pre(b.t), toolResult(b.r, b.rc)]);
      case "tool_result": return el("div", { "class": "blk result" + (b.err ? " is-error" : "") }, [tag("tool_result" + err), " ",
        code(b.id), " ", bad("answers no tool_use of this thread"), pre(b.t)]);
      case "ref": return el("div", { "class": "blk" }, [tag("tool_result" + err), " ", el("a", { href: "#" + b.a }, [b.id || ""]), " ",
        muted("shown with its tool_use")]);
      case "server_tool_use": return el("div", { "class": "blk server" }, [tag("server_tool_use"), " ", el("b", {}, [b.n || ""]), " ",
        code(b.id), pre(b.t)]);
      case "server_result": return el("details", { "class": "blk server" + (b.err ? " is-error" : "") }, [el("summary", {}, [tag(b.n),
        " ", code(b.id), b.err ? " " : null, b.err ? bad("error") : null]), pre(b.t)]);
      default: return el("details", { "class": "blk" }, [el("summary", {}, [tag(b.n || "block")]), pre(b.t)]);
    }
  }
  function step(s) {
    var att = s.att || [], from = "[" + (s.from || 0) + "]";
    var blocks = function (list) { return (list || []).map(function (b) { return block(b, s.a); }); };
    var request = [el("h5", {}, ["request · new messages from " + from]),
      s.edited ? el("p", { "class": "bad" }, ["history edited: the request no longer starts with the previous request's messages (differs from " + from + ")"]) : null];
    (s.delta || []).forEach(function (m) {
      request.push(el("div", { "class": "msg" }, [el("span", { "class": "role" }, ["[" + (m.i || 0) + "] " + m.role])].concat(
        m.prev ? [" ", muted("the previous response, unedited")] : blocks(m.b))));
    });
    return el("article", { "class": "step" + (s.f ? " has-findings" : ""), id: s.a }, [
      el("header", {}, [el("b", {}, ["step " + s.step]), el("span", {}, ["call " + s.call]), el("span", {}, [s.model]),
        el("span", {}, ["stop_reason: ", el("b", {}, [s.stop])]), el("span", {}, [s.usage]), el("span", {}, ["cost " + s.cost]),
        el("span", {}, ["latency " + s.lat]),
        el("span", att.length > 1 ? { "class": "bad" } : {}, ["attempts " + att.length + (att.length > 1 ? ": " + att.join(", ") : "")])]),
      s.f ? el("ul", { "class": "step-findings" }, s.f.map(findingItem)) : null,
      "sys" in s ? el("details", {}, [el("summary", { "class": "muted" }, ["system prompt" + (s.step > 1 ? " (changed)" : "")]), pre(s.sys)]) : null,
      "tools" in s ? el("div", { "class": "muted" }, ["tools" + (s.step > 1 ? " (changed)" : "") + ": " + s.tools]) : null,
      el("div", { "class": "cols" }, [el("div", { "class": "request" }, request),
        el("div", { "class": "response" }, [el("h5", {}, ["response"]), s.err ? el("p", { "class": "bad" }, [s.err]) : null].concat(blocks(s.resp)))])]);
  }
  function runDetails(d) {
    var nodes = [el("div", { "class": "muted" }, [d.head])], o = d.outcome;
    if (o) {
      nodes.push(el("div", {}, ["outcome: ", el("b", {}, [o.status]), o.limit ? " (limit " + o.limit + ")" : null, " " + (o.reason || ""),
        o.final ? pre(o.final) : null]));
    }
    if (d.error) { nodes.push(el("p", { "class": "bad" }, ["harness error: " + d.error])); }
    if (d.exp) {
      nodes.push(el("ul", {}, d.exp.map(function (e) { return el("li", {}, [e.ok ? "✓" : bad("✗"), " " + e.name + ": " + (e.m || "")]); })));
    }
    if (d.scores) {
      nodes.push(el("h4", {}, ["Scores"]), el("table", { "class": "scores" }, [el("tr", {}, [el("th", {}, ["score"]), el("th", {}, ["value"]),
        el("th", {}, ["why"])])].concat(d.scores.map(function (s) {
        return el("tr", s.disagree ? { "class": "disagree" } : {}, [el("td", {}, [s.name, s.kind ? " " : null,
          s.kind ? muted("(" + s.kind + ")") : null, s.disagree ? " " : null, s.disagree ? tag("verdicts disagree") : null]),
          el("td", { "class": "num" }, ["v" in s ? s.v : bad("no value"), s.label ? " " + s.label : null]), el("td", {}, [s.why || ""])]);
      }))));
    }
    if (d.f) { nodes.push(el("h4", {}, ["Findings"]), el("ul", {}, d.f.map(findingItem))); }
    if (!d.trace) { nodes.push(el("p", { "class": "muted" }, ["no trace stored for this run"])); return nodes; }
    (d.notes || []).forEach(function (note) { nodes.push(el("p", { "class": "muted" }, ["note: " + note])); });
    (d.threads || []).forEach(function (t) {
      var steps = t.steps || [];
      nodes.push(el("section", { "class": "thread" + (t.parent ? " sub" : ""), id: t.a }, [
        el("h4", {}, ["thread " + t.id + (t.key ? " “" + t.key + "”" : "") + (t.parent ? " · subagent of thread " + t.parent : "") +
          " · " + plural(steps.length, "step")])].concat(steps.map(step))));
    });
    return nodes;
  }
  // Resolves once run n is on the page with its details (at once when they already are).
  function render(n) {
    var run = runElement(n);
    var body = run ? run.querySelector(".run-body") : null;
    var i = chunkOf(n);
    if (!body || body.hasAttribute("data-rendered") || i < 0) { return Promise.resolve(); }
    return details(i).then(function (list) {
      if (!body.hasAttribute("data-rendered")) {
        var nodes = document.createDocumentFragment();
        runDetails(list[n - +chunks[i].getAttribute("data-first")]).forEach(function (node) { nodes.appendChild(node); });
        body.appendChild(nodes);
        body.setAttribute("data-rendered", "");
      }
    });
  }
  document.addEventListener("toggle", function (ev) {
    var target = ev.target;
    if (target.classList && target.classList.contains("run") && target.open) { render(+target.id.slice(4)); }
    if (target.id === "ledger-runs" && target.open) { ledgerRows(target.querySelector("tbody")); }
  }, true);

  function ledgerRows(tbody) {
    if (tbody.children.length) { return; }
    var rows = document.createDocumentFragment();
    runs.forEach(function (run) {
      rows.appendChild(el("tr", {}, [el("td", {}, [el("a", { href: "#run-" + run.n }, [run.id])])].concat(
        run.usage.map(function (u) { return el("td", { "class": "num" }, [u]); }), [el("td", cost(run), [run.cost])])));
    });
    tbody.appendChild(rows);
  }

  // One case in two settings side by side (#pair-<a>-<b>, two run numbers): both runs' steps in call
  // order, a row per step, copied from the runs' bodies with their ids and links prefixed so that a
  // tool_result's link to its tool_use lands in the copy.
  function callIndex(step) { var m = /-call-(\d+)$/.exec(step.id); return m ? +m[1] : 0; }
  function copyOf(node) {
    var copy = node.cloneNode(true);
    [copy].concat(Array.prototype.slice.call(copy.querySelectorAll("[id]"))).forEach(function (e) {
      if (e.id) { e.id = "pair-" + e.id; }
    });
    Array.prototype.forEach.call(copy.querySelectorAll("a[href^='#run-']"), function (a) {
      a.setAttribute("href", "#pair-" + a.getAttribute("href").slice(1));
    });
    return copy;
  }
  function pairView(id, a, b) {
    return Promise.all([render(a), render(b)]).then(function () {
      var box = document.getElementById("pair-view");
      if (!box || !byN[a] || !byN[b]) { return; }
      var sides = [a, b].map(function (n) {
        return Array.prototype.slice.call(document.querySelectorAll("#run-" + n + " article.step"))
          .sort(function (x, y) { return callIndex(x) - callIndex(y); });
      });
      box.textContent = "";
      box.appendChild(el("h3", { id: id }, ["Side by side: ", byN[a].id, " · ", byN[b].id]));
      box.appendChild(el("div", { "class": "cols" }, [el("h5", {}, [byN[a].model + " / " + byN[a].effort]),
        el("h5", {}, [byN[b].model + " / " + byN[b].effort])]));
      for (var i = 0; i < Math.max(sides[0].length, sides[1].length); i++) {
        box.appendChild(el("div", { "class": "cols" }, sides.map(function (steps) {
          return el("div", {}, [steps[i] ? copyOf(steps[i]) : el("p", { "class": "muted" }, ["(no such step)"])]);
        })));
      }
      box.hidden = false;
    });
  }

  // Links to a run or a step open the run and flash the target, so a finding in the summary
  // leads straight to where it happened.
  function openTo(id) {
    var pair = /^pair-(\d+)-(\d+)$/.exec(id || "");
    if (pair) { pairView(id, +pair[1], +pair[2]).then(function () { show(id); }); return; }
    var m = /^run-(\d+)(?:-|$)/.exec(id || "");
    (m ? render(+m[1]) : Promise.resolve()).then(function () { show(id); });
  }
  function show(id) {
    var target = id ? document.getElementById(id) : null;
    if (!target) { return; }
    for (var p = target; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
      if (p.hidden) { p.hidden = false; }
    }
    var old = document.querySelectorAll(".flash");
    for (var i = 0; i < old.length; i++) { old[i].classList.remove("flash"); }
    target.classList.add("flash");
    target.scrollIntoView({ block: "start" });
  }
  function fromHash() {
    if (location.hash.length <= 1) { return; }
    // A hand-typed or mangled hash ("#%E0") makes decodeURIComponent throw; ignore it, keep the page working.
    var id;
    try { id = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }
    openTo(id);
  }
  window.addEventListener("hashchange", fromHash);
  document.addEventListener("click", function (ev) {
    var a = ev.target && ev.target.closest ? ev.target.closest("a[href^='#']") : null;
    // Same hash twice fires no hashchange: open it by hand.
    if (a && a.getAttribute("href") === location.hash) { ev.preventDefault(); openTo(location.hash.slice(1)); }
  });

  var status = document.getElementById("filter-status");
  var scenario = document.getElementById("filter-scenario");
  var text = document.getElementById("filter-text");
  var count = document.getElementById("filter-count");
  var tbody = document.querySelector("#runs-table tbody");
  var more = document.getElementById("runs-more");
  var matching = runs, shown = 0;
  function showMore() {
    var rows = document.createDocumentFragment();
    matching.slice(shown, shown + PAGE).forEach(function (run) { rows.appendChild(summaryRow(run)); });
    tbody.appendChild(rows);
    shown = Math.min(matching.length, shown + PAGE);
    more.hidden = shown >= matching.length;
    more.textContent = "show " + Math.min(PAGE, matching.length - shown) + " more of " + (matching.length - shown);
  }
  function apply() {
    // Every word typed must be found, in any order: "opus-4-8-high refund" is one run's model and scenario.
    var s = status.value, sc = scenario.value, words = text.value.toLowerCase().split(/\s+/).filter(Boolean);
    matching = runs.filter(function (run) {
      return (!s || run.status === s) && (!sc || run.scenario === sc) &&
        words.every(function (w) { return run.search.indexOf(w) >= 0; });
    });
    var ok = {};
    matching.forEach(function (run) { ok[run.n] = true; });
    // Runs already opened below follow the filter too.
    Array.prototype.forEach.call(document.getElementById("runs-open").children, function (run) {
      run.hidden = !ok[+run.id.slice(4)];
    });
    tbody.textContent = "";
    shown = 0;
    showMore();
    count.textContent = matching.length + " of " + runs.length + " runs";
  }
  if (status && scenario && text && count && tbody && more) {
    status.addEventListener("change", apply);
    scenario.addEventListener("change", apply);
    text.addEventListener("input", apply);
    more.addEventListener("click", showMore);
    apply();
  }
  fromHash();
})();
