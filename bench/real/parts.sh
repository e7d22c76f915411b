# Shared by the parts makers (sglang_parts.sh, megatron_parts.sh: here) and their installers (install_sglang.sh,
# install_megatron.sh: on the device). Sourced, never run.

# The pip download arguments for the device's Python 3.12 on x86_64 Linux (manylinux up to glibc 2.35, pure Python).
PLAT=(--python-version 3.12 --implementation cp --only-binary=:all: --no-deps)
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 manylinux_2_28_x86_64 \
         manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux_2_35_x86_64 manylinux1_x86_64 manylinux_2_5_x86_64 any; do
  PLAT+=(--platform "$p"); done

# work_dir NAME DEST: WORK, a scratch folder removed when the script exits, with WORK/NAME and DEST made
work_dir() {
  WORK=$(mktemp -d)
  trap 'rm -rf "$WORK"' EXIT
  mkdir -p "$WORK/$1" "$2"
}

# pack_parts WORK NAME DEST PREFIX: WORK/NAME as one tar, split into PART_MB (default 46) MiB parts
# DEST/PREFIX00/part00, DEST/PREFIX01/part01, ... (one per device call: the checkout's ~14 MiB travels too, 64 in all)
# and their DEST/SHA256SUMS
pack_parts() {
  local work=$1 name=$2 dest=$3 prefix=$4 f n
  tar cf "$work/$name.tar" -C "$work" "$name"
  rm -rf "$dest/$prefix"[0-9][0-9]
  ( cd "$work" && split -b "${PART_MB:-46}M" -d -a 2 "$name.tar" part )
  for f in "$work"/part*; do n=${f##*part}; mkdir -p "$dest/$prefix$n"; mv "$f" "$dest/$prefix$n/"; done
  ( cd "$dest" && sha256sum "$prefix"[0-9][0-9]/part* > SHA256SUMS )
  ls -d "$dest/$prefix"[0-9][0-9]
}

# unpack_parts PARTS PREFIX UNPACK WHAT: the parts copied to PARTS/PREFIXNN/partNN checked against PARTS/SHA256SUMS
# (where it travelled) and unpacked into UNPACK; WHAT names them in the one-line reason when they are not whole
unpack_parts() {
  local parts=$1 prefix=$2 unpack=$3 what=$4
  if [ -f "$parts/SHA256SUMS" ]; then
    ( cd "$parts" && sha256sum -c --quiet SHA256SUMS ) || { echo "$what parts differ from SHA256SUMS: carry those again"; return 1; }
  else
    echo "no $parts/SHA256SUMS: the parts are not checked"
  fi
  cat "$parts/$prefix"[0-9][0-9]/part* | tar x -C "$unpack" || { echo "$what parts missing or incomplete in $parts"; return 1; }
}
