(function () {
  "use strict";
  // Each run's body is stored compressed (div.run-chunk: base64 of gzip of a JSON array of HTML,
  // rendered and escaped by the harness) and put in place the first time the run is opened, so a
  // page of thousands of runs opens at once. Inflating needs no network: DecompressionStream.
  var chunks = Array.prototype.slice.call(document.querySelectorAll("div.run-chunk"));
  var inflated = {};

  function chunkOf(n) {
    for (var i = 0; i < chunks.length; i++) {
      var first = +chunks[i].getAttribute("data-first"), count = +chunks[i].getAttribute("data-count");
      if (n >= first && n < first + count) { return i; }
    }
    return -1;
  }
  function bodies(i) {
    if (!inflated[i]) {
      var bytes = Uint8Array.from(atob(chunks[i].textContent.trim()), function (c) { return c.charCodeAt(0); });
      var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
      inflated[i] = new Response(stream).text().then(JSON.parse);
    }
    return inflated[i];
  }
  // Resolves once run n's body is on the page (at once when it already is).
  function render(n) {
    var run = document.getElementById("run-" + n);
    var body = run ? run.querySelector(".run-body") : null;
    var i = chunkOf(n);
    if (!body || body.hasAttribute("data-rendered") || i < 0) { return Promise.resolve(); }
    return bodies(i).then(function (list) {
      if (!body.hasAttribute("data-rendered")) {
        body.innerHTML = list[n - +chunks[i].getAttribute("data-first")];
        body.setAttribute("data-rendered", "");
      }
    });
  }
  document.addEventListener("toggle", function (ev) {
    var run = ev.target;
    if (run.classList && run.classList.contains("run") && run.open) { render(+run.id.slice(4)); }
  }, true);

  // Links to a step open the run (a collapsed <details>) and flash the step, so a finding
  // in the summary leads straight to where it happened.
  function openTo(id) {
    var m = /^run-(\d+)(?:-|$)/.exec(id || "");
    (m ? render(+m[1]) : Promise.resolve()).then(function () { show(id); });
  }
  function show(id) {
    var el = id ? document.getElementById(id) : null;
    if (!el) { return; }
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
      if (p.hidden) { p.hidden = false; }
    }
    var old = document.querySelectorAll(".flash");
    for (var i = 0; i < old.length; i++) { old[i].classList.remove("flash"); }
    el.classList.add("flash");
    el.scrollIntoView({ block: "start" });
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
  var rows = Array.prototype.slice.call(document.querySelectorAll("#runs-table tbody tr"));
  // Read once: attribute reads on every keystroke over thousands of rows are what made filtering slow.
  var index = rows.map(function (row) {
    return { row: row, status: row.getAttribute("data-status"), scenario: row.getAttribute("data-scenario"),
             search: row.getAttribute("data-search"), run: document.getElementById(row.getAttribute("data-run")),
             shown: !row.hidden };
  });
  function apply() {
    var s = status.value, sc = scenario.value, t = text.value.trim().toLowerCase(), shown = 0;
    index.forEach(function (entry) {
      var ok = (!s || entry.status === s) && (!sc || entry.scenario === sc) && (!t || entry.search.indexOf(t) >= 0);
      // Only rows whose state changes are touched: each write invalidates the layout.
      if (ok !== entry.shown) {
        entry.row.hidden = !ok;
        if (entry.run) { entry.run.hidden = !ok; }
        entry.shown = ok;
      }
      if (ok) { shown++; }
    });
    count.textContent = shown + " of " + rows.length + " runs";
  }
  if (status && scenario && text && count) {
    status.addEventListener("change", apply);
    scenario.addEventListener("change", apply);
    text.addEventListener("input", apply);
    apply();
  }
  fromHash();
})();
