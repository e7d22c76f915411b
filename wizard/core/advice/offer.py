"""What the advisor offers of the states its search found (:mod:`wizard.core.advice.search`): moves that set a key
and set it back folded out, micro-batches raised to the measured ones, a change of precision only where it gains;
ranked by predicted step time, changes of tuning before changes of method, one per set of keys and one per change of
method, LoRA of the plan's own model kept among the first four; each as the :class:`Alternative` a user reads. Pure.
"""

from __future__ import annotations

import math
from dataclasses import replace

from wizard.core.advice.moves import LORA_KEY, METHOD, MICRO_KEYS, SMALLEST_MEASURED_MICRO, TUNING, Move, moves_for
from wizard.core.advice.state import KIND_ORDER, Alternative, State, _key, _round, _state, trains, with_moves
from wizard.core.memory.terms import GIB
from wizard.core.memory.verdict import memory_verdict
from wizard.core.verl.fused_head import fused_head_broken
from wizard.core.verl.keys import R
from wizard.core.verl.lora_fsdp1 import lora_fsdp1_one_gpu

SPEED_GAIN = 0.02  # a move is kept for speed only where it saves at least this share of the step


def offerable(found: list[State], start: State) -> list[State]:
    """``found`` as it may be offered: moves that set a key back folded out, micro-batches raised to the measured
    ones, a change of method to a plan that fits only for a large gain, a change of precision only where it gains."""
    found = [f for f in (_folded(s, start) for s in found) if f is not None and not broken(f)]
    found = [_within_measured(s, start) if s.fits else s for s in found]
    if start.fits:  # what is trained changes only for a large gain: LoRA to save 2 s of a 15-s smoke step is not advice
        found = [s for s in found if s.kind != METHOD or faster_by(s, start, METHOD_WORTH)]
    # a change of the precision trained with (a bf16 base) only where it gains: ranked as if SPEED_GAIN slower, and
    # taken out of an alternative that fits as fast without it
    return [_without_precision(s) if s.fits else s for s in found]


def offered(found: list[State], start: State, limit: int) -> list[State]:
    """The best ``limit`` of ``found``, distinct, ranked: changes of tuning and hardware by predicted step, then
    changes of method."""
    ranked = sorted(found, key=lambda s: (KIND_ORDER[s.kind] // 2, _ranked_seconds(s),
                                          sum(m.numerics for m in s.moves), len(s.moves)))
    out = _with_lora(_distinct(ranked, limit), ranked, limit)
    # without the moves that change nothing, one may be another with more changes and no faster: distinct again
    return _distinct(list({_key(x.values, x.models): x for x in (_without_inert(x, start) for x in out)}.values()),
                     limit)


def family(s: State) -> tuple:
    """What ``s`` trains (:func:`wizard.core.advice.state.trains`): a change of method is offered once for it."""
    return trains(s.moves)


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
        if trial.fits and not slower and not broken(trial):
            state = trial
    return state


def _unmoved(state: State, move) -> dict:
    """``state``'s values with ``move``'s keys back at what verl's config had before it (the key unset: its default)."""
    values = dict(state.values)
    for k, _ in move.changes:
        values.pop(k, None)
    return values


def broken(s: State) -> bool:
    """A state verl would not train: the fused head where it fails (an FSDP2 switch or the fused move each fine
    alone, together with an untied lm_head: it stops at its first log-prob pass), or LoRA served from FSDP1 on one
    GPU (it hangs at its first weight sync)."""
    return fused_head_broken(s.values, s.models.get("actor")) or bool(lora_fsdp1_one_gpu(s.values))


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
            left = [k for k, v in whole.changes if (k, v) not in rest]  # its label says what it leaves as it was
            keep += (whole if not left else replace(whole, changes=tuple(
                (k, v) for k, v in whole.changes if (k, v) in rest), why=f"{whole.why} ({', '.join(left)} as it was)"),)
    trial = _state(with_moves(start.values, keep), s.models, s.cluster, keep)
    same = trial.seconds is not None and s.seconds is not None and trial.seconds <= s.seconds * (1 + 0.001)
    return trial if trial.fits and same and not broken(trial) else None


def trains_lora(s: State) -> bool:
    """``s`` trains LoRA adapters of the plan's own model (a move set lora_rank, none changed the model)."""
    return any(dict(m.changes).get(LORA_KEY) for m in s.moves) and not any(m.models for m in s.moves)


def _with_lora(out: list[State], ranked: list[State], limit: int) -> list[State]:
    """``out`` with the fastest LoRA of the plan's own model that fits, where smaller models (always faster) left
    none: the first change of method a user weighs against training another model. It comes no later than fourth
    (what ``plan`` prints), before the slower changes of method it displaces, and after the alternatives that stay:
    those of tuning or hardware ranked past the third give it their place (they are slower than the three kept), so
    changes of method stay last."""
    lora = next((s for s in out if s.fits and trains_lora(s)), None) or \
        next((s for s in ranked if s.fits and trains_lora(s)), None)
    at = min(len(out), 3)
    if lora is None or any(s is lora for s in out[:at + 1]):
        return out
    # changes of method stay last (what the lists say)
    rest = [s for s in out[at:] if s.kind == METHOD and s is not lora]
    return (out[:at] + [lora] + rest)[:limit]


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
        if (trial.peak, trial.seconds, trial.fits) == (best.peak, best.seconds, best.fits) and not broken(trial):
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
        if s.kind == METHOD and any(t.kind == METHOD and family(t) == family(s) and t.fits >= s.fits
                                    for _, t in chosen):
            continue
        keys_seen |= {keys, same}
        # an offered one that only adds changes to this and gains under WORTH of a step gives way to it
        for i, (k, t) in enumerate(chosen):
            if keys < k and s.fits >= t.fits and not faster_by(t, s, WORTH):
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


def faster_by(s: State, than: State, share: float) -> bool:
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


def alternative(s: State) -> Alternative:
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
