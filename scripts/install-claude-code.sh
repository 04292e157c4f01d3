#!/usr/bin/env bash
# Installs Claude Code 2.1.328, the real one, pinned, into target/claude-code/ for
# `cargo xtask claude-code`:
#   node_modules/@anthropic-ai/claude-code-linux-x64/claude   (a self-contained native binary)
# xtask/claude-code/package-lock.json holds only that platform package, with its integrity.
# Not the meta package @anthropic-ai/claude-code: its bin/claude.exe is a shell stub that exits 1
# until its postinstall script (node install.cjs) hard-links the platform binary over it, and
# npm ci refuses a lock that lists the meta package without all eight platform packages.
# Run by `cargo xtask claude-code-install` and by `cargo xtask claude-code`.
set -euo pipefail
exec bash "$(dirname "$0")/install-pinned-npm-binary.sh" claude-code xtask/claude-code \
  node_modules/@anthropic-ai/claude-code-linux-x64/claude \
  "Claude Code 2.1.328" THREADLINE_CLAUDE_CODE
