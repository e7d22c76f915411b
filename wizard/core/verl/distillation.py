"""verl 0.9.1's distillation losses (trainer/distillation/losses.py @register_distillation_loss): name -> whether it
uses the top-k log-probs (the check's distillation rules and the advisor read it)."""

LOSSES = {"forward_kl_topk": True, **{k: False for k in ("kl", "k1", "abs", "mse", "k2", "low_var_kl", "k3")}}
