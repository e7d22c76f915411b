"""On-policy distillation: DistillationConfig and its loss and teacher classes (workers/config/distillation.py),
built when the trainer starts with distillation.enabled=true.

The single default teacher (``distillation.teacher_models.teacher_model``) fills the teacher pool
(distillation.n_gpus_per_node x nnodes) with as many replicas as fit; several teachers each give their own
num_replicas, and together they must fill the pool exactly (rule placement.teacher_groups, with the layout).
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.distillation import LOSSES
from wizard.core.verl.keys import D

L = f"{D}.distillation_loss"


def _err(keys: list[str], message: str, fix: str, overrides=(), auto=False):
    return finding(Severity.ERROR, keys,
                   message + " (verl builds distillation when the trainer starts)", fix, list(overrides), fix_auto=auto)


@rule("distillation.config", Stage.STARTUP)
def distillation(ctx: RuleContext):
    """DistillationLossConfig / DistillationConfig / DistillationTeacherModelConfig checks."""
    if not ctx.get(f"{D}.enabled"):
        return
    found = next(iter(_loss(ctx)), None) or next(iter(_teachers(ctx)), None)
    if found is not None:
        yield found


def _loss(ctx: RuleContext):
    mode = ctx.get(f"{L}.loss_mode")
    if mode not in LOSSES:
        yield _err([f"{L}.loss_mode"], f"Unsupported loss mode: {mode}. Supported modes are: {list(LOSSES)}",
                   f"Set {L}.loss_mode=k3", [f"{L}.loss_mode=k3"])
    elif ctx.get(f"{L}.policy_loss_mode") != "vanilla":
        yield _err([f"{L}.policy_loss_mode"], "Only vanilla policy loss is currently supported when use_policy_gradient "
                   f"is True, but got {ctx.get(f'{L}.policy_loss_mode')}.", f"Set {L}.policy_loss_mode=vanilla",
                   [f"{L}.policy_loss_mode=vanilla"], auto=True)
    elif not ctx.get(f"{L}.use_policy_gradient") and mode == "k1":
        yield _err([f"{L}.loss_mode", f"{L}.use_policy_gradient"], "Directly backpropagating k1 loss is incorrect since "
                   "gradient of k1 loss wrt model weights does not depend on teacher log probabilities.",
                   f"Use {L}.loss_mode=k3, or {L}.use_policy_gradient=true", [f"{L}.loss_mode=k3"])


def _teachers(ctx: RuleContext):
    teachers = ctx.get(f"{D}.teacher_models")
    per, nodes = ctx.int(f"{D}.n_gpus_per_node"), ctx.int(f"{D}.nnodes")
    if not isinstance(teachers, dict) or "teacher_model" not in teachers or None in (per, nodes):
        return
    pool = per * nodes
    names = list(teachers) if len(teachers) == 1 else [n for n in teachers if n != "teacher_model"]
    keys = set()
    for name in names:
        t = f"{D}.teacher_models.{name}"
        size = _replica(ctx, t)
        if size is None:
            return
        if len(teachers) == 1:
            if size and pool % size:
                yield _err([f"{t}.inference.tensor_model_parallel_size", f"{D}.n_gpus_per_node", f"{D}.nnodes"],
                           f"Single teacher's per_replica_world_size ({size}) must divide the distillation resource pool "
                           f"size (n_gpus_per_node={per} * nnodes={nodes} = {pool})",
                           f"Use a teacher TP x DP x PP that divides {pool}")
                return
            replicas, key = (pool // size if size else 0), "default"
        else:
            replicas, key = ctx.get(f"{t}.num_replicas"), ctx.get(f"{t}.key")
        missing = next((f for f, v in (("model_path", ctx.get(f"{t}.model_path")), ("key", key), ("num_replicas", replicas))
                        if v is None), None)
        if missing:
            yield _err([f"{t}.{missing}"], f"{missing} must be specified for distillation teacher model config.",
                       f"Set {t}.{missing}")
            return
        if key in keys:
            yield _err([f"{t}.key"], f"Duplicate teacher key {key} found in teacher models.", "Give each teacher its own key")
            return
        keys.add(key)
        found = next(iter(_teacher_limits(ctx, t)), None)
        if found is not None:
            yield found
            return
    # the teachers' GPUs must add up to the pool: placement.teacher_groups says it (it also lays the teachers out)


def _replica(ctx: RuleContext, t: str) -> int | None:
    sizes = [ctx.int(f"{t}.inference.{k}") for k in ("tensor_model_parallel_size", "data_parallel_size")]
    pp = ctx.get(f"{t}.inference.pipeline_model_parallel_size")
    sizes.append(1 if pp is None else pp if isinstance(pp, int) else None)
    return None if None in sizes else sizes[0] * sizes[1] * sizes[2]


def _teacher_limits(ctx: RuleContext, t: str):
    """validate_and_prepare_for_distillation: context room, top-k log-probs the engine can return."""
    i = f"{t}.inference"
    max_len, prompt, response = ctx.int(f"{i}.max_model_len"), ctx.int(f"{i}.prompt_length"), ctx.int(f"{i}.response_length")
    if None not in (max_len, prompt, response) and prompt + response + 1 > max_len:
        yield _err([f"{i}.max_model_len"], f"The teacher reads the student's prompt and response: {prompt} + {response} + 1 "
                   f"= {prompt + response + 1} tokens, more than its max_model_len={max_len} (Distillation teacher "
                   "inference requires room for the student prompt, the full student response, and one generated token)",
                   f"Set {i}.max_model_len={prompt + response + 1} or more", [f"{i}.max_model_len={prompt + response + 1}"])
        return
    if not LOSSES.get(ctx.get(f"{L}.loss_mode"), False):
        return
    topk, engine = ctx.get(f"{L}.topk"), ctx.get(f"{i}.name")
    if topk is None:
        yield _err([f"{L}.topk"], "topk must be specified when use_topk is True.", f"Set {L}.topk=32", [f"{L}.topk=32"])
    elif engine == "vllm":
        cap = (ctx.get(f"{i}.engine_kwargs.vllm") or {}).get("max_logprobs")
        if isinstance(cap, int) and isinstance(topk, int) and cap < topk:
            yield _err([f"{i}.engine_kwargs.vllm.max_logprobs", f"{L}.topk"], f"VLLM max_logprobs ({cap}) must be >= "
                       f"distillation_loss topk ({topk}) to enable distillation loss computation.",
                       f"Set {i}.engine_kwargs.vllm.max_logprobs={topk}")
    elif engine != "sglang":
        yield _err([f"{i}.name"], f"DistillationTeacherModelConfig does not support inference engine {engine}",
                   f"Set {i}.name=vllm (or sglang)", [f"{i}.name=vllm"])
