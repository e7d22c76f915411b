"""``generate`` writes a folder's run.sh, config.yaml and plan.json as one set: overlapping writes into one folder
take turns (every "wrote" printed exists, as the file or as its backup), and a write killed between its renames
(SIGKILL, the real signal, at several moments) is completed by the next write, whose temporary files are cleaned.
Real processes."""

import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.cli import process_env

SET = ("run.sh", "config.yaml", "plan.json")


def generate(out: Path, name: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "wizard", "generate", "--preset", "grpo-1gpu-smoke", "--set",
                             f"trainer.experiment_name={name}", "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=process_env())


def names_in(path: Path) -> set[str]:
    return set(re.findall(r"exp-[0-9a-z]+-end", path.read_text()))


def assert_one_whole_set(out: Path) -> str:
    names = [names_in(out / f) for f in SET]
    assert all(len(n) == 1 for n in names) and names[0] == names[1] == names[2], f"a mixed set: {names}"
    leftovers = [p.name for p in out.iterdir() if p.name.endswith(".tmp") or p.name.startswith(".verl-wizard-set")]
    assert leftovers == []
    return next(iter(names[0]))


def test_overlapping_generates_into_one_folder_each_keep_their_files(tmp_path):
    out = tmp_path / "out"
    procs = {f"exp-{i}-end": generate(out, f"exp-{i}-end") for i in range(6)}
    for name, proc in procs.items():
        stdout, stderr = proc.communicate(timeout=300)
        assert proc.returncode in (0, 1), stderr
        wrote = [Path(line.split(" ", 1)[1]) for line in stdout.splitlines() if line.startswith("wrote ")]
        assert {p.name for p in wrote} == set(SET)
        for path in wrote:  # what it said it wrote is there: the file itself, or the backup a later write made
            copies = [path, *path.parent.glob(path.name + ".*.bak")]
            assert any(name in names_in(p) for p in copies if p.exists()), f"{name}'s {path.name} is nowhere"
    assert_one_whole_set(out)


KILLED_WRITE = textwrap.dedent("""
    import os, signal, sys
    sys.path.insert(0, sys.argv[1])
    import wizard.adapters.files.disk as disk
    from wizard.usecases.plans import preset_plan
    from wizard.usecases.writing import write_plan_files

    moment, count = sys.argv[3], [0]
    real_replace, real_stage = os.replace, disk._stage

    def replace(src, dst, *a, **kw):
        real_replace(src, dst, *a, **kw)
        if os.path.basename(dst) in ("run.sh", "config.yaml", "plan.json"):
            count[0] += 1
            if moment == f"rename{count[0]}":
                os.kill(os.getpid(), signal.SIGKILL)

    def stage(*a, **kw):
        path = real_stage(*a, **kw)
        if moment == "staging":
            os.kill(os.getpid(), signal.SIGKILL)
        return path

    disk.os.replace, disk._stage = replace, stage
    write_plan_files(preset_plan("grpo-1gpu-smoke", sets=["trainer.experiment_name=exp-killed-end"]), sys.argv[2])
""")


@pytest.mark.parametrize("moment", ["staging", "rename1", "rename2"])
def test_a_write_killed_between_renames_is_completed_by_the_next(tmp_path, moment):
    root = Path(__file__).resolve().parents[2]
    out = tmp_path / "out"
    first = generate(out, "exp-first-end")
    first.communicate(timeout=300)
    killed = subprocess.run([sys.executable, "-c", KILLED_WRITE, str(root), str(out), moment], capture_output=True,
                            text=True, timeout=300)
    assert killed.returncode == -9, killed.stderr  # it really died mid-write
    after = generate(out, "exp-after-end")
    stdout, stderr = after.communicate(timeout=300)
    assert after.returncode in (0, 1), stderr
    assert assert_one_whole_set(out) == "exp-after-end"
    if moment != "staging":  # the killed write's set was completed, then kept as the backups of the next one
        backups = [p for p in out.glob("*.bak") if "exp-killed-end" in names_in(p)]
        assert sorted(next(f for f in SET if p.name.startswith(f + ".")) for p in backups) == sorted(SET)
