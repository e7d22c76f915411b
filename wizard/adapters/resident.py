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
CHECKOUT_RESOURCES = PACKAGE.parent / "resources"
# a check the server cannot answer as the process would: verl's own run (its output goes to the terminal),
# a batch (long), a script on stdin, help
NOT_FORWARDED = frozenset({"--verl", "--batch", "-", "-h", "--help"})
MAX_MESSAGE = 64 * 1024 * 1024
ANSWER_TIMEOUT_S = 300.0


def code_key() -> str:
    """What the server's answers depend on: the wizard's files and resources (path, size, modification time) and
    the Python that runs it."""
    h = hashlib.sha1(sys.executable.encode())
    for root in (PACKAGE, CHECKOUT_RESOURCES):
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
    """The folder is ours and nobody else's (a socket in a folder others can write could be anyone's)."""
    try:
        st = folder.stat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and (st.st_mode & 0o077) == 0


def forwardable(argv: list[str]) -> bool:
    return bool(argv) and argv[0] == "check" and not any(a in NOT_FORWARDED or a.startswith("--verl")
                                                         for a in argv[1:])


def forward(argv: list[str]) -> int | None:
    """Hand ``verl-wizard check ...`` to a running server: its exit code, or None (run it here)."""
    if os.environ.get("VERL_WIZARD_SERVER", "1") == "0" or not forwardable(argv):
        return None
    path = socket_path()
    if not path.exists() or not _private(path.parent):
        return None
    request = {"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(2.0)
            conn.connect(str(path))
            conn.settimeout(ANSWER_TIMEOUT_S)
            _send(conn, request)
            answer = _receive(conn)
    except (OSError, ValueError):
        return None
    if not isinstance(answer, dict) or not isinstance(answer.get("rc"), int):
        return None
    sys.stdout.write(answer.get("stdout", ""))
    sys.stdout.flush()
    sys.stderr.write(answer.get("stderr", ""))
    sys.stderr.flush()
    return answer["rc"]


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
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(5.0)
            conn.connect(str(path))
            _send(conn, {"stop": True})
            _receive(conn)
    except (OSError, ValueError):
        path.unlink(missing_ok=True)  # a socket nobody listens on
        return False
    return True


def running(key: str | None = None) -> bool:
    return status(key) is not None


def status(key: str | None = None) -> dict | None:
    """The server's answer to a ping (``{"pong": True, "answered": N}``), or None when none answers."""
    path = socket_path(key)
    if not path.exists():
        return None
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(2.0)
            conn.connect(str(path))
            _send(conn, {"ping": True})
            answer = _receive(conn)
    except (OSError, ValueError):
        return None
    return answer if isinstance(answer, dict) else None


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
        listener.bind(str(path))
        os.chmod(path, 0o600)
        listener.listen(8)
        if ready:
            ready(path)
        try:
            _loop(listener, handle, idle_s)
        finally:
            path.unlink(missing_ok=True)


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
            _reply(conn, handle(request))
            answered += 1
        last = time.monotonic()


def _reply(conn: socket.socket, message: dict) -> None:
    try:
        _send(conn, message)
    except OSError:
        pass  # the client went away: nothing to answer
