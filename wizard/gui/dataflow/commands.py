"""Undoable graph edits, pushed on the PlanDocument's one undo stack.

An edit of the graph is a macro of two commands: the graph as drawn (it may hold what no key
can, such as a cut link), then one ``set_plan`` with the keys the graph now means. Undo puts both
back, so the picture and the plan never disagree; Ctrl+Z in any page undoes the graph edit too.
"""

from __future__ import annotations

import weakref
from typing import Protocol

from PySide6.QtGui import QUndoCommand
from shiboken6 import isValid

from wizard.core.dataflow.graph import Graph
from wizard.core.dataflow.keys import plan_from_graph
from wizard.gui.document import PlanDocument


class GraphHolder(Protocol):
    """The editor: the graph it shows, and how to show another."""

    graph: Graph

    def show_graph(self, graph: Graph) -> None: ...


class GraphStateCommand(QUndoCommand):
    """The graph as drawn before and after an edit. Holds the editor weakly: the stack outlives widgets."""

    def __init__(self, holder: GraphHolder, old: Graph, new: Graph, text: str) -> None:
        super().__init__(text)
        self._holder = weakref.ref(holder)
        self.old, self.new = old, new

    def _show(self, graph: Graph) -> None:
        holder = self._holder()
        if holder is not None and isValid(holder):
            holder.show_graph(graph)

    def redo(self) -> None:
        self._show(self.new)

    def undo(self) -> None:
        self._show(self.old)


def push_graph_edit(doc: PlanDocument, holder: GraphHolder, new: Graph, text: str) -> bool:
    """Make ``new`` the graph and the plan say the same thing, as one undo step; False when nothing changes."""
    old = holder.graph
    if new == old:
        return False
    plan = plan_from_graph(new, doc.plan)
    stack = doc.undo_stack
    stack.beginMacro(text)
    try:
        stack.push(GraphStateCommand(holder, old, new, text))
        if plan != doc.plan:
            doc.set_plan(plan, text=text)
    finally:
        stack.endMacro()
    return True
