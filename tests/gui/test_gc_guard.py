"""Python's cyclic garbage collector runs on the GUI thread only (wizard/gui/gc_guard.py): automatic collection,
which runs on whichever thread allocates, once collected a closed menu's Qt objects on the run follower thread and
deadlocked Qt against the GUI thread over the GIL (CI hung in tests/gui/test_run_page.py)."""

import gc
import threading
import weakref

import pytest

pytest.importorskip("PySide6")

from PySide6.QtCore import QObject  # noqa: E402

from wizard.gui.gc_guard import collect_on_the_gui_thread  # noqa: E402

pytestmark = pytest.mark.gui

GUI = threading.main_thread().name


class Cyclic(QObject):
    """A Qt object that only a reference cycle keeps, as a closed dialog's menu and its actions are."""

    def __init__(self) -> None:
        super().__init__()
        self.me = self


def test_qt_objects_in_a_cycle_are_collected_by_the_timer_on_the_gui_thread(qtbot, qapp):
    assert not gc.isenabled(), "automatic collection is on: any thread that allocates can destroy Qt objects"
    assert collect_on_the_gui_thread(qapp) is collect_on_the_gui_thread(qapp), "one collector per process"
    died_on: list[str] = []
    destroyed_on: list[str] = []
    cyclic = Cyclic()
    cyclic.destroyed.connect(lambda *_: destroyed_on.append(threading.current_thread().name))
    ref = weakref.ref(cyclic, lambda _: died_on.append(threading.current_thread().name))
    del cyclic
    allocated = [[[] for _ in range(3 * gc.get_threshold()[0])]]  # enough to start an automatic collection
    assert ref() is not None, "an allocation collected it: on a work thread that would destroy Qt objects there"

    def collected() -> bool:
        """Allocations go on, as in a busy window (objects freed meanwhile lower the count the timer reads, as they
        lower automatic collection's), and the timer's next tick, once a second, collects."""
        allocated.append([[] for _ in range(gc.get_threshold()[0])])
        return ref() is None

    qtbot.waitUntil(collected, timeout=10_000)
    assert died_on == [GUI] and destroyed_on == [GUI]
    allocated.clear()
