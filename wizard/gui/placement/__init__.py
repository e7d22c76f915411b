"""The placement board: GPUs drawn from the cluster, pools as regions, roles as chips dragged between pools.

Model in wizard.core.placement and wizard.core.memory.report; here the board's state (state.py), the scene
and items (drawing), interactions (the drag), commands (undo), the keyboard dialog and the widget a host page
embeds: ``PlacementBoard(doc)``.
"""

from wizard.gui.placement.view import PlacementBoard

__all__ = ["PlacementBoard"]
