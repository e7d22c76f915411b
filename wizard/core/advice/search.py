"""The fastest config that fits: a search over the knobs a user can turn, every candidate re-estimated.

A candidate is the plan's values with a few :class:`Move` applied (micro-batches and token budgets,
gpu_memory_utilization, offload, gradient checkpointing, FSDP2, rollout TP, more of the user's own GPUs; and,
labelled as a change of method, LoRA or a smaller model of the same family). Each is judged by estimating its memory
again (:func:`wizard.core.memory.estimate.estimate_memory`) and timed by :func:`wizard.core.steptime.predict_step`.
A move is kept only when it lowers what is over memory (or, on a plan that fits, makes it faster and still fits), so
no offered change leaves the peak where it was. Alternatives that fit with the estimate's margin are ranked by
predicted step time: changes of tuning first, then changes of method. When nothing on the user's hardware fits,
:attr:`Advice.statement` says so and names the smallest change. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace

from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.terms import GIB
from wizard.core.memory.verdict import memory_verdict
from wizard.core.advice.moves import HARDWARE, METHOD, TUNING, below_measured_micro, moves_for
from wizard.core.advice.offer import (SPEED_GAIN, alternative, broken, faster_by, family, offerable,
                                      offered, trains_lora)
from wizard.core.advice.state import HEAD_OFF_MOVE, KIND_ORDER, Advice, State, _apply, _key, _state, repaired, with_moves
from wizard.core.advice.statement import lora_move, nothing_fits
from wizard.core.models.facts import ModelFacts

BEAM = 4
DEPTH = 4


def _better(child: State, parent: State) -> bool:
    """Keep a move only when it helps: less over memory, or (both fitting) faster; a micro-batch below the measured
    ones never as faster."""
    if not parent.fits:
        return child.deficit < parent.deficit - 0.01 * GIB
    if not child.fits or below_measured_micro(child.values, parent.values):
        return False
    a, b = child.seconds, parent.seconds
    return a is not None and b is not None and a < b * (1 - SPEED_GAIN)


def advise(values: Mapping, models: Mapping[str, ModelFacts], cluster: Cluster | None, *,
           smaller: Sequence[ModelFacts] = (), limit: int = 5) -> Advice:
    """Alternatives to ``values`` on ``cluster`` (the user's hardware), best first. ``smaller``: models of the same
    family with fewer parameters (the catalogue's), offered as a change of method."""
    start = _state(dict(values), dict(models), cluster, ())
    if start.report is None or start.report.unmodelled or start.capacity is None:
        return Advice(fits_now=False, step_seconds=start.seconds)
    seen = {_key(start.values, start.models)}
    found = _search([start], seen, cluster, smaller)
    if start.fits:
        found += _faster_past_memory(start, seen, cluster)
    if not start.fits and not any(f.kind != METHOD for f in found):
        # seeds: every memory saving at once (with the rollout's TP and utilization chosen for it), relaxed toward
        # speed by the same search; a fit a beam of single moves cannot reach is found this way
        seeds = [_pruned(x, start) for x in _seeds(start, cluster) if x.fits]
        seeds = list({_key(x.values, x.models): x for x in seeds if _key(x.values, x.models) not in seen}.values())
        seen |= {_key(x.values, x.models) for x in seeds}
        found += seeds + _search(seeds, seen, cluster, (), depth=3)
    if not start.fits and not any(s.fits and trains_lora(s) for s in found):
        # LoRA of the plan's own model with every saving at once (a TP the beam did not reach, say), pruned back
        lora = lora_move(start)
        if lora is not None:
            base = _apply(start, lora)
            # the moves that reached base (LoRA, and FSDP2 where LoRA on FSDP1 would hang) before the seed's own
            fit = [replace(x, moves=base.moves + x.moves) for x in _seeds(base, cluster) if x.fits]
            found += [_pruned(x, start) for x in fit[:4]]
    if not start.fits and not any(s.fits for s in found):
        # a smaller model of the family with every saving at once: the beam, which tries tuning before a change of
        # method, keeps the plan's own model where no single move of it fits (Megatron's fp32 gradients, say)
        for move in moves_for(start.values, start.models, start.cluster, cluster, smaller, ()):
            if move.models:
                base = _apply(start, move)
                fit = [replace(x, moves=base.moves + x.moves) for x in _seeds(base, cluster) if x.fits]
                found += [_pruned(x, start) for x in fit[:2]]
    # polished: from the fastest few that fit, the faster changes that alone go over memory, each brought back under
    # it (gradient checkpointing off with a smaller micro-batch), which a search toward fitting never tries: the
    # first choice applied is then not offered a faster one at once (428 s offered, then 401 s once applied);
    # and the fastest of each change of method (LoRA of the plan's own model, each smaller model): applied, each is
    # a plan of its own, which a search that reached it on the way to fitting did not tune (LoRA offered at 42.6 s,
    # 37.0 s once applied). Again from what that found, while it finds faster ones: applied, the plan would be
    # searched, and its fastest searched again (7B LoRA on 2 x 40 GB: 3,378 s, then 2,842 s once applied)
    polished: set = set()
    for _ in range(POLISH_ROUNDS):
        timed = sorted((s for s in found if s.fits and s.seconds is not None), key=lambda s: s.seconds)
        families: dict = {}
        for s in timed:
            if s.kind == METHOD:
                families.setdefault(family(s), s)
        best = [s for s in timed if s.kind == TUNING][:POLISHED] + list(families.values())[:POLISHED_METHODS]
        best = [s for s in best if _key(s.values, s.models) not in polished]
        if not best:
            break
        for s in best:  # searched as the plan it is once applied (fresh: states seen on the way there are reachable)
            found += _polish(s, cluster, polished)
    found = offerable(found, start)
    out = offered(found, start, limit)
    # the first choice (what check --fix applies) as it is offered (pruned, folded, raised to the measured
    # micro-batches), searched once more as the plan it becomes: a faster config found there is offered in its place
    # (72B LoRA on 8 x H100: 2,684 s offered, then 2,545 s once applied)
    first = next((s for s in out if s.fits and s.kind != METHOD), None)
    more = [] if first is None or _key(first.values, first.models) in polished else _polish(first, cluster, polished)
    if first is not None and any(m.numerics for m in first.moves):
        # a first choice that changes the precision: the same without it, brought back under memory by other moves
        # (14B LoRA on an H200: a bf16 base with checkpointing off at 37.0 s; vLLM loading the base and micro-batches
        # of 4 at 37.1 s keep fp32)
        keep = tuple(m for m in first.moves if not m.numerics)
        exact = _state(with_moves(start.values, keep), first.models, first.cluster, keep)
        here = {_key(exact.values, exact.models)}
        more += [exact] if exact.fits else _search([exact], here, cluster, (), depth=2)
    if more:
        out = offered(found + offerable(more, start), start, limit)
    tight = not start.fits and memory_verdict(start.report, start.values, start.models, start.cluster,
                                              fitting=lambda g: None).fits is True
    advice = Advice(fits_now=start.fits, step_seconds=start.seconds, tight_now=tight,
                    alternatives=[alternative(s) for s in out])
    if not any(a.fits and a.kind != METHOD for a in advice.alternatives) and not start.fits:
        advice.statement = nothing_fits(start, advice, cluster)
    return advice


def _polish(s: State, cluster: Cluster | None, polished: set) -> list[State]:
    """What a search from ``s`` finds, as from the plan ``s`` becomes once applied: moves that each help, and the
    faster changes that alone go over memory brought back under it (fresh: states seen on the way to ``s`` are
    reachable from it)."""
    here = {_key(s.values, s.models)}
    polished |= here
    return _search([s], set(here), cluster, ()) + _faster_past_memory(s, set(here), cluster)


POLISHED = 2  # the fastest fitting alternatives each searched once more past memory
POLISHED_METHODS = 4  # and the fastest of as many changes of method
POLISH_ROUNDS = 3  # each round from the fastest the last one found


def _faster_past_memory(start: State, seen: set, cluster: Cluster | None) -> list[State]:
    """From a plan that fits: the faster changes that alone go over memory (gradient checkpointing off), each then
    brought back under it by memory savings (a smaller micro-batch), where the pair is still faster: a beam of moves
    that each keep the plan fitting never reaches them."""
    over = []
    for move in moves_for(start.values, start.models, start.cluster, cluster, (), start.moves, start.report):
        if move.kind != TUNING:
            continue
        child = _apply(start, move)
        if not child.fits and faster_by(child, start, SPEED_GAIN) and _key(child.values, child.models) not in seen:
            over.append(child)
    over = sorted(over, key=lambda s: s.seconds)[:BEAM]
    return [s for s in _search(over, seen, cluster, (), depth=2) if s.fits and faster_by(s, start, SPEED_GAIN)]


def _search(frontier: list[State], seen: set, cluster: Cluster | None, smaller: Sequence[ModelFacts],
            depth: int = DEPTH) -> list[State]:
    """States reachable from ``frontier`` by up to ``depth`` moves that each help (see :func:`_better`): those that
    fit. The beam keeps the least over memory and the fastest that fit."""
    found: list[State] = []
    for _ in range(depth):
        children: list[State] = []
        for parent in frontier:
            for move in moves_for(parent.values, parent.models, parent.cluster, cluster, smaller, parent.moves,
                                  parent.report):
                child = _apply(parent, move)
                key = _key(child.values, child.models)
                if key in seen or not _better(child, parent) or broken(child):
                    continue
                seen.add(key)
                children.append(child)
        fitting = [c for c in children if c.fits]
        found += fitting
        over = sorted((c for c in children if not c.fits), key=lambda s: (KIND_ORDER[s.kind], s.deficit))
        quick = sorted(fitting, key=lambda s: (KIND_ORDER[s.kind], s.seconds if s.seconds is not None else math.inf))
        frontier = over[:BEAM] + quick[:2]
        if not frontier:
            break
    return found


def _seeds(start: State, cluster: Cluster | None) -> list[State]:
    """Every memory saving at once (with and without CPU offload), for each rollout TP and utilization, on the GPUs
    the plan uses and on all the GPUs of the user's nodes (a change of hardware)."""
    from wizard.core.advice.moves import turn
    from wizard.core.advice.savings import all_savings, saving_moves

    from wizard.core.memory.megatron_layout import read_megatron, tp_choices

    per_now = max(1, int(start.values.get("trainer.n_gpus_per_node") or 1))
    have = min((n.gpu_count for n in cluster.nodes), default=per_now) if cluster is not None else per_now
    tp_now = int(start.values.get("actor_rollout_ref.rollout.tensor_model_parallel_size") or 1)
    nodes = max(1, int(start.values.get("trainer.nnodes") or 1))
    megatron = start.values.get("actor_rollout_ref.actor.strategy") == "megatron"
    actor = start.models.get("actor")
    out = []
    for per in sorted({per_now, max(per_now, have)}):
        grow = (turn("GPUs per node", per_now, per, (("trainer.n_gpus_per_node", per),), " (all)", HARDWARE),) \
            if per != per_now else ()
        # Megatron: its TP too (its data parallelism shards the optimizer only), within a node where the heads split
        m = read_megatron(start.values, per * nodes) if megatron else None
        layouts = sorted({m.tp, *tp_choices(actor, per, per * nodes, m.pp * m.cp)}) if m is not None else [None]
        for mtp in layouts:
            shard = (turn("Megatron TP", m.tp, mtp, (("actor_rollout_ref.actor.megatron.tensor_model_parallel_size",
                                                      mtp),)),) if m is not None and mtp != m.tp else ()
            for tp in sorted({tp_now} | {t for t in (1, 2, 4, 8) if t <= per and per % t == 0}):
                # with and without CPU offload: offload trades GPU memory for host RAM, which a node may not have
                for util, offload in [(u, o) for u in (0.5, 0.7) for o in (True, False)]:
                    target = {**all_savings(start.values, offload),
                              "actor_rollout_ref.rollout.tensor_model_parallel_size": tp,
                              "actor_rollout_ref.rollout.gpu_memory_utilization": util}
                    moves = grow + shard + tuple(saving_moves(start.values, target))
                    values, moves = repaired(with_moves(start.values, moves), start.models, moves)  # FSDP2 from a saving
                    out.append(_state(values, start.models, start.cluster, moves))
    return out


def _pruned(seed: State, start: State) -> State:
    """``seed`` without the moves it fits without: each taken back in turn (the plan's own value again) while
    the rest still fits, so the alternative changes only what it needs."""
    moves = list(seed.moves)
    best = seed
    # the fused head's turning off is tried once more last: it goes where the FSDP2 move that needed it was taken back
    for move in [*reversed(seed.moves), HEAD_OFF_MOVE]:
        if move.kind != TUNING or move not in moves:
            continue
        keep = [m for m in moves if m is not move]
        values = with_moves(start.values, tuple(keep))
        trial = _state(values, seed.models, seed.cluster, tuple(keep))
        if trial.fits and not broken(trial):
            moves, best = keep, trial
    return best


# what the advisor looked for, said where it offers a fitting plan nothing faster (plan, Make it fit)
NONE_FASTER = (f"no change that still fits saves {SPEED_GAIN * 100:g} % of the step; LoRA or a smaller model is "
               "offered only where it saves a fifth")
