// search.js — client-side search over functions, files, courses and note text.
// The index is two scripts (search-index.js, search-notes.js) assigning globals, loaded on first
// use with <script> elements, so search works from file:// where fetch() is refused.
// Note text and course titles are in the index in both languages: a query matches either,
// and a result shows the page's language (the other one when that is all there is).
// Words of the interface come from window.ANNOTATE_MESSAGES (messages.js, the site's catalogue).
// Results are built with textContent only: nothing from the index is parsed as HTML.
(function () {
  "use strict";
  var root = document.body.getAttribute("data-root") || "";
  var input = document.getElementById("q"), list = document.getElementById("qr");
  if (!input || !list) return;
  var loading = false, sel = -1, hits = [];

  function lang() { return document.documentElement.getAttribute("data-lang") === "en" ? "en" : "zh"; }
  function word(id) {
    var all = window.ANNOTATE_MESSAGES || {}, m = all[lang()] || {};
    // an id the catalogue lacks (a kind the index learned later) shows as its last part
    return m[id] || (all.en || {})[id] || id.replace(/^[a-z]+\./, "");
  }
  function pick(en, zh) { return (lang() === "zh" ? zh || en : en || zh) || ""; }

  // The index comes in two scripts: search-index.js (window.ANNOTATE_SEARCH: pages, a row per
  // definition as the index knows it, files) and search-notes.js (window.ANNOTATE_SEARCH_NOTES:
  // what the notes add to those rows, courses, traces), so that a note edit rewrites only the
  // small second one. Both load in parallel; the rows are merged once, when both are in.
  // Callers that arrive while the index is loading wait for it: typing right after focusing the
  // box (which starts the load) must still show results once the index is in.
  var index = null, waiting = [];
  function merged() {
    var idx = window.ANNOTATE_SEARCH, add = window.ANNOTATE_SEARCH_NOTES;
    add.notes.forEach(function (n) {  // [row, anchor, text en, text zh]
      var r = idx.symbols[n[0]];
      if (r) { r[3] = n[1]; r[4] = 1; r[5] = n[2]; r[6] = n[3]; }
    });
    idx.courses = add.courses;
    return idx;
  }
  function ensureIndex(then) {
    if (index) { then(); return; }
    waiting.push(then);
    if (loading) return;
    loading = true;
    var left = 0, failed = false;
    function done() {
      if (--left > 0) return;
      loading = false;
      var todo = waiting; waiting = [];
      if (failed || !window.ANNOTATE_SEARCH || !window.ANNOTATE_SEARCH_NOTES) { show([], "js.no_index"); return; }
      index = merged();
      todo.forEach(function (f) { f(); });
    }
    ["search-index.js", "search-notes.js"].forEach(function (name) {
      left++;
      var s = document.createElement("script");
      s.src = root + name;
      s.onload = done;
      s.onerror = function () { failed = true; done(); };
      document.head.appendChild(s);
    });
  }

  function score(hay, q) {
    var i = hay.indexOf(q);
    if (i < 0) return -1;
    var last = hay.lastIndexOf("::");
    var name = last >= 0 ? hay.slice(last + 2) : hay;
    if (name === q) return 100;
    if (name.indexOf(q) === 0) return 80;
    if (name.indexOf(q) >= 0) return 60;
    return 40 - Math.min(30, i / 4);
  }
  function has(text, q) { return !!text && text.toLowerCase().indexOf(q) >= 0; }

  function search(raw) {
    var idx = index, q = raw.trim().toLowerCase(), out = [];
    if (!idx || !q) return out;
    var i, r, sc;
    for (i = 0; i < idx.symbols.length; i++) {
      r = idx.symbols[i];  // [name, kind, page, anchor, annotated, text en, text zh]
      sc = score(r[0].toLowerCase(), q);
      if (sc < 0 && (has(r[5], q) || has(r[6], q))) sc = 20;
      if (sc >= 0) out.push({ s: sc + (r[4] ? 5 : 0), name: r[0], kind: "kind." + r[1], href: idx.pages[r[2]] + "#" + r[3], en: r[5], zh: r[6] });
    }
    for (i = 0; i < idx.files.length; i++) {
      r = idx.files[i];
      sc = score(r[0].toLowerCase(), q);
      if (sc >= 0) out.push({ s: sc - 10, name: r[0], kind: "js.file", href: idx.pages[r[1]] });
    }
    for (i = 0; i < idx.courses.length; i++) {
      r = idx.courses[i];  // [title en, page, title zh, kind]
      if (has(r[0], q) || has(r[2], q)) out.push({ s: 50, name: r[0], nameZh: r[2], kind: r[3] || "js.course", href: r[1] });
    }
    out.sort(function (a, b) { return b.s - a.s || a.name.length - b.name.length; });
    return out.slice(0, 40);
  }

  function show(rs, empty) {
    hits = rs; sel = rs.length ? 0 : -1;
    list.textContent = "";
    if (!rs.length) {
      var li = document.createElement("li"); li.className = "q-empty"; li.textContent = word(empty || "js.no_match");
      list.appendChild(li);
    }
    rs.forEach(function (h, k) {
      var li = document.createElement("li"), a = document.createElement("a");
      a.href = root + h.href;
      if (k === 0) a.className = "sel";
      var kind = document.createElement("span"); kind.className = "q-kind"; kind.textContent = word(h.kind);
      var name = document.createElement("span"); name.className = "q-name"; name.textContent = pick(h.name, h.nameZh);
      a.appendChild(kind); a.appendChild(name);
      var text = pick(h.en, h.zh);
      if (text) { var t = document.createElement("span"); t.className = "q-text"; t.textContent = text; a.appendChild(t); }
      li.appendChild(a); list.appendChild(li);
    });
    list.hidden = false;
  }

  function run() {
    if (!input.value.trim()) { list.hidden = true; return; }
    ensureIndex(function () { show(search(input.value)); });
  }

  function move(d) {
    var as = list.querySelectorAll("a");
    if (!as.length) return;
    if (sel >= 0) as[sel].className = "";
    sel = (sel + d + as.length) % as.length;
    as[sel].className = "sel";
    as[sel].scrollIntoView({ block: "nearest" });
  }

  input.addEventListener("input", run);
  input.addEventListener("focus", function () { ensureIndex(function () {}); if (input.value) run(); });
  input.addEventListener("keydown", function (ev) {
    if (ev.key === "ArrowDown") { move(1); ev.preventDefault(); }
    else if (ev.key === "ArrowUp") { move(-1); ev.preventDefault(); }
    else if (ev.key === "Enter") {
      var as = list.querySelectorAll("a");
      if (sel >= 0 && as[sel]) { location.href = as[sel].href; list.hidden = true; }
      ev.preventDefault();
    } else if (ev.key === "Escape") { list.hidden = true; input.blur(); }
  });
  document.addEventListener("keydown", function (ev) {
    if (ev.key === "/" && document.activeElement !== input) { input.focus(); ev.preventDefault(); }
  });
  document.addEventListener("click", function (ev) {
    if (!list.contains(ev.target) && ev.target !== input) list.hidden = true;
  });
  document.addEventListener("annotate-lang", function () { if (!list.hidden && input.value.trim()) run(); });
})();
