"""The dataflow editor: which stages verl's training step runs and what feeds what.

Model in wizard.core.dataflow; the graph as drawn is the PlanDocument's (``doc.graph``, edited with
``doc.set_graph``, one undo step). Here the scene and items (drawing), interactions (gestures), dialogs
(the keyboard's connect and cut) and the editor widget a host page embeds: ``DataflowEditor(doc)``.
"""

from wizard.gui.dataflow.view import DataflowEditor

__all__ = ["DataflowEditor"]
