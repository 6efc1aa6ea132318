# The two commands a newcomer needs (README): `make site` and `make test`.
# Both create .venv and install what they need; nothing has to be installed by hand.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
OUT    ?= _site

.PHONY: site test venv

$(BIN)/annotate: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[test]'
	@touch $@

venv: $(BIN)/annotate

site: venv
	$(BIN)/annotate build --out $(OUT)

test: venv
	bash scripts/test.sh
