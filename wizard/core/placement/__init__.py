"""Where verl 0.9.1 puts each role: resource pools over the cluster and rollout replicas.

``pools`` builds the placement verl would (pools, TP x DP x PP replica groups); ``moves`` says which
moves of a role between pools verl can run by config alone, and the overrides that make them; ``board``
is the placement board's model: the drop targets of a placed plan, the size of a new pool, a proposed
drop (``propose``) with the verdict and the plan it makes, and the machine drawn when none was chosen.
How full each GPU gets on the board is :mod:`wizard.core.memory.board` (memory depends on placement).
"""
