"""The findings panel: one line per finding, errors first with the worst selected, the selected one in full beside
the list with its fix.

A line is the severity, when verl would meet the problem, and the message (cut at the list's width; the pane on
the right has it whole). The order is the core's (``sort_findings``: errors, then warnings, then notes), so the
first error is the first line and is selected and shown whenever the findings change. Findings about the probed
environment (``about_environment``) say so, lead to the Environment step and offer no plan fix.

``header`` (the title, the counts and the buttons) is a widget of its own: the window makes it the dock's title bar,
so the list gets the height.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from wizard.core.findings import STAGE_TITLES, Finding, Severity, Stage, about_environment, plan_fix, sort_findings
from wizard.gui.theme import ThemeFollower, canvas_colours
from wizard.gui.wording import window_finding

SEVERITY_TEXT = {Severity.ERROR: "Error", Severity.WARNING: "Warning", Severity.INFO: "Note"}
SEVERITY_MARK = {Severity.ERROR: "✖", Severity.WARNING: "⚠", Severity.INFO: "ℹ"}
WHEN = {Stage.COMPOSE: "at launch", Stage.PREFLIGHT: "pre-flight", Stage.STARTUP: "at startup",
        Stage.RUNTIME: "in training", Stage.ADVICE: "advice"}
ENVIRONMENT = "this machine"
ROWS = 8  # the list shows at least this many findings at the window's default size (1180 x 820)
SEVERITY_COL, WHEN_COL, MESSAGE_COL = range(3)


class FindingsView(QWidget):
    fix_requested = Signal(object)  # Finding
    go_requested = Signal(list)  # the keys of the finding the user wants to see
    environment_requested = Signal()  # an environment finding: show the Environment step
    advice_requested = Signal()  # a memory finding: the advisor's alternatives (Make it fit)

    def __init__(self, parent: QWidget | None = None, header_inside: bool = True) -> None:
        super().__init__(parent)
        self.summary = QLabel()
        self.summary.setObjectName("findingsSummary")
        self.go_button = QPushButton("&Show the field")
        self.go_button.setToolTip("Go to the step and field this finding is about (or double-click it)")
        self.go_button.setEnabled(False)
        self.go_button.clicked.connect(self._go_selected)
        self.fix_button = QPushButton("&Apply fix")
        self.fix_button.setToolTip("Apply the selected finding's fix to the plan")
        self.fix_button.setEnabled(False)
        self.fix_button.clicked.connect(self._apply_selected)
        self.header = self._header()
        self.tree = self._tree()
        self.details = QLabel()
        self.details.setObjectName("findingDetails")
        self.details.setWordWrap(True)
        self.details.setAlignment(Qt.AlignTop | Qt.AlignLeft)
        self.details.setTextInteractionFlags(Qt.TextSelectableByMouse)
        self.details.setContentsMargins(6, 4, 6, 4)
        pane = QScrollArea()
        pane.setWidgetResizable(True)
        pane.setFrameShape(QFrame.NoFrame)
        pane.setWidget(self.details)
        self.split = QSplitter(Qt.Horizontal)
        self.split.addWidget(self.tree)
        self.split.addWidget(pane)
        self.split.setStretchFactor(0, 3)
        self.split.setStretchFactor(1, 2)
        self.split.setSizes([640, 420])
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        if header_inside:
            layout.addWidget(self.header)
        layout.addWidget(self.split, 1)
        self._findings: list[Finding] = []
        ThemeFollower(self, lambda: self.set_findings(self._findings))

    def _header(self) -> QWidget:
        header = QWidget()
        header.setObjectName("findingsHeader")
        title = QLabel("<b>Findings</b>")
        row = QHBoxLayout(header)
        row.setContentsMargins(6, 2, 2, 2)
        row.addWidget(title)
        row.addWidget(self.summary, 1)
        row.addWidget(self.go_button)
        row.addWidget(self.fix_button)
        return header

    def _tree(self) -> QTreeWidget:
        tree = QTreeWidget()
        tree.setColumnCount(3)
        tree.setHeaderLabels(["Severity", "When", "Finding"])
        tree.setHeaderHidden(True)
        tree.setRootIsDecorated(False)
        tree.setUniformRowHeights(True)
        tree.setAlternatingRowColors(True)
        tree.setTextElideMode(Qt.ElideRight)
        tree.setSelectionMode(QAbstractItemView.SingleSelection)
        tree.setAccessibleName("Findings")
        head = tree.header()
        head.setStretchLastSection(True)
        head.setSectionResizeMode(SEVERITY_COL, QHeaderView.ResizeToContents)
        head.setSectionResizeMode(WHEN_COL, QHeaderView.ResizeToContents)
        tree.itemActivated.connect(lambda *_: self._go_selected())
        tree.currentItemChanged.connect(self._selection_changed)
        return tree

    # -- contents -----------------------------------------------------------------------------------------------
    def set_findings(self, findings: list[Finding]) -> None:
        self._findings = sort_findings(list(findings))
        self.tree.clear()
        self.summary.setText(summary_words(self._findings))
        colours = canvas_colours().severity
        for f in self._findings:
            self.tree.addTopLevelItem(_item(f, colours))
        self.fix_button.setEnabled(False)
        self.details.clear()
        first = self.tree.topLevelItem(0)
        if first is not None:
            self.tree.setCurrentItem(first)  # the worst problem, explained beside the list
            self.tree.scrollToItem(first, QAbstractItemView.PositionAtTop)
        else:
            self.details.setText("Nothing to fix or look at.")
            self._selection_changed()

    def items(self) -> list[QTreeWidgetItem]:
        """The findings' lines, in the order shown (the worst first)."""
        return [self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount())]

    _items = items

    def preferred_height(self) -> int:
        """The panel's height with ``ROWS`` findings (and half a line more, so the list is seen to go on)."""
        row = self.tree.sizeHintForRow(0) if self.tree.topLevelItemCount() else self.tree.fontMetrics().height() + 6
        return int(row * (ROWS + 0.5)) + 2 * self.tree.frameWidth() + 2

    # -- selection ----------------------------------------------------------------------------------------------
    def _selected(self) -> Finding | None:
        item = self.tree.currentItem()
        return item.data(0, Qt.UserRole) if item is not None else None

    def _selection_changed(self, *_) -> None:
        finding = self._selected()
        environment = finding is not None and about_environment(finding)
        advisor = finding is not None and _asks_advisor(finding)
        self.fix_button.setText("Make it f&it…" if advisor else "&Apply fix")
        self.fix_button.setEnabled(bool(finding and (plan_fix(finding) or advisor)))
        self.fix_button.setToolTip("Not a plan setting: fix the environment itself (see the Fix line)" if environment
                                   else "The configs that fit these GPUs, each estimated again, fastest first"
                                   if advisor else "Apply the selected finding's fix to the plan")
        self.go_button.setText("&Show the Environment step" if environment else "&Show the field")
        self.go_button.setEnabled(bool(finding and (finding.keys or environment)))
        if finding is None:
            return
        self.details.setText(details_html(finding))

    def _apply_selected(self) -> None:
        finding = self._selected()
        if finding is not None and _asks_advisor(finding):
            self.advice_requested.emit()
        elif finding is not None and plan_fix(finding):
            self.fix_requested.emit(finding)

    def _go_selected(self) -> None:
        finding = self._selected()
        if finding is None:
            return
        if about_environment(finding):
            self.environment_requested.emit()
        elif finding.keys:
            self.go_requested.emit(field_order(finding))

    def select_next(self) -> None:
        """F8: the next finding, wrapping round; the list gets the focus so Enter shows its field."""
        items = self.items()
        if not items:
            return
        current = self.tree.currentItem()
        index = items.index(current) + 1 if current in items else 0
        self.tree.setCurrentItem(items[index % len(items)])
        self.tree.setFocus(Qt.ShortcutFocusReason)

    def select_first_fixable(self) -> bool:
        for item in self.items():
            if plan_fix(item.data(0, Qt.UserRole)):
                self.tree.setCurrentItem(item)
                return True
        return False


def summary_words(findings: list[Finding]) -> str:
    """The list in one line, every line counted once by its severity: "<b>3 errors</b> to fix before running;
    2 warnings, 1 note" or "No errors; 2 warnings, 1 note worth a look"."""
    if not findings:
        return "No findings: verl 0.9.1 accepts this config and no late mistake is known"
    count = {s: sum(1 for f in findings if f.severity is s) for s in Severity}
    rest = ", ".join(f"{count[s]} {word}{'s' if count[s] != 1 else ''}"
                     for s, word in ((Severity.WARNING, "warning"), (Severity.INFO, "note")) if count[s])
    errors = count[Severity.ERROR]
    if errors:
        return f"<b>{errors} error{'s' if errors != 1 else ''}</b> to fix before running" + (f"; {rest}" if rest else "")
    return f"No errors; {rest} worth a look"


def _asks_advisor(finding: Finding) -> bool:
    """A memory finding whose fix is the advisor's search (the window runs it when asked), in the core's words or
    the window's."""
    from wizard.core.check import ADVISOR_ELSEWHERE

    head = ADVISOR_ELSEWHERE.split(":")[0]
    return finding.rule.startswith("memory.") and not finding.fix_overrides and (finding.fix or "").startswith(head)


def _item(finding: Finding, colours: dict[str, str]) -> QTreeWidgetItem:
    f = window_finding(finding)
    when = ENVIRONMENT if about_environment(f) else WHEN[f.stage]
    message = " ".join(f.message.split())
    item = QTreeWidgetItem([f"{SEVERITY_MARK[f.severity]} {SEVERITY_TEXT[f.severity]}", when, message])
    if f.severity is not Severity.INFO:
        item.setForeground(SEVERITY_COL, QColor(colours[f.severity.value]))
    item.setToolTip(SEVERITY_COL, f.rule)
    item.setToolTip(WHEN_COL, "About the Python environment probed on the Environment step" if about_environment(f)
                    else STAGE_TITLES[f.stage])
    item.setToolTip(MESSAGE_COL, f"{f.message}\n\nFix: {f.fix}" if f.fix else f.message)
    item.setData(0, Qt.UserRole, finding)
    return item


def details_html(finding: Finding) -> str:
    """The selected finding in full: what, when, the fix; for an environment finding, why it is not a plan fix."""
    finding = window_finding(finding)
    when = ("this machine's Python environment" if about_environment(finding)
            else STAGE_TITLES[finding.stage].replace("(", "— ").rstrip(")"))
    text = (f"<b>{SEVERITY_TEXT[finding.severity]}</b> · {_html(when)} · <code>{_html(finding.rule)}</code>"
            f"<br>{_html(finding.message)}")
    if finding.fix:
        text += f"<br><b>Fix:</b> {_html(finding.fix)}"
    if about_environment(finding):
        text += ("<br><i>This is about the environment probed on the Environment step, not a setting of the plan: "
                 "nothing here is applied to the plan.</i>")
    return text


def field_order(finding: Finding) -> list[str]:
    """The finding's keys, the one its fix changes first: that is the field the user should see."""
    fixed = [o.split("=", 1)[0].lstrip("+~") for o in plan_fix(finding)]
    return sorted(finding.keys, key=lambda k: (k.lstrip("+~") not in fixed, finding.keys.index(k)))


def _html(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
