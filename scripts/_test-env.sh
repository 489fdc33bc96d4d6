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
# anvil: a real local EVM node for RPC-mode tests (golem/testing/anvil.py). The
# npm package ships one static binary; we run it directly, never through npx.
# Installed into "$ROOT/node_modules" (git-ignored), skipped when already there at
# the pinned version. Tests need it: a failed install fails the run, log shown.
ANVIL_PKG="@foundry-rs/anvil-linux-amd64"
ANVIL_VERSION="1.7.1"
ANVIL_DIR="$ROOT/node_modules/$ANVIL_PKG"
ensure_anvil() {
    local installed=""
    if [[ -f "$ANVIL_DIR/package.json" ]]; then
        installed="$(sed -n 's/^ *"version": *"\([^"]*\)".*/\1/p' "$ANVIL_DIR/package.json" | head -n1)"
    fi
    if [[ "$installed" == "$ANVIL_VERSION" && -f "$ANVIL_DIR/bin/anvil" ]]; then
        chmod +x "$ANVIL_DIR/bin/anvil"
        return 0
    fi
    if ! command -v npm >/dev/null 2>&1; then
        say "FAILED step: anvil: npm not found (install Node.js >= 20 and npm)"
        return 1
    fi
    say "installing $ANVIL_PKG@$ANVIL_VERSION into node_modules${installed:+ (found $installed)}..."
    local log
    log="$(mktemp)"
    if ! timeout 600 npm install --no-save --no-audit --no-fund --prefix "$ROOT" \
            "$ANVIL_PKG@$ANVIL_VERSION" >"$log" 2>&1 \
        || [[ ! -f "$ANVIL_DIR/bin/anvil" ]]; then
        say "FAILED step: anvil install; npm log ($log):"
        cat "$log" >&2
        return 1
    fi
    chmod +x "$ANVIL_DIR/bin/anvil"
    if ! "$ANVIL_DIR/bin/anvil" --version >>"$log" 2>&1; then
        say "FAILED step: anvil installed but does not run; log ($log):"
        cat "$log" >&2
        return 1
    fi
    rm -f "$log"
    say "anvil $ANVIL_VERSION installed"
}
ensure_anvil || exit 1
export GOLEM_ANVIL="$ANVIL_DIR/bin/anvil"
# -------------------------------------------------------------------------------
