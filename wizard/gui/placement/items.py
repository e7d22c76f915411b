"""The board's graphics items: GPU tiles with memory bars, pool regions, replica outlines, role chips, new-pool slots.

Items only draw what they are given (an estimate, a state); they never ask the core. Painting is cheap and
bounded (no text layout beyond a few lines), so a drag repaints only the chip and the lit targets.
"""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QBrush, QColor, QFont, QPainter, QPen
from PySide6.QtWidgets import QGraphicsItem, QGraphicsObject, QGraphicsRectItem, QGraphicsSimpleTextItem

from wizard.core.memory.board import OK, OOM, TIGHT, UNKNOWN, fit_verdict
from wizard.core.memory.estimate import GpuEstimate, MemoryReport
from wizard.core.memory.terms import GIB
from wizard.core.placement.board import role_title

TILE_W, TILE_H, GAP = 132.0, 112.0, 10.0
PHASE_ORDER = ("load", "weight_sync", "generation", "old_log_prob", "ref_log_prob", "actor_update", "critic_update",
               "reward")
SHORT = {"load": "load", "weight_sync": "sync", "generation": "gen", "old_log_prob": "logp", "ref_log_prob": "ref",
         "actor_update": "upd", "critic_update": "crit", "reward": "rm"}
VERDICT_COLOURS = {OK: "#2e7d32", TIGHT: "#c77700", OOM: "#c62828", UNKNOWN: "#9e9e9e"}
VERDICT_WORDS = {OK: "fits", TIGHT: "tight", OOM: "OUT OF MEMORY", UNKNOWN: "memory unknown"}
POOL_COLOURS = {"global_pool": "#dbe8fb", "reward_pool": "#f8e1f0", "teacher_pool": "#fff1cc", "rollout": "#dff3e4"}
ROLE_COLOURS = {"actor": "#1f5fbf", "rollout": "#1b7f3b", "ref": "#5e35b1", "critic": "#8d4b00",
                "reward": "#ad1457", "teacher": "#6d5d00"}


def pool_colour(name: str) -> QColor:
    return QColor(POOL_COLOURS.get(name, POOL_COLOURS["rollout"] if name.startswith("rollout_pool") else "#eeeeee"))


def small_font(size: float = 8.0, bold: bool = False) -> QFont:
    font = QFont()
    font.setPointSizeF(size)
    font.setBold(bold)
    return font


class GpuTile(QGraphicsItem):
    """One GPU: a memory bar per phase (small multiples), the capacity line, the peak phase outlined."""

    def __init__(self, node: str, index: int, label: str) -> None:
        super().__init__()
        self.node, self.index, self.label = node, index, label
        self.group: GpuEstimate | None = None
        self.report: MemoryReport | None = None
        self.preview = False
        self.setAcceptHoverEvents(True)
        self.setCacheMode(QGraphicsItem.DeviceCoordinateCache)  # bars repaint from a pixmap until they change

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return QRectF(0, 0, TILE_W, TILE_H)

    def set_estimate(self, group: GpuEstimate | None, report: MemoryReport | None, preview: bool = False) -> None:
        self.group, self.report, self.preview = group, report, preview
        self.setToolTip(self.describe())
        self.update()

    @property
    def verdict(self) -> str:
        return fit_verdict(self.report, self.group)

    def phases(self) -> list:
        if self.group is None:
            return []
        order = {p: i for i, p in enumerate(PHASE_ORDER)}
        return sorted(self.group.phases, key=lambda p: order.get(p.name, 99))

    def summary(self) -> str:
        g = self.group
        if g is None or g.capacity_bytes is None:
            return "memory unknown"
        return f"{g.peak.total / GIB:.1f} / {g.capacity_bytes / GIB:.0f} GiB · {SHORT.get(g.peak.name, g.peak.name)}"

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
        v = self.verdict
        painter.setPen(QPen(QColor(VERDICT_COLOURS[v]), 2.5 if v in (TIGHT, OOM) else 1.2,
                            Qt.DashLine if self.preview else Qt.SolidLine))
        painter.setBrush(QColor("#ffffff"))
        painter.drawRoundedRect(QRectF(1, 1, TILE_W - 2, TILE_H - 2), 5, 5)
        painter.setPen(QColor("#1f2933"))
        painter.setFont(small_font(8, bold=True))
        painter.drawText(QRectF(6, 3, TILE_W - 12, 14), Qt.AlignLeft | Qt.AlignVCenter, self.label)
        painter.setFont(small_font(7))
        painter.setPen(QColor(VERDICT_COLOURS[v]))
        painter.drawText(QRectF(6, 3, TILE_W - 12, 14), Qt.AlignRight | Qt.AlignVCenter,
                         VERDICT_WORDS[v] if v != OOM else "OOM")
        self._paint_bars(painter)
        painter.setPen(QColor("#1f2933"))
        painter.setFont(small_font(7))
        painter.drawText(QRectF(4, TILE_H - 16, TILE_W - 8, 13), Qt.AlignCenter, self.summary())

    def _paint_bars(self, painter: QPainter) -> None:
        g, phases = self.group, self.phases()
        top, bottom = 24.0, TILE_H - 30.0
        if g is None or not phases or not g.capacity_bytes:
            painter.setPen(QColor("#9e9e9e"))
            painter.drawText(QRectF(4, top, TILE_W - 8, bottom - top), Qt.AlignCenter | Qt.TextWordWrap,
                             "no estimate: name a model\nand a GPU model")
            return
        cap = g.capacity_bytes
        scale = (bottom - top) / (cap * 1.15)
        cap_y = bottom - cap * scale
        width = (TILE_W - 14) / len(phases)
        peak = g.peak.name
        for i, ph in enumerate(phases):
            x = 7 + i * width
            h = min(ph.total, cap * 1.15) * scale
            colour = QColor(VERDICT_COLOURS[fit_verdict(self.report, g, ph.total)])
            if ph.name != peak:
                colour.setAlpha(120)
            painter.setPen(QPen(QColor("#111111"), 1.4) if ph.name == peak else Qt.NoPen)
            painter.setBrush(colour)
            painter.drawRect(QRectF(x + 1, bottom - h, width - 2, h))
            painter.setPen(QColor("#555555"))
            painter.setFont(small_font(5.5, bold=ph.name == peak))
            painter.drawText(QRectF(x, bottom + 1, width, 9), Qt.AlignCenter, SHORT.get(ph.name, ph.name)[:4])
        painter.setPen(QPen(QColor("#c62828"), 1, Qt.DashLine))
        painter.drawLine(4, int(cap_y), int(TILE_W - 4), int(cap_y))


class Region(QGraphicsRectItem):
    """A drop target: a pool's stretch of GPUs on one node row, or a slot for a pool that does not exist yet."""

    NORMAL, LIT, REFUSED, HOVER = range(4)

    def __init__(self, target: str, rect: QRectF, fill: QColor, title: str, dashed: bool = False) -> None:
        super().__init__(rect)
        self.target, self.fill, self.title, self.dashed = target, fill, title, dashed
        self.state, self.reason = self.NORMAL, ""
        self.setZValue(-1)
        self._style()
        text = QGraphicsSimpleTextItem(title, self)
        text.setFont(small_font(8, bold=True))
        text.setBrush(QColor("#1f2933"))
        text.setPos(rect.left() + 6, rect.top() + 4)
        self.text = text

    def set_state(self, state: int, reason: str = "") -> None:
        if (state, reason) == (self.state, self.reason):
            return
        self.state, self.reason = state, reason
        self.setToolTip(reason)
        self._style()

    def _style(self) -> None:
        fill = QColor(self.fill)
        pen = QPen(QColor("#7b8794"), 1.2, Qt.DashLine if self.dashed else Qt.SolidLine)
        if self.state == self.LIT:
            pen = QPen(QColor("#2e7d32"), 2.5)
            fill = QColor("#c8efcf")
        elif self.state == self.HOVER:
            pen = QPen(QColor("#1b5e20"), 3.5)
            fill = QColor("#a5e0b0")
        elif self.state == self.REFUSED:
            pen = QPen(QColor("#9e9e9e"), 1.2, Qt.DotLine)
            fill = QColor("#e0e0e0")
        self.setPen(pen)
        self.setBrush(QBrush(fill))


class ReplicaOutline(QGraphicsRectItem):
    """An engine replica (a TP x DP x PP group) drawn around its GPUs on one row."""

    def __init__(self, rect: QRectF, text: str, bad_link: str | None, right: bool = False) -> None:
        super().__init__(rect)
        colour = QColor("#c62828" if bad_link else "#37474f")
        self.setPen(QPen(colour, 1.4, Qt.DashLine))
        self.setBrush(Qt.NoBrush)
        self.setZValue(2)
        label = QGraphicsSimpleTextItem(text + (f" · over {bad_link}!" if bad_link else ""), self)
        label.setFont(small_font(7))
        label.setBrush(colour)
        if right:  # a second engine on the same GPUs (the reward model beside rollout): label the other end
            label.setPos(rect.right() - label.boundingRect().width() - 4, rect.bottom() + 1)
        else:
            label.setPos(rect.left() + 4, rect.bottom() + 1)


class RoleChip(QGraphicsObject):
    """A role the user can drag to another pool (or pick with "Move role to pool…")."""

    HEIGHT = 20.0

    def __init__(self, role: str, pool: str) -> None:
        super().__init__()
        self.role, self.pool = role, pool
        self.text = role_title(role)
        self.width = 14 + 6.2 * len(self.text)
        self.setZValue(5)
        self.setCursor(Qt.OpenHandCursor)
        self.setToolTip(f"{self.text} runs on {pool}: drag it onto another pool")
        self.setAcceptedMouseButtons(Qt.LeftButton)

    def boundingRect(self) -> QRectF:  # noqa: N802
        return QRectF(0, 0, self.width, self.HEIGHT)

    def paint(self, painter: QPainter, option, widget=None) -> None:
        painter.setPen(Qt.NoPen)
        painter.setBrush(QColor(ROLE_COLOURS.get(self.role, "#455a64")))
        painter.drawRoundedRect(self.boundingRect(), 9, 9)
        painter.setPen(QColor("#ffffff"))
        painter.setFont(small_font(8, bold=True))
        painter.drawText(self.boundingRect(), Qt.AlignCenter, self.text)


class LinkBar(QGraphicsRectItem):
    """Under a row of tiles: how its GPUs talk (NVLink island green and thick, PCIe red and dashed)."""

    def __init__(self, rect: QRectF, nvlink: bool, text: str) -> None:
        super().__init__(rect)
        colour = QColor("#2e7d32" if nvlink else "#c62828")
        self.setPen(QPen(colour, 1, Qt.SolidLine if nvlink else Qt.DashLine))
        self.setBrush(colour if nvlink else Qt.NoBrush)
        self.setToolTip(text)
        label = QGraphicsSimpleTextItem(text, self)
        label.setFont(small_font(6.5))
        label.setBrush(colour)
        label.setPos(rect.right() - label.boundingRect().width(), rect.bottom() + 1)
