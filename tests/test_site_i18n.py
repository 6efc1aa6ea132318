"""The site's message catalogue (site_builder/messages.yaml) and how a message is printed.

The catalogue is complete (every message in both languages, with the same placeholders), every
id the code and templates use exists, and every entry is used. The browser tests check what a
reader sees (tests/test_site_browser.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from annotate.index.model import SYMBOL_KINDS, TYPE_KINDS  # noqa: E402
from site_builder import i18n, render  # noqa: E402
from site_builder.compiled import OPCODE_FAMILIES, PLAIN, STALL_REASONS  # noqa: E402
from annotate.index.trace import KINDS as HOP_KINDS  # noqa: E402
from site_builder.facts import FACT_STYLES  # noqa: E402
from site_builder.model import Label, Msg, msg  # noqa: E402

SITE = Path(i18n.__file__).parent
CJK = re.compile(r"[\u4e00-\u9fff]")
# ids the code makes from data: a prefix and every value it takes
DYNAMIC = {"kind.": SYMBOL_KINDS + TYPE_KINDS, "fact.": tuple(FACT_STYLES), "sass.op.": (*OPCODE_FAMILIES, PLAIN),
           "stall.": STALL_REASONS, "hop.": HOP_KINDS}


def _used_ids() -> set[str]:
    """Every literal message id in the templates, the page modules and the scripts."""
    found: set[str] = set()
    pattern = re.compile(r"""(?:\b(?:T|M|msg|word)\(\s*|WORDS\[)["']([a-z_]+\.[a-z0-9_.-]+)["']""")
    for p in [*SITE.glob("*.py"), *(SITE / "templates").glob("*.jinja2"), *(SITE / "assets").glob("*.js")]:
        text = p.read_text(encoding="utf-8")
        found |= set(pattern.findall(text))
        found |= {x for x in re.findall(r"""["']((?:js|runs|note|xr|badge)\.[a-z_]+)["']""", text)
                  if not x.endswith(("css", "js", "html"))}
    return found


def test_every_message_has_both_languages_and_the_same_placeholders():
    cat = i18n.catalogue()
    assert len(cat) > 100
    for mid, entry in cat.items():
        assert entry.get("en") and entry.get("zh"), mid
        # the same values shown; English may also choose a word by a count
        assert i18n.placeholders(entry["en"], plurals=False) == i18n.placeholders(entry["zh"]), mid
        if mid != "lang.button":  # the button names the other language, in that language
            assert CJK.search(entry["zh"]), f"{mid}: the Chinese text has no Chinese in it"


def test_every_id_used_exists_and_every_entry_is_used():
    cat = set(i18n.catalogue())
    used = _used_ids()
    assert {"note.summary", "note.decomposition", "note.memory", "note.sync", "js.no_match"} <= used
    assert not sorted(used - cat), "ids used but not in messages.yaml"
    dynamic = {prefix + v for prefix, values in DYNAMIC.items() for v in values}
    assert not sorted(dynamic - cat), "kinds without a message"
    unused = cat - used - dynamic - {"lang.button", "fallback.tag"}
    assert not sorted(unused), "messages nobody shows"


def test_placeholders_plurals_and_fallback():
    assert i18n.pair(msg("file.functions", n=1)) == ("1 function", "1 个函数")
    assert i18n.pair(msg("file.functions", n=3)) == ("3 functions", "3 个函数")
    assert i18n.pair(msg("xr.summary", callers=1, calls=2)) == ("1 caller · 2 calls", "1 个调用方 · 调用 2 个函数")
    # values are data: braces in them are not read as placeholders
    assert i18n.pair(msg("note.status", status="{x}"))[0] == "Annotation status: {x}."
    assert i18n.pair(Label("Day 1", None)) == ("Day 1", None)
    assert i18n.pair("plain") == ("plain", "plain")
    with pytest.raises(i18n.CatalogueError):
        i18n.pair(Msg("no.such.message"))


def test_words_in_html_replace_each_other():
    env = render.environment()
    tpl = env.from_string('{% import "macros.html.jinja2" as m %}{{ m.s(x) }}|{{ m.link(l) }}|{{ m.text(t) }}')
    from markupsafe import Markup

    from site_builder.model import Link, TextView

    html = tpl.render(x=msg("note.summary"), l=Link(Label("Day <1>", "第 1 天"), "a.html", msg("link.unresolved")),
                      t=TextView(Markup("<p>only English</p>"), None))
    assert html.startswith("<span lang=en>Summary</span><span lang=zh>概述</span>|")
    assert ('<a href="a.html" title="未解析" data-en-title="unresolved" data-zh-title="未解析">'
            '<span lang=en>Day &lt;1&gt;</span><span lang=zh>第 1 天</span></a>') in html
    assert '<div class="md fb" lang="en-x-fb" data-fb="英文原文"><p>only English</p></div>' in html
    one = tpl.render(x=Label("Only English"), l=Link("x"), t=None)
    assert one.startswith('<span lang=en-x-fb class=fb data-fb="英文原文">Only English</span>')


def test_script_messages():
    js = i18n.script_messages()
    assert js.startswith("window.ANNOTATE_MESSAGES=") and js.endswith(";\n")
    assert '"js.no_match":"没有匹配结果"' in js and '"kind.kernel":"kernel"' in js
    assert render.asset_files()["messages.js"] == js.encode()


def test_a_broken_catalogue_is_one_clear_error(tmp_path, monkeypatch):
    for text, why in (("a: [1, 2]\n", "a mapping with keys"), ("a: {en: x, fr: y}\n", "a mapping with keys"),
                      ("a: {en: 'x {', zh: y}\n", "bad placeholder"), ("a: {en: [x], zh: y}\n", "text expected")):
        bad = tmp_path / "messages.yaml"
        bad.write_text(text)
        monkeypatch.setattr(i18n, "CATALOGUE", bad)
        i18n.catalogue.cache_clear()
        with pytest.raises(i18n.CatalogueError, match=why):
            i18n.catalogue()
    i18n.catalogue.cache_clear()


def test_kinds_and_fact_kinds_the_catalogue_does_not_know_show_as_they_are():
    from site_builder.facts import fact_label
    from site_builder.file_pages import kind_label

    assert kind_label("kernel") == Msg("kind.kernel") and kind_label("struct") == Msg("kind.struct")
    assert kind_label("concept") == "concept"
    assert fact_label("barrier") == Msg("fact.barrier") and fact_label("new-kind") == "new kind"
