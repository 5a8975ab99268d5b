#!/usr/bin/env bash
# scripts/setup.sh -- makes a fresh Debian 12 machine ready and builds cloudprof in build/.
#
# 1. Installs the Debian packages the project needs that are missing, and nothing else:
#    installed packages are left alone (in particular an installed postgresql/libpq is
#    not upgraded). apt-get update runs only when something must be installed.
#    Needs root, or sudo.
# 2. Configures and builds build/ (RelWithDebInfo).
#
# usage: scripts/setup.sh
# env:   SETUP_NO_BUILD=1   only install packages
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

packages=(
    build-essential cmake pkg-config clang libclang-rt-14-dev
    libuv1-dev libmicrohttpd-dev libjansson-dev libsqlite3-dev libpq-dev libcurl4-openssl-dev
    libzstd-dev zlib1g-dev libssl-dev libcmocka-dev sqlite3 python3 unzip libarchive-tools
)

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
echo "setup: building build/ (RelWithDebInfo)"
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CP_FIXTURES_DIR:+-DCP_FIXTURES_DIR="$CP_FIXTURES_DIR"}
cmake --build build -j"$(nproc)"
echo "setup: done (build/cloudprof)"
