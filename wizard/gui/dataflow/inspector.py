"""The stage inspector: pick a stage by keyboard and set what it is (estimator, reward kind, n, paths).

It shows the graph and reports choices as signals; the editor turns them into commands.
"""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QComboBox, QFormLayout, QGroupBox, QLabel, QLineEdit, QSpinBox, QWidget

from wizard.gui.widgets.eliding_combo import ElidingComboBox
from wizard.core.dataflow import (
    ESTIMATOR_NOTES,
    Graph,
    KINDS,
    REWARD_TITLES,
    REWARD_VARIANTS,
    estimator_choices,
    stage_on,
    subtitle,
)

REWARD_PARAMS = (
    ("function_path", "Reward function &file:", "reward.custom_reward_function.path: a .py file (absolute path), "
     "or empty for verl's built-in scorer by data_source"),
    ("function_name", "Function &name:", "reward.custom_reward_function.name (default compute_score)"),
    ("model_path", "Reward &model:", "reward.reward_model.model_path: a local folder or a hub id"),
)


class StageInspector(QGroupBox):
    stage_selected = Signal(str)
    estimator_chosen = Signal(str)
    reward_chosen = Signal(str)
    param_edited = Signal(str, str, object)  # node id, param name, value (None to clear)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__("Stage", parent)
        self.stage = ElidingComboBox()  # "Data — prompts from data.train_files, …": ends in "…" where cut
        self.stage.setAccessibleName("Stage")
        self.stage.setToolTip("The stage the inspector, Delete and Connect act on (the canvas selection follows)")
        self.stage.setSizeAdjustPolicy(QComboBox.AdjustToMinimumContentsLengthWithIcon)  # the canvas keeps the room
        self.stage.setMinimumContentsLength(14)
        self.stage.activated.connect(lambda i: self.stage_selected.emit(self.stage.itemData(i)))
        self.about = QLabel()
        self.about.setWordWrap(True)
        self.about.setObjectName("stageAbout")
        self.estimator = QComboBox()
        self.estimator.setAccessibleName("Advantage estimator")
        self.estimator.activated.connect(lambda i: self.estimator_chosen.emit(self.estimator.itemData(i)))
        self.reward = QComboBox()
        self.reward.setAccessibleName("Reward kind")
        for variant in REWARD_VARIANTS:
            self.reward.addItem(REWARD_TITLES[variant], variant)
        self.reward.activated.connect(lambda i: self.reward_chosen.emit(self.reward.itemData(i)))
        self.n = QSpinBox()
        self.n.setRange(1, 1024)
        self.n.setAccessibleName("Responses per prompt (rollout.n)")
        self.n.setToolTip("actor_rollout_ref.rollout.n: responses sampled per prompt; group estimators need 2 or more")
        self.n.editingFinished.connect(lambda: self.param_edited.emit("rollout", "n", self.n.value()))
        self.edits: dict[str, QLineEdit] = {}
        form = QFormLayout(self)
        form.addRow("S&tage:", self.stage)
        form.addRow(self.about)
        self._rows: dict[str, list[QWidget]] = {}
        self._add_row(form, "advantage", "&Estimator:", self.estimator)
        self._add_row(form, "reward", "&Kind:", self.reward)
        self._add_row(form, "rollout", "&n per prompt:", self.n)
        for name, label, tip in REWARD_PARAMS:
            edit = QLineEdit()
            edit.setToolTip(tip)
            edit.setAccessibleName(label.replace("&", "").rstrip(":"))
            edit.setPlaceholderText("not set")
            edit.editingFinished.connect(lambda name=name, edit=edit: self.param_edited.emit(
                "reward", name, edit.text().strip() or None))
            self.edits[name] = edit
            self._add_row(form, "reward", label, edit)
        self._current: str | None = None

    def _add_row(self, form: QFormLayout, node_id: str, label: str, widget: QWidget) -> None:
        caption = QLabel(label)
        caption.setBuddy(widget)
        form.addRow(caption, widget)
        self._rows.setdefault(node_id, []).extend([caption, widget])

    def show_stage(self, graph: Graph, node_id: str | None) -> None:
        """Fill the inspector for ``node_id`` (the first stage when None)."""
        self.blockSignals(True)
        try:
            self._fill(graph, node_id)
        finally:
            self.blockSignals(False)

    def _fill(self, graph: Graph, node_id: str | None) -> None:
        for w in (self.stage, self.estimator, self.reward, self.n, *self.edits.values()):
            w.blockSignals(True)
        self.stage.clear()
        for node in graph.nodes:
            state = "" if stage_on(graph, node.id) else " (off)"
            self.stage.addItem(f"{node.title}{state} — {subtitle(graph, node.id)}", node.id)
        ids = [n.id for n in graph.nodes]
        node_id = node_id if node_id in ids else (ids[0] if ids else None)
        self._current = node_id
        if node_id is not None:
            self.stage.setCurrentIndex(ids.index(node_id))
            self.about.setText(KINDS[node_id].doc)
        for owner, widgets in self._rows.items():
            for w in widgets:
                w.setVisible(owner == node_id)
        node = graph.node(node_id) if node_id else None
        if node is not None and node_id == "advantage":
            self.estimator.clear()
            for name in estimator_choices(graph.estimator):
                self.estimator.addItem(name, name)
                self.estimator.setItemData(self.estimator.count() - 1, ESTIMATOR_NOTES.get(name, "not a verl 0.9.1 "
                                           "estimator"), Qt.ToolTipRole)
            self.estimator.setCurrentIndex(self.estimator.findData(graph.estimator))
        if node is not None and node_id == "reward":
            self.reward.setCurrentIndex(self.reward.findData(node.variant or "rule"))
            for name, edit in self.edits.items():
                edit.setText(str(node.params.get(name) or ""))
        if node is not None and node_id == "rollout":
            self.n.setValue(int(node.params.get("n") or 1))
        for w in (self.stage, self.estimator, self.reward, self.n, *self.edits.values()):
            w.blockSignals(False)

    @property
    def current(self) -> str | None:
        return self._current
