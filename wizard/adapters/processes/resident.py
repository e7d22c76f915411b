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

import hashlib
import json
import os
import socket
import sys
import time
from collections.abc import Callable
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]
# the checkout's resources/ (an installed wizard reads its own wizard/resources, inside PACKAGE)
CHECKOUT_RESOURCES = PACKAGE.parent / "resources" if (PACKAGE.parent / "pyproject.toml").exists() else None
# a check the server cannot answer as the process would: verl's own run (its output goes to the terminal),
# a batch (long), the data check (it imports transformers, which keeps the first caller's environment), help;
# abbreviations of these too (argparse takes --ve for --verl)
NOT_FORWARDED = ("--verl", "--batch", "--data", "--help", "--python")
MAX_MESSAGE = 64 * 1024 * 1024
ANSWER_TIMEOUT_S = 300.0


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
        with _connected(path, 2.0) as conn:
            conn.settimeout(ANSWER_TIMEOUT_S)
            _send(conn, request)
            answer = _receive(conn)
    except (OSError, ValueError):
        return None  # no server, a dead one, a deleted working folder: the process answers itself
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
    """A connection to the socket at ``path`` (OSError when nobody listens), ``timeout`` for connecting."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.settimeout(timeout)
    try:
        conn.connect(str(path))
    except BaseException:
        conn.close()
        raise
    return conn


def _send(conn: socket.socket, message: dict) -> None:
    conn.sendall(json.dumps(message).encode() + b"\n")


def _receive(conn: socket.socket) -> object:
    chunks, size = [], 0
    while True:
        chunk = conn.recv(1 << 16)
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
        if chunk.endswith(b"\n") or size > MAX_MESSAGE:
            break
    if not chunks or size > MAX_MESSAGE:
        raise ValueError("no answer")
    return json.loads(b"".join(chunks))


def stop(key: str | None = None) -> bool:
    """Ask the server of this code to end: True when one was running."""
    path = socket_path(key)
    if not path.exists():
        return False
    try:
        with _connected(path, 5.0) as conn:
            conn.settimeout(ANSWER_TIMEOUT_S)  # a server busy with a check answers after it
            _send(conn, {"stop": True})
            _receive(conn)
    except (ConnectionRefusedError, FileNotFoundError):
        path.unlink(missing_ok=True)  # a socket nobody listens on
        return False
    except (OSError, ValueError):
        return False
    return True


def running(key: str | None = None) -> bool:
    return status(key) is not None


def status(key: str | None = None) -> dict | None:
    """The server's answer to a ping (``{"pong": True, "answered": N}``), ``{"busy": True}`` when it listens but
    is in the middle of a check, or None when none listens."""
    path = socket_path(key)
    if not path.exists():
        return None
    try:
        with _connected(path, 2.0) as conn:
            try:
                _send(conn, {"ping": True})
                answer = _receive(conn)
            except (TimeoutError, ValueError):
                return {"busy": True}
    except OSError:
        return None
    return answer if isinstance(answer, dict) else {"busy": True}


class ServerError(Exception):
    """The server cannot start (one line for the user)."""


def serve(handle: Callable[[dict], dict], *, idle_s: float, key: str | None = None,
          ready: Callable[[Path], None] | None = None) -> None:
    """Answer requests one at a time until ``idle_s`` pass without one, a stop request, or SIGTERM/SIGINT (the
    caller's handlers raise); the socket is removed on the way out."""
    folder = socket_dir()
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise ServerError(f"cannot create {folder}: {exc.strerror or exc}") from None
    if not _private(folder):
        raise ServerError(f"{folder} is not private to this user (mode and owner): refusing to listen there")
    path = socket_path(key)
    if running(key):
        raise ServerError(f"a server of this code already answers on {path}")
    path.unlink(missing_ok=True)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as listener:
        try:
            listener.bind(str(path))
        except OSError as exc:  # a path too long for a Unix socket, a race with another server
            raise ServerError(f"cannot listen on {path}: {exc.strerror or exc}") from None
        os.chmod(path, 0o600)
        mine = path.stat().st_ino
        listener.listen(8)
        if ready:
            ready(path)
        try:
            _loop(listener, handle, idle_s)
        finally:
            try:
                if path.stat().st_ino == mine:  # never a newer server's socket
                    path.unlink()
            except OSError:
                pass


def _loop(listener: socket.socket, handle: Callable[[dict], dict], idle_s: float) -> None:
    last, answered = time.monotonic(), 0
    while True:
        listener.settimeout(max(0.1, idle_s - (time.monotonic() - last)))
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            return  # idle long enough
        with conn:
            conn.settimeout(30.0)
            try:
                request = _receive(conn)
            except (OSError, ValueError):
                continue
            if not isinstance(request, dict):
                continue
            if request.get("stop"):
                _reply(conn, {"stopped": True})
                return
            if request.get("ping"):
                _reply(conn, {"pong": True, "answered": answered})
                continue
            reply = handle(request)
            _reply(conn, reply)
            answered += reply.get("rc") is not None
        last = time.monotonic()


def _reply(conn: socket.socket, message: dict) -> None:
    try:
        _send(conn, message)
    except OSError:
        pass  # the client went away: nothing to answer
