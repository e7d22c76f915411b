"""Undoable placement edits: a move is one ``doc.set_plan`` with the overrides ``check_move`` gave.

The plan is the only state the board has (pools and replicas are derived from its keys), so one
``set_plan`` on the document's undo stack is the whole edit; Ctrl+Z anywhere in the wizard undoes it.
"""

from __future__ import annotations

from wizard.core.placement import BoardMove
from wizard.gui.document import PlanDocument


def push_move(doc: PlanDocument, move: BoardMove) -> bool:
    """Apply an accepted move as one undo step; False when it was refused or changes nothing (the document's say)."""
    if not move.ok or move.plan is None:
        return False
    return doc.set_plan(move.plan, text=move.text)
