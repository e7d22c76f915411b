"""Mouse gestures on the dataflow canvas, one small object per gesture (after orange-canvas-core).

A gesture only asks the core (``can_connect``) and paints the answer; what it ends in is handed
back to the scene as an outcome, and the editor turns that into an undoable command.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QColor, QPen
from PySide6.QtWidgets import QGraphicsPathItem

from wizard.core.dataflow import KINDS, Graph, Link, PortRef, can_connect
from wizard.gui.dataflow.items import TYPE_COLOURS, PortItem, link_path

SNAP = 14.0  # a drop this close to a port's centre lands on it


@dataclass(frozen=True)
class LinkDrop:
    """How a link drag ended: connect, disconnect, refused (with the reason) or cancel."""

    kind: str
    src: PortRef | None = None
    dst: PortRef | None = None
    detached: Link | None = None
    reason: str = ""


class LinkDrag:
    """Drag a new link out of a port, or pick up a link by its input end.

    From an output: the inputs that can take it light up. From a linked input: the link comes
    off and follows the mouse; dropping it on empty canvas cuts it. From a free input: the drag
    runs backwards and the outputs that can feed it light up. Ports that cannot take the link grey
    out and carry the reason (tooltip, and the status line while hovered).
    """

    def __init__(self, graph: Graph, ports: dict[PortRef, PortItem], anchor: PortItem) -> None:
        self.ports = ports
        self.detached = graph.feeding(anchor.ref) if anchor.side == "in" else None
        self.graph = replace(graph, links=tuple(lk for lk in graph.links if lk != self.detached))
        if self.detached is not None:
            self.fixed, self.backwards = ports[self.detached.src], False
        else:
            self.fixed, self.backwards = anchor, anchor.side == "in"
        self.answers: dict[PortRef, tuple[bool, str]] = {}
        want = "out" if self.backwards else "in"
        for ref, item in ports.items():
            if item.side != want:
                continue
            src, dst = (ref, self.fixed.ref) if self.backwards else (self.fixed.ref, ref)
            ok, reason = can_connect(self.graph, src, dst)
            self.answers[ref] = (ok, reason)
            item.set_state(PortItem.COMPATIBLE if ok else PortItem.REFUSED, reason)
        self.line = QGraphicsPathItem()
        pen = QPen(QColor(TYPE_COLOURS[self.fixed.spec.type]), 2.5, Qt.DashLine)
        self.line.setPen(pen)
        self.line.setZValue(3)
        self.fixed.scene().addItem(self.line)
        self.move(self.fixed.scenePos())

    def port_at(self, pos: QPointF) -> PortItem | None:
        best, best_d = None, SNAP
        for ref in self.answers:
            item = self.ports[ref]
            d = (item.scenePos() - pos).manhattanLength()
            if d <= best_d:
                best, best_d = item, d
        return best

    def move(self, pos: QPointF) -> str:
        """Follow the mouse; the hint says what a drop here would do."""
        target = self.port_at(pos)
        end = target.scenePos() if target is not None else pos
        start = self.fixed.scenePos()
        self.line.setPath(link_path(end, start) if self.backwards else link_path(start, end))
        if target is None:
            if self.detached is not None:
                return f"Drop on empty canvas to cut {self.detached}; on a lit input to move it"
            return "Lit ports can take this link; grey ones say why not when you hover them"
        ok, reason = self.answers[target.ref]
        name = f"{KINDS[target.ref.node].title} · {target.spec.label}"
        return f"Release to link to {name}" + (f" ({reason})" if reason else "") if ok else f"Refused: {reason}"

    def release(self, pos: QPointF) -> LinkDrop:
        target = self.port_at(pos)
        self.finish()
        if target is None:
            return LinkDrop("disconnect", detached=self.detached) if self.detached else LinkDrop("cancel")
        ok, reason = self.answers[target.ref]
        if not ok:
            return LinkDrop("refused", reason=reason, detached=self.detached)
        src, dst = (target.ref, self.fixed.ref) if self.backwards else (self.fixed.ref, target.ref)
        return LinkDrop("connect", src=src, dst=dst, detached=self.detached, reason=reason)

    def finish(self) -> None:
        for ref in self.answers:
            self.ports[ref].set_state(PortItem.NORMAL)
        if self.line.scene() is not None:
            self.line.scene().removeItem(self.line)
