"""Memory and placement: will it fit, and can verl form the groups it needs?

The numbers come from :mod:`wizard.core.memory.estimate` (per GPU, per phase) and :mod:`wizard.core.placement.pools`. The
memory rules are silent unless the actor's model facts and the GPUs' memory are known (``RuleContext.models``,
``RuleContext.cluster``); the group rules need neither.
"""

from __future__ import annotations

import math

from wizard.core.findings import Finding, Severity, Stage
from wizard.core.memory.estimate import GpuEstimate, MemoryReport
from wizard.core.memory.phases import PhaseName as P, step_index
from wizard.core.memory.report import MemoryPlan, plan_memory
from wizard.core.memory import verdict
from wizard.core.memory.config import FOLLOWS, MEMORY_KEYS, complete_values, read_config
from wizard.core.memory.lengths import stated_sample
from wizard.core.memory.terms import GIB, HOST_AT_START
from wizard.core.advice.search import advise
from wizard.core.advice.state import HOST_WORTH_SAYING, Advice
from wizard.core.placement.pools import plan_placement
from wizard.core.verl.interpolations import followed_key
from wizard.core.verl.keys import A, AF, R
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding

PHASE_KEYS = {
    P.ACTOR_UPDATE: [f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.use_dynamic_bsz", f"{A}.ppo_max_token_len_per_gpu",
                     "actor_rollout_ref.model.enable_gradient_checkpointing"],
    P.OLD_LOG_PROB: [f"{R}.log_prob_micro_batch_size_per_gpu", f"{R}.log_prob_max_token_len_per_gpu"],
    P.REF_LOG_PROB: ["actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu",
                     "actor_rollout_ref.ref.log_prob_max_token_len_per_gpu"],
    P.GENERATION: [f"{R}.gpu_memory_utilization", f"{AF}.optimizer_offload", f"{AF}.param_offload"],
    P.LOAD: [f"{R}.gpu_memory_utilization", f"{AF}.param_offload"],
    P.WEIGHT_SYNC: [f"{AF}.optimizer_offload", f"{R}.tensor_model_parallel_size"],
    P.CRITIC_UPDATE: ["critic.ppo_infer_max_token_len_per_gpu", "critic.fsdp.param_offload"],
    P.REWARD: ["reward.reward_model.rollout.gpu_memory_utilization"],
}


def memory_values(ctx: RuleContext) -> dict:
    """The resolved values the estimate reads, verl's default where one cannot be used (``complete_values``)."""
    if "memory.values" not in ctx._memo:
        ctx._memo["memory.values"] = {**complete_values({k: ctx.get(k) for k in MEMORY_KEYS}, ctx.variant),
                                      **ctx.assumptions, FOLLOWS: follows(ctx)}
    return ctx._memo["memory.values"]


def follows(ctx: RuleContext) -> dict[str, str]:
    """{a knob: the knob its value follows} among the keys the estimate reads, where the composed config makes one
    take another's value whole (verl's YAML: the log-prob passes' token budgets follow the actor's): the advisor
    moves such a knob with the one it follows, as verl's re-composed config would."""
    out = {}
    for key in MEMORY_KEYS:
        source = followed_key(ctx.resolver.raw(key), key)
        if source is not None and source in MEMORY_KEYS and source != key:
            out[key] = source
    return out


def memory_plan(ctx: RuleContext) -> MemoryPlan:
    """The plan's placement, estimate and verdict, made once per check (the check's result hands the same one on)."""
    if "memory.plan" not in ctx._memo:
        ctx._memo["memory.plan"] = plan_memory(memory_values(ctx), ctx.models, ctx.cluster)
    return ctx._memo["memory.plan"]


def memory_estimate(ctx: RuleContext) -> tuple[MemoryReport | None, str | None]:
    """(the estimate, why there is none) for the rules; (None, None) when models or GPU memory are unknown."""
    if ctx.models.get("actor") is None or ctx.cluster is None:
        return None, None
    mp = memory_plan(ctx)
    return mp.judged, mp.estimate_why


def memory_report(ctx: RuleContext) -> MemoryReport | None:
    """The estimate when it carries a verdict: None when models or GPU memory are unknown, or the engine or model
    is not modelled (memory.not_modelled says so)."""
    report = memory_estimate(ctx)[0]
    return None if report is None or report.unmodelled else report


def where(group: GpuEstimate) -> str:
    """"8 GPUs of global_pool (node0:0-7; actor, rollout, ref)", short for hundreds of GPUs."""
    nodes: dict[str, list[int]] = {}
    for g in group.gpus:
        nodes.setdefault(g.node, []).append(g.index)
    if len(nodes) <= 2:
        parts = [f"{n}:{_span(ix)}" for n, ix in nodes.items()]
    else:
        first = next(iter(nodes.values()))
        parts = [f"{len(nodes)} nodes x GPUs {_span(first)}"]
    n = len(group.gpus)
    return f"{n} GPU{'s' if n != 1 else ''} of {group.pool} ({', '.join(parts)}; {', '.join(group.roles)})"


def _span(ix: list[int]) -> str:
    ix = sorted(ix)
    return f"{ix[0]}-{ix[-1]}" if len(ix) > 1 and ix == list(range(ix[0], ix[-1] + 1)) else ",".join(map(str, ix))


def top_terms(group: GpuEstimate, n: int = 4) -> str:
    terms = sorted(group.peak.terms, key=lambda t: -t.bytes)[:n]
    return ", ".join(f"{t.label} {t.bytes / GIB:.1f}" for t in terms)


# The fix of a memory finding when the check does not search (the window searches on a worker thread).
ADVISOR_ELSEWHERE = ("Make it fit: the advisor lists the configs that fit these GPUs, each re-estimated, fastest "
                     "first (verl-wizard plan prints them)")


def memory_advice(ctx: RuleContext) -> Advice:
    """The advisor's alternatives for this plan on these GPUs (searched once per check, re-estimated each)."""
    if "memory.advice" not in ctx._memo:
        ctx._memo["memory.advice"] = advise(memory_values(ctx), ctx.models, ctx.cluster,
                                            smaller=ctx.family() if ctx.family else ())
    return ctx._memo["memory.advice"]


def advice_fix(ctx: RuleContext) -> tuple[str, list[str]]:
    """(the fix's words, the overrides one Apply sets): the advisor's best config that fits, which the memory
    findings all offer (so applying it clears them all), then the next alternatives; where nothing on these GPUs
    fits, the plain statement and no overrides."""
    if not ctx.advise:
        return ADVISOR_ELSEWHERE, []
    advice = memory_advice(ctx)
    return advice_text(advice), advice.best.overrides if advice.best is not None else []


def advice_text(advice: Advice) -> str:
    """The words of the memory findings' fix: the advisor's alternatives (the best first), or why none fits."""
    alts = advice.lines(3)
    if advice.best is not None:
        i, best = advice.best_index(), advice.best
        which = f"; the fix applies {advice.best_said()}" + (f": {best.text}" if i >= 3 else "") if i else ""
        return "Fastest that fits: " + "; ".join(alts) + which
    if alts:
        return "; ".join(alts)
    return "Use GPUs with more memory, or a smaller model"


def _fix_finding(ctx: RuleContext, rule_id: str, severity: Severity, group: GpuEstimate, message: str) -> Finding:
    text, overrides = advice_fix(ctx)
    return finding(severity, PHASE_KEYS.get(group.peak.name, []), message, text, overrides,
                   fix_auto=bool(overrides), rule=rule_id)


def fitting_sample_tokens(ctx: RuleContext, group: GpuEstimate) -> int | None:
    """The longest average sample at which ``group`` still fits (see verdict.fitting_sample_tokens)."""
    return memory_plan(ctx).fitting_tokens(group)


def _stated_sample(ctx: RuleContext) -> tuple[int | None, str]:
    """(the mean sample the user stated, in tokens, or None; the words saying it): memory.lengths.stated_sample."""
    values = memory_values(ctx)
    return stated_sample(values, read_config(values))


@rule("memory.not_modelled", Stage.ADVICE)
def not_modelled(ctx: RuleContext):
    """An engine or model the estimate does not model: no verdict, and the reason (instead of a guess)."""
    report, why = memory_estimate(ctx)
    reason = report.unmodelled if report is not None else why
    if reason and ctx.models.get("actor") is not None and ctx.cluster is not None:
        from wizard.core.memory.megatron import NOT_STARTED

        fix = ("Fix the layout error first (its own finding gives the sizes that start); the estimate follows"
               if NOT_STARTED in reason else
               "Size the run from a measured run of the same engine and model (nvidia-smi during a step)")
        yield finding(Severity.INFO, [], f"No memory verdict: {reason}", fix, fix_auto=False)


@rule("memory.gpu", Stage.RUNTIME, also={"memory.gpu_oom": Stage.RUNTIME, "memory.gpu_oom_long": Stage.RUNTIME,
                                           "memory.gpu_tight": Stage.RUNTIME})
def gpu_memory(ctx: RuleContext):
    """Per GPU and phase: over its memory is an OOM (error); within the tight margin a warning."""
    report = memory_report(ctx)
    if report is None:
        return
    for group in report.groups:
        cap = group.capacity_bytes
        if cap is None:
            continue
        peak = group.peak
        margin = report.tight_margin(cap)
        head = (f"{where(group)}: the {peak.title} phase needs {peak.total / GIB:.1f} GiB of "
                f"{cap / GIB:.1f} GiB")
        if peak.total > cap:
            longest = fitting_sample_tokens(ctx, group)
            over = [p for p in sorted(group.phases, key=lambda p: step_index(p.name)) if p.total > cap]
            also = (f" Over memory, in step order: {', '.join(f'{p.title} {p.total / GIB:.1f}' for p in over)}."
                    if len(over) > 1 else "")
            if longest is None:
                yield _fix_finding(ctx, "memory.gpu_oom", Severity.ERROR, group,
                                   f"Does not fit: {head}; CUDA out of memory. Largest: {top_terms(group)} GiB.{also}")
            else:
                seq = read_config(memory_values(ctx)).seq_tokens
                stated, said = _stated_sample(ctx)
                over_stated = stated is not None and stated > longest
                lead = (f"Does not fit at the lengths you stated ({said}), over the {longest:,} tokens samples can "
                        f"average here" if over_stated else
                        f"Over memory at the configured lengths; fits while samples average <= {longest:,} tokens"
                        + (f" (at the lengths you stated, {said})"
                                                                               if said else ""))
                yield _fix_finding(ctx, "memory.gpu_oom_long", Severity.ERROR if over_stated else Severity.WARNING,
                                   group,
                                   f"{lead}: {head} when every sample of a micro-batch is as long as "
                                   f"data.max_prompt_length + data.max_response_length = {seq:,} tokens, and runs out "
                                   f"of memory on samples that average longer. Largest: {top_terms(group)} GiB")
        elif peak.total > cap - margin:
            yield _fix_finding(ctx, "memory.gpu_tight", Severity.WARNING, group,
                               f"Fits, tight: {head}, {(cap - peak.total) / GIB:.1f} GiB spare (less than the "
                               f"{margin / GIB:.1f} GiB margin the estimate needs). Largest: {top_terms(group)} GiB")


@rule("memory.engine_start", Stage.STARTUP)
def engine_start(ctx: RuleContext):
    """vLLM refuses to start when the free memory is below gpu_memory_utilization x CUDA's total
    (gpu_worker.init_device); the trainer's params are already on the GPU when the engine starts."""
    report = memory_report(ctx)
    if report is None:
        return
    eng = read_config(memory_values(ctx)).engines["rollout"]
    for group in report.groups:
        short = verdict.engine_start_shortfall(report, memory_values(ctx), group)
        if short is None:
            continue
        free, want, trainer = short
        cuda_total = group.capacity_bytes - report.constants.driver_reserved
        fix, overrides = advice_fix(ctx)
        held = (f"{free / GIB:.1f} GiB free (the trainer holds {trainer / GIB:.1f} GiB)" if free > 0 else
                f"nothing free: the trainer already holds {trainer / GIB:.1f} of {cuda_total / GIB:.1f} GiB")
        yield finding(Severity.ERROR, [f"{R}.gpu_memory_utilization", f"{AF}.param_offload"],
                      f"Does not fit: {where(group)}: vLLM starts with {held} "
                      f"but asks for {eng.util:g} x {cuda_total / GIB:.1f} = "
                      f"{want / GIB:.1f} GiB (CUDA's total: the GPU's {group.capacity_bytes / GIB:.1f} less "
                      f"{report.constants.driver_reserved / GIB:.1f} the driver keeps); it stops with: Free memory on device ... on startup is less than "
                      "desired GPU memory utilization", fix, overrides, fix_auto=bool(overrides))


@rule("memory.kv_cache", Stage.STARTUP, also={"memory.kv_concurrency": Stage.ADVICE})
def kv_cache(ctx: RuleContext):
    """The engine needs room for the KV cache of one max_model_len request, and should hold the batch at once."""
    report = memory_report(ctx)
    if report is None:
        return
    cfg = read_config(memory_values(ctx))
    for role, kv in report.kv.items():
        eng = cfg.engines[role]
        prefix = R if role == "rollout" else ("reward.reward_model.rollout" if role == "reward" else "distillation")
        keys = [f"{prefix}.gpu_memory_utilization", f"{prefix}.tensor_model_parallel_size", f"{prefix}.max_model_len"]
        room = f"{kv.kv_bytes / GIB:.1f} GiB" if kv.kv_bytes > 0 else f"no room, {-kv.kv_bytes / GIB:.1f} GiB short"
        per_rank = (f"{room} per GPU = {kv.budget_bytes / GIB:.1f} ({eng.util:g} x "
                    f"{'the memory free at start' if kv.engine == 'sglang' else 'CUDA total'}) - weights "
                    f"{kv.weights_bytes / GIB:.1f}")
        pinned_fix = None
        if kv.pinned:
            pin = f"{prefix}.engine_kwargs.vllm.kv_cache_memory_bytes"
            per_rank = f"pinned per GPU by {pin}: {kv.kv_bytes / GIB:.1f}"
            keys = [pin, *keys]
            # what the step puts on a replica at once, at least one max_model_len request, in whole GiB (vLLM's G)
            want = max(kv.max_model_len or 0, kv.seq_tokens * max(1, kv.wanted)) * kv.bytes_per_token
            size = max(1, math.ceil(want / GIB))
            pinned_fix = (f"Raise {pin} to at least {size}G ({size} GiB: one step's sequences at once), or remove it "
                          f"(vLLM then sizes the KV cache from {prefix}.gpu_memory_utilization)", [f"++{pin}={size}G"])
        elif kv.engine != "sglang":
            per_rank += (f" - activations {kv.activation_bytes / GIB:.1f} - non-torch and CUDA graphs "
                         f"{kv.other_bytes / GIB:.1f}")
        if kv.kv_bytes <= 0:
            fix, overrides = pinned_fix or (advice_fix(ctx) if role == "rollout" else (
                f"Raise {prefix}.gpu_memory_utilization or {prefix}.tensor_model_parallel_size", []))
            stop = ("Not enough memory. Please try to increase --mem-fraction-static." if kv.engine == "sglang" else
                    "No available memory for the cache blocks")
            yield finding(Severity.ERROR, keys,
                          f"The {role} engine has no room for a KV cache ({per_rank} GiB); it stops with: {stop}",
                          fix, overrides, fix_auto=bool(overrides))
            continue
        if kv.engine == "sglang" and verdict.kv_too_short(kv):
            fix, overrides = advice_fix(ctx) if role == "rollout" else (
                f"Raise {prefix}.gpu_memory_utilization or {prefix}.tensor_model_parallel_size", [])
            yield finding(Severity.ERROR, keys,
                          f"The {role} engine's KV pool holds {kv.kv_bytes // max(1, kv.bytes_per_token):,} tokens "
                          f"({per_rank} GiB), less than one prompt + response ({kv.seq_tokens:,}); SGLang caps every "
                          "request at its pool and cuts the responses there", fix, overrides, fix_auto=bool(overrides))
            continue
        if kv.engine != "sglang" and kv.max_model_len and kv.tokens // max(1, eng.dp) < kv.max_model_len:
            need = kv.max_model_len * kv.bytes_per_token
            fix = min(kv.max_model_len, cfg.seq_tokens)
            text, overrides = pinned_fix or (advice_fix(ctx) if role == "rollout" else
                                             (f"Set {prefix}.max_model_len={fix} (prompt + response), or raise "
                                              f"{prefix}.gpu_memory_utilization", []))
            yield finding(Severity.ERROR, keys,
                          f"The {role} engine's KV cache holds {kv.tokens // max(1, eng.dp):,} tokens ({per_rank} GiB) "
                          f"but max_model_len={kv.max_model_len:,} needs {need / GIB:.1f} GiB for one request; vLLM "
                          "refuses to start (max_model_len larger than the KV cache)", text, overrides,
                          fix_auto=bool(overrides))
            continue
        if kv.sequences < kv.wanted:
            yield finding(Severity.WARNING, keys,
                          f"Each {role} replica's KV cache holds {kv.tokens:,} tokens = {kv.sequences} sequences of "
                          f"{kv.seq_tokens} tokens at once ({per_rank} GiB), but one step puts {kv.wanted} sequences on "
                          "each replica at once (prompts x responses per prompt, shared by the replicas, at most "
                          "max_num_seqs each); "
                          "the engine queues and preempts the rest, so generation takes longer",
                          f"Raise {prefix}.gpu_memory_utilization (if the GPUs have room) or "
                          f"{prefix}.tensor_model_parallel_size", [], fix_auto=False, rule="memory.kv_concurrency")


@rule("memory.host", Stage.RUNTIME, also={"memory.host_unknown": Stage.ADVICE})
def host_memory(ctx: RuleContext):
    """Host RAM per node (Ray kills workers near 95 %): offloaded states, the CPU-offloaded reference, workers."""
    report = memory_report(ctx)
    if report is None:
        return
    for host in report.host:
        top = ", ".join(f"{t.label} {t.bytes / GIB:.0f}" for t in sorted(host.terms, key=lambda t: -t.bytes)[:3])
        if host.capacity_bytes is None:
            cfg = read_config(memory_values(ctx))  # the offloads as the estimate reads them (the policy: FSDP2 only)
            offload = any((cfg.actor_param_offload, cfg.actor_optimizer_offload, cfg.actor_offload_policy,
                           cfg.need_critic and (cfg.critic_param_offload or cfg.critic_optimizer_offload
                                                or cfg.critic_offload_policy)))
            if offload and host.total > HOST_WORTH_SAYING:  # what an offload asks of a node nobody judged
                yield finding(Severity.INFO, [f"{AF}.param_offload", f"{AF}.optimizer_offload", f"{AF}.offload_policy"],
                              f"Node {host.node} needs about {host.total / GIB:.0f} GiB of host memory, and its RAM is "
                              f"not known here (Ray kills workers at 95 % of it). Largest: {top} GiB",
                              "Check the node has that much RAM (free -g), or name it: a cluster spec's memory_gib, "
                              "or detect the machine it runs on", [], fix_auto=False, rule="memory.host_unknown")
            continue
        cap, need = host.capacity_bytes, host.total
        if need > 0.9 * cap:
            keys = [f"{AF}.param_offload", f"{AF}.optimizer_offload", "data.dataloader_num_workers"]
            d = 1 if abs(need - host.limit) < 2 * GIB or cap < 10 * GIB else 0  # a decimal where it decides
            message = (f"Node {host.node} needs about {need / GIB:.{d}f} GiB of host memory of {cap / GIB:.{d}f} GiB "
                       f"(Ray kills workers at 95 %, {host.limit / GIB:.{d}f} GiB). Largest: {top} GiB")
            if any(t.key in HOST_AT_START for t in host.terms):
                message += ("; rank 0's read of the model at start is gone before the engines start and the rest "
                            "is held, so the node needs the larger of the two moments, not their sum")
            if host.over:  # the advisor's best, as every memory error offers (one Apply clears them all)
                text, overrides = advice_fix(ctx)
                yield finding(Severity.ERROR, keys, message, text, overrides, fix_auto=bool(overrides))
                continue
            gather = any(t.key == "host_lora_base_sync" for t in host.terms)
            yield finding(Severity.WARNING, keys, message,
                          ("Set actor_rollout_ref.rollout.load_format=safetensors (vLLM reads the base weights; no "
                           "rank gathers the base model at the first sync); or t" if gather else "T")
                          + "urn CPU offload off where the GPUs have room, lower data.dataloader_num_workers, or use "
                          "fewer GPUs per node", [], fix_auto=False)


@rule("placement.groups", Stage.STARTUP, also={"placement.reward_groups": Stage.STARTUP,
                                                "placement.teacher_groups": Stage.STARTUP,
                                                "placement.tp_link": Stage.ADVICE})
def placement_groups(ctx: RuleContext):
    """Reward-model and teacher replicas that cannot be formed from their pools; TP groups over slow links."""
    pools = ctx.get("distillation.enabled") is True or ctx.get("reward.reward_model.enable") is True
    if ctx.cluster is None and not pools:
        return  # without links only the reward / teacher pools can go wrong; skip resolving the keys
    yield from plan_placement(memory_values(ctx), ctx.cluster).issues
