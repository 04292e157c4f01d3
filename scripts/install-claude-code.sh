#!/usr/bin/env bash
# Installs Claude Code 2.1.328, the real one, pinned, into target/claude-code/ for
# `cargo xtask claude-code` (issue 28):
#   node_modules/@anthropic-ai/claude-code-linux-x64/claude   (a self-contained native binary)
# xtask/claude-code/package-lock.json holds only that platform package, with its integrity.
# Not the meta package @anthropic-ai/claude-code: its bin/claude.exe is a shell stub that exits 1
# until its postinstall script (node install.cjs) hard-links the platform binary over it, and
# npm ci refuses a lock that lists the meta package without all eight platform packages.
# Idempotent: a stamp records the hash of the lock it installed, so a second run is instant.
# Run by `cargo xtask claude-code-install` and by `cargo xtask claude-code`.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
pins="$root/xtask/claude-code"
dest="$root/target/claude-code"
bin="$dest/node_modules/@anthropic-ai/claude-code-linux-x64/claude"

os="$(uname -s)"
arch="$(uname -m)"
if [[ "$os" != "Linux" || "$arch" != "x86_64" ]]; then
  echo "install-claude-code: the pinned package is @anthropic-ai/claude-code-linux-x64;" \
    "this machine is $os $arch. Install Claude Code 2.1.328 yourself and set" \
    "THREADLINE_CLAUDE_CODE to its path." >&2
  exit 1
fi

stamp="$(sha256sum < "$pins/package-lock.json" | cut -d' ' -f1)"
if [[ "$(cat "$dest/.stamp" 2>/dev/null || true)" != "$stamp" || ! -x "$bin" ]]; then
  command -v npm >/dev/null || { echo "install-claude-code: npm is missing" >&2; exit 1; }
  mkdir -p "$dest"
  rm -f "$dest/.stamp"
  cp "$pins/package.json" "$pins/package-lock.json" "$dest/"
  (cd "$dest" && npm ci --ignore-scripts --no-audit --no-fund --prefer-offline --loglevel=error)
  [[ -x "$bin" ]] || { echo "install-claude-code: npm ci did not produce $bin" >&2; exit 1; }
  echo "$stamp" > "$dest/.stamp"
fi
echo "claude-code ready: $bin"
