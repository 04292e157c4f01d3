#!/usr/bin/env bash
# Installs the Restate server the threadline-restate tests (threadline_testkit::restate) and
# `cargo xtask durable-e2e` start, pinned, into target/restate-server/:
#   node_modules/@restatedev/restate-server-linux-x64/bin/restate-server
# (xtask/restate-server/package-lock.json: only the platform package, with its integrity;
# not the meta package, whose @scarf/scarf dependency runs a telemetry postinstall script).
# Idempotent: a stamp records the hash of the lock it installed, so a second run is instant.
# Run by `cargo xtask restate-server` and by `cargo xtask ci` before the tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pins="$root/xtask/restate-server"
dest="$root/target/restate-server"
bin="$dest/node_modules/@restatedev/restate-server-linux-x64/bin/restate-server"

os="$(uname -s)"
arch="$(uname -m)"
if [[ "$os" != "Linux" || "$arch" != "x86_64" ]]; then
  echo "install-restate-server: the pinned package is @restatedev/restate-server-linux-x64;" \
    "this machine is $os $arch. Install restate-server 1.7.12 yourself and set" \
    "THREADLINE_RESTATE_SERVER to its path." >&2
  exit 1
fi

stamp="$(sha256sum < "$pins/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$dest/.stamp" 2>/dev/null || true)" != "$stamp" || ! -x "$bin" ]]; then
  command -v npm >/dev/null || { echo "install-restate-server: npm is missing" >&2; exit 1; }
  mkdir -p "$dest"
  rm -f "$dest/.stamp"
  cp "$pins/package.json" "$pins/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)
  [[ -x "$bin" ]] || { echo "install-restate-server: npm ci did not produce $bin" >&2; exit 1; }
  echo "$stamp" > "$dest/.stamp"
fi
echo "restate-server ready: $bin"
