"""Check the SGLang wheel set (sglang_parts.sh) against verl's kit and the H200 image, here, without a device.

    python3 bench/real/sglang_check.py SGL_WHEELS_DIR KIT_ESS_DIR [--pip PIP_PYTHON] [--imports]

SGL_WHEELS_DIR: the unpacked parts' ``sgl/`` folder; KIT_ESS_DIR: the verl kit's ``ess/`` (its parts unpacked).
Every Requires-Dist of the carried wheels (and of the kit's wheels on a package the SGLang set shadows) is checked
against what the device would import first: /tmp/site-sgl (these wheels), then /tmp/site (the kit), then the image
(its package list, /work/.library/device/KINDS.md; versions where a session read them, else unknown). Prints one
line per problem and the verdict; exit 1 on a duplicate or a requirement that nothing provides. With ``--pip``, also
lets pip's resolver install sglang==0.5.12 offline (--dry-run --no-index) from these folders plus stand-ins for the
image's packages (``ASSUMED`` versions where unknown) and for what is left out on purpose (transformers==5.6.0, the
"[TAG]" lines of sglang-wheels.txt). With ``--imports``, follows the module-level imports (ast; not inside functions,
not in ``except`` fallbacks) from ``sglang.srt.entrypoints.engine`` and ``verl.workers.rollout.sglang_rollout.
async_sglang_server`` through sglang's package and names every outside module that no carried wheel, kit wheel or
image package provides: each is then one to read (most sit behind an ``if _is_npu:``-like guard).
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

# the image's packages (KINDS.md, read 2026-11-17) and the versions a session there read (pip list, 2026-11)
IMAGE = """absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build
certifi charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core
cuda-pathfinder cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers
flax fonttools formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize
hypothesis idna imageio iniconfig interface-meta jax jax-cuda13-pjrt jax-cuda13-plugin jaxlib jaxtyping jinja2 joblib
kiwisolver lazy-loader lightning lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py
markupsafe matplotlib mdurl meson ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind
narwhals networkx ninja numba numba-cuda numpy numpyro nvidia-cublas nvidia-cuda-cupti nvidia-cuda-nvrtc
nvidia-cuda-runtime nvidia-cudnn-cu13 nvidia-cufft nvidia-cufile nvidia-curand nvidia-cusolver nvidia-cusparse
nvidia-cusparselt-cu13 nvidia-ml-py nvidia-nccl-cu13 nvidia-nvjitlink nvidia-nvshmem-cu13 nvidia-nvtx onnx onnx-ir
onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx optimistix orbax-checkpoint packaging
pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client propcache protobuf psutil pyarrow pybind11
py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest pytest-benchmark pytest-cov pytest-mock
pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex requests rich sacrebleu safetensors
scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece sentence-transformers setuptools shellingham
simplejson six sortedcontainers statsmodels sympy tabulate tensorboard tensorboard-data-server tensorstore
threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio torchdiffeq torch-geometric torchmetrics
torchvision tqdm transformers treescope triton typer typing-extensions typing-inspect urllib3 uvloop wadler-lindig
werkzeug wheel wrapt xarray xxhash yarl zipp""".split()
IMAGE_VERSIONS = {"accelerate": "1.15.0", "huggingface-hub": "1.33.0", "numpy": "2.5.2", "safetensors": "0.8.0",
                  "sentencepiece": "0.2.2", "tiktoken": "0.14.0", "tokenizers": "0.23.2", "torch": "2.11.0+cu130",
                  "torchaudio": "2.11.0+cu130", "torchvision": "0.26.0+cu130", "transformers": "5.17.0",
                  "triton": "3.6.0"}
# for pip's dry run only: what the online resolution (PyPI, 2026-12-05) picked for the image's packages whose version
# no session read there (an assumption: the image's copies are as recent; protobuf: the kit's fallback floor)
ASSUMED = {"anyio": "4.16.0", "httpx": "0.28.1", "httpcore": "1.0.9", "click": "8.5.1", "hf-xet": "1.8.0",
           "typing-extensions": "4.16.0", "urllib3": "2.8.0", "cuda-bindings": "13.4.4", "cuda-core": "1.2.2",
           "cuda-pathfinder": "1.9.1", "filelock": "4.3.2", "fsspec": "2026.9.0", "h11": "0.16.0", "idna": "3.20",
           "lxml": "6.2.0", "attrs": "26.1.0", "packaging": "26.4", "pillow": "13.0.0", "prometheus-client": "0.26.0",
           "pyyaml": "6.0.4", "regex": "2026.12.2", "requests": "2.34.2", "charset-normalizer": "3.5.3",
           "certifi": "2026.10.19", "grpcio": "1.85.3", "protobuf": "6.33.6", "tqdm": "4.70.1", "aiohttp": "3.14.5",
           "multidict": "7.2.1", "yarl": "1.25.1", "aiohappyeyeballs": "2.7.1", "aiosignal": "1.4.0",
           "frozenlist": "1.8.0", "propcache": "0.5.4", "build": "1.6.1", "cloudpickle": "3.1.3", "pyarrow": "26.0.1",
           "einops": "0.8.2", "annotated-doc": "0.0.7", "psutil": "7.2.2", "pygments": "2.21.0", "jinja2": "3.1.6",
           "markupsafe": "3.0.4", "ml-dtypes": "0.7.0", "ninja": "1.13.2", "nvidia-ml-py": "13.615.71",
           "pandas": "3.1.1", "python-dateutil": "2.9.0", "pyproject-hooks": "1.3.3", "scipy": "1.18.1",
           "setuptools": "84.2.1", "tabulate": "0.10.0", "typer": "0.29.2", "rich": "15.0.0", "markdown-it-py": "4.3.0",
           "mdurl": "0.1.2", "shellingham": "1.5.4", "uvloop": "0.23.0", "xxhash": "4.1.0"}
# known and accepted: sglang's transformers pin (verl 0.9.1 excludes 5.6.0; the kit's 5.9.0 serves both), and
# mistral-common's numpy<2.4 (the kit's own, seen working with the image's numpy 2.5.2 in every vLLM run)
# and vLLM's pins on what sglang pins lower: vLLM is not imported in an SGLang run (site-sgl comes first only there)
ACCEPTED = {("sglang", "transformers"), ("mistral-common", "numpy"), ("vllm", "llguidance"), ("vllm", "outlines-core"),
            ("vllm", "xgrammar"), ("vllm", "flashinfer-python"), ("vllm", "nvidia-cutlass-dsl")}
ENV = {"python_version": "3.12", "python_full_version": "3.12.3", "sys_platform": "linux", "platform_machine": "x86_64",
       "platform_system": "Linux", "os_name": "posix", "implementation_name": "cpython",
       "platform_python_implementation": "CPython", "extra": ""}


def norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def metadata(wheel: Path) -> tuple[str, str, list[str]]:
    with zipfile.ZipFile(wheel) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1)
        msg = Parser().parsestr(z.read(meta).decode())
    return norm(msg["Name"]), msg["Version"], msg.get_all("Requires-Dist") or []


def load(folder: Path) -> dict[str, tuple[str, list[str], Path]]:
    out: dict[str, tuple[str, list[str], Path]] = {}
    for wheel in sorted(folder.glob("*.whl")):
        name, version, reqs = metadata(wheel)
        if name in out:
            print(f"DUPLICATE {name}: {out[name][0]} and {version} in {folder}")
            out[name + "#dup"] = (version, reqs, wheel)
        else:
            out[name] = (version, reqs, wheel)
    return out


def optional(folder: Path) -> dict[str, str]:
    """The "[TAG] name==version" lines of sglang-wheels.txt (left out unless SGL_TAG=1): name -> TAG."""
    out = {}
    for line in (folder / "sglang-wheels.txt").read_text().splitlines():
        if line.startswith("["):
            tag, pin = line.split()
            out[norm(pin.split("==")[0])] = tag.strip("[]")
    return out


def main(argv: list[str]) -> int:
    sgl, kit = load(Path(argv[1])), load(Path(argv[2]))
    left_out = {n: t for n, t in optional(Path(argv[1])).items() if n not in sgl}
    fallback = load(Path(argv[2]) / "fallback")  # taken only where the image's copy is too old: may or may not be
    bad = any(k.endswith("#dup") for k in sgl)
    shadowed = sorted(set(sgl) & set(kit))
    print(f"{len(sgl)} SGLang wheels; shadowing the kit's: " +
          ", ".join(f"{n} {kit[n][0]}->{sgl[n][0]}" for n in shadowed))

    def provider(name: str) -> tuple[str, str | None]:
        for where, pkgs in (("site-sgl", sgl), ("site", kit)):
            if name in pkgs:
                return where, pkgs[name][0]
        if name in IMAGE:
            return "image", IMAGE_VERSIONS.get(name)
        if name in fallback:
            return "site(fallback)", fallback[name][0]
        return "", None

    checked = [(n, sgl[n][1]) for n in sgl] + [(n, kit[n][1]) for n in kit if n not in sgl]
    problems = unknown = 0
    for src, reqs in checked:
        for text in reqs:
            req = Requirement(text)
            if req.marker and not req.marker.evaluate(ENV):
                continue
            name = norm(req.name)
            if src in kit and src not in sgl and name not in sgl:
                continue  # the kit's own consistency: seen working on the device
            where, version = provider(name)
            if not where and name in left_out:
                print(f"left out {name} ({src} requires {req}; SGL_{left_out[name]}=1 carries it)")
            elif not where:
                print(f"MISSING {name} ({src} requires {req})")
                problems, bad = problems + 1, True
            elif version is None:
                if req.specifier and any(s.operator in ("==", "<", "<=", "~=", "===") for s in req.specifier):
                    print(f"UNKNOWN {name} in the image vs {req.specifier} ({src})")
                    unknown += 1
            elif not req.specifier.contains(Version(version), prereleases=True):
                tag = "accepted" if (src, name) in ACCEPTED else "CONFLICT"
                print(f"{tag} {name} {version} ({where}) vs {req.specifier} ({src})")
                problems += tag == "CONFLICT"
    print(f"requirements: {problems} conflict(s), {unknown} unknown upper bound(s) on the image's versions")
    if "--pip" in argv:
        bad = pip_dry_run(argv[argv.index("--pip") + 1], Path(argv[1]), Path(argv[2]), sgl, left_out) or bad
    if "--imports" in argv:
        imports(Path(argv[1]), Path(argv[2]))
    print("verdict:", "BAD" if bad or problems else "ok")
    return 1 if bad or problems else 0


# import name -> the image's package (where they differ)
IMAGE_MODULES = {"PIL": "pillow", "yaml": "pyyaml", "cuda": "cuda-bindings", "dateutil": "python-dateutil",
                 "google": "protobuf", "sklearn": "scikit-learn", "pynvml": "nvidia-ml-py", "attr": "attrs"}


def top_levels(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
    out = set()
    for n in names:
        head = n.split("/")[0]
        if head.endswith((".dist-info", ".data")):
            continue
        out.add(head[:-3] if head.endswith(".py") else head.split(".")[0])
    return out


def imports(sgl_dir: Path, kit_dir: Path) -> None:
    import ast

    provided = set(sys.stdlib_module_names) | {"__future__"}
    for wheel in [*sgl_dir.glob("*.whl"), *kit_dir.glob("*.whl")]:
        provided |= top_levels(wheel)
    image = {n.replace("-", "_") for n in IMAGE} | set(IMAGE_MODULES)
    sources: dict[str, str] = {}
    for wheel in [next(sgl_dir.glob("sglang-*.whl")), next(kit_dir.glob("verl-*.whl"))]:
        with zipfile.ZipFile(wheel) as z:
            sources |= {n[:-3].replace("/", "."): z.read(n).decode(errors="replace") for n in z.namelist()
                        if n.endswith(".py")}

    def module(name: str) -> str | None:
        return name if name in sources else f"{name}.__init__" if f"{name}.__init__" in sources else None

    todo = ["sglang.srt.entrypoints.engine", "verl.workers.rollout.sglang_rollout.async_sglang_server"]
    seen: set[str] = set()
    outside: dict[str, str] = {}
    while todo:
        name = todo.pop()
        key = module(name)
        if key is None or key in seen:
            continue
        seen.add(key)
        parts = name.split(".")
        todo += [".".join(parts[:i]) for i in range(1, len(parts))]
        package = name if key.endswith("__init__") else name.rsplit(".", 1)[0]
        stack = list(ast.parse(sources[key]).body)
        while stack:
            node = stack.pop()
            if isinstance(node, ast.If):
                stack += node.body + node.orelse
            elif isinstance(node, ast.Try):
                stack += node.body
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1] + ([base] if base else []))
                targets = [base] + [f"{base}.{a.name}" for a in node.names]
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for target in targets:
                    top = target.split(".")[0]
                    if top in ("sglang", "verl"):
                        todo.append(target)
                    elif top not in provided and top not in image:
                        outside.setdefault(top, key)
    print(f"imports: {len(seen)} modules of sglang and verl reached; provided by nothing carried or there: "
          + ", ".join(f"{k} (from {v})" for k, v in sorted(outside.items())))


def stub(folder: Path, name: str, version: str) -> None:
    dist = f"{name.replace('-', '_')}-{version}"
    with zipfile.ZipFile(folder / f"{dist}-py3-none-any.whl", "w") as z:
        z.writestr(f"{dist}.dist-info/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{dist}.dist-info/WHEEL", "Wheel-Version: 1.0\nGenerator: stub\nRoot-Is-Purelib: true\n"
                                              "Tag: py3-none-any\n")
        z.writestr(f"{dist}.dist-info/RECORD", "")


def pip_dry_run(python: str, sgl_dir: Path, kit_dir: Path, sgl: dict, left_out: dict) -> bool:
    """pip's resolver, offline, from the carried wheels + stand-ins for the image (unknown versions: a high one)."""
    with tempfile.TemporaryDirectory() as tmp:
        stubs = Path(tmp)
        for name in IMAGE:
            if name not in sgl:
                # numpy: the image's 2.5.2 breaks mistral-common's <2.4 (accepted above): pip would stop at it
                version = "2.3.5" if name == "numpy" else IMAGE_VERSIONS.get(name) or ASSUMED.get(name, "0!999")
                stub(stubs, name, version)  # 0!999: an epoch above any release
        stub(stubs, "transformers", "5.6.0")
        for line in (sgl_dir / "sglang-wheels.txt").read_text().splitlines():  # what was left out on purpose
            if line.startswith("[") and norm(line.split()[1].split("==")[0]) in left_out:
                stub(stubs, *line.split()[1].split("=="))
        plat = [a for p in ("manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_24_x86_64",
                            "manylinux_2_27_x86_64", "manylinux_2_28_x86_64", "manylinux_2_34_x86_64", "any")
                for a in ("--platform", p)]
        cmd = [python, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--no-index",
               "--report", f"{tmp}/report.json", "--python-version", "3.12", "--implementation", "cp", "--only-binary=:all:", *plat,
               "--find-links", str(sgl_dir), "--find-links", str(kit_dir), "--find-links", str(stubs),
               "--target", f"{tmp}/x", "sglang==0.5.12"]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode:
            print("pip: resolution failed:", "\n".join([ln for ln in (res.stdout + res.stderr).splitlines() if "ignored" not in ln][-14:]))
            return True
        import json

        report = json.loads(Path(f"{tmp}/report.json").read_text())
        picked = {norm(i["metadata"]["name"]): (i["metadata"]["version"], i["download_info"]["url"])
                  for i in report["install"]}
        wrong = [f"{n} {v}" for n, (v, url) in picked.items() if n in sgl and v != sgl[n][0]]
        from_where = {"sgl": sum(str(sgl_dir) in u for _, u in picked.values()),
                      "kit": sum(str(kit_dir) in u for _, u in picked.values()),
                      "image (stand-ins)": sum(str(stubs) in u for _, u in picked.values())}
        print(f"pip: sglang==0.5.12 resolves offline: {len(picked)} distributions, from {from_where}"
              + (f"; NOT the carried version: {wrong}" if wrong else ""))
        return bool(wrong)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
