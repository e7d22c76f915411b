"""The main window as a fixture: shown, no recovery offer, closing without asking to save."""

import pytest

pytest.importorskip("PySide6")


@pytest.fixture
def window(qtbot):
    from wizard.gui.app import WizardWindow

    w = WizardWindow(restore=False)
    w.ask_save = lambda: "discard"
    qtbot.addWidget(w)
    w.show()
    return w
