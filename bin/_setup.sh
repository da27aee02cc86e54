# Sourced by bin/demo and bin/test: a virtualenv with the pinned requirements.
# Only Python 3.11 (with venv) is assumed; everything else is installed here.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null 2>&1 || PYTHON=python3

ensure_venv() {  # ensure_venv REQUIREMENTS_FILE [PIP_OPTION...] (e.g. --no-deps)
  if [ ! -x .venv/bin/python ]; then
    echo "==> Creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
  fi
  local stamp=".venv/.installed-$(basename "$1")"
  if [ ! -f "$stamp" ] || [ "$1" -nt "$stamp" ] || [ requirements.txt -nt "$stamp" ]; then
    echo "==> Installing $1"
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install --quiet --disable-pip-version-check "${@:2}" -r "$1"
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
