// search.js — client-side search over functions, files, courses and note text.
// The index is a script (search-index.js) assigning window.ANNOTATE_SEARCH, loaded on first
// use with a <script> element, so search works from file:// where fetch() is refused.
// Results are built with textContent only: nothing from the index is parsed as HTML.
(function () {
  "use strict";
  var root = document.body.getAttribute("data-root") || "";
  var input = document.getElementById("q"), list = document.getElementById("qr");
  if (!input || !list) return;
  var loading = false, sel = -1, hits = [];

  function ensureIndex(then) {
    if (window.ANNOTATE_SEARCH) { then(); return; }
    if (loading) return;
    loading = true;
    var s = document.createElement("script");
    s.src = root + "search-index.js";
    s.onload = function () { loading = false; then(); };
    s.onerror = function () { loading = false; show([], "search index not found"); };
    document.head.appendChild(s);
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

  function search(raw) {
    var idx = window.ANNOTATE_SEARCH, q = raw.trim().toLowerCase(), out = [];
    if (!idx || !q) return out;
    var i, r, sc;
    for (i = 0; i < idx.symbols.length; i++) {
      r = idx.symbols[i];
      sc = score(r[0].toLowerCase(), q);
      if (sc < 0 && r[5] && r[5].toLowerCase().indexOf(q) >= 0) sc = 20;
      if (sc >= 0) out.push({ s: sc + (r[4] ? 5 : 0), name: r[0], kind: r[1], href: idx.pages[r[2]] + "#" + r[3], text: r[5] });
    }
    for (i = 0; i < idx.files.length; i++) {
      r = idx.files[i];
      sc = score(r[0].toLowerCase(), q);
      if (sc >= 0) out.push({ s: sc - 10, name: r[0], kind: "file", href: idx.pages[r[1]], text: "" });
    }
    for (i = 0; i < idx.courses.length; i++) {
      r = idx.courses[i];
      if (r[0].toLowerCase().indexOf(q) >= 0) out.push({ s: 50, name: r[0], kind: "course", href: r[1], text: "" });
    }
    out.sort(function (a, b) { return b.s - a.s || a.name.length - b.name.length; });
    return out.slice(0, 40);
  }

  function show(rs, empty) {
    hits = rs; sel = rs.length ? 0 : -1;
    list.textContent = "";
    if (!rs.length) {
      var li = document.createElement("li"); li.className = "q-empty"; li.textContent = empty || "no match";
      list.appendChild(li);
    }
    rs.forEach(function (h, k) {
      var li = document.createElement("li"), a = document.createElement("a");
      a.href = root + h.href;
      if (k === 0) a.className = "sel";
      var kind = document.createElement("span"); kind.className = "q-kind"; kind.textContent = h.kind;
      var name = document.createElement("span"); name.className = "q-name"; name.textContent = h.name;
      a.appendChild(kind); a.appendChild(name);
      if (h.text) { var t = document.createElement("span"); t.className = "q-text"; t.textContent = h.text; a.appendChild(t); }
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
})();
