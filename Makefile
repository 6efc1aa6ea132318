# The two commands a newcomer needs (README): `make site` and `make test`.
# Both create .venv and install what they need; nothing has to be installed by hand.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= _site

.PHONY: site test venv

$(BIN)/annotate: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q -e '.[test,sass]'
	@# flash-attn's sdist runs setup.py (which imports torch) even to be downloaded, so the
	@# archive route needs some torch; the CPU build is enough for that.
	$(BIN)/python -c 'import torch' 2>/dev/null || $(BIN)/python -m pip install -q torch==2.13.0 packaging setuptools wheel
	@touch $@

venv: $(BIN)/annotate

site: venv
	$(BIN)/annotate build --out $(OUT)

test: venv
	bash scripts/test.sh
