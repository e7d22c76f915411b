"""``verl-wizard`` with no arguments (the window) or ``--screenshots`` (every step rendered to PNG)."""

from __future__ import annotations


def main(argv: list[str]) -> int:
    if "--screenshots" in argv:
        from wizard.gui.screenshots import screenshots_main

        return screenshots_main(argv)
    from PySide6.QtWidgets import QApplication

    from wizard.adapters.files.session_store import load_prefs
    from wizard.gui.app import WizardWindow
    from wizard.gui.gc_guard import collect_on_the_gui_thread
    from wizard.gui.theme import apply_theme

    app = QApplication.instance() or QApplication(["verl-wizard"])
    collect_on_the_gui_thread(app)
    app.setApplicationName("verl-wizard")
    apply_theme(app, load_prefs().get("theme", "system"))
    window = WizardWindow(progressive=True)
    window.show()
    return app.exec()
