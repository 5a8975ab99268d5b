#!/usr/bin/env bash
# scripts/node-tools.sh -- installs the test-only Node.js tools of tests/tools/ (DuckDB's
# @duckdb/node-api, hyparquet, hyparquet-compressors: the independent Parquet readers of
# tests/integration/pq_interop_test.c; playwright-core, which drives Debian's chromium in
# tests/integration/ui_browser_test.c; oidc-provider and jose, the OpenID provider and the
# token forger of tests/oidc/provider.mjs for tests/integration/oidc_test.c; exceljs, the
# spreadsheet reader of tests/tools/xlsxread.mjs for tests/integration/xlsx_export_test.c) into
# tests/tools/node_modules.
#
# * Installs Debian's nodejs and npm (apt-get --no-install-recommends) only when `node`
#   is missing. Needs root, or sudo, then.
# * Runs `npm ci` (exact versions of tests/tools/package-lock.json) only when
#   node_modules is missing or was installed from another lock: the sha256 of
#   package-lock.json is kept in node_modules/.cp-lock-hash.
# * Nothing here is part of the product: cloudprof never links or runs these.
#
# usage: scripts/node-tools.sh          (idempotent; a no-op when up to date)
# env:   NODE_TOOLS_FORCE=1             reinstall even when up to date
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
tools=$root/tests/tools
lock=$tools/package-lock.json
stamp=$tools/node_modules/.cp-lock-hash

say() { echo "node-tools: $*"; }
die() { echo "node-tools: error: $*" >&2; exit 1; }

[[ -f $lock ]] || die "$lock is missing"

# ---- node and npm ---------------------------------------------------------------------
. "$root/scripts/ensure-node.sh"
ensure_node

# ---- the tools ------------------------------------------------------------------------
want=$(sha256sum "$lock" | cut -d' ' -f1)
have=$(cat "$stamp" 2>/dev/null || true)
if [[ ${NODE_TOOLS_FORCE:-0} != 1 && $want == "$have" &&
      -d $tools/node_modules/@duckdb/node-api && -d $tools/node_modules/hyparquet &&
      -d $tools/node_modules/hyparquet-compressors && -d $tools/node_modules/playwright-core &&
      -d $tools/node_modules/oidc-provider && -d $tools/node_modules/jose && -d $tools/node_modules/exceljs ]]; then
    say "up to date ($(node --version), tests/tools/node_modules)"
    exit 0
fi

say "npm ci in tests/tools ($(node --version), npm $(npm --version 2>/dev/null))"
rm -f "$stamp"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
if ! (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error) >"$log" 2>&1; then
    cat "$log" >&2
    if grep -qiE 'ENOTFOUND|EAI_AGAIN|ECONNREFUSED|ETIMEDOUT|ECONNRESET|network|offline' "$log"; then
        die "npm ci failed: the npm registry is not reachable (offline?). The Parquet interop and web UI" \
            "browser tests need tests/tools/node_modules; they skip (exit 77) without it (outside CI)."
    fi
    die "npm ci failed in tests/tools (see above)"
fi
echo "$want" >"$stamp"
say "installed: $(cd "$tools" && node -e '
  const l = require("./package-lock.json").packages;
  console.log(["@duckdb/node-api", "hyparquet", "hyparquet-compressors", "playwright-core", "oidc-provider", "jose",
               "exceljs"]
    .map(n => n + "@" + l["node_modules/" + n].version).join(" "))')"
