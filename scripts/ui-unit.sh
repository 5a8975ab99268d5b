#!/usr/bin/env bash
# scripts/ui-unit.sh -- the web UI's unit tests (vitest over ui/src/**/*.test.ts: time
# zones and periods, the duration filter, the tree model...). CTest runs it as ui/unit.
# Needs ui/node_modules (scripts/ui-build.sh installs it); without it the test skips
# (exit 77), except under CI (CI set), where a missing tool is a failure.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root/ui"
if [[ ! -x node_modules/.bin/vitest ]]; then
    echo "ui-unit: ui/node_modules is missing: run scripts/ui-build.sh" >&2
    [[ -n ${CI:-} ]] && exit 1
    exit 77
fi
exec node_modules/.bin/vitest run
