"""Stop, twenty times: a real local verl 0.9.1 launch through ``wizard.adapters.processes.launcher``, stopped at a different
point each cycle (at once, while Python imports verl, while verl starts its own Ray instance, after verl's real
failure), and after each stop no process of the run is left, no Ray instance it started is left, and nothing was
written outside its run directory but the caches and logs every verl run leaves (listed in the driver).

It runs inside a private network, PID and mount namespace with a fresh tmpfs on /tmp: every process there is the
run's or the driver's, and every file written under /tmp or $HOME (both on that tmpfs) is seen. Most cycles stop
early so the test stays within a few minutes of CI; how long each took is printed (pytest -s).
"""

import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from tests.helpers.netns import UNSHARE, namespaces_work

ROOT = Path(__file__).resolve().parents[2]

# (stop point, seconds after it): 20 cycles, each stopping somewhere else. "start" is right after Popen,
# "import" counts from the start (verl's import takes far longer than these), "ray" from verl's
# `ray init kwargs:` line (Ray's processes are being born), "gcs" from the moment the run's gcs_server exists,
# "failed" from verl's `Total available GPUs 0 ...` line (the driver is tearing its Ray down). A run that ends by
# itself is tests/cli/test_launch_cli.py's real run, which also asserts that nothing is left.
SCHEDULE = [
    ("start", 0.0), ("import", 0.2), ("import", 0.5), ("import", 1.0), ("ray", 0.0), ("import", 1.5),
    ("import", 2.0), ("gcs", 0.0), ("import", 3.0), ("ray", 0.5), ("import", 4.0), ("gcs", 1.0), ("ray", 1.0),
    ("import", 6.0), ("gcs", 3.0), ("ray", 2.0), ("start", 0.0), ("ray", 4.0), ("import", 0.1), ("failed", 0.0),
]

DRIVER = textwrap.dedent("""
    import json, os, sys, time
    root = sys.argv[1]
    sys.path.insert(0, root)
    schedule = json.loads(sys.argv[2])
    from tests.helpers.tiny_model import write_tiny_model
    from tests.helpers.tiny_data import write_gsm8k_like
    from pathlib import Path
    from wizard.usecases.plans import preset_plan
    from wizard.adapters.processes.launcher import RunProcess, list_processes
    from wizard.adapters.processes.run_dir import prepare_run_dir
    from wizard.core.run.smoke import SmokeOptions, smoke_command, smoke_plan

    os.environ["HOME"] = "/tmp/home"
    os.environ["XDG_CACHE_HOME"] = "/tmp/home/.cache"  # caches (the wizard's, Hugging Face's) where a user's go
    os.makedirs("/tmp/home")
    assets, work = Path("/tmp/assets"), Path("/tmp/work")
    model = write_tiny_model(assets / "model")
    sets = [f"actor_rollout_ref.model.path={model}",
            f"data.train_files={write_gsm8k_like(assets / 'train.parquet', 32)}",
            f"data.val_files={write_gsm8k_like(assets / 'test.parquet', 8)}"]
    opts = SmokeOptions(steps=2)
    plan = smoke_plan(preset_plan("grpo-1gpu-smoke", sets=sets), opts)
    work.mkdir()
    me = os.getpid()
    # what a run may leave outside its run directory: Ray's session logs, torch's compile cache (made when torch
    # is imported), the Hugging Face datasets cache of the parquet files, and the multiprocessing temp folder
    # (/tmp/pymp-*/listener-*) that verl's failing run leaves even when it ends by itself, without any Stop
    CACHES = ("/tmp/ray", "/tmp/torchinductor_", "/tmp/home/.cache", "/tmp/pymp-")

    host = [p for p in os.environ.get("VW_HOST_PATHS", "").split(os.pathsep) if p]

    def files():
        out = set()
        for dirpath, dirnames, names in os.walk("/tmp"):  # $HOME is /tmp/home
            # the checkout and the Python, when they live under /tmp, are bound back in: not the run's files
            dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in host]
            out.update(os.path.join(dirpath, n) for n in names + dirnames)
        return out

    def others():
        return sorted(p.pid for p in list_processes().values() if p.pid != me and p.state != "Z")

    def reap():
        while True:
            try:
                if os.waitpid(-1, os.WNOHANG)[0] == 0:
                    return
            except ChildProcessError:
                return

    for i, (point, delay) in enumerate(schedule):
        run_dir = work / f"run-{i:02d}"
        before = files()
        prepare_run_dir(run_dir)
        cmd = smoke_command(plan, opts, run_dir=str(run_dir), file_logger_path=str(run_dir / "metrics.jsonl"),
                            model_is_local=True, environ=os.environ)
        run = RunProcess([sys.executable, *cmd.args], env_add=cmd.env, cwd=work, run_dir=run_dir)
        t0 = time.monotonic()
        run.start()
        lines, seen, mark = [], None, None
        while True:
            if point in ("start", "import"):
                mark = t0
            elif mark is None:
                lines += [t for _, t in run.poll(0.1)]
                text = "\\n".join(lines[-50:])
                if point == "ray" and "ray init kwargs:" in text:
                    mark = time.monotonic()
                elif point == "gcs" and any("gcs_server" in open(f"/proc/{p}/cmdline", "rb").read().decode("ascii", "replace")
                                            for p in run.run_processes() if os.path.exists(f"/proc/{p}/cmdline")):
                    mark = time.monotonic()
                elif point == "failed" and "Total available GPUs 0 is less than total desired GPUs 1" in text:
                    mark = time.monotonic()
                elif run.finished:
                    break  # the stop point never came (verl ends by itself without a GPU): reported below
                continue
            while time.monotonic() - mark < delay:
                lines += [t for _, t in run.poll(0.05)]
            break
        reached = mark is not None
        t_stop = time.monotonic() - t0
        report = run.stop(grace=10.0)
        run.drain()
        run.close()
        t_done = time.monotonic() - t0
        reap()
        left_run = run.run_processes()
        left_ns = others()
        new = sorted(f for f in files() - before if not f.startswith(str(run_dir) + "/") and f != str(run_dir))
        stray = [f for f in new if not f.startswith(CACHES)]
        print(json.dumps({"cycle": i, "point": point, "delay": delay, "reached": reached,
                          "stop_at": round(t_stop, 1), "done_at": round(t_done, 1), "returncode": run.returncode,
                          "killed": len(report.killed), "left": report.left, "left_run": left_run,
                          "left_ns": left_ns, "stray": stray, "last": lines[-1:] if lines else []}), flush=True)
""")


def _under_tmp(paths) -> list[str]:
    """The outermost of ``paths`` that live under /tmp (they must stay visible over the namespace's fresh /tmp)."""
    found = sorted({os.path.realpath(str(p)) for p in paths if os.path.realpath(str(p)).startswith("/tmp/")})
    return [p for p in found if not any(p != q and p.startswith(q + "/") for q in found)]


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.verl
def test_twenty_start_stop_cycles_leave_nothing_behind(tmp_path):
    why = namespaces_work()
    if why:
        pytest.skip(f"{why}; a real run starts Ray and never runs outside a loopback-only namespace")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    host = _under_tmp([ROOT, sys.prefix, sys.base_prefix, os.path.dirname(os.path.realpath(sys.executable))])
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled", VW_HOST_PATHS=os.pathsep.join(host))
    env.pop("RAY_ADDRESS", None)
    # the driver is read before the fresh tmpfs hides tmp_path, then runs as PID 1 of the namespace; a checkout or
    # a Python that lives under /tmp (CI clones there) is bound back in from the host's /tmp
    side = tempfile.mkdtemp(prefix="vw-hosttmp.", dir="/var/tmp")
    shell = ('ip link set lo up && code="$(cat "$0")" && side="$3" && mount --bind /tmp "$side" && '
             'mount -t tmpfs tmpfs /tmp && for p in "${@:4}"; do mkdir -p "$p" && mount --bind "$side${p#/tmp}" "$p"; '
             f'done && exec "{sys.executable}" -c "$code" "$1" "$2"')
    try:
        proc = subprocess.run([*UNSHARE, "bash", "-c", shell, str(driver), str(ROOT), json.dumps(SCHEDULE), side, *host],
                              capture_output=True, text=True, timeout=1500, env=env)
    finally:
        os.rmdir(side)
    cycles = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    for c in cycles:
        print(f"cycle {c['cycle']:2d} {c['point']:>6} +{c['delay']:.1f}s: stopped at {c['stop_at']:5.1f}s, "
              f"all gone at {c['done_at']:5.1f}s, exit {c['returncode']}, SIGKILLed {c['killed']}")
    assert proc.returncode == 0 and len(cycles) == len(SCHEDULE), proc.stderr[-3000:]
    problems = []
    for c in cycles:
        where = f"cycle {c['cycle']} ({c['point']} +{c['delay']}s)"
        if not c["reached"]:
            problems.append(f"{where}: the run never reached its stop point; last line {c['last']}")
        if c["left"] or c["left_run"]:
            problems.append(f"{where}: processes of the run survived Stop: {c['left'] + c['left_run']}")
        if c["left_ns"]:
            problems.append(f"{where}: processes left in the namespace: {c['left_ns']}")
        if c["stray"]:
            problems.append(f"{where}: files written outside the run directory: {c['stray'][:10]}")
    assert problems == []
    # the cycles really stopped the run at different stages
    assert {c["point"] for c in cycles} == {"start", "import", "ray", "gcs", "failed"}
    assert all(c["returncode"] != 0 for c in cycles)  # verl never succeeds without a GPU; Stop is never "OK"
