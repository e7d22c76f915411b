#!/usr/bin/env bash
# Download what verl 0.9.1's Megatron engine needs on the lent GPU beyond verl's kit (megatron-wheels.txt beside this
# script: megatron-core, mbridge, TransformerEngine's wheels and its PyTorch extension's source), pack them in one tar
# and split it into parts small enough to carry one per device call (PART_MB, default 46, + the checkout's ~14 MiB
# under the call's 64).
#   bash bench/real/megatron_parts.sh DEST    -> DEST/m00/part00, DEST/m01/part01, ..., DEST/SHA256SUMS
# DEST must be a folder git ignores (e.g. .verl-parts/meg; /.verl-parts/ is in .git/info/exclude).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
DEST=${1:?usage: megatron_parts.sh DEST}
. "$HERE/parts.sh"  # PLAT, work_dir, pack_parts
work_dir meg "$DEST"
wheels=() sdists=()
while read -r tag pin; do
  case "$tag" in ""|\#*) ;; "[sdist]") sdists+=("$pin") ;; *) wheels+=("$tag") ;; esac
done < "$HERE/megatron-wheels.txt"
python3 -m pip download -q "${PLAT[@]}" -d "$WORK/meg" "${wheels[@]}"
# an sdist straight from PyPI's simple index: `pip download` would run its setup.py, which TransformerEngine's fails
# on a machine without CUDA torch; its sha256 is checked against the index's
for pin in "${sdists[@]}"; do
  python3 - "$pin" "$WORK/meg" <<'PY'
import hashlib, re, sys, urllib.parse, urllib.request
name, version = sys.argv[1].split("==")
index = "https://pypi.org/simple/" + re.sub(r"[-_.]+", "-", name).lower() + "/"
page = urllib.request.urlopen(index, timeout=60).read().decode()
links = [(h, f) for h, f in re.findall(r'href="([^"]+)"[^>]*>([^<]+)</a>', page) if f.endswith(f"-{version}.tar.gz")]
assert links, f"{name} {version}: no sdist in {index}"
href, filename = links[0]
url, _, digest = urllib.parse.urljoin(index, href).partition("#sha256=")
data = urllib.request.urlopen(url, timeout=300).read()
assert hashlib.sha256(data).hexdigest() == digest, "sha256 differs from the index's"
open(f"{sys.argv[2]}/{filename}", "wb").write(data)
PY
done
n=$(ls "$WORK/meg"/*.whl "$WORK/meg"/*.tar.gz | wc -l)
[ "$n" -eq $(( ${#wheels[@]} + ${#sdists[@]} )) ] || { echo "expected $(( ${#wheels[@]} + ${#sdists[@]} )) files, got $n"; exit 1; }
cp "$HERE/megatron-wheels.txt" "$WORK/meg/"
echo "files: $n, $(du -sh "$WORK/meg" | cut -f1)"
pack_parts "$WORK" meg "$DEST" m
