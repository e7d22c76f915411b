"""The Hardware step's picture of one Cluster: GPU tiles with memory, the links between them drawn by kind.

NVLink islands (``ClusterNode.nvlink_islands``) are drawn as one green band when every pair in them is NVLinked (the
usual 8-GPU board) and as thick green arcs otherwise; PCIe paths are arcs too: PIX/PXB solid blue, PHB/NODE/SYS
thin dashed red (the slow ones a TP group should not cross). Identical neighbouring nodes collapse into one
row ("node0 – node127 ×128"). Read-only: the view only draws what discovery found. Colours follow the theme (it
draws itself again when the theme changes); no text is smaller than 9 pt.
"""

from __future__ import annotations

from PySide6.QtCore import QPointF, QRectF, Qt
from PySide6.QtGui import QColor, QFontMetricsF, QPainter, QPainterPath, QPen
from PySide6.QtWidgets import (
    QGraphicsItem,
    QGraphicsPathItem,
    QGraphicsRectItem,
    QGraphicsScene,
    QGraphicsSimpleTextItem,
    QGraphicsView,
    QLabel,
    QVBoxLayout,
    QWidget,
)

from wizard.core.hardware import GIB, Cluster, GpuLink, LinkKind, ClusterNode
from wizard.gui.theme import CanvasColours, ThemeFollower, canvas_colours
from wizard.gui.widgets.empty_hint import EmptyHint

TILE_W, TILE_H, GAP, LABEL_W, ARC_ROOM = 150.0, 78.0, 14.0, 150.0, 70.0
LINK_STYLE = {  # kind -> (colour, width, dashed)
    LinkKind.NV: ("#2e7d32", 4.0, False), LinkKind.PIX: ("#1565c0", 2.0, False), LinkKind.PXB: ("#1565c0", 1.6, False),
    LinkKind.PHB: ("#c62828", 1.0, True), LinkKind.NODE: ("#c62828", 1.0, True), LinkKind.SYS: ("#c62828", 1.0, True),
}


class TopoTile(QGraphicsItem):
    """One GPU: its name and index, memory total and free (a bar of the used share)."""

    def __init__(self, node: str, index: int, name: str, total: int | None, free: int | None) -> None:
        super().__init__()
        self.node, self.index, self.name, self.total, self.free = node, index, name, total, free
        self.colours = canvas_colours()
        self.setToolTip(self.text())

    def text(self) -> str:
        total = f"{self.total / GIB:.1f} GiB" if self.total else "memory unknown"
        free = (f", {self.free / GIB:.1f} GiB free" if self.free is not None and self.total
                else ", free memory not measured" if self.total else "")
        return f"GPU {self.index}: {self.name}, {total}{free}"

    def boundingRect(self) -> QRectF:  # noqa: N802 - Qt's name
        return QRectF(0, 0, TILE_W, TILE_H)

    def paint(self, painter: QPainter, option, widget=None) -> None:
        c = self.colours
        painter.setPen(QPen(QColor(c.border), 1.2))
        painter.setBrush(QColor(c.surface))
        painter.drawRoundedRect(QRectF(1, 1, TILE_W - 2, TILE_H - 2), 6, 6)
        painter.setPen(QColor(c.text))
        font = painter.font()
        font.setPointSizeF(10)
        font.setBold(True)
        painter.setFont(font)
        painter.drawText(QRectF(8, 3, TILE_W - 16, 18), Qt.AlignLeft | Qt.AlignVCenter, f"GPU {self.index}")
        font.setBold(False)
        font.setPointSizeF(9)
        painter.setFont(font)
        painter.drawText(QRectF(8, 20, TILE_W - 16, 16), Qt.AlignLeft | Qt.AlignVCenter,
                         QFontMetricsF(font).elidedText(self.name, Qt.ElideRight, TILE_W - 16))
        bar = QRectF(8, 40, TILE_W - 16, 10)
        painter.setPen(QPen(QColor(c.border), 1))
        painter.setBrush(QColor(c.track))
        painter.drawRect(bar)
        if self.total:
            used = 0.0 if self.free is None else max(0.0, min(1.0, 1 - self.free / self.total))
            painter.setPen(Qt.NoPen)
            painter.setBrush(QColor("#ef6c00" if used > 0.5 else "#1565c0"))
            painter.drawRect(QRectF(bar.left(), bar.top(), bar.width() * used, bar.height()))
            free = f" · {self.free / GIB:.1f} free" if self.free is not None else ""  # the tooltip says why not
            words = f"{self.total / GIB:.1f} GiB{free}"
        else:
            words = "memory unknown"
        painter.setPen(QColor(c.text))
        painter.drawText(QRectF(8, 54, TILE_W - 16, 18), Qt.AlignLeft | Qt.AlignVCenter,
                         QFontMetricsF(font).elidedText(words, Qt.ElideRight, TILE_W - 16))


class LinkArc(QGraphicsPathItem):
    """A link between two GPUs of one node, as an arc above their tiles."""

    def __init__(self, link: GpuLink, a: QPointF, b: QPointF) -> None:
        super().__init__()
        self.link, self.kind = link, link.kind
        colour, width, dashed = LINK_STYLE[link.kind]
        path = QPainterPath(a)
        lift = min(ARC_ROOM - 8, 14 + abs(b.x() - a.x()) * 0.12)
        path.cubicTo(QPointF(a.x(), a.y() - lift), QPointF(b.x(), b.y() - lift), b)
        self.setPath(path)
        self.setPen(QPen(QColor(colour), width, Qt.DashLine if dashed else Qt.SolidLine))
        self.setToolTip(f"GPU {link.a} ↔ GPU {link.b}: {link.label}")


class Island(QGraphicsRectItem):
    """An all-to-all NVLink island: one band behind its tiles instead of n·(n-1)/2 arcs."""

    def __init__(self, rect: QRectF, gpus: list[int], label: str, colours: CanvasColours) -> None:
        super().__init__(rect)
        self.gpus, self.label = gpus, label
        self.setPen(QPen(QColor(colours.verdict["ok"]), 4))
        self.setBrush(QColor(colours.lit[0]))
        self.setZValue(-1)
        text = QGraphicsSimpleTextItem(label, self)
        text.setBrush(QColor(colours.good))
        text.setPos(rect.left() + 8, rect.top() + 4)


def _signature(node: ClusterNode) -> tuple:
    return (node.gpu_count, tuple((g.index, g.name, g.memory_total_bytes) for g in node.gpus),
            tuple((x.a, x.b, x.label) for x in node.links), node.interconnect)


class TopologyView(QWidget):
    """One cluster's GPUs and links; ``set_cluster`` redraws it (None: nothing detected yet)."""

    def __init__(self, cluster: Cluster | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setAccessibleName("GPU topology")
        self.scene = QGraphicsScene(self)
        self.view = QGraphicsView(self.scene)
        self.view.setRenderHints(QPainter.Antialiasing | QPainter.TextAntialiasing)
        self.view.setAccessibleName("GPU topology picture")
        self.legend = QLabel("<span style='color:#2e7d32'>━━</span> NVLink (NV#) · "
                             "<span style='color:#1565c0'>━</span> PCIe switch (PIX/PXB) · "
                             "<span style='color:#c62828'>┅</span> through the CPU (PHB/NODE/SYS): slow for a TP "
                             "group · bar: memory in use")
        self.legend.setWordWrap(True)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        self.summary.setAccessibleName("Topology summary")
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.summary)
        layout.addWidget(self.view, 1)
        layout.addWidget(self.legend)
        self.empty_hint = EmptyHint(
            self.view, "Detect this machine reads its GPUs and how they are linked; Open a cluster spec… reads a file "
            "such as \"2 nodes × 8 H100-80GB NVLink\"; Ask Ray reads a running Ray cluster. The GPUs and their links "
            "are drawn here. Without any of them the plan is checked against its own shape (below) and the GPU "
            "model typed on the Start step.", lambda: not self.rows)
        self.tiles: dict[tuple[str, int], TopoTile] = {}
        self.arcs: list[LinkArc] = []
        self.islands: list[Island] = []
        self.rows: list[str] = []
        self.set_cluster(cluster)
        ThemeFollower(self, lambda: self.set_cluster(self.cluster))

    def set_cluster(self, cluster: Cluster | None) -> None:
        self.scene.clear()
        self.colours = canvas_colours()
        self.scene.setBackgroundBrush(QColor(self.colours.background))
        self.tiles, self.arcs, self.islands, self.rows = {}, [], [], []
        self.cluster = cluster
        if cluster is None or not cluster.nodes:
            self.summary.setText("No GPUs detected yet" + (f": {'; '.join(cluster.notes)}" if cluster else ""))
            self.view.setAccessibleDescription(self.summary.text())
            return
        y = 0.0
        for label, node in self._rows(cluster):
            self.rows.append(label)
            self._row(node, label, y)
            y += ARC_ROOM + TILE_H + 30
        self.scene.setSceneRect(self.scene.itemsBoundingRect().adjusted(-16, -16, 16, 16))
        # tall enough for two rows at their size (text at 9 pt and up): more rows scroll
        shown = min(self.scene.sceneRect().height(), 2 * (ARC_ROOM + TILE_H + 30) + 16)
        self.view.setMinimumHeight(int(shown) + 2 * self.view.frameWidth() + self.view.horizontalScrollBar().sizeHint().height())
        gpus = cluster.gpu_total
        self.summary.setText(f"{gpus} GPU(s) on {len(cluster.nodes)} node(s), from {cluster.source}"
                             + (f". {' '.join(cluster.notes)}" if cluster.notes else ""))
        self.view.setAccessibleDescription(self.describe())

    def _rows(self, cluster: Cluster) -> list[tuple[str, ClusterNode]]:
        runs: list[list[ClusterNode]] = []
        for node in cluster.nodes:
            if runs and _signature(runs[-1][0]) == _signature(node):
                runs[-1].append(node)
            else:
                runs.append([node])
        out = []
        for run in runs:
            if len(run) >= 3:
                out.append((f"{run[0].name} – {run[-1].name}  ×{len(run)}", run[0]))
            else:
                out += [(n.name, n) for n in run]
        return out

    def _row(self, node: ClusterNode, label: str, y: float) -> None:
        text = QGraphicsSimpleTextItem(label + ("" if node.alive else " (dead)"))
        font = text.font()
        font.setPointSizeF(10)
        font.setBold(True)
        text.setFont(font)
        text.setBrush(QColor(self.colours.text))
        text.setPos(0, y + ARC_ROOM + 8)
        self.scene.addItem(text)
        gpus = node.gpus or []
        slot = {g.index: k for k, g in enumerate(gpus)}
        top = y + ARC_ROOM
        for g in gpus:
            tile = TopoTile(node.name, g.index, g.catalogue_id or g.name, g.memory_total_bytes, g.memory_free_bytes)
            tile.setPos(LABEL_W + slot[g.index] * (TILE_W + GAP), top)
            self.scene.addItem(tile)
            self.tiles[(node.name, g.index)] = tile
        if not gpus:  # the row says so (the hint over an empty view would be drawn across its name)
            note = QGraphicsSimpleTextItem(f"{node.gpu_count} GPU(s), not described by this source" if node.gpu_count
                                           else "no GPU on this node")
            note.setBrush(QColor(self.colours.muted))
            note.setPos(LABEL_W, top + 20)
            self.scene.addItem(note)
        banded: set[tuple[int, int]] = set()
        for isl in node.nvlink_islands():
            if len(isl) < 2 or any(i not in slot for i in isl):
                continue
            pairs = [(a, b) for k, a in enumerate(isl) for b in isl[k + 1:]]
            links = [node.link(a, b) for a, b in pairs]
            contiguous = [slot[i] for i in isl] == list(range(slot[isl[0]], slot[isl[0]] + len(isl)))
            if contiguous and all(x is not None and x.kind is LinkKind.NV for x in links):
                labels = sorted({x.label for x in links})
                x0 = LABEL_W + slot[isl[0]] * (TILE_W + GAP) - 6
                rect = QRectF(x0, top - 26, len(isl) * (TILE_W + GAP) - GAP + 12, TILE_H + 32)
                island = Island(rect, isl, f"NVLink island: GPUs {isl[0]}–{isl[-1]}, all-to-all "
                                           f"{'/'.join(labels)}", self.colours)
                self.scene.addItem(island)
                self.islands.append(island)
                banded.update(pairs)
        for link in node.links:
            if (link.a, link.b) in banded or link.a not in slot or link.b not in slot:
                continue
            a = QPointF(LABEL_W + slot[link.a] * (TILE_W + GAP) + TILE_W / 2, top)
            b = QPointF(LABEL_W + slot[link.b] * (TILE_W + GAP) + TILE_W / 2, top)
            arc = LinkArc(link, a, b)
            self.scene.addItem(arc)
            self.arcs.append(arc)

    def describe(self) -> str:
        """The picture in words (screen readers, tests)."""
        parts = [self.summary.text()]
        parts += [i.label for i in self.islands]
        kinds: dict[str, int] = {}
        for arc in self.arcs:
            kinds[arc.link.label] = kinds.get(arc.link.label, 0) + 1
        parts += [f"{n} {k} link(s)" for k, n in sorted(kinds.items())]
        return "; ".join(parts)
