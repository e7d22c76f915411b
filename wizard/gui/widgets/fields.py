"""Editors for Plan fields: one widget per verl key, bound to the document.

Every field shows verl's default as its placeholder (empty = "verl decides"), explains its
key in a tooltip (verl's own comment, type and default: ``wizard.core.verl.key_help``), and
commits an edit as one undoable command when the user leaves it or picks a value. Widgets
never hold plan state: they redraw from the document on every change.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import QComboBox, QFormLayout, QLabel, QLineEdit, QSizePolicy, QWidget

from wizard.adapters.files.resources import load_key_docs, load_schema
from wizard.core.findings import Finding, Severity, sort_findings
from wizard.core.verl.interpolations import followed_key
from wizard.core.verl.key_help import key_help
from wizard.core.plan import Plan, plan_value, with_passthrough
from wizard.gui.document import PlanDocument
from wizard.gui.theme import canvas_colours
from wizard.gui.wording import window_finding

ERROR_STYLE = "border: 1px solid #c62828;"


class FieldMessage(QLabel):
    """The wrapped message under a field, exactly as tall as its lines at the width the form gives it.

    QFormLayout sizes a word-wrapped label's row by the label's size hint (its lines at about 240 px), not by its
    height at the field's width: a two-line warning under a wide field got five lines' height, a blank band under
    it. This label's hint is its height at its own width, asked again whenever that width changes."""

    def hasHeightForWidth(self) -> bool:  # noqa: N802 - Qt's name
        return False  # the hint below says it; the form's own height-for-width pass overestimates

    def sizeHint(self) -> QSize:  # noqa: N802
        hint = super().sizeHint()
        if self.width() > 1 and self.text():
            hint.setHeight(super().heightForWidth(self.width()))
        return hint

    def minimumSizeHint(self) -> QSize:  # noqa: N802
        hint = super().minimumSizeHint()
        hint.setHeight(self.sizeHint().height())
        return hint

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        if event.oldSize().width() != event.size().width():
            self.updateGeometry()  # the lines rewrap: the row takes their new height


def field_info(path: str):
    """(pydantic FieldInfo, verl key or None) of ``section.field``; (None, the key) for a verl key the Plan has no
    field for (``actor_rollout_ref.actor.fsdp_config.offload_policy``): its value is what the plan's passthrough
    sets it to."""
    section, _, name = path.partition(".")
    if section not in Plan.model_fields or "." in name:
        return None, path
    section_cls = Plan.model_fields[section].annotation
    info = section_cls.model_fields[name]
    extra = info.json_schema_extra or {}
    return info, extra.get("verl")


def _kind(annotation) -> str:
    args = set(typing.get_args(annotation)) - {type(None)}
    if args == {bool}:
        return "bool"
    if args == {int}:
        return "int"
    if args == {int, float} or args == {float}:
        return "number"
    if any(typing.get_origin(a) is list for a in args):
        return "list"
    return "str"


SCHEMA_KINDS = {"bool": "bool", "int": "int", "float": "number", "list": "list"}  # a verl key's type, as a field's
# keys whose null verl reads as a choice of its own (trainer/ppo/utils.py need_critic: a critic for gae)
NULL_MEANS = {"critic.enable": "auto: on for gae"}


def _default_text(value, key: str | None = None) -> str:
    if isinstance(value, str) and "${" in value:  # verl's YAML makes the knob follow another one
        followed = followed_key(value, key or "")
        return f"as {followed}" if followed else "set from other keys"
    if value is None:
        return NULL_MEANS.get(key or "", "null")
    if isinstance(value, bool):
        return "true" if value else "false"
    if value == "???":
        return "must be set"
    return str(value)


class FieldEditor:
    """Binds one Plan field to one widget."""

    def __init__(self, doc: PlanDocument, path: str, choices: Sequence[str] = (), label: str | None = None) -> None:
        self.doc, self.path = doc, path
        info, self.key = field_info(path)
        self.modelled = info is not None  # else the key's value lives in the plan's passthrough
        schema = load_schema()
        key_info = schema.variant().keys.get(self.key) if self.key else None
        self.kind = _kind(info.annotation) if info is not None else SCHEMA_KINDS.get(getattr(key_info, "type", ""),
                                                                                      "str")
        self.default = key_info.default if key_info else None
        self.label = label or path.split(".")[-1].replace("_", " ")
        # text the user typed that the field cannot take, and the plan's value then: kept on screen (and an error in
        # the Findings, holding Write back) until a value it takes is typed or the plan's value changes
        self.pending: tuple[str, object] | None = None
        self.error = FieldMessage()
        self.error.setWordWrap(True)
        # as wide as the field: the form grows only Expanding fields, and a Preferred label wrapped at ~230 px
        self.error.setSizePolicy(QSizePolicy.Expanding, QSizePolicy.Preferred)
        self.error.setAlignment(Qt.AlignLeft | Qt.AlignTop)  # under its field, whatever height the row was given
        self.marked: list[Finding] = []  # the findings about this key the field shows
        self.error.setStyleSheet("color: #c62828")
        self.error.setObjectName(f"error:{self.key or path}")
        self.error.hide()
        if self.kind == "bool" or choices:
            self.widget = QComboBox()
            self.widget.addItem(f"verl default ({_default_text(self.default, self.key)})", None)
            for choice in (["true", "false"] if self.kind == "bool" else choices):
                self.widget.addItem(choice, choice)
            if self.kind != "bool":
                self.widget.setEditable(True)
                self.widget.lineEdit().editingFinished.connect(self._commit)
            self.widget.activated.connect(lambda _i: self._commit())
        else:
            self.widget = QLineEdit()
            self.widget.setPlaceholderText(f"verl default: {_default_text(self.default, self.key)}")
            self.widget.editingFinished.connect(self._commit)
            self.widget.setClearButtonEnabled(True)
        self.widget.setObjectName(self.key or path)
        self.widget.setAccessibleName(self.label)
        plain = info.description if info is not None else ""
        if self.key:
            self.widget.setToolTip(key_help(schema, load_key_docs(), self.key, plain=plain or None))
        else:
            self.widget.setToolTip(plain or "")
        self.refresh()

    # -- document -> widget -------------------------------------------------------------
    def value(self):
        if not self.modelled:
            return plan_value(self.doc.plan, self.key)
        section, name = self.path.split(".")
        return getattr(getattr(self.doc.plan, section), name)

    def refresh(self, findings: Sequence[Finding] = ()) -> None:
        """Show the plan's value, and mark the field with the worst of ``findings`` (those about its key)."""
        value = self.value()
        if self.pending is not None:
            if value == self.pending[1]:
                self._show_findings(findings)  # the typed text stays, marked by its own error
                return
            self._forget_pending()  # the plan's value changed (undo, a preset, a fix): it shows that value
        self.widget.blockSignals(True)
        try:
            if isinstance(self.widget, QComboBox):
                text = None if value is None else (
                    ("true" if value else "false") if isinstance(value, bool) else str(value))
                index = self.widget.findData(text)
                if index >= 0:
                    self.widget.setCurrentIndex(index)
                elif self.widget.isEditable():
                    self.widget.setEditText(text or "")
            else:
                self.widget.setText("" if value is None else _text(value))
        finally:
            self.widget.blockSignals(False)
        self._show_error("")
        self._show_findings(findings)

    def _show_findings(self, findings: Sequence[Finding]) -> None:
        """The worst finding about this key, under the field and around it, so the field says what the dock says."""
        self.marked = sort_findings([f for f in findings if f.severity is not Severity.INFO])
        if not self.marked:
            return
        worst = window_finding(self.marked[0])
        colour = canvas_colours().severity[worst.severity.value]
        more = f" (and {len(self.marked) - 1} more in Findings)" if len(self.marked) > 1 else ""
        word = "Error" if worst.severity is Severity.ERROR else "Warning"
        self.error.setText(f"{word}: {worst.message}{more}")
        self.error.setStyleSheet(f"color: {colour}")
        self.error.setToolTip(f"Fix: {worst.fix}" if worst.fix else "")
        self.error.show()
        self.widget.setStyleSheet(f"border: 2px solid {colour};")

    # -- widget -> document -------------------------------------------------------------
    def _raw(self) -> str:
        if isinstance(self.widget, QComboBox):
            data = self.widget.currentData()
            if not self.widget.isEditable():
                return data or ""
            text = self.widget.currentText().strip()
            return "" if text.startswith("verl default") else text
        return self.widget.text().strip()

    def parse(self, text: str):
        """The field's value for ``text``; ValueError with a short reason."""
        if text == "":
            return None
        if self.kind == "bool":
            return text == "true"
        if self.kind == "int":
            try:
                return int(text.replace("_", ""))
            except ValueError:
                raise ValueError(f"{self.label}: a whole number, like 8") from None
        if self.kind == "number":
            try:
                return int(text) if text.lstrip("-").isdigit() else float(text)
            except ValueError:
                raise ValueError(f"{self.label}: a number, like 0.5 or 1e-6") from None
        if self.kind == "list":
            return [part.strip() for part in text.split(",") if part.strip()]
        return text

    def _commit(self) -> None:
        raw = self._raw()
        try:
            value = self.parse(raw)
        except ValueError as exc:
            self.pending = (raw, self.value())
            kept = "verl's default" if self.value() is None else _text(self.value())
            self.doc.set_field_error(self.key or self.path, f"{exc}, not {raw!r}; the plan still holds {kept}")
            return
        self._forget_pending()
        self._show_error("")
        if value == self.value():
            return
        try:
            plan = self._plan_with(value)
        except ValueError as exc:  # pydantic refuses the type (OverrideSyntaxError is one too)
            self._show_error(f"{self.label}: {str(exc).splitlines()[-1]}")
            return
        shown = "verl's default" if value is None else _text(value)
        self.doc.set_plan(plan, text=f"Set {self.key or self.path} = {shown}")

    def _plan_with(self, value) -> Plan:
        """The document's plan with this field at ``value`` (ValueError where it cannot hold it)."""
        if not self.modelled:
            return with_passthrough(self.doc.plan, self.key, value)
        plan = self.doc.plan.model_copy(deep=True)
        section, name = self.path.split(".")
        setattr(getattr(plan, section), name, value)
        return plan

    def _forget_pending(self) -> None:
        if self.pending is not None:
            self.pending = None
            self.doc.set_field_error(self.key or self.path, None)

    def _show_error(self, text: str) -> None:
        self.error.setStyleSheet("color: #c62828")
        self.error.setToolTip("")
        self.error.setText(text)
        self.error.setVisible(bool(text))
        self.widget.setStyleSheet(ERROR_STYLE if text else "")


def _text(value) -> str:
    if isinstance(value, list):
        return ", ".join(str(v) for v in value)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


class FieldForm(QWidget):
    """A form of Plan fields; ``editors`` maps each verl key to its editor (for click-to-field)."""

    def __init__(self, doc: PlanDocument, rows: Sequence[tuple], parent: QWidget | None = None) -> None:
        """``rows``: (field path, label) or (field path, label, choices)."""
        super().__init__(parent)
        self.doc = doc
        self.editors: dict[str, FieldEditor] = {}
        form = QFormLayout(self)
        form.setFieldGrowthPolicy(QFormLayout.ExpandingFieldsGrow)
        for row in rows:
            path, label = row[0], row[1]
            editor = FieldEditor(doc, path, choices=row[2] if len(row) > 2 else (), label=label)
            self.editors[editor.key or path] = editor
            caption = QLabel(f"{label}:")
            caption.setBuddy(editor.widget)
            caption.setToolTip(editor.widget.toolTip())
            form.addRow(caption, editor.widget)
            form.addRow("", editor.error)
        doc.changed.connect(self.refresh)
        self.refresh()  # the plan's findings are there before the first edit

    def refresh(self) -> None:
        about: dict[str, list[Finding]] = {}
        for f in self.doc.findings:
            for key in f.keys:
                about.setdefault(key.lstrip("+~"), []).append(f)
        for key, editor in self.editors.items():
            editor.refresh(about.get(key, []))

    def focus_key(self, key: str) -> bool:
        editor = self.editors.get(key.lstrip("+~"))
        if editor is None:
            return False
        editor.widget.setFocus(Qt.OtherFocusReason)
        return True
