# agent-controller — see README.md. `make run` builds and starts the daemon; `make test` tests.

CARGO   ?= cargo
PREFIX  ?= /usr/local
CONFIG  ?= config.yaml
TARGET  := x86_64-unknown-linux-gnu
# A static binary without musl: glibc static-pie (musl would need musl-tools for ring). Its
# relative relocations packed as RELR (glibc >= 2.36, binutils >= 2.38): 176 KB smaller than
# RELA, still position-independent (ASLR kept). Identical functions folded into one by the
# linker (rust-lld's --icf=all: generic copies that compiled to the same code), 54 KB less.
STATIC_RUSTFLAGS := -C target-feature=+crt-static -C link-arg=-Wl,-z,pack-relative-relocs -C link-arg=-Wl,--icf=all
# Where cargo builds: CARGO_TARGET_DIR when set, as cargo itself reads it.
TARGET_DIR  := $(or $(CARGO_TARGET_DIR),target)
RELEASE_BIN := $(TARGET_DIR)/$(TARGET)/release/agent-controller
WORKER_BIN  := $(TARGET_DIR)/$(TARGET)/release/agent-worker
EVAL_BIN    := $(TARGET_DIR)/$(TARGET)/release/agent-eval

.PHONY: build run test fuzz deps lint bench eval release install install-files clean

build:
	$(CARGO) build --release

run: build
	./target/release/agent-controller serve --config $(CONFIG)

# Installs what the tests need (only what is missing), checks formatting and lints, runs all tests.
test: deps lint
	$(CARGO) test

# Property tests of every parser of outside input (tests/fuzz), FUZZ_CASES cases each (make
# test runs 300); prints the count and time per parser.
FUZZ_CASES ?= 100000
fuzz:
	FUZZ_CASES=$(FUZZ_CASES) $(CARGO) test --profile fuzz --test tests fuzz -- --nocapture

deps:
	@scripts/install-test-deps.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

# The eval's tasks on the local model of ../shared/tools/real-llm, in both wire formats and JSON
# mode (needs Chromium; builds and starts the model server the first time). EVAL_ARGS passes
# options on, e.g. EVAL_ARGS="--tasks price,search --repeat 3"; EVAL_SUITE=miniwob runs the
# MiniWoB++ development split instead of the own tasks.
eval: build
	scripts/eval.sh target/release -- $(EVAL_ARGS)

# Benchmarks print figures (they are not pass/fail); README.md lists them.
bench: release
	scripts/bench.sh $(RELEASE_BIN)

release:
	RUSTFLAGS="$(STATIC_RUSTFLAGS)" $(CARGO) build --release --target $(TARGET)
	@ls -l $(RELEASE_BIN) $(WORKER_BIN) $(EVAL_BIN)

install: release install-files

# The copying alone (tests run it on debug binaries): an existing /etc config is never
# overwritten (the new default goes beside it as config.yaml.new); every file is listed.
install-files:
	@DESTDIR="$(DESTDIR)" PREFIX="$(PREFIX)" scripts/install.sh $(RELEASE_BIN) $(WORKER_BIN) $(EVAL_BIN)

clean:
	$(CARGO) clean
