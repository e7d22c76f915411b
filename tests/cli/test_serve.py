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


# -- issue 31: no one request, client or signal wedges the server ----------------------------------------------------

def sock_of(env) -> str:
    folder = os.path.join(env["XDG_RUNTIME_DIR"], "verl-wizard")
    (name,) = [f for f in os.listdir(folder) if f.endswith(".sock")]
    return os.path.join(folder, name)


def raw_request(path: str, payload: bytes) -> dict:
    """Send ``payload`` as it is on a connection of its own; the server's one-line answer."""
    import json
    import socket

    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(60)
        s.connect(path)
        s.sendall(payload)
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def test_a_client_that_sends_nothing_or_trickles_holds_no_check_up(env, server, tmp_path):
    import socket
    import threading

    path = sock_of(env)
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(path)  # connects, then says nothing
    trickler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    trickler.connect(path)
    stop = threading.Event()

    def trickle():  # one byte of a request now and then, never a whole line
        for byte in b'{"argv": ["check", "--", "trainer.nnodes=1"], ':
            if stop.wait(0.3):
                return
            try:
                trickler.send(bytes([byte]))
            except OSError:
                return

    t = threading.Thread(target=trickle)
    t.start()
    try:
        (tmp_path / "run.sh").write_text(BAD)
        r = wizard(["check", "run.sh"], env, cwd=tmp_path)
        assert r.returncode == 1 and "must be >= actor.ppo_mini_batch_size" in r.stdout
        assert "running, 1 check answered" in wizard(["serve", "--status"], env).stdout  # the server answered it
        silent.settimeout(60)
        assert silent.recv(1) == b""  # and it dropped the one that said nothing
        trickler.settimeout(60)
        assert trickler.recv(1) == b""  # and the one that trickled
    finally:
        stop.set()
        t.join()
        silent.close()
        trickler.close()


@pytest.mark.parametrize("payload", [
    b'{"argv": ["check", "--", "trainer.nnodes=1"], "cwd": "/", "env": {"A": "x\\u0000y"}}\n',
    b'{"argv": ["check", "--", "trainer.nnodes=1"], "cwd": "/", "env": {"A=B": "x"}}\n',
    b'{"argv": ["check", "--", "trainer.nnodes=1"], "cwd": "/tmp\\u0000x", "env": {}}\n',
    b'{"argv": ["check", "--", "trainer.nnodes=1\\u0000"], "cwd": "/", "env": {}}\n',
    b"[" * 200_000 + b"\n",
    b'["check"]\n',
    b"\xff\xfe not json\n",
], ids=["NUL in an env value", "= in an env name", "NUL in the folder", "NUL in argv", "deep nesting",
        "not an object", "not UTF-8"])
def test_a_bad_request_gets_an_error_and_the_server_lives(env, server, payload):
    path = sock_of(env)
    answer = raw_request(path, payload)
    assert "error" in answer and answer.get("rc") is None
    assert raw_request(path, b'{"ping": true}\n')["pong"] is True  # still there
    assert not gone(server, 0.2)


def test_a_suspended_server_costs_a_check_a_moment_and_stop_kills_it(env, server, tmp_path):
    os.kill(server, signal.SIGSTOP)  # Ctrl-Z: its socket still accepts connections, nobody reads them
    try:
        (tmp_path / "run.sh").write_text(BAD)
        r = wizard(["check", "run.sh"], env, cwd=tmp_path)
        assert r.returncode == 1 and "must be >= actor.ppo_mini_batch_size" in r.stdout  # checked in-process
        status = wizard(["serve", "--status"], env)
        assert status.returncode == 1 and "not answering" in status.stdout
        stopped = wizard(["serve", "--stop"], env)
        assert stopped.returncode == 0 and f"killed pid {server}" in stopped.stdout
        assert gone(server), "the suspended server still runs after --stop"
        assert not any(f.endswith(".sock") for f in os.listdir(os.path.join(env["XDG_RUNTIME_DIR"], "verl-wizard")))
    finally:
        try:
            os.kill(server, signal.SIGCONT)
        except ProcessLookupError:
            pass


def test_a_fifo_checked_through_the_server_is_refused_and_the_next_check_is_served(env, server, tmp_path):
    os.mkfifo(tmp_path / "run.sh")  # issue 31: this wedged the server for 301 s
    r = wizard(["check", "run.sh"], env, cwd=tmp_path)
    assert r.returncode == 2 and "named pipe" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    (tmp_path / "ok.sh").write_text(BAD)
    assert wizard(["check", "ok.sh"], env, cwd=tmp_path).returncode == 1
    assert "running, 2 checks answered" in wizard(["serve", "--status"], env).stdout


BLOCKING_SERVER = """
import signal, sys
from wizard.adapters.processes import resident_server

signal.signal(signal.SIGTERM, lambda *a: sys.exit(0))  # as serve's own handlers: leave through the cleanup

def handle(request):
    if request["argv"][1] == "block":
        open(request["argv"][2]).read()  # a FIFO nobody writes: blocks this check for good
    return {"rc": 0, "stdout": "answered\\n", "stderr": ""}

resident_server.serve(handle, idle_s=120, key="blocking", ready=lambda p: print(p, flush=True))
"""


def test_a_check_that_blocks_holds_up_only_itself(env, tmp_path):
    # whatever a check may still block on, the others are answered: each runs in a process of its own
    import json
    import socket

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    proc = subprocess.Popen([sys.executable, "-c", BLOCKING_SERVER], env=env, stdout=subprocess.PIPE, text=True)
    try:
        path = proc.stdout.readline().strip()
        blocked = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        blocked.settimeout(60)
        blocked.connect(path)
        blocked.sendall(json.dumps({"argv": ["check", "block", str(fifo)], "cwd": "/", "env": {}}).encode() + b"\n")
        assert blocked.recv(1) == b" "  # the blocked check says it is alive
        for _ in range(3):
            answer = raw_request(path, json.dumps({"argv": ["check", "x"], "cwd": "/", "env": {}}).encode() + b"\n")
            assert answer["stdout"] == "answered\n"
        assert blocked.recv(1) == b" "  # the blocked one still waits, alive
        with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
            (child,) = map(int, f.read().split())  # the blocked check's process
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert blocked.recv(1) in (b"", b" ") and gone(child)  # the server's end ends the check it ran
    blocked.close()
    assert not os.path.exists(path)  # and it removed its socket on the way out


def test_background_refuses_a_folder_another_user_made(env, tmp_path):
    if os.getuid() != 0:
        pytest.skip("making a folder another user owns needs root")
    folder = os.path.join(env["XDG_RUNTIME_DIR"], "verl-wizard")
    os.makedirs(folder, mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    os.symlink(victim, os.path.join(folder, "serve.log"))
    os.lchown(os.path.join(folder, "serve.log"), 65534, 65534)
    os.chown(folder, 65534, 65534)  # nobody's, mode 0700: as if that user created it first
    r = wizard(["serve", "--background", "--idle-minutes", "1"], env)
    assert r.returncode == 2 and "not private to this user" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert victim.read_text() == "mine\n"


def test_background_never_writes_through_a_planted_log_link(env, tmp_path):
    folder = os.path.join(env["XDG_RUNTIME_DIR"], "verl-wizard")
    os.makedirs(folder, mode=0o700)
    victim = tmp_path / "victim.txt"
    victim.write_text("mine\n")
    os.symlink(victim, os.path.join(folder, "serve.log"))
    r = wizard(["serve", "--background", "--idle-minutes", "1"], env)
    assert r.returncode == 2 and "serve.log: a symbolic link" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    assert victim.read_text() == "mine\n"
    assert not [f for f in os.listdir(folder) if f.endswith(".sock")]  # nothing was started


def test_a_suspended_server_whose_queue_is_full_is_still_ended_by_stop(env, server):
    """Ctrl-Z, then more clients than its queue holds: no connection is taken, and --stop kills it by the pid (and
    start time) it wrote beside its socket."""
    import socket

    os.kill(server, signal.SIGSTOP)
    held = []
    try:
        path = sock_of(env)
        while len(held) < 1000:  # until the queue takes no more
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(path)
            except (BlockingIOError, OSError):
                s.close()
                break
            held.append(s)
        assert 0 < len(held) < 1000
        stopped = wizard(["serve", "--stop"], env)
        assert stopped.returncode == 0 and f"killed pid {server}" in stopped.stdout, stopped.stdout + stopped.stderr
        assert gone(server), "the suspended server still runs after --stop"
        assert not any(f.startswith("check-") for f in os.listdir(os.path.dirname(path)))  # socket and pid file
    finally:
        for s in held:
            s.close()
        try:
            os.kill(server, signal.SIGCONT)
        except ProcessLookupError:
            pass
