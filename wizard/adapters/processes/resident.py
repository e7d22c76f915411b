"""A resident checker (``verl-wizard serve``): a process that keeps verl's schema, Hydra and pydantic loaded so
that ``verl-wizard check`` answers in tens of milliseconds instead of paying the imports every time.

Standard library only: ``wizard.app`` imports this module before anything heavy, to hand a ``check`` to a
running server. The server listens on a Unix socket in a folder only this user can enter
(``$XDG_RUNTIME_DIR/verl-wizard`` or ``/tmp/verl-wizard-<uid>``); the socket's name carries a key of this code
and this Python (``code_key``), so a server of other code is never asked: it idles out on its own. One request is
one JSON line each way: the command line, the working folder and the environment go in; stdout, stderr and the exit
code come back. Whatever goes wrong on the way (no server, a dead socket, a server that dies mid-answer) the
client answers "not handled" and the command runs in-process as it always did.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import signal
import socket
import struct
import sys
import time
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
# the checkout's resources/ (an installed wizard reads its own wizard/resources, inside PACKAGE)
CHECKOUT_RESOURCES = PACKAGE.parent / "resources" if (PACKAGE.parent / "pyproject.toml").exists() else None
# a check the server cannot answer as the process would: verl's own run (its output goes to the terminal),
# a batch (long), the data check (it imports transformers, which keeps the first caller's environment), help;
# abbreviations of these too (argparse takes --ve for --verl)
NOT_FORWARDED = ("--verl", "--batch", "--data", "--help", "--python")
MAX_MESSAGE = 64 * 1024 * 1024  # bytes of an answer (a check's output)
MAX_REQUEST = 16 * 1024 * 1024  # bytes of a request (argv, folder, environment): a command line is at most 2 MiB
CONNECT_S = 1.0  # to connect: a listening socket accepts at once, even in a suspended server
SILENCE_S = 1.5  # the longest a client waits for any byte from the server before it checks in-process
HEARTBEAT_S = 0.4  # how often a running check says it is alive (a space before its answer)
CHECK_DEADLINE_S = 120.0  # one check's whole life in the server: then it is ended and its client checks alone
ANSWER_TIMEOUT_S = CHECK_DEADLINE_S + 10.0
STOP_GRACE_S = 3.0  # `serve --stop`: how long the server has to end on its own before it is killed


def package_dirs() -> list[str]:
    """Where this Python finds its libraries: the environment's site-packages, the system's and the user's where
    this Python reads them, and any such folder on sys.path. pip adds and removes a ``<name>-<version>.dist-info``
    folder there for every install, upgrade or removal, which changes the folder's modification time."""
    import site
    import sysconfig

    paths = sysconfig.get_paths()
    found = {paths[k] for k in ("purelib", "platlib") if k in paths}
    found.update(p for p in sys.path if p.endswith(("site-packages", "dist-packages")))
    if site.ENABLE_USER_SITE and site.USER_SITE:
        found.add(site.USER_SITE)
    return sorted(p for p in found if os.path.isdir(p))


def code_key() -> str:
    """What the server's answers depend on: the wizard's files and resources (path, size, modification time), the
    Python that runs it and the libraries installed beside it (pydantic, OmegaConf: an upgrade gives a new key)."""
    # python and python3 of one environment are one interpreter: its real path, its prefix and version
    h = hashlib.sha1(f"{os.path.realpath(sys.executable)}|{sys.prefix}|{sys.version}".encode())
    for folder in package_dirs():
        try:
            h.update(f"{folder}:{os.stat(folder).st_mtime_ns};".encode())
        except OSError:
            continue
    for root in (PACKAGE, CHECKOUT_RESOURCES):
        if root is None:
            continue
        for folder, dirs, files in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if name.endswith((".pyc", ".pyo")):
                    continue
                try:
                    st = os.stat(os.path.join(folder, name))
                except OSError:
                    continue
                h.update(f"{folder}/{name}:{st.st_size}:{st.st_mtime_ns};".encode())
    return h.hexdigest()[:16]


def socket_dir() -> Path:
    base = os.environ.get("XDG_RUNTIME_DIR")
    return Path(base) / "verl-wizard" if base else Path(f"/tmp/verl-wizard-{os.getuid()}")


def socket_path(key: str | None = None) -> Path:
    return socket_dir() / f"check-{key or code_key()}.sock"


def _private(folder: Path) -> bool:
    """The folder is ours and nobody else's (a socket in a folder others can write could be anyone's); a symbolic
    link is not taken for the folder it points to."""
    import stat

    try:
        st = folder.lstat()
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and (st.st_mode & 0o077) == 0


def forwardable(argv: list[str]) -> bool:
    """A check the server answers exactly as a process would: none of NOT_FORWARDED (or an abbreviation), no
    script on stdin, no file only this process can read (/dev/fd/63 of ``<(...)``, /dev/stdin, /proc/self)."""
    if not argv or argv[0] != "check":
        return False
    for a in argv[1:]:
        if a == "--":
            break
        word = a.split("=", 1)[0]
        if a in ("-", "-h") or a.startswith(("/dev/", "/proc/")):
            return False
        if word.startswith("--") and len(word) > 2 and any(opt.startswith(word) for opt in NOT_FORWARDED):
            return False
    return True


def forward(argv: list[str]) -> int | None:
    """Hand ``verl-wizard check ...`` to a running server: its exit code, or None (run it here)."""
    if os.environ.get("VERL_WIZARD_SERVER", "1") == "0" or not forwardable(argv):
        return None
    path = socket_path()
    if not path.exists() or not _private(path.parent):
        return None
    try:
        request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
        with _connected(path, CONNECT_S) as conn:
            _send(conn, request)
            answer = _receive(conn, ANSWER_TIMEOUT_S)
    except (OSError, ValueError):
        return None  # no server, a dead, suspended or wedged one, a deleted working folder: the process answers
    except KeyboardInterrupt:
        print("verl-wizard: interrupted", file=sys.stderr)
        return 130
    if not isinstance(answer, dict) or not isinstance(answer.get("rc"), int):
        return None
    return _write(answer)


def _write(answer: dict) -> int:
    """The answer on this process's streams, with the CLI's manners: a closed pipe is no error, a full disk one line."""
    try:
        sys.stdout.write(answer.get("stdout", ""))
        sys.stdout.flush()
        sys.stderr.write(answer.get("stderr", ""))
        sys.stderr.flush()
    except BrokenPipeError:  # output piped into `head` and the like
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - Python flushes stdout at exit
        return 0
    except OSError as exc:
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115
        print(f"verl-wizard: internal error: cannot write the answer: {exc.strerror or exc}", file=sys.stderr)
        return 3
    return answer["rc"]


def _connected(path: Path, timeout: float) -> socket.socket:
    """A connection to the socket at ``path`` (OSError when nobody listens), ``timeout`` for connecting; then
    every send and receive waits at most SILENCE_S."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(str(path))
    except BaseException:
        conn.close()
        raise
    conn.settimeout(SILENCE_S)
    return conn


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _receive(conn: socket.socket, timeout: float, limit: int = MAX_MESSAGE) -> object:
    """One JSON line from ``conn``: TimeoutError when nothing at all comes for the socket's timeout (SILENCE_S)
    or the whole line takes longer than ``timeout``; ValueError when the peer ends or the line passes ``limit``."""
    deadline = time.monotonic() + timeout
    chunks, size = [], 0
    while True:
        if time.monotonic() > deadline:
            raise TimeoutError("no whole answer in time")
        chunk = conn.recv(1 << 16)
        if not chunk:
            raise ValueError("no answer")
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise ValueError("answer too long")
        if b"\n" in chunk:
            break
    return json.loads(b"".join(chunks))  # the heartbeat spaces before it are JSON whitespace


def stop(key: str | None = None) -> tuple[bool, str]:
    """End the server of this code: (whether one ended, what happened). A server that does not answer the request
    within SILENCE_S (suspended, wedged), or does not end within STOP_GRACE_S of agreeing, is killed (SIGKILL of
    the pid that listens on the socket, this user's) and its socket removed; the sentence says so."""
    path = socket_path(key)
    if not path.exists():
        return False, "was not running"
    if not _private(path.parent):
        return False, f"{path.parent} is not private to this user: nothing there is asked or ended"
    try:
        conn = _connected(path, CONNECT_S)
    except (ConnectionRefusedError, FileNotFoundError):
        path.unlink(missing_ok=True)  # a socket nobody listens on
        return False, "was not running"
    except OSError as exc:  # its queue is full and nobody takes from it (suspended): the pid it wrote at start
        pid = _listed_pid(path)
        if pid is None:
            return False, f"cannot reach it on {path} ({exc.strerror or exc}); end it with kill"
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _ended(pid, STOP_GRACE_S)
        path.unlink(missing_ok=True)
        _pid_file(path).unlink(missing_ok=True)
        return True, f"stopped: killed pid {pid}, which took no connection (suspended with a full queue?)"
    with conn:
        pid = _peer_pid(conn)
        try:
            _send(conn, {"stop": True})
            _receive(conn, SILENCE_S)
            agreed = True
        except (OSError, ValueError):
            agreed = False  # suspended or wedged: ended by its pid below
    if pid is None:
        return (True, "stopped") if agreed else (False, "not answering, and its process is unknown: end it with kill")
    if _ended(pid, STOP_GRACE_S if agreed else 0.2):
        return True, "stopped"
    try:
        os.kill(pid, signal.SIGKILL)  # a suspended process ends too
    except ProcessLookupError:
        return True, "stopped"
    _ended(pid, STOP_GRACE_S)
    try:
        path.unlink()  # a killed server cannot remove it
    except OSError:
        pass
    _pid_file(path).unlink(missing_ok=True)
    why = f"did not end within {STOP_GRACE_S:g} s" if agreed else f"did not answer within {SILENCE_S:g} s"
    return True, f"stopped: killed pid {pid}, which {why} of being asked (suspended or wedged)"


def _pid_file(path: Path) -> Path:
    return path.with_name(path.name + ".pid")


def _start_time(pid: int) -> str | None:
    """When process ``pid`` started (clock ticks since boot, /proc/PID/stat): with the pid, names one process."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            return fh.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return None


def write_pid_file(path: Path) -> Path | None:
    """``<socket>.pid``: this process's pid and start time, for ``stop`` to end it when the socket takes no
    connection; None where it cannot be written (--stop then says to end it with kill, as before)."""
    from wizard.adapters.files.disk import WriteError, replace_atomic

    pid_file = _pid_file(path)
    try:
        replace_atomic(pid_file, f"{os.getpid()} {_start_time(os.getpid())}\n", mode=0o600)
    except WriteError:
        return None
    return pid_file


def _listed_pid(path: Path) -> int | None:
    """The pid in the socket's pid file when that process still runs, is this user's and started when the file
    says (never a later process that got the same pid)."""
    pid_file = _pid_file(path)
    try:
        if pid_file.is_symlink() or pid_file.stat().st_uid != os.getuid():
            return None
        pid_text, started = pid_file.read_text()[:100].split()
        pid = int(pid_text)
        if pid <= 1 or pid == os.getpid() or os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return None
    except (OSError, ValueError):
        return None
    return pid if _start_time(pid) == started else None


def _peer_pid(conn: socket.socket) -> int | None:
    """The pid of the process that listens on ``conn``'s other end, when it is this user's (SO_PEERCRED)."""
    try:
        creds = conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    except (OSError, AttributeError):
        return None
    pid, uid, _ = struct.unpack("3i", creds)
    return pid if pid > 0 and uid == os.getuid() and pid != os.getpid() else None


def _ended(pid: int, timeout: float) -> bool:
    """Whether process ``pid`` ends (or is only a zombie) within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open(f"/proc/{pid}/stat", "rb") as fh:
                if fh.read().rsplit(b")", 1)[1].split()[0] == b"Z":
                    return True
        except (FileNotFoundError, ProcessLookupError, IndexError):
            return True
        except OSError:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)


def running(key: str | None = None) -> bool:
    return status(key) is not None


def status(key: str | None = None) -> dict | None:
    """The server's answer to a ping (``{"pong": True, "answered": N, "pid": P, "checks": C}``),
    ``{"silent": True}`` when it listens but says nothing within SILENCE_S (suspended), or None when none listens."""
    path = socket_path(key)
    if not path.exists() or not _private(path.parent):
        return None
    try:
        with _connected(path, CONNECT_S) as conn:
            try:
                _send(conn, {"ping": True})
                answer = _receive(conn, SILENCE_S)
            except (TimeoutError, ValueError):
                return {"silent": True}
    except OSError:
        return None
    return answer if isinstance(answer, dict) else {"silent": True}


class ServerError(Exception):
    """The server cannot start (one line for the user)."""


def private_dir() -> Path:
    """The folder of the socket and the log, created private (0700) when missing; ServerError when it is there but
    not this user's alone (another user made it first, or made it a symbolic link): nothing is put there."""
    folder = socket_dir()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ServerError(f"cannot create {folder}: {exc.strerror or exc}") from None
    if not _private(folder):
        raise ServerError(f"{folder} is not private to this user (it must be a folder of this user with mode 0700, "
                          "not a link): refusing to use it; remove it or set XDG_RUNTIME_DIR")
    return folder


def open_log(folder: Path) -> int:
    """The server's log in ``folder``, opened for appending without following a symbolic link (a link planted
    there would have the server write into someone else's file); ServerError otherwise."""
    path = folder / "serve.log"
    try:
        return os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        why = "a symbolic link" if exc.errno == errno.ELOOP else exc.strerror or str(exc)
        raise ServerError(f"cannot open {path}: {why}") from None
