#!/usr/bin/env bash
# Installs the MCP servers the threadline-mcp tests start and the official Python SDK the
# threadline-mock tests drive, pinned, into target/test-servers/:
#   npm/node_modules/@modelcontextprotocol/server-everything  (xtask/test-servers/package-lock.json)
#   venv/ with the Python `mcp` SDK and `anthropic[bedrock,vertex]` (xtask/test-servers/requirements.txt)
# Idempotent: a stamp per part records the pin it installed. Run by `cargo xtask mcp-servers`
# and by `cargo xtask ci` before the tests.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pins="$root/xtask/test-servers"
dest="$root/target/test-servers"
mkdir -p "$dest/npm"

npm_stamp="$(cat "$pins/package-lock.json" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$dest/npm/.stamp" 2>/dev/null || true)" != "$npm_stamp" ]]; then
  cp "$pins/package.json" "$pins/package-lock.json" "$dest/npm/"
  command -v npm >/dev/null || { echo "install-test-servers: npm is missing" >&2; exit 1; }
  (cd "$dest/npm" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
  echo "$npm_stamp" > "$dest/npm/.stamp"
fi

py_stamp="$(cat "$pins/requirements.txt" | sha256sum | cut -d' ' -f1)"
if [[ "$(cat "$dest/venv/.stamp" 2>/dev/null || true)" != "$py_stamp" ]]; then
  rm -rf "$dest/venv"
  python3 -m venv "$dest/venv" || {
    echo "install-test-servers: python3 -m venv failed (Debian: apt-get install python3-venv; mcp needs Python >= 3.10)" >&2
    exit 1
  }
  "$dest/venv/bin/pip" install --quiet --disable-pip-version-check -r "$pins/requirements.txt"
  echo "$py_stamp" > "$dest/venv/.stamp"
fi
echo "test servers ready in $dest"
