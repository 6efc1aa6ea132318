// site.js — small page behaviours: line-number links, the 中文 toggle, and (only under
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

  // Chinese notes on demand; remembered where storage works (it may not under file://).
  var btn = document.getElementById("lang");
  function store(v) { try { localStorage.setItem("annotate-zh", v); } catch (e) { /* ignore */ } }
  try { if (localStorage.getItem("annotate-zh") === "1") document.documentElement.classList.add("zh"); } catch (e) { /* ignore */ }
  if (btn) btn.addEventListener("click", function () {
    store(document.documentElement.classList.toggle("zh") ? "1" : "0");
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
