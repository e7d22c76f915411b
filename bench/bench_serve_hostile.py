"""The resident checker (``verl-wizard serve``) under hostile clients: the worst wait for a check while one
holds a connection (goal: under 2 s), and how long a client waits on a suspended server before checking alone.

Real processes and sockets: a server started with ``serve --background`` in a private folder of its own; hostile
clients connect and say nothing, trickle a byte now and then, or hang a check on a FIFO; meanwhile checks are sent
as ``verl-wizard check`` sends them and timed from connect to answer. Prints figures; asserts nothing.
Run: .venv/bin/python bench/bench_serve_hostile.py
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CHECKS = 20
CHECK = {"argv": ["check", "--", "trainer.nnodes=1"], "cwd": "/"}


def wizard(args: list[str], env: dict, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wizard", *args], env=env, capture_output=True, text=True,
                          timeout=300, **kw)


def timed_check(path: str, env: dict) -> float:
    """Seconds from connect to the whole answer of one check through the server."""
    t0 = time.perf_counter()
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(300)
        s.connect(path)
        s.sendall(json.dumps({**CHECK, "env": env}).encode() + b"\n")
        data = b""
        while b"\n" not in data:
            chunk = s.recv(1 << 16)
            if not chunk:
                raise RuntimeError("the server closed the connection without an answer")
            data += chunk
    assert isinstance(json.loads(data).get("rc"), int)
    return time.perf_counter() - t0


def worst(path: str, env: dict) -> tuple[float, float]:
    waits = sorted(timed_check(path, env) for _ in range(CHECKS))
    return waits[len(waits) // 2], waits[-1]


def main() -> None:
    run = tempfile.mkdtemp(prefix="vw-bench-")
    os.chmod(run, 0o700)
    env = {**os.environ, "PYTHONPATH": str(ROOT), "XDG_RUNTIME_DIR": run}
    started = wizard(["serve", "--background", "--idle-minutes", "5"], env, cwd=ROOT)
    if started.returncode != 0:
        sys.exit(f"serve did not start: {started.stderr.strip()}")
    pid = int(started.stdout.split("pid ")[1].split()[0])
    folder = Path(run) / "verl-wizard"
    path = str(next(folder.glob("*.sock")))
    print(f"{CHECKS} checks per line, server pid {pid}; median / worst wait from connect to answer")
    try:
        print(f"  no hostile client                          {'%6.3f s / %6.3f s' % worst(path, env)}")

        silent = [socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) for _ in range(10)]
        for s in silent:
            s.connect(path)
        print(f"  10 clients connected, sending nothing      {'%6.3f s / %6.3f s' % worst(path, env)}")
        for s in silent:
            s.close()

        stop = threading.Event()

        def trickle() -> None:
            while not stop.is_set():
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.connect(path)
                    try:
                        while not stop.wait(0.2):
                            s.send(b" ")
                    except OSError:
                        pass  # dropped at its deadline: connect again

        tricklers = [threading.Thread(target=trickle) for _ in range(4)]
        for t in tricklers:
            t.start()
        print(f"  4 clients trickling a byte every 0.2 s     {'%6.3f s / %6.3f s' % worst(path, env)}")
        stop.set()
        for t in tricklers:
            t.join()

        fifo = Path(run) / "run.sh"
        os.mkfifo(fifo)
        t0 = time.perf_counter()
        r = wizard(["check", "run.sh"], env, cwd=run)
        said = (r.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  check of a FIFO through the server         {time.perf_counter() - t0:6.3f} s, exit {r.returncode}: "
              f"{said[:70]}")
        print(f"  a check after it                           {'%6.3f s / %6.3f s' % worst(path, env)}")

        (Path(run) / "ok.sh").write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
        os.kill(pid, signal.SIGSTOP)
        t0 = time.perf_counter()
        served = wizard(["check", "ok.sh"], env, cwd=run)
        suspended = time.perf_counter() - t0
        alone = wizard(["check", "ok.sh"], {**env, "VERL_WIZARD_SERVER": "0"}, cwd=run)
        t0 = time.perf_counter()
        alone = wizard(["check", "ok.sh"], {**env, "VERL_WIZARD_SERVER": "0"}, cwd=run)
        in_process = time.perf_counter() - t0
        print(f"  `check` with the server suspended          {suspended:6.3f} s (in-process alone {in_process:.3f} s: "
              f"waited {suspended - in_process:.2f} s), exit {served.returncode} == {alone.returncode}")
        t0 = time.perf_counter()
        stopped = wizard(["serve", "--stop"], env)
        print(f"  serve --stop of the suspended server       {time.perf_counter() - t0:6.3f} s: "
              f"{stopped.stdout.strip()[:90]}")
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        shutil.rmtree(run, ignore_errors=True)


if __name__ == "__main__":
    main()
