""""Move role to pool…": the keyboard way to do what a drag does, with the same verdict before OK."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtWidgets import QComboBox, QDialog, QDialogButtonBox, QFormLayout, QLabel, QWidget

from wizard.core.placement import BoardMove, role_title, target_title


class MoveDialog(QDialog):
    """Pick a role and a pool; the verdict (and the keys it sets) shows before OK, which is off when refused."""

    def __init__(self, roles: list[tuple[str, str]], targets: list[str], propose: Callable[[str, str], BoardMove],
                 role: str | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Move role to pool")
        self.setAccessibleName("Move role to pool")
        self.propose = propose
        self.role = QComboBox()
        self.role.setAccessibleName("Role")
        for r, pool in roles:
            self.role.addItem(f"{role_title(r)} (now on {pool})", r)
        if role is not None and self.role.findData(role) >= 0:
            self.role.setCurrentIndex(self.role.findData(role))
        self.target = QComboBox()
        self.target.setAccessibleName("Pool")
        for t in targets:
            self.target.addItem(target_title(t), t)
        self.verdict = QLabel()
        self.verdict.setWordWrap(True)
        self.verdict.setAccessibleName("Verdict")
        self.buttons = QDialogButtonBox(QDialogButtonBox.Ok | QDialogButtonBox.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        form = QFormLayout(self)
        form.addRow("&Role:", self.role)
        form.addRow("&Pool:", self.target)
        form.addRow(self.verdict)
        form.addRow(self.buttons)
        self.role.currentIndexChanged.connect(self._update)
        self.target.currentIndexChanged.connect(self._update)
        self.move: BoardMove | None = None
        self._update()

    def _update(self) -> None:
        role, target = self.role.currentData(), self.target.currentData()
        self.move = self.propose(role, target) if role and target else None
        ok = self.move is not None and self.move.ok
        if self.move is None:
            self.verdict.setText("")
        elif ok:
            keys = ", ".join(self.move.verdict.overrides) or "no key changes"
            self.verdict.setText(f"Allowed: {self.move.verdict.reason}. Sets {keys}")
        else:
            self.verdict.setText(f"Refused: {self.move.verdict.reason}")
        self.buttons.button(QDialogButtonBox.Ok).setEnabled(ok)
