"""The findings panel: grouped by stage, worst first, each with its fix."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTreeWidget, QTreeWidgetItem, QVBoxLayout, QWidget

from wizard.core.findings import STAGE_ORDER, STAGE_TITLES, Finding, Severity, Stage
SEVERITY_TEXT = {Severity.ERROR: "Error", Severity.WARNING: "Warning", Severity.INFO: "Note"}


class FindingsView(QWidget):
    fix_requested = Signal(object)  # Finding
    go_requested = Signal(list)  # the keys of the finding the user wants to see

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.summary = QLabel()
        self.summary.setObjectName("findingsSummary")
        self.tree = QTreeWidget()
        self.tree.setHeaderLabels(["Finding", "Fix"])
        self.tree.setColumnWidth(0, 520)
        self.tree.setWordWrap(True)
        self.tree.setAccessibleName("Findings")
        self.fix_button = QPushButton("&Apply fix")
        self.fix_button.setToolTip("Apply the selected finding's fix to the plan")
        self.fix_button.setEnabled(False)
        self.fix_button.clicked.connect(self._apply_selected)
        self.go_button = QPushButton("&Show the field")
        self.go_button.setToolTip("Go to the step and field this finding is about (or double-click it)")
        self.go_button.setEnabled(False)
        self.go_button.clicked.connect(self._go_selected)
        self.tree.itemActivated.connect(lambda *_: self._go_selected())
        self.tree.currentItemChanged.connect(self._selection_changed)
        self.details = QLabel()
        self.details.setObjectName("findingDetails")
        self.details.setWordWrap(True)
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        row = QHBoxLayout()
        row.addWidget(self.summary, 1)
        row.addWidget(self.go_button)
        row.addWidget(self.fix_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addLayout(row)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.details)
        self._findings: list[Finding] = []

    def set_findings(self, findings: list[Finding]) -> None:
        self._findings = list(findings)
        self.tree.clear()
        errors = sum(1 for f in findings if f.severity is Severity.ERROR)
        warnings = sum(1 for f in findings if f.severity is Severity.WARNING)
        if errors:
            self.summary.setText(f"<b>{errors} error{'s' if errors != 1 else ''}</b> to fix before running"
                                 + (f"; {warnings} warning{'s' if warnings != 1 else ''}" if warnings else ""))
        elif findings:
            self.summary.setText(f"No errors; {len(findings)} thing{'s' if len(findings) != 1 else ''} worth a look")
        else:
            self.summary.setText("No findings: verl 0.9.1 accepts this config and no late mistake is known")
        by_stage: dict[Stage, list[Finding]] = {}
        for f in findings:
            by_stage.setdefault(f.stage, []).append(f)
        for stage in sorted(by_stage, key=STAGE_ORDER.__getitem__):
            group = QTreeWidgetItem([f"{STAGE_TITLES[stage]}  ({len(by_stage[stage])})", ""])
            group.setFlags(group.flags() & ~Qt.ItemIsSelectable)
            self.tree.addTopLevelItem(group)
            for f in sorted(by_stage[stage], key=lambda x: list(Severity).index(x.severity)):
                item = QTreeWidgetItem([f"{SEVERITY_TEXT[f.severity]}: {f.message}", f.fix or ""])
                item.setToolTip(0, f"{f.rule}\nkeys: {', '.join(f.keys)}\n\n{f.message}")
                item.setToolTip(1, f.fix or "")
                item.setData(0, Qt.UserRole, f)
                group.addChild(item)
            group.setExpanded(True)
        self.fix_button.setEnabled(False)
        self.details.clear()
        first = self.tree.topLevelItem(0)
        if first is not None and first.childCount():
            self.tree.setCurrentItem(first.child(0))  # the worst problem, explained below the list

    def _selected(self) -> Finding | None:
        item = self.tree.currentItem()
        return item.data(0, Qt.UserRole) if item is not None else None

    def _selection_changed(self, *_):
        finding = self._selected()
        self.fix_button.setEnabled(bool(finding and finding.fix_overrides))
        self.go_button.setEnabled(bool(finding and finding.keys))
        if finding is None:
            self.details.clear()
            return
        text = f"<b>{SEVERITY_TEXT[finding.severity]}</b> ({finding.rule}): {_html(finding.message)}"
        if finding.fix:
            text += f"<br><b>Fix:</b> {_html(finding.fix)}"
        self.details.setText(text)

    def _apply_selected(self) -> None:
        finding = self._selected()
        if finding is not None and finding.fix_overrides:
            self.fix_requested.emit(finding)

    def _go_selected(self) -> None:
        finding = self._selected()
        if finding is not None and finding.keys:
            self.go_requested.emit(field_order(finding))

    def _items(self) -> list[QTreeWidgetItem]:
        return [self.tree.topLevelItem(i).child(j) for i in range(self.tree.topLevelItemCount())
                for j in range(self.tree.topLevelItem(i).childCount())]

    def select_next(self) -> None:
        """F8: the next finding, wrapping round; the list gets the focus so Enter shows its field."""
        items = self._items()
        if not items:
            return
        current = self.tree.currentItem()
        index = items.index(current) + 1 if current in items else 0
        self.tree.setCurrentItem(items[index % len(items)])
        self.tree.setFocus(Qt.ShortcutFocusReason)

    def select_first_fixable(self) -> bool:
        for i in range(self.tree.topLevelItemCount()):
            group = self.tree.topLevelItem(i)
            for j in range(group.childCount()):
                item = group.child(j)
                if item.data(0, Qt.UserRole).fix_overrides:
                    self.tree.setCurrentItem(item)
                    return True
        return False


def field_order(finding: Finding) -> list[str]:
    """The finding's keys, the one its fix changes first: that is the field the user should see."""
    fixed = [o.split("=", 1)[0].lstrip("+~") for o in finding.fix_overrides]
    return sorted(finding.keys, key=lambda k: (k.lstrip("+~") not in fixed, finding.keys.index(k)))


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
