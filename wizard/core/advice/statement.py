"""What the advisor says where nothing on the user's hardware fits without a change of method: how many such GPUs
would hold the plan, whether the host's RAM rather than the GPUs is short, and why LoRA is not offered where only
the host stops it. Each answer is a few more estimates of the plan with every memory saving. Pure.
"""

from __future__ import annotations

from wizard.core.advice.moves import AM, LORA_KEY, METHOD, Move, moves_for
from wizard.core.advice.state import Advice, State, _state, deficit, with_changes
from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.config import read_config
from wizard.core.memory.terms import GIB


def nothing_fits(start: State, advice: Advice, cluster: Cluster | None) -> str:
    """"Nothing on these 1 x 24 GiB GPUs fits Qwen2.5-7B full fine-tuning: it needs >= 4 of them; what fits on these changes what is trained: ..."."""
    actor = start.models.get("actor")
    cfg = read_config(start.values)
    what = f"{actor.name} {'LoRA' if cfg.lora_rank else 'full fine-tuning'}" if actor else "this plan"
    gpus = (f"these {cfg.world} x {start.capacity / GIB:.0f} GiB GPUs" if cfg.world != 1 else
            f"this {start.capacity / GIB:.0f} GiB GPU")
    host = _host_bound(start)
    need, how = _gpus_needed(start, cluster) or (None, "")
    if host is not None:  # the GPUs would hold it: the host's RAM is what is short
        head = (f"Nothing on {gpus} fits {what} within the host's RAM: with every memory saving the GPUs hold it, "
                f"but a node then needs about {host.total / GIB:.0f} GiB of its {host.capacity_bytes / GIB:.0f} GiB "
                f"(Ray stops the run at 95 %)")
        head += f"; >= {need} such GPUs hold it within that RAM" if need else ""
    elif advice.tight_now:  # it fits, without the estimate's margin: say so, and what would give it that
        head = f"It fits on {gpus} only tightly, and nothing there gives {what} the estimate's margin"
        head += f": that needs >= {need} such GPUs ({how})" if need else ""
    else:
        head = f"Nothing on {gpus} fits {what}"
        head += f": it needs >= {need} such GPUs ({how})" if need else ": not even on 512 such GPUs"
    methods = [a for a in advice.alternatives if a.fits and a.kind == METHOD]
    if methods:
        here = "this one" if cfg.world == 1 else "these"
        # the fastest, and LoRA of the plan's own model where one fits (else the next that trains another thing)
        lora = next((a for a in methods if a.changes.get(LORA_KEY)), None)
        model = "actor_rollout_ref.model.path"
        other = next((a for a in methods[1:] if a.changes.get(model) != methods[0].changes.get(model)), None)
        picks = [methods[0]] + ([lora] if lora is not None and lora is not methods[0] else [other] if other else [])
        head += f"; what fits on {here} changes what is trained: " + ", or ".join(a.text for a in picks)
    if not cfg.lora_rank and cfg.strategy == "megatron":
        head += "; LoRA is not offered: with the Megatron engine it is not modelled"
    elif not cfg.lora_rank and not any(m.changes.get(LORA_KEY) for m in methods):
        host = _lora_host_bound(start)
        if host is not None:
            head += (f"; LoRA would fit {gpus} but not the host: it needs about {host.total / GIB:.0f} GiB of "
                     f"{host.capacity_bytes / GIB:.0f} GiB of RAM a node (Ray stops the run at 95 %)")
    return head


def lora_move(start: State) -> Move | None:
    """The change of method to LoRA of the plan's own model (None where the plan already trains LoRA)."""
    from wizard.core.advice.moves import LORA_RANK

    return next((m for m in moves_for(start.values, start.models, start.cluster, None, (), ())
                 if m.kind == METHOD and dict(m.changes).get(LORA_KEY) == LORA_RANK), None)


def _lora_host_bound(start: State):
    """The host estimate of LoRA with every memory saving where that fits the GPUs and only the host RAM stops it;
    None otherwise. What a user asks next when only a smaller model fits."""
    lora = lora_move(start)
    return None if lora is None else _host_bound(start, lora)


def _host_bound(start: State, move: Move | None = None):
    """With every memory saving (with and without CPU offload, for each rollout TP a node allows and each
    gpu_memory_utilization the seeds try) and ``move``: the smallest host estimate over Ray's limit among the variants
    whose GPUs hold them (all of :func:`deficit` but the host: phases, vLLM's start, a KV cache for one request),
    where none fits at all; None where one fits, or where none fits the GPUs either."""
    from wizard.core.advice.savings import all_savings

    best = None
    per = int(start.values.get("trainer.n_gpus_per_node") or 1)
    for offload, tp, util in [(o, t, u) for o in (False, True) for t in (1, 2, 4, 8) if t <= per and per % t == 0
                              for u in (None, 0.5, 0.7)]:
        moved = with_changes(start.values, dict(move.changes)) if move else start.values
        values = with_changes(start.values, {**all_savings(moved, offload), **(dict(move.changes) if move else {}),
                                             "actor_rollout_ref.rollout.tensor_model_parallel_size": tp})
        if util is not None:
            values["actor_rollout_ref.rollout.gpu_memory_utilization"] = util
        s = _state(values, start.models, start.cluster, (move,) if move else ())
        if s.fits:  # some variant fits: the host does not stop it
            return None
        if s.report is None or not s.report.host:
            continue
        over = [h for h in s.report.host if h.over]
        if over and deficit(s.report, values, host=False)[0] <= 0 and (best is None or over[0].total < best.total):
            best = over[0]
    return best


def _gpus_needed(start: State, cluster: Cluster | None) -> tuple[int, str] | None:
    """(the fewest GPUs of the same kind (up to 8 per node, then more nodes) on which the plan fits with every
    memory-saving tuning on (with and without CPU offload: offload trades GPU memory for host RAM, which more nodes
    do not add to per node) and the rollout's TP and gpu_memory_utilization chosen for it, how); None past 64 x 8.
    Megatron shards the weights and fp32 gradients only over TP and PP (its data parallelism, the optimizer): its
    smallest TP x PP that fits is tried first, TP within a node where the heads split."""
    from wizard.core.advice.moves import grown_cluster
    from wizard.core.advice.savings import all_savings
    from wizard.core.memory.megatron_layout import tp_choices

    cfg = read_config(start.values)
    have = max(1, cfg.world)
    actor = start.models.get("actor")
    megatron = cfg.strategy == "megatron"
    for total in (2, 4, 8, 16, 32, 64, 128, 256, 512):
        if total <= have:
            continue
        per = min(8, total)
        nodes = total // per
        grown = grown_cluster(cluster, nodes, per)
        layouts = sorted(((t, p) for p in (1, 2, 4, 8, 16) for t in tp_choices(actor, per, total, p)),
                         key=lambda tp: (tp[0] * tp[1], tp[1])) if megatron else [(None, None)]
        for mtp, pp in layouts:
            rollout = (1, 2, 4, 8) if not megatron else sorted({min(per, max(1, mtp)), min(per, 8)})
            for savings in (all_savings(start.values, offload=False), all_savings(start.values)):
                base = with_changes(start.values, {
                    **savings, "trainer.nnodes": nodes, "trainer.n_gpus_per_node": per,
                    **({f"{AM}.tensor_model_parallel_size": mtp, f"{AM}.pipeline_model_parallel_size": pp}
                       if megatron else {})})
                for tp in rollout:
                    if tp > per:
                        break
                    for util in (0.5, 0.7, 0.85):
                        values = {**base, "actor_rollout_ref.rollout.tensor_model_parallel_size": tp,
                                  "actor_rollout_ref.rollout.gpu_memory_utilization": util}
                        if _state(values, start.models, grown, ()).fits:
                            how = "with memory savings, the rollout over several of them"
                            if megatron and mtp * pp > 1:
                                how = f"with memory savings and Megatron TP {mtp}" + (f", PP {pp}" if pp > 1 else "")
                            return total, how
    return None
