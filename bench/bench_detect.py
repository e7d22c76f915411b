"""How long discovery takes: NVML (in-process, the whole machine with links) against `nvidia-smi topo -m`
and `nvidia-smi -q -x` (whole processes), and `doctor` wall time on a target Python.

Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_detect.py [--python PATH] [--save DIR]
--save DIR also writes what was measured (raw NVML answers, the XML, `topo -m`, the doctor facts) so a GPU
machine's answers can become test fixtures.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

from timing import fmt, timed_result

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))



def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable, help="target Python for doctor (default: this one)")
    ap.add_argument("--save", metavar="DIR", help="write the raw answers there")
    ap.add_argument("-n", type=int, default=5)
    args = ap.parse_args()
    save = Path(args.save) if args.save else None
    if save:
        save.mkdir(parents=True, exist_ok=True)

    from wizard.adapters.machine.nvml import gather_nvml

    samples, raw = timed_result(gather_nvml, args.n)
    if raw.get("error"):
        print(f"NVML discovery                 {fmt(samples)}  -> no GPU: {raw['error']['kind']}")
    else:
        print(f"NVML discovery ({raw.get('count')} GPU(s), links) {fmt(samples)}")
    if save:
        (save / "nvml-raw.json").write_text(json.dumps(raw, indent=1, default=str))

    smi = shutil.which("nvidia-smi")
    if smi:
        for cmd, name in ((["topo", "-m"], "topo-m.txt"), (["-q", "-x"], "nvidia-smi-q.xml")):
            s, proc = timed_result(lambda c=cmd: subprocess.run([smi, *c], capture_output=True, text=True), args.n)
            print(f"nvidia-smi {' '.join(cmd):20} {fmt(s)}")
            if save:
                (save / name).write_text(proc.stdout)
    else:
        print("nvidia-smi                     not installed here: no comparison (run this on a GPU machine)")

    from wizard.adapters.verl_env.doctor import run_doctor

    for deep in (False, True):
        s, report = timed_result(lambda d=deep: run_doctor(args.python, check_ray=True, deep=d), max(1, args.n // 2))
        torch = report.facts.get("torch") or {}
        how = (f"torch imported in {torch.get('import_s')} s" if torch.get("imported")
               else "torch read from its files, not imported" if torch.get("static") else torch.get("skipped", "no torch"))
        print(f"doctor{' --deep' if deep else '       '} {args.python}  {fmt(s)}  ({how}; goal <= 2 s with torch)")
    if save:
        (save / "doctor-facts.json").write_text(json.dumps(report.facts, indent=1))


if __name__ == "__main__":
    main()
