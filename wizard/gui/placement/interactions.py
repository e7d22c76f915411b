"""Dragging a role chip onto a pool (one small object per gesture, after orange-canvas-core).

The gesture asks nothing itself: it is handed the core's answer for every target (``propose`` →
``check_move``) when it starts, lights the targets that can take the role, greys the others with the
reason, and on release says what the drop means. The board turns an accepted drop into one undoable edit.
"""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QGraphicsScene

from wizard.core.placement import BoardMove, role_title, target_title
from wizard.gui.placement.items import Region, RoleChip


@dataclass(frozen=True)
class RoleDrop:
    """How a drag ended: move (with the Move), refused (with the reason) or cancel."""

    kind: str
    move: BoardMove | None = None
    reason: str = ""


class RoleDrag:
    """Carry ``chip``'s role over the board; ``answers`` holds the core's verdict for each target."""

    def __init__(self, scene: QGraphicsScene, chip: RoleChip, regions: list[Region], answers: dict[str, BoardMove],
                 grab: QPointF) -> None:
        self.chip, self.regions, self.answers = chip, regions, answers
        self.offset = grab - chip.scenePos()
        self.home = chip.pos()
        self.hovered: Region | None = None
        for region in regions:
            move = answers.get(region.target)
            if move is None:
                continue
            region.set_state(Region.LIT if move.ok else Region.REFUSED, move.verdict.reason)
        chip.setOpacity(0.85)
        chip.setZValue(20)
        self.colour = QColor("#2e7d32")

    def target_at(self, pos: QPointF) -> Region | None:
        # the last drawn (top-most) region wins; scanning a few dozen rectangles is cheaper than items()
        for region in reversed(self.regions):
            if region.target in self.answers and region.sceneBoundingRect().contains(pos):
                return region
        return None

    def move(self, pos: QPointF) -> tuple[str, Region | None]:
        """Follow the mouse: the hint for the status line, and the target under the mouse (None: none)."""
        self.chip.setPos(pos - self.offset)
        region = self.target_at(pos)
        if region is not self.hovered:
            if self.hovered is not None:
                back = self.answers[self.hovered.target]
                self.hovered.set_state(Region.LIT if back.ok else Region.REFUSED, back.verdict.reason)
            if region is not None and self.answers[region.target].ok:
                region.set_state(Region.HOVER, self.answers[region.target].verdict.reason)
            self.hovered = region
        role = role_title(self.chip.role)
        if region is None:
            return (f"Dragging the {role}: green pools can take it; grey ones say why not when you hover them"), None
        move = self.answers[region.target]
        where = target_title(region.target)
        if not move.ok:
            return f"Refused: {move.verdict.reason}", region
        keys = " ".join(move.verdict.overrides) or "no key changes"
        return f"Release to run the {role} on {where}: {keys}", region

    def release(self, pos: QPointF) -> RoleDrop:
        region = self.target_at(pos)
        self.finish()
        if region is None:
            return RoleDrop("cancel")
        move = self.answers[region.target]
        if not move.ok:
            return RoleDrop("refused", move=move, reason=move.verdict.reason)
        return RoleDrop("move", move=move)

    def finish(self) -> None:
        for region in self.regions:
            region.set_state(Region.NORMAL)
        self.chip.setPos(self.home)
        self.chip.setOpacity(1.0)
        self.chip.setZValue(5)
