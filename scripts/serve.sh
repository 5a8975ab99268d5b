#!/usr/bin/env bash
# scripts/serve.sh -- sets the machine up (scripts/setup.sh: packages + build) and runs
# the collector in the foreground: build/cloudprof serve with the embedded defaults
# (data in ./data, agents on port 1715). Extra arguments go to `cloudprof serve`.
#
# usage: scripts/serve.sh [serve options...]      (see: build/cloudprof serve --help)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# setup's messages go to stderr so that the collector owns stdout
"$root/scripts/setup.sh" >&2
exec "$root/build/cloudprof" serve "$@"
