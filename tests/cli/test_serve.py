"""``verl-wizard serve``: a resident checker answers ``check`` exactly as the process would (output, exit code,
working folder, environment, secrets), a dead or absent server costs nothing but the in-process check, and
``--stop`` leaves nothing behind. Real processes: the server and the clients are ``python -m wizard``."""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.helpers.cli import process_env

BAD = "python3 -m verl.trainer.main_ppo data.train_batch_size=16 actor_rollout_ref.actor.ppo_mini_batch_size=32\n"


def wizard(args, env, cwd=ROOT, python=sys.executable, **kw):
    return subprocess.run([python, "-m", "wizard", *args], env=env, cwd=cwd, capture_output=True, text=True,
                          timeout=120, **kw)


@pytest.fixture
def env():
    # a short folder of its own, not tmp_path: a socket's path has at most 107 bytes, and pytest's folders under
    # pytest-xdist (/tmp/pytest-of-USER/pytest-N/popen-gwN/test_NAME0/...) are longer than that
    run = tempfile.mkdtemp(prefix="vw-run-")
    os.chmod(run, 0o700)
    yield process_env(XDG_RUNTIME_DIR=run)
    shutil.rmtree(run, ignore_errors=True)


def start_server(env, python=sys.executable) -> int:
    started = wizard(["serve", "--background", "--idle-minutes", "5"], env, python=python)
    assert started.returncode == 0, started.stderr
    return int(started.stdout.split("pid ")[1].split()[0])


def stop_server(env, pid, python=sys.executable) -> None:
    wizard(["serve", "--stop"], env, python=python)
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def gone(pid: int, timeout: float = 10.0) -> bool:
    """Whether process ``pid`` ended (a zombie counts as ended) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (FileNotFoundError, ProcessLookupError):
            return True
        time.sleep(0.02)
    return False


@pytest.fixture
def server(env):
    pid = start_server(env)
    yield pid
    stop_server(env, pid)


def test_a_check_through_the_server_says_what_the_process_says(env, server, tmp_path):
    (tmp_path / "run.sh").write_text(BAD)
    served = wizard(["check", "run.sh"], env, cwd=tmp_path)  # a path relative to the client's folder
    alone = wizard(["check", "run.sh"], {**env, "VERL_WIZARD_SERVER": "0"}, cwd=tmp_path)
    assert served.returncode == alone.returncode == 1
    assert served.stdout == alone.stdout and "train_batch_size (16) must be >= actor.ppo_mini_batch_size (32)" in served.stdout
    assert served.stderr == alone.stderr
    status = wizard(["serve", "--status"], env)
    assert status.returncode == 0 and "running, 1 check answered" in status.stdout  # the server's, not a process's


def test_the_server_uses_the_clients_environment_for_secrets(env, server, tmp_path):
    token = "hf_" + "Q" * 34
    (tmp_path / "run.sh").write_text(f"export HF_TOKEN={token}\n" + BAD.strip() + " trainer.experiment_name=$HF_TOKEN\n")
    served = wizard(["check", "run.sh", "--format", "json"], {**env, "HF_TOKEN": token}, cwd=tmp_path)
    assert token not in served.stdout + served.stderr
    alone = wizard(["check", "run.sh", "--format", "json"], {**env, "HF_TOKEN": token, "VERL_WIZARD_SERVER": "0"},
                   cwd=tmp_path)
    assert served.stdout == alone.stdout


def test_a_dead_server_is_never_waited_for(env, server, tmp_path):
    os.kill(server, signal.SIGKILL)  # the socket file stays, nobody listens
    assert gone(server)
    (tmp_path / "run.sh").write_text(BAD)
    r = wizard(["check", "run.sh"], env, cwd=tmp_path)
    assert r.returncode == 1 and "must be >= actor.ppo_mini_batch_size" in r.stdout
    assert wizard(["serve", "--status"], env).returncode == 1


def test_stop_ends_the_server_and_removes_its_socket(env, server):
    assert wizard(["serve", "--stop"], env).returncode == 0
    assert gone(server), "the server still runs after --stop"
    folder = os.path.join(env["XDG_RUNTIME_DIR"], "verl-wizard")
    assert [f for f in os.listdir(folder) if f.endswith(".sock")] == []
    assert wizard(["serve", "--stop"], env).returncode == 1  # nothing to stop


def test_a_folder_others_can_enter_is_refused(env, tmp_path):
    folder = os.path.join(env["XDG_RUNTIME_DIR"], "verl-wizard")
    os.makedirs(folder, mode=0o777)
    os.chmod(folder, 0o777)
    r = wizard(["serve", "--idle-minutes", "1"], env)
    assert r.returncode == 2 and "not private" in r.stderr and "Traceback" not in r.stderr


def test_the_installed_command_and_python_m_reach_the_same_server(env, tmp_path):
    script = os.path.join(os.path.dirname(sys.executable), "verl-wizard")
    if not os.path.exists(script):
        pytest.skip("no verl-wizard console script beside this Python")
    # `python -m wizard` with the Python the command runs (its #! line): the same one where .venv is a symlink too
    with open(script) as f:
        python = f.readline()[2:].strip()
    if "python" not in os.path.basename(python) or not os.path.isfile(python):  # pip's /bin/sh trampoline
        python = sys.executable
    pid = start_server(env, python)
    try:
        (tmp_path / "run.sh").write_text(BAD)
        r = subprocess.run([script, "check", "run.sh"], env=env, cwd=tmp_path, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 1
        assert "running, 1 check answered" in wizard(["serve", "--status"], env, python=python).stdout
    finally:
        stop_server(env, pid, python)


@pytest.mark.parametrize("argv,forwarded", [
    (["check", "run.sh"], True),
    (["check", "--format", "json", "--", "trainer.nnodes=1"], True),
    (["check", "--ve", "run.sh"], False),  # argparse reads --ve as --verl: verl's own run, in its own process
    (["check", "--batch=cases.jsonl"], False),
    (["check", "--data", "run.sh"], False),
    (["check", "/dev/fd/63"], False),  # bash's <(...): a pipe only the caller holds
    (["check", "/dev/stdin"], False),
    (["check", "-"], False),
    (["check", "--", "--verl"], True),  # after --, words are overrides
])
def test_only_checks_the_server_answers_exactly_are_forwarded(argv, forwarded):
    from wizard.adapters.processes.resident import forwardable

    assert forwardable(argv) is forwarded


def test_a_check_that_fails_inside_the_server_is_one_line_and_the_server_lives(monkeypatch, tmp_path):
    import wizard.cli.check as check_cli
    from wizard.cli.serve import answer

    def broken(args, tail):
        raise RuntimeError("boom")

    monkeypatch.setattr(check_cli, "run_check", broken)
    before = os.getcwd()
    reply = answer({"argv": ["check", "--", "trainer.nnodes=1"], "cwd": str(tmp_path),
                    "env": {**os.environ, "VERL_WIZARD_DEBUG": "1"}})
    assert reply["rc"] == 3 and "RuntimeError: boom" in reply["stderr"]
    assert os.getcwd() == before and "VERL_WIZARD_DEBUG" not in os.environ  # the server's own state is back


def test_an_upgraded_library_gets_a_new_server(monkeypatch, tmp_path):
    # a server started before `pip install -U pydantic` would answer with the old library: the client's key changes
    # with the environment's installed packages, so it no longer finds that server and checks in-process
    import wizard.adapters.processes.resident as resident

    site = tmp_path / "site-packages"
    (site / "pydantic-2.11.0.dist-info").mkdir(parents=True)
    monkeypatch.setattr(resident, "package_dirs", lambda: [str(site)])
    before = resident.code_key()
    assert resident.code_key() == before  # nothing installed: the same server
    (site / "pydantic-2.11.0.dist-info").rename(site / "pydantic-2.12.0.dist-info")
    os.utime(site, ns=(1, 1))  # a folder's time can be as coarse as a second: make the change visible at once
    assert resident.code_key() != before
    assert resident.socket_path() != resident.socket_path(before)


def test_the_folders_watched_are_where_the_checkers_libraries_are():
    import omegaconf
    import pydantic

    from wizard.adapters.processes.resident import package_dirs

    for lib in (pydantic, omegaconf):  # wherever this Python found them (venv, system or user site)
        assert str(Path(lib.__file__).resolve().parent.parent) in {str(Path(d).resolve()) for d in package_dirs()}
