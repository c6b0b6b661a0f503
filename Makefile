# Two commands do everything on a fresh clone: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
GRADE  := $(VENV)/bin/grade

.PHONY: setup demo test bench clean

setup: $(VENV)/.installed

# torch is pinned first: an unpinned torch resolves to a CUDA build of several GB.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check torch==2.13.0 numpy
	$(PY) -m pip install -q --disable-pip-version-check -e .
	touch $@

demo: setup
	$(GRADE) batch examples/submissions --out results/demo --force
	$(GRADE) report results/demo --submissions examples/submissions
	@echo "grade is installed in $(VENV)/bin: run '. $(VENV)/bin/activate' to type 'grade ...' as the README shows"

test: setup
	$(PY) -m pytest -q

bench: setup
	$(PY) bench/batch_bench.py

clean:
	rm -rf $(VENV) results build *.egg-info

# The exam demo (part of `make demo`): papers for examples/exam/roster.csv made with the DEMO-ONLY secret,
# four submissions built from them, graded each against its own variant, then audited.
.PHONY: demo-exam
demo: demo-exam
demo-exam: export GRADE_DEMO_SECRET_OK = 1
demo-exam: setup
	rm -rf results/exam
	$(GRADE) exam papers midterm --roster examples/exam/roster.csv --secret-file examples/exam/demo-only.secret -o results/exam/papers
	$(PY) examples/exam/demo_submissions.py results/exam/papers results/exam/submissions
	$(GRADE) batch results/exam/submissions --assignment midterm --roster examples/exam/roster.csv --secret-file examples/exam/demo-only.secret --out results/exam/results --force
	$(GRADE) exam audit results/exam/results
