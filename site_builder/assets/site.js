// site.js — small page behaviours: line-number links, the language switch, and (only under
// `annotate serve`) reloading the page when a rebuild finishes. No dependencies.
(function () {
  "use strict";
  var root = document.body.getAttribute("data-root") || "";

  // Clicking a line number (the gutter drawn by CSS) links to that line: #L123.
  document.addEventListener("click", function (ev) {
    var p = ev.target;
    if (!p || p.tagName !== "P" || !p.id || p.id.charAt(0) !== "L") return;
    var gutter = parseFloat(getComputedStyle(p).paddingLeft) || 0;
    if (ev.offsetX < gutter) {
      history.replaceState(null, "", "#" + p.id);
      var t = document.querySelector(".c p.sel-line"); if (t) t.classList.remove("sel-line");
      location.hash = p.id;
    }
  });

  // A line marker that expands (the SASS a line compiled to, its profile): the button shows or
  // hides the span drawn right after it, inside the same line.
  document.addEventListener("click", function (ev) {
    var b = ev.target && ev.target.closest ? ev.target.closest("button.fm") : null;
    if (!b) return;
    var body = b.nextElementSibling;
    if (!body || !body.classList.contains("mx")) return;
    var open = body.classList.toggle("open");
    b.setAttribute("aria-expanded", open ? "true" : "false");
  });

  // The language switch. Text is in the page in both languages (CSS shows one, see lang.js);
  // attributes (titles, placeholders) carry both as data-en-X / data-zh-X and are set here.
  var L = window.ANNOTATE_LANG, ATTRS = ["title", "placeholder", "aria-label"];
  function attributes(v) {
    var sel = ATTRS.map(function (a) { return "[data-en-" + a + "]"; }).join(",");
    var els = document.querySelectorAll(sel);
    for (var i = 0; i < els.length; i++) {
      for (var k = 0; k < ATTRS.length; k++) {
        var val = els[i].getAttribute("data-" + v + "-" + ATTRS[k]);
        if (val !== null) els[i].setAttribute(ATTRS[k], val);
      }
    }
  }
  function current() { return document.documentElement.getAttribute("data-lang") === "en" ? "en" : "zh"; }
  if (L) attributes(current());
  var btn = document.getElementById("lang");
  if (btn && L) btn.addEventListener("click", function () {
    var v = current() === "zh" ? "en" : "zh";
    L.apply(v);
    attributes(v);
    try { localStorage.setItem(L.KEY, v); } catch (e) { /* storage refused: the switch still works */ }
    if (/[?&]lang=/.test(location.search)) {  // a shared ?lang= link must not undo the choice on reload
      history.replaceState(null, "", location.href.replace(/([?&])lang=[a-z]*/i, "$1lang=" + v));
    }
    document.dispatchEvent(new CustomEvent("annotate-lang", { detail: v }));
  });

  // Checkpoints of a course step: ticks are kept in this browser (localStorage), per step and
  // position, and nowhere else. Where storage is refused (some browsers under file://) the
  // boxes still tick, for this visit only.
  var ticks = document.querySelectorAll("input[data-tick]");
  for (var t = 0; t < ticks.length; t++) {
    (function (box) {
      var key = box.getAttribute("data-tick");
      try { box.checked = localStorage.getItem(key) === "1"; } catch (e) { /* storage refused */ }
      box.addEventListener("change", function () {
        try {
          if (box.checked) localStorage.setItem(key, "1"); else localStorage.removeItem(key);
        } catch (e) { /* storage refused */ }
      });
    })(ticks[t]);
  }

  // Keyboard (the list is templates/keys.html.jinja2, opened with `?`): j/k the next/previous
  // annotated function, n/p the next/previous note, c opens the current function's callers and
  // callees and focuses its first link (Enter follows it), l switches the language. `/` is
  // search.js's. Keys typed into a field, or with Ctrl/Alt/Meta, are left alone.
  function focusOn(el) {
    if (!el.hasAttribute("tabindex")) el.setAttribute("tabindex", "-1");
    var old = document.querySelectorAll(".kb-cur");
    for (var i = 0; i < old.length; i++) old[i].classList.remove("kb-cur");
    el.classList.add("kb-cur");
    el.scrollIntoView({ block: "start" });
    el.focus({ preventScroll: true });
    if (el.id) history.replaceState(null, "", "#" + el.id);
  }
  function step(sel, dir) {
    var els = document.querySelectorAll(sel);
    if (!els.length) return;
    var cur = document.activeElement, at = -1, i;
    for (i = 0; i < els.length; i++) if (els[i] === cur || els[i].contains(cur)) at = i;
    if (at < 0 && cur && cur !== document.body) {  // something else focused: go on from it, in page order
      at = dir > 0 ? -1 : els.length;
      for (i = 0; i < els.length; i++) {
        var after = cur.compareDocumentPosition(els[i]) & Node.DOCUMENT_POSITION_FOLLOWING;
        if (dir > 0 && !after) at = i;
        if (dir < 0 && after && at === els.length) at = i;
      }
    } else if (at < 0) {  // nothing of ours focused: start from what is at the top of the window
      var top = (document.querySelector("header.top") || { offsetHeight: 0 }).offsetHeight + 2;
      at = dir > 0 ? -1 : els.length;
      for (i = 0; i < els.length; i++) {
        var y = els[i].getBoundingClientRect().top;
        if (dir > 0 && y <= top) at = i;
        if (dir < 0 && y < top) at = i + 1;
      }
      if (dir < 0) at = Math.min(at, els.length);
    }
    var next = at + dir;
    if (next >= 0 && next < els.length) focusOn(els[next]);
  }
  function currentFunction() {
    var cur = document.activeElement;
    var sec = cur && cur.closest ? cur.closest(".fg") : null;
    if (!sec) {  // the section at the top of the window
      var all = document.querySelectorAll(".fg"), top = 80;
      for (var i = 0; i < all.length; i++) if (all[i].getBoundingClientRect().top <= top) sec = all[i];
    }
    return sec;
  }
  var keys = document.getElementById("keys");
  document.addEventListener("keydown", function (ev) {
    if (ev.ctrlKey || ev.altKey || ev.metaKey || ev.defaultPrevented) return;
    var t = ev.target, tag = t && t.tagName;
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || (t && t.isContentEditable)) return;
    if (keys && keys.open) return;  // the dialog handles its own keys (Esc closes it)
    var k = ev.key;
    if (k === "j" || k === "k") step(".fg.an > .fhc", k === "j" ? 1 : -1);
    else if (k === "n" || k === "p") step("aside.note", k === "n" ? 1 : -1);
    else if (k === "c") {
      var sec = currentFunction(), d = sec && sec.querySelector("details.xr");
      if (!d) return;
      d.open = true;
      var a = d.querySelector(".xl a");
      (a || d.querySelector("summary")).focus();
    } else if (k === "l" && btn) btn.click();
    else if (k === "?" && keys && keys.showModal) keys.showModal();
    else return;
    ev.preventDefault();
  });

  // Live reload: `annotate serve` answers /__annotate__/stamp with the build id; a plain
  // static server answers 404 and the script stops after one request.
  if (location.protocol === "http:" || location.protocol === "https:") {
    var url = root + "__annotate__/stamp", last = null;
    var poll = function () {
      fetch(url, { cache: "no-store" }).then(function (r) {
        if (!r.ok) return null;
        return r.text();
      }).then(function (stamp) {
        if (stamp === null || stamp === undefined) return;
        if (last !== null && stamp !== last) { location.reload(); return; }
        last = stamp;
        setTimeout(poll, 1000);
      }, function () { setTimeout(poll, 3000); });
    };
    poll();
  }
})();
