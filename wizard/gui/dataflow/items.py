"""Graphics items of the dataflow canvas: stages with their ports, and links.

Items draw what the scene tells them and hold no graph state of their own (the graph is the
core's): a node item knows its node id, a port item its PortRef, a link item its Link.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsEllipseItem,
    QGraphicsItem,
    QGraphicsObject,
    QGraphicsPathItem,
    QStyleOptionGraphicsItem,
    QWidget,
)

from wizard.core.dataflow import (
    HEADER_H,
    KINDS,
    Link,
    NODE_W,
    Node,
    PortRef,
    PortSpec,
    PortType,
    ROW_H,
    is_wrapped,
    node_height,
    port_offset,
)
from wizard.core.findings import Finding, Severity
from wizard.gui.theme import canvas_colours

# Stage families (header colours) and what flows (port and link colours): distinct hues, dark enough
# for white text, none of them the red of an error badge.
CATEGORY_COLOURS = {
    "data": "#52606d", "generate": "#2458c5", "score": "#b8610a", "model": "#6f42c1",
    "kl": "#b0306f", "advantage": "#147a55", "update": "#2f3b52",
}
TYPE_COLOURS = {
    PortType.PROMPTS: "#7b8794", PortType.RESPONSES: "#2f6fde", PortType.LOG_PROBS: "#0e9aa7",
    PortType.REF_LOG_PROBS: "#8e5cd9", PortType.SCORES: "#e08a14", PortType.VALUES: "#6b4f2a",
    PortType.ADVANTAGES: "#1c9d6a", PortType.KL_TERM: "#d6407f",
}
SEVERITY_COLOURS = {Severity.ERROR: "#c62828", Severity.WARNING: "#e0a100", Severity.INFO: "#2a6fdb"}
PORT_R = 6.0
# Point sizes of the canvas's words at scale 1; the view never opens below the scale that draws the smallest
# at MIN_TEXT_PT (what a newcomer reads without leaning in).
TITLE_PT, SUBTITLE_PT, PORT_PT, BADGE_PT = 10.0, 9.0, 9.0, 9.0
MIN_TEXT_PT = 9.0
SMALLEST_PT = min(TITLE_PT, SUBTITLE_PT, PORT_PT)


class PortItem(QGraphicsEllipseItem):
    """One port: a dot on the node's edge, coloured by what flows through it."""

    NORMAL, COMPATIBLE, REFUSED = "normal", "compatible", "refused"

    def __init__(self, ref: PortRef, spec: PortSpec, side: str, parent: QGraphicsItem) -> None:
        super().__init__(-PORT_R, -PORT_R, 2 * PORT_R, 2 * PORT_R, parent)
        self.ref, self.spec, self.side = ref, spec, side
        self.state = self.NORMAL
        self.unused_note = ""
        self.missing = False
        self.setAcceptHoverEvents(True)
        self.setZValue(2)
        self.setCursor(Qt.CrossCursor)
        self.base_tip = (f"{spec.label} ({spec.type.value}), {'output' if side == 'out' else 'input'} of "
                         f"{KINDS[ref.node].title}" + (f": {spec.doc}" if spec.doc else "")
                         + ("" if spec.required or side == "out" else " — optional"))
        self.set_state(self.NORMAL)

    def set_state(self, state: str, reason: str = "") -> None:
        """How the port answers the link being dragged: lit (it fits), greyed with the reason (it does not)."""
        self.state = state
        c = canvas_colours()
        colour = QColor(TYPE_COLOURS[self.spec.type])
        if state == self.COMPATIBLE:
            self.setRect(-PORT_R - 3, -PORT_R - 3, 2 * PORT_R + 6, 2 * PORT_R + 6)
            self.setPen(QPen(QColor("#19c37d"), 3))
            self.setBrush(QBrush(colour))
            self.setToolTip(f"Drop here: {self.base_tip}" + (f" ({reason})" if reason else ""))
        elif state == self.REFUSED:
            self.setRect(-PORT_R, -PORT_R, 2 * PORT_R, 2 * PORT_R)
            self.setPen(QPen(QColor(c.bad), 1.5))
            self.setBrush(QBrush(QColor(c.track)))
            self.setToolTip(f"Cannot link here: {reason}")
        elif self.missing:
            self.setRect(-PORT_R - 1, -PORT_R - 1, 2 * PORT_R + 2, 2 * PORT_R + 2)
            self.setPen(QPen(QColor(SEVERITY_COLOURS[Severity.ERROR]), 3))
            self.setBrush(QBrush(QColor(c.surface)))
            self.setToolTip(f"Nothing feeds this input: {self.base_tip}. Drag a link here from a lit output.")
        elif self.unused_note:  # a hollow ring of its type's colour: seen on either theme's stage body
            self.setRect(-PORT_R, -PORT_R, 2 * PORT_R, 2 * PORT_R)
            surface = QColor(c.surface)
            ring = colour.lighter(180) if surface.lightness() < 128 else colour  # dark theme: a lighter ring
            self.setPen(QPen(ring, 2.0, Qt.DashLine))
            self.setBrush(QBrush(surface))
            self.setToolTip(f"{self.base_tip} — not read now ({self.unused_note})")
        else:
            self.setRect(-PORT_R, -PORT_R, 2 * PORT_R, 2 * PORT_R)
            self.setPen(QPen(colour.darker(150), 1.2))
            self.setBrush(QBrush(colour))
            self.setToolTip(self.base_tip)
        self.reason = reason

    def set_missing(self) -> None:
        """A required input nothing feeds: ringed in red, where the user must drop a link."""
        self.missing = True
        self.set_state(self.state)

    def set_unused(self, note: str) -> None:
        """An input this stage does not read as set (Advantage's values unless the estimator is gae)."""
        self.unused_note = note
        self.set_state(self.state)


class NodeItem(QGraphicsObject):
    """A stage: coloured title bar, a line saying what it is set to, its ports and labels, a findings badge."""

    def __init__(self, node: Node, subtitle: str, active: bool, findings: list[Finding],
                 unused: dict[str, str] | None = None) -> None:
        super().__init__()
        self.unused = unused or {}
        self.node_id = node.id
        self.spec = KINDS[node.id]
        self.subtitle = subtitle
        self.active = active
        self.findings = findings
        self.height = node_height(node.id)
        self.colours = canvas_colours()
        self.setFlags(QGraphicsItem.ItemIsMovable | QGraphicsItem.ItemIsSelectable
                      | QGraphicsItem.ItemSendsGeometryChanges)
        self.setZValue(1)
        self.ports: dict[str, PortItem] = {}
        for side, specs in (("in", self.spec.inputs), ("out", self.spec.outputs)):
            for spec in specs:
                item = PortItem(PortRef(node.id, spec.name), spec, side, self)
                item.setPos(QPointF(*port_offset(node.id, spec.name)))
                if spec.name in self.unused:
                    item.set_unused(self.unused[spec.name])
                self.ports[spec.name] = item
        tip = [f"{self.spec.title} ({subtitle}): {self.spec.doc}" if subtitle else f"{self.spec.title}: {self.spec.doc}"]
        if not active:
            tip.append("Off: nothing reads its output")
        tip += [f"• {f.severity.value}: {f.message}" for f in findings]
        self.setToolTip("\n".join(tip))
        self.moved_callback = None  # set by the scene: keeps links attached while dragging

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        top = -10 if self.findings else -3  # the badge stands above the title bar
        return QRectF(-PORT_R - 4, top, NODE_W + 2 * PORT_R + 14, self.height + 3 - top)

    def paint(self, painter: QPainter, option: QStyleOptionGraphicsItem, widget: QWidget | None = None) -> None:
        painter.setRenderHint(QPainter.Antialiasing)
        c = self.colours
        body = QRectF(0, 0, NODE_W, self.height)
        header = QColor(CATEGORY_COLOURS[self.spec.category])
        if not self.active:
            header = QColor("#9aa3ad")
        outline = QPen(QColor("#f2b705") if self.isSelected() else header.darker(130), 3 if self.isSelected() else 1.2)
        if not self.active:
            outline.setStyle(Qt.DashLine)
        painter.setPen(outline)
        painter.setBrush(QColor(c.surface if self.active else c.surface_off))
        painter.drawRoundedRect(body, 7, 7)
        path = QPainterPath()
        path.setFillRule(Qt.WindingFill)
        path.addRoundedRect(QRectF(0, 0, NODE_W, HEADER_H - 4), 7, 7)
        path.addRect(QRectF(0, HEADER_H - 12, NODE_W, 8))
        painter.fillPath(path, header)
        painter.setPen(QColor("#ffffff"))
        title = QFont(painter.font())
        title.setBold(True)
        title.setPointSizeF(TITLE_PT)
        painter.setFont(title)
        room = NODE_W - (26 if self.findings else 12)  # the badge sits at the title's end
        wide = QFontMetricsF(title).horizontalAdvance(self.spec.title)
        if wide > room:  # "Reference log-probs" beside its badge: a little smaller rather than cut
            title.setPointSizeF(max(TITLE_PT * 0.75, TITLE_PT * room / wide))
            painter.setFont(title)
        text = QFontMetricsF(title).elidedText(self.spec.title, Qt.ElideRight, room)
        painter.drawText(QRectF(9, 2, room, 18), Qt.AlignLeft | Qt.AlignVCenter, text)
        sub = QFont(painter.font())
        sub.setBold(False)
        sub.setPointSizeF(SUBTITLE_PT)
        painter.setFont(sub)
        line = self.subtitle if self.active else f"off — {self.subtitle}" if self.subtitle else "off"
        line = QFontMetricsF(sub).elidedText(line, Qt.ElideRight, NODE_W - 18)  # the tooltip has it whole
        painter.drawText(QRectF(9, 18, NODE_W - 14, 16), Qt.AlignLeft | Qt.AlignVCenter, line)
        port_font = QFont(sub)
        port_font.setPointSizeF(PORT_PT)
        painter.setFont(port_font)
        for side, specs in (("in", self.spec.inputs), ("out", self.spec.outputs)):
            for i, spec in enumerate(specs):
                y = HEADER_H + ROW_H * i
                rect = QRectF(10, y, NODE_W - 20, ROW_H)
                align = (Qt.AlignLeft if side == "in" else Qt.AlignRight) | Qt.AlignVCenter
                label = spec.label if spec.required or side == "out" else f"{spec.label} (optional)"
                if spec.name in self.unused and side == "in":
                    label = f"{spec.label} ({self.unused[spec.name]})"
                painter.setPen(QColor(c.muted if spec.name in self.unused else c.text))
                painter.drawText(rect, align, label)
        self._paint_badge(painter)

    def _paint_badge(self, painter: QPainter) -> None:
        if not self.findings:
            return
        worst = min(self.findings, key=lambda f: list(Severity).index(f.severity)).severity
        painter.setPen(QPen(QColor(self.colours.surface), 1.5))
        painter.setBrush(QColor(SEVERITY_COLOURS[worst]))
        painter.drawEllipse(QRectF(NODE_W - 22, -8, 20, 20))
        font = QFont(painter.font())
        font.setBold(True)
        font.setPointSizeF(BADGE_PT)
        painter.setFont(font)
        painter.drawText(QRectF(NODE_W - 22, -8, 20, 20), Qt.AlignCenter, "!" if worst is not Severity.INFO else "i")

    def itemChange(self, change, value):  # noqa: N802 - Qt's name
        if change == QGraphicsItem.ItemPositionHasChanged and self.moved_callback is not None:
            self.moved_callback(self.node_id)
        return super().itemChange(change, value)


def link_path(start: QPointF, end: QPointF) -> QPainterPath:
    """A horizontal S-curve from an output (left) to an input (right)."""
    return route_path([(start.x(), start.y()), (end.x(), end.y())])


def route_path(points: list[tuple[float, float]]) -> QPainterPath:
    """A smooth curve through a route: S-curves between columns, straight runs through the gaps; a link on to the
    next row in straight segments with rounded corners."""
    if is_wrapped(points):
        return _rounded(points, 10.0)
    path = QPainterPath(QPointF(*points[0]))
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if y0 == y1 and x1 > x0:
            path.lineTo(x1, y1)
            continue
        dx = max(abs(x1 - x0) / 2, 40.0)
        path.cubicTo(QPointF(x0 + dx, y0), QPointF(x1 - dx, y1), QPointF(x1, y1))
    return path


def _rounded(points: list[tuple[float, float]], radius: float) -> QPainterPath:
    path = QPainterPath(QPointF(*points[0]))
    for prev, here, nxt in zip(points, points[1:], points[2:]):
        r = min(radius, _dist(prev, here) / 2, _dist(here, nxt) / 2)
        path.lineTo(QPointF(*_toward(here, prev, r)))
        path.quadTo(QPointF(*here), QPointF(*_toward(here, nxt, r)))
    path.lineTo(QPointF(*points[-1]))
    return path


def _dist(a: tuple[float, float], b: tuple[float, float]) -> float:
    return abs(a[0] - b[0]) + abs(a[1] - b[1])  # segments are straight: one of the two is 0


def _toward(a: tuple[float, float], b: tuple[float, float], r: float) -> tuple[float, float]:
    d = _dist(a, b) or 1.0
    return a[0] + (b[0] - a[0]) * r / d, a[1] + (b[1] - a[1]) * r / d


class LinkItem(QGraphicsPathItem):
    """A link, coloured like the data it carries; selectable so it can be deleted."""

    def __init__(self, link: Link, type_: PortType) -> None:
        super().__init__()
        self.link = link
        self.colour = QColor(TYPE_COLOURS[type_])
        self.setFlags(QGraphicsItem.ItemIsSelectable)
        self.setAcceptHoverEvents(True)
        self.setZValue(0)
        self.setToolTip(f"{type_.value}: {link} — select and press Delete, or drag its end off the input, to cut it")
        self._apply_pen(False)

    def _apply_pen(self, hot: bool) -> None:
        pen = QPen(self.colour, 4.5 if hot or self.isSelected() else 2.2)
        pen.setCapStyle(Qt.RoundCap)
        self.setPen(pen)

    def set_route(self, points: list[tuple[float, float]]) -> None:
        self.setPath(route_path(points))

    def shape(self) -> QPainterPath:
        from PySide6.QtGui import QPainterPathStroker

        stroker = QPainterPathStroker()
        stroker.setWidth(10)
        return stroker.createStroke(self.path())

    def hoverEnterEvent(self, event) -> None:  # noqa: N802
        self._apply_pen(True)
        super().hoverEnterEvent(event)

    def hoverLeaveEvent(self, event) -> None:  # noqa: N802
        self._apply_pen(False)
        super().hoverLeaveEvent(event)

    def itemChange(self, change, value):  # noqa: N802
        if change == QGraphicsItem.ItemSelectedHasChanged:
            self._apply_pen(bool(value))
        return super().itemChange(change, value)
