"""The desktop window and ``verl-wizard`` with no arguments.

A wizard-like main window rather than a QWizard: the steps are listed on the left (any step
can be visited, each marked by what the findings say about its fields), the findings panel
is always visible at the bottom, and Back/Next walk the steps in order.

``verl-wizard`` opens progressively (``WizardWindow(progressive=True)``, see ``loading.py``): the
Start step is usable at once while the checker loads on a worker thread; tests and ``--screenshots``
build everything before the constructor returns.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QActionGroup, QKeySequence
from PySide6.QtWidgets import (
    QApplication,
    QDockWidget,
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
from wizard.adapters.files.session_store import (
    clear_session,
    load_prefs,
    load_session,
    save_prefs,
)
from wizard.gui import steps
from wizard.gui.loading import Placeholder, preload
from wizard.gui.plan_files import PlanFiles
from wizard.gui.theme import THEMES, apply_theme
from wizard.gui.widgets.page import Page
from wizard.gui.workers import Worker

if TYPE_CHECKING:
    from wizard.gui.document import PlanDocument
    from wizard.gui.steps.start import StartPage

TITLE = f"verl-wizard {__version__} — plan a verl 0.9.1 run"
MARK = {"error": "✖", "warning": "⚠"}
FINDINGS_HEIGHT = 250  # the dock while the checker loads; then room for FindingsView.ROWS findings


class WizardWindow(PlanFiles, QMainWindow):
    loaded = Signal()  # the plan document and every page exist (at once unless progressive)

    def __init__(self, restore: bool | None = None, progressive: bool = False) -> None:
        """``restore``: take back an unsaved session (None: ask, when one is there).

        ``progressive``: show the Start step at once and load the rest (the checker, the other steps)
        on a worker thread; a choice made meanwhile is kept. Otherwise everything is ready on return."""
        super().__init__()
        self.setWindowTitle(TITLE)
        self.doc: PlanDocument | None = None
        first, *rest = steps.STEPS
        self.start_page: StartPage = first.load()()  # Start comes first: built at once, before the plan document
        self.pages: list[Page] = [self.start_page] + [Placeholder(step) for step in rest]
        self._build()
        self._menus()
        self.start_page.opened.connect(self._opened)
        self.start_page.needs_document.connect(self.finish_loading)
        self.go_to(0)
        self.resize(1180, 820)
        self._previous = load_session()
        self._restore: bool | None = restore if self._previous else False
        self._loader: Worker | None = None
        self._closed = False
        self.load_error: str | None = None
        self._asking = False  # the recovery question is open
        if not progressive:
            self.finish_loading()
            return
        QTimer.singleShot(0, self._start_loading)  # once the window had its first turn of the event loop
        if self._restore is None:
            QTimer.singleShot(0, self._ask_restore)  # over the shown window, while the loader works

    @property
    def is_loaded(self) -> bool:
        return self.doc is not None

    def _start_loading(self) -> None:
        if self.doc is None and not self._closed:
            self._loader = Worker(self)
            self._loader.finished.connect(self._preload_done)
            self._loader.failed.connect(self._preload_done)  # the steps, built on this thread, will say why
            self._loader.start("load the checker", preload, self.start_page.presets.currentItem().data(Qt.UserRole))

    def _preload_done(self, *_) -> None:
        if self._restore is not None and not self._closed:
            self.finish_loading()

    def _ask_restore(self) -> None:
        if self._closed or self._restore is not None or self._asking:  # closed, or asked elsewhere
            return
        self._answered(self._ask())
        if self.doc is None and self._loader is not None and self._loader.ended:
            self.finish_loading()

    def _ask(self) -> bool:
        self._asking = True  # the question's own event loop may run the loader's answer or a timer
        try:
            return self._want_restore(self._previous, None)
        finally:
            self._asking = False

    def _answered(self, restore: bool) -> None:
        self._restore = restore
        if self.doc is not None and restore and self._previous:  # the steps were built while it was asked
            self._restore_session(self._previous, self.start_page.chosen_while_loading)

    def finish_loading(self) -> bool:
        """Build the plan document and every step (waiting for the loader, if one runs). Idempotent.

        False when they could not be built (a broken install): the window said why, once."""
        if self.doc is not None:
            return True
        if self.load_error is not None:
            return False
        if self._loader is not None and not self._loader.ended:
            self._loader.wait()
        if self._restore is None and not self._asking:
            self._answered(self._ask())
            if self.doc is not None or self.load_error is not None:  # done while the question was open
                return self.doc is not None
        try:
            self._build_steps()
        except Exception as exc:  # noqa: BLE001 - shown in one line, never a traceback in a dialog
            if self.doc is not None:
                self.doc.autosave = False
                self.doc.deleteLater()
            self.doc = self.start_page.doc = None
            self.load_error = (f"{type(exc).__name__}: {exc}".splitlines() or ["unknown error"])[0]
            for page in self.pages[1:]:
                if isinstance(page, Placeholder):
                    page.failed(self.load_error)
            self.report_load_error(self.load_error)
            return False
        return True

    def report_load_error(self, reason: str) -> None:
        """Say once why the steps could not load (tests replace this)."""
        QMessageBox.critical(self, "verl-wizard could not load its checker",
                             f"{reason}\n\nReinstall verl-wizard (make setup, or pip install -e .) and start again.")

    def _build_steps(self) -> None:
        from wizard.gui.document import PlanDocument
        from wizard.gui.widgets.findings_view import FindingsView

        self.doc = doc = PlanDocument(self)
        pages = [self.start_page] + [step.load()(doc) for step in steps.STEPS[1:]]
        assert [p.step for p in pages] == [s.name for s in steps.STEPS]
        by_key = {step.key: page for step, page in zip(steps.STEPS, pages)}
        for page in pages:
            page.wire(by_key)
        self.start_page.attach(doc)  # the first check: what fails here leaves the placeholders in place
        doc.undo_stack.clear()  # the default preset is where the user starts, not an edit
        if self._restore and self._previous:
            self._restore_session(self._previous, self.start_page.chosen_while_loading)
        current = self.steps.currentRow()
        for i, page in enumerate(pages[1:], start=1):
            placeholder = self.stack.widget(i)
            self.stack.removeWidget(placeholder)
            self.stack.insertWidget(i, page)
            placeholder.deleteLater()
        self.pages = pages
        self.findings = FindingsView(header_inside=False)
        self.findings.fix_requested.connect(doc.apply_fix)
        self.findings.advice_requested.connect(self.open_advice)
        self.findings.go_requested.connect(self.go_to_keys)
        self.findings.environment_requested.connect(lambda: self.go_to(self.page("environment")))
        self.findings_dock.widget().deleteLater()
        self.findings_dock.setTitleBarWidget(self.findings.header)  # the counts and buttons: the list gets the room
        self.findings_dock.setWidget(self.findings)
        undo = doc.undo_stack.createUndoAction(self, "&Undo")
        undo.setShortcuts([QKeySequence.Undo])
        redo = doc.undo_stack.createRedoAction(self, "&Redo")
        redo.setShortcuts([QKeySequence.Redo, QKeySequence("Ctrl+Shift+Z")])
        self.edit_menu.addAction(undo)
        self.edit_menu.addAction(redo)
        doc.changed.connect(self._refresh)
        doc.undo_stack.cleanChanged.connect(self._update_title)
        doc.undo_stack.indexChanged.connect(self._update_title)
        for page in self.pages:
            page.complete_changed.connect(self._update_nav)
        self._step_chosen(current)  # the step shown while loading now has its page
        self._refresh()
        self._size_findings()
        self._update_title()
        self.loaded.emit()

    # -- layout -------------------------------------------------------------------------------
    def _build(self) -> None:
        self.steps = QListWidget()
        self.steps.setObjectName("steps")
        self.steps.setAccessibleName("Steps")
        self.steps.setMaximumWidth(185)
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

        self.findings = None
        self.findings_dock = QDockWidget("Findings", self)
        self.findings_dock.setObjectName("findingsDock")
        self.findings_dock.setFeatures(QDockWidget.DockWidgetMovable | QDockWidget.DockWidgetFloatable)
        loading = QLabel("Loading verl 0.9.1's config to check the plan…", objectName="loading")
        loading.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        loading.setContentsMargins(6, 6, 6, 6)
        self.findings_dock.setWidget(loading)
        self.addDockWidget(Qt.BottomDockWidgetArea, self.findings_dock)
        self.resizeDocks([self.findings_dock], [FINDINGS_HEIGHT], Qt.Vertical)
        self.status = self.statusBar()

    def _size_findings(self) -> None:
        """Give the findings dock room for ``ROWS`` findings (the user may drag its edge either way)."""
        title = self.findings.header.sizeHint().height()
        self.resizeDocks([self.findings_dock], [title + self.findings.preferred_height()], Qt.Vertical)

    def _menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self._action(file_menu, "&New from a preset…", QKeySequence.New, lambda: self.go_to(0))
        self._action(file_menu, "&Open a plan, verl script or YAML…", QKeySequence.Open, self.open_dialog)
        self.recent_menu = file_menu.addMenu("Open &recent")
        self._action(file_menu, "&Save plan", QKeySequence.Save, self.save)
        self._action(file_menu, "Save plan &as…", QKeySequence.SaveAs, self.save_as)
        self._action(file_menu, "&Write run.sh and config.yaml…", "Ctrl+Shift+W",
                     lambda: self.go_to(steps.index("write")))
        file_menu.addSeparator()
        self._action(file_menu, "&Quit", QKeySequence.Quit, self.close)
        self.edit_menu = bar.addMenu("&Edit")  # Undo and Redo come with the plan document
        go = bar.addMenu("&Go")
        for i, step in enumerate(steps.STEPS):
            self._action(go, f"&{i + 1 if i < 9 else chr(ord('A') + i - 9)} {step.name}",
                         f"Alt+{i + 1}" if i < 9 else None, lambda _=False, n=i: self.go_to(n))
        go.addSeparator()
        self._action(go, "Next &finding", "F8", lambda: self.findings and self.findings.select_next())
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

    def page(self, key: str) -> Page:
        """The page of the step ``key`` of ``wizard.gui.steps.STEPS`` (a Placeholder while it loads)."""
        return self.pages[steps.index(key)]

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
        self.nav_hint.setText("" if complete else page.incomplete_hint)

    def open_advice(self) -> None:
        """Make it fit: the advisor's alternatives for the plan (searched on a worker; Apply is one undo step)."""
        from wizard.gui.widgets.advice_dialog import AdviceDialog

        self.advice_dialog = AdviceDialog(self.doc, self)
        self.advice_dialog.open()

    def go_to_keys(self, keys: list[str]) -> bool:
        """Show the field of the first key some step has; else the key's line in run.sh."""
        for key in keys:
            for page in self.pages:
                if key.lstrip("+~") in page.keys():
                    self.go_to(page)
                    page.focus_key(key)
                    return True
        if keys:
            review = self.page("review")
            self.go_to(review)
            return review.show_key(keys[0])
        return False

    # -- document -----------------------------------------------------------------------------
    def _refresh(self) -> None:
        from wizard.core.findings import about_environment  # with the checker, not before the Start step shows

        findings = self.doc.findings
        self.findings.set_findings(findings)
        worst: dict[int, str] = {}
        environment = steps.index("environment")
        for f in findings:
            # an environment finding is the Environment step's, whatever verl key it names (about_environment)
            where = [environment] if about_environment(f) else [
                i for i, page in enumerate(self.pages) if any(k.lstrip("+~") in page.keys() for k in f.keys)]
            for i in where:
                if worst.get(i) != "error":
                    worst[i] = f.severity.value if f.severity.value in MARK else worst.get(i)
        for i, page in enumerate(self.pages):
            mark = MARK.get(worst.get(i))
            item = self.steps.item(i)
            item.setText(f"{i + 1}. {page.step}" + (f"  {mark}" if mark else ""))
            item.setToolTip({"✖": "A field on this step has an error", "⚠": "A field on this step has a warning"}
                            .get(mark, "") if i != environment else
                            {"✖": "The environment has an error", "⚠": "The environment has a warning"}.get(mark, ""))
        self._update_nav()

    def _update_title(self, *_) -> None:
        dirty = "" if self.doc.undo_stack.isClean() else " *"
        name = f" — {Path(self.doc.path).name}" if self.doc.path else ""
        self.setWindowTitle(f"{TITLE}{name}{dirty}")

    def set_theme(self, name: str) -> None:
        applied = apply_theme(QApplication.instance(), name)
        prefs = load_prefs()
        prefs["theme"] = applied
        save_prefs(prefs)

    def closeEvent(self, event) -> None:  # noqa: N802 - Qt's name
        if self.doc is None:  # closed while loading: no edit yet
            self._closed = True
            if self._restore is False and self._previous:
                clear_session()  # the user said no to the recovery offer: not asked again
            super().closeEvent(event)
            return
        if not self.doc.undo_stack.isClean():
            choice = self.ask_save()
            if choice == "cancel" or (choice == "save" and not self.save()):
                event.ignore()
                return
        clear_session()  # closed on purpose: nothing to offer back next time
        super().closeEvent(event)
