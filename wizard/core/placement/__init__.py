"""Where verl 0.9.1 puts each role: resource pools over the cluster and rollout replicas.

``pools`` builds the placement verl would (pools, TP x DP x PP replica groups); ``moves`` says which
moves of a role between pools verl can run by config alone, and the overrides that make them.
"""
