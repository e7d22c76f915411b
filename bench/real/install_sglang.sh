#!/usr/bin/env bash
# On the H200, after verl's install.sh (../shared/tools/device-verl) and after every SGLang part was copied to
# /tmp/sgl-parts/sNN/partNN (one device call each; sglang_parts.sh made them):
#   bash install_sglang.sh && . /tmp/sgl-env.sh      -> PYTHONPATH=/tmp/site-sgl:/tmp/site (+ LD_LIBRARY_PATH)
# The wheels go into their own folder, first on PYTHONPATH: sglang's pins (flashinfer 0.6.11.post1, cutlass-dsl
# 4.5.0, xgrammar 0.2.0, llguidance 0.7.30, openai 2.6.1, ...) win over the vLLM kit's in /tmp/site without
# overwriting it (vLLM runs keep PYTHONPATH=/tmp/site). transformers stays the kit's 5.9.0 (sglang pins 5.6.0,
# which verl 0.9.1 excludes). Idempotent: a second call only checks.
set -uo pipefail
PARTS=${PARTS:-/tmp/sgl-parts}
SITE=${SITE:-/tmp/site-sgl}
KIT=${KIT:-/tmp/site}
ENVSH=${ENVSH:-/tmp/sgl-env.sh}
UNPACK=${UNPACK:-/tmp}  # the parts unpack into $UNPACK/sgl
[ -d "$KIT/verl" ] || { echo "verl's kit is not installed in $KIT: run install.sh first"; exit 1; }
. "$(dirname "$0")/parts.sh"  # unpack_parts
if [ ! -d "$SITE/sglang" ]; then
  rm -rf "$UNPACK/sgl"
  unpack_parts "$PARTS" s "$UNPACK" SGLang || exit 1
  t0=$(date +%s)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" "$UNPACK"/sgl/*.whl || exit 1
  echo "installed $(ls "$UNPACK"/sgl/*.whl | wc -l) wheels into $SITE in $(( $(date +%s) - t0 )) s"
fi
rm -rf "$SITE/transformers" "$SITE"/transformers-*.dist-info  # never the set's, but keep verl's 5.9.0 whatever
# Hugging Face's `kernels`, which sglang requires, breaks the kit's transformers 5.9.0: its integrations/hub_kernels.py
# builds kernels' LayerRepository without a revision, which the carried kernels refuses at import ("ValueError: Either
# a revision or a version must be specified.", seen on the device 2026-12-05, `import sglang` -> transformers'
# modeling_llama). Without it transformers skips hub kernels, and sglang's engine and verl's server import and run.
rm -rf "$SITE/kernels" "$SITE"/kernels-*.dist-info
# vLLM hidden (SGL_KEEP_VLLM=1 keeps it): verl's _load_sglang (workers/rollout/replica.py) imports vllm and mocks it
# only on ImportError, and sglang tries vllm's kernels where it finds them; the kit's vLLM 0.24 would then be imported
# beside sglang's older pins. An SGLang run then sees what a `verl[sglang]` install gives: no vLLM.
if [ "${SGL_KEEP_VLLM:-0}" = 1 ]; then rm -rf "$SITE/vllm"; else
  mkdir -p "$SITE/vllm" && echo 'raise ImportError("vLLM is hidden in SGLang runs (install_sglang.sh)")' > "$SITE/vllm/__init__.py"
fi
# a --target folder on PYTHONPATH is not a site dir: its .pth files (nvidia_cutlass_dsl.pth: the CuTe DSL's `cutlass`
# package, which flash-attn-4, quack and flashinfer import) are read here instead
pth=""
for f in "$SITE"/*.pth; do
  [ -f "$f" ] || continue
  while read -r line || [ -n "$line" ]; do
    case "$line" in import*|\#*|"") ;; *) [ -d "$SITE/$line" ] && pth="$pth:$SITE/$line" ;; esac
  done < "$f"
done
echo "export PYTHONPATH=$SITE$pth:$KIT\${PYTHONPATH:+:\$PYTHONPATH}" > "$ENVSH"
# sgl_kernel's common_ops needs libnuma.so.1 (readelf -d); the image may lack it
if ldconfig -p | grep -q 'libnuma\.so\.1 '; then
  echo "libnuma.so.1: the image's ($(ldconfig -p | grep -m1 'libnuma\.so\.1 ' | awk '{print $NF}'))"
elif ls "$UNPACK"/sgl/numa/libnuma1_*.deb >/dev/null 2>&1; then
  mkdir -p /tmp/numa && dpkg -x "$UNPACK"/sgl/numa/libnuma1_*.deb /tmp/numa || exit 1
  echo "export LD_LIBRARY_PATH=/tmp/numa/usr/lib/x86_64-linux-gnu\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" >> "$ENVSH"
  echo "libnuma.so.1: MISSING in the image; using the carried Debian 12 libnuma1 in /tmp/numa (LD_LIBRARY_PATH)"
else
  echo "libnuma.so.1: MISSING in the image and not carried: make the parts with SGL_NUMA=1 (apt-get download libnuma1"
  echo "  here; on the device: dpkg -x libnuma1_*.deb /tmp/numa, LD_LIBRARY_PATH=/tmp/numa/usr/lib/x86_64-linux-gnu)"
  exit 1
fi
. "$ENVSH"
python3 - <<'PY' || exit 1
import glob, importlib.metadata as md
import torch, sglang, sgl_kernel, flashinfer, transformers, verl
try:
    import vllm  # noqa: F401
    print("vllm importable:", vllm.__file__)
except ImportError as exc:
    print("vllm:", exc)
for name in ("sglang", "sglang-kernel", "flashinfer-python", "nvidia-cutlass-dsl", "xgrammar", "transformers", "verl",
             "torch", "openai"):
    print(f"{name} {md.version(name)}", end="; ")
print()
assert transformers.__version__ == "5.9.0", transformers.__version__  # verl's, not sglang's 5.6.0 pin
print("sgl_kernel from", sgl_kernel.__file__, "| flashinfer from", flashinfer.__file__)
try:  # the CuTe DSL, through nvidia_cutlass_dsl.pth's folder: flash-attn-4 and quack need it, verl's defaults do not
    import cutlass  # noqa: F401
    print("cutlass from", cutlass.__file__)
except Exception as exc:  # noqa: BLE001
    print("cutlass (CuTe DSL) not importable, not needed by the campaign's runs:", repr(exc)[:200])
import sglang.srt.entrypoints.engine  # what verl's async_sglang_server imports
from verl.workers.rollout.replica import get_rollout_replica_class
get_rollout_replica_class("sglang")  # what verl's trainer does: vllm import (or its mock), async_sglang_server
print("import sglang.srt.entrypoints.engine + verl's async_sglang_server: ok; GPU:", torch.cuda.get_device_name(0))
PY
echo "ready: . $ENVSH"
