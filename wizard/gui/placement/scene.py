"""The QGraphicsScene of the placement board: node rows of GPU tiles, pools as regions, replicas, role chips.

``set_state`` lays the board out once per plan (never during a drag); identical neighbouring nodes collapse into
one row ("node0–127 ×128"), so 128 x 8 GPUs draw as a handful of rows. ``preview`` only repaints the tiles'
memory bars with a candidate's estimate. Gestures end in signals (``move_requested``, ``refused``) that the
board turns into an undoable edit; per-move feedback goes through plain callbacks (see the dataflow scene on
why not Signals).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsScene, QGraphicsSceneMouseEvent, QGraphicsSimpleTextItem

from wizard.core.hardware.cluster import Cluster, ClusterNode
from wizard.core.memory.board import BoardState
from wizard.core.placement.board import NEW_TITLES, BoardMove
from wizard.gui.placement.interactions import RoleDrop, RoleDrag
from wizard.gui.placement.items import (
    GAP,
    TILE_H,
    TILE_W,
    GpuTile,
    LinkBar,
    Region,
    ReplicaOutline,
    RoleChip,
    pool_colour,
    small_font,
)

LABEL_W, HEADER, FOOTER, ROW_GAP = 150.0, 30.0, 40.0, 16.0
COLLAPSE_AT = 3  # this many identical nodes in a row draw as one


def _runs(indices: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in sorted(indices):
        if out and out[-1][-1] == i - 1:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def _indices(node: ClusterNode) -> list[int]:
    return [g.index for g in node.gpus] if node.gpus else list(range(node.gpu_count))


class PlacementScene(QGraphicsScene):
    move_requested = Signal(object)  # BoardMove
    refused = Signal(str)

    def __init__(self, parent=None) -> None:
        super().__init__(parent)
        self.setBackgroundBrush(QColor("#f7f8fa"))
        self.setItemIndexMethod(QGraphicsScene.BspTreeIndex)
        self.state: BoardState | None = None
        self.tiles: dict[tuple[str, int], GpuTile] = {}
        self.regions: list[Region] = []
        self.chips: dict[str, RoleChip] = {}
        self.rows: list[tuple[str, list[str]]] = []  # (label, node names)
        self._drag: RoleDrag | None = None
        self.propose_all: Callable[[str], dict[str, BoardMove]] = lambda role: {}
        self.on_hint: Callable[[str], None] = lambda text: None
        self.on_hover: Callable[[BoardMove | None], None] = lambda move: None

    # -- layout (once per plan) -------------------------------------------------------------------------------
    def set_state(self, state: BoardState, machine: Cluster) -> None:
        if self._drag is not None:
            self._drag.finish()
            self._drag = None
        self.clear()
        self.state = state
        self.tiles, self.regions, self.chips, self.rows = {}, [], {}, []
        y = 0.0
        for label, nodes in self._group(state, machine):
            self._row(state, nodes, label, y)
            y += HEADER + TILE_H + FOOTER + ROW_GAP
        self._slots(state, y)
        self.setSceneRect(self.itemsBoundingRect().adjusted(-20, -20, 20, 20))

    def _signature(self, state: BoardState, node: ClusterNode) -> tuple:
        idx = _indices(node)
        pools = tuple(state.pool_of(node.name, i) for i in idx)
        est = tuple(id(state.estimate_of(node.name, i)) for i in idx)
        reps = tuple((g.role, g.tp, tuple(r.index for r in g.gpus if r.node == node.name), g.worst_link)
                     for g in state.placement.replicas if any(r.node == node.name for r in g.gpus))
        return (len(idx), pools, est, reps, tuple(map(tuple, node.nvlink_islands())), node.interconnect)

    def _group(self, state: BoardState, machine: Cluster) -> list[tuple[str, list[ClusterNode]]]:
        nodes = [n for n in machine.nodes if n.alive and n.gpu_count > 0]
        runs: list[list[ClusterNode]] = []
        sigs: list[tuple] = []
        for node in nodes:
            sig = self._signature(state, node)
            if runs and sigs[-1] == sig:
                runs[-1].append(node)
            else:
                runs.append([node])
                sigs.append(sig)
        out: list[tuple[str, list[ClusterNode]]] = []
        for run in runs:
            if len(run) >= COLLAPSE_AT:
                out.append((f"{run[0].name} – {run[-1].name}  ×{len(run)}", run))
            else:
                out += [(n.name, [n]) for n in run]
        return out

    def _x(self, slot: int) -> float:
        return LABEL_W + slot * (TILE_W + GAP)

    def _row(self, state: BoardState, nodes: list[ClusterNode], label: str, y: float) -> None:
        node = nodes[0]
        self.rows.append((label, [n.name for n in nodes]))
        idx = _indices(node)
        slot = {i: k for k, i in enumerate(idx)}
        top, bottom = y + HEADER, y + HEADER + TILE_H
        self._label(node, label, y)
        for i in idx:
            tile = GpuTile(node.name, i, f"GPU {i}")
            tile.setPos(self._x(slot[i]), top)
            tile.set_estimate(state.estimate_of(node.name, i), state.report)
            self.addItem(tile)
            for n in nodes:
                self.tiles[(n.name, i)] = tile
        for pool in state.placement.pools:
            mine = [g.index for g in pool.gpus if g.node == node.name]
            for run in _runs(mine):
                rect = QRectF(self._x(slot[run[0]]) - 5, y, (TILE_W + GAP) * len(run), HEADER + TILE_H + FOOTER - 4)
                title = f"{pool.name} · {pool.per_node}×{pool.nnodes}"
                region = Region(pool.name, rect, pool_colour(pool.name), title)
                self.addItem(region)
                self.regions.append(region)
                self._chips(pool.name, region)
        self._replicas(state, node, slot, top, bottom)
        self._links(node, slot, bottom)

    def _label(self, node: ClusterNode, label: str, y: float) -> None:
        text = QGraphicsSimpleTextItem(label)
        text.setFont(small_font(9, bold=True))
        text.setPos(0, y + HEADER)
        self.addItem(text)
        gpu = node.gpus[0] if node.gpus else None
        mem = f"{gpu.memory_total_gib:.0f} GiB" if gpu is not None and gpu.memory_total_bytes else "memory ?"
        model = (gpu.catalogue_id or gpu.name) if gpu is not None else "GPU"
        sub = QGraphicsSimpleTextItem(f"{node.gpu_count} × {model}\n{mem} each")
        sub.setFont(small_font(7.5))
        sub.setBrush(QColor("#52606d"))
        sub.setPos(0, y + HEADER + 18)
        self.addItem(sub)

    def _chips(self, pool: str, region: Region) -> None:
        x = region.rect().left() + region.text.boundingRect().width() + 14
        roles = [r for r, p in self.state.roles() if p == pool and r not in self.chips]
        for role in roles:
            chip = RoleChip(role, pool)
            chip.setPos(x, region.rect().top() + 4)
            self.addItem(chip)
            self.chips[role] = chip
            x += chip.width + 6

    def _replicas(self, state: BoardState, node: ClusterNode, slot: dict[int, int], top: float, bottom: float) -> None:
        for g in state.placement.replicas:
            mine = [r.index for r in g.gpus if r.node == node.name and r.index in slot]
            for run in _runs(mine):
                rect = QRectF(self._x(slot[run[0]]) - 2, top - 2, (TILE_W + GAP) * len(run) - GAP + 4, TILE_H + 4)
                shape = f"TP{g.tp}" + (f"×DP{g.dp}" if g.dp > 1 else "") + (f"×PP{g.pp}" if g.pp > 1 else "")
                self.addItem(ReplicaOutline(rect, f"{g.role} replica {g.rank} · {shape}", g.worst_link,
                                            right=not g.role.startswith("rollout")))

    def _links(self, node: ClusterNode, slot: dict[int, int], bottom: float) -> None:
        if node.gpu_count < 2:
            return
        islands = [isl for isl in node.nvlink_islands() if len(isl) > 1]
        if islands:
            for isl in islands:
                for run in _runs([i for i in isl if i in slot]):
                    link = node.link(run[0], run[-1]) if len(run) > 1 else None
                    label = link.label if link is not None else "NV"
                    rect = QRectF(self._x(slot[run[0]]), bottom + 17, (TILE_W + GAP) * len(run) - GAP, 3)
                    self.addItem(LinkBar(rect, True, f"NVLink island ({label}) of GPUs {run[0]}–{run[-1]}"))
        elif node.interconnect == "pcie" or node.links:
            rect = QRectF(self._x(0), bottom + 17, (TILE_W + GAP) * len(slot) - GAP, 3)
            self.addItem(LinkBar(rect, False, "PCIe only: no NVLink between these GPUs"))

    def _slots(self, state: BoardState, y: float) -> None:
        x = LABEL_W
        for target in state.targets():
            if not target.startswith("new:"):
                continue
            pool = target.removeprefix("new:")
            rect = QRectF(x, y, 330, 70)
            region = Region(target, rect, QColor("#ffffff"), NEW_TITLES[pool], dashed=True)
            hint = QGraphicsSimpleTextItem("Drop a role here to give it GPUs of its own\n(spare GPUs, else the "
                                           "training pool's last node\nor half of its one node)", region)
            hint.setFont(small_font(7))
            hint.setBrush(QColor("#52606d"))
            hint.setPos(rect.left() + 6, rect.top() + 22)
            self.addItem(region)
            self.regions.append(region)
            x += 350

    # -- preview ------------------------------------------------------------------------------------------------
    def preview(self, state: BoardState | None) -> None:
        """Repaint the memory bars with ``state``'s estimate (None: back to the plan's own)."""
        shown = state or self.state
        if shown is None:
            return
        seen: set[int] = set()
        for (node, index), tile in self.tiles.items():
            if id(tile) in seen or tile.node != node:
                continue
            seen.add(id(tile))
            tile.set_estimate(shown.estimate_of(node, index), shown.report, preview=state is not None)

    # -- lookups ----------------------------------------------------------------------------------------------
    def regions_of(self, target: str) -> list[Region]:
        return [r for r in self.regions if r.target == target]

    # -- gestures ---------------------------------------------------------------------------------------------
    def _chip_at(self, pos: QPointF) -> RoleChip | None:
        return next((i for i in self.items(pos) if isinstance(i, RoleChip)), None)

    def mousePressEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802 - Qt's name
        chip = self._chip_at(event.scenePos()) if event.button() == Qt.LeftButton else None
        if chip is None:
            super().mousePressEvent(event)
            return
        self._drag = RoleDrag(self, chip, self.regions, self.propose_all(chip.role), event.scenePos())
        self._follow(event.scenePos())
        event.accept()

    def mouseMoveEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if self._drag is not None:
            self._follow(event.scenePos())
            event.accept()
            return
        super().mouseMoveEvent(event)

    def _follow(self, pos: QPointF) -> None:
        before = self._drag.hovered
        hint, region = self._drag.move(pos)
        self.on_hint(hint)
        if region is not before:
            move = self._drag.answers.get(region.target) if region is not None else None
            self.on_hover(move if move is not None and move.ok else None)

    def mouseReleaseEvent(self, event: QGraphicsSceneMouseEvent) -> None:  # noqa: N802
        if self._drag is None:
            super().mouseReleaseEvent(event)
            return
        drag, self._drag = self._drag, None
        outcome: RoleDrop = drag.release(event.scenePos())
        self.on_hover(None)
        if outcome.kind == "move":
            self.move_requested.emit(outcome.move)
        elif outcome.kind == "refused":
            self.refused.emit(outcome.reason)
        else:
            self.on_hint("")
        event.accept()

    @property
    def dragging(self) -> bool:
        return self._drag is not None
