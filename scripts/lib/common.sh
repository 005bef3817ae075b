# Sourced by scripts/setup and scripts/setup-libtorch: who may install system
# packages, and the project's virtual environment (.venv/) that both fill.

# Sets `apt` to the command that installs Debian packages here ("apt-get" as
# root, "sudo -n apt-get" with password-less sudo) and returns 0, or returns 1
# when none may: no apt-get, or not root and no password-less sudo.
# PROFILING_SETUP_APT_GET replaces the apt-get looked up on PATH; empty means
# there is none (the tests use it to stand for a machine without apt).
apt_command() {
    local apt_get
    if [ -n "${PROFILING_SETUP_APT_GET+x}" ]; then
        apt_get="$PROFILING_SETUP_APT_GET"
    else
        apt_get="$(command -v apt-get 2>/dev/null || true)"
    fi
    [ -n "$apt_get" ] || return 1
    if [ "$(id -u)" -eq 0 ]; then
        apt="$apt_get" apt_how="apt-get"
    elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        apt="sudo -n $apt_get" apt_how="sudo apt-get"
    else
        return 1
    fi
}

# apt_install PACKAGE...: installs Debian packages with the command
# apt_command set; apt's own output is shown only when it fails.
apt_install() {
    local log status=0
    log="$(mktemp)"
    { $apt update -qq && DEBIAN_FRONTEND=noninteractive $apt install -y -qq "$@"; } >"$log" 2>&1 || status=$?
    [ "$status" -eq 0 ] || cat "$log" >&2
    rm -f "$log"
    return "$status"
}

# ensure_venv VENV WHO: creates the virtual environment VENV with $PYTHON (or
# python3) unless it already has a python. WHO prefixes the messages.
ensure_venv() {
    local venv="$1" who="$2" python="${PYTHON:-python3}"
    [ -x "$venv/bin/python" ] && return 0
    if ! command -v "$python" >/dev/null 2>&1; then
        echo "$who: $python not found: install Python 3 (3.10 or newer) and run again" >&2
        return 1
    fi
    echo "$who: creating the virtual environment $venv" >&2
    if "$python" -m venv "$venv" 2>/dev/null; then
        return 0
    fi
    rm -rf "$venv"
    # Debian's python3 needs its venv package for `-m venv`.
    if apt_command; then
        echo "$who: installing python3-venv with apt-get: $python cannot create a virtual environment without it" >&2
        apt_install python3-venv
        "$python" -m venv "$venv" && return 0
    fi
    echo "$who: $python cannot create a virtual environment (Debian: the python3-venv package) and this user cannot install one: install it, or set PYTHON to a Python that can, and run again" >&2
    return 1
}
