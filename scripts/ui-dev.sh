#!/usr/bin/env bash
# scripts/ui-dev.sh -- a loaded cloudprof to try the web UI by hand: builds the UI
# (scripts/ui-build.sh) and cloudprof with the browser test's harness in build/, then
# runs that harness (tests/integration/ui_browser_test.c) with CP_UI_HOLD: it starts
# `cloudprof serve` on loopback, replays the fixture capture, uploads the fixture dumps,
# prints the URL to open (http://127.0.0.1:<port>/) and the window, namespace, pod and
# service the data is in, and keeps the server up for CP_UI_HOLD seconds before it runs
# tests/ui/e2e.mjs. Ctrl-C stops it (and the server).
#
# usage: scripts/ui-dev.sh
# env:   CP_UI_HOLD=SECONDS   how long the server stays up (default 3600)
#        BUILD_DIR=DIR        the cmake build directory (default build)
#        CP_FIXTURES_DIR      the shared fixtures (default ../shared/fixtures beside the repo)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
build=${BUILD_DIR:-build}
export CP_FIXTURES_DIR=${CP_FIXTURES_DIR:-$root/../shared/fixtures}

"$root/scripts/ui-build.sh"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCP_FIXTURES_DIR="$CP_FIXTURES_DIR" >/dev/null
cmake --build "$build" -j"$(nproc)" --target cloudprof integration_ui_browser_test
CP_UI_HOLD=${CP_UI_HOLD:-3600} exec "$build/tests/integration_ui_browser_test"
