"""The Write step: run.sh, config.yaml and plan.json into a folder (files already there kept as .bak), and the
same plan as cluster launch files (``wizard.gui.widgets.cluster_box``)."""

from __future__ import annotations

from html import escape as _html
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout

from wizard.adapters.files.disk import WriteError
from wizard.core.plan import RUN_SH
from wizard.usecases.writing import write_plan_files
from wizard.gui.document import PlanDocument
from wizard.gui.steps import texts
from wizard.gui.theme import canvas_colours
from wizard.gui.widgets.page import Page
from wizard.gui.wording import window_text


class WritePage(Page):
    step, title, subtitle = texts("write")

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.folder = QLineEdit(str(Path.cwd() / "verl-run"))
        self.folder.setAccessibleName("Output folder")
        browse = QPushButton("&Browse…")
        browse.clicked.connect(self._browse)
        self.write_button = QPushButton("&Write")
        self.write_button.setDefault(True)
        self.write_button.clicked.connect(self.write)
        # shown while the plan has errors: writing is held back until they are fixed or the user insists
        self.anyway = QPushButton("Write &anyway")
        self.anyway.setToolTip("Write the files although verl would stop on the errors listed")
        self.anyway.clicked.connect(lambda: self.write(force=True))
        self.anyway.hide()
        doc.changed.connect(self._plan_changed)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setObjectName("writeStatus")
        self.status.setTextInteractionFlags(Qt.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(self.folder, 1)
        row.addWidget(browse)
        layout = QVBoxLayout(self)
        layout.addWidget(QLabel("&Folder:", buddy=self.folder))
        layout.addLayout(row)
        buttons = QHBoxLayout()
        buttons.addWidget(self.write_button)
        buttons.addWidget(self.anyway)
        buttons.addStretch(1)
        layout.addLayout(buttons)
        layout.addWidget(self.status)
        from wizard.gui.widgets.cluster_box import ClusterBox

        self.cluster = ClusterBox(doc, self.folder)
        layout.addWidget(self.cluster)
        layout.addStretch(1)

    def _plan_changed(self) -> None:
        """An edit asks again: the refusal (and its Write anyway) was about the plan before it."""
        if self.anyway.isVisibleTo(self):
            self.anyway.hide()
            self.status.setText("")

    def _browse(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Write the files into", self.folder.text())
        if path:
            self.folder.setText(path)

    def write(self, force: bool = False) -> bool:
        """Write the plan's files; while it has errors only when ``force`` (Write anyway), as ``generate --force``."""
        folder = self.folder.text().strip()
        if not folder:
            self.status.setText("Choose a folder first.")
            return False
        red = canvas_colours().severity["error"]  # the theme's: a dark red is unreadable on the dark palette
        errors = self.doc.plan_errors
        if errors and not force:
            shown = "".join(f"<li>{_html(window_text(f.message))}</li>" for f in errors[:3])
            more = f"<br>and {len(errors) - 3} more in the Findings dock." if len(errors) > 3 else ""
            self.status.setText(f"<span style='color:{red}'>Not written: verl would stop on {len(errors)} "
                                f"error(s) of this plan:</span><ul>{shown}</ul>{more}Fix them (the Findings dock "
                                "below has a fix for most), or press Write anyway.")
            self.anyway.show()
            return False
        self.anyway.hide()
        try:
            written = write_plan_files(self.doc.plan, folder)
        except WriteError as exc:
            self.status.setText(f"<span style='color:{red}'>{_html(str(exc))}</span>")
            return False
        lines = [f"Wrote {_html(p)}" for p in written.files] + [f"Kept the previous file as {_html(p)}"
                                                                 for p in written.backups]
        lines += [f"Note: {_html(n)}" for n in written.notes]
        if errors:  # written anyway
            lines.append(f"<span style='color:{red}'>Written with {len(errors)} error(s) verl would stop on: fix them "
                         f"before starting bash {_html(str(Path(folder) / RUN_SH))}</span>")
        else:
            lines.append(f"Start it with: bash {_html(str(Path(folder) / RUN_SH))}")
        self.status.setText("<br>".join(lines))
        self.doc.undo_stack.setClean()
        self.complete_changed.emit()
        return True

    def is_complete(self) -> bool:
        return True  # the Run step works from the plan itself; writing the files is not required
