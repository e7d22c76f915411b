"""The reaper under a run (``wizard.adapters.processes.reaper``): real process trees that try every way out (a child
that calls ``setsid()``, a double-forked daemon, one that clears its environment), real signals to the process that
owns the run. No time is asserted: a check waits (boundedly) for the processes to go, then asserts none is left."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from wizard.adapters.processes.launcher import RunProcess
from tests.helpers.procs import default_hangup, left

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="process tracking reads /proc (Linux)")


def tree(tmp_path: Path, marker: str, then: str = "exec sleep MARK") -> list[str]:
    path = tmp_path / "run.sh"
    path.write_text(textwrap.dedent(f"""\
        #!/bin/sh
        echo "$RAY_TMPDIR" > '{tmp_path}/ray_tmp'
        sleep {marker} &
        setsid sleep {marker} &
        ( setsid sleep {marker} & )
        env -i setsid /bin/sleep {marker} &
        echo up
        """) + then.replace("MARK", marker) + "\n")
    path.chmod(0o755)
    return [str(path)]


OWNER = textwrap.dedent("""
    import sys, threading, time
    sys.path.insert(0, sys.argv[1])
    from wizard.adapters.processes.launcher import RunProcess

    def follow():  # the GUI starts and follows a run on a worker thread
        run = RunProcess(sys.argv[3:], env_add={}, cwd=sys.argv[2], run_dir=sys.argv[2] + "/run")
        run.start()
        while True:
            for _, line in run.poll(0.2):
                if line == "up":
                    print("up", flush=True)
    threading.Thread(target=follow, daemon=True).start()
    time.sleep(3600)
""")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL, signal.SIGHUP])
def test_the_run_ends_with_the_process_that_owns_it(tmp_path, sig):
    marker = f"{600 + int(sig)}{os.getpid()}"
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(ROOT), str(tmp_path), *tree(tmp_path, marker)],
                             stdout=subprocess.PIPE, text=True, preexec_fn=default_hangup)
    assert owner.stdout.readline().strip() == "up"
    owner.send_signal(sig)
    owner.wait(timeout=60)
    assert left(marker) == [], "processes of the run outlived its owner"
    ray_tmp = Path((tmp_path / "ray_tmp").read_text().strip())
    deadline = time.monotonic() + 30
    while ray_tmp.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not ray_tmp.exists()


def test_what_the_run_leaves_after_it_exits_is_ended_whatever_its_environment(tmp_path):
    marker = f"599{os.getpid()}"
    with RunProcess(tree(tmp_path, marker, then="exit 4"), env_add={}, cwd=tmp_path, run_dir=tmp_path / "r") as run:
        run.start()
        while not run.finished:
            run.poll(0.2)
    assert run.returncode == 4  # the run's own exit status, through the reaper
    assert left(marker) == []


def test_the_private_ray_folder_is_this_users_alone_while_the_run_lives(tmp_path):
    marker = f"598{os.getpid()}"
    with RunProcess(tree(tmp_path, marker), env_add={}, cwd=tmp_path, run_dir=tmp_path / "r") as run:
        run.start()
        while ("stdout", "up") not in run.poll(0.2):
            pass
        ray_tmp = Path((tmp_path / "ray_tmp").read_text().strip())
        assert ray_tmp.is_dir() and ray_tmp.stat().st_mode & 0o077 == 0 and ray_tmp.stat().st_uid == os.getuid()
        assert len(str(ray_tmp / "ray" / "session_2026-12-05_01-17-28_123456_12345" / "sockets" / "plasma_store")) < 108
        (ray_tmp / "ray").mkdir(mode=0o777)  # as Ray makes its own folders there (0777), a planted log file in it
        (ray_tmp / "ray" / "worker.out").write_text("WANDB_API_KEY=planted")
        if os.getuid() == 0 and shutil.which("setpriv"):  # a second local user tries to read it
            other = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "cat",
                                    str(ray_tmp / "ray" / "worker.out")], capture_output=True, text=True)
            assert other.returncode != 0 and "planted" not in other.stdout
        run.stop(grace=5)
    assert left(marker) == [] and not ray_tmp.exists()


def test_the_program_itself_runs_the_reaper_as_the_bundle_does(tmp_path):
    """The desktop bundle's program is no Python: ``verl-wizard __reaper__`` is the reaper there. Its child's exit
    status comes back through it, and what the child left running is ended."""
    marker = f"597{os.getpid()}"
    read_end, write_end = os.pipe()
    try:
        proc = subprocess.run([sys.executable, "-m", "wizard", "__reaper__", "--fd", str(read_end), "--linger", "0",
                               "--", "sh", "-c", f"setsid sleep {marker} & exit 3"], pass_fds=(read_end,),
                              env=dict(os.environ, PYTHONPATH=str(ROOT)), timeout=60)
    finally:
        os.close(read_end)
        os.close(write_end)
    assert proc.returncode == 3
    assert left(marker) == []
