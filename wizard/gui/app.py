"""The desktop window and ``verl-wizard`` with no arguments.

A wizard-like main window rather than a QWizard: the steps are listed on the left (any step
can be visited, each marked by what the findings say about its fields), the findings panel
is always visible at the bottom, and Back/Next walk the steps in order.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QMainWindow,
    QMessageBox,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from wizard import __version__
from wizard.adapters.files import WriteError
from wizard.adapters.session_store import (
    add_recent,
    clear_session,
    load_prefs,
    load_session,
    recent_files,
    save_plan_file,
    save_prefs,
)
from wizard.core.findings import Severity
from wizard.core.gpus import parse_gpu_spec
from wizard.core.plan import load_plan
from wizard.gui.canvas_pages import DataflowPage, PlacementPage, RunPage
from wizard.gui.document import PlanDocument
from wizard.gui.env_pages import EnvironmentPage, HardwarePage
from wizard.gui.findings_view import FindingsView
from wizard.gui.form_pages import AlgorithmPage, DataPage, ModelPage, RolloutPage
from wizard.gui.page import Page
from wizard.gui.pages import ReviewPage, StartPage, WritePage
from wizard.gui.theme import THEMES, apply_theme

TITLE = f"verl-wizard {__version__} — plan a verl 0.9.1 run"
MARK = {Severity.ERROR: "✖", Severity.WARNING: "⚠"}


class WizardWindow(QMainWindow):
    def __init__(self, restore: bool | None = None) -> None:
        """``restore``: take back an unsaved session (None: ask, when one is there)."""
        super().__init__()
        previous = load_session()
        self.setWindowTitle(TITLE)
        self.doc = PlanDocument(self)
        self.start_page = StartPage(self.doc)
        self.environment_page = EnvironmentPage(self.doc)
        self.hardware_page = HardwarePage(self.doc)
        self.model_page = ModelPage(self.doc)
        self.data_page = DataPage(self.doc)
        self.algorithm_page = AlgorithmPage(self.doc)
        self.rollout_page = RolloutPage(self.doc)
        self.dataflow_page = DataflowPage(self.doc)
        self.placement_page = PlacementPage(self.doc)
        self.run_page = RunPage(self.doc)
        self.review_page = ReviewPage(self.doc)
        self.write_page = WritePage(self.doc)
        self.pages: list[Page] = [
            self.start_page, self.environment_page, self.hardware_page, self.model_page, self.data_page,
            self.algorithm_page, self.rollout_page, self.dataflow_page, self.placement_page, self.review_page,
            self.write_page, self.run_page,
        ]
        self.data_page.target_python = lambda: self.environment_page.python.text().strip()
        self.environment_page.python_checked.connect(self.run_page.set_target_python)
        self._build()
        self._menus()
        self.doc.changed.connect(self._refresh)
        self.doc.undo_stack.cleanChanged.connect(self._update_title)
        self.doc.undo_stack.indexChanged.connect(self._update_title)
        self.start_page.opened.connect(self._opened)
        for page in self.pages:
            page.complete_changed.connect(self._update_nav)
        self.doc.undo_stack.clear()  # the default preset is where the user starts, not an edit
        if previous and self._want_restore(previous, restore):
            self._restore_session(previous)
        self.go_to(0)
        self._refresh()
        self.resize(1180, 820)

    # -- layout -------------------------------------------------------------------------------
    def _build(self) -> None:
        self.steps = QListWidget()
        self.steps.setObjectName("steps")
        self.steps.setAccessibleName("Steps")
        self.steps.setMaximumWidth(210)
        self.stack = QStackedWidget()
        for i, page in enumerate(self.pages):
            self.steps.addItem(QListWidgetItem(f"{i + 1}. {page.step}"))
            self.stack.addWidget(page)
        self.steps.currentRowChanged.connect(self._step_chosen)
        self.page_title = QLabel()
        self.page_title.setObjectName("pageTitle")
        font = self.page_title.font()
        font.setPointSizeF(font.pointSizeF() * 1.45)
        font.setBold(True)
        self.page_title.setFont(font)
        self.page_subtitle = QLabel()
        self.page_subtitle.setWordWrap(True)
        self.back_button = QPushButton("< &Back")
        self.next_button = QPushButton("&Next >")
        self.next_button.setDefault(True)
        self.back_button.clicked.connect(self.back)
        self.next_button.clicked.connect(self.next)
        self.nav_hint = QLabel()
        self.nav_hint.setObjectName("navHint")
        nav = QHBoxLayout()
        nav.addWidget(self.nav_hint, 1)
        nav.addWidget(self.back_button)
        nav.addWidget(self.next_button)
        centre = QWidget()
        column = QVBoxLayout(centre)
        column.addWidget(self.page_title)
        column.addWidget(self.page_subtitle)
        column.addWidget(self.stack, 1)
        column.addLayout(nav)
        body = QWidget()
        row = QHBoxLayout(body)
        row.addWidget(self.steps)
        row.addWidget(centre, 1)
        self.setCentralWidget(body)

        self.findings = FindingsView()
        self.findings.fix_requested.connect(self.doc.apply_fix)
        self.findings.go_requested.connect(self.go_to_keys)
        self.findings_dock = QDockWidget("Findings", self)
        self.findings_dock.setObjectName("findingsDock")
        self.findings_dock.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable)
        self.findings_dock.setWidget(self.findings)
        self.addDockWidget(Qt.BottomDockWidgetArea, self.findings_dock)
        self.resizeDocks([self.findings_dock], [170], Qt.Vertical)
        self.status = self.statusBar()

    def _menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&New from a preset…", QKeySequence.New, lambda: self.go_to(0))
        self._action(file_menu, "&Open a plan, verl script or YAML…", QKeySequence.Open, self.open_dialog)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self._action(file_menu, "&Save plan", QKeySequence.Save, self.save)
        self._action(file_menu, "Save plan &as…", QKeySequence.SaveAs, self.save_as)
        self._action(file_menu, "&Write run.sh and config.yaml…", "Ctrl+Shift+W", lambda: self.go_to(self.write_page))
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.Quit, self.close)
        edit = bar.addMenu("&Edit")
        undo = self.doc.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcuts([QKeySequence.Undo])
        redo = self.doc.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence.Redo, QKeySequence("Ctrl+Shift+Z")])
        edit.addAction(undo)
        edit.addAction(redo)
        go = bar.addMenu("&Go")
        for i, page in enumerate(self.pages):
            self._action(go, f"&{i + 1 if i < 9 else chr(ord('A') + i - 9)} {page.step}",
                         f"Alt+{i + 1}" if i < 9 else None, lambda _=False, p=page: self.go_to(p))
        go.addSeparator()
        self._action(go, "Next &finding", "F8", self.findings.select_next)
        view = bar.addMenu("&View")
        view.addAction(self.findings_dock.toggleViewAction())
        theme_menu = view.addMenu("&Theme")
        group = QActionGroup(self)
        current = load_prefs().get("theme", "system")
        for name in THEMES:
            action = QAction(name.capitalize(), self, checkable=True, checked=name == current)
            action.triggered.connect(lambda _=False, n=name: self.set_theme(n))
            group.addAction(action)
            theme_menu.addAction(action)
        help_menu = bar.addMenu("&Help")
        self._action(help_menu, "&About verl-wizard", None, lambda: QMessageBox.about(
            self, "verl-wizard", f"verl-wizard {__version__}: plans, checks and launches verl 0.9.1 runs."))
        self._fill_recent()

    def _action(self, menu, text, shortcut, slot) -> QAction:
        action = QAction(text, self)
        if shortcut is not None:
            action.setShortcut(QKeySequence(shortcut))
        action.triggered.connect(slot)
        menu.addAction(action)
        return action

    # -- navigation ---------------------------------------------------------------------------
    def current_page(self) -> Page:
        return self.stack.currentWidget()

    def go_to(self, page: Page | int) -> None:
        index = page if isinstance(page, int) else self.pages.index(page)
        self.steps.setCurrentRow(index)

    def _step_chosen(self, index: int) -> None:
        if index < 0:
            return
        self.stack.setCurrentIndex(index)
        page = self.pages[index]
        self.page_title.setText(page.title)
        self.page_subtitle.setText(page.subtitle)
        page.entered()
        self._update_nav()

    def next(self) -> None:
        index = self.stack.currentIndex()
        if index + 1 < len(self.pages) and self.current_page().is_complete():
            self.go_to(index + 1)

    def back(self) -> None:
        index = self.stack.currentIndex()
        if index > 0:
            self.go_to(index - 1)

    def _update_nav(self) -> None:
        index = self.stack.currentIndex()
        page = self.current_page()
        self.back_button.setEnabled(index > 0)
        complete = page.is_complete()
        self.next_button.setEnabled(index + 1 < len(self.pages) and complete)
        self.nav_hint.setText("" if complete or page is not self.review_page
                              else "Fix the errors below to go on to writing the files.")

    def go_to_keys(self, keys: list[str]) -> bool:
        """Show the field of the first key some step has; else the key's line in run.sh."""
        for key in keys:
            for page in self.pages:
                if key.lstrip("+~") in page.keys():
                    self.go_to(page)
                    page.focus_key(key)
                    return True
        if keys:
            self.go_to(self.review_page)
            return self.review_page.show_key(keys[0])
        return False

    # -- document -----------------------------------------------------------------------------
    def _refresh(self) -> None:
        findings = self.doc.findings
        self.findings.set_findings(findings)
        worst: dict[int, Severity] = {}
        for f in findings:
            for i, page in enumerate(self.pages):
                if any(k.lstrip("+~") in page.keys() for k in f.keys):
                    if worst.get(i) is not Severity.ERROR:
                        worst[i] = f.severity if f.severity in MARK else worst.get(i)
        for i, page in enumerate(self.pages):
            mark = MARK.get(worst.get(i))
            item = self.steps.item(i)
            item.setText(f"{i + 1}. {page.step}" + (f"  {mark}" if mark else ""))
            item.setToolTip({"✖": "A field on this step has an error", "⚠": "A field on this step has a warning"}
                            .get(mark, ""))
        self._update_nav()

    def _update_title(self, *_) -> None:
        dirty = "" if self.doc.undo_stack.isClean() else " *"
        name = f" — {Path(self.doc.path).name}" if self.doc.path else ""
        self.setWindowTitle(f"{TITLE}{name}{dirty}")

    def open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a plan, a verl launch script or a YAML config",
                                              str(Path.home()), "Plans and verl configs (*.json *.sh *.yaml *.yml)")
        if path:
            self.open_file(path)

    def open_file(self, path: str) -> bool:
        self.go_to(self.start_page)
        return self.start_page.import_file(path)

    def _opened(self, path: str) -> None:
        add_recent(path)
        self._fill_recent()
        self._update_title()

    def _fill_recent(self) -> None:
        self.recent_menu.clear()
        items = recent_files()
        for path in items:
            action = self.recent_menu.addAction(path)
            action.triggered.connect(lambda _=False, p=path: self.open_file(p))
        self.recent_menu.setEnabled(bool(items))

    def save(self) -> bool:
        if not self.doc.path:
            return self.save_as()
        return self.save_to(self.doc.path)

    def save_as(self) -> bool:
        start = self.doc.path or str(Path.cwd() / f"{self.doc.plan.name or 'plan'}.json")
        path, _ = QFileDialog.getSaveFileName(self, "Save the plan", start, "verl-wizard plan (*.json)")
        return self.save_to(path) if path else False

    def save_to(self, path: str) -> bool:
        try:
            backup = save_plan_file(self.doc.plan.model_dump(mode="json"), path)
        except WriteError as exc:
            QMessageBox.warning(self, "Cannot save the plan", str(exc))
            return False
        self.doc.path = path
        self.doc.undo_stack.setClean()
        add_recent(path)
        self._fill_recent()
        self._update_title()
        self.status.showMessage(f"Saved {path}" + (f" (previous file kept as {backup})" if backup else ""), 8000)
        return True

    def set_theme(self, name: str) -> None:
        applied = apply_theme(QApplication.instance(), name)
        prefs = load_prefs()
        prefs["theme"] = applied
        save_prefs(prefs)

    # -- session ------------------------------------------------------------------------------
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

    def ask_save(self) -> str:
        """'save', 'discard' or 'cancel' for unsaved edits at close (tests replace this)."""
        answer = QMessageBox.question(
            self, "Save the plan?", "The plan has changes that are not saved in a plan file. Save them?",
            QMessageBox.Save | QMessageBox.Discard | QMessageBox.Cancel, QMessageBox.Save)
        return {QMessageBox.Save: "save", QMessageBox.Discard: "discard"}.get(answer, "cancel")

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if not self.doc.undo_stack.isClean():
            choice = self.ask_save()
            if choice == "cancel" or (choice == "save" and not self.save()):
                event.ignore()
                return
        clear_session()  # closed on purpose: nothing to offer back next time
        super().closeEvent(event)


def save_screenshots(window: WizardWindow, folder: str) -> list[str]:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    window.resize(1440, 960)  # room for the canvases; the window opens at 1180x820 for people
    window.show()
    app = QApplication.instance()
    for i, page in enumerate(window.pages):
        window.go_to(i)
        app.processEvents()
        path = out / f"{i + 1:02d}-{page.step.lower().replace(' & ', '-').replace(' ', '-')}.png"
        window.grab().save(str(path))
        paths.append(str(path))
    return paths


def _preset_and_gpus(window: WizardWindow, argv: list[str]) -> None:
    """``--preset NAME`` and ``--gpus SPEC`` for screenshots of a given plan."""
    def value(flag: str) -> str | None:
        if flag not in argv:
            return None
        i = argv.index(flag)
        if i + 1 >= len(argv):
            raise ValueError(f"{flag} needs a value")
        return argv[i + 1]

    preset, gpus = value("--preset"), value("--gpus")
    if preset:
        from wizard.adapters.resources import preset_names

        if preset not in preset_names():
            raise ValueError(f"no preset {preset!r}; presets: {', '.join(preset_names())}")
        for i in range(window.start_page.presets.count()):
            if window.start_page.presets.item(i).data(Qt.UserRole) == preset:
                window.start_page.presets.setCurrentRow(i)
    if gpus:
        window.doc.set_gpus(parse_gpu_spec(gpus))
        window.start_page.gpus.setText(gpus)


def main(argv: list[str]) -> int:
    if "--screenshots" in argv:
        idx = argv.index("--screenshots")
        if idx + 1 >= len(argv):
            print("verl-wizard: error: --screenshots needs a folder", file=sys.stderr)
            return 2
        os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QApplication.instance() or QApplication(["verl-wizard"])
        if "--dark" in argv:
            apply_theme(app, "dark")
        window = WizardWindow(restore=False)
        try:
            _preset_and_gpus(window, argv)
        except ValueError as exc:
            print(f"verl-wizard: error: {exc}", file=sys.stderr)
            return 2
        for path in save_screenshots(window, argv[idx + 1]):
            print(f"wrote {path}")
        window.ask_save = lambda: "discard"
        window.close()
        return 0
    app = QApplication.instance() or QApplication(["verl-wizard"])
    app.setApplicationName("verl-wizard")
    apply_theme(app, load_prefs().get("theme", "system"))
    window = WizardWindow()
    window.show()
    return app.exec()
