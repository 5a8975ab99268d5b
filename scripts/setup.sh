#!/usr/bin/env bash
# scripts/setup.sh -- makes a fresh Debian 12 machine ready and builds cloudprof in build/.
#
# 1. Installs the Debian packages the project needs that are missing, and nothing else:
#    installed packages are left alone (in particular an installed postgresql/libpq is
#    not upgraded). apt-get update runs only when something must be installed.
#    Needs root, or sudo.
#    With SETUP_TEST_TOOLS=1 (scripts/test.sh sets it) also Debian's chromium, for the
#    browser test of the web UI (tests/integration/ui_browser_test.c); serving needs none.
# 2. Builds the web UI into ui/dist (scripts/ui-build.sh: Node.js from Debian when
#    missing, npm ci when ui/package-lock.json changed, vite build), which the cmake
#    build embeds in the binary.
# 3. Configures and builds build/ (RelWithDebInfo).
#
# usage: scripts/setup.sh
# env:   SETUP_NO_BUILD=1   only install packages
#        SETUP_TEST_TOOLS=1 also install the browser the tests drive (chromium)
#        SETUP_NO_UI=1      skip step 2 (the binary then serves the API and a "web UI not
#                           built" page, unless an earlier ui/dist is there)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

packages=(
    build-essential cmake pkg-config clang libclang-rt-14-dev
    libuv1-dev libmicrohttpd-dev libjansson-dev libsqlite3-dev libpq-dev libcurl4-openssl-dev
    libzstd-dev zlib1g-dev libssl-dev libexpat1-dev libcjose-dev libcrypt-dev libgnutls28-dev libcmocka-dev sqlite3 python3 unzip libarchive-tools
    openssl python3-prometheus-client
)
if [[ ${SETUP_TEST_TOOLS:-0} == 1 ]]; then packages+=(chromium); fi

# ---- packages --------------------------------------------------------------------------
missing=()
for p in "${packages[@]}"; do
    # dpkg -s also succeeds for removed packages whose config files remain: check the state
    if ! dpkg -s "$p" 2>/dev/null | grep -q '^Status: install ok installed'; then
        missing+=("$p")
    fi
done

if ((${#missing[@]} == 0)); then
    echo "setup: all ${#packages[@]} packages present"
else
    echo "setup: installing ${missing[*]}"
    sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || { echo "setup: not root and no sudo: install ${missing[*]} by hand" >&2; exit 1; }
        sudo=(sudo)
    fi
    apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
    "${apt[@]}" update -qq
    # --no-upgrade: only the missing packages are named, and none of them is upgraded
    "${apt[@]}" install -y -qq --no-install-recommends --no-upgrade "${missing[@]}"
fi

# ---- build -------------------------------------------------------------------------------
if [[ ${SETUP_NO_BUILD:-0} == 1 ]]; then exit 0; fi
# The UI first: the cmake build embeds ui/dist as it finds it.
if [[ ${SETUP_NO_UI:-0} != 1 ]]; then
    echo "setup: building the web UI (scripts/ui-build.sh)"
    "$root/scripts/ui-build.sh"
fi
echo "setup: building build/ (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CP_FIXTURES_DIR:+-DCP_FIXTURES_DIR="$CP_FIXTURES_DIR"}
cmake --build build -j"$(nproc)"
echo "setup: done (build/cloudprof)"
