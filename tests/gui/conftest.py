"""The main window as a fixture: shown, no recovery offer, closing without asking to save. Every GUI test also
checks that no thread but the GUI's called Qt while it ran."""

import threading

import pytest

pytest.importorskip("PySide6")


@pytest.fixture(scope="session", autouse=True)
def gc_on_the_gui_thread(qapp):
    """The tests' QApplication collects garbage as the app's does: on the GUI thread, from a timer, never on a
    work thread that happened to allocate (wizard/gui/gc_guard.py)."""
    from wizard.gui.gc_guard import collect_on_the_gui_thread

    collect_on_the_gui_thread(qapp)


@pytest.fixture(autouse=True)
def no_modal_load_error(monkeypatch):
    """A window whose checker cannot load says why in a modal dialog; in a test that dialog would wait for a
    click forever, so the reason fails the test instead."""
    from wizard.gui.app import WizardWindow

    def fail(self, reason: str) -> None:
        pytest.fail(f"the window could not load its checker: {reason}")

    monkeypatch.setattr(WizardWindow, "report_load_error", fail)


@pytest.fixture
def window(qtbot):
    from wizard.gui.app import WizardWindow

    w = WizardWindow(restore=False)
    w.ask_save = lambda: "discard"
    qtbot.addWidget(w)
    w.show()
    return w


@pytest.fixture(autouse=True)
def qt_off_the_gui_thread():
    """The Qt functions called on threads started during the test. A Qt call from a work thread can deadlock
    with the GUI thread over the GIL (CI hung 90 minutes that way; wizard/gui/workers.py): any fails the test.
    Seen: methods of Qt objects (the project's subclasses included), Qt's static functions and signal emits; not
    seen: constructors (calling a class raises no profile event)."""
    import shiboken6
    from PySide6 import QtCore, QtGui, QtWidgets

    qt = shiboken6.Shiboken.Object
    calls: list[str] = []
    gui = threading.main_thread()

    def is_qt(fn) -> bool:
        owner = getattr(fn, "__self__", None)
        if isinstance(owner, qt) or (isinstance(owner, type) and issubclass(owner, qt)):
            return True
        if type(owner).__module__.startswith(("PySide6", "shiboken6")):  # SignalInstance and the like
            return True
        head = (getattr(fn, "__qualname__", "") or "").split(".")[0]
        cls = next((getattr(m, head) for m in (QtCore, QtGui, QtWidgets) if head and hasattr(m, head)), None)
        return isinstance(cls, type) and issubclass(cls, qt)  # a static function: QTimer.singleShot

    def hook(frame, event, arg):
        if event == "c_call" and threading.current_thread() is not gui and is_qt(arg):
            calls.append(f"{threading.current_thread().name}: {getattr(arg, '__qualname__', arg)}")

    before = threading.getprofile()
    threading.setprofile(hook)
    yield calls
    threading.setprofile(before)
    assert not calls, f"Qt was called off the GUI thread: {sorted(set(calls))[:5]}"
