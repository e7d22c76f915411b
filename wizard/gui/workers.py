"""Work off the GUI thread, the one way the GUI does it: probing an environment, detecting GPUs, reading data,
scoring rewards, loading the checker, sampling GPUs, following a run.

A :class:`Worker` (a QObject of the GUI thread) runs one function at a time on a thread of its own and answers
on the GUI thread: ``progress(value)`` as often as the function reports, then ``finished(result)`` or
``failed(message)``. ``cancel()`` gives control back at once (``cancelled``; a late answer is dropped);
``stop()`` asks the function to end and still takes its answer. The adapters called this way bound their
own work (subprocess timeouts, killed process groups), so abandoned work ends by itself.

Three rules keep Qt safe:
- a work thread never calls Qt. It leaves each report in a Python queue and wakes the GUI thread with one byte
  on a socket pair, which a QSocketNotifier of the GUI thread watches (the self-pipe wake-up asyncio's
  ``call_soon_threadsafe`` uses). A Qt signal emitted from a Python thread holds the GIL inside Qt while it
  takes Qt's locks, and the GUI thread can hold one of those locks while it waits for the GIL: CI hung for
  an hour that way, with no Python-level timeout able to fire;
- the work is given data: a function and plain values, never a Qt object or a function bound to or
  closing over one (``start`` refuses them), and it answers with data. A worker thread that dropped the last
  reference to a closed dialog once destroyed its widgets off the GUI thread and deadlocked Qt;
- what a work thread was given is held here until the thread has ended and let go of on the GUI thread,
  whether or not the Worker that started it still exists (tests/gui/test_workers.py).
"""

from __future__ import annotations

import functools
import queue
import socket
import threading
import traceback
import weakref
from collections.abc import Callable

import shiboken6
from PySide6.QtCore import QObject, QSocketNotifier, Signal


class Job:
    """What a function started with :meth:`Worker.start_job` is handed first: ``stop`` (an Event, set by Stop
    or Cancel, to poll, wait on, or pass to an adapter that takes one) and ``progress(value)``."""

    def __init__(self, report: Callable[[object], None]) -> None:
        self.stop = threading.Event()
        self._report = report

    @property
    def stopped(self) -> bool:
        return self.stop.is_set()

    def progress(self, value: object) -> None:
        """Send ``value`` to the GUI thread (``Worker.progress``), in order, without waiting."""
        self._report(value)


class _Work:
    """One running work: its thread, what it was given, and the Worker to answer (weakly: it may go first)."""

    def __init__(self, worker: Worker, call: tuple) -> None:
        self.worker = weakref.ref(worker)
        self.call: tuple | None = call
        self.thread: threading.Thread | None = None


_PROGRESS, _DONE, _ERROR = range(3)


class _Mailbox(QObject):
    """Where work threads leave their reports, without touching Qt, for the GUI thread to hand on in order;
    it holds each work's thread and call until the work's end has reached the GUI thread."""

    def __init__(self) -> None:
        super().__init__()
        self._held: dict[_Work, threading.Thread] = {}
        self._queue: queue.SimpleQueue[tuple[_Work, int, object]] = queue.SimpleQueue()
        self._wake_in, self._wake_out = socket.socketpair()
        for end in (self._wake_in, self._wake_out):
            end.setblocking(False)
            if end.family in (socket.AF_INET, socket.AF_INET6):  # Windows: a loopback TCP pair; no Nagle delay
                end.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._notifier = QSocketNotifier(self._wake_in.fileno(), QSocketNotifier.Type.Read, self)
        self._notifier.activated.connect(self._deliver)

    def start(self, work: _Work, name: str) -> threading.Thread:
        thread = threading.Thread(target=_run, args=(self, work, *work.call), name=name, daemon=True)
        self._held[work] = work.thread = thread
        try:
            thread.start()
        except RuntimeError:  # no thread to be had: nothing is held for it
            del self._held[work]
            raise
        return thread

    def post(self, work: _Work, kind: int, value: object) -> None:
        """Any thread: queue a report and wake the GUI thread (a full socket buffer means a wake-up is due)."""
        self._queue.put((work, kind, value))
        try:
            self._wake_out.send(b"\0")
        except OSError:  # BlockingIOError: bytes are waiting to be read, so the GUI thread will look
            pass

    def _deliver(self) -> None:
        """The GUI thread: read the wake-ups first, then the reports queued by then (one posted meanwhile sends its
        own byte, so none is left waiting, and a work that reports faster than its slots run cannot hold the GUI
        thread here: the next batch comes with the next turn of the event loop)."""
        try:
            while self._wake_in.recv(4096):
                pass
        except OSError:
            pass
        for _ in range(self._queue.qsize()):
            try:
                work, kind, value = self._queue.get_nowait()
            except queue.Empty:
                return
            if kind != _PROGRESS:
                self._held.pop(work).join()  # a moment at most: it has reported and is returning
                work.call = None  # what it was given is let go of here, on the GUI thread
            worker = work.worker()
            if worker is not None and shiboken6.isValid(worker):  # a Worker whose parent Qt deleted hears nothing
                worker._report(work, kind, value)


_MAILBOX: _Mailbox | None = None


def _mailbox() -> _Mailbox:
    global _MAILBOX
    if _MAILBOX is None:
        _MAILBOX = _Mailbox()  # on the GUI thread: Workers are started there
    return _MAILBOX


def _run(mailbox: _Mailbox, work: _Work, fn: Callable[..., object], args: tuple, kwargs: dict) -> None:
    """The work thread: run, then post the answer. Nothing here calls Qt."""
    try:
        kind, value = _DONE, fn(*args, **kwargs)
    except (ValueError, RuntimeError, OSError) as exc:  # the adapters' one-line reasons
        kind, value = _ERROR, str(exc) or type(exc).__name__
    except BaseException as exc:  # noqa: BLE001 - never let a worker crash the window, or stay unanswered
        kind, value = _ERROR, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
    del fn, args, kwargs  # the call is let go of by the mailbox, on the GUI thread
    mailbox.post(work, kind, value)


def _qt_objects(fn: Callable[..., object], args: tuple, kwargs: dict) -> list[object]:
    """The Qt objects a work would hold: passed, bound, captured by a closure or a default (one level deep)."""
    seen: list[object] = []
    while isinstance(fn, functools.partial):
        seen += [*fn.args, *fn.keywords.values()]
        fn = fn.func
    seen.append(getattr(fn, "__self__", None))
    seen += [cell.cell_contents for cell in getattr(fn, "__closure__", None) or () if _filled(cell)]
    seen += [*(getattr(fn, "__defaults__", None) or ()), *(getattr(fn, "__kwdefaults__", None) or {}).values()]
    seen += [*args, *kwargs.values()]
    return [x for x in seen if isinstance(x, QObject)]


def _filled(cell) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True


class Worker(QObject):
    """Runs one function at a time off the GUI thread; every signal comes on the GUI thread."""

    started = Signal(str)  # the label
    progress = Signal(object)  # a value the function reported (Job.progress)
    finished = Signal(object)  # the function's result
    failed = Signal(str)  # one line for ValueError/RuntimeError/OSError; else type, message and 3 frames
    cancelled = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._work: _Work | None = None  # the work whose answer is awaited
        self._thread: threading.Thread | None = None  # the last work's thread
        self._job: Job | None = None

    @property
    def running(self) -> bool:
        """An answer is awaited (from start until finished, failed or cancelled)."""
        return self._work is not None

    @property
    def ended(self) -> bool:
        """The last work started here is off its thread (whether its answer was taken or let go)."""
        return self._thread is None or not self._thread.is_alive()

    def start(self, label: str, fn: Callable[..., object], *args: object, **kwargs: object) -> None:
        """Run ``fn(*args, **kwargs)`` on a thread; an answer still awaited from earlier work is dropped."""
        self._start(label, fn, args, kwargs, with_job=False)

    def start_job(self, label: str, fn: Callable[..., object], *args: object, **kwargs: object) -> None:
        """Run ``fn(job, *args, **kwargs)``: for work that reports progress or can stop early (:class:`Job`)."""
        self._start(label, fn, args, kwargs, with_job=True)

    def _start(self, label: str, fn: Callable[..., object], args: tuple, kwargs: dict, with_job: bool) -> None:
        held = _qt_objects(fn, args, kwargs)
        if held:
            raise TypeError(f"work is given data, never a Qt object (it would be released off the GUI thread): "
                            f"{label!r} holds {type(held[0]).__name__}")
        self._let_go()
        mailbox = _mailbox()
        work = _Work(self, ())
        job = Job(functools.partial(mailbox.post, work, _PROGRESS))
        work.call = (fn, (job, *args) if with_job else args, kwargs)
        self._work, self._job = work, job
        self.started.emit(label)
        try:
            self._thread = mailbox.start(work, f"verl-wizard: {label}")
        except RuntimeError as exc:  # the system gave no thread: say so as a failure, never wait for ever
            self._work = self._job = None
            self.failed.emit(f"could not start {label}: {exc}")

    def stop(self) -> None:
        """Ask the work to end (``Job.stop``); its answer still comes."""
        if self._job is not None:
            self._job.stop.set()

    def cancel(self) -> None:
        """Give up on the work: ``cancelled`` now, its answer (if it ever comes) dropped."""
        if self._work is not None:
            self._let_go()
            self.cancelled.emit()

    def wait(self, timeout_s: float | None = None) -> bool:
        """Block until this Worker's work has ended (True) or ``timeout_s`` passed (False). The answer itself still
        comes through the event loop."""
        if self._thread is not None:
            self._thread.join(timeout_s)
        return self.ended

    def _let_go(self) -> None:
        if self._job is not None:
            self._job.stop.set()
        self._work = self._job = None

    def _report(self, work: _Work, kind: int, value: object) -> None:
        """From the mailbox, on the GUI thread: hand on a report of the awaited work; drop one let go of."""
        if work is not self._work:
            return
        if kind == _PROGRESS:
            self.progress.emit(value)
            return
        self._work = self._job = None
        if kind == _ERROR:
            self.failed.emit(value)
        else:
            self.finished.emit(value)


__all__ = ["Job", "Worker"]
