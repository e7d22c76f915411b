"""The desktop wizard window and ``verl-wizard`` with no arguments."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import QApplication, QMessageBox, QWizard

from wizard import __version__
from wizard.adapters.session_store import clear_session, load_session
from wizard.core.gpus import parse_gpu_spec
from wizard.core.plan import load_plan
from wizard.gui.document import PlanDocument
from wizard.gui.pages import ReviewPage, StartPage, WritePage


class WizardWindow(QWizard):
    def __init__(self, restore: bool | None = None) -> None:
        """``restore``: take back an unsaved session (None: ask, when one is there)."""
        super().__init__()
        previous = load_session()
        self.setWindowTitle(f"verl-wizard {__version__} — plan a verl 0.9.1 run")
        self.setWizardStyle(QWizard.ModernStyle)
        self.setOption(QWizard.NoBackButtonOnStartPage, True)
        self.doc = PlanDocument(self)
        self.start_page = StartPage(self.doc)
        self.review_page = ReviewPage(self.doc)
        self.write_page = WritePage(self.doc)
        for page in (self.start_page, self.review_page, self.write_page):
            self.addPage(page)
        QShortcut(QKeySequence.Undo, self, activated=self.doc.undo_stack.undo)
        QShortcut(QKeySequence.Redo, self, activated=self.doc.undo_stack.redo)
        QShortcut(QKeySequence("Ctrl+Shift+Z"), self, activated=self.doc.undo_stack.redo)
        self.doc.undo_stack.cleanChanged.connect(self._update_title)
        self.doc.undo_stack.indexChanged.connect(self._update_title)
        self.doc.undo_stack.clear()  # the default preset is where the user starts, not an edit
        if previous and self._want_restore(previous, restore):
            self._restore_session(previous)
        self.review_page.refresh()
        self.resize(980, 720)

    def _want_restore(self, previous: dict, restore: bool | None) -> bool:
        if restore is not None:
            return restore
        name = (previous.get("plan") or {}).get("name") or "an unnamed plan"
        answer = QMessageBox.question(
            self, "Recover your last session?",
            f"verl-wizard did not close cleanly last time. Recover the plan you were editing ({name})?",
        )
        return answer == QMessageBox.Yes

    def _restore_session(self, previous: dict) -> None:
        try:
            plan = load_plan(previous["plan"])
            gpus = parse_gpu_spec(previous["gpus"]) if previous.get("gpus") else None
        except (KeyError, TypeError, ValueError):
            return  # an autosave we cannot read is not worth an error dialog
        if gpus is not None:
            self.doc.set_gpus(gpus)
            self.start_page.gpus.setText(str(gpus))
        self.doc.set_plan(plan, [], "Recovered session")

    def _update_title(self, *_) -> None:
        dirty = "" if self.doc.undo_stack.isClean() else " *"
        self.setWindowTitle(f"verl-wizard {__version__} — plan a verl 0.9.1 run{dirty}")

    def done(self, result: int) -> None:  # noqa: D401 - Qt's name: the wizard closed cleanly
        clear_session()
        super().done(result)

    def closeEvent(self, event) -> None:  # noqa: N802
        clear_session()
        super().closeEvent(event)


def save_screenshots(window: WizardWindow, folder: str) -> list[str]:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    names = ["1-start", "2-review", "3-write"]
    window.show()
    app = QApplication.instance()
    for i, name in enumerate(names):
        if i:
            window.next()
        app.processEvents()
        path = out / f"{name}.png"
        window.grab().save(str(path))
        paths.append(str(path))
    return paths


def main(argv: list[str]) -> int:
    if "--screenshots" in argv:
        idx = argv.index("--screenshots")
        if idx + 1 >= len(argv):
            print("verl-wizard: error: --screenshots needs a folder", file=sys.stderr)
            return 2
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QApplication.instance() or QApplication(["verl-wizard"])
        window = WizardWindow(restore=False)
        for path in save_screenshots(window, argv[idx + 1]):
            print(f"wrote {path}")
        window.close()
        return 0
    app = QApplication.instance() or QApplication(["verl-wizard"])
    app.setApplicationName("verl-wizard")
    window = WizardWindow()
    window.show()
    return app.exec()
