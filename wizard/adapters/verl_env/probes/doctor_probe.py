"""What the target Python environment holds, for ``verl-wizard doctor``. Standard library only.

Usage: python doctor_probe.py [--torch] [--flash-attn]  ->  one JSON object on stdout.

By default it imports nothing heavy: package versions come from installed metadata and the
driver's CUDA version from libcuda through ctypes. ``--torch`` imports torch (its CUDA build and
whether CUDA works), ``--flash-attn`` imports flash_attn (a build that does not match torch only
shows on import). Standalone: verl-wizard need not be installed in the target environment.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import os
import platform
import re
import subprocess
import sys
import time
import warnings

PACKAGES = ("verl", "torch", "transformers", "tensordict", "ray", "TransferQueue", "cachetools", "vllm", "sglang",
            "flash-attn", "flash_attn", "numpy", "hydra-core", "nvidia-ml-py")
RAY_CURRENT_CLUSTER = "/tmp/ray/ray_current_cluster"


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    out["flash-attn"] = out.pop("flash-attn") or out.pop("flash_attn", None)
    out.pop("flash_attn", None)
    return out


def _driver() -> dict:
    """The driver's newest supported CUDA version, from libcuda (no torch needed)."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError as exc:
        return {"found": False, "error": str(exc)}
    version = ctypes.c_int(0)
    rc = lib.cuDriverGetVersion(ctypes.byref(version))
    if rc != 0:
        return {"found": True, "error": f"cuDriverGetVersion returned {rc}"}
    return {"found": True, "cuda": version.value}


def _device_count() -> int | None:
    """GPUs the driver shows this process (honours CUDA_VISIBLE_DEVICES), from libcuda; None without one."""
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    if lib.cuInit(0) != 0:
        return 0
    count = ctypes.c_int(0)
    return count.value if lib.cuDeviceGetCount(ctypes.byref(count)) == 0 else 0


def _torch_static() -> dict:
    """torch's build and whether its CUDA libraries resolve, without importing it (importing takes 3-6 s
    on a GPU machine). ``ldd`` on libtorch_cuda.so names what import would fail on ("libcudart.so.13:
    cannot open shared object file")."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin:
        return {"imported": False, "error": "torch is listed as installed but its package is not on the path"}
    root = os.path.dirname(spec.origin)
    try:
        with open(os.path.join(root, "version.py"), encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        return {"imported": False, "error": f"torch/version.py cannot be read ({exc})"}
    version = re.search(r"^__version__\s*(?::[^=]+)?=\s*['\"]([^'\"]+)", text, re.M)
    cuda = re.search(r"^cuda\s*(?::[^=]+)?=\s*(?:['\"]([^'\"]*)['\"]|None)", text, re.M)
    build = cuda.group(1) if cuda and cuda.group(1) else None
    missing: list[str] = []
    lib = os.path.join(root, "lib", "libtorch_cuda.so")
    if build and os.path.exists(lib):
        try:
            out = subprocess.run(["ldd", lib], capture_output=True, text=True, timeout=20).stdout
            missing = sorted({line.split("=>")[0].strip() for line in out.splitlines() if "not found" in line})
        except (OSError, subprocess.TimeoutExpired):
            pass
    count = _device_count() if build else 0
    return {"imported": None, "static": True, "version": version.group(1) if version else None, "cuda_build": build,
            "cuda_available": bool(count), "device_count": count or 0, "missing_libs": missing, "warnings": []}


def _torch() -> dict:
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            import torch

            available = bool(torch.cuda.is_available())
            count = torch.cuda.device_count() if available else 0
    except Exception as exc:  # noqa: BLE001 - a broken torch is a finding, not a crash
        return {"imported": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"}
    return {
        "imported": True,
        "version": torch.__version__,
        "cuda_build": torch.version.cuda,
        "cuda_available": available,
        "device_count": count,
        "warnings": [" ".join(str(w.message).split())[:300] for w in caught if "cuda" in str(w.message).lower()][:3],
        "import_s": round(time.perf_counter() - t0, 3),
    }


def _flash_attn() -> dict:
    try:
        import flash_attn  # noqa: F401
    except Exception as exc:  # noqa: BLE001
        return {"imported": False, "error": f"{type(exc).__name__}: {' '.join(str(exc).split())[:400]}"}
    return {"imported": True}


def _ray() -> dict:
    current = None
    try:
        with open(RAY_CURRENT_CLUSTER, encoding="utf-8") as fh:
            current = fh.read().strip() or None
    except OSError:
        pass
    return {"address_env": os.environ.get("RAY_ADDRESS") or None, "current_cluster": current}


def main(argv: list[str]) -> int:
    t0 = time.perf_counter()
    report = {
        "probe": 1,
        "python": {"version": platform.python_version(), "executable": sys.executable,
                   "implementation": platform.python_implementation(), "prefix": sys.prefix},
        "packages": _versions(),
        "driver": _driver(),
        "ray": _ray(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }
    torch_version = report["packages"]["torch"]
    if "--torch" in argv and torch_version and torch_version.endswith("+cpu"):
        # a +cpu wheel has no CUDA by construction: no need to pay for importing it
        report["torch"] = {"imported": None, "version": torch_version, "cuda_build": None, "cuda_available": False,
                           "device_count": 0, "warnings": [], "skipped": "CPU-only wheel (+cpu), not imported"}
    elif "--torch" in argv and torch_version:
        report["torch"] = _torch()
    elif "--torch-static" in argv and torch_version:
        report["torch"] = _torch_static()
    if "--flash-attn" in argv and report["packages"]["flash-attn"]:
        report["flash_attn"] = _flash_attn()
    report["probe_s"] = round(time.perf_counter() - t0, 3)
    sys.stdout.write(json.dumps(report) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
