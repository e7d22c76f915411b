#!/usr/bin/env bash
# Add this verl-wizard bundle to your desktop menu and PATH (for you only, nothing needs root):
#   ~/.local/share/applications/verl-wizard.desktop, its icon under ~/.local/share/icons/hicolor,
#   and ~/.local/bin/verl-wizard -> this folder's verl-wizard.
# The bundle stays where it is: move the folder first, then run this. `install.sh --remove` undoes it.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DATA=${XDG_DATA_HOME:-$HOME/.local/share}
APPS="$DATA/applications"
ICONS="$DATA/icons/hicolor"
BIN="$HOME/.local/bin"

if [ "${1:-}" = "--remove" ]; then
    rm -f "$APPS/verl-wizard.desktop" "$ICONS/scalable/apps/verl-wizard.svg" "$ICONS/256x256/apps/verl-wizard.png"
    if [ -L "$BIN/verl-wizard" ]; then rm -f "$BIN/verl-wizard"; fi
    echo "verl-wizard: removed from the menu and ~/.local/bin"
    exit 0
fi
if [ ! -x "$HERE/verl-wizard" ]; then
    echo "install.sh: run it from the bundle folder (dist/verl-wizard/); no verl-wizard next to it" >&2
    exit 2
fi

mkdir -p "$APPS" "$ICONS/scalable/apps" "$ICONS/256x256/apps" "$BIN"
cp "$HERE/_internal/share/icons/verl-wizard.svg" "$ICONS/scalable/apps/verl-wizard.svg"
cp "$HERE/_internal/share/icons/verl-wizard.png" "$ICONS/256x256/apps/verl-wizard.png"
# Exec and TryExec name this folder's program (quoted for the .desktop format: a path may hold spaces).
exe=${HERE//\\/\\\\}
exe=${exe//\"/\\\"}
sed -e "s|^Exec=.*|Exec=\"$exe/verl-wizard\"|" -e "s|^TryExec=.*|TryExec=$HERE/verl-wizard|" \
    "$HERE/verl-wizard.desktop" > "$APPS/verl-wizard.desktop.tmp"
mv "$APPS/verl-wizard.desktop.tmp" "$APPS/verl-wizard.desktop"
ln -sfn "$HERE/verl-wizard" "$BIN/verl-wizard"
command -v update-desktop-database >/dev/null && update-desktop-database -q "$APPS" || true
echo "verl-wizard: added to the menu ($APPS/verl-wizard.desktop) and linked as $BIN/verl-wizard"
case ":$PATH:" in *":$BIN:"*) ;; *) echo "note: $BIN is not on your PATH; add it to run verl-wizard from a terminal" ;; esac
