"""``verl-wizard launch`` when its output or its run folder goes away: ``launch ... | head`` stops the run cleanly
and says so (exit 141, the reason in run.log), a full run folder stops it with one line (exit 1), never a quiet
exit 0 or "internal error". Real processes; the run is a stand-in for verl's Python that prints without end."""

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.cli import process_env
from tests.helpers.procs import left

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="process tracking reads /proc (Linux)")


def chatty(tmp_path: Path, marker: str) -> Path:
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\ncase \"$*\" in *verl.trainer.main_ppo*) ;; *) exit 1;; esac\n"
                  f"setsid sleep {marker} &\n"
                  "echo 'Total training steps: 5'\n"
                  "while true; do yes 'a line of the run, long enough to fill a small disk soon' | head -n 100; "
                  "sleep 0.01; done\n")
    py.chmod(py.stat().st_mode | stat.S_IXUSR)
    return py


def test_launch_into_head_stops_the_run_and_says_why(tmp_path):
    marker = f"31{os.getpid()}"
    py = chatty(tmp_path, marker)
    run_dir = tmp_path / "r"
    launch = subprocess.Popen([sys.executable, "-m", "wizard", "launch", "--preset", "grpo-1gpu-smoke", "--python",
                               str(py), "--out", str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              env=process_env())
    head = subprocess.run(["head", "-n", "3"], stdin=launch.stdout, capture_output=True, text=True)
    launch.stdout.close()  # head is gone: nobody reads launch's output any more
    err = launch.stderr.read().decode()
    launch.wait(timeout=120)
    assert len(head.stdout.splitlines()) == 3
    assert launch.returncode == 141, err
    assert "the run was stopped: the output was closed" in err and "Traceback" not in err
    assert "verl-wizard: stopped: the output was closed" in (run_dir / "run.log").read_text()
    assert left(marker) == []


def test_a_full_run_folder_stops_the_run_with_one_line(tmp_path):
    if os.getuid() != 0 or not shutil.which("unshare"):
        pytest.skip("mounting a small tmpfs needs root and unshare")
    marker = f"32{os.getpid()}"
    py = chatty(tmp_path, marker)
    disk = tmp_path / "disk"
    disk.mkdir()
    cmd = (f"mount -t tmpfs -o size=256k tmpfs '{disk}' && exec '{sys.executable}' -m wizard launch --preset "
           f"grpo-1gpu-smoke --python '{py}' --out '{disk}/r'")
    proc = subprocess.run(["unshare", "-m", "sh", "-c", cmd], capture_output=True, text=True, timeout=300,
                          env=process_env())
    if "mount:" in proc.stderr:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    errors = [line for line in proc.stderr.splitlines() if line.startswith("verl-wizard: error")]
    assert proc.returncode == 1, proc.stderr
    assert len(errors) == 1 and "No space left on device" in errors[0] and "run.log" in errors[0], proc.stderr
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert left(marker) == []
