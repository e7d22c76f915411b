"""The dataflow editor: which stages verl's training step runs and what feeds what.

Model in wizard.core.dataflow; here the scene and items (drawing), interactions (gestures),
commands (undo) and the editor widget a host page embeds: ``DataflowEditor(doc)``.
"""

from wizard.gui.dataflow.view import DataflowEditor

__all__ = ["DataflowEditor"]
