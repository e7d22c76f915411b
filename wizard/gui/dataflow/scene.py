"""The QGraphicsScene that mirrors a dataflow graph.

The scene draws the graph it is given (``set_graph``) and keeps maps id → item. It changes
nothing itself: gestures end in signals (``link_requested``, ``disconnect_requested``,
``nodes_moved``, ``refused``) that the editor turns into undoable commands, and the new graph
comes back through ``set_graph``.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPointF, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsScene, QGraphicsSceneMouseEvent

from wizard.core.dataflow import (
    Graph,
    Link,
    NodeFinding,
    PortRef,
    find_port,
    positions,
    routes,
    stage_on,
    subtitle,
    unresolved_inputs,
    unused_inputs,
)
from wizard.core.findings import Finding
from wizard.gui.dataflow.interactions import LinkDrag, LinkDrop
from wizard.gui.dataflow.items import LinkItem, NodeItem, PortItem
from wizard.gui.theme import canvas_colours


class DataflowScene(QGraphicsScene):
    link_requested = Signal(object, object, object)  # src PortRef, dst PortRef, the link it moves (or None)
    disconnect_requested = Signal(object)  # Link
    nodes_moved = Signal(dict)  # node id -> (x, y)
    refused = Signal(str)  # why a drop was refused

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setBackgroundBrush(QColor(canvas_colours().background))
        self.graph = Graph()
        self.node_items: dict[str, NodeItem] = {}
        self.link_items: dict[Link, LinkItem] = {}
        self.port_items: dict[PortRef, PortItem] = {}
        self._drag: LinkDrag | None = None
        # What the gesture under way would do, once per mouse move: a plain callback, not a Signal, because
        # PySide6 6.12.0 on Python 3.11 drops a reference to True on every Signal.emit (the process aborts
        # after a few hundred emits); rare events stay signals.
        self.on_hint: Callable[[str], None] = lambda text: None
        self._placed: dict[str, tuple[float, float]] = {}

    # -- mirror the model -------------------------------------------------------------------------------------
    def set_graph(self, graph: Graph, node_findings: list[NodeFinding]) -> None:
        """Redraw for ``graph`` (ten stages at most: rebuilding is cheaper than diffing)."""
        if self._drag is not None:
            self._drag.finish()
            self._drag = None
        selected = {i.node_id for i in self.selectedItems() if isinstance(i, NodeItem)}
        self.clear()
        self.setBackgroundBrush(QColor(canvas_colours().background))  # the theme may have changed since
        self.graph = graph
        self.node_items, self.link_items, self.port_items = {}, {}, {}
        by_node: dict[str, list[Finding]] = {}
        for ids, finding in node_findings:
            for node_id in ids:
                by_node.setdefault(node_id, []).append(finding)
        self._placed = positions(graph)
        for node in graph.nodes:
            active = stage_on(graph, node.id)
            item = NodeItem(node, subtitle(graph, node.id), active, by_node.get(node.id, []), unused_inputs(graph, node.id))
            item.setPos(QPointF(*self._placed[node.id]))
            item.moved_callback = self._node_moved
            self.addItem(item)
            item.setSelected(node.id in selected)
            self.node_items[node.id] = item
            self.port_items.update({p.ref: p for p in item.ports.values()})
        for ref in unresolved_inputs(graph):
            self.port_items[ref].set_missing()
        for link in graph.links:
            found = find_port(link.src)
            if found is None or link.src not in self.port_items or link.dst not in self.port_items:
                continue
            item = LinkItem(link, found[0].type)
            self.addItem(item)
            self.link_items[link] = item
        self._route_links()
        self.setSceneRect(self.itemsBoundingRect().adjusted(-4, -4, 4, 4))

    def _route_links(self) -> None:
        pos = {nid: (item.pos().x(), item.pos().y()) for nid, item in self.node_items.items()}
        for link, points in routes(self.graph, pos).items():
            if link in self.link_items:
                self.link_items[link].set_route(points)

    def _node_moved(self, node_id: str) -> None:
        self._route_links()  # a moved stage can open or close the gaps other links run through

    # -- lookups (the editor's keyboard actions and the tests use them) ----------------------------------------
    def port_scene_pos(self, ref: PortRef) -> QPointF:
        return self.port_items[ref].scenePos()

    def selected_node(self) -> str | None:
        nodes = [i.node_id for i in self.selectedItems() if isinstance(i, NodeItem)]
        return nodes[0] if nodes else None

    def selected_link(self) -> Link | None:
        links = [i.link for i in self.selectedItems() if isinstance(i, LinkItem)]
        return links[0] if links else None

    def select_node(self, node_id: str | None) -> None:
        self.clearSelection()
        if node_id in self.node_items:
            self.node_items[node_id].setSelected(True)

    def select_link(self, link: Link | None) -> None:
        self.clearSelection()
        if link in self.link_items:
            self.link_items[link].setSelected(True)

    # -- gestures --------------------------------------------------------------------------------------------
    def _port_under(self, pos: QPointF) -> PortItem | None:
        for item in self.items(pos):
            if isinstance(item, PortItem):
                return item
        best, best_d = None, 9.0
        for item in self.port_items.values():  # a press just off the dot still picks the port
            d = (item.scenePos() - pos).manhattanLength()
            if d <= best_d:
                best, best_d = item, d
        return best

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt's name
        port = self._port_under(event.scenePos()) if event.button() == Qt.LeftButton else None
        if port is None:
            super().mousePressEvent(event)
            return
        self._drag = LinkDrag(self.graph, self.port_items, port)
        self.on_hint(self._drag.move(event.scenePos()))
        event.accept()

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if self._drag is not None:
            self.on_hint(self._drag.move(event.scenePos()))
            event.accept()
            return
        super().mouseMoveEvent(event)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if self._drag is not None:
            drag, self._drag = self._drag, None
            self._finish(drag.release(event.scenePos()))
            event.accept()
            return
        super().mouseReleaseEvent(event)
        moved = {nid: (round(item.pos().x(), 1), round(item.pos().y(), 1))
                 for nid, item in self.node_items.items() if (item.pos().x(), item.pos().y()) != self._placed.get(nid)}
        if moved:
            self.nodes_moved.emit(moved)

    def _finish(self, outcome: LinkDrop) -> None:
        if outcome.kind == "connect":
            self.link_requested.emit(outcome.src, outcome.dst, outcome.detached)
        elif outcome.kind == "disconnect":
            self.disconnect_requested.emit(outcome.detached)
        elif outcome.kind == "refused":
            self.refused.emit(outcome.reason)
        else:
            self.on_hint("")
