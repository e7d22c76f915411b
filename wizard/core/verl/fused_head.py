"""Where verl 0.9.1's fused log-prob head (``actor_rollout_ref.model.use_fused_kernels``) fails or differs from the
logits path: the check's rule ``model.fused_head`` and the advisor (which never offers or keeps such a config) read
it. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from wizard.core.verl.distillation import LOSSES
from wizard.core.verl.flags import truthy
from wizard.core.verl.keys import REF, A, D, M
from wizard.core.verl.roles import need_ref, ref_in_actor


class Head(Protocol):
    """What is read of a model's facts (wizard.core.models.facts.ModelFacts, which imports this package's keys)."""

    tie_word_embeddings: bool
    model_type: str


FUSED_KEY = f"{M}.use_fused_kernels"
# config.json's final_logit_softcapping: verl's fused head (dense_common.forward_with_torch_backend) multiplies by
# lm_head's weight and never applies the softcap, so its log-probs would differ from vLLM's
SOFTCAPPED_MODEL_TYPES = frozenset({"gemma2"})
# what the first log-prob pass stops with where FSDP2 left lm_head's weight sharded (measured: see fsdp2_lm_head)
DTENSOR_ERROR = ("RuntimeError: aten.mm.default got mixed torch.Tensor and DTensor, need to convert all torch.Tensor "
                 "to DTensor before calling distributed operators!")


def fsdp2_lm_head(values: Mapping, actor: Head | None) -> str | None:
    """The FSDP2 role whose untied lm_head the fused head cannot read, else None. FSDP2 shards an untied lm_head as
    a unit of its own (utils/fsdp_utils.py:549-570, by name, so with LoRA too), and the fused forward takes
    ``self.lm_head.weight`` without calling the module (models/transformers/dense_common.py:122-127), so nothing
    gathers it: the first log-prob pass multiplies by a sharded DTensor and stops (measured 2026-12-06 on an H100:
    Qwen2.5-7B, LoRA, FSDP2, advised-grpo-7b-full-1gpu-h100-3). A tied head is the embedding's weight, left in the
    root unit FSDP2 gathers for the forward (the 1.5B fused runs trained); FSDP1 keeps lm_head in the root unit. With
    LoRA the reference is the actor with its adapter off: no model of its own."""
    if actor is None or actor.tie_word_embeddings:
        return None
    if values.get(f"{A}.strategy") == "fsdp2":
        return "actor"
    if need_ref(values) and not ref_in_actor(values) and values.get(f"{REF}.strategy") == "fsdp2":
        return "ref"
    return None


def fused_head_refused(values: Mapping, actor: Head | None) -> bool:
    """Where the advisor does not offer the fused head: calculate_sum_pi_squared (its log-prob pass raises
    NotImplementedError, fsdp/transformer_impl.py:1343-1347), a top-k distillation loss (the fused forwards give no
    distillation_losses, :1362-1380), a softcapped head, and an untied lm_head on FSDP2 (fsdp2_lm_head)."""
    topk = truthy(values, f"{D}.enabled") and LOSSES.get(values.get(f"{D}.distillation_loss.loss_mode"), False)
    softcapped = actor is not None and actor.model_type in SOFTCAPPED_MODEL_TYPES
    return bool(truthy(values, f"{A}.calculate_sum_pi_squared") or topk or softcapped
                or fsdp2_lm_head(values, actor))


def fused_head_broken(values: Mapping, actor: Head | None) -> bool:
    """``values`` have the fused head on where FSDP2 leaves its lm_head sharded: what a move of the advisor's (to
    FSDP2) can bring about, so the advisor turns the head off with such a move and drops any state that still has it.
    The other refusals only keep the advisor from turning the head on; a user's own config with them is the check's
    (model.fused_head, algorithm.sum_pi_squared)."""
    return truthy(values, FUSED_KEY) and fsdp2_lm_head(values, actor) is not None
