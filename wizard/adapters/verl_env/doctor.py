"""``verl-wizard doctor``: is the target Python environment one verl 0.9.1 can train in?

``run_probe`` runs ``probes/doctor_probe.py`` with the target Python (facts only); ``doctor_findings``
turns the facts into findings, each with the exact command that fixes it. The pins are verl 0.9.1's
own (its METADATA; shared/reference/verl-0.9.1.md section 9). ``doctor_findings`` is pure so the
environment rules can move into ``wizard.core.check.rules`` unchanged.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import sys
import time
from dataclasses import dataclass, field

from wizard.adapters.processes.guarded import run_guarded
from wizard.adapters.files.bundle import probe_path
from wizard.core.hardware import cuda_version_text
from wizard.core.findings import Finding, Severity, Stage, has_errors, sort_findings

VERL = "0.9.1"
PYTHON_RANGE = ">=3.10,<3.13"
PINS = {  # package -> (specifier, why it matters)
    "transformers": (">=5.5.3,<5.11,!=5.6.0", "verl 0.9.1 requires it"),
    "tensordict": (">=0.8.0,<=0.10.0,!=0.9.0", "verl 0.9.1 requires it"),
    "ray": (">=2.41.0", "verl 0.9.1 requires ray[default]>=2.41.0"),
    "TransferQueue": (">=0.1.10", "the V1 trainer (trainer.use_v1=true, the default) needs it"),
}
ENGINE_PINS = {"vllm": "0.24.0", "sglang": "0.5.12"}
VLLM_MIN = "0.18.0"  # verl/third_party/vllm/__init__.py refuses older
TORCH_PIN, TORCH_CUDA = "2.11.0", "cu130"  # what verl's vllm/sglang/fsdp extras install


class DoctorError(RuntimeError):
    """The target Python could not be probed; the message is one line."""


@dataclass
class DoctorReport:
    python: str
    facts: dict
    findings: list[Finding] = field(default_factory=list)
    wall_s: float = 0.0

    @property
    def ok(self) -> bool:
        return not has_errors(self.findings)

    def to_json(self) -> dict:
        return {"ok": self.ok, "python": self.python, "facts": self.facts, "wall_s": round(self.wall_s, 3),
                "findings": [f.to_json() for f in self.findings]}


def run_doctor(python: str | None = None, timeout: float = 120.0, check_ray: bool = True,
               deep: bool = False) -> DoctorReport:
    """``deep``: import torch and flash-attn in the target (3-6 s on a GPU machine) instead of reading torch's
    build and resolving its CUDA libraries without importing it (about 0.3 s, the same verdicts on a
    sound install)."""
    python = python or _target_python()
    t0 = time.perf_counter()
    facts = run_probe(python, timeout=timeout, deep=deep)
    installed = (facts.get("packages") or {}).get("verl")
    if installed and installed != VERL:  # another verl: which of its keys the wizard's 0.9.1 schema does not match
        facts["key_drift"] = key_drift_facts(python, timeout)
    if check_ray:
        facts["ray_check"] = ray_reachability(facts.get("ray") or {})
    findings = doctor_findings(facts, python)
    return DoctorReport(python=python, facts=facts, findings=findings, wall_s=time.perf_counter() - t0)


def _target_python() -> str:
    """The Python to check when none is given: the best one found (verl first; never the bundle's own program)."""
    from wizard.adapters.verl_env.python_envs import default_python

    python = default_python()
    if python is None:
        raise DoctorError("no Python found to check (no venv, conda env or python3 on PATH); "
                          "give one with --python PATH, or see `verl-wizard doctor` for how to create one")
    return python


def key_drift_facts(python: str, timeout: float = 120.0) -> dict:
    """The installed verl's config tree against the shipped 0.9.1 snapshot, as facts: the KeyDrift's fields, or
    ``{"error": why}`` when the schema probe cannot read the tree (it composes verl's Hydra config there)."""
    import dataclasses
    import tempfile

    from wizard.adapters.files.resources import load_schema
    from wizard.core.verl import VerlSchema
    from wizard.core.verl.drift import key_drift

    with tempfile.TemporaryDirectory(prefix="verl-wizard-schema-") as tmp:
        out = os.path.join(tmp, "schema.json")
        try:
            proc = run_guarded([python, probe_path("extract_verl_schema.py"), "--out", out], timeout=timeout,
                               env=dict(os.environ, PYTHONWARNINGS="ignore"), memory_bytes=None)
        except OSError as exc:
            return {"error": f"cannot run {python}: {exc.strerror or exc}"}
        if proc.timed_out:
            return {"error": f"the schema probe did not finish within {timeout:.0f} s"}
        try:
            with open(out, encoding="utf-8") as f:
                installed = VerlSchema.from_dict(json.load(f))
        except (OSError, ValueError, KeyError) as exc:
            tail = (proc.stderr.strip().splitlines() or [str(exc)])[-1][:200]
            return {"error": f"the schema probe could not read verl's config tree ({tail})"}
    return dataclasses.asdict(key_drift(installed, load_schema(VERL)))


def run_probe(python: str, timeout: float = 120.0, imports: bool = True, deep: bool = False) -> dict:
    probe = probe_path("doctor_probe.py")
    args = [python, probe] + ((["--torch", "--flash-attn"] if deep else ["--torch-static"]) if imports else [])
    env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONWARNINGS="ignore")
    if os.path.isdir(python):
        raise DoctorError(f"--python {python}: is a folder; give the python executable, e.g. {python.rstrip('/')}/bin/python")
    try:  # the user's Python: its own process group, nothing of it left afterwards (no memory cap: CUDA)
        proc = run_guarded(args, timeout=timeout, env=env, memory_bytes=None)
    except FileNotFoundError:
        raise DoctorError(f"--python {python}: no such file") from None
    except PermissionError:
        raise DoctorError(f"--python {python}: not executable") from None
    except OSError as exc:
        raise DoctorError(f"--python {python}: cannot run it ({exc.strerror or exc})") from None
    if proc.timed_out:
        raise DoctorError(f"--python {python}: the environment probe did not finish within {timeout:.0f} s")
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith("{"):
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                break
    tail = (proc.stderr.strip().splitlines() or ["no output"])[-1][:200]
    raise DoctorError(f"--python {python}: not a Python 3 that can run the probe (exit {proc.returncode}: {tail})")


def flash_attn_importable(python: str, timeout: float = 120.0) -> bool | None:
    """Whether flash-attn imports in ``python``: its metadata first (0.3 s), the import only when it is installed
    (a build for another torch shows only then). None when the probe cannot run there."""
    try:
        facts = run_probe(python, timeout=timeout, imports=False)
        if not (facts.get("packages") or {}).get("flash-attn"):
            return False
        facts = run_probe(python, timeout=timeout, deep=True)
    except DoctorError:
        return None
    return bool((facts.get("flash_attn") or {}).get("imported"))


def ray_reachability(ray: dict) -> dict | None:
    """Does the Ray cluster the environment points at answer? (RAY_ADDRESS first, then a local instance.)"""
    from wizard.adapters.verl_env.ray_cluster import CONNECT_TIMEOUT_S, RayAddressError, _tcp_refusal, parse_address

    address = ray.get("address_env") or ray.get("current_cluster")
    if not address:
        return None
    origin = "RAY_ADDRESS" if ray.get("address_env") else "the local Ray instance (/tmp/ray/ray_current_cluster)"
    try:
        target = parse_address(address)
    except RayAddressError as exc:
        return {"address": address, "origin": origin, "reachable": False, "reason": str(exc)}
    if target is None:
        return {"address": address, "origin": origin, "reachable": None, "reason": "not checked (Ray resolves it)"}
    reason = _tcp_refusal(*target, CONNECT_TIMEOUT_S)
    return {"address": address, "origin": origin, "reachable": reason is None, "reason": reason}


# ------------------------------------------------------------------------------------------------
# Facts -> findings (pure)


def _f(rule: str, severity: Severity, message: str, fix: str | None, stage: Stage = Stage.RUNTIME,
       keys: list[str] | None = None) -> Finding:
    """An environment finding: its fix is for the machine (install, upgrade, start Ray), never plan overrides."""
    return Finding(rule=rule, severity=severity, stage=stage, keys=keys or [], message=message, fix=fix)


def doctor_findings(facts: dict, python: str) -> list[Finding]:
    py = shlex.quote(python)
    pip = f"{py} -m pip install"
    pk = facts.get("packages") or {}
    out: list[Finding] = []
    pyver = (facts.get("python") or {}).get("version", "?")
    if not satisfies(pyver, PYTHON_RANGE):
        out.append(_f("env.python", Severity.ERROR, f"Python {pyver} is outside verl {VERL}'s range {PYTHON_RANGE}",
                      "python3.12 -m venv .venv-verl && .venv-verl/bin/pip install \"verl[vllm]==0.9.1\"",
                      Stage.PREFLIGHT))
    if not pk.get("verl"):
        out.append(_f("env.verl.missing", Severity.ERROR, f"verl is not installed in {python}",
                      f"{pip} \"verl[verl-core]=={VERL}\"", Stage.PREFLIGHT))
    elif pk["verl"] != VERL:
        out.append(_f("env.verl.version", Severity.WARNING,
                      f"verl {pk['verl']} is installed; the wizard knows verl {VERL}'s keys and rules"
                      + _drift_text(facts.get("key_drift")),
                      f"{pip} \"verl[verl-core]=={VERL}\"", Stage.ADVICE))
    if pk.get("verl"):
        out += _extras(pk, pip)
    out += _torch_cuda(facts, pip)
    out += _engines(pk, pip)
    for name, (spec, why) in PINS.items():
        if name == "TransferQueue":
            continue
        have = pk.get(name)
        if have is None and pk.get("verl"):  # without verl, installing verl brings them
            out.append(_f(f"env.{name}", Severity.ERROR, f"{name} is not installed ({why}: {name}{spec})",
                          f"{pip} \"{name}{spec}\""))
        elif have is not None and not satisfies(have, spec):
            out.append(_f(f"env.{name}", Severity.ERROR, f"{name} {have} is outside verl {VERL}'s pin {name}{spec}",
                          f"{pip} \"{name}{spec}\""))
    td = pk.get("tensordict")
    if td and satisfies(td, PINS["tensordict"][0]) and not satisfies(td, ">=0.10.0"):
        out.append(_f("env.tensordict", Severity.WARNING,
                      f"tensordict {td} is allowed by verl's pin, but verl's code asserts tensordict >= 0.10 "
                      "(protocol.py, tensordict_utils.py): in practice only 0.10.0 works",
                      f"{pip} \"tensordict==0.10.0\""))
    out += _flash_attn(facts, pip)
    out += _ray(facts)
    if is_wizards_own(facts):
        out = [_in_a_training_env(f) for f in out]
    return sort_findings(out)


# What a GPU training environment needs and verl-wizard's own does not (it checks and plans on CPU torch).
TRAINING_ONLY = ("env.cuda.unavailable", "env.rollout.missing", "env.flash_attn", "env.torch.missing")
TRAINING_ENV = "~/verl-train"


def is_wizards_own(facts: dict) -> bool:
    """The Python checked is the one verl-wizard runs in (same environment prefix)."""
    prefix = (facts.get("python") or {}).get("prefix")
    return bool(prefix) and os.path.realpath(prefix) == os.path.realpath(sys.prefix)


def _in_a_training_env(f: Finding) -> Finding:
    """A fix for a training environment, not for the wizard's: installing CUDA torch or vLLM into the Python the
    wizard runs in is not what anyone wants; a fresh environment for the run is."""
    if f.rule not in TRAINING_ONLY:
        return f
    fix = (f"for training, make a separate environment (this one is verl-wizard's own, where CPU torch is right): "
           f"python3.12 -m venv {TRAINING_ENV} && {TRAINING_ENV}/bin/pip install \"verl[vllm]=={VERL}\" && "
           f"{TRAINING_ENV}/bin/pip install flash-attn==2.8.3 --no-build-isolation; then point verl-wizard at "
           f"{TRAINING_ENV}/bin/python (--python on the command line, the Environment step's Python in the window)")
    return f.model_copy(update={"message": f"{f.message}; the Python checked is verl-wizard's own", "fix": fix})


def _drift_text(drift: dict | None) -> str:
    """": its config tree differs from 0.9.1's: ...": the keys that differ, from the facts key_drift_facts gives."""
    if not drift:
        return ""
    if "error" in drift:
        return f" (the keys that differ are unknown: {drift['error']})"
    from wizard.core.verl.drift import KeyDrift

    d = KeyDrift(**{**drift, "changed": [tuple(c) for c in drift.get("changed", [])]})
    return f"; {d.summary()}" + ("" if d.same else " (`verl-wizard doctor --format json` lists every key, under "
                                                   "facts.key_drift)")


def _extras(pk: dict, pip: str) -> list[Finding]:
    missing = [n for n in ("TransferQueue", "cachetools") if not pk.get(n)]
    tq = pk.get("TransferQueue")
    if tq and not satisfies(tq, ">=0.1.10"):
        missing.append(f"TransferQueue>=0.1.10 (have {tq})")
    if not missing:
        return []
    return [_f("env.verl.extras", Severity.ERROR,
               f"missing {', '.join(missing)}: verl {VERL}'s default V1 trainer imports them and the run dies in the "
               "TaskRunner (they come with the verl-core extra, not with a bare `pip install verl`)",
               f"{pip} \"verl[verl-core]=={VERL}\"", keys=["trainer.use_v1"])]


def _torch_cuda(facts: dict, pip: str) -> list[Finding]:
    pk = facts.get("packages") or {}
    torch_fix = f"{pip} torch=={TORCH_PIN} --index-url https://download.pytorch.org/whl/{TORCH_CUDA}"
    if not pk.get("torch"):
        return [_f("env.torch.missing", Severity.ERROR, "torch is not installed (verl needs it; its GPU extras pin "
                   f"torch {TORCH_PIN} for CUDA 13.0)", torch_fix, Stage.PREFLIGHT)]
    t = facts.get("torch") or {}
    driver = facts.get("driver") or {}
    driver_cuda = cuda_version_text(driver.get("cuda"))
    if t.get("missing_libs"):
        missing = ", ".join(t["missing_libs"][:4])
        return [_f("env.torch.broken", Severity.ERROR,
                   f"torch {pk['torch']} is installed but its CUDA libraries do not resolve ({missing} not found): "
                   f"`import torch` fails with \"{t['missing_libs'][0]}: cannot open shared object file\"",
                   f"{pip} --force-reinstall {torch_fix.split(' install ', 1)[1]}", Stage.PREFLIGHT)]
    if t.get("imported") is False:
        return [_f("env.torch.broken", Severity.ERROR, f"torch {pk['torch']} is installed but does not import: "
                   f"{t.get('error')}", f"{pip} --force-reinstall {torch_fix.split(' install ', 1)[1]}",
                   Stage.PREFLIGHT)]
    build = t.get("cuda_build") if t else _cuda_from_local(pk["torch"])
    if t and build is None or (not t and build is None and "+cpu" in pk["torch"]):
        return [_f("env.cuda.unavailable", Severity.ERROR,
                   f"CUDA not available: torch {pk['torch']} is a CPU-only build, so verl's GPU workers and rollout "
                   "engines cannot start (fine for checking configs, not for training)", torch_fix)]
    if not driver.get("found"):
        return [_f("env.cuda.unavailable", Severity.ERROR,
                   f"CUDA not available: torch {pk['torch']} is built for CUDA {build} but there is no NVIDIA driver "
                   "here (libcuda.so.1 is missing)",
                   f"run on a GPU machine whose driver supports CUDA {build} or newer (nvidia-smi must work)")]
    out = []
    if build and driver_cuda and _major(driver_cuda) < _major(build):
        out.append(_f("env.cuda.driver", Severity.ERROR,
                      f"torch {pk['torch']} is built for CUDA {build} but the driver supports CUDA {driver_cuda} at most",
                      f"upgrade the NVIDIA driver to one for CUDA {build}, or {pip} torch=={pk['torch'].split('+')[0]} "
                      f"--index-url https://download.pytorch.org/whl/cu{driver_cuda.replace('.', '')}"))
    elif build and driver_cuda and not satisfies(driver_cuda, f">={build}"):
        out.append(_f("env.cuda.driver", Severity.WARNING,
                      f"torch is built for CUDA {build}, newer than the driver's CUDA {driver_cuda}: it runs through "
                      "CUDA's minor-version compatibility, but kernels compiled just-in-time (PTX) can fail",
                      f"upgrade the NVIDIA driver to one for CUDA {build}"))
    if t and t.get("cuda_available") is False and not out:
        warn = "; ".join(t.get("warnings") or []) or "torch.cuda.is_available() is False"
        out.append(_f("env.cuda.unavailable", Severity.ERROR, f"CUDA not available in torch {pk['torch']}: {warn}",
                      "check `nvidia-smi` and CUDA_VISIBLE_DEVICES; restart after a driver upgrade"))
    return out


def _cuda_from_local(version: str) -> str | None:
    m = re.search(r"\+cu(\d+)(\d)$", version)
    return f"{m.group(1)}.{m.group(2)}" if m else None


def _major(version: str) -> int:
    try:
        return int(version.split(".")[0])
    except ValueError:
        return 0


def _engines(pk: dict, pip: str) -> list[Finding]:
    vllm, sglang = pk.get("vllm"), pk.get("sglang")
    if not vllm and not sglang:
        return [_f("env.rollout.missing", Severity.ERROR,
                   "no vLLM/SGLang: verl's RL trainers generate with a rollout engine "
                   "(actor_rollout_ref.rollout.name=vllm|sglang) and neither is installed",
                   f"{pip} \"verl[vllm]=={VERL}\"   (vllm {ENGINE_PINS['vllm']}, torch {TORCH_PIN}; "
                   f"or \"verl[sglang]=={VERL}\" for sglang {ENGINE_PINS['sglang']})",
                   keys=["actor_rollout_ref.rollout.name"])]
    out = []
    if vllm and not satisfies(vllm, f">={VLLM_MIN}"):
        out.append(_f("env.vllm", Severity.ERROR, f"vLLM {vllm} is older than {VLLM_MIN}, the oldest verl {VERL} "
                      "imports (verl/third_party/vllm)", f"{pip} \"verl[vllm]=={VERL}\""))
    for name, pin in ENGINE_PINS.items():
        have = pk.get(name)
        if have and satisfies(have, f">={VLLM_MIN}" if name == "vllm" else ">=0") and have.split("+")[0] != pin:
            out.append(_f(f"env.{name}", Severity.WARNING,
                          f"{name} {have} is installed; verl {VERL}'s {name} extra pins {name}=={pin}",
                          f"{pip} \"verl[{name}]=={VERL}\"", Stage.ADVICE))
    return out


def _flash_attn(facts: dict, pip: str) -> list[Finding]:
    have = (facts.get("packages") or {}).get("flash-attn")
    sdpa = "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"
    if not have:
        return [_f("env.flash_attn", Severity.WARNING,
                   "flash-attn is not installed: verl loads models with attn_implementation=flash_attention_2 by "
                   "default, which fails at model load without it",
                   f"{pip} flash-attn==2.8.3 --no-build-isolation  (or set {sdpa}; not for a plan with a critic: verl "
                   "loads the critic with flash_attention_2 whatever the overrides say, see check's "
                   "env.flash_attn_critic)",
                   keys=["actor_rollout_ref.model.override_config"])]  # a machine's fact, never a plan override
    fa = facts.get("flash_attn") or {}
    if fa and not fa.get("imported"):
        return [_f("env.flash_attn", Severity.ERROR,
                   f"flash-attn {have} is installed but does not import ({fa.get('error')}): usually a build for "
                   "another torch/CUDA", f"{pip} --force-reinstall --no-build-isolation flash-attn==2.8.3  (or set {sdpa})")]
    return []


def _ray(facts: dict) -> list[Finding]:
    check = facts.get("ray_check")
    start = "ray start --head --port=6379 --num-gpus=N (add --block when a script or container must stay in the foreground)"
    if check is None:
        return [_f("env.ray.local", Severity.INFO,
                   "no Ray cluster configured (RAY_ADDRESS unset, no local instance): verl's main_ppo starts a "
                   "private Ray on this machine, which is right for one node",
                   f"for several nodes: {start} on the head, then `ray start --address=HEAD:6379` on the others "
                   "and export RAY_ADDRESS=HEAD:6379", Stage.ADVICE)]
    if check.get("reachable") is False:
        severity = Severity.ERROR if check["origin"] == "RAY_ADDRESS" else Severity.WARNING
        return [_f("env.ray.unreachable", severity,
                   f"{check['origin']} points at {check['address']}, which does not answer: {check['reason']}",
                   f"{start}; or unset RAY_ADDRESS so verl starts its own"
                   if check["origin"] == "RAY_ADDRESS" else f"`ray stop` clears the stale instance; {start}")]
    return []


# ------------------------------------------------------------------------------------------------
# Versions: just enough of PEP 440 for verl's pins (numeric release, local part ignored)


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split("."):
        m = re.match(r"\d+", piece)
        if not m:
            break
        parts.append(int(m.group()))
    return tuple(parts)


def _cmp(a: str, b: str) -> int:
    ra, rb = _release(a), _release(b)
    n = max(len(ra), len(rb))
    ra, rb = ra + (0,) * (n - len(ra)), rb + (0,) * (n - len(rb))
    return (ra > rb) - (ra < rb)


def satisfies(version: str, spec: str) -> bool:
    """'5.10.4' satisfies '>=5.5.3,<5.11,!=5.6.0'? Comparison on release numbers only."""
    ops = {">=": lambda c: c >= 0, "<=": lambda c: c <= 0, ">": lambda c: c > 0, "<": lambda c: c < 0,
           "==": lambda c: c == 0, "!=": lambda c: c != 0}
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        op = next(o for o in (">=", "<=", "==", "!=", ">", "<") if clause.startswith(o))
        if not ops[op](_cmp(version, clause[len(op):].strip())):
            return False
    return True
