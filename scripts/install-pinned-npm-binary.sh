#!/usr/bin/env bash
# The one way the repo installs a pinned native binary from npm (the Restate server, Claude
# Code): `npm ci --ignore-scripts` of a lock under xtask/ that holds only the linux-x64
# platform package, with its integrity, into target/<name>/. Idempotent: a stamp records the
# hash of the lock it installed, so a second run is instant.
#
# Usage: install-pinned-npm-binary.sh NAME PINS_DIR BINARY_PATH_IN_DEST WHAT_TO_INSTALL_BY_HAND ENV_VARIABLE
#   NAME        the target/ directory and the name in messages (e.g. restate-server)
#   PINS_DIR    the directory under the repository holding package.json and package-lock.json
#   BINARY      the binary's path inside target/NAME/
#   BY_HAND     what a user on another platform installs themselves (e.g. "restate-server 1.7.12")
#   VARIABLE    the environment variable that then names its path
set -euo pipefail
name="$1"
root="$(cd "$(dirname "$0")/.." && pwd)"
pins="$root/$2"
dest="$root/target/$name"
bin="$dest/$3"

os="$(uname -s)"
arch="$(uname -m)"
if [[ "$os" != "Linux" || "$arch" != "x86_64" ]]; then
  echo "install-$name: the pinned package is for Linux x86_64; this machine is $os $arch." \
    "Install $4 yourself and set $5 to its path." >&2
  exit 1
fi

stamp="$(sha256sum < "$pins/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$dest/.stamp" 2>/dev/null || true)" != "$stamp" || ! -x "$bin" ]]; then
  command -v npm >/dev/null || { echo "install-$name: npm is missing" >&2; exit 1; }
  mkdir -p "$dest"
  rm -f "$dest/.stamp"
  cp "$pins/package.json" "$pins/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)
  [[ -x "$bin" ]] || { echo "install-$name: npm ci did not produce $bin" >&2; exit 1; }
  echo "$stamp" > "$dest/.stamp"
fi
echo "$name ready: $bin"
