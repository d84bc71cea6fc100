# The two commands a newcomer needs:  make book   and   make test
# Both create .venv (pinned in pyproject.toml) when it is missing or out of date.

PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
# nbgrader and jupyter-book run tools by name (alembic, jupyter): use the venv's.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: book serve test test-fast release check-release publish samples bench bench-grade copy-table clean help system-test system-grade train-text ladder

# Debian packages, as COMMAND:PACKAGE: the sandbox (bubblewrap; prlimit and setpriv come with util-linux), the
# browser tests (chromium) and the PostgreSQL gradebook test. tools/system_packages.sh installs what is missing
# when it can (root or passwordless sudo), else stops at once with the command to run.
SYSTEM_GRADE := bwrap:bubblewrap prlimit:util-linux setpriv:util-linux
SYSTEM_TEST  := $(SYSTEM_GRADE) chromium:chromium initdb:postgresql

help:
	@echo "make book          build the course website into _build/html"
	@echo "make serve         serve _build/html on http://127.0.0.1:8000"
	@echo "make test          run the whole test suite"
	@echo "make test-fast     while editing: unit tests, alignment, grading, chapter 02's catalogue (about 4 minutes)"
	@echo "make release       regenerate the student notebooks in chapters/ from solutions/"
	@echo "make check-release fail if chapters/ is out of date with solutions/"
	@echo "make publish       write the public release (book, lessons, student notebooks; no solutions) into _publish/"
	@echo "make samples       write a demo class of submissions to grading/samples"
	@echo "make bench         train chapter 09's Transformer from scratch: seconds to 99% exact match"
	@echo "make bench-grade   time plain nbgrader against autograder on 30 submissions"
	@echo "make train-text    chapter 12's longer run: continue its language model on the plays (log + checkpoint + state)"
	@echo "make ladder        chapter 13's ladder: each change since 2017 trained on the plays, 3 seeds (about 35 minutes)"
	@echo "make copy-table    what pasting published code earns, per exercise, the week it opens"

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $@

_vendor/mathjax/tex-chtml.js: tools/vendor_mathjax.py | $(VENV)/.installed
	$(PY) tools/vendor_mathjax.py

book: $(VENV)/.installed _vendor/mathjax/tex-chtml.js
	rm -rf _build/html
	$(PY) tools/build_book.py . -W -n --keep-going
	@echo
	@echo "The book is in _build/html. Open _build/html/index.html in a browser, or run: make serve"

serve:
	@test -f _build/html/index.html || { echo "No book built yet: run make book first"; exit 1; }
	@echo "Serving the book on http://127.0.0.1:8000 (Ctrl-C to stop)"
	$(PY) -m http.server 8000 --bind 127.0.0.1 --directory _build/html

system-test:
	@bash tools/system_packages.sh $(SYSTEM_TEST)

system-grade:
	@bash tools/system_packages.sh $(SYSTEM_GRADE)

# system-test first: a machine without the packages stops in seconds, before the venv is built. The 25 slowest
# steps are listed at the end, so that every CI log says where the suite's time went.
test: system-test $(VENV)/.installed
	$(PY) -m pytest --durations=25

# What a maintainer runs while editing: no book, browser, PostgreSQL, Dask or whole catalogue; one chapter's.
test-fast: system-grade $(VENV)/.installed
	$(PY) -m pytest -q -m "not (book or browser or grading or slow or postgres or dask)"
	CATALOGUES=02 $(PY) -m pytest -q tests/test_catalogue.py

release: $(VENV)/.installed
	$(PY) -m autograder release

check-release: $(VENV)/.installed
	$(PY) -m autograder release --check

publish: $(VENV)/.installed
	$(PY) -m autograder publish --out _publish

samples: $(VENV)/.installed
	$(PY) -m coursetools.samples grading/samples

bench: $(VENV)/.installed
	$(PY) tools/bench_train.py

bench-grade: system-grade $(VENV)/.installed
	$(PY) tools/bench_grade.py $(ARGS)

# Niced: it keeps one core busy. Continues the run of course/shakespeare_lm_state.pt (model, optimiser, batches) and
# appends a stretch to course/shakespeare_lm_log.txt; writes course/shakespeare_lm.txt. ARGS="--minutes 60" bounds the
# stretch; ARGS="--fresh --total-minutes 600" plans a new run (see tools/train_text.py).
train-text: $(VENV)/.installed
	nice -n 10 $(PY) tools/train_text.py $(ARGS)

# Niced, one thread, about 35 minutes on a busy 2-core machine. Writes course/ladder_log.txt (chapter 13 reads it).
ladder: $(VENV)/.installed
	nice -n 10 $(PY) tools/ladder.py

copy-table: system-grade $(VENV)/.installed
	$(PY) tools/copy_table.py

clean:
	rm -rf _build grading _publish .pytest_cache
