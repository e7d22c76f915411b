"""``verl-wizard data reward`` stopped at several moments (Ctrl-C, SIGTERM, SIGHUP, SIGKILL) while the user's
reward function runs: no process of it is left, not the function's children, not one that called ``setsid()``,
not a double-forked daemon, not one that cleared its environment. Real processes, real signals."""

import os
import signal
import subprocess
import sys
import time
import textwrap

import pytest

from tests.adapters.test_dataset import verl_rows, write_parquet
from tests.helpers.cli import process_env
from tests.helpers.procs import default_hangup

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="process tracking reads /proc (Linux)")


def reward_fn(tmp_path, marker: str):
    fn = tmp_path / "hostile_reward.py"
    fn.write_text(textwrap.dedent(f"""
        import os, subprocess, time
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            subprocess.Popen(["sleep", "{marker}"])
            subprocess.Popen(["sleep", "{marker}"], start_new_session=True)
            subprocess.Popen(["sh", "-c", "( setsid sleep {marker} & )"])
            subprocess.Popen(["env", "-i", "setsid", "/bin/sleep", "{marker}"])
            if os.fork() == 0:
                os.setsid()
                time.sleep(3600)
                os._exit(0)
            print("scoring", flush=True)
            open("{tmp_path}/started", "w").close()
            time.sleep(3600)
            return 0.0
    """))
    return fn


def left(marker: str, wait: float = 60.0) -> list[str]:
    deadline = time.monotonic() + wait
    while True:
        pids = subprocess.run(["pgrep", "-f", f"sleep {marker}|hostile_reward|reward_probe"], capture_output=True,
                              text=True).stdout.split()
        pids = [p for p in pids if _mine(int(p), marker)]
        if not pids or time.monotonic() > deadline:
            return pids


def _mine(pid: int, marker: str) -> bool:
    """A process of this test's bench (another test's bench in parallel is not this one's to judge)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmd = fh.read()
        with open(f"/proc/{pid}/environ", "rb") as fh:
            env = fh.read()
    except OSError:
        return False
    return marker.encode() in cmd or f"VW_TEST_MARK={marker}".encode() in env


@pytest.mark.parametrize("moment", [0.0, 0.5])
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGKILL])
def test_a_stopped_reward_bench_leaves_no_process(tmp_path, sig, moment):
    marker = f"{500 + int(sig)}{int(moment * 10)}{os.getpid()}"
    data = write_parquet(tmp_path / "ok.parquet", verl_rows(2))
    fn = reward_fn(tmp_path, marker)
    proc = subprocess.Popen([sys.executable, "-m", "wizard", "data", "reward", str(data), "--function", str(fn),
                             "--python", sys.executable, "--timeout", "600"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, preexec_fn=default_hangup,
                            env=process_env(HF_HUB_OFFLINE="1", VW_TEST_MARK=marker))
    deadline = time.monotonic() + 120
    while not (tmp_path / "started").exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "started").exists(), proc.communicate()
    time.sleep(moment)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert left(marker) == [], "processes of the reward bench outlived it"
    assert "Traceback" not in err
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "interrupted" in err
