# dropfetch — build, test, run and benchmark.
#   make deps      install the missing build dependencies (Debian/Ubuntu, apt-get)
#   make build     debug build              make release   release build
#   make run       debug build, then `dropfetch run` with built-in defaults (spool ./spool); ARGS="--once"
#   make test      build the tests and run them (Swift Testing)
#   make bench     release build, then bench/run.sh (installs nginx, aria2 and curl if missing)
#   make fuzz      build the libFuzzer targets of Fuzz/, run each FUZZ_SECONDS (600) s; see Fuzz/README.md
#   make clean     remove build products (keeps fetched package checkouts)

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.NOTPARALLEL:
.DEFAULT_GOAL := build

ifeq ($(shell command -v swift 2>/dev/null),)
export PATH := /opt/swift/usr/bin:$(PATH)
endif

SWIFT ?= swift
ARGS ?=
DEPS_PKGS := libcurl4-openssl-dev libyaml-dev libssl-dev pkg-config curl
TEST_LOG := .build/test-output.txt

# install_missing: apt-get install the packages named in $$missing, if any. A word "a|b" installs the
# first of a, b that apt knows. Root runs apt-get itself; others go through sudo when it exists.
define install_missing
if [ -n "$$missing" ]; then \
  if [ "$$(id -u)" -eq 0 ]; then sudo=""; \
  elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
  else echo "error: not root and no sudo; install these packages:$$missing" >&2; exit 1; fi; \
  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -q; \
  pkgs=""; \
  for alt in $$missing; do \
    pick="$${alt%%|*}"; \
    for p in $${alt//|/ }; do \
      case "$$(apt-cache show "$$p" 2>/dev/null || true)" in *"Package: "*) pick="$$p"; break ;; esac; \
    done; \
    pkgs="$$pkgs $$pick"; \
  done; \
  echo "installing:$$pkgs"; \
  $$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $$pkgs; \
fi
endef

.PHONY: deps bench-deps build release run test bench fuzz clean

deps:
	@if ! command -v dpkg >/dev/null 2>&1; then \
	  echo "deps: no dpkg here; make sure these (or your system's equivalents) are installed: $(DEPS_PKGS)"; \
	  exit 0; \
	fi; \
	missing=""; \
	for p in $(DEPS_PKGS); do \
	  case "$$(dpkg -s "$$p" 2>/dev/null || true)" in \
	    *"Status: install ok installed"*) ;; \
	    *) missing="$$missing $$p" ;; \
	  esac; \
	done; \
	$(install_missing)

# The bench needs the commands, however they were installed; nginx-light is the smallest nginx.
bench-deps: deps
	@PATH="$$PATH:/usr/sbin:/sbin"; \
	missing=""; \
	command -v nginx >/dev/null 2>&1 || missing="$$missing nginx-light|nginx"; \
	command -v aria2c >/dev/null 2>&1 || missing="$$missing aria2"; \
	command -v curl >/dev/null 2>&1 || missing="$$missing curl"; \
	$(install_missing)

build: deps
	$(SWIFT) build

release: deps
	$(SWIFT) build -c release

run: build
	./.build/debug/dropfetch run $(ARGS)

# Fails when a test fails, and also when Swift Testing printed no summary line (no tests ran).
test: deps
	$(SWIFT) build --build-tests
	@mkdir -p .build
	$(SWIFT) test --skip-build --disable-xctest --enable-swift-testing 2>&1 | tee $(TEST_LOG)
	@grep -Eq 'Test run with [0-9]+ tests? .*(passed|failed)' $(TEST_LOG) || \
	  { echo "make test: no Swift Testing summary line in the output" >&2; exit 1; }

bench: bench-deps
	$(SWIFT) build -c release
	bench/run.sh

fuzz: deps
	Fuzz/run.sh

clean:
	$(SWIFT) package clean
