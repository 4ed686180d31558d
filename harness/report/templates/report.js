(function () {
  "use strict";
  // Links to a step open the run (a collapsed <details>) and flash the step, so a finding
  // in the summary leads straight to where it happened.
  function openTo(id) {
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
  function apply() {
    var s = status.value, sc = scenario.value, t = text.value.trim().toLowerCase(), shown = 0;
    rows.forEach(function (row) {
      var ok = (!s || row.getAttribute("data-status") === s) &&
               (!sc || row.getAttribute("data-scenario") === sc) &&
               (!t || row.getAttribute("data-search").indexOf(t) >= 0);
      row.hidden = !ok;
      var run = document.getElementById(row.getAttribute("data-run"));
      if (run) { run.hidden = !ok; }
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
