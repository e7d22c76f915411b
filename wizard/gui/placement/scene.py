"""The QGraphicsScene of the placement board: node rows of GPU tiles, pools as regions, replicas, role chips.

``set_state`` lays the board out once per plan (never during a drag). The board is drawn at a size where every
text is readable (``items.MIN_PT``); instead of shrinking, a node's GPUs wrap onto as many lines as the view's
width needs (``columns``, set by the view), and identical neighbouring nodes collapse into one row ("node0 –
node127 ×128"), so 128 x 8 GPUs draw as a handful of lines. ``preview`` only repaints the tiles' memory bars with
a candidate's estimate. Gestures end in signals (``move_requested``, ``refused``) that the board turns into an
undoable edit; per-move feedback goes through plain callbacks (see the dataflow scene on why not Signals).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from PySide6.QtCore import QPointF, QRectF, Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsScene, QGraphicsSceneMouseEvent, QGraphicsTextItem

from wizard.core.hardware import Cluster, ClusterNode
from wizard.core.memory import PHASES, BoardState
from wizard.core.placement import NEW_TITLES, BoardMove
from wizard.gui.placement.interactions import RoleDrop, RoleDrag
from wizard.gui.placement.items import (
    GAP,
    TILE_H,
    TILE_W,
    NO_ESTIMATE,
    NO_GPU_MODEL,
    GpuTile,
    LinkBar,
    Region,
    ReplicaOutline,
    RoleChip,
    board_font,
    fits,
    not_placed,
    pool_colour,
    text_item,
)
from wizard.gui.theme import canvas_colours

PAD = GAP / 2 - 1  # a region's margin around its tiles
NODE_H, TITLE_H, CHIP_LINE, FOOTER, LINE_GAP, ROW_GAP = 28.0, 24.0, 27.0, 42.0, 10.0, 14.0
COLLAPSE_AT = 2  # this many identical nodes in a row draw as one
SLOT_H = 64.0
DEFAULT_COLUMNS = 8
MARGIN = 8.0  # around the board
SCROLL_BAR = 16.0  # kept free: a long board has a vertical scroll bar


POOL_ABOUT = {
    "global_pool": "the pool verl builds from trainer.n_gpus_per_node × trainer.nnodes: the actor, the rollout "
                   "engines and the reference model share its GPUs (one process per GPU), the critic too",
    "reward_pool": "the reward model's own GPUs (reward.reward_model.enable_resource_pool)",
    "teacher_pool": "the distillation teacher's own GPUs (distillation.n_gpus_per_node × distillation.nnodes)",
}


def pool_title(pool) -> str:
    """``global_pool · 8 GPUs``, ``global_pool · 8 GPUs × 2 nodes``: the pool's shape in words (not ``8×1``)."""
    gpus = f"{pool.per_node} GPU{'s' if pool.per_node != 1 else ''}"
    return f"{pool.name} · {gpus}" + (f" × {pool.nnodes} nodes" if pool.nnodes != 1 else "")


def pool_about(pool) -> str:
    what = POOL_ABOUT.get(pool.name) or ("a standalone rollout replica's own GPUs (trainer.v1.trainer_mode="
                                         "separate_async)" if pool.name.startswith("rollout") else "a Ray resource pool")
    roles = ", ".join(pool.roles)
    return (f"{pool_title(pool)}: {what}. Runs here: {roles}. Drag a role chip onto another pool to move it."
            if roles else f"{pool_title(pool)}: {what}.")


def columns_for(width: float) -> int:
    """How many tiles fit side by side in ``width`` pixels at the board's own scale."""
    return max(1, int((width - SCROLL_BAR - 2 * MARGIN - 2 * PAD + GAP) // (TILE_W + GAP)))


def _runs(slots: list[int]) -> list[list[int]]:
    out: list[list[int]] = []
    for i in sorted(slots):
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
        self.setItemIndexMethod(QGraphicsScene.BspTreeIndex)
        self.state: BoardState | None = None
        self.machine: Cluster | None = None
        self.columns = DEFAULT_COLUMNS  # the most tiles on one line (the view sets it from its width)
        self.tiles: dict[tuple[str, int], GpuTile] = {}
        self.regions: list[Region] = []
        self.chips: dict[str, RoleChip] = {}
        self.rows: list[tuple[str, list[str]]] = []  # (label, node names)
        self.lines = 0  # lines of tiles drawn
        self._drag: RoleDrag | None = None
        self.propose_all: Callable[[str], dict[str, BoardMove]] = lambda role: {}
        self.on_hint: Callable[[str], None] = lambda text: None
        self.on_hover: Callable[[BoardMove | None], None] = lambda move: None

    # -- layout (once per plan, and when the width or the theme changes) -----------------------------------------
    def set_state(self, state: BoardState, machine: Cluster, columns: int | None = None) -> None:
        if self._drag is not None:
            self._drag.finish()
            self._drag = None
        self.clear()
        self.colours = canvas_colours()
        self.setBackgroundBrush(QColor(self.colours.background))
        self.state, self.machine = state, machine
        if columns is not None:
            self.columns = max(1, columns)
        self.tiles, self.regions, self.chips, self.rows, self.lines = {}, [], {}, [], 0
        y = 0.0
        for label, nodes in self._group(state, machine):
            y = self._row(state, nodes, label, y) + ROW_GAP
        self._slots(state, y)
        self.setSceneRect(self.itemsBoundingRect().adjusted(-MARGIN, -MARGIN, MARGIN, MARGIN))

    def relayout(self, columns: int | None = None) -> bool:
        """Lay the same state out again (another width, another theme); False while a drag is under way."""
        if self.state is None or self.machine is None or self._drag is not None:
            return False
        self.set_state(self.state, self.machine, columns)
        return True

    def _signature(self, state: BoardState, node: ClusterNode) -> tuple:
        idx = _indices(node)
        pools = tuple(state.pool_of(node.name, i) for i in idx)
        est = tuple(id(state.estimate_of(node.name, i)) for i in idx)
        reps = tuple((g.role, g.tp, tuple(r.index for r in g.gpus if r.node == node.name), g.worst_link)
                     for g in state.placement.replicas if any(r.node == node.name for r in g.gpus))
        gpu = node.gpus[0] if node.gpus else None
        model = (gpu.catalogue_id or gpu.name, gpu.memory_total_bytes) if gpu is not None else None
        return (len(idx), pools, est, reps, tuple(map(tuple, node.nvlink_islands())), node.interconnect, model)

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

    def _x(self, col: int) -> float:
        return PAD + col * (TILE_W + GAP)

    def _row(self, state: BoardState, nodes: list[ClusterNode], label: str, y: float) -> float:
        """One node (or a run of identical ones): its header, then its GPUs on as many lines as ``columns`` needs.
        Returns the y below it."""
        node = nodes[0]
        self.rows.append((label, [n.name for n in nodes]))
        self._titled: set[str] = set()
        idx = _indices(node)
        self._label(node, label, y)
        y += NODE_H
        lines = math.ceil(len(idx) / self.columns)
        per_line = math.ceil(len(idx) / lines)  # 8 GPUs on two lines are 4 + 4, never 7 + 1
        collapsed = len(nodes) > 1
        for start in range(0, len(idx), per_line):
            line = idx[start:start + per_line]
            col = {i: k for k, i in enumerate(line)}
            y = self._line(state, nodes, line, col, y, collapsed, last=start + per_line >= len(idx)) + LINE_GAP
            self.lines += 1
        return y - LINE_GAP

    def _line(self, state: BoardState, nodes: list[ClusterNode], line: list[int], col: dict[int, int], y: float,
              collapsed: bool, last: bool) -> float:
        node = nodes[0]
        segments = []  # (pool, columns of this line, chips to place)
        for pool in state.placement.pools:
            mine = [col[g.index] for g in pool.gpus if g.node == node.name and g.index in col]
            for run in _runs(mine):
                roles = [r for r, p in state.roles() if p == pool.name and r not in self.chips
                         and not any(r in s[2] for s in segments if s[0] is pool)]
                segments.append((pool, run, roles))
        placed = [(seg, self._chip_lines(seg[2], seg[0].name, (TILE_W + GAP) * len(seg[1]) - GAP + 2 * PAD - 12))
                  for seg in segments]
        titled = [seg[0].name not in self._titled for seg, _ in placed]
        header = (TITLE_H if any(titled) else PAD) + max((len(lines) for _, lines in placed), default=0) * CHIP_LINE + 2
        top = y + header
        for ((pool, run, _roles), chip_lines), first in zip(placed, titled):
            rect = QRectF(self._x(run[0]) - PAD, y, (TILE_W + GAP) * len(run) - GAP + 2 * PAD, header + TILE_H + FOOTER)
            # a pool wrapped onto more lines is named once, on its first
            title = pool_title(pool) if fits(pool_title(pool), "pool", rect.width() - 12) else pool.name
            region = Region(pool.name, rect, pool_colour(pool.name, self.colours), title if first else "")
            region.set_about(pool_about(pool))
            self._titled.add(pool.name)
            self.addItem(region)
            self.regions.append(region)
            for k, chips in enumerate(chip_lines):
                x = rect.left() + 6
                for chip in chips:
                    chip.setPos(x, y + TITLE_H + k * CHIP_LINE)
                    self.addItem(chip)
                    self.chips[chip.role] = chip
                    x += chip.width + 6
        pooled = {i for i in line if any(col[i] in run for _pool, run, _roles in segments)}  # runs hold columns
        for i in line:
            tile = GpuTile(node.name, i, f"GPU {i}")
            gpu = node.gpus[0] if node.gpus else None
            tile.no_estimate = (not_placed(state.placement.pools) if i not in pooled else
                                NO_ESTIMATE if gpu is not None and gpu.memory_total_bytes else NO_GPU_MODEL)
            tile.setPos(self._x(col[i]), top)
            tile.set_estimate(state.estimate_of(node.name, i), state.report, short=_short(state))
            self.addItem(tile)
            for n in nodes:
                self.tiles[(n.name, i)] = tile
        self._replicas(state, node, col, top, collapsed)
        self._links(node, line, col, top + TILE_H, last)
        return top + TILE_H + FOOTER

    @staticmethod
    def _chip_lines(roles: list[str], pool: str, width: float) -> list[list[RoleChip]]:
        """The chips of ``roles`` in lines no wider than ``width`` (one GPU's pool holds three chips on two lines)."""
        lines: list[list[RoleChip]] = []
        used = width + 1
        for role in roles:
            chip = RoleChip(role, pool)
            if used + chip.width > width and (not lines or lines[-1]):
                lines.append([])
                used = 0.0
            lines[-1].append(chip)
            used += chip.width + 6
        return lines

    def _label(self, node: ClusterNode, label: str, y: float) -> None:
        c = self.colours
        text = text_item(label, "node", c.text)
        text.setPos(0, y + 2)
        self.addItem(text)
        gpu = node.gpus[0] if node.gpus else None
        mem = (f"{gpu.memory_total_gib:.1f} GiB each" if gpu is not None and gpu.memory_total_bytes
               else "GPU model and memory unknown")
        model = (gpu.catalogue_id or gpu.name) if gpu is not None else "GPU"
        bars = [p.tag for p in PHASES if p.value in self._phases()]
        key = f" · bars: {' '.join(bars)}" if bars else ""  # the order of each tile's bars, left to right
        sub = text_item(f"{node.gpu_count} × {model} · {mem}{key}", "node_facts", c.muted)
        sub.setPos(text.boundingRect().width() + 14, y + 3)
        sub.setToolTip("Each GPU's bars: its memory in each phase of a training step, in step order: "
                       + ", ".join(f"{p.tag} = {p.title}" for p in PHASES if p.value in self._phases()))
        self.addItem(sub)

    def _phases(self) -> set[str]:
        """The phases the plan's estimate has (the bars each tile draws)."""
        report = self.state.report if self.state is not None else None
        return {ph.name for g in (report.groups if report is not None else []) for ph in g.phases}

    def _replicas(self, state: BoardState, node: ClusterNode, col: dict[int, int], top: float,
                  collapsed: bool) -> None:
        for g in state.placement.replicas:
            mine = [col[r.index] for r in g.gpus if r.node == node.name and r.index in col]
            for run in _runs(mine):
                rect = QRectF(self._x(run[0]) - 2, top - 2, (TILE_W + GAP) * len(run) - GAP + 4, TILE_H + 4)
                shape = f"TP{g.tp}" + (f"×DP{g.dp}" if g.dp > 1 else "") + (f"×PP{g.pp}" if g.pp > 1 else "")
                name = f"{g.role} replica" if collapsed else f"{g.role} replica {g.rank}"
                self.addItem(ReplicaOutline(rect, f"{name} · {shape}", g.worst_link,
                                            right=not g.role.startswith("rollout")))

    def _links(self, node: ClusterNode, line: list[int], col: dict[int, int], bottom: float, last: bool) -> None:
        if node.gpu_count < 2:
            return
        islands = [isl for isl in node.nvlink_islands() if len(isl) > 1]
        if islands:
            for isl in islands:
                here = [i for i in isl if i in col]
                for run in _runs([col[i] for i in here]):
                    a, b = line[run[0]], line[run[-1]]
                    link = node.link(isl[0], isl[-1]) if len(isl) > 1 else None
                    label = link.label if link is not None else "NV"
                    rect = QRectF(self._x(run[0]), bottom + 19, (TILE_W + GAP) * len(run) - GAP, 3)
                    whole = (a, b) == (isl[0], isl[-1])
                    self.addItem(LinkBar(rect, True, f"NVLink island ({label}): GPUs {isl[0]}–{isl[-1]}"
                                         + ("" if whole else f" ({a}–{b} on this line)")))
        elif node.interconnect == "pcie" or node.links:
            rect = QRectF(self._x(0), bottom + 19, (TILE_W + GAP) * len(line) - GAP, 3)
            self.addItem(LinkBar(rect, False, "PCIe only: no NVLink between these GPUs", label=last))

    def _slots(self, state: BoardState, y: float) -> None:
        c = self.colours
        span = min(self.columns, 2)
        width = (TILE_W + GAP) * span - GAP + 2 * PAD
        per_line = max(1, self.columns // span)
        k = 0
        for target in state.targets():
            if not target.startswith("new:"):
                continue
            pool = target.removeprefix("new:")
            x = (k % per_line) * (width + GAP)
            top = y + (k // per_line) * (SLOT_H + GAP)
            rect = QRectF(x, top, width, SLOT_H)
            region = Region(target, rect, QColor(c.surface), NEW_TITLES[pool], dashed=True)
            region.setToolTip("Drop a role here to give it GPUs of its own: spare GPUs, else the training pool's "
                              "last node, or half of its one node")
            region.hint = hint = QGraphicsTextItem("Drop a role here to give it GPUs of its own", region)  # kept
            hint.setFont(board_font("hint"))
            hint.setDefaultTextColor(QColor(c.muted))
            hint.setTextWidth(width - 8)
            hint.setPos(rect.left() + 2, rect.top() + TITLE_H - 4)
            if hint.boundingRect().height() > SLOT_H - TITLE_H:
                region.setRect(QRectF(rect.left(), rect.top(), width, TITLE_H + hint.boundingRect().height()))
            self.addItem(region)
            self.regions.append(region)
            k += 1

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
            tile.set_estimate(shown.estimate_of(node, index), shown.report, preview=state is not None,
                              short=_short(shown))

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


def _short(state) -> bool:
    """The plan fits while samples are short: its GPUs over memory at the configured lengths read "if short"."""
    v = getattr(state, "verdict", None)
    return v is not None and v.word == "fits_while_short"
