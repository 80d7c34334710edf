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
# JupyterLab with the course's default settings (jupyter-config/settings/overrides.json: .py
# chapters open as notebooks); the learner's own settings still win over them.
# The file browser lists each chapter once: its .ipynb (the paired .py source is saved with it, unlisted).
HIDDEN := "['__pycache__', '*.pyc', '*.pyo', '.DS_Store', '*~', '[0-9][0-9]_*.py', 'ex[0-9][0-9]_*.py']"
LAB := $(BIN)/jupyter lab --notebook-dir=. --LabApp.app_settings_dir=$(CURDIR)/jupyter-config/settings \
	--ContentsManager.hide_globs=$(HIDDEN) $(LAB_FLAGS)
NBGRADER_SERVER_EXTENSIONS := $(addprefix nbgrader.server_extensions.,formgrader validate_assignment assignment_list course_list)
WEB_STAMP := $(VENV)/.installed-web
GRADERS_STAMP := $(VENV)/graders/.installed

.PHONY: lab book test test-other-cpu test-oldest test-oldest-unit test-gpu install graders lint check-changed notebooks exercises student-edition clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet "$(TORCH_SPEC)"
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	# nbgrader's core, so tests/test_nbgrader_compat.py compares its clearing with ours; without its
	# UI extras (ipywidgets would turn the tqdm.auto progress bars into widgets).
	$(BIN)/python -m pip install --quiet --no-deps nbgrader==0.9.6 rapidfuzz sqlalchemy alembic mako
	# nbgrader's UI off here: .venv is not a grading server (nbgrader grades from .venv/graders: make graders).
	$(BIN)/jupyter server extension disable --sys-prefix $(NBGRADER_SERVER_EXTENSIONS) >/dev/null 2>&1
	$(BIN)/jupyter labextension disable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1
	touch $(STAMP)

# The web edition's tools and the browser tests' driver (make book; make test builds the site).
$(WEB_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[book,browser]"
	touch $(WEB_STAMP)

# nbgrader and Otter-Grader in .venv/graders, on top of .venv (scripts/graders_venv.sh says why): the
# tools of `python -m transformer_course assignment`, which tests/test_graders.py drives.
$(GRADERS_STAMP): $(STAMP) scripts/graders_venv.sh
	bash scripts/graders_venv.sh

graders: $(GRADERS_STAMP)

install: $(STAMP)

lab: $(STAMP)
	$(LAB) chapters/01_embeddings.ipynb

# The web edition from the committed notebooks (no re-execution), in _build/book/.
book: $(WEB_STAMP)
	$(BIN)/sphinx-build -q -E -W --keep-going -b html -c book -d _build/doctrees . _build/book
	@echo "open _build/book/index.html"

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The lint and the tests that cover the files changed against origin/main (else main), each choice with
# its reason (transformer_course_tools/authoring/changed.py): make check-changed [BASE=REV] [LIST=1] [DEEP=1]
check-changed: $(STAMP)
	$(BIN)/python -m transformer_course_tools.authoring.changed $(if $(BASE),--base $(BASE),) $(if $(LIST),--list,) $(if $(DEEP),--deep,)

# A trained model differs from one CPU to another (another vector width, another matrix kernel: the
# floats add up in another order, and training amplifies the last bits). So the cells that print a
# result of training are not compared (tagged nbval-ignore-output) and are followed by checks of the
# chapter's claims with margins (transformer_course_tools/notebook/claims.py). `make test` runs the unit tests
# and every notebook (scripts/run_tests.sh: one pytest worker per core). To prove that the notebooks
# hold on any machine, `make test-other-cpu` runs every notebook again on another CPU's arithmetic:
# ATen's kernels without vector instructions, MKL and oneDNN limited to AVX2, one thread. CI runs
# both (.ci/run).
NBVAL := --nbval --nbval-current-env --nbval-sanitize-with nbval_sanitize.cfg
OTHER_CPU := ATEN_CPU_CAPABILITY=default MKL_ENABLE_INSTRUCTIONS=AVX2 DNNL_MAX_CPU_ISA=AVX2 OMP_NUM_THREADS=1 MKL_NUM_THREADS=1

test: $(STAMP) $(WEB_STAMP) $(GRADERS_STAMP) lint
	bash scripts/run_tests.sh $(wildcard chapters/*.ipynb) tests $(wildcard solutions/*.ipynb) $(NBVAL) --durations=20

test-other-cpu: $(STAMP)
	env $(OTHER_CPU) bash scripts/run_tests.sh $(NOTEBOOKS) $(NBVAL) -p no:cacheprovider

# The oldest Python and PyTorch that pyproject.toml declares, in a fresh .venv-oldest (downloads ~3 GB:
# PyTorch's oldest supported release is on PyPI as a CUDA build only; it runs on the CPU).
test-oldest:
	bash scripts/test_oldest.sh

# The same environment and its unit tests, without the chapters: what CI runs last (.ci/run; the
# chapters stay out to keep CI well inside its 70 minutes).
test-oldest-unit:
	bash scripts/test_oldest.sh --unit

# The training chapters on a CUDA GPU with the profile a Colab GPU gets (bf16 where supported), their
# claims checked. Needs a CUDA build of PyTorch: make test-gpu TORCH_SPEC=torch (RECORD=1 appends the
# times to benchmarks/results.md).
test-gpu: $(STAMP)
	$(BIN)/python scripts/test_gpu.py $(if $(RECORD),--record,)

# Re-run every notebook and store its outputs (after editing a chapter's .py source). A cell tagged
# `measured` keeps its committed output unless REMEASURE=1; the measured outputs that differ are listed.
notebooks: $(STAMP)
	$(BIN)/python scripts/execute_notebooks.py $(if $(REMEASURE),--remeasure,) $(NB)

# Regenerate exercises/ from solutions/ (never edit exercises/ by hand).
exercises: $(STAMP)
	$(BIN)/python -m transformer_course build-exercises

student-edition: $(STAMP)
	$(BIN)/python -m transformer_course student-edition student-edition

clean:
	rm -rf $(VENV) .venv-oldest student-edition _build test-artifacts
