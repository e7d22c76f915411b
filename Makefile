# verl-wizard: one virtual environment in .venv with everything, including verl 0.9.1 and CPU torch
# for the conformance tests. `make demo` and `make test` set it up on first use.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
OUT    ?= out/grpo-1gpu-smoke

.PHONY: setup demo test check lint bench gui screenshots clean

setup: $(STAMP)

$(STAMP): pyproject.toml setup.py
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	# torch first, pinned: 2.13.0 is the CPU build this project tests with (verl itself does not pin torch)
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e ".[gui,test,verl,ray]"
	touch $(STAMP)

# The main job on the default preset: write the launch files, then check them with the wizard's
# rules and with verl 0.9.1's own pre-flight.
demo: setup
	$(BIN)/verl-wizard generate --preset grpo-1gpu-smoke --out $(OUT)
	$(BIN)/verl-wizard check --verl $(OUT)/run.sh

lint: setup
	$(BIN)/lint-imports
	$(BIN)/ruff check wizard tests bench

# The full suite, what CI runs: every tier, verl required, every property at its full count.
test: setup lint
	QT_QPA_PLATFORM=offscreen VERL_WIZARD_REQUIRE_VERL=1 $(BIN)/python -m pytest

# The fast tier to run while editing (under a minute): lint, then the core and CLI tests on every core (pytest-xdist),
# without the GUI, Ray or slow tests, properties at a tenth of their count. Other tiers: pytest -m gui|verl|ray|slow.
check: setup lint
	HYPOTHESIS_PROFILE=dev $(BIN)/python -m pytest -q -n auto --dist loadfile -m "not gui and not ray and not slow" tests/core tests/cli

bench: setup
	$(BIN)/python bench/bench_check.py

gui: setup
	$(BIN)/verl-wizard

screenshots: setup
	$(BIN)/verl-wizard --screenshots out/screenshots

clean:
	rm -rf $(VENV) out .pytest_cache .hypothesis

# The desktop bundle (PyInstaller one-folder, dist/verl-wizard/), built in its own venv under build/, and
# its offscreen check (opens the GUI, renders its pages, --version, CLI, doctor); tests/test_bundle.py runs both.
.PHONY: bundle bundle-check
bundle:
	bash packaging/build.sh

bundle-check:
	bash packaging/check_bundle.sh
