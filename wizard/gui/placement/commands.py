"""Undoable placement edits: a move is one ``doc.set_plan`` with the overrides ``check_move`` gave.

The plan is the only state the board has (pools and replicas are derived from its keys), so one
``set_plan`` on the document's undo stack is the whole edit; Ctrl+Z anywhere in the wizard undoes it.
"""

from __future__ import annotations

from wizard.gui.document import PlanDocument
from wizard.gui.placement.state import ROLE_TITLES, BoardMove, target_title


def move_text(move: BoardMove) -> str:
    return f"Move {ROLE_TITLES.get(move.role, move.role)} to {target_title(move.target)}"


def push_move(doc: PlanDocument, move: BoardMove) -> bool:
    """Apply an accepted move as one undo step; False when it was refused or changes nothing."""
    if not move.ok or move.plan is None or move.plan == doc.plan:
        return False
    doc.set_plan(move.plan, text=move_text(move))
    return True
