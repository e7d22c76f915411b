"""The main window as a fixture: shown, no recovery offer, closing without asking to save."""

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
