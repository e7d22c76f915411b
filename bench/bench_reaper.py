"""What the reaper costs and how fast it cleans: a guarded call of a trivial program (the reaper's Python start is
the price), and the time from SIGKILL of the process that owns a run (a tree with setsid and cleared-environment
children) until none of the run's processes is left.

Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_reaper.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from timing import fmt, timed

ROOT = Path(__file__).resolve().parents[1]
OWNER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    from wizard.adapters.processes.launcher import RunProcess
    run = RunProcess(sys.argv[3:], env_add={}, cwd=sys.argv[2], run_dir=sys.argv[2] + "/run")
    run.start()
    while ("stdout", "up") not in run.poll(0.2):
        pass
    print("up", flush=True)
    time.sleep(3600)
""")


def clean_after_kill(tmp: Path, n: int) -> float:
    marker = f"4242{os.getpid()}{n}"
    script = tmp / f"tree{n}.sh"
    script.write_text(f"#!/bin/sh\nsleep {marker} &\nsetsid sleep {marker} &\n( setsid sleep {marker} & )\n"
                      f"env -i setsid /bin/sleep {marker} &\necho up\nexec sleep {marker}\n")
    script.chmod(0o755)
    owner = subprocess.Popen([sys.executable, "-c", OWNER, str(ROOT), str(tmp), str(script)], stdout=subprocess.PIPE,
                             text=True)
    owner.stdout.readline()
    t0 = time.perf_counter()
    owner.send_signal(signal.SIGKILL)
    owner.wait()
    while subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True).stdout:
        time.sleep(0.01)
    return time.perf_counter() - t0


def main() -> None:
    sys.path.insert(0, str(ROOT))
    from wizard.adapters.processes.guarded import run_guarded

    print("guarded call of /bin/true (reaper included)  ", fmt(timed(lambda: run_guarded(["/bin/true"], timeout=30),
                                                                   20)))
    with tempfile.TemporaryDirectory() as tmp:
        samples = [clean_after_kill(Path(tmp), n) for n in range(5)]
    print("SIGKILL of a run's owner -> no process left  ", fmt(samples))


if __name__ == "__main__":
    main()
