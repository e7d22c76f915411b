"""The desktop wizard window and ``verl-wizard`` with no arguments."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication, QWizard

from wizard import __version__
from wizard.gui.document import PlanDocument
from wizard.gui.pages import ReviewPage, StartPage, WritePage


class WizardWindow(QWizard):
    def __init__(self) -> None:
        super().__init__()
        self.setWindowTitle(f"verl-wizard {__version__} — plan a verl 0.9.1 run")
        self.setWizardStyle(QWizard.ModernStyle)
        self.setOption(QWizard.NoBackButtonOnStartPage, True)
        self.doc = PlanDocument(self)
        self.start_page = StartPage(self.doc)
        self.review_page = ReviewPage(self.doc)
        self.write_page = WritePage(self.doc)
        for page in (self.start_page, self.review_page, self.write_page):
            self.addPage(page)
        self.review_page.refresh()
        self.resize(980, 720)


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
        window = WizardWindow()
        for path in save_screenshots(window, argv[idx + 1]):
            print(f"wrote {path}")
        window.close()
        return 0
    app = QApplication.instance() or QApplication(["verl-wizard"])
    app.setApplicationName("verl-wizard")
    window = WizardWindow()
    window.show()
    return app.exec()
