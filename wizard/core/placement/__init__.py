"""Where verl 0.9.1 puts each role: resource pools over the cluster and rollout replicas.

``pools`` builds the placement verl would (its pools over the cluster; ``groups``: the TP x DP x PP replica groups,
their links and what verl refuses about them; ``models``: what a placement is); ``moves`` says which
moves of a role between pools verl can run by config alone, and the overrides that make them; ``board``
is the placement board's model: the drop targets of a placed plan, the size of a new pool, a proposed
drop (``propose``) with the verdict and the plan it makes, and the machine drawn when none was chosen.
How full each GPU gets on the board is :mod:`wizard.core.memory.board` (memory depends on placement).
"""

from wizard.core.face import face

# The names callers outside this package use, by the module that defines them.
__getattr__, __all__ = face(__name__, {
    "BoardMove": "board",
    "NEW_TITLES": "board",
    "PlacedPlan": "board",
    "kept_machine": "board",
    "plain_cluster": "board",
    "planned_gpus": "board",
    "propose": "board",
    "role_title": "board",
    "target_title": "board",
    "Placement": "models",
    "plan_placement": "pools",
    "pool_cluster": "pools",
})
