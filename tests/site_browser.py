"""Headless Debian Chromium through Selenium, for the site's browser tests and screenshots."""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage")


def available() -> bool:
    return Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()


@contextmanager
def chromium(width: int = 1600, height: int = 1000, languages: str = "en-US,en"):
    """A fresh headless Chromium (its own profile: nothing remembered) whose navigator.languages
    are `languages` (the Accept-Language list)."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="annotate-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for f in FLAGS:
        opts.add_argument(f)
    opts.add_argument(f"--user-data-dir={profile}")
    opts.add_argument(f"--window-size={width},{height}")
    opts.add_argument(f"--lang={languages.split(',')[0]}")
    opts.add_experimental_option("prefs", {"intl.accept_languages": languages})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=opts)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


# ---- axe-core ---------------------------------------------------------------------------------
# The accessibility engine of the browsers' dev tools, from the npm registry. scripts/test.sh
# installs it (npm install in tests/axe); a test run without it installs it once the same way.
# Nothing else reaches the network: the script is injected into pages opened from file://.

AXE_DIR = Path(__file__).parent / "axe"
AXE_JS = AXE_DIR / "node_modules" / "axe-core" / "axe.min.js"


def install_axe() -> Path:
    """axe.min.js, installed from the npm registry into tests/axe on first use."""
    import subprocess

    if not AXE_JS.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("axe-core is not installed and npm is not on PATH (scripts/test.sh installs both)")
        subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(AXE_DIR)],
                       check=True, capture_output=True, timeout=300)
    return AXE_JS


# WCAG 2.x A/AA rules and the best-practice ones (landmarks, heading order).
AXE_RUN = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ['violations']}).then(
  r => done(r.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
        nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: n.failureSummary}))}))),
  e => done({error: String(e)}));
"""


def axe_violations(driver, source: str) -> list[dict]:
    """axe-core's violations of the page open in `driver` (injected from `source`)."""
    if not driver.execute_script("return !!window.axe"):
        driver.execute_script(source)
    driver.set_script_timeout(120)
    out = driver.execute_async_script(AXE_RUN)
    if isinstance(out, dict):
        raise RuntimeError(out["error"])
    return out
