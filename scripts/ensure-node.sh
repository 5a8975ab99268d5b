# scripts/ensure-node.sh -- sourced by scripts/ui-build.sh and scripts/node-tools.sh:
# ensure_node installs Debian's nodejs and npm (apt-get --no-install-recommends) only when
# `node` or `npm` is missing. Needs root, or sudo, then. Uses the caller's say/die.
ensure_node() {
    command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 && return 0
    say "node/npm missing: installing Debian's nodejs and npm"
    local sudo=()
    if ((EUID != 0)); then
        command -v sudo >/dev/null || die "not root and no sudo: install nodejs and npm by hand"
        sudo=(sudo)
    fi
    local apt=("${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300)
    "${apt[@]}" update -qq || die "apt-get update failed (offline? the Debian mirror must be reachable)"
    "${apt[@]}" install -y -qq --no-install-recommends nodejs npm ||
        die "apt-get install nodejs npm failed (offline? the Debian mirror must be reachable)"
    command -v node >/dev/null 2>&1 || die "node still missing after installing nodejs"
}
