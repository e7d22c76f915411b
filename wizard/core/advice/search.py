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
from wizard.core.advice.moves import (HARDWARE, LORA_KEY, METHOD, MICRO_KEYS, SMALLEST_MEASURED_MICRO, TUNING, Move,
                                      below_measured_micro, moves_for)
from wizard.core.advice.state import (HEAD_OFF_MOVE, KIND_ORDER, Advice, Alternative, State, _apply, _key, _round,
                                      _state, repaired, with_moves)
from wizard.core.advice.statement import lora_move, nothing_fits
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.fused_head import fused_head_broken
from wizard.core.verl.keys import R
from wizard.core.verl.lora_fsdp1 import lora_fsdp1_one_gpu

BEAM = 4
DEPTH = 4
SPEED_GAIN = 0.02  # a move is kept for speed only where it saves at least this share of the step


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
    if not start.fits and not any(s.fits and _lora(s) for s in found):
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
                families.setdefault(_family(s), s)
        best = [s for s in timed if s.kind == TUNING][:POLISHED] + list(families.values())[:POLISHED_METHODS]
        best = [s for s in best if _key(s.values, s.models) not in polished]
        if not best:
            break
        for s in best:  # searched as the plan it is once applied (fresh: states seen on the way there are reachable)
            found += _polish(s, cluster, polished)
    found = _offerable(found, start)
    out = _offered(found, start, limit)
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
        out = _offered(found + _offerable(more, start), start, limit)
    tight = not start.fits and memory_verdict(start.report, start.values, start.models, start.cluster,
                                              fitting=lambda g: None).fits is True
    advice = Advice(fits_now=start.fits, step_seconds=start.seconds, tight_now=tight,
                    alternatives=[_alternative(s) for s in out])
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


def _offerable(found: list[State], start: State) -> list[State]:
    """``found`` as it may be offered: moves that set a key back folded out, micro-batches raised to the measured
    ones, a change of method to a plan that fits only for a large gain, a change of precision only where it gains."""
    found = [f for f in (_folded(s, start) for s in found) if f is not None and not _broken(f)]
    found = [_within_measured(s, start) if s.fits else s for s in found]
    if start.fits:  # what is trained changes only for a large gain: LoRA to save 2 s of a 15-s smoke step is not advice
        found = [s for s in found if s.kind != METHOD or _faster_by(s, start, METHOD_WORTH)]
    # a change of the precision trained with (a bf16 base) only where it gains: ranked as if SPEED_GAIN slower, and
    # taken out of an alternative that fits as fast without it
    return [_without_precision(s) if s.fits else s for s in found]


def _offered(found: list[State], start: State, limit: int) -> list[State]:
    """The best ``limit`` of ``found``, distinct, ranked: changes of tuning and hardware by predicted step, then
    changes of method."""
    ranked = sorted(found, key=lambda s: (KIND_ORDER[s.kind] // 2, _ranked_seconds(s),
                                          sum(m.numerics for m in s.moves), len(s.moves)))
    out = _with_lora(_distinct(ranked, limit), ranked, limit)
    # without the moves that change nothing, one may be another with more changes and no faster: distinct again
    return _distinct(list({_key(x.values, x.models): x for x in (_without_inert(x, start) for x in out)}.values()),
                     limit)


POLISHED = 2  # the fastest fitting alternatives each searched once more past memory
POLISHED_METHODS = 4  # and the fastest of as many changes of method
POLISH_ROUNDS = 3  # each round from the fastest the last one found


def _family(s: State) -> tuple:
    """What ``s`` trains, as :attr:`Alternative.trains` says it: (the smaller models it moves to; a move set LoRA)."""
    return tuple(m.what for m in s.moves if m.models), any(dict(m.changes).get(LORA_KEY) for m in s.moves)


def _ranked_seconds(s: State) -> float:
    """``s``'s step time as ranked: a change of precision counts SPEED_GAIN slower (as fast, the other comes first)."""
    if s.seconds is None:
        return math.inf
    return s.seconds * (1 + SPEED_GAIN) if any(m.numerics for m in s.moves) else s.seconds


def _without_precision(state: State) -> State:
    """``state`` without its change of precision where the rest fits without it and is no more than SPEED_GAIN
    slower: a bf16 base is offered only where it is what fits or what makes it faster."""
    for move in [m for m in state.moves if m.numerics]:
        keep = tuple(m for m in state.moves if m is not move)
        trial = _state(with_moves(_unmoved(state, move), keep), state.models, state.cluster, keep)
        slower = trial.seconds is not None and state.seconds is not None and trial.seconds > state.seconds * (1 + SPEED_GAIN)
        if trial.fits and not slower and not _broken(trial):
            state = trial
    return state


def _unmoved(state: State, move) -> dict:
    """``state``'s values with ``move``'s keys back at what verl's config had before it (the key unset: its default)."""
    values = dict(state.values)
    for k, _ in move.changes:
        values.pop(k, None)
    return values


def _broken(s: State) -> bool:
    """A state verl would not train: the fused head where it fails (an FSDP2 switch or the fused move each fine
    alone, together with an untied lm_head: it stops at its first log-prob pass), or LoRA served from FSDP1 on one
    GPU (it hangs at its first weight sync)."""
    return fused_head_broken(s.values, s.models.get("actor")) or bool(lora_fsdp1_one_gpu(s.values))


def _faster_past_memory(start: State, seen: set, cluster: Cluster | None) -> list[State]:
    """From a plan that fits: the faster changes that alone go over memory (gradient checkpointing off), each then
    brought back under it by memory savings (a smaller micro-batch), where the pair is still faster: a beam of moves
    that each keep the plan fitting never reaches them."""
    over = []
    for move in moves_for(start.values, start.models, start.cluster, cluster, (), start.moves, start.report):
        if move.kind != TUNING:
            continue
        child = _apply(start, move)
        if not child.fits and _faster_by(child, start, SPEED_GAIN) and _key(child.values, child.models) not in seen:
            over.append(child)
    over = sorted(over, key=lambda s: s.seconds)[:BEAM]
    return [s for s in _search(over, seen, cluster, (), depth=2) if s.fits and _faster_by(s, start, SPEED_GAIN)]


def _reverted(s: State, start: State) -> set[str]:
    """The keys a later move of ``s`` set back to the plan's own value after an earlier one changed them ("full
    recompute", then "no recompute"): its label would contradict itself."""
    counts: dict[str, int] = {}
    for m in s.moves:
        for k, _ in m.changes:
            counts[k] = counts.get(k, 0) + 1
    return {k for k, n in counts.items() if n > 1 and s.values.get(k) == start.values.get(k)}


def _folded(s: State, start: State) -> State | None:
    """``s`` without the moves that set a key and set it back (a seed's full recompute, and the polish's no
    recompute after it): the rest re-estimated from the plan, where that fits and is as fast (the same config,
    reached without both: the 14B of a 32B Megatron plan offered at 76.8 s, 67.0 s once applied); None where it is
    not (re-estimated, the fold is slower or over memory: the moves did more than set the key back)."""
    back = _reverted(s, start)
    if not back:
        return s
    if not s.fits:
        return None
    # each move that set a key back is left out; one that changed other keys too gives way to the plan's own move
    # of those (FSDP2 with the offload policy, then no offload policy: FSDP1 -> FSDP2, the critic's strategy left
    # as it was where the plan's move had it too), and is left out whole where no move of the plan makes them (full
    # recompute's method and layers, which no recompute leaves unread)
    own = {frozenset(m.changes): m for m in moves_for(start.values, start.models, start.cluster, start.cluster, (), (),
                                                      start.report)}
    keep: tuple[Move, ...] = ()
    for m in s.moves:
        rest = frozenset((k, v) for k, v in m.changes if k not in back)
        if len(rest) == len(m.changes):
            keep += (m,)
        elif m.kind != TUNING or m.models or m.cluster:
            return None
        elif rest and (mine := [o for c, o in own.items() if rest <= c and o.name != m.name]):
            whole = min(mine, key=lambda o: len(o.changes))  # the plan's move that makes the least beside them
            keep += (whole if frozenset(whole.changes) == rest else replace(whole, changes=tuple(
                (k, v) for k, v in whole.changes if (k, v) in rest)),)
    trial = _state(with_moves(start.values, keep), s.models, s.cluster, keep)
    same = trial.seconds is not None and s.seconds is not None and trial.seconds <= s.seconds * (1 + 0.001)
    return trial if trial.fits and same and not _broken(trial) else None


def _lora(s: State) -> bool:
    """``s`` trains LoRA adapters of the plan's own model (a move set lora_rank, none changed the model)."""
    return any(dict(m.changes).get(LORA_KEY) for m in s.moves) and not any(m.models for m in s.moves)


def _with_lora(out: list[State], ranked: list[State], limit: int) -> list[State]:
    """``out`` with the fastest LoRA of the plan's own model that fits, where smaller models (always faster) left
    none: the first change of method a user weighs against training another model. It comes no later than fourth
    (what ``plan`` prints), before the slower changes of method it displaces, and after the alternatives that stay:
    those of tuning or hardware ranked past the third give it their place (they are slower than the three kept), so
    changes of method stay last."""
    lora = next((s for s in out if s.fits and _lora(s)), None) or next((s for s in ranked if s.fits and _lora(s)), None)
    at = min(len(out), 3)
    if lora is None or any(s is lora for s in out[:at + 1]):
        return out
    # changes of method stay last (what the lists say)
    rest = [s for s in out[at:] if s.kind == METHOD and s is not lora]
    return (out[:at] + [lora] + rest)[:limit]


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
                if key in seen or not _better(child, parent) or _broken(child):
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
        if trial.fits and not _broken(trial):
            moves, best = keep, trial
    return best


def _without_inert(state: State, start: State) -> State:
    """``state`` without the tuning moves that change nothing it is judged by (its peak, its step time, whether it
    fits): a micro-batch halved before a move to dynamic batching, which verl then ignores. Each is taken back in
    turn, last first, so an alternative lists only what it needs."""
    best = state
    for move in reversed(state.moves):
        if move.kind != TUNING or move not in best.moves:
            continue
        # the move with every other step of its knob (8 -> 16 -> 32 is shown as one change: taken back as one)
        knob = {k for k, _ in move.changes}
        group = [m for m in best.moves if {k for k, _ in m.changes} == knob]
        keep = tuple(m for m in best.moves if m not in group)
        if knob & {k for m in keep for k, _ in m.changes} or any(m.kind != TUNING for m in group):
            continue  # a knob a move of another shape turns too
        trial = _state(with_moves(start.values, keep), best.models, best.cluster, keep)
        if (trial.peak, trial.seconds, trial.fits) == (best.peak, best.seconds, best.fits) and not _broken(trial):
            best = trial
    return best


def _within_measured(state: State, start: State) -> State:
    """``state`` with each micro-batch a move took below the measured ones (to save memory: a search move, or a
    seed's every saving at once) raised back to the smallest measured where it still fits:
    its step time then stays on what the runs measured, and an alternative is not ranked fastest for a micro-batch
    size whose cost was never measured."""
    best = state
    for i, move in enumerate(state.moves):
        if move.kind != TUNING:
            continue
        for key, value in move.changes:
            was = start.values.get(key)
            if key not in MICRO_KEYS or not isinstance(value, int) or value >= SMALLEST_MEASURED_MICRO or \
                    not isinstance(was, int) or isinstance(was, bool) or was <= SMALLEST_MEASURED_MICRO:
                continue
            current = best.moves[i]
            raised = replace(current, changes=tuple((k, SMALLEST_MEASURED_MICRO if k == key else v)
                                                    for k, v in current.changes),
                             after=str(SMALLEST_MEASURED_MICRO) if len(current.changes) == 1 else current.after)
            moves = best.moves[:i] + (raised,) + best.moves[i + 1:]
            values = with_moves(start.values, moves)
            trial = _state(values, best.models, best.cluster, moves)
            if trial.fits:
                best = trial
    return best


def _distinct(ranked: list[State], limit: int) -> list[State]:
    """The best few, one per set of keys changed (the fastest of them), methods after tuning."""
    out: list[State] = []
    keys_seen: set = set()
    chosen: list[tuple[frozenset, State]] = []
    for s in ranked:
        keys = frozenset(k for m in s.moves for k, _ in m.changes) | frozenset(m.what for m in s.moves if m.models)
        # the same config with a change that does nothing (same peak, same time) is not another alternative
        same = (s.kind, round(s.peak / GIB, 1), None if s.seconds is None else round(s.seconds))
        if keys in keys_seen or same in keys_seen:
            continue
        # nor is one that adds changes to an alternative already offered and is no faster
        if any(k < keys and t.fits >= s.fits and _no_faster(s, t) for k, t in chosen):
            continue
        # a change of method once for what it trains (the 3B, LoRA): its fastest; the user weighs one against the
        # other, and the plan it becomes is offered its own tuning
        if s.kind == METHOD and any(t.kind == METHOD and _family(t) == _family(s) and t.fits >= s.fits
                                    for _, t in chosen):
            continue
        keys_seen |= {keys, same}
        # an offered one that only adds changes to this and gains under WORTH of a step gives way to it
        for i, (k, t) in enumerate(chosen):
            if keys < k and s.fits >= t.fits and not _faster_by(t, s, WORTH):
                chosen[i], out[out.index(t)] = (keys, s), s
                break
        else:
            chosen.append((keys, s))
            out.append(s)
        if len(out) >= limit:
            break
    # one that gave way left its place to a slower one: list them in the ranking's order (230 s stood before 229 s)
    order = {id(s): i for i, s in enumerate(ranked)}
    return sorted(out, key=lambda s: order[id(s)])


WORTH = 0.01  # a change is offered for speed only where it gains at least this share of a step
# a change of method (LoRA, a smaller model) is offered to a plan that already fits only where it saves at least
# this share of the step: below it, the user would trade what is trained for a few seconds
METHOD_WORTH = 0.2
# what the advisor looked for, said where it offers a fitting plan nothing faster (plan, Make it fit)
NONE_FASTER = (f"no change that still fits saves {SPEED_GAIN * 100:g} % of the step; LoRA or a smaller model is "
               "offered only where it saves a fifth")


def _faster_by(s: State, than: State, share: float) -> bool:
    """``s`` is at least ``share`` of a step faster than ``than``."""
    return s.seconds is not None and than.seconds is not None and s.seconds <= than.seconds * (1 - share)


def _no_faster(s: State, than: State) -> bool:
    """``s`` takes at least as long per step as ``than`` (to the second), or neither has a step time."""
    if s.seconds is None or than.seconds is None:
        return s.seconds is None and than.seconds is None
    return round(s.seconds) >= round(than.seconds)


# what sizes the KV cache besides gpu_memory_utilization: a utilization move's "(KV cache for one request)" was
# aimed at the state it was made in, and says nothing once a later move changes one of these (or the model)
KV_SIZING = frozenset({f"{R}.tensor_model_parallel_size", f"{R}.max_model_len", f"{R}.max_num_seqs", LORA_KEY})


def _kv_aim_kept(moves: tuple[Move, ...]) -> tuple[Move, ...]:
    """``moves`` with each KV-aimed utilization move's words dropped where a later move resized the KV cache."""
    out = list(moves)
    for i, m in enumerate(out):
        if m.why.startswith(" (KV cache for") and any(
                x.models or KV_SIZING & {k for k, _ in x.changes} for x in out[i + 1:]):
            out[i] = replace(m, why="")
    return tuple(out)


def _alternative(s: State) -> Alternative:
    s = replace(s, moves=_kv_aim_kept(s.moves))
    changes: dict = {}
    for m in s.moves:
        changes.update(dict(m.changes))
    v = memory_verdict(s.report, s.values, s.models, s.cluster, fitting=lambda g: None)
    hosts = s.report.host if s.report is not None else []
    return Alternative(moves=s.moves, changes=changes, kind=s.kind, fits=s.fits, verdict=v.text(),
                       peak_bytes=s.peak, capacity_bytes=s.capacity, step_seconds=_round(s.seconds),
                       host_bytes=max((h.total for h in hosts), default=None),
                       host_known=bool(hosts) and all(h.capacity_bytes for h in hosts))
