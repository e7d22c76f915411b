"""What the Environment and Hardware steps both show: a read-only table, and findings in rich text."""

from __future__ import annotations

from html import escape

from PySide6.QtWidgets import QTableWidget

from wizard.core.findings import Severity
from wizard.gui.wording import window_finding


def read_only_table(name: str, headers: list[str]) -> QTableWidget:
    table = QTableWidget(0, len(headers))
    table.setObjectName(name)
    table.setAccessibleName(name)
    table.setHorizontalHeaderLabels(headers)
    table.setEditTriggers(QTableWidget.NoEditTriggers)
    table.verticalHeader().setVisible(False)
    return table


def findings_html(findings) -> str:
    if not findings:
        return ""
    marks = {Severity.ERROR: "✖", Severity.WARNING: "⚠", Severity.INFO: "ℹ"}
    shown = [window_finding(f) for f in findings]
    return "<br>".join(f"{marks[f.severity]} {escaped(f.message)}"
                       + (f"<br>&nbsp;&nbsp;&nbsp;Fix: {escaped(f.fix)}" if f.fix else "") for f in shown)


def escaped(text: object) -> str:
    """``text`` shown as it is in a rich-text label (``&``, ``<`` and ``>`` escaped)."""
    return escape(str(text), quote=False)
