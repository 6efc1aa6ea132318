"""Accessibility of the built site, checked by axe-core in headless Chromium, and the keyboard
commands (site.js): every page kind in both languages has no serious or critical violation."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from site_browser import available, axe_violations, chromium, install_axe  # noqa: E402
from site_support import DECODE, NORM, REPO, UP, build_fixture_site  # noqa: E402

from site_builder import names  # noqa: E402

TRACE_DATA = Path(__file__).parent / "data" / "trace"
TRACED = ("pkg.ops.norm", "pkg.attn_func")

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
    _add_trace_pages(tmp / "out")
    return tmp / "out"


def _add_trace_pages(out: Path) -> None:
    """The trace pages of the trace fixture (tests/data/trace: a Python entry reaching its kernels
    through a JIT module, a torch op, dispatch macros and a fork), rendered into the demo site's
    traces/ beside its assets: the demo tree has no Python entry of its own to trace."""
    import dataclasses

    from annotate.index.api import index_directory
    from annotate.index.crosslang import Entry, Extension, build_links, rules
    from annotate.index.trace import find_entry, trace
    from annotate.upstreams import Upstream
    from site_builder import site_pages
    from site_builder.context import make_context, memo_index_part
    from site_builder.render import render_trace
    from site_builder.traces import trace_data

    ix = index_directory("demo", TRACE_DATA)
    ext = Extension("demo", "demo_attn_cuda", ("csrc/attn_api.cpp", "csrc/inst/*.cu"), "the fixture's setup")
    demo_rules = dataclasses.replace(rules(), extensions=(ext,))
    links = build_links(ix)
    entries = (Entry(TRACED[0], (), ("day-13",)),
               Entry(TRACED[1], (("head_dim", "128"), ("causal", "true"), ("torch", "2.5"))))
    traced = [trace_data(e, trace(ix, links, find_entry(ix, e.entry), dict(e.when), demo_rules)) for e in entries]
    pins = {"demo": Upstream(name="demo", title="Demo", url="https://example.invalid/demo.git",
                             web="https://example.invalid/demo", tag="v0", commit="0" * 40,
                             paths=("csrc/", "include/", "pkg/"), render=("csrc/", "include/", "pkg/"),
                             lock="locks/demo.json", archive=None)}
    ctx = make_context(ix, memo_index_part(ix, pins), None, pins, traces=traced)
    for td in ctx.traces:
        tp = site_pages.trace_page(ctx, td)
        (out / tp.page).parent.mkdir(parents=True, exist_ok=True)
        (out / tp.page).write_text(render_trace(tp), encoding="utf-8")


@pytest.fixture(scope="module")
def axe() -> str:
    return install_axe().read_text(encoding="utf-8")


def _wait(driver, cond, timeout=30):
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, timeout).until(lambda d: cond(d))


def _open_search(d):
    """The search results drop-down, open over the page."""
    from selenium.webdriver.common.by import By

    box = d.find_element(By.ID, "q")
    box.click()
    box.send_keys("norm")
    _wait(d, lambda dd: dd.find_elements(By.CSS_SELECTOR, "#qr li a"), timeout=60)


def _open_markers(d):
    """Every line marker of the compiled view expanded (the SASS and profile under their lines),
    every <details> open (callers, resources), so their contents are checked too."""
    d.execute_script("document.querySelectorAll('button.fm[aria-expanded=false]').forEach(b => b.click());"
                     "document.querySelectorAll('details').forEach(x => x.open = true)")


def _kinds(site: Path) -> dict[str, tuple[Path, object]]:
    return {
        "home": (site / names.INDEX_PAGE, None),
        "source": (site / names.source_page(UP, NORM), _open_markers),
        # decode.cuh: calls across files, a type and a macro with member notes, the compiled
        # view's SASS and profile markers and fact verdicts
        "source-compiled": (site / names.source_page(UP, DECODE), _open_markers),
        "course": (site / names.course_page("demo-course"), None),
        "step": (site / names.step_page("demo-course", "day-1"), None),
        "runs": (site / names.runs_page("rmsnorm"), None),
        "runs-identity": (site / names.runs_page("warp_decode"), None),  # identity card, no record yet
        "trace": (site / names.trace_page(TRACED[0]), None),
        "trace-fork": (site / names.trace_page(TRACED[1]), None),  # decided conditions, a fork
        "search": (site / names.INDEX_PAGE, _open_search),
        "error": (site / names.ERROR_PAGE, None),
    }


SERIOUS = ("serious", "critical")


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_no_serious_axe_violations_on_any_page_kind(site, axe, theme):
    found = {}
    with chromium(1400, 1000) as d:
        if theme == "dark":
            d.execute_cdp_cmd("Emulation.setEmulatedMedia",
                              {"features": [{"name": "prefers-color-scheme", "value": "dark"}]})
        for kind, (page, prepare) in _kinds(site).items():
            for lang in ("en", "zh"):
                d.get(page.as_uri() + "?lang=" + lang)
                if prepare:
                    prepare(d)
                bad = [v for v in axe_violations(d, axe) if v["impact"] in SERIOUS]
                if bad:
                    found[f"{kind}/{lang}"] = [(v["id"], len(v["nodes"]), v["nodes"][0]["target"]) for v in bad]
    assert not found, found


def _press(d, key):
    from selenium.webdriver.common.action_chains import ActionChains

    ActionChains(d).send_keys(key).perform()


def _active(d):
    return d.execute_script("return document.activeElement")


def _focus_ring(d) -> str:
    return d.execute_script("const e = document.activeElement; return e.matches(':focus-visible') ? "
                            "getComputedStyle(e).outlineStyle : 'none'")


def test_keyboard_walks_functions_notes_and_calls(site):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    url = (site / names.source_page(UP, NORM)).as_uri()
    with chromium(1400, 900) as d:
        d.get(url + "?lang=en")
        _press(d, "j")  # the next annotated function, from the top of the page
        head = d.find_element(By.ID, "f-RMSNormKernel-12")
        assert _active(d) == head and d.current_url.endswith("#f-RMSNormKernel-12")
        assert "kb-cur" in head.get_attribute("class") and _focus_ring(d) == "solid"
        _press(d, "j")  # no annotated function after it: focus stays
        assert _active(d) == head
        d.execute_script("window.scrollTo(0, document.body.scrollHeight)")
        d.execute_script("document.activeElement.blur()")
        _press(d, "k")  # from the bottom, the previous one is the same function
        assert _active(d) == head
        # notes: the function's note, then the in-body note, and back
        notes = d.find_elements(By.CSS_SELECTOR, "aside.note")
        assert len(notes) == 2
        _press(d, "n")  # from the function heading: its own note comes next
        assert _active(d) == notes[0] and _focus_ring(d) == "solid"
        _press(d, "n")
        assert _active(d) == notes[1] and d.current_url.endswith("#f-RMSNormKernel-12")
        _press(d, "p")
        assert _active(d) == notes[0]
        # c: callers and callees of the current function open, the first call focused; Enter follows it
        _press(d, "c")
        xr = d.find_element(By.CSS_SELECTOR, "#f-RMSNormKernel-12 details.xr")
        assert xr.get_attribute("open") is not None
        link = _active(d)
        assert link.tag_name == "a" and link.get_attribute("href").endswith("#f-shfl_xor_sync-7")
        assert _focus_ring(d) == "solid"
        _press(d, Keys.ENTER)
        _wait(d, lambda dd: dd.current_url.endswith("#f-shfl_xor_sync-7"))
        # / focuses search; keys typed there are text, not commands
        _press(d, "/")
        box = d.find_element(By.ID, "q")
        assert _active(d) == box
        _press(d, "jn")
        assert box.get_attribute("value") == "jn" and d.current_url.endswith("#f-shfl_xor_sync-7")
        box.send_keys(Keys.ESCAPE)
        d.execute_script("document.activeElement.blur()")
        # ? shows the key list in the page's language; Esc closes it
        _press(d, "?")
        dialog = d.find_element(By.ID, "keys")
        assert dialog.get_attribute("open") is not None and "Keyboard shortcuts" in dialog.text
        assert "next / previous annotated function" in dialog.text
        _press(d, Keys.ESCAPE)
        assert dialog.get_attribute("open") is None
        _press(d, "l")  # the language switch
        assert d.execute_script("return document.documentElement.getAttribute('data-lang')") == "zh"
        _press(d, "?")
        assert "键盘快捷键" in dialog.text and "有注释的函数" in dialog.text and "Keyboard" not in dialog.text


def _after(d, el) -> str:
    return d.execute_script("return getComputedStyle(arguments[0], '::after').content", el)


def test_keyboard_reaches_the_compiled_view(site):
    """A line's fact marker and the compiler's verdict take the focus and then show what their
    title says; Tab goes on to the line's SASS marker, Enter opens and closes it; every marker
    and every mark of a facts panel is in the tab order."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with chromium(1400, 900) as d:
        d.get((site / names.source_page(UP, DECODE)).as_uri() + "?lang=en")
        untabbable = d.execute_script(
            "return [...document.querySelectorAll('button.fm, sup.fm[title], sup.fx[title], .facts a')]"
            ".filter(e => e.tabIndex < 0).map(e => e.outerHTML)")
        assert untabbable == []
        call = d.find_element(By.CSS_SELECTOR, "#L9 > a")  # the call to shfl_xor_sync, then its markers
        d.execute_script("arguments[0].focus()", call)
        _press(d, Keys.TAB)
        fact = _active(d)
        assert fact.get_attribute("class") == "fm fc4" and _focus_ring(d) == "solid"
        assert _after(d, fact) == '"warp-shuffle: math::shfl_xor_sync"'
        _press(d, Keys.TAB)
        verdict = _active(d)
        assert verdict.get_attribute("class") == "fx ok"
        assert _after(d, verdict).startswith('"confirmed by the compiler: SHFL.BFLY')
        _press(d, Keys.TAB)
        sass = _active(d)
        assert sass.tag_name == "button" and "sm" in sass.get_attribute("class").split()
        body = d.execute_script("return arguments[0].nextElementSibling", sass)
        assert not body.is_displayed()
        _press(d, Keys.ENTER)
        assert sass.get_attribute("aria-expanded") == "true" and body.is_displayed()
        assert "SHFL.BFLY" in body.text
        _press(d, Keys.ENTER)
        assert sass.get_attribute("aria-expanded") == "false" and not body.is_displayed()
        # the titles follow the language switch
        _press(d, "l")
        d.execute_script("arguments[0].focus()", call)
        _press(d, Keys.TAB)
        _press(d, Keys.TAB)
        assert _after(d, _active(d)).startswith('"编译器已确认')


def test_keyboard_walks_a_trace(site):
    """A trace page is links and one disclosure: Tab reaches every hop's code and the open
    conditions, Enter opens them."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys

    with chromium(1400, 900) as d:
        d.get((site / names.trace_page(TRACED[0])).as_uri() + "?lang=en")
        targets = d.find_elements(By.CSS_SELECTOR, ".hop a, p.end a, details.undecided > summary")
        last = d.execute_script("const a = document.querySelectorAll('main a, main summary'); return a[a.length - 1]")
        seen = []
        for _ in range(300):
            _press(d, Keys.TAB)
            seen.append(_active(d).id)
            if _active(d) == last:
                break
        assert targets and [t for t in targets if t.id not in seen] == []
        summary = d.find_element(By.CSS_SELECTOR, "details.undecided > summary")
        d.execute_script("arguments[0].focus()", summary)
        assert _focus_ring(d) == "solid"
        _press(d, Keys.ENTER)
        assert d.find_element(By.CSS_SELECTOR, "details.undecided").get_attribute("open") is not None


def test_narrow_screen_has_no_page_wide_horizontal_scroll(site):
    """On a phone-sized window only code blocks and the call graph scroll sideways."""
    with chromium(390, 800) as d:
        for kind, (page, _) in _kinds(site).items():
            d.get(page.as_uri() + "?lang=en")
            d.execute_script("document.querySelectorAll('details').forEach(x => x.open = true)")
            wide = d.execute_script("return document.documentElement.scrollWidth - window.innerWidth")
            assert wide <= 1, (kind, wide)
        graph = d.execute_script(
            "location.href = arguments[0]; return 0", (site / names.source_page(UP, NORM)).as_uri())
        assert graph == 0
        _wait(d, lambda dd: dd.execute_script("return document.readyState") == "complete")
        style = d.execute_script("const g = document.querySelector('.graph'); return g && getComputedStyle(g).overflowX")
        assert style == "auto"


def test_print_shows_code_and_notes_without_the_frame(site):
    url = (site / names.source_page(UP, NORM)).as_uri()
    with chromium(1400, 900) as d:
        d.get(url + "?lang=en")
        d.execute_cdp_cmd("Emulation.setEmulatedMedia", {"media": "print"})
        shown = d.execute_script(
            "return ['header.top', 'aside.note.fn', 'aside.note.in', '#L21'].map("
            "s => document.querySelector(s).checkVisibility())")
        assert shown == [False, True, True, True]
        # notes under their code, full width, wrapped code rather than cut off
        note, line = d.execute_script(
            "return ['aside.note.in', '#L21'].map(s => document.querySelector(s).getBoundingClientRect().toJSON())")
        assert note["width"] > 600
        ws = d.execute_script("return getComputedStyle(document.querySelector('#L21')).whiteSpace")
        assert ws == "pre-wrap"
