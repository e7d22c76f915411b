#!/usr/bin/env bash
# On the lent GPU, after verl's install.sh (../shared/tools/device-verl) and after every Megatron part was copied to
# /tmp/meg-parts/mNN/partNN (one device call each; megatron_parts.sh made them):
#   bash install_megatron.sh && . /tmp/meg-env.sh     -> PYTHONPATH=/tmp/site-meg:/tmp/site
# Installs megatron-core 0.18.0, mbridge 0.15.1 and TransformerEngine 2.16.1 (megatron-wheels.txt) into their own
# folder, and builds TransformerEngine's PyTorch extension from its sdist against the image's torch (C++ only, a
# CppExtension: its CUDA kernels are in the carried transformer_engine_cu13 wheel). Run on an H100 on 2026-12-06: the
# build took under two minutes; the cuBLAS and mbridge steps below are what that lease found missing. The build's log and time go to
# /tmp/out/install_megatron.log (collect.sh brings /tmp/out back). Idempotent: a second call only checks.
set -uo pipefail
PARTS=${PARTS:-/tmp/meg-parts}
SITE=${SITE:-/tmp/site-meg}
KIT=${KIT:-/tmp/site}
ENVSH=${ENVSH:-/tmp/meg-env.sh}
UNPACK=${UNPACK:-/tmp}  # the parts unpack into $UNPACK/meg
LOG=${LOG:-/tmp/out/install_megatron.log}
mkdir -p "$(dirname "$LOG")"
exec > >(tee -a "$LOG") 2>&1
[ -d "$KIT/verl" ] || { echo "verl's kit is not installed in $KIT: run install.sh first"; exit 1; }
. "$(dirname "$0")/parts.sh"  # unpack_parts
if [ ! -d "$SITE/transformer_engine" ] || ! ls "$SITE"/transformer_engine_torch* >/dev/null 2>&1; then
  rm -rf "$UNPACK/meg"
  unpack_parts "$PARTS" m "$UNPACK" Megatron || exit 1
  W=$UNPACK/meg
  # the PyTorch extension first, so that one pip call puts all six wheels into $SITE (two of them share the
  # transformer_engine package folder, which a second --target call would not merge into). Its setup.py would
  # first fetch a prebuilt wheel from GitHub (NVTE_PYTORCH_FORCE_BUILD), would tag a local version the loader then
  # refuses beside the other two TE packages (NVTE_NO_LOCAL_VERSION), and includes only $CUDA_HOME/include, while
  # it needs cudnn.h and nccl.h: those come with torch's nvidia wheels
  INC=$(python3 -c 'import nvidia.cudnn as c, nvidia.nccl as n; print(c.__path__[0] + "/include:" + n.__path__[0] + "/include")') \
    || { echo "torch's nvidia-cudnn / nvidia-nccl wheels not found: cudnn.h and nccl.h are needed for the build"; exit 1; }
  export PATH="$(dirname "$(command -v python3)"):/opt/torch/.venv/bin:$PATH"  # ninja: parallel compiles
  export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda} NVTE_FRAMEWORK=pytorch NVTE_PYTORCH_FORCE_BUILD=TRUE \
    NVTE_NO_LOCAL_VERSION=1 MAX_JOBS=${MAX_JOBS:-16} CPLUS_INCLUDE_PATH="$INC${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
  t0=$(date +%s)
  python3 -m pip wheel -v --no-build-isolation --no-index --no-deps -w "$W/built" "$W"/transformer_engine_torch-*.tar.gz \
    || { echo "transformer_engine_torch did not build ($(( $(date +%s) - t0 )) s)"; exit 1; }
  echo "transformer_engine_torch built in $(( $(date +%s) - t0 )) s: $(ls "$W"/built)"
  t0=$(date +%s)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$SITE" \
    $(ls "$W"/*.whl | grep -v /nvidia_cublas-) "$W"/built/*.whl || exit 1
  echo "installed $(ls "$W"/*.whl "$W"/built/*.whl | grep -v /nvidia_cublas- | wc -l) wheels into $SITE in $(( $(date +%s) - t0 )) s"
  # mbridge 0.15.1 asks for ModelType.encoder_and_decoder, which megatron-core 0.18 no longer has ("AttributeError:
  # type object 'ModelType' has no attribute 'encoder_and_decoder'" in get_model, every Megatron run of 2026-12-06);
  # a decoder-only model never is one
  sed -i 's/ModelType\.encoder_and_decoder/getattr(ModelType, "encoder_and_decoder", None)/g' "$SITE/mbridge/core/util.py"
fi
# TransformerEngine's core needs a newer cuBLAS than the image's (megatron-wheels.txt): its libcublas and
# libcublasLt put over the image's copies (torch's nvidia wheel and /usr/local/cuda), which every process then loads;
# cuBLAS keeps its ABI within 13.x. The image is the lease's own and goes back with it.
CUB=$(ls "${W:-$UNPACK/meg}"/nvidia_cublas-*.whl 2>/dev/null | head -1)
if [ -n "$CUB" ] && [ ! -e /tmp/cublas-replaced ]; then
  python3 - "$CUB" /tmp/cublas-x <<'PY' || { echo "cuBLAS: could not read $CUB"; exit 1; }
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
for n in z.namelist():
    if n.endswith(("/libcublasLt.so.13", "/libcublas.so.13")):
        z.extract(n, sys.argv[2])
PY
  for lib in libcublasLt.so.13 libcublas.so.13; do
    new=$(find /tmp/cublas-x -name "$lib" | head -1)
    for dir in $(python3 -c 'import nvidia, os; print(" ".join(os.path.join(p, "cu13", "lib") for p in nvidia.__path__))') \
               "${CUDA_HOME:-/usr/local/cuda}/lib64"; do
      [ -e "$dir/$lib" ] || continue
      target=$(readlink -f "$dir/$lib")
      cp "$target" "$target.orig" && cp "$new" "$target" && echo "cuBLAS: $target <- $(basename "$CUB")"
    done
  done
  touch /tmp/cublas-replaced
fi
echo "export PYTHONPATH=$SITE:$KIT\${PYTHONPATH:+:\$PYTHONPATH}" > "$ENVSH"
# what TransformerEngine imports at run time beyond itself (einops, onnx, onnxscript, pydantic, triton), the engine
# on the GPU, and megatron-core seeing it
PYTHONPATH=$SITE:$KIT python3 - <<'PY' || { echo "Megatron's smoke test failed"; exit 1; }
import importlib
for name in ("einops", "onnx", "onnxscript", "pydantic", "triton"):
    try:
        importlib.import_module(name)
    except ImportError as e:
        print("missing at run time:", name, e)
import torch
import transformer_engine.pytorch as te
import transformer_engine_torch as tex
import megatron.core
import mbridge
from megatron.core.extensions.transformer_engine import HAVE_TE
lin = te.Linear(64, 64, params_dtype=torch.bfloat16).cuda()
out = lin(torch.randn(8, 64, device="cuda", dtype=torch.bfloat16))
print("TransformerEngine", te.__version__ if hasattr(te, "__version__") else "?", "cuDNN", tex.get_cudnn_version(),
      "HAVE_TE", HAVE_TE, "megatron-core", megatron.core.__version__, "mbridge", mbridge.__file__, "te.Linear", tuple(out.shape))
PY
