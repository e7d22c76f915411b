"""The resident checker's server side (``verl-wizard serve``): one request never holds up another.

One thread reads every connection at once (a selector), each with a deadline: a client that sends nothing, or
trickles, or sends more than MAX_REQUEST is dropped after REQUEST_S; a request that is not one JSON object of the
expected shape (NUL bytes, an environment name with ``=``, nesting deeper than Python recurses) gets an error reply.
Each check then runs in a forked child (the schema, Hydra and pydantic already loaded, shared copy-on-write): a check
that blocks (a FIFO, a slow disk) blocks only itself and its own client, which hears a heartbeat space every
HEARTBEAT_S and falls back to checking alone when the heartbeats stop. A child ends with its check, at
CHECK_DEADLINE_S (an alarm, and the server's SIGKILL), or with the server (a parent-death signal).
"""

from __future__ import annotations

import gc
import json
import os
import selectors
import signal
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wizard.adapters.processes.resident import (
    CHECK_DEADLINE_S,
    HEARTBEAT_S,
    MAX_REQUEST,
    ServerError,
    private_dir,
    running,
    socket_path,
    write_pid_file,
)

REQUEST_S = 2.0  # seconds a client has to send its whole request line
MAX_CHECKS = 16  # checks running at once; past that a client is told to check alone
MAX_PENDING = 64  # connections still sending their request; past that a new one is closed at once
_PR_SET_PDEATHSIG = 1


def serve(handle: Callable[[dict], dict], *, idle_s: float, key: str | None = None,
          ready: Callable[[Path], None] | None = None) -> None:
    """Answer requests until ``idle_s`` pass without one, a stop request, or SIGTERM/SIGINT (the caller's handlers
    raise); the socket is removed on the way out."""
    private_dir()
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
        listener.listen(64)
        pid_file = write_pid_file(path)  # what --stop ends when the socket takes no connection (suspended, full)
        if ready:
            ready(path)
        gc.freeze()  # what is loaded now stays shared with every forked check instead of being copied by the GC
        server = _Server(listener, handle, idle_s)
        try:
            server.loop()
        finally:
            server.end_checks()
            try:
                if path.stat().st_ino == mine:  # never a newer server's socket
                    path.unlink()
            except OSError:
                pass
            if pid_file is not None and _file_pid(pid_file) == os.getpid():
                pid_file.unlink(missing_ok=True)


def _file_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@dataclass
class _Pending:
    deadline: float
    data: bytearray = field(default_factory=bytearray)


class _Server:
    def __init__(self, listener: socket.socket, handle: Callable[[dict], dict], idle_s: float) -> None:
        self.listener, self.handle, self.idle_s = listener, handle, idle_s
        self.selector = selectors.DefaultSelector()
        listener.setblocking(False)
        self.selector.register(listener, selectors.EVENT_READ)
        self.pending: dict[socket.socket, _Pending] = {}
        self.checks: dict[int, float] = {}  # pid -> deadline
        self.answered = 0
        self.last = time.monotonic()
        self.stopping = False

    def loop(self) -> None:
        while not self.stopping:
            now = time.monotonic()
            if not self.pending and not self.checks and now - self.last >= self.idle_s:
                return  # idle long enough
            wait = self.idle_s - (now - self.last)
            if self.pending:
                wait = min(wait, min(p.deadline for p in self.pending.values()) - now)
            if self.checks:
                wait = min(wait, 0.05)  # reap finished checks promptly
            for key, _ in self.selector.select(max(0.0, wait)):
                if key.fileobj is self.listener:
                    self._accept()
                else:
                    self._read(key.fileobj)
                if self.stopping:
                    return
            self._expire()
            self._reap()

    # -- connections ---------------------------------------------------------------------------------------------
    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return  # out of file descriptors and the like: the client checks alone
            if len(self.pending) >= MAX_PENDING:
                conn.close()
                continue
            conn.setblocking(False)
            self.pending[conn] = _Pending(time.monotonic() + REQUEST_S)
            self.selector.register(conn, selectors.EVENT_READ)

    def _read(self, conn: socket.socket) -> None:
        state = self.pending[conn]
        try:
            chunk = conn.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            chunk = b""
        if not chunk:
            self._drop(conn)
            return
        state.data += chunk
        if len(state.data) > MAX_REQUEST:
            self._drop(conn, {"error": f"a request is at most {MAX_REQUEST // 1024 // 1024} MiB"})
            return
        if b"\n" in chunk:
            self.selector.unregister(conn)
            del self.pending[conn]
            self._dispatch(conn, bytes(state.data))

    def _drop(self, conn: socket.socket, reply: dict | None = None) -> None:
        self.selector.unregister(conn)
        del self.pending[conn]
        if reply is not None:
            _reply_now(conn, reply)
        conn.close()

    def _expire(self) -> None:
        now = time.monotonic()
        for conn in [c for c, p in self.pending.items() if p.deadline <= now]:
            self._drop(conn)  # sent nothing, or too slowly: whoever it is does not hold anyone up

    # -- requests ------------------------------------------------------------------------------------------------
    def _dispatch(self, conn: socket.socket, data: bytes) -> None:
        request, error = parse_request(data)
        if error:
            _reply_now(conn, {"error": error})
        elif request.get("stop"):
            _reply_now(conn, {"stopped": True, "pid": os.getpid()})
            self.stopping = True
        elif request.get("ping"):
            _reply_now(conn, {"pong": True, "answered": self.answered, "pid": os.getpid(), "checks": len(self.checks)})
        elif len(self.checks) >= MAX_CHECKS:
            _reply_now(conn, {"rc": None, "error": f"{MAX_CHECKS} checks already running"})
        else:
            self._fork(conn, request)
            return  # the child closes it
        conn.close()
        self.last = time.monotonic()

    def _fork(self, conn: socket.socket, request: dict) -> None:
        pid = os.fork()
        if pid == 0:  # the child: answer this one request, then leave without running any of the parent's cleanup
            code = 1
            try:
                code = self._child(conn, request)
            finally:
                os._exit(code)
        self.checks[pid] = time.monotonic() + CHECK_DEADLINE_S
        conn.close()

    def _child(self, conn: socket.socket, request: dict) -> int:
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        parent = os.getppid()
        _die_with_parent()
        if os.getppid() != parent:
            return 1  # the server ended while this was forked
        signal.alarm(int(CHECK_DEADLINE_S))  # ends this process even when the server is gone
        self.selector.close()
        self.listener.close()  # never hold the socket open after the server is gone
        for other in self.pending:
            other.close()
        conn.setblocking(True)
        lock, done = threading.Lock(), threading.Event()

        def beat() -> None:
            while True:
                with lock:
                    if done.is_set():
                        return
                    try:
                        conn.sendall(b" ")
                    except OSError:
                        return
                if done.wait(HEARTBEAT_S):
                    return

        threading.Thread(target=beat, daemon=True).start()
        reply = self.handle(request)
        with lock:
            done.set()
            try:
                conn.sendall(json.dumps(reply).encode() + b"\n")
            except OSError:
                return 1
        return 0 if reply.get("rc") is not None else 2

    def _reap(self) -> None:
        while self.checks:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                self.checks.clear()
                return
            if pid == 0:
                break
            if self.checks.pop(pid, None) is not None:
                self.answered += os.waitstatus_to_exitcode(status) == 0
                self.last = time.monotonic()
        now = time.monotonic()
        for pid, deadline in list(self.checks.items()):
            if deadline <= now:
                _kill(pid)  # its client hears nothing more and checks alone; reaped on a later turn

    def end_checks(self) -> None:
        for pid in self.checks:
            _kill(pid)
        for pid in list(self.checks):
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:
                pass
        self.checks.clear()
        for conn in self.pending:
            conn.close()
        self.pending.clear()


def parse_request(data: bytes) -> tuple[dict, str | None]:
    """The request in ``data`` (one JSON line), or the reason it is not one: never an exception."""
    try:
        request = json.loads(data)
    except RecursionError:
        return {}, "the request is nested too deeply"
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        return {}, f"the request is not JSON ({' '.join(str(exc).split())[:120]})"
    if not isinstance(request, dict):
        return {}, "a request is one JSON object"
    if request.get("stop") or request.get("ping"):
        return request, None
    return request, request_error(request)


def request_error(request: dict) -> str | None:
    """Why a check request cannot be run as a process would be (None when it can): what execve and chdir refuse."""
    argv, cwd, env = request.get("argv"), request.get("cwd"), request.get("env")
    if not isinstance(argv, list) or not all(isinstance(a, str) and "\0" not in a for a in argv):
        return "argv must be a list of strings without NUL bytes"
    if not isinstance(cwd, str) or "\0" in cwd or not cwd.startswith("/"):
        return "cwd must be an absolute path without NUL bytes"
    if not isinstance(env, dict):
        return "env must be an object of strings"
    for k, v in env.items():
        if not k or "=" in k or "\0" in k:
            return f"env holds a name no environment can: {k[:40]!r}"
        if not isinstance(v, str) or "\0" in v:
            return f"env {k[:40]} must be a string without NUL bytes"
    return None


def _reply_now(conn: socket.socket, message: dict) -> None:
    """A short reply to a fresh connection (its send buffer is empty), never waiting on the client."""
    try:
        conn.setblocking(False)
        conn.send(json.dumps(message).encode() + b"\n")
    except OSError:
        pass  # the client went away or does not read: nothing to answer


def _kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _die_with_parent() -> None:
    """Linux: SIGKILL this process when the server ends (killed, or stopped mid-check)."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
