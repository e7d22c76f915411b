"""The sections of verl 0.9.1's config tree the wizard reads, one name each: every module writes its keys from these
(``f"{R}.gpu_memory_utilization"``), so a prefix means the same section everywhere."""

from __future__ import annotations

ACTOR_ROLLOUT_REF = "actor_rollout_ref"
A = ACTOR = f"{ACTOR_ROLLOUT_REF}.actor"
AF = ACTOR_FSDP = f"{ACTOR}.fsdp_config"
M = MODEL = f"{ACTOR_ROLLOUT_REF}.model"
R = ROLLOUT = f"{ACTOR_ROLLOUT_REF}.rollout"
REF = f"{ACTOR_ROLLOUT_REF}.ref"
C = CRITIC = "critic"
CF = CRITIC_FSDP = f"{CRITIC}.fsdp"
RM = REWARD_MODEL = "reward.reward_model"
MGR = REWARD_MANAGER = "reward.reward_manager"
D = DISTILLATION = "distillation"

# A key two concerns read: the model's attention (flash-attn unless overridden; the smoke run sets sdpa without it).
ATTN_KEY = f"{MODEL}.override_config.attn_implementation"
