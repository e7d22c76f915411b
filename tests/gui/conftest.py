"""The main window as a fixture: shown, no recovery offer, closing without asking to save. Every GUI test also
checks that no thread but the GUI's called Qt while it ran."""

import threading

import pytest

pytest.importorskip("PySide6")


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
    with the GUI thread over the GIL (CI hung 90 minutes that way; wizard/gui/workers.py): any fails the test."""
    calls: list[str] = []
    gui = threading.main_thread()

    def hook(frame, event, arg):
        if event == "c_call" and threading.current_thread() is not gui:
            owner = getattr(arg, "__self__", None)
            module = getattr(type(owner), "__module__", None) or getattr(arg, "__module__", None) or ""
            if module.startswith(("PySide6", "shiboken6")):
                calls.append(f"{threading.current_thread().name}: {type(owner).__name__}.{arg.__name__}")

    threading.setprofile(hook)
    yield calls
    threading.setprofile(None)
    assert not calls, f"Qt was called off the GUI thread: {sorted(set(calls))[:5]}"
