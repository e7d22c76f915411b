"""The launcher against real child processes: streaming, bounded reads, UTF-8 across reads, Stop of the
whole process tree, secrets kept out of the log. No timing is asserted."""

import os
import sys
import time
import textwrap
import uuid

import pytest

from wizard.adapters.processes.launcher import RunProcess, alive, list_processes
from wizard.adapters.processes.run_dir import prepare_run_dir, write_command_file

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc"), reason="process tracking reads /proc (Linux)")


def script(tmp_path, body: str) -> list[str]:
    path = tmp_path / f"child_{uuid.uuid4().hex[:8]}.py"
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


def run_to_end(run: RunProcess, limit: int = 100000) -> list[tuple[str, str]]:
    lines = []
    for _ in range(limit):
        if run.finished:
            break
        lines += run.poll(0.2)
    return lines


def marked(token: str) -> list[int]:
    """Live processes whose command line holds ``token``."""
    out = []
    for pid in list_processes():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                if token.encode() in fh.read() and alive(pid):
                    out.append(pid)
        except OSError:
            pass
    return out


def test_lines_from_both_streams_go_to_the_caller_and_the_log(tmp_path):
    argv = script(tmp_path, """
        import sys
        print("out one"); sys.stdout.flush()
        print("err one", file=sys.stderr); sys.stderr.flush()
        sys.stdout.write("Training Progress: 20%|##| 1/5\\rTraining Progress: 40%|##| 2/5\\r\\n")
        sys.stdout.write("no newline at the end")
        sys.exit(3)
    """)
    with RunProcess(argv, env_add={"PYTHONUNBUFFERED": "1"}, cwd=tmp_path, run_dir=tmp_path / "run") as run:
        run.start()
        lines = run_to_end(run)
    assert run.returncode == 3
    assert ("stdout", "out one") in lines and ("stderr", "err one") in lines
    assert ("stdout", "Training Progress: 40%|##| 2/5") in lines and ("stdout", "no newline at the end") in lines
    log = (tmp_path / "run" / "run.log").read_text()
    assert "out one" in log and "err one" in log and "no newline at the end" in log


def test_a_character_split_across_reads_stays_whole(tmp_path):
    argv = script(tmp_path, """
        import os
        for b in ("caf\\u00e9 \\u4e2d\\u6587 \\U0001F600\\n".encode("utf-8")):
            os.write(1, bytes([b]))
    """)
    with RunProcess(argv, env_add={}, cwd=tmp_path, run_dir=tmp_path / "run", chunk=1) as run:
        run.start()
        lines = run_to_end(run)
    assert lines == [("stdout", "café 中文 😀")]


def test_a_flood_without_newline_is_cut_into_bounded_lines(tmp_path):
    argv = script(tmp_path, """
        import sys
        sys.stdout.write("x" * 200000 + "\\nend\\n")
    """)
    with RunProcess(argv, env_add={}, cwd=tmp_path, run_dir=tmp_path / "run", max_line=65536, max_read=4096) as run:
        run.start()
        lines = run_to_end(run)
    texts = [t for _, t in lines]
    assert texts[-1] == "end" and "".join(texts[:-1]) == "x" * 200000
    assert max(len(t) for t in texts) <= 65536


def test_stop_ends_the_child_its_group_and_a_grandchild_that_left_the_group(tmp_path):
    token = f"wizard-test-{uuid.uuid4().hex}"
    argv = script(tmp_path, f"""
        import os, subprocess, sys, time
        same = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)", "{token}"])
        away = subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(3600)", "{token}"])
        print("ready", same.pid, away.pid, flush=True)
        time.sleep(3600)
    """)
    with RunProcess(argv, env_add={}, cwd=tmp_path, run_dir=tmp_path / "run") as run:
        run.start()
        lines = []
        while not any(t.startswith("ready") for _, t in lines):
            lines += run.poll(0.5)
            assert run.returncode is None, lines
        _, same, away = next(t for _, t in lines if t.startswith("ready")).split()
        while len(run.run_processes()) < 3:  # the child and both grandchildren are tracked
            run.poll(0.2)
        assert {int(same), int(away)} <= set(run.run_processes())
        report = run.stop(grace=5.0)
        run.drain()
    assert report.left == [] and run.returncode == -15
    assert not alive(int(same)) and not alive(int(away)) and not alive(run.pid)
    assert marked(token) == []


def test_a_process_left_holding_the_pipes_after_the_driver_exits_is_ended(tmp_path):
    token = f"wizard-test-{uuid.uuid4().hex}"
    argv = script(tmp_path, f"""
        import subprocess, sys
        p = subprocess.Popen([sys.executable, "-c", "import os, time; os.setsid(); time.sleep(3600)", "{token}"])
        print("leaving", p.pid, flush=True)
    """)
    with RunProcess(argv, env_add={}, cwd=tmp_path, run_dir=tmp_path / "run") as run:
        run.start()
        lines = run_to_end(run)
    assert run.returncode == 0 and lines[0][1].startswith("leaving")
    assert marked(token) == []


def test_stop_twice_and_after_the_end_is_harmless(tmp_path):
    argv = script(tmp_path, "print('bye')\n")
    run = RunProcess(argv, env_add={}, cwd=tmp_path, run_dir=tmp_path / "run")
    run.start()
    run_to_end(run)
    assert run.stop().left == [] and run.stop().left == [] and run.returncode == 0
    run.close()


def test_secret_values_never_reach_the_log(tmp_path):
    argv = script(tmp_path, """
        import os
        print("Error executing job with overrides: ['+trainer.wandb_api_key=" + os.environ["WANDB_API_KEY"] + "']")
    """)
    env = {"WANDB_API_KEY": "s3cr3t-value-123"}
    with RunProcess(argv, env_add=env, cwd=tmp_path, run_dir=tmp_path / "run", secrets=env) as run:
        run.start()
        lines = run_to_end(run)
    assert "s3cr3t" not in lines[0][1] and "${WANDB_API_KEY}" in lines[0][1]
    assert "s3cr3t" not in (tmp_path / "run" / "run.log").read_text()


def test_env_is_added_and_removed(tmp_path, monkeypatch):
    monkeypatch.setenv("WIZARD_TEST_DROP", "x")
    argv = script(tmp_path, "import os; print(os.environ.get('RAY_DEDUP_LOGS'), os.environ.get('WIZARD_TEST_DROP'))\n")
    with RunProcess(argv, env_add={"RAY_DEDUP_LOGS": "0"}, env_remove=("WIZARD_TEST_DROP",), cwd=tmp_path,
                    run_dir=tmp_path / "run") as run:
        run.start()
        assert run_to_end(run) == [("stdout", "0 None")]


def test_run_dir_keeps_an_earlier_log_and_holds_the_command(tmp_path):
    d = prepare_run_dir(tmp_path / "r")
    (d / "run.log").write_text("old")
    prepare_run_dir(d)
    assert not (d / "run.log").exists() and [p.name for p in d.iterdir()][0].startswith("run.log.")
    path = write_command_file(d, "X=1 python -m verl.trainer.main_ppo")
    assert path.read_text().endswith("X=1 python -m verl.trainer.main_ppo\n") and os.access(path, os.X_OK)


def test_a_missing_program_is_one_line(tmp_path):
    from wizard.adapters.processes.run_dir import LaunchError

    run = RunProcess([str(tmp_path / "nope")], env_add={}, cwd=tmp_path, run_dir=tmp_path / "run")
    with pytest.raises(LaunchError, match="cannot run"):
        run.start()


def test_stop_ends_a_daemon_whose_parent_exited_before_any_scan_saw_it(tmp_path):
    # what Ray does while it starts: a short-lived helper forks a daemon into its own session and exits, so the
    # daemon is neither in the run's session nor a descendant of it any more, nor holds the run's pipes
    pidfile = tmp_path / "daemon.pid"
    run = RunProcess(script(tmp_path, f"""
        import os, sys, time
        if os.fork() == 0:
            if os.fork() == 0:
                os.setsid()
                null = os.open(os.devnull, os.O_RDWR)
                for fd in (0, 1, 2):  # a daemon lets go of the run's pipes (Ray's write to their own logs)
                    os.dup2(null, fd)
                open({str(pidfile)!r}, "w").write(str(os.getpid()))
                time.sleep(120)
            os._exit(0)
        time.sleep(120)
    """), env_add={}, cwd=tmp_path, run_dir=tmp_path / "run")
    run.start()
    try:
        for _ in range(400):
            if pidfile.exists() and pidfile.read_text():
                break
            time.sleep(0.05)
        daemon = int(pidfile.read_text())
        assert alive(daemon)
        report = run.stop(grace=5)
        assert not alive(daemon), "Stop left the run's daemon running"
        assert report.left == []
    finally:
        run.close()
