"""``verl-wizard doctor``: the Python environment verl will run in, against verl 0.9.1's pins.

Without --python, the Pythons found on this machine are listed and the best one is checked. Exit codes: 0 fine,
1 problems found, 2 bad input (one line).
"""

from __future__ import annotations

import json

from wizard.cli._common import EXIT_ERRORS, EXIT_OK, UsageError, findings_text


def add_parser(subparsers) -> None:
    doc = subparsers.add_parser("doctor", help="check the Python environment verl will run in (versions, CUDA, Ray)")
    doc.add_argument("--python", metavar="PATH",
                     help="the Python that will run verl (default: the best one found: venvs, conda envs, PATH)")
    doc.add_argument("--format", choices=("text", "json"), default="text")
    doc.add_argument("--deep", action="store_true",
                     help="import torch and flash-attn in that Python (3-6 s on a GPU machine) instead of reading "
                          "their build and resolving their libraries")
    doc.set_defaults(handler=run_doctor)


def run_doctor(args) -> int:
    """Without --python, the Pythons found on this machine are listed and the best one is checked."""
    from wizard.adapters.verl_env.doctor import DoctorError
    from wizard.adapters.verl_env.doctor import run_doctor as doctor
    from wizard.adapters.verl_env.python_envs import discover, how_to_create

    candidates = [] if args.python else discover()
    advice = None if args.python or any(c.has_verl for c in candidates) else how_to_create()
    python = args.python or (candidates[0].python if candidates else None)
    if python is None:
        return _no_python(args.format, advice)
    try:
        report = doctor(python, deep=args.deep)
    except DoctorError as exc:
        raise UsageError(str(exc)) from None
    if args.format == "json":
        doc = report.to_json()
        if not args.python:
            doc.update(candidates=[c.to_json() for c in candidates], how_to_create=advice)
        print(json.dumps(doc))
    else:
        if not args.python:
            print(render_candidates(candidates))
        print(render_doctor(report) + (f"\n\n{advice}" if advice else ""))
    return EXIT_OK if report.ok else EXIT_ERRORS


def _no_python(fmt: str, advice: str) -> int:
    """No Python at all to check (the bundle on a machine without one): how to create one, exit 1."""
    if fmt == "json":
        print(json.dumps({"ok": False, "python": None, "candidates": [], "how_to_create": advice, "findings": []}))
    else:
        print(f"no Python found (no venv, conda env, ~/.venvs/* or python3 on PATH)\n\n{advice}")
    return EXIT_ERRORS


def render_candidates(candidates) -> str:
    lines = ["Pythons found (best first; doctor checks the first, --python PATH picks another):"]
    width, says = max(len(c.python) for c in candidates), max(len(c.summary()) for c in candidates)
    for i, c in enumerate(candidates):
        lines.append(f"  {'>' if i == 0 else ' '} {c.python:{width}}  {c.summary():{says}}  {c.origin}")
    return "\n".join(lines) + "\n"


def render_doctor(report) -> str:
    f = report.facts
    pk = f.get("packages") or {}
    t = f.get("torch") or {}
    drv = f.get("driver") or {}
    from wizard.core.hardware import cuda_version_text

    lines = [f"python  {f['python']['version']}  {report.python}"]
    for name in ("verl", "torch", "transformers", "tensordict", "ray", "TransferQueue", "cachetools", "vllm",
                 "sglang", "flash-attn"):
        lines.append(f"{name:14} {pk.get(name) or '-'}")
    if t:
        lines.append(f"torch CUDA     build {t.get('cuda_build') or 'none (CPU)'}, available: "
                     f"{'yes' if t.get('cuda_available') else 'no'}, {t.get('device_count', 0)} device(s)")
    lines.append(f"driver CUDA    {cuda_version_text(drv.get('cuda')) or 'no NVIDIA driver'}")
    ray = f.get("ray_check")
    lines.append("ray            " + (f"{ray['address']} ({ray['origin']}): "
                                     f"{'answers' if ray['reachable'] else ray['reason']}" if ray else "no cluster configured"))
    return "\n".join(lines) + "\n" + findings_text(report.findings, f"environment {report.python} ({report.wall_s:.1f} s)")
