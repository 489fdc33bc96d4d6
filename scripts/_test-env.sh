# shellcheck shell=bash
# Sourced by scripts/test and scripts/test-slow: the set-up both suites share.
# Expects ROOT to be set to the repo root. Not executable on its own.

say() { printf 'golem test: %s\n' "$*"; }

"$ROOT/scripts/setup" --dev || { say "FAILED step: setup"; exit 1; }

cd "$ROOT" || exit 1
export HF_HUB_OFFLINE=1
export VIRTUAL_ENV="$ROOT/.venv"
export PATH="$ROOT/.venv/bin:$PATH"

# systemd-analyze lets tests/test_deploy_files.py verify systemd/golem.service.
# Best effort: install Debian's systemd package if it is missing; never fail here.
ensure_systemd_analyze() {
    command -v systemd-analyze >/dev/null 2>&1 && return 0
    local sudo=()
    if [[ "$(id -u)" != 0 ]]; then
        if command -v sudo >/dev/null 2>&1 && sudo -n true >/dev/null 2>&1; then
            sudo=(sudo -n)
        else
            say "note: systemd-analyze not found and not root; unit verification will be skipped"
            return 0
        fi
    fi
    if ! command -v apt-get >/dev/null 2>&1; then
        say "note: systemd-analyze not found and no apt-get; unit verification will be skipped"
        return 0
    fi
    say "installing Debian's systemd package for systemd-analyze..."
    local log
    log="$(mktemp)"
    if timeout 600 "${sudo[@]}" apt-get update -qq >"$log" 2>&1 \
        && DEBIAN_FRONTEND=noninteractive timeout 600 "${sudo[@]}" apt-get install -y -qq \
            --no-install-recommends systemd >>"$log" 2>&1 \
        && command -v systemd-analyze >/dev/null 2>&1; then
        say "systemd-analyze installed"
    else
        say "note: could not install systemd (see $log); unit verification will be skipped"
        return 0
    fi
    rm -f "$log"
}
ensure_systemd_analyze || true

# --- npm tools -----------------------------------------------------------------
# Later issues add anvil here (a real local EVM node for RPC-mode tests), e.g.:
#   npm install --no-save --no-audit --no-fund @foundry-rs/anvil-linux-amd64
#   (into "$ROOT/node_modules"; run node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil
#   directly; skip when already installed at the pinned version)
# Not installed yet.
# -------------------------------------------------------------------------------
