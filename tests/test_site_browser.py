"""The site in real headless Chromium (Debian's chromium + chromedriver, through Selenium),
opened from file://: following a call, notes beside code, search, hostile annotations."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_browser import available, chromium  # noqa: E402
from site_support import DECODE, EVIL_MARKDOWN, NORM, REPO, UP, build_fixture_site  # noqa: E402

from site_builder import names  # noqa: E402

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not available(), reason="needs /usr/bin/chromium and /usr/bin/chromedriver"),
]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    from annotate.config import Config

    tmp = tmp_path_factory.mktemp("site")
    config = Config.load(environ={}, cache_dir=tmp / "cache", repo_root=REPO)  # one harness: demo rmsnorm
    build_fixture_site(config, tmp / "out")
    return tmp / "out"


@pytest.fixture(scope="module")
def browser():
    with chromium(1600, 1000) as d:
        d.set_page_load_timeout(30)
        yield d


def _wait(driver, cond, timeout=30):  # generous: on a loaded machine a page can take seconds
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: cond(d))


def _in_view(driver, el) -> bool:
    return driver.execute_script(
        "const r = arguments[0].getBoundingClientRect(); return r.top >= 0 && r.top < window.innerHeight;", el)


def test_click_a_call_lands_on_its_definition(site, browser):
    from selenium.webdriver.common.by import By

    browser.get((site / names.source_page(UP, DECODE)).as_uri())
    assert browser.title.startswith("include/demo/decode.cuh")
    # the call of RMSNorm on line 26 links to norm.cuh
    link = browser.find_element(By.CSS_SELECTOR, "#L26 a")
    assert link.text == "RMSNorm"
    link.click()
    _wait(browser, lambda d: d.current_url.endswith("norm.cuh.html#f-RMSNorm-31"))
    target = browser.find_element(By.ID, "f-RMSNorm-31")
    assert _in_view(browser, target) and "demo::RMSNorm" in target.text
    # and on the same page, warp_sum's call jumps to its heading
    browser.get((site / names.source_page(UP, DECODE)).as_uri())
    browser.find_element(By.CSS_SELECTOR, "#L19 a").click()
    _wait(browser, lambda d: d.current_url.endswith("#f-warp_sum-7"))
    assert _in_view(browser, browser.find_element(By.ID, "f-warp_sum-7"))
    # unresolved names are plain text, not dead links
    assert not browser.find_elements(By.CSS_SELECTOR, "#L21 a")


def test_annotation_beside_its_function(site, browser):
    from selenium.webdriver.common.by import By

    browser.get((site / names.source_page(UP, NORM)).as_uri())
    head = browser.find_element(By.ID, "f-RMSNormKernel-12")
    note = browser.find_element(By.CSS_SELECTOR, "aside.note.fn")
    code = browser.find_element(By.ID, "L13")
    assert "warp reduction" in note.text
    h, n, c = head.rect, note.rect, code.rect
    assert n["x"] >= c["x"] + c["width"] - 5  # to the right of the code column
    assert n["y"] < c["y"] + c["height"] and n["y"] + n["height"] > h["y"]  # level with the function
    inline = browser.find_element(By.CSS_SELECTOR, "aside.note.in")
    line = browser.find_element(By.ID, "L21")
    assert abs(inline.rect["y"] - line.rect["y"]) < 30  # the in-body note is beside its line
    assert "n" in line.get_attribute("class").split()
    # a fact marker with its legend
    assert browser.find_element(By.CSS_SELECTOR, "#L24 sup.fm").text == "B"
    assert "barrier" in browser.find_element(By.CSS_SELECTOR, "dl.legend").text


def test_narrow_screen_shows_notes_inline(site):
    from selenium.webdriver.common.by import By

    with chromium(700, 900) as d:
        d.get((site / names.source_page(UP, NORM)).as_uri())
        note = d.find_element(By.CSS_SELECTOR, "aside.note.in")
        line = d.find_element(By.ID, "L21")
        assert note.rect["y"] + note.rect["height"] <= line.rect["y"] + 2  # above its line, full width
        assert note.rect["width"] > 400


def test_search_reaches_rmsnormkernel(site, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get((site / names.source_page(UP, DECODE)).as_uri())
    box = browser.find_element(By.ID, "q")
    box.click()
    box.send_keys("RMSNormKernel")
    first = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#qr li a"))[0]
    assert "demo::RMSNormKernel" in first.text
    box.send_keys(Keys.ENTER)
    _wait(browser, lambda d: d.current_url.endswith("norm.cuh.html#f-RMSNormKernel-12"))
    _wait(browser, lambda d: d.execute_script("return document.readyState") == "complete")
    assert _in_view(browser, browser.find_element(By.ID, "f-RMSNormKernel-12"))
    # annotation text is searchable too
    box = browser.find_element(By.ID, "q")
    box.send_keys("toy dot product")
    hit = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#qr li a"))[0]
    assert "DecodeKernel" in hit.text


def test_typing_while_the_search_index_loads_still_shows_results(site, browser):
    """Focusing the box starts loading the index; a query typed before it has loaded must be
    answered when it arrives (it was dropped: the results stayed empty until the next key)."""
    from selenium.webdriver.common.by import By

    browser.get((site / names.source_page(UP, DECODE)).as_uri())
    # focus and type in one script task: the index (an async <script>) cannot have loaded yet
    browser.execute_script(
        "var q = document.getElementById('q');"
        "q.dispatchEvent(new Event('focus')); q.value = 'RMSNormKernel';"
        "q.dispatchEvent(new Event('input'));"
        "return !!window.ANNOTATE_SEARCH;")
    first = _wait(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#qr li a"))[0]
    assert "demo::RMSNormKernel" in first.text


def test_hostile_annotation_runs_nothing(tmp_path):
    from selenium.webdriver.common.by import By

    from annotate.config import Config
    from annotate.notes import model as M

    def evil(index):
        from annotate.notes.api import load_annotations
        from site_support import ANNOTATIONS
        import dataclasses

        notes = load_annotations(config, index, root=ANNOTATIONS)
        f0 = next(f for f in notes.files if f.path == NORM)
        fn = dataclasses.replace(f0.functions[0], summary=M.Text(EVIL_MARKDOWN, EVIL_MARKDOWN),
                                 calls={"<img src=x onerror=window.__pwned=7>": M.Text(EVIL_MARKDOWN)})
        bad = dataclasses.replace(
            f0, functions=(fn,), overview=M.Text("[x](javascript:window.__pwned=8) <script>window.__pwned=9</script>"))
        return dataclasses.replace(notes, files=tuple(bad if f is f0 else f for f in notes.files))

    config = Config.load(environ={}, cache_dir=tmp_path / "cache")
    build_fixture_site(config, tmp_path / "out", annotations=evil)
    url = (tmp_path / "out" / names.source_page(UP, NORM)).as_uri()
    with chromium(1600, 1000) as d:
        d.get(url)
        n_links = len(d.find_elements(By.CSS_SELECTOR, "aside a, .overview a"))
        for i in range(n_links):  # click every link in the notes: none may run anything
            d.get(url)
            a = d.find_elements(By.CSS_SELECTOR, "aside a, .overview a")[i]
            if a.is_displayed():
                a.click()
                assert d.execute_script("return window.__pwned === undefined"), a.get_attribute("href")
        d.get(url)
        d.find_element(By.ID, "lang").click()  # the other language's copies too
        assert d.execute_script("return window.__pwned === undefined")
        assert d.execute_script("return document.querySelectorAll('img, iframe, object, embed').length") == 0
        assert d.execute_script(
            "return [...document.querySelectorAll('*')].filter(e => [...e.attributes].some("
            "a => a.name.startsWith('on') || /^\\s*(javascript|data):/i.test(a.value))).length") == 0
        assert len(d.find_elements(By.TAG_NAME, "script")) == 4  # lang, site, messages, search
        assert "window.__pwned" in d.find_element(By.CSS_SELECTOR, "aside.note.fn").text  # shown as text


def test_a_sass_marker_expands_and_a_type_has_its_panel(site, browser):
    """decode.cuh: a line's SASS marker opens the instructions under the line (by mouse and by
    keyboard) and closes them again; the annotated struct has its heading and notes beside its
    definition, a member's note beside the member; a kernel's "uses" link leads to the struct."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    browser.get((site / names.source_page(UP, DECODE)).as_uri() + "?lang=en")
    button = browser.find_element(By.CSS_SELECTOR, "#L17 button.fm.sm")
    body = browser.find_element(By.CSS_SELECTOR, "#L17 .mx")
    assert button.text == "LDG.E×2" and not body.is_displayed()
    button.click()
    assert body.is_displayed() and button.get_attribute("aria-expanded") == "true"
    assert "00f0 LDG.E R2, desc[UR4][R2.64]" in body.text and "#1 sm_90" in body.text and "#3 sm_80" in body.text
    line18 = browser.find_element(By.ID, "L18")
    assert line18.rect["y"] >= body.rect["y"] + body.rect["height"] - 1  # under its line, before the next
    button.click()
    assert not body.is_displayed() and button.get_attribute("aria-expanded") == "false"
    button.send_keys(Keys.ENTER)  # a button: the keyboard opens it too
    assert body.is_displayed()
    # the compiler's verdict beside the fact marker of line 9
    assert browser.find_element(By.CSS_SELECTOR, "#L9 sup.fx.ok").text == "✓"
    # the annotated type: a heading with its notes beside it, a member's note beside its line
    head = browser.find_element(By.ID, "t-DecodeParams-41")
    assert "STRUCT" in head.text and "demo::DecodeParams" in head.text
    panel = browser.find_element(By.XPATH, "//div[@id='t-DecodeParams-41']/following-sibling::aside[1]")
    assert "LAYOUT" in panel.text and "24 bytes" in panel.text and "demo::ParamsKernel" in panel.text
    member = browser.find_element(By.XPATH, "//p[@id='L44']/ancestor::div[@class='row']/aside")
    assert "stride" in member.text and abs(member.rect["y"] - browser.find_element(By.ID, "L44").rect["y"]) < 30
    assert panel.rect["x"] > head.rect["x"] + head.rect["width"] - 5  # beside the code
    # a function that uses it links to it
    browser.find_element(By.CSS_SELECTOR, "#f-ParamsKernel-47 .uses a[href='#t-DecodeParams-41']").click()
    _wait(browser, lambda d: d.current_url.endswith("#t-DecodeParams-41"))
    assert _in_view(browser, head)


@pytest.mark.slow
def test_real_decode_page(real_config, pinned, tmp_path):
    """The real pins: flashinfer's decode.cuh with the project's own annotations."""
    from selenium.webdriver.common.by import By

    from annotate.project import open_project
    from site_builder.build import build_site

    pinned("flashinfer")
    pinned("flash-attention")
    out = tmp_path / "real"
    build_site(open_project(real_config, fetch=True), out)
    page = out / names.source_page("flashinfer", "include/flashinfer/attention/decode.cuh")
    with chromium(1600, 1000) as d:
        d.get(page.as_uri())
        note = d.find_element(By.CSS_SELECTOR, "aside.note.fn")
        assert note.text.strip()
        # follow the first call in a kernel's body and land on the callee's heading
        link = d.find_element(By.CSS_SELECTOR, ".fg.an .c a[href*='#f-']")
        anchor = link.get_attribute("href").rsplit("#", 1)[1]
        link.click()
        _wait(d, lambda dd: dd.current_url.endswith("#" + anchor))
        assert _in_view(d, d.find_element(By.ID, anchor))


@pytest.fixture(scope="module")
def trace_site(tmp_path_factory) -> Path:
    """The trace fixture (tests/data/trace) built into a site, its entries traced as the site's are."""
    import dataclasses

    from annotate.config import Config
    from annotate.index.api import index_directory
    from annotate.index.crosslang import Entry, Extension, build_links, rules
    from annotate.index.trace import EntryTrace, find_entry, trace
    from annotate.project import Project, open_project
    from site_builder.build import build_site
    from test_site_traces import DATA, _upstream

    ix = index_directory("demo", DATA)
    demo_rules = dataclasses.replace(rules(), extensions=(
        Extension("demo", "demo_attn_cuda", ("csrc/attn_api.cpp", "csrc/inst/*.cu"), "the fixture's setup"),))
    links = build_links(ix)
    traced = tuple(EntryTrace(e, trace(ix, links, find_entry(ix, e.entry), dict(e.when), demo_rules))
                   for e in (Entry("pkg.ops.norm"), Entry("pkg.attn_func", (("causal", "true"), ("head_dim", "128"),
                                                                           ("torch", "2.5")))))
    tmp = tmp_path_factory.mktemp("trace-site")
    config = Config.load(environ={}, cache_dir=tmp / "cache", repo_root=tmp)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Project, "traces", lambda self: traced)
        build_site(open_project(config, index=ix, pins={"demo": _upstream()}), tmp / "out", jobs=1)
    return tmp / "out"


def test_a_trace_page_links_both_ways(trace_site, browser):
    """From a kernel's "on the path of" to its trace, and from a hop to the line that makes it."""
    from selenium.webdriver.common.by import By

    browser.get((trace_site / names.source_page("demo", "include/norm.cuh")).as_uri() + "?lang=en")
    link = browser.find_element(By.CSS_SELECTOR, "#f-NormKernel-5 .tp a")
    assert link.text == "pkg.ops.norm"
    link.click()
    _wait(browser, lambda d: d.current_url.endswith("traces/pkg.ops.norm.html"))
    hops = browser.find_elements(By.CSS_SELECTOR, "ol.chain .hop")
    assert [h.find_element(By.CSS_SELECTOR, ".hk").text for h in hops][:4] == ["JIT MODULE", "EXPORT", "DISPATCH", "LAUNCH"]
    assert "(not decided statically)" in hops[0].text and "DISPATCH_DTYPE" in hops[2].text
    hops[2].find_element(By.CSS_SELECTOR, ".hw a").click()  # the code that makes the hop
    _wait(browser, lambda d: d.current_url.endswith("csrc/norm.cu.html#L8"))
    assert _in_view(browser, browser.find_element(By.ID, "L8"))


def test_trace_pages_in_both_languages(trace_site):
    import re

    phrases = _english_phrases()
    pages = [trace_site / names.trace_page("pkg.ops.norm"), trace_site / names.trace_page("pkg.attn_func"),
             trace_site / names.source_page("demo", "include/norm.cuh"), trace_site / names.INDEX_PAGE]
    with chromium(1600, 1000, languages="zh-CN,zh") as d:
        for page in pages:
            d.get(page.as_uri())
            # the fixture's file names on the home page (csrc/dispatch.h) are data; the trace's own
            # words (its details, the rules' notes on conditions) name code as they go
            # (`launch = &run_attn`), so they are checked on their own below
            text = d.execute_script(VISIBLE_TEXT.replace("code,", "code, .hx, .gn, table.files,"))
            found = [p for p in phrases if re.search(r"(?<![\w-])" + re.escape(p) + r"(?![\w-])", text)]
            assert not found, (page.name, found)
            # ... and are in Chinese (trace_words.yaml, the rules' note_zh), none of them marked
            # as English left untranslated
            own = d.execute_script("return [...document.querySelectorAll('.hx, .gn')].filter(e => e.checkVisibility())"
                                   ".map(e => [e.innerText, !!e.querySelector('.fb')])")
            assert [t for t, fb in own if fb or not re.search(r"[\u4e00-\u9fff]", t)] == [], page.name
            assert any("加载于" in t for t, _ in own) or page.name != "pkg.ops.norm.html"  # a JIT hop's detail
            assert d.execute_script(ENGLISH_PROSE) == [], page.name
            assert "到达内核" in text or page.name != "pkg.ops.norm.html"
    with chromium(1600, 1000, languages="en-US,en") as d:
        for page in pages:
            d.get(page.as_uri())
            text = d.execute_script(VISIBLE_TEXT.replace(".c, .md, code, .diag, #lang, #qr", "#lang"))
            assert not re.findall(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+", text), page.name


# ---- languages ---------------------------------------------------------------------------------
# Both languages are in every page; lang.js picks one (?lang=, the remembered choice, then
# navigator.languages) and CSS hides the other. "Visible" below is what a reader sees: every
# <details> is opened first, and data that is not the site's own words is left out (code, the
# reviewers' note text, names in <code>, reviewers' diagnostics, the language button, whose
# label is the other language's name by design).

VISIBLE_TEXT = """
document.querySelectorAll('details').forEach(d => d.open = true);
document.querySelectorAll('.mx').forEach(x => x.classList.add('open'));
const skip = '.c, .md, code, .diag, #lang, #qr';
const out = [];
const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (w.nextNode()) {
  const n = w.currentNode, el = n.parentElement;
  if (!el || !n.textContent.trim() || el.closest(skip) || !el.checkVisibility()) continue;
  out.push(n.textContent);
}
return out.join('\\n');
"""


# English prose on a Chinese page that is not the catalogue's: data in English (a harness title,
# an identity card's route, a trace's words) with no Chinese beside it. A text node of three or
# more lowercase English words and no Chinese, outside code and the reviewers' notes, not marked
# as an English fallback.
ENGLISH_PROSE = r"""
document.querySelectorAll('details').forEach(d => d.open = true);
document.querySelectorAll('.mx').forEach(x => x.classList.add('open'));
const skip = '.c, .md, code, .diag, #lang, #qr, .fb, [lang="en-x-fb"], table.files';
const out = [];
const w = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
while (w.nextNode()) {
  const n = w.currentNode, el = n.parentElement, t = n.textContent.trim();
  if (!el || !t || el.closest(skip) || !el.checkVisibility()) continue;
  if (/[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]/.test(t)) continue;
  if ((t.match(/(^|\s)[a-z]{2,}(?=[\s,.;:]|$)/g) || []).length >= 3) out.push(t);
}
return out;
"""


def _english_phrases() -> list[str]:
    """The fixed English words of every catalogue message that has its own Chinese text."""
    import re

    from site_builder.i18n import catalogue

    out = set()
    for mid, entry in catalogue().items():
        en, zh = entry["en"], entry["zh"]
        if mid == "lang.button" or en in zh:
            continue
        for part in re.split(r"\{[^{}]*\}", en):
            part = part.strip(" .,:;()·–-…/%")
            if len(re.sub(r"[^A-Za-z]", "", part)) >= 4 and part not in zh:
                out.add(part)
    return sorted(out)


def _lang(d) -> str:
    return d.execute_script("return document.documentElement.getAttribute('data-lang')")


def _lang_on_arrival(d, url: str, want: str, timeout: float = 5.0) -> str:
    """The language `url` opens in, reopened for up to `timeout` seconds while it is not `want`.
    Chromium keeps localStorage in the page's renderer and hands writes to the browser process
    asynchronously: a file:// page opened in another renderer the same instant can read the
    value from before (seen once in a CI run under load). A reader's next click is never that
    fast; the test waits for what a reader would see, and still fails if it never comes."""
    import time

    end = time.monotonic() + timeout
    d.get(url)
    while _lang(d) != want and time.monotonic() < end:
        time.sleep(0.2)
        d.get(url)
    return _lang(d)


def _pages(site: Path) -> list[Path]:
    return [site / names.INDEX_PAGE, site / names.source_page(UP, NORM), site / names.source_page(UP, DECODE),
            site / names.course_page("demo-course"), site / names.step_page("demo-course", "day-1"),
            site / names.ERROR_PAGE,
            *sorted((site / names.RUNS_DIR).glob("*.html"))]


def test_zh_pages_show_no_english_words_of_the_site(site):
    from selenium.webdriver.common.by import By

    import re

    phrases = _english_phrases()
    assert "Work decomposition" in phrases and "Called by" in phrases  # the check is not empty
    with chromium(1600, 1000, languages="zh-CN,zh") as d:
        for page in _pages(site):
            d.get(page.as_uri())
            assert _lang(d) == "zh", page
            text = d.execute_script(VISIBLE_TEXT)
            found = [p for p in phrases if re.search(r"(?<![\w-])" + re.escape(p) + r"(?![\w-])", text)]
            assert not found, (page.name, found)
            assert re.search(r"[\u4e00-\u9fff]", text), page.name  # and the Chinese is there
            # nor English prose from the data (harness titles and notes, identity routes)
            assert d.execute_script(ENGLISH_PROSE) == [], page.name
            placeholder = d.find_element(By.ID, "q").get_attribute("placeholder")
            assert placeholder.startswith("搜索"), placeholder


def test_en_pages_show_no_chinese(site):
    from selenium.webdriver.common.by import By

    import re

    with chromium(1600, 1000, languages="en-US,en") as d:
        for page in _pages(site):
            d.get(page.as_uri())
            assert _lang(d) == "en", page
            text = d.execute_script(VISIBLE_TEXT.replace(".c, .md, code, .diag, #lang, #qr", "#lang"))
            assert not re.findall(r"[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]+", text), page.name
            assert d.find_element(By.ID, "q").get_attribute("placeholder").startswith("Search")


def test_first_visit_follows_navigator_languages(site):
    page = (site / names.source_page(UP, NORM)).as_uri()
    for languages, want in (("zh-CN,zh,en", "zh"), ("en-GB,zh-CN", "en"), ("fr-FR,zh-TW,en", "zh"),
                            ("fr-FR,de", "zh")):
        with chromium(1000, 800, languages=languages) as d:
            d.get(page)
            assert _lang(d) == want, languages


def test_switch_replaces_the_text_and_is_remembered(site):
    from selenium.webdriver.common.by import By

    norm, decode = [(site / names.source_page(UP, p)).as_uri() for p in (NORM, DECODE)]
    with chromium(1600, 1000, languages="en-US,en") as d:
        d.get(norm)
        head = d.find_element(By.CSS_SELECTOR, "aside.note.fn h3")
        assert head.text == "SUMMARY" and d.title.startswith("include/demo/norm.cuh")
        d.find_element(By.ID, "lang").click()
        assert _lang(d) == "zh" and head.text == "概述"  # replaced, not added beside
        summary = d.find_element(By.CSS_SELECTOR, "aside.note.fn section").text
        assert "每行一个线程块" in summary and "One block per row" not in summary
        # an English-only note is shown, marked as such
        deco = d.find_elements(By.CSS_SELECTOR, "aside.note.fn section")[1]
        assert "grid = rows" in deco.text
        marker = d.execute_script("return getComputedStyle(arguments[0], '::before').content",
                                  deco.find_element(By.CSS_SELECTOR, ".md.fb"))
        assert marker == '"英文原文"'
        assert d.find_element(By.ID, "q").get_attribute("placeholder").startswith("搜索")
        assert _lang_on_arrival(d, decode, "zh") == "zh"  # remembered on the next page
        d.refresh()
        assert _lang(d) == "zh"
        d.find_element(By.ID, "lang").click()
        assert _lang_on_arrival(d, norm, "en") == "en"


def test_lang_parameter_makes_a_link_shareable(site):
    from selenium.webdriver.common.by import By

    norm = (site / names.source_page(UP, NORM)).as_uri()
    with chromium(1000, 800, languages="zh-CN,zh") as d:
        d.get(norm + "?lang=en")
        assert _lang(d) == "en" and d.find_element(By.CSS_SELECTOR, "aside.note.fn h3").text == "SUMMARY"
        assert _lang_on_arrival(d, norm, "en") == "en"  # following links keeps the language the link asked for
        d.get(norm + "?lang=zh#L21")
        assert _lang(d) == "zh"
        d.find_element(By.ID, "lang").click()  # the switch wins over the address it was opened with
        assert "lang=en" in d.current_url
        d.refresh()
        assert _lang(d) == "en"


def test_search_finds_notes_in_either_language(site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    def first_hit(d, *words):
        """The first result once it shows all `words` (the list is rebuilt on every keystroke)."""
        def ready(dd):
            hits = dd.find_elements(By.CSS_SELECTOR, "#qr li")
            return hits[0] if hits and all(w in hits[0].text for w in words) else None
        return _wait(d, ready, timeout=30)

    with chromium(1600, 1000, languages="zh-CN,zh") as d:
        d.get((site / names.source_page(UP, NORM)).as_uri())
        box = d.find_element(By.ID, "q")
        box.send_keys("玩具点积")  # DecodeKernel's Chinese summary
        first_hit(d, "demo::DecodeKernel", "玩具点积", "核函数")
        box.clear()
        box.send_keys("toy dot product")  # its English summary, from the Chinese page
        hit = first_hit(d, "demo::DecodeKernel")
        assert "玩具点积" in hit.text and "toy dot" not in hit.text  # shown in the page's language
        box.clear()
        box.send_keys("示例课程")
        first_hit(d, "示例课程")
        box.send_keys(Keys.ESCAPE)
        box.clear()
        box.send_keys("zzzz-nothing")
        assert first_hit(d, "没有匹配结果").get_attribute("class") == "q-empty"


# ---- course steps ---------------------------------------------------------------------------------

def test_step_page_answers_open_and_ticks_survive_a_reload(site):
    from selenium.webdriver.common.by import By

    step = (site / names.step_page("demo-course", "day-1")).as_uri()
    with chromium(1400, 1000, languages="zh-CN,zh") as d:
        d.get(step)
        answer = d.find_element(By.CSS_SELECTOR, "details.answer")
        assert not answer.get_attribute("open") and "五步" not in answer.text  # folded
        answer.find_element(By.TAG_NAME, "summary").click()
        assert answer.get_attribute("open") is not None and "五步" in answer.text
        cite = answer.find_element(By.CSS_SELECTOR, ".cites a")
        assert cite.text == "norm.cuh:20–22"
        boxes = d.find_elements(By.CSS_SELECTOR, "ul.ticks input[type=checkbox]")
        assert len(boxes) == 2 and not any(b.is_selected() for b in boxes)
        boxes[1].click()
        d.refresh()
        boxes = d.find_elements(By.CSS_SELECTOR, "ul.ticks input[type=checkbox]")
        assert [b.is_selected() for b in boxes] == [False, True]  # kept in this browser
        d.get((site / names.course_page("demo-course")).as_uri())  # another page, then back
        d.get(step)
        assert [b.is_selected() for b in d.find_elements(By.CSS_SELECTOR, "ul.ticks input")] == [False, True]
        d.find_elements(By.CSS_SELECTOR, "ul.ticks input")[1].click()  # unticked, and remembered so
        d.refresh()
        assert not any(b.is_selected() for b in d.find_elements(By.CSS_SELECTOR, "ul.ticks input"))
        cite_href = d.find_element(By.CSS_SELECTOR, ".cites a").get_attribute("href")
        assert cite_href.endswith("src/demo/include/demo/norm.cuh.html#L20")
        # the reading list leads to the annotated function, the kernel to its runs page
        links = [a.get_attribute("href") for a in d.find_elements(By.CSS_SELECTOR, ".reading a")]
        assert links[0].endswith("norm.cuh.html#f-RMSNormKernel-12")
        assert d.find_element(By.CSS_SELECTOR, ".kernel a.runs").get_attribute("href").endswith("runs/rmsnorm.html")
