# The two set-up commands of the README: `make demo` and `make test`. Each installs what is
# missing, configures once, builds incrementally into build/ and runs.
# TORCH=debian (default): Debian's libtorch-dev 1.13 (CPU). TORCH=pip: the LibTorch inside
# PyTorch's pip wheel (2.11, CUDA build), fetched into .deps/ and built in build-pip/.
TORCH ?= debian
TORCH_PIP_VERSION ?= 2.11.0
TORCH_PIP_DIR := .deps/torch-pip-$(TORCH_PIP_VERSION)
ifeq ($(TORCH),pip)
BUILD_DIR ?= build-pip
# The linker finds the NVIDIA libraries the wheel's LibTorch links (beside it, as pip puts
# them, where its own run path looks at run time) and the CUDA toolkit's.
TORCH_PIP_NVIDIA := $(CURDIR)/$(TORCH_PIP_DIR)/nvidia
TORCH_CMAKE_FLAGS := -DCMAKE_PREFIX_PATH=$(CURDIR)/$(TORCH_PIP_DIR)/torch \
  "-DCMAKE_EXE_LINKER_FLAGS=-Wl,-rpath-link,$(TORCH_PIP_NVIDIA)/cu13/lib:$(TORCH_PIP_NVIDIA)/nvshmem/lib:/usr/local/cuda/lib64"
TORCH_DEPS := torch-pip
else ifeq ($(TORCH),debian)
BUILD_DIR ?= build
TORCH_CMAKE_FLAGS :=
TORCH_DEPS :=
else
$(error TORCH=$(TORCH): use TORCH=debian (Debian's LibTorch 1.13) or TORCH=pip (the pip wheel's 2.x))
endif
BUILD_TYPE ?= Release
# CI builds treat warnings as errors; local builds only show them.
WERROR := $(if $(CI),ON,OFF)
# A new build folder compiles each target's sources as a few unity files (CMake's UNITY_BUILD,
# 8 sources to a file): LibTorch's headers are read once per file, not per source, which takes a
# clean build to roughly a third of its compile time, the newcomer's `make demo` and CI's
# included. UNITY=OFF at the first configure keeps one object per source, for quick rebuilds
# after one edit. Either way the choice is CMake's cache's from then on.
UNITY ?= ON
JOBS ?= $(shell nproc)

.PHONY: all deps torch-pip export-venv configure build demo test bench clean

all: build

deps: $(TORCH_DEPS)
	@scripts/install-deps.sh

torch-pip:
	@scripts/install-torch-pip.sh $(TORCH_PIP_DIR) $(TORCH_PIP_VERSION)

# The Python tests/exporter_test.sh runs tools/stagecut_export.py with (scripts/install-export-venv.sh):
# EXPORT_TORCH=debian (default, both LibTorch legs of CI): Debian's torch 1.13 and torchvision,
# transformers 4.40 from PyPI. EXPORT_TORCH=pip: the wheel's torch 2.x with the torchvision and
# transformers of today; about 4 minutes more (its venv, slower imports), so CI leaves it out.
EXPORT_TORCH ?= debian
ifeq ($(EXPORT_TORCH),pip)
EXPORT_VENV := .deps/export-venv-torch2
EXPORT_VENV_TORCH := $(TORCH_PIP_DIR)
EXPORT_DEPS := torch-pip
else ifeq ($(EXPORT_TORCH),debian)
EXPORT_VENV := .deps/export-venv
EXPORT_VENV_TORCH :=
EXPORT_DEPS :=
else
$(error EXPORT_TORCH=$(EXPORT_TORCH): use EXPORT_TORCH=debian (Debian's torch 1.13) or EXPORT_TORCH=pip (the wheel's 2.x))
endif
export-venv: deps $(TORCH_DEPS) $(EXPORT_DEPS)
	@scripts/install-deps.sh --export
	@scripts/install-export-venv.sh $(EXPORT_VENV) $(EXPORT_VENV_TORCH)

CONFIGURE := cmake -S . -B $(BUILD_DIR) -G Ninja -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
  -DSTAGECUT_WERROR=$(WERROR) -DCMAKE_UNITY_BUILD=$(UNITY) $(TORCH_CMAKE_FLAGS)

$(BUILD_DIR)/build.ninja: | deps
	$(CONFIGURE)

configure: deps $(BUILD_DIR)/build.ninja

build: configure
	cmake --build $(BUILD_DIR) -j $(JOBS)

# The demo needs only the stagecut executables: neither the tests nor the benchmarks are built.
demo: $(TORCH_DEPS)
	@scripts/make-demo.sh $(BUILD_DIR) $(JOBS) -- $(CONFIGURE)

test: build export-venv
	STAGECUT_EXPORT_PYTHON=$(CURDIR)/$(EXPORT_VENV)/bin/python ctest --test-dir $(BUILD_DIR) --output-on-failure -j $(JOBS)

bench: build
	@for b in $(BUILD_DIR)/bench/bench_*; do echo "== $$b"; $$b; done

clean:
	rm -rf $(BUILD_DIR)

# Reliability builds (docs/reliability.md), each in its own folder, LibTorch-free.
# test-asan: the LibTorch-free parts and their tests under ASan + UBSan; any report fails ctest.
ASAN_DIR ?= build-asan
ASAN_ENV := ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

$(ASAN_DIR)/build.ninja: | deps
	cmake -S . -B $(ASAN_DIR) -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTAGECUT_TORCH=OFF \
	  -DSTAGECUT_SANITIZE=ON -DSTAGECUT_BENCH=OFF -DCMAKE_UNITY_BUILD=$(UNITY)

.PHONY: test-asan fuzz
test-asan: deps $(ASAN_DIR)/build.ninja
	cmake --build $(ASAN_DIR) -j $(JOBS)
	$(ASAN_ENV) ctest --test-dir $(ASAN_DIR) --output-on-failure -j $(JOBS)

# fuzz: the libFuzzer targets of fuzz/ with clang, each run FUZZ_SECONDS (fuzz/run.sh).
FUZZ_DIR ?= build-fuzz
FUZZ_SECONDS ?= 60

$(FUZZ_DIR)/build.ninja: | deps
	@scripts/install-deps.sh --fuzz
	cmake -S . -B $(FUZZ_DIR) -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  -DSTAGECUT_TORCH=OFF -DSTAGECUT_FUZZ=ON

fuzz: deps $(FUZZ_DIR)/build.ninja
	cmake --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_targets
	fuzz/run.sh $(FUZZ_DIR) $(FUZZ_SECONDS)
