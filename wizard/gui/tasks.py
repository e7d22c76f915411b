"""Long work off the GUI thread: probing an environment, detecting GPUs, asking a Ray cluster.

A :class:`TaskRunner` runs one callable at a time on a worker thread and reports back on
the GUI thread. Cancel returns control at once: the widget shows "cancelled" and the late
result, if it ever comes, is dropped. The adapters called here all bound their own work
(subprocess timeouts, killed process groups), so an abandoned call ends by itself.
"""

from __future__ import annotations

import threading
import traceback
from collections.abc import Callable

from PySide6.QtCore import QObject, Qt, QTimer, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QProgressBar, QPushButton, QWidget


class _Keeper(QObject):
    """Holds what a worker thread was given until the thread has ended, then lets go of it here, on the GUI
    thread. A Qt object whose last reference a worker dropped would be destroyed on that worker, and Qt
    deadlocks on that: seen in CI, a closed reward-bench dialog's menu destroyed by its finished scoring
    thread while the GUI thread built a table."""

    def __init__(self) -> None:
        super().__init__()
        self._held: list[tuple[threading.Thread, object]] = []
        self._timer = QTimer(self)
        self._timer.setInterval(50)
        self._timer.timeout.connect(self._prune)

    def hold(self, thread: threading.Thread, refs: object) -> None:
        self._held.append((thread, refs))
        self._timer.start()

    def _prune(self) -> None:
        self._held = [(t, r) for t, r in self._held if t.is_alive()]
        if not self._held:
            self._timer.stop()


_KEEPER: _Keeper | None = None


def start_thread(target: Callable[[], None], name: str) -> threading.Thread:
    """Start ``target`` on a daemon thread (call this on the GUI thread). Whatever ``target`` holds (the
    widgets its closure captured) is released on the GUI thread once the thread has ended."""
    global _KEEPER
    if _KEEPER is None:
        _KEEPER = _Keeper()
    thread = threading.Thread(target=target, name=name, daemon=True)
    _KEEPER.hold(thread, target)
    thread.start()
    return thread


class _Relay(QObject):
    done = Signal(int, object, str)  # generation, result, error text


class TaskRunner(QObject):
    """Runs ``fn()`` on a thread; ``finished(result)`` or ``failed(message)`` on the GUI thread."""

    started = Signal(str)
    finished = Signal(object)
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._generation = 0
        self._running = False
        self._relay = _Relay()
        self._relay.done.connect(self._on_done, Qt.QueuedConnection)
        self.cancel_event = threading.Event()

    @property
    def running(self) -> bool:
        return self._running

    def start(self, label: str, fn: Callable[[], object]) -> None:
        """Run ``fn`` on a worker thread. It may read ``self.cancel_event`` (set by Cancel) to stop early."""
        self._generation += 1
        generation = self._generation
        self._running = True
        self.cancel_event = threading.Event()
        self.started.emit(label)

        def work() -> None:
            try:
                result, error = fn(), ""
            except (ValueError, RuntimeError, OSError) as exc:  # the adapters' one-line reasons
                result, error = None, str(exc) or type(exc).__name__
            except Exception as exc:  # noqa: BLE001 - never let a worker crash the window
                result, error = None, f"{type(exc).__name__}: {exc}\n{traceback.format_exc(limit=3)}"
            self._relay.done.emit(generation, result, error)

        start_thread(work, f"verl-wizard: {label}")

    def cancel(self) -> None:
        if self._running:
            self.cancel_event.set()
            self._generation += 1  # whatever comes back now belongs to nobody
            self._running = False
            self.cancelled.emit()

    def _on_done(self, generation: int, result: object, error: str) -> None:
        if generation != self._generation:
            return
        self._running = False
        if error:
            self.failed.emit(error)
        else:
            self.finished.emit(result)


class TaskBar(QWidget):
    """Progress (busy) bar, what is running, and Cancel, for one TaskRunner."""

    def __init__(self, runner: TaskRunner, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.runner = runner
        self.label = QLabel()
        self.label.setObjectName("taskLabel")
        self.bar = QProgressBar()
        self.bar.setRange(0, 0)  # busy: these probes cannot say how far they are
        self.bar.setMaximumWidth(160)
        self.bar.setAccessibleName("Working")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(runner.cancel)
        row = QHBoxLayout(self)
        row.setContentsMargins(0, 0, 0, 0)
        row.addWidget(self.label, 1)
        row.addWidget(self.bar)
        row.addWidget(self.cancel_button)
        runner.started.connect(self._started)
        runner.finished.connect(lambda _r: self._ended(""))
        runner.failed.connect(lambda _m: self._ended(""))
        runner.cancelled.connect(lambda: self._ended("Cancelled."))
        self._ended("")

    def _started(self, label: str) -> None:
        self.label.setText(label + "…")
        self.bar.show()
        self.cancel_button.show()
        self.cancel_button.setEnabled(True)

    def _ended(self, text: str) -> None:
        self.label.setText(text)
        self.bar.hide()
        self.cancel_button.hide()
