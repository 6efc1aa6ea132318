// lang.js — which language the page shows, decided before anything is drawn (loaded in <head>).
// Both languages are in the page; base.css hides the one html[data-lang] does not name.
// Order: ?lang=zh|en in the address (a shared link; also remembered), then the reader's last
// choice (localStorage, where the browser allows it), then the first of navigator.languages
// that is Chinese or English, then Chinese (the readers this site is for).
(function () {
  "use strict";
  var root = document.documentElement, KEY = "annotate-lang";
  function ok(v) { return v === "en" || v === "zh" ? v : null; }
  function pick() {
    var m = /[?&]lang=([a-z]+)/i.exec(location.search), v = m && ok(m[1].toLowerCase());
    if (v) { try { localStorage.setItem(KEY, v); } catch (e) { /* storage refused */ } return v; }
    try { v = ok(localStorage.getItem(KEY)); } catch (e) { v = null; }
    if (v) return v;
    var langs = navigator.languages && navigator.languages.length ? navigator.languages : [navigator.language || ""];
    for (var i = 0; i < langs.length; i++) {
      var l = String(langs[i]).toLowerCase();
      if (l.indexOf("zh") === 0) return "zh";
      if (l.indexOf("en") === 0) return "en";
    }
    return "zh";
  }
  window.ANNOTATE_LANG = {
    KEY: KEY,
    // Show the page in `v`: the CSS switch, the document's lang, its title.
    apply: function (v) {
      root.setAttribute("data-lang", v);
      root.setAttribute("lang", v === "zh" ? "zh-CN" : "en");
      var t = root.getAttribute("data-" + v + "-doctitle");
      if (t) document.title = t;
    }
  };
  window.ANNOTATE_LANG.apply(pick());
})();
