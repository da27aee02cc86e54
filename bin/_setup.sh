# Sourced by bin/demo and bin/test: a virtualenv with the pinned requirements.
# Only Python 3.11 (with venv) is assumed; everything else is installed here.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

# pip installs with --no-compile: byte-compiling every module of every package took more than half of a new venv's
# time, and the tests import a small part of them; Python compiles and caches what is imported, on first import
# (figures: docs/development.md, "Where the CPU goes").
ensure_venv() {  # ensure_venv REQUIREMENTS_FILE [PIP_OPTION...] (e.g. --no-deps)
  if [ ! -x .venv/bin/python ]; then
    echo "==> Creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
  fi
  local stamp=".venv/.installed-$(basename "$1")"
  if [ ! -f "$stamp" ] || [ "$1" -nt "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
    echo "==> Installing $1"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --no-compile "${@:2}" -r "$1"
    touch "$stamp"
  fi
}

# The library's venv (bin/test's library stage): `pip install ".[test]"` alone, as a user of the library makes it,
# so it holds no Django and nothing the platform adds; made again when pyproject.toml changes. Installed from a
# copy of the library's files: a build in the checkout would leave build/, whose stale modules a later build packs.
LIBRARY_VENV=var/venv-lib
ensure_library_venv() {
  local stamp="$LIBRARY_VENV/.installed-pyproject.toml"
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    echo "==> Creating $LIBRARY_VENV: pip install \".[test]\" (the library and its tests' packages, no Django)"
    rm -rf "$LIBRARY_VENV"
    "$PYTHON" -m venv "$LIBRARY_VENV"
    local copy
    copy="$(mktemp -d)"
    tar -c --exclude=__pycache__ pyproject.toml genderbias docs/library.md | tar -x -C "$copy"
    "$LIBRARY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$LIBRARY_VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-compile "$copy[test]"
    rm -rf "$copy"
    touch "$stamp"
  fi
}

ensure_debian_packages() {  # ensure_debian_packages PKG...
  local missing=()
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "==> Installing Debian packages: ${missing[*]}"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}
