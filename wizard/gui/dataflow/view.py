"""The dataflow editor: the canvas, its toolbar, the stage inspector and the graph's findings.

``DataflowEditor(doc)`` is self-contained and holds no edit state: it draws ``doc.graph`` (the graph as
drawn, which the document keeps in step with the plan), redraws on ``doc.changed``, and hands every
edit (a graph the core's ``edit`` functions return) to ``doc.set_graph``, one step on the document's
undo stack. Everything the mouse does has a toolbar action too (add, connect, disconnect, delete,
auto-layout), for keyboard and screen-reader users.
"""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QHBoxLayout,
    QLabel,
    QListWidgetItem,
    QMenu,
    QToolBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from wizard.core.dataflow import DataflowError, Graph, KINDS, Link, NodeFinding, PortRef, PortType, check_nodes
from wizard.core.dataflow import (
    add_node,
    clear_layout,
    connect,
    disconnect,
    move,
    remove_node,
    set_estimator,
    set_param,
    set_reward,
)
from wizard.core.dataflow import hidden_keys
from wizard.core.findings import Finding, sort_findings
from wizard.gui.widgets.canvas import FitView, add_action, canvas_split, finding_item, findings_list, undo_redo
from wizard.gui.widgets.status_line import StatusLine
from wizard.gui.theme import ThemeFollower
from wizard.gui.dataflow.dialogs import ConnectDialog, DisconnectDialog
from wizard.gui.dataflow.inspector import StageInspector
from wizard.gui.dataflow.items import MIN_TEXT_PT, SMALLEST_PT, TYPE_COLOURS
from wizard.gui.dataflow.scene import DataflowScene
from wizard.gui.document import PlanDocument

SIDE_W = 250  # the inspector's width: the canvas takes the rest
HOW_TO = ("Drag from an output (right) to an input (left) to link; drag a link's end off its input to cut it; "
          "drag a title bar to move a stage.")


class DataflowView(FitView):
    """The canvas; it scales the graph to fit until the user zooms (Ctrl+wheel or the toolbar), but never below
    the scale that draws the canvas's smallest words at MIN_TEXT_PT: a graph too large for that scrolls instead."""

    def fit(self) -> None:
        super().fit()
        floor = MIN_TEXT_PT / SMALLEST_PT
        if self.transform().m11() < floor:
            self.resetTransform()
            self.scale(floor, floor)
            rect = self.scene().sceneRect()
            self.ensureVisible(rect.left(), rect.top(), 1, 1, 0, 0)  # the step starts top left, like a page

    def text_pt(self) -> float:
        """The smallest point size the canvas's words are drawn at now (what the tests hold to MIN_TEXT_PT)."""
        return SMALLEST_PT * self.transform().m11()

    def __init__(self, scene: DataflowScene, parent: QWidget | None = None) -> None:
        super().__init__(scene, parent)
        self.viewport().setMouseTracking(True)
        self.setAccessibleName("Dataflow canvas")
        self.setAccessibleDescription("Stages of one training step and the data between them; "
                                      "use the Stage box and the toolbar to do the same by keyboard")


def legend_html() -> str:
    dots = " ".join(f"<span style='color:{TYPE_COLOURS[t]}'>●</span>&nbsp;{t.value}" for t in PortType)
    return f"<small>Links carry: {dots}</small>"


class DataflowEditor(QWidget):
    """Edit which stages verl's training step runs and how they feed each other."""

    findings_changed = Signal(list)  # the graph's findings (list[Finding]), for hosts that merge them

    def __init__(self, doc: PlanDocument, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("Dataflow editor")
        self.doc = doc
        self.node_findings: list[NodeFinding] = []
        self.scene = DataflowScene(self)
        self.view = DataflowView(self.scene)
        self.status = StatusLine("dataflowStatus", "Canvas status")
        self.inspector = StageInspector()
        self.findings = findings_list("dataflowFindings", "Dataflow findings")
        self._shown = False
        self._build_actions()
        self._build_layout()
        self._wire()
        self._draw(doc.graph)
        self._say("")
        ThemeFollower(self, lambda: self._draw(self.doc.graph))  # the canvas in the new theme's colours

    # -- construction ---------------------------------------------------------------------------------------
    def _action(self, text: str, tip: str, slot, shortcut: str | QKeySequence | None = None) -> QAction:
        return add_action(self, text, tip, slot, shortcut)

    def _build_actions(self) -> None:
        self.add_menu = QMenu("&Add stage", self)
        self.add_actions: dict[str, QAction] = {}
        for kind, spec in KINDS.items():
            if spec.optional:
                act = self.add_menu.addAction(spec.title)
                act.setToolTip(spec.doc)
                act.triggered.connect(lambda _=False, k=kind: self.add_stage(k))
                self.add_actions[kind] = act
        self.connect_action = self._action("&Connect…", "Link an output to an input, by keyboard",
                                           self.connect_dialog, "Ctrl+L")
        self.disconnect_action = self._action("Cu&t link…", "Cut a link, by keyboard", self.disconnect_dialog,
                                              "Ctrl+Shift+L")
        self.delete_action = self._action("&Delete", "Delete the selected link or stage", self.delete_selected,
                                          QKeySequence.Delete)
        self.layout_action = self._action("Auto-&layout", "Place every stage by the flow (forgets moves)",
                                          self.auto_layout, "Ctrl+Shift+A")
        self.fit_action = self._action("&Fit", "Fit the whole graph in the window (as large as can be read)",
                                       self._fit, "Ctrl+0")
        self.zoom_in_action = self._action("Zoom &in", "Zoom in", lambda: self.view.zoom(1.25), QKeySequence.ZoomIn)
        self.zoom_out_action = self._action("Zoom &out", "Zoom out", lambda: self.view.zoom(0.8),
                                            QKeySequence.ZoomOut)
        self.undo_action, self.redo_action = undo_redo(self.doc.undo_stack, self)

    def _build_layout(self) -> None:
        bar = QToolBar("Dataflow")
        bar.setAccessibleName("Dataflow tools")
        add_button = QToolButton()
        add_button.setText("Add stage")
        add_button.setAccessibleName("Add stage")
        add_button.setMenu(self.add_menu)
        add_button.setPopupMode(QToolButton.InstantPopup)
        bar.addWidget(add_button)
        for act in (self.connect_action, self.disconnect_action, self.delete_action, self.layout_action,
                    self.fit_action, self.zoom_in_action, self.zoom_out_action):
            bar.addAction(act)
        bar.addSeparator()
        bar.addAction(self.undo_action)
        bar.addAction(self.redo_action)
        legend = QLabel(legend_html())
        legend.setAccessibleName("Link colours")
        self.split = split = canvas_split(self.view, self.inspector, "&Findings in this graph:", self.findings,
                                          (940, SIDE_W))
        layout = QVBoxLayout(self)
        layout.addWidget(bar)
        layout.addWidget(split, 1)
        row = QHBoxLayout()
        row.addWidget(self.status, 1)
        row.addWidget(legend)
        layout.addLayout(row)

    def _wire(self) -> None:
        self.doc.changed.connect(self._on_doc_changed)
        s = self.scene
        s.link_requested.connect(self._on_link_requested)
        s.disconnect_requested.connect(lambda link: self.cut(link))
        s.nodes_moved.connect(self._on_moved)
        s.refused.connect(lambda reason: self._say(f"Refused: {reason}"))
        s.on_hint = self._say
        s.selectionChanged.connect(self._on_selection)
        i = self.inspector
        i.stage_selected.connect(self.select_stage)
        i.estimator_chosen.connect(lambda est: self._edit(set_estimator, est, text=f"Estimator {est}"))
        i.reward_chosen.connect(lambda v: self._edit(set_reward, v, text=f"Reward: {v}"))
        i.param_edited.connect(lambda node, name, value: self._edit(set_param, node, name, value,
                                                                   text=f"Set {name} of {KINDS[node].title}"))
        self.findings.currentItemChanged.connect(self._on_finding)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt's name
        super().showEvent(event)
        if not self._shown:  # sizes set before the first layout are shares; in pixels now, the canvas the most
            self._shown = True
            total = sum(self.split.sizes())
            self.split.setSizes([total - SIDE_W, SIDE_W])

    # -- the model ------------------------------------------------------------------------------------------
    @property
    def graph(self) -> Graph:
        """The graph as drawn: the document's."""
        return self.doc.graph

    def _draw(self, graph: Graph) -> None:
        """Draw ``graph`` and its findings."""
        self.node_findings = check_nodes(graph)
        selected = self.scene.selected_node()
        self.scene.set_graph(graph, self.node_findings)
        self.scene.select_node(selected)
        self.inspector.show_stage(graph, selected or self.inspector.current)
        for kind, act in self.add_actions.items():
            act.setEnabled(not graph.has(kind))
        self._show_findings()
        if self.view.auto_fit:
            self.view.fit()

    def graph_findings(self) -> list[Finding]:
        return sort_findings([f for _, f in self.node_findings] + hidden_keys(self.doc.plan))

    def _show_findings(self) -> None:
        self.findings.clear()
        nodes_of = {id(f): ids for ids, f in self.node_findings}
        findings = self.graph_findings()
        for f in findings:
            self.findings.addItem(finding_item(f, nodes_of.get(id(f), ())))
        if not findings:
            self.findings.addItem("No findings: every stage is fed and verl can run this step")
        self.findings_changed.emit(findings)

    def _on_doc_changed(self) -> None:
        if self.doc.graph != self.scene.graph:
            self._draw(self.doc.graph)
        else:
            self._show_findings()  # plan-level notes (hidden keys) may have changed

    def _edit(self, fn, *args, text: str) -> bool:
        try:
            new = fn(self.graph, *args)
        except DataflowError as exc:
            self._say(f"Refused: {exc}")
            return False
        return self._set(new, text)

    def _set(self, graph: Graph, text: str) -> bool:
        changed = self.doc.set_graph(graph, text=text)
        self._say(f"{text}." if changed else "")
        return changed

    # -- actions --------------------------------------------------------------------------------------------
    def add_stage(self, kind: str) -> bool:
        return self._edit(add_node, kind, text=f"Add {KINDS[kind].title}")

    def cut(self, link: Link) -> bool:
        return self._edit(disconnect, link, text=f"Cut {link}")

    def link(self, src: PortRef, dst: PortRef) -> bool:
        return self._edit(connect, src, dst, text=f"Link {KINDS[src.node].title} → {KINDS[dst.node].title}")

    def auto_layout(self) -> None:
        self._edit(clear_layout, text="Auto-layout")
        self._fit()

    def delete_selected(self) -> bool:
        link = self.scene.selected_link()
        if link is not None:
            return self.cut(link)
        node = self.scene.selected_node() or self.inspector.current
        if node is None:
            return False
        return self._edit(remove_node, node, text=f"Delete {KINDS[node].title}")

    def select_stage(self, node_id: str) -> None:
        self.scene.select_node(node_id)
        self.inspector.show_stage(self.graph, node_id)

    def connect_dialog(self) -> None:
        dialog = ConnectDialog(self.graph, self.scene.selected_node() or self.inspector.current, self)
        if dialog.exec() == QDialog.Accepted:
            self.link(*dialog.choice())

    def disconnect_dialog(self) -> None:
        dialog = DisconnectDialog(self.graph, self.scene.selected_link(), self)
        if dialog.exec() == QDialog.Accepted and dialog.choice() is not None:
            self.cut(dialog.choice())

    def _fit(self) -> None:
        self.view.auto_fit = True
        self.view.fit()

    # -- scene signals --------------------------------------------------------------------------------------
    def _on_link_requested(self, src: PortRef, dst: PortRef, detached: Link | None) -> None:
        graph = self.graph
        try:
            if detached is not None:
                graph = disconnect(graph, detached)
            graph = connect(graph, src, dst)
        except DataflowError as exc:
            self._say(f"Refused: {exc}")
            return
        self._set(graph, f"Link {KINDS[src.node].title} → {KINDS[dst.node].title}")

    def _on_moved(self, positions: dict) -> None:
        names = ", ".join(KINDS[n].title for n in positions)
        self._edit(move, positions, text=f"Move {names}")

    def _on_selection(self) -> None:
        node = self.scene.selected_node()
        if node is not None and node != self.inspector.current:
            self.inspector.show_stage(self.graph, node)

    def _on_finding(self, item: QListWidgetItem | None, _previous=None) -> None:
        nodes = item.data(Qt.UserRole) if item is not None else None
        if nodes:
            self.select_stage(nodes[0])

    def _say(self, text: str) -> None:
        text = text or HOW_TO
        if text != self.status.text():  # called on every mouse move of a drag
            self.status.setText(text)

    # -- for hosts and tests --------------------------------------------------------------------------------
    def port_view_pos(self, ref: PortRef) -> QPoint:
        """Where a port is on the viewport, in pixels (what a mouse would aim at)."""
        return self.view.mapFromScene(self.scene.port_scene_pos(ref))
