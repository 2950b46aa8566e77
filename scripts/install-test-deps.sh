#!/usr/bin/env bash
# Install what `make test` needs, only when it is missing. Idempotent; safe to run often.
# The tests need the Rust toolchain with rustfmt and clippy, Chromium for the agent-worker's
# browser tests and the web page's, pdfinfo (poppler-utils) to check the PDFs it prints, python3
# with the `mcp`, `openapi-spec-validator`, `prometheus-client` and `playwright` packages, OpenSSH (client and
# server) for the SSH-session tests, and a virtual X server with a window manager and X programs
# for the desktop tests (Xvfb, xwininfo/xprop/xmessage, xsetroot/xmodmap, xterm, openbox), with
# a D-Bus daemon, the AT-SPI bus (at-spi2-core) and GTK 3 for the system's Python (a dialog
# whose widgets the accessibility tests read and click), and the Public Suffix List.
set -euo pipefail

need_apt=()
# Packages the test suite uses, as "command:package".
for pair in "curl:curl" "chromium:chromium" "pdfinfo:poppler-utils" "python3:python3" "pip3:python3-pip" \
            "ssh:openssh-client" "/usr/sbin/sshd:openssh-server" "ssh-keygen:openssh-client" \
            "Xvfb:xvfb" "xwininfo:x11-utils" "xsetroot:x11-xserver-utils" "xterm:xterm" "openbox:openbox" \
            "dbus-daemon:dbus" "/usr/libexec/at-spi-bus-launcher:at-spi2-core"; do
  cmd=${pair%%:*}; pkg=${pair##*:}
  command -v "$cmd" >/dev/null 2>&1 || [ -x "$cmd" ] || need_apt+=("$pkg")
done

# The Public Suffix List the daemon checks wildcards against (src/config/suffixes.rs).
[ -f /usr/share/publicsuffix/public_suffix_list.dat ] || need_apt+=(publicsuffix)

if ! /usr/bin/python3 -c "import gi; gi.require_version('Gtk', '3.0')" >/dev/null 2>&1; then
  need_apt+=(python3-gi gir1.2-gtk-3.0)
fi

if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" -eq 0 ]; then
    apt-get update -qq && apt-get install -y -qq "${need_apt[@]}"
  elif command -v sudo >/dev/null 2>&1; then
    sudo apt-get update -qq && sudo apt-get install -y -qq "${need_apt[@]}"
  else
    echo "missing packages: ${need_apt[*]} (install them as root)" >&2
    exit 1
  fi
fi

# The official MCP Python client drives `agent-controller mcp` in the tests; the OpenAPI
# document is checked by openapi-spec-validator and /metrics parsed by prometheus_client; an
# exported run's script is run on Playwright for Python (with the system's Chromium, so no
# `playwright install`). A Debian python3 refuses pip outside a venv (PEP 668): asked again
# with --break-system-packages.
for pair in "mcp:mcp" "openapi_spec_validator:openapi-spec-validator" "prometheus_client:prometheus-client" \
            "playwright.sync_api:playwright"; do
  module=${pair%%:*}; package=${pair##*:}
  if ! python3 -c "import $module" >/dev/null 2>&1; then
    python3 -m pip install -q "$package" || python3 -m pip install -q --break-system-packages "$package"
  fi
done

for comp in rustfmt clippy; do
  if ! cargo "${comp/rustfmt/fmt}" --version >/dev/null 2>&1; then
    rustup component add "$comp"
  fi
done
