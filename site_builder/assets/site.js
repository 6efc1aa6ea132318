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
