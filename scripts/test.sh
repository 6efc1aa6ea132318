#!/usr/bin/env bash
# The whole test suite, as README's `make test` runs it (and .ci/run calls `make test`).
# Installs what the tests need, fetches the real pins by the archive route (no GitHub
# needed), then runs every test that needs no GPU: unit, real-pin integration, nvcc
# compile checks and headless-Chromium browser tests.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin

# torch: the CUDA build's headers (c10/cuda, ATen/cuda) let `annotate run --compile-only`
# build the Flash-Attention harness; its CPU side runs the float64 references; its presence
# lets pip read flash-attn's sdist metadata (setup.py imports torch) during the archive fetch.
if ! "$BIN/python" -c 'import torch, os, sys; sys.exit(0 if os.path.exists(os.path.join(os.path.dirname(torch.__file__), "include/c10/cuda/impl/cuda_cmake_macros.h")) else 1)' 2>/dev/null; then
  echo "== installing torch 2.14.1 (CUDA build, for its headers) =="
  "$BIN/python" -m pip install -q torch==2.14.1 packaging setuptools wheel
fi

# cuobjdump + nvdisasm (the SASS tests): pip wheels, as pyproject's `sass` extra names them, for a
# .venv made before that extra existed.
if ! "$BIN/python" -c 'import os; from annotate.harness.toolchain import find_binary_tools; find_binary_tools(None, os.environ)' 2>/dev/null; then
  echo "== installing cuobjdump + nvdisasm (pyproject extra: sass) =="
  "$BIN/python" -m pip install -q -e '.[sass]'
fi

# Debian's Chromium + driver for the browser tests (Playwright/Selenium downloads cannot work here).
if ! command -v chromium >/dev/null || ! command -v chromedriver >/dev/null; then
  if [ "$(id -u)" = 0 ]; then
    echo "== installing chromium + chromium-driver =="
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null
  else
    echo "note: chromium/chromedriver missing and not root: browser tests will skip" >&2
  fi
fi

echo "== fetching the pinned sources (archive route, verified against the committed locks) =="
"$BIN/annotate" fetch --via "${ANNOTATE_FETCH_VIA:-archive}"
"$BIN/annotate" status

set +e
# The annotations as CI wants them: no error, no warning, every text field in the languages
# annotations/policy.toml requires (English and Chinese). Reported before the tests, which run
# either way; the script fails if either does.
echo "== annotate check --strict =="
"$BIN/annotate" check --strict
check_rc=$?

echo "== tests =="
"$BIN/python" -m pytest -m "not gpu" --durations=15 "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "no tests were collected: that is a failure" >&2
  exit 1
fi
if [ "$check_rc" != 0 ]; then
  echo "annotate check --strict failed (see its report above)" >&2
  [ "$rc" = 0 ] && rc=$check_rc
fi
exit "$rc"
