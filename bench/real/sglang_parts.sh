#!/usr/bin/env bash
# Download the wheels SGLang 0.5.12 needs on the lent H200 beyond verl's kit (../shared/tools/device-verl) and the
# image (sglang-wheels.txt beside this script), pack them in one tar and split it into parts small enough to carry
# one per device call. A call carries the checkout too (64 MiB in all): PART_MB (default 46) + the checkout's
# tracked size (~14 MiB) must stay under 64.
#   bash bench/real/sglang_parts.sh DEST    -> DEST/s00/part00, DEST/s01/part01, ...
#   SGL_CUBIN=1: with flashinfer-cubin (+344 MiB); SGL_DEEPSEEK=1: with tilelang & co (+159 MiB);
#   SGL_NUMA=0: without libnuma1's .deb (21 KB, `apt-get download`; the fallback if the image lacks libnuma.so.1)
# DEST must be a folder git ignores (e.g. .verl-parts/sgl; /.verl-parts/ is in .git/info/exclude).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=${1:?usage: sglang_parts.sh DEST}
. "$HERE/parts.sh"  # PLAT, work_dir, pack_parts
work_dir sgl "$DEST"
pins=()
while read -r tag pin; do
  [ -z "$tag" ] && continue
  case "$tag" in
    \#*) ;;
    \[*\]) t=${tag#[}; t=${t%]}; v="SGL_$t"; [ "${!v:-0}" = 1 ] && pins+=("$pin") ;;
    *) pins+=("$tag") ;;
  esac
done < "$HERE/sglang-wheels.txt"
python3 -m pip download -q "${PLAT[@]}" -d "$WORK/sgl" "${pins[@]}"
n=$(ls "$WORK/sgl"/*.whl | wc -l)
[ "$n" -eq "${#pins[@]}" ] || { echo "expected ${#pins[@]} wheels, got $n"; exit 1; }
cp "$HERE/sglang-wheels.txt" "$WORK/sgl/"
# sgl_kernel needs libnuma.so.1; if the image lacks it, install_sglang.sh unpacks this .deb (Debian 12's 2.0.16: its
# symbols need glibc <= 2.33, the image's Ubuntu 24.04 has 2.39) into /tmp/numa, never into /
if [ "${SGL_NUMA:-1}" = 1 ]; then
  mkdir -p "$WORK/sgl/numa"
  ( cd "$WORK/sgl/numa" && apt-get download libnuma1 >/dev/null 2>&1 ) || echo "warning: apt-get download libnuma1 failed"
fi
echo "wheels: $n, $(du -sh "$WORK/sgl" | cut -f1)"
pack_parts "$WORK" sgl "$DEST" s
