"""Work off the GUI thread, the one way the GUI does it: probing an environment, detecting GPUs, reading data,
scoring rewards, loading the checker, sampling GPUs, following a run.

A :class:`Worker` (a QObject of the GUI thread) runs one function at a time on a thread of its own and answers
on the GUI thread: ``progress(value)`` as often as the function reports, then ``finished(result)`` or
``failed(message)``. ``cancel()`` gives control back at once (``cancelled``; a late answer is dropped);
``stop()`` asks the function to end and still takes its answer. The adapters called this way bound their
own work (subprocess timeouts, killed process groups), so abandoned work ends by itself.

Two rules keep Qt safe. A worker thread that dropped the last reference to a closed dialog once destroyed
its widgets off the GUI thread and deadlocked Qt (CI hung; tests/gui/test_workers.py):
- the work is given data: a function and plain values, never a Qt object or a function bound to or
  closing over one (``start`` refuses them), and it answers with data;
- what a work thread was given, and the Qt object it reports through, are held here until the thread has
  ended and let go of on the GUI thread, whether or not the Worker that started it still exists.
"""

from __future__ import annotations

import functools
import threading
import traceback
from collections.abc import Callable

from PySide6.QtCore import QObject, Signal, Slot


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


class _Relay(QObject):
    """The Qt object one work thread reports through. A child of the keeper: never destroyed by the thread."""

    progressed = Signal(object)
    ended = Signal()

    def __init__(self, parent: QObject) -> None:
        super().__init__(parent)
        self.result: object = None
        self.error = ""


class _Keeper(QObject):
    """Holds each running work's thread, function, arguments and relay until its end has reached the GUI thread,
    then lets go of them here."""

    def __init__(self) -> None:
        super().__init__()
        self._held: dict[_Relay, tuple[threading.Thread, tuple]] = {}

    def start(self, relay: _Relay, name: str, call: tuple) -> threading.Thread:
        thread = threading.Thread(target=_work, args=(relay, *call), name=name, daemon=True)
        self._held[relay] = (thread, call)
        relay.ended.connect(self._ended)  # after the Worker's own connection: the Worker hears first
        thread.start()
        return thread

    @Slot()
    def _ended(self) -> None:
        relay = self.sender()
        thread, _call = self._held.pop(relay)
        thread.join()  # a moment at most: it has reported and is returning; then it holds nothing
        relay.deleteLater()


_KEEPER: _Keeper | None = None


def _keeper() -> _Keeper:
    global _KEEPER
    if _KEEPER is None:
        _KEEPER = _Keeper()  # on the GUI thread: Workers are started there
    return _KEEPER


def _work(relay: _Relay, fn: Callable[..., object], args: tuple, kwargs: dict) -> None:
    """The work thread: run, keep the answer on the relay, say so."""
    try:
        relay.result = fn(*args, **kwargs)
    except (ValueError, RuntimeError, OSError) as exc:  # the adapters' one-line reasons
        relay.error = str(exc) or type(exc).__name__
    except BaseException as exc:  # noqa: BLE001 - never let a worker crash the window, or stay unanswered
        relay.error = f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
    relay.ended.emit()


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
        self._relay: _Relay | None = None
        self._thread: threading.Thread | None = None
        self._job: Job | None = None

    @property
    def running(self) -> bool:
        """An answer is awaited (from start until finished, failed or cancelled)."""
        return self._relay is not None

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
        keeper = _keeper()
        relay = _Relay(keeper)
        relay.progressed.connect(self._progressed)
        relay.ended.connect(self._ended)
        job = Job(relay.progressed.emit)
        self._relay, self._job = relay, job
        self.started.emit(label)
        self._thread = keeper.start(relay, f"verl-wizard: {label}", (fn, (job, *args) if with_job else args, kwargs))

    def stop(self) -> None:
        """Ask the work to end (``Job.stop``); its answer still comes."""
        if self._job is not None:
            self._job.stop.set()

    def cancel(self) -> None:
        """Give up on the work: ``cancelled`` now, its answer (if it ever comes) dropped."""
        if self._relay is not None:
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
        self._relay = self._job = None

    @Slot(object)
    def _progressed(self, value: object) -> None:
        if self.sender() is self._relay and self._relay is not None:
            self.progress.emit(value)

    @Slot()
    def _ended(self) -> None:
        relay = self.sender()
        if relay is not self._relay or relay is None:
            return  # let go of: nobody waits for it
        self._relay = self._job = None
        if relay.error:
            self.failed.emit(relay.error)
        else:
            self.finished.emit(relay.result)


__all__ = ["Job", "Worker"]
