"""verl-wizard: plan, check and write verl 0.9.x RL post-training runs."""

__version__ = "0.1.0"
