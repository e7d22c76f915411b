"""Whatever stops ``verl-wizard launch`` (SIGKILL included, at several moments), the run it started ends: its
whole process tree, a child that called ``setsid()``, a daemon that double-forked and one that cleared its
environment included; and the run's private Ray folder goes with it. Real processes, real signals; the run is a
stand-in for verl's Python (verl cannot train here), a real process tree."""

import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="process tracking reads /proc (Linux)")


def stand_in(tmp_path: Path, marker: str) -> Path:
    """A 'Python' that, asked to run verl, starts a tree of sleeps that try every way out of it, and records
    where its Ray would keep its session."""
    py = tmp_path / "python"
    py.write_text(
        "#!/bin/sh\ncase \"$*\" in *verl.trainer.main_ppo*) ;; *) exit 1;; esac\n"
        f"echo \"$RAY_TMPDIR\" > '{tmp_path}/ray_tmp'\n"
        f"sleep {marker} &\n"
        f"setsid sleep {marker} &\n"
        f"( setsid sleep {marker} & ) \n"  # a daemon: its parent exits at once
        f"env -i setsid /bin/sleep {marker} &\n"  # no environment at all: no mark to find it by
        "echo 'Total training steps: 5'\n"
        f"exec sleep {marker}\n")
    py.chmod(py.stat().st_mode | stat.S_IXUSR)
    return py


def left(marker: str, folder: Path | None = None, wait: float = 60.0) -> list[str]:
    """The run's processes still alive (and its folder, if it is still there) once they had ``wait`` seconds to go
    (no time is asserted)."""
    deadline = time.monotonic() + wait
    while True:
        out = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
        out += [str(folder)] if folder is not None and folder.exists() else []
        if not out or time.monotonic() > deadline:
            return out


@pytest.mark.parametrize("moment", [0.0, 0.3, 1.5])
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM])
def test_a_killed_launch_leaves_no_process_of_its_run(tmp_path, sig, moment):
    marker = f"{700 + int(sig)}{int(moment * 10)}{os.getpid()}"
    py = stand_in(tmp_path, marker)
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    proc = subprocess.Popen([sys.executable, "-m", "wizard", "launch", "--preset", "grpo-1gpu-smoke", "--python",
                             str(py), "--out", str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env=env)
    for line in proc.stdout:  # the run is started
        if "training steps" in line:
            break
    time.sleep(moment)
    proc.send_signal(sig)
    proc.communicate(timeout=120)
    ray_tmp = (tmp_path / "ray_tmp").read_text().strip()
    assert ray_tmp.startswith("/"), "the run got no private Ray folder"
    assert left(marker, Path(ray_tmp)) == [], "processes of the run (or its Ray folder) survived the wizard"
