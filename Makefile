# `make demo` and `make test` do all set-up on a fresh machine with only Python 3.11.
PYTHON ?= python3.11
VENV := .venv
PY := $(VENV)/bin/python

# The API reference: every package that imports without optional libraries (burnpy_cuda and
# burnpy_wgpu import without CuPy/wgpu and say so when used). Listed because burnpy's
# ``__all__`` does not name its subpackages, and pdoc follows ``__all__``.
DOC_MODULES := burnpy burnpy.tensor burnpy.nn burnpy.func burnpy.optim \
	burnpy.record burnpy.train burnpy.data burnpy.autodiff burnpy.custom_ops burnpy.backend \
	burnpy.quantization burnpy.testing burnpy.models burnpy.onnx burnpy.capture burnpy.amp \
	burnpy.linalg burnpy_cpu burnpy_cuda burnpy_wgpu

.PHONY: demo test lint typecheck docs bench clean pinn gpt gpu-check gpu-prepare

$(VENV)/.installed: pyproject.toml
	@command -v $(PYTHON) >/dev/null 2>&1 || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[plot,examples]"
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	# torch is pinned: 2.13.0 is the CPU build this project's oracle uses.
	$(PY) -m pip install -q "torch==2.13.0"
	$(PY) -m pip install -q -e ".[test,plot]"
	touch $@

demo: $(VENV)/.installed
	$(PY) -m burnpy.examples.digits --out runs/digits

# Lint, type-check and build the docs first, so the suite's summary is the last thing printed.
test: $(VENV)/.installed-test
	$(PY) -m ruff check .
	$(PY) -m mypy
	$(MAKE) --no-print-directory docs
	sh scripts/ensure_webgpu_adapter.sh $(PY)
	$(PY) -m pytest -q -n 2 --dist loadfile

# The API reference, as HTML in docs/api/ (open docs/api/index.html).
docs: $(VENV)/.installed-test
	rm -rf docs/api
	$(PY) -m pdoc -o docs/api $(DOC_MODULES)

typecheck: $(VENV)/.installed-test
	$(PY) -m mypy

lint: $(VENV)/.installed-test
	$(PY) -m ruff check .

bench: $(VENV)/.installed-test
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/overhead.py
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/conv.py
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/gpt_step.py
	OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 $(PY) benchmarks/gpt_generate.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .mypy_cache docs/api

# The physics-informed network for Burgers' equation (README: Physics-informed networks).
pinn: $(VENV)/.installed
	$(PY) -m burnpy.examples.pinn --out runs/pinn

gpt: $(VENV)/.installed
	$(PY) -m burnpy.examples.gpt --out runs/gpt

# The prepared GPU check (scripts/gpu_check.py; README: "Checking on a GPU"). On the device
# machine, with .gpu/ carried: `make gpu-check` (or `bash scripts/gpu_check.sh` where there is
# no make). Here, without a GPU: `make gpu-check DRY=1` runs the same logic (tests only
# collected, commands failing fast) into out/gpu-check.
gpu-check:
ifeq ($(DRY),1)
	$(MAKE) --no-print-directory $(VENV)/.installed-test
	PY=$(PY) bash scripts/gpu_check.sh --dry-run --out out/gpu-check
else
	bash scripts/gpu_check.sh
endif

# Fetch into .gpu/ what the device image lacks (the wgpu wheels, the Vulkan loader).
gpu-prepare: $(VENV)/.installed-test
	bash scripts/gpu_prepare.sh $(PY)
