#!/usr/bin/env bash
# scripts/ui-build.sh -- builds the web UI (ui/: Preact + TypeScript, Vite) into ui/dist/,
# which the next cmake build compiles into cloudprof (tools/embed_ui.c, CP_UI_DIST).
#
# * Installs Debian's nodejs and npm (apt-get --no-install-recommends) only when `node`
#   is missing. Needs root, or sudo, then.
# * Runs `npm ci` (exact versions of ui/package-lock.json) only when ui/node_modules is
#   missing or was installed from another lock: the sha256 of package-lock.json is kept
#   in ui/node_modules/.cp-lock-hash.
# * Then always `npm run build` (type check + vite build: a few seconds).
# * Node is a build tool only: cloudprof serves the built files from its own binary.
#
# usage: scripts/ui-build.sh            (then rebuild: cmake --build build)
# env:   UI_BUILD_FORCE=1               reinstall node_modules even when up to date
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ui=$root/ui
lock=$ui/package-lock.json
stamp=$ui/node_modules/.cp-lock-hash

say() { echo "ui-build: $*"; }
die() { echo "ui-build: error: $*" >&2; exit 1; }

[[ -f $ui/package.json ]] || die "$ui/package.json is missing"
[[ -f $lock ]] || die "$lock is missing"

# ---- node and npm ---------------------------------------------------------------------
. "$root/scripts/ensure-node.sh"
ensure_node

log=$(mktemp)
trap 'rm -f "$log"' EXIT

# ---- dependencies -----------------------------------------------------------------------
want=$(sha256sum "$lock" | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [[ ${UI_BUILD_FORCE:-0} != 1 && -d $ui/node_modules && $want == "$have" ]]; then
    say "node_modules up to date ($(node --version))"
else
    say "npm ci in ui/ ($(node --version), npm $(npm --version 2>/dev/null))"
    rm -f "$stamp"
    if ! (cd "$ui" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
        cat "$log" >&2
        if grep -qiE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network|offline' "$log"; then
            die "npm ci failed: the npm registry is not reachable (offline?). ui/node_modules is needed" \
                "to build the web UI; without ui/dist cloudprof builds and serves the API, and its UI" \
                "pages say the UI was not built."
        fi
        die "npm ci failed in ui/ (see above)"
    fi
    echo "$want" >"$stamp"
fi

# ---- build ------------------------------------------------------------------------------
say "npm run build"
if ! (cd "$ui" && npm run build --silent) >"$log" 2>&1; then
    cat "$log" >&2
    die "npm run build failed in ui/ (see above)"
fi
[[ -f $ui/dist/index.html ]] || die "the build left no ui/dist/index.html"
say "built ui/dist: $(find "$ui/dist" -type f | wc -l) files, $(du -sh "$ui/dist" | cut -f1)" \
    "(rebuild cloudprof to embed them)"
