#!/usr/bin/env bash
# Build the desktop bundle: dist/verl-wizard/ (PyInstaller one-folder: the program verl-wizard, its
# libraries under _internal/, the .desktop entry, the icon and install.sh). From a clean checkout:
#
#   bash packaging/build.sh          (or: make bundle)
#
# Needs Python 3.10-3.12 built with a shared libpython (python.org, Debian/Ubuntu, pyenv with
# --enable-shared, conda all are) and PyPI. PYTHON=python3.12 picks another Python. Everything it
# installs goes into a build-only venv, build/bundle-venv/ (never the dev .venv), with PyInstaller and the
# runtime packages pinned (packaging/requirements-build.txt, packaging/constraints-bundle.txt).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
PYTHON=${PYTHON:-python3}
VENV=build/bundle-venv
SRC=build/bundle-src
DIST=dist/verl-wizard
export PYINSTALLER_CONFIG_DIR="$ROOT/build/pyinstaller-cache"  # not ~/.cache: a build leaves nothing outside
export PIP_DISABLE_PIP_VERSION_CHECK=1

say() { printf 'build.sh: %s\n' "$*"; }
die() { printf 'build.sh: error: %s\n' "$*" >&2; exit 2; }

command -v "$PYTHON" >/dev/null || die "no $PYTHON on PATH (set PYTHON=/path/to/python3.12)"
"$PYTHON" - <<'EOF' || die "$PYTHON cannot build the bundle (see above)"
import sys, sysconfig
if not (3, 10) <= sys.version_info[:2] <= (3, 12):
    sys.exit(f"Python {sys.version.split()[0]}: the bundle is built with Python 3.10-3.12")
if not sysconfig.get_config_var("Py_ENABLE_SHARED") and sys.platform == "linux":
    sys.exit(f"{sys.executable} has no shared libpython, which PyInstaller needs (use a distro or conda Python)")
import venv  # noqa: F401  (Debian/Ubuntu: apt install python3-venv)
EOF

start=$(date +%s)
stamp="$VENV/.bundle-stamp"
want=$(cat packaging/requirements-build.txt packaging/constraints-bundle.txt pyproject.toml setup.py | sha256sum | cut -c1-16)
if [ ! -x "$VENV/bin/python" ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "creating the build venv $VENV (PyInstaller and the runtime packages, pinned)"
    "$PYTHON" -m venv --clear "$VENV"
    "$VENV/bin/python" -m pip install --quiet -r packaging/requirements-build.txt
    fresh=1
fi

# The project is installed from a copy of exactly the files it ships, so a build never picks up stale
# files from an earlier setuptools build/ folder or anything else lying in the work tree.
rm -rf "$SRC"
mkdir -p "$SRC"
tar -cf - --exclude=__pycache__ --exclude='*.pyc' pyproject.toml setup.py README.md wizard resources | tar -xf - -C "$SRC"
if [ "${fresh:-0}" = 1 ]; then
    "$VENV/bin/python" -m pip install --quiet -c packaging/constraints-bundle.txt "./$SRC[gui]"
    echo "$want" > "$stamp"
else
    "$VENV/bin/python" -m pip install --quiet --no-deps --force-reinstall "./$SRC"
fi
installed=$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("pyinstaller"))')
say "PyInstaller $installed, $("$VENV/bin/python" -c 'import sys; print("Python", sys.version.split()[0])')"

"$VENV/bin/pyinstaller" --noconfirm --clean --log-level WARN \
    --distpath dist --workpath build/pyinstaller packaging/verl-wizard.spec

install -m 644 packaging/verl-wizard.desktop "$DIST/verl-wizard.desktop"
install -m 755 packaging/install.sh "$DIST/install.sh"

end=$(date +%s)
say "built $DIST in $((end - start)) s, $(du -sh "$DIST" | cut -f1) ($(find "$DIST" -type f | wc -l) files)"
say "try it: $DIST/verl-wizard --version; bash packaging/check_bundle.sh; $DIST/install.sh adds it to the desktop menu"
