"""The board's graphics items: GPU tiles with memory bars, pool regions, replica outlines, role chips, new-pool slots.

Items only draw what they are given (an estimate, a state); they never ask the core. Painting is cheap and
bounded (no text layout beyond a few lines), so a drag repaints only the chip and the lit targets. Every text
is at least ``MIN_PT`` points at the board's own scale (``FONTS``): the view shows the board at that scale and
wraps a node's GPUs onto more lines rather than shrinking them. Colours come from the theme in use
(``canvas_colours``); the scene lays the board out again when the theme changes.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QFontMetricsF, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsObject, QGraphicsRectItem, QGraphicsSimpleTextItem

from wizard.core.memory import (
    GIB,
    GpuEstimate,
    MemoryReport,
    OK,
    OOM,
    SHORT,
    TIGHT,
    UNKNOWN,
    fit_verdict,
    phase_of,
    step_index,
)
from wizard.core.placement import role_title
from wizard.gui.theme import CanvasColours, canvas_colours

TILE_W, TILE_H, GAP = 140.0, 104.0, 10.0


def _tag(name: str) -> str:
    phase = phase_of(name)
    return phase.tag if phase is not None else name


VERDICT_WORDS = {OK: "fits", TIGHT: "tight", OOM: "OUT OF MEMORY", UNKNOWN: "memory unknown",
                 SHORT: "fits while samples are short (out of memory at the configured lengths)"}
NO_GPU_MODEL = "no estimate: name the GPU model on the Start step"
NO_ESTIMATE = "no estimate: the model's size is not known yet"
NOT_USED = "not used by the plan's pools"


def not_placed(pools) -> str:
    """Why a GPU holds no role when a pool found no room (the plan asks a node for more GPUs than it has)."""
    short = next((p for p in pools if p.missing), None)
    if short is None:
        return NOT_USED
    return f"not used: {short.name} needs {short.per_node} GPUs on a node"
REPLICA_WORDS = ("A replica is one copy of the model serving requests. TP (tensor parallel): the GPUs one copy is "
                 "split over, talking at every layer (keep them on NVLink); DP (data parallel): copies inside one "
                 "engine, each with its own requests; PP (pipeline parallel): stages of layers on further GPUs.")
ROLE_COLOURS = {"actor": "#1f5fbf", "rollout": "#1b7f3b", "ref": "#5e35b1", "critic": "#8d4b00",
                "reward": "#ad1457", "teacher": "#6d5d00"}  # chips: white text on these, in both themes

MIN_PT = 9.0  # the smallest text on the board at its own scale (what the view shows by default)
FONTS = {  # what -> (points, bold)
    "node": (10.5, True), "node_facts": (9.5, False), "pool": (9.5, True), "chip": (9.0, True),
    "tile_title": (10.0, True), "tile": (9.0, False), "label": (9.0, False), "hint": (9.0, False),
}


def board_font(kind: str) -> QFont:
    size, bold = FONTS[kind]
    font = QFont()
    font.setPointSizeF(size)
    font.setBold(bold)
    return font


def pool_colour(name: str, colours: CanvasColours | None = None) -> QColor:
    c = colours or canvas_colours()
    return QColor(c.pools.get(name, c.pools["rollout"] if name.startswith("rollout_pool") else c.other_pool))


def text_item(text: str, kind: str, colour: str, parent: QGraphicsItem | None = None) -> QGraphicsSimpleTextItem:
    item = QGraphicsSimpleTextItem(text, parent)
    item.setFont(board_font(kind))
    item.setBrush(QColor(colour))
    return item


def fits(text: str, kind: str, width: float) -> bool:
    return QFontMetricsF(board_font(kind)).horizontalAdvance(text) <= width


def elided(text: str, kind: str, width: float) -> str:
    return QFontMetricsF(board_font(kind)).elidedText(text, Qt.ElideRight, width)


class GpuTile(QGraphicsItem):
    """One GPU: a memory bar per phase (small multiples), the capacity line, the peak phase outlined and named."""

    def __init__(self, node: str, index: int, label: str) -> None:
        super().__init__()
        self.node, self.index, self.label = node, index, label
        self.group: GpuEstimate | None = None
        self.report: MemoryReport | None = None
        self.short = False  # the plan fits while samples are short: over memory here reads "short", not OOM
        self.preview = False
        self.no_estimate = NO_ESTIMATE  # why there are no bars when there is no estimate (the scene knows)
        self.colours = canvas_colours()
        self.setAcceptHoverEvents(True)
        self.setCacheMode(QGraphicsItem.DeviceCoordinateCache)  # bars repaint from a pixmap until they change

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return QRectF(0, 0, TILE_W, TILE_H)

    def set_estimate(self, group: GpuEstimate | None, report: MemoryReport | None, preview: bool = False,
                     short: bool = False) -> None:
        self.group, self.report, self.preview, self.short = group, report, preview, short
        self.setToolTip(self.describe())
        self.update()

    @property
    def verdict(self) -> str:
        return fit_verdict(self.report, self.group, short=self.short)

    def corner_word(self) -> str:
        """The verdict beside the title; none when unknown (the line under the bars says so: the title keeps its
        room)."""
        v = self.verdict
        return "" if v == UNKNOWN else "OOM" if v == OOM else "if short" if v == SHORT else VERDICT_WORDS[v]

    def phases(self) -> list:
        if self.group is None:
            return []
        return sorted(self.group.phases, key=lambda p: step_index(p.name))

    def summary(self) -> str:
        g = self.group
        if g is None or g.capacity_bytes is None:
            return "unused" if self.no_estimate.startswith("not used") else "memory unknown"
        return f"{g.peak.total / GIB:.1f} / {g.capacity_bytes / GIB:.1f} GiB · {_tag(g.peak.name)}"

    def describe(self) -> str:
        """The tooltip and screen-reader text: verdict, peak and every phase."""
        head = f"{self.label}: {VERDICT_WORDS[self.verdict]}"
        g = self.group
        if g is None:
            return head
        lines = [head + (f", peak {g.peak.total / GIB:.1f} of {g.capacity_bytes / GIB:.1f} GiB in {g.peak.title}"
                         if g.capacity_bytes else "")]
        lines += [f"  {p.title}: {p.total / GIB:.1f} GiB" for p in self.phases()]
        lines.append("At the peak: " + ", ".join(f"{t.label} {t.bytes / GIB:.1f}"
                                                 for t in sorted(g.peak.terms, key=lambda t: -t.bytes)[:4]))
        return "\n".join(lines)

    def paint(self, painter: QPainter, option, widget=None) -> None:
        c, v = self.colours, self.verdict
        painter.setPen(QPen(QColor(c.verdict[v]), 2.5 if v in (TIGHT, OOM, SHORT) else 1.2,
                            Qt.DashLine if self.preview else Qt.SolidLine))
        painter.setBrush(QColor(c.surface))
        painter.drawRoundedRect(QRectF(1, 1, TILE_W - 2, TILE_H - 2), 5, 5)
        painter.setPen(QColor(c.text))
        painter.setFont(board_font("tile_title"))
        painter.drawText(QRectF(7, 3, TILE_W - 14, 18), Qt.AlignLeft | Qt.AlignVCenter, self.label)
        painter.setFont(board_font("tile"))
        painter.setPen(QColor(c.verdict[v]))
        painter.drawText(QRectF(7, 3, TILE_W - 14, 18), Qt.AlignRight | Qt.AlignVCenter, self.corner_word())
        self._paint_bars(painter)
        painter.setPen(QColor(c.text))
        painter.setFont(board_font("tile"))
        painter.drawText(QRectF(4, TILE_H - 21, TILE_W - 8, 17), Qt.AlignCenter, self.summary())

    def _paint_bars(self, painter: QPainter) -> None:
        c = self.colours
        g, phases = self.group, self.phases()
        top, bottom = 25.0, TILE_H - 25.0
        if g is None or not phases or not g.capacity_bytes:
            painter.setPen(QColor(c.muted))
            painter.setFont(board_font("tile"))
            painter.drawText(QRectF(4, top, TILE_W - 8, bottom - top), Qt.AlignCenter | Qt.TextWordWrap,
                             self.no_estimate if g is None else NO_GPU_MODEL)
            return
        cap = g.capacity_bytes
        scale = (bottom - top) / (cap * 1.15)
        cap_y = bottom - cap * scale
        width = (TILE_W - 14) / len(phases)
        peak = g.peak.name
        painter.setPen(Qt.NoPen)
        painter.setBrush(QColor(c.track))
        painter.drawRect(QRectF(7, bottom, TILE_W - 14, 1.5))
        for i, ph in enumerate(phases):
            x = 7 + i * width
            h = min(ph.total, cap * 1.15) * scale
            colour = QColor(c.verdict[fit_verdict(self.report, g, ph.total, self.short)])
            if ph.name != peak:
                colour.setAlpha(110)
            painter.setPen(QPen(QColor(c.text), 1.4) if ph.name == peak else Qt.NoPen)
            painter.setBrush(colour)
            painter.drawRect(QRectF(x + 1, bottom - h, width - 2, h))
        painter.setPen(QPen(QColor(c.bad), 1, Qt.DashLine))
        painter.drawLine(4, int(cap_y), int(TILE_W - 4), int(cap_y))


class Region(QGraphicsRectItem):
    """A drop target: a pool's stretch of GPUs on one line of a node row, or a slot for a pool that does not exist
    yet."""

    NORMAL, LIT, REFUSED, HOVER = range(4)

    def __init__(self, target: str, rect: QRectF, fill: QColor, title: str, dashed: bool = False) -> None:
        super().__init__(rect)
        self.target, self.fill, self.title, self.dashed = target, fill, title, dashed
        self.colours = canvas_colours()
        self.state, self.reason = self.NORMAL, ""
        self.about = ""  # the tooltip while no drag says anything
        self.setZValue(-1)
        self._style()
        self.text = text_item(elided(title, "pool", rect.width() - 12), "pool", self.colours.text, self)
        self.text.setPos(rect.left() + 6, rect.top() + 4)

    def set_about(self, text: str) -> None:
        """What the region is, said when the pointer rests on it outside a drag."""
        self.about = text
        if not self.reason:
            self.setToolTip(text)

    def set_state(self, state: int, reason: str = "") -> None:
        if (state, reason) == (self.state, self.reason):
            return
        self.state, self.reason = state, reason
        self.setToolTip(reason or self.about)
        self._style()

    def _style(self) -> None:
        c = self.colours
        fill = QColor(self.fill)
        pen = QPen(QColor(c.border), 1.2, Qt.DashLine if self.dashed else Qt.SolidLine)
        if self.state == self.LIT:
            pen, fill = QPen(QColor(c.lit[1]), 2.5), QColor(c.lit[0])
        elif self.state == self.HOVER:
            pen, fill = QPen(QColor(c.hover[1]), 3.5), QColor(c.hover[0])
        elif self.state == self.REFUSED:
            pen, fill = QPen(QColor(c.refused[1]), 1.2, Qt.DotLine), QColor(c.refused[0])
        self.setPen(pen)
        self.setBrush(QBrush(fill))


class ReplicaOutline(QGraphicsRectItem):
    """An engine replica (a TP x DP x PP group) drawn around its GPUs on one line."""

    def __init__(self, rect: QRectF, text: str, bad_link: str | None, right: bool = False) -> None:
        super().__init__(rect)
        c = canvas_colours()
        colour = QColor(c.bad if bad_link else c.muted)
        self.setPen(QPen(colour, 1.4, Qt.DashLine))
        self.setBrush(Qt.NoBrush)
        self.setZValue(2)
        self.full_text = text + (f" · over {bad_link}!" if bad_link else "")
        self.setToolTip(self.full_text + "\n" + REPLICA_WORDS)
        label = text_item(elided(self.full_text, "label", rect.width() - 6), "label", colour.name(), self)
        if right:  # a second engine on the same GPUs (the reward model beside rollout): label the other end
            label.setPos(rect.right() - label.boundingRect().width() - 3, rect.bottom() + 1)
        else:
            label.setPos(rect.left() + 3, rect.bottom() + 1)


class RoleChip(QGraphicsObject):
    """A role the user can drag to another pool (or pick with "Move role to pool…")."""

    HEIGHT = 22.0

    def __init__(self, role: str, pool: str) -> None:
        super().__init__()
        self.role, self.pool = role, pool
        self.text = role_title(role)
        self.width = 18 + QFontMetricsF(board_font("chip")).horizontalAdvance(self.text)
        self.setZValue(5)
        self.setCursor(Qt.OpenHandCursor)
        self.setToolTip(f"{self.text} runs on {pool}: drag it onto another pool")
        self.setAcceptedMouseButtons(Qt.LeftButton)

    def boundingRect(self) -> QRectF:  # noqa: N802
        return QRectF(0, 0, self.width, self.HEIGHT)

    def paint(self, painter: QPainter, option, widget=None) -> None:
        painter.setPen(Qt.NoPen)
        painter.setBrush(QColor(ROLE_COLOURS.get(self.role, "#455a64")))
        painter.drawRoundedRect(self.boundingRect(), 10, 10)
        painter.setPen(QColor("#ffffff"))
        painter.setFont(board_font("chip"))
        painter.drawText(self.boundingRect(), Qt.AlignCenter, self.text)


class LinkBar(QGraphicsRectItem):
    """Under a line of tiles: how its GPUs talk (NVLink island green and thick, PCIe red and dashed)."""

    def __init__(self, rect: QRectF, nvlink: bool, text: str, label: bool = True) -> None:
        super().__init__(rect)
        c = canvas_colours()
        colour = QColor(c.verdict[OK] if nvlink else c.bad)
        self.setPen(QPen(colour, 1, Qt.SolidLine if nvlink else Qt.DashLine))
        self.setBrush(colour if nvlink else Qt.NoBrush)
        self.setToolTip(text)
        if label:
            item = text_item(elided(text, "label", max(rect.width(), TILE_W)), "label", colour.name(), self)
            item.setPos(rect.right() - item.boundingRect().width(), rect.bottom() + 1)
