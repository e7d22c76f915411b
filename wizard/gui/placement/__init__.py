"""The placement board: GPUs drawn from the cluster, pools as regions, roles as chips dragged between pools.

Model in wizard.core.placement (pools, replicas, the moves a drop may make: ``placement.board``) and
wizard.core.memory (per-GPU memory and the fit verdict: ``memory.board``); the plan and its assessment are the
document's, a drag candidate's is ``wizard.usecases.board``'s. Here the scene and items (drawing), interactions (the drag), commands (undo), the keyboard dialog and the widget a host page embeds:
``PlacementBoard(doc)``.
"""

from wizard.gui.placement.view import PlacementBoard

__all__ = ["PlacementBoard"]
