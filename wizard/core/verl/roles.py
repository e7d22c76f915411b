"""Which models verl 0.9.1 loads for a config: one place for the rules, placement, memory and model facts.

Each function takes the resolved values of the keys it reads (a mapping, or anything with ``get``).
"""

from __future__ import annotations

from collections.abc import Mapping


def need_ref(values: Mapping) -> bool:
    """verl.trainer.ppo.utils.need_reference_policy: a KL in the reward or in the loss (Python's truth, as verl:
    a quoted 'false' counts as on)."""
    return bool(values.get("algorithm.use_kl_in_reward") or values.get("actor_rollout_ref.actor.use_kl_loss"))


def need_critic(values: Mapping) -> bool:
    """verl.trainer.ppo.utils.need_critic: critic.enable when set, else GAE."""
    enable = values.get("critic.enable")
    if enable is not None:
        return bool(enable)
    return values.get("algorithm.adv_estimator") == "gae"


def lora_rank(values: Mapping) -> int:
    """trainer_base: ``model.lora.rank`` first, then ``model.lora_rank``."""
    lora = values.get("actor_rollout_ref.model.lora")
    rank = lora.get("rank", 0) if isinstance(lora, Mapping) else 0
    if not isinstance(rank, int) or isinstance(rank, bool) or rank <= 0:
        rank = values.get("actor_rollout_ref.model.lora_rank")
        rank = rank if isinstance(rank, int) and not isinstance(rank, bool) else 0
    return max(0, rank)


def trained_lora_rank(values: Mapping) -> int:
    """The rank the actor's engine trains adapters at: verl's FSDP engine reads ``model.lora_rank`` only
    (workers/engine/fsdp/transformer_impl.py: ``_is_lora = lora_rank > 0``; ``model.lora`` is "megatron lora config",
    workers/config/model.py); the Megatron engine, :func:`lora_rank` (its ``lora.rank``)."""
    if values.get("actor_rollout_ref.actor.strategy") == "megatron":
        return lora_rank(values)
    rank = values.get("actor_rollout_ref.model.lora_rank")
    return max(0, rank) if isinstance(rank, int) and not isinstance(rank, bool) else 0


def ref_in_actor(values: Mapping) -> bool:
    """With LoRA the reference policy is the actor with its adapter off: no separate reference model."""
    return lora_rank(values) > 0 or values.get("actor_rollout_ref.model.lora_adapter_path") is not None
