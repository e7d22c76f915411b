#!/usr/bin/env bash
# Start the built bundle the way a user would, offscreen, and check what they would notice:
#   --version answers; the GUI opens and renders its pages (the wizard's own --screenshots DIR, which opens
#   the window, renders every page to PNG and exits 0); the CLI writes and checks a preset (resources and
#   Hydra inside the bundle); pyarrow reads and writes parquet; doctor finds a Python on this machine and
#   runs its probe there by path (never the bundle's own program); torch/verl are not in the bundle.
#
#   bash packaging/check_bundle.sh [BUNDLE_DIR]     (default dist/verl-wizard; or: make bundle-check)
#
# Not run by pytest (the build takes minutes, see packaging/README.md): CI or a release runs
# `make bundle bundle-check`.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUNDLE=${1:-$ROOT/dist/verl-wizard}
EXE="$BUNDLE/verl-wizard"
[ -x "$EXE" ] || { echo "check_bundle: no bundle at $BUNDLE (build it: make bundle)" >&2; exit 2; }

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# Offscreen Qt; the GUI's autosave and the wizard's state go to a scratch folder, not the user's.
export QT_QPA_PLATFORM=offscreen XDG_STATE_HOME="$TMP/state" XDG_RUNTIME_DIR="$TMP/run"
mkdir -p "$XDG_RUNTIME_DIR" && chmod 700 "$XDG_RUNTIME_DIR"
cd "$TMP"

passed=0
ok() { passed=$((passed + 1)); printf 'ok    %s\n' "$*"; }
fail() { printf 'FAIL  %s\n' "$*" >&2; echo "check_bundle: $passed passed, 1 failed" >&2; exit 1; }

# 1. --version
want="verl-wizard $(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$ROOT/wizard/__init__.py")"
got=$("$EXE" --version 2>&1) || fail "--version exited $?: $got"
[ "$got" = "$want" ] || fail "--version printed '$got', expected '$want'"
ok "--version: $got"

# 2. the GUI opens and renders its first page (and every other: --screenshots writes one PNG per page)
out=$("$EXE" --screenshots "$TMP/shots" 2>&1) || fail "the GUI exited $? rendering its pages: $out"
shopt -s nullglob
pngs=("$TMP"/shots/*.png)
[ "${#pngs[@]}" -gt 0 ] || fail "the GUI wrote no page: $out"
for png in "${pngs[@]}"; do
    [ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || fail "$(basename "$png") is not a PNG"
    [ "$(stat -c %s "$png")" -gt 10000 ] || fail "$(basename "$png") is $(stat -c %s "$png") bytes: an empty window?"
done
ok "GUI: opened offscreen, rendered ${#pngs[@]} page(s), the first $(basename "${pngs[0]}") ($(stat -c %s "${pngs[0]}") bytes)"
if [ -n "${CHECK_BUNDLE_KEEP:-}" ]; then mkdir -p "$CHECK_BUNDLE_KEEP" && cp "$TMP"/shots/*.png "$CHECK_BUNDLE_KEEP"/; fi

# 3. the CLI: presets, generate, check (resources, Hydra composition, the rules)
"$EXE" presets | grep -q grpo-1gpu-smoke || fail "presets does not list grpo-1gpu-smoke"
out=$("$EXE" generate --preset grpo-1gpu-smoke --out "$TMP/run" 2>&1) || fail "generate exited $?: $out"
[ -s "$TMP/run/run.sh" ] && [ -s "$TMP/run/config.yaml" ] || fail "generate wrote no run.sh/config.yaml: $out"
out=$("$EXE" check "$TMP/run/run.sh" 2>&1) || fail "check of the generated run.sh exited $?: $out"
rc=0; out=$("$EXE" check -- data.train_batch_size=1001 trainer.n_gpus_per_node=8 2>&1) || rc=$?
[ "$rc" = 1 ] || fail "check of a bad batch size exited $rc (expected 1): $out"
ok "CLI: presets, generate, check (clean preset exits 0, a bad batch size exits 1)"

# 4. pyarrow in the bundle: convert JSON lines to verl's parquet, preview it
printf '{"q": "What is 2+3?", "a": "5"}\n{"q": "What is 7*6?", "a": "42"}\n' > qa.jsonl
out=$("$EXE" data convert qa.jsonl --out qa.parquet --question q --answer a --data-source openai/gsm8k 2>&1) \
    || fail "data convert exited $?: $out"
out=$("$EXE" data preview qa.parquet 2>&1) || fail "data preview exited $?: $out"
grep -q "openai/gsm8k" <<<"$out" || fail "data preview does not show the converted rows: $out"
ok "data: JSONL -> parquet -> preview (pyarrow)"

# 5. doctor: finds a Python here (not the bundle), runs doctor_probe.py there by path
rc=0; out=$("$EXE" doctor --format json 2>"$TMP/doctor.err") || rc=$?
[ "$rc" = 0 ] || [ "$rc" = 1 ] || fail "doctor exited $rc: $(cat "$TMP/doctor.err")"
python=$(grep -o '"python": "[^"]*"' <<<"$out" | head -1 | cut -d'"' -f4)
case "$python" in
    "") grep -q '"how_to_create": "No Python environment' <<<"$out" || fail "doctor found no Python and said nothing"
        ok "doctor: no Python on this machine, says how to create one" ;;
    "$BUNDLE"/*) fail "doctor picked the bundle's own program: $python" ;;
    *) grep -q '"python": {"version": "' <<<"$out" || fail "doctor did not probe $python: $out"
       ok "doctor: checked $python through its probe (exit $rc)" ;;
esac

# 6. what the wizard starts (the user's Python, verl, Ray) gets the user's environment, not the bundle's libraries
printf '#!/bin/sh\nenv > "%s"\nexit 1\n' "$TMP/child.env" > "$TMP/python-env-dump"
chmod +x "$TMP/python-env-dump"
"$EXE" doctor --python "$TMP/python-env-dump" >/dev/null 2>&1 || true
[ -s "$TMP/child.env" ] || fail "doctor did not start the Python it was given"
leaked=$(grep -E "^(LD_LIBRARY_PATH|QT_PLUGIN_PATH|QML2_IMPORT_PATH)=.*$BUNDLE" "$TMP/child.env" || true)
[ -z "$leaked" ] || fail "a program the wizard starts inherits the bundle's paths: $leaked"
ok "programs it starts get the user's LD_LIBRARY_PATH and Qt paths, not the bundle's"

# 7. what must not be in the bundle
for heavy in torch verl ray vllm transformers; do
    [ ! -e "$BUNDLE/_internal/$heavy" ] || fail "$heavy is in the bundle ($BUNDLE/_internal/$heavy)"
done
ok "torch, verl, ray, vllm, transformers are not in the bundle ($(du -sh "$BUNDLE" | cut -f1))"

# 8. the desktop entry and icon that install.sh puts in the menu
[ -s "$BUNDLE/verl-wizard.desktop" ] && [ -s "$BUNDLE/_internal/share/icons/verl-wizard.svg" ] \
    && [ -x "$BUNDLE/install.sh" ] || fail "the bundle lacks its .desktop entry, icon or install.sh"
if command -v desktop-file-validate >/dev/null; then
    out=$(desktop-file-validate "$BUNDLE/verl-wizard.desktop" 2>&1) || fail "verl-wizard.desktop: $out"
fi
ok "desktop entry, icon and install.sh are in the bundle"

echo "check_bundle: $passed passed, 0 failed"
