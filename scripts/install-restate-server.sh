#!/usr/bin/env bash
# Installs the Restate server the threadline-restate tests (threadline_testkit::restate) and
# `cargo xtask durable-e2e` start, pinned, into target/restate-server/:
#   node_modules/@restatedev/restate-server-linux-x64/bin/restate-server
# (xtask/restate-server/package-lock.json: only the platform package, with its integrity;
# not the meta package, whose @scarf/scarf dependency runs a telemetry postinstall script).
# Run by `cargo xtask restate-server` and by `cargo xtask ci` before the tests.
set -euo pipefail
exec bash "$(dirname "$0")/install-pinned-npm-binary.sh" restate-server xtask/restate-server \
  node_modules/@restatedev/restate-server-linux-x64/bin/restate-server \
  "restate-server 1.7.12" THREADLINE_RESTATE_SERVER
