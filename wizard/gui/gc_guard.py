"""Python's cyclic garbage collector runs on the GUI thread only: automatic collection off, a timer collects.

Automatic collection runs on whichever thread happens to allocate when a threshold is crossed. On a work thread
(``wizard/gui/workers.py``) it can collect the wrapper of a Qt object kept only by a reference cycle (a closed
dialog's QMenu and its QActions), and shiboken then destroys the QObject off the GUI thread: that thread waits for
the GIL inside ``QObject::~QObject`` while the GUI thread, destroying widgets with the GIL held, waits on a Qt lock
it holds. CI hung 20 minutes that way (the run follower thread, tests/gui/test_run_page.py). The remedy is the one
pyqtgraph ships (``pyqtgraph.util.garbage_collector``; not imported here, the window opens without pyqtgraph): a
QTimer of the GUI thread checks once a second and collects the generations automatic collection would have.
"""

from __future__ import annotations

import gc

import shiboken6
from PySide6.QtCore import QCoreApplication, QThread, QTimer

INTERVAL_MS = 1000

_timer: QTimer | None = None  # the one collector of the process; the reference keeps it alive


def collect_on_the_gui_thread(app: QCoreApplication) -> QTimer:
    """Turn automatic garbage collection off and collect from a timer of ``app``'s thread instead; once per
    process (a second call returns the running timer). Call it on the GUI thread, right after making ``app``."""
    global _timer
    if _timer is not None and shiboken6.isValid(_timer) and _timer.parent() is app:
        return _timer
    if app.thread() != QThread.currentThread():
        raise RuntimeError("the garbage collector's timer must be made on the GUI thread")
    thresholds = gc.get_threshold()
    timer = QTimer(app)
    timer.setObjectName("verl-wizard: collect garbage on the GUI thread")
    timer.timeout.connect(lambda: _collect(thresholds))
    gc.disable()
    timer.start(INTERVAL_MS)
    _timer = timer
    return timer


def _collect(thresholds: tuple[int, ...]) -> None:
    """Collect the oldest generation whose count passed its threshold, as automatic collection would have."""
    counts = gc.get_count()
    if thresholds[0] <= 0 or counts[0] <= thresholds[0]:
        return
    generation = 0
    while generation < 2 and counts[generation + 1] > thresholds[generation + 1]:
        generation += 1
    gc.collect(generation)
