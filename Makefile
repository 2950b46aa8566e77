# agent-controller — see README.md. `make run` builds and starts the daemon; `make test` tests.

CARGO   ?= cargo
PREFIX  ?= /usr/local
CONFIG  ?= config.yaml
TARGET  := x86_64-unknown-linux-gnu
# A static binary without musl: glibc static-pie (musl would need musl-tools for ring).
STATIC_RUSTFLAGS := -C target-feature=+crt-static
RELEASE_BIN := target/$(TARGET)/release/agent-controller
WORKER_BIN  := target/$(TARGET)/release/agent-worker

.PHONY: build run test deps lint bench release install clean

build:
	$(CARGO) build --release

run: build
	./target/release/agent-controller serve --config $(CONFIG)

# Installs what the tests need (only what is missing), checks formatting and lints, runs all tests.
test: deps lint
	$(CARGO) test

deps:
	@scripts/install-test-deps.sh

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

# Benchmarks print figures (they are not pass/fail); README.md lists them.
bench: release
	scripts/bench.sh $(RELEASE_BIN)

release:
	RUSTFLAGS="$(STATIC_RUSTFLAGS)" $(CARGO) build --release --target $(TARGET)
	@ls -l $(RELEASE_BIN) $(WORKER_BIN)

install: release
	install -D -m 0755 $(RELEASE_BIN) $(DESTDIR)$(PREFIX)/bin/agent-controller
	install -D -m 0755 $(WORKER_BIN) $(DESTDIR)$(PREFIX)/bin/agent-worker
	install -D -m 0644 config.yaml $(DESTDIR)/etc/agent-controller/config.yaml
	install -D -m 0644 systemd/agent-controller.service $(DESTDIR)/etc/systemd/system/agent-controller.service

clean:
	$(CARGO) clean
