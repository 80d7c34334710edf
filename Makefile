# Two commands do all set-up on a fresh machine with Python 3.11 (see README.md):
#   make lab    – create .venv, install the course, open JupyterLab on chapters/
#   make test   – create .venv, install the course, run lint + pytest + nbval + pairing checks
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# The CPU wheel of torch is pinned here (an unpinned torch pulls several GB of CUDA packages on
# Linux). Override on a GPU machine: make test TORCH_SPEC="torch"
TORCH_SPEC ?= torch==2.13.0
NOTEBOOKS = $(wildcard chapters/*.ipynb solutions/*.ipynb)
LAB_FLAGS := $(if $(filter 0,$(shell id -u)),--allow-root,)

.PHONY: lab test install lint notebooks exercises student-edition clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# nbgrader's core, so tests/test_nbgrader_compat.py compares its clearing with ours; without its
	# UI extras (ipywidgets would turn the tqdm.auto progress bars into widgets).
	$(BIN)/python -m pip install --quiet --no-deps nbgrader==0.9.6 rapidfuzz sqlalchemy alembic mako
	touch $(STAMP)

install: $(STAMP)

lab: $(STAMP)
	$(BIN)/jupyter lab --notebook-dir=. chapters/01_embeddings.ipynb $(LAB_FLAGS)

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check transformer_course tests benchmarks

test: $(STAMP) lint
	$(BIN)/python -m pytest tests $(NOTEBOOKS) --nbval --nbval-current-env \
		--nbval-sanitize-with nbval_sanitize.cfg --durations=20

# Re-run every notebook and store its outputs (after editing a chapter's .py source).
notebooks: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py $(NB)

# Regenerate exercises/ from solutions/ (never edit exercises/ by hand).
exercises: $(STAMP)
	$(BIN)/python -m transformer_course build-exercises

student-edition: $(STAMP)
	$(BIN)/python -m transformer_course student-edition student-edition

clean:
	rm -rf $(VENV) student-edition
