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
from dataclasses import dataclass, field, replace

from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.config import read_config
from wizard.core.memory.estimate import MemoryReport, estimate_memory
from wizard.core.memory.terms import GIB
from wizard.core.memory.verdict import engine_start_shortfall, memory_verdict
from wizard.core.advice.moves import (HARDWARE, METHOD, MICRO_KEYS, SMALLEST_MEASURED_MICRO, TUNING, Move,
                                      below_measured_micro, moves_for, override)
from wizard.core.models.facts import ModelFacts
from wizard.core.steptime.predict import StepTime, predict_step

BEAM = 4
DEPTH = 4
KIND_ORDER = {TUNING: 0, HARDWARE: 1, METHOD: 2}


@dataclass
class State:
    values: dict
    models: dict
    cluster: Cluster | None
    moves: tuple[Move, ...]
    report: MemoryReport | None
    deficit: float  # bytes over memory with the estimate's margin (<= 0: fits with the margin)
    peak: int
    capacity: int | None
    _step: StepTime | None = None

    @property
    def step(self) -> StepTime:
        """The predicted step, made when first asked (only states that fit are ranked by it)."""
        if self._step is None:
            self._step = predict_step(self.values, self.models, self.cluster, self.report)
        return self._step

    @property
    def fits(self) -> bool:
        return self.report is not None and not self.report.unmodelled and self.deficit <= 0

    @property
    def seconds(self) -> float | None:
        return self.step.seconds

    @property
    def kind(self) -> str:
        return max((m.kind for m in self.moves), key=KIND_ORDER.__getitem__, default=TUNING)


@dataclass(frozen=True)
class Alternative:
    """One config the advisor offers: what changes, its keys, and what the estimate and the prediction say."""

    moves: tuple[Move, ...]
    changes: dict  # key -> value, every move merged (a later move's value wins)
    kind: str  # tuning | method | hardware
    fits: bool  # fits with the estimate's margin
    verdict: str  # the verdict's words for this config
    peak_bytes: int
    capacity_bytes: int | None
    step_seconds: float | None
    host_bytes: int | None = None  # the most one node needs of host RAM (what CPU offload and LoRA spend)
    host_known: bool = False  # the node's RAM is known (then the verdict has judged it)

    @property
    def overrides(self) -> list[str]:
        return [override(k, _text(v)) for k, v in self.changes.items()]

    @property
    def text(self) -> str:
        """"actor micro-batch 8 -> 2, param offload" (what a person reads): a knob turned twice reads as one change."""
        out: list[str] = []
        first: dict[str, int] = {}
        for m in self.moves:
            if m.name in first and m.before:
                i = first[m.name]
                start = self.moves[[x.name for x in self.moves].index(m.name)].before
                out[i] = f"{m.name} {start} -> {m.after}{m.why}"
                continue
            first[m.name] = len(out)
            out.append(m.what)
        return ", ".join(out)

    def line(self) -> str:
        cap = f" of {self.capacity_bytes / GIB:.1f}" if self.capacity_bytes else ""
        step = f", about {self.step_seconds:.0f} s per step" if self.step_seconds is not None else ""
        label = "" if self.kind == TUNING else f" [{self.kind}]"
        host = f"; {self.host_note}" if self.host_note else ""
        return f"{self.text}{label}: peak {self.peak_bytes / GIB:.1f}{cap} GiB, {self.verdict}{step}{host}"

    @property
    def host_note(self) -> str:
        """Where the node's RAM is unknown nothing judged the host: what it must hold, once that is a lot."""
        if self.host_known or not self.host_bytes or self.host_bytes <= HOST_WORTH_SAYING:
            return ""
        return f"host RAM about {self.host_bytes / GIB:.0f} GiB a node (unknown here)"

    def to_json(self) -> dict:
        return {"overrides": self.overrides, "fits": self.fits, "verdict": self.verdict,
                "peak_gib": round(self.peak_bytes / GIB, 2), "step_seconds": _round(self.step_seconds),
                "changes": self.text, "kind": self.kind,
                "host_gib": None if self.host_bytes is None else round(self.host_bytes / GIB, 2)}


@dataclass
class Advice:
    fits_now: bool  # with the estimate's margin
    step_seconds: float | None  # the plan as it is
    tight_now: bool = False  # fits as it is, inside the margin: the alternatives give it room
    alternatives: list[Alternative] = field(default_factory=list)  # best first
    statement: str | None = None  # nothing on this hardware fits: why, and the smallest change

    @property
    def best(self) -> Alternative | None:
        """What one Apply lands: the first alternative that fits and changes no method (None: none such)."""
        return next((a for a in self.alternatives if a.fits and a.kind != METHOD), None)

    def lines(self, limit: int = 4) -> list[str]:
        out = [f"{i}) {a.line()}" for i, a in enumerate(self.alternatives[:limit], 1)]
        if self.statement:
            out.append(self.statement)
        return out


def _text(v) -> str:
    """An override's value as Hydra reads it back: null for None (Hydra takes ``None`` for the string "None")."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def deficit(report: MemoryReport | None, values: Mapping) -> tuple[float, int, int | None]:
    """(bytes over memory with the margin, the worst GPU's peak, its capacity). Every way a plan fails to fit counts
    and they add up (a phase over memory, vLLM refusing to start, no KV cache for one request, host RAM), so a
    change that cures one problem but not another still counts as progress. A plan that fits gets the (negative)
    room left on its fullest GPU."""
    if report is None:
        return math.inf, 0, None
    known = [g for g in report.groups if g.capacity_bytes]
    if not known:
        return math.inf, 0, None
    over: list[float] = []
    cfg = read_config(values)
    worst = max(known, key=lambda g: g.peak.total + report.tight_margin(g.capacity_bytes) - g.capacity_bytes)
    peak, cap = worst.peak.total, worst.capacity_bytes
    for g in known:
        over.append(g.peak.total + report.tight_margin(g.capacity_bytes) - g.capacity_bytes)
        short = engine_start_shortfall(report, values, g, cfg)
        if short is not None:
            free, want, _ = short
            over.append(want - free + report.tight_margin(g.capacity_bytes))
    for kv in report.kv.values():
        need = (kv.max_model_len or kv.seq_tokens) * max(1, kv.bytes_per_token)
        if kv.kv_bytes < need:
            over.append(need - kv.kv_bytes)
    for h in report.host:
        if h.limit:
            over.append(h.total - h.limit)
    positive = sum(x for x in over if x > 0)
    return (positive if positive > 0 else max(over)), peak, cap


def _state(values: dict, models: dict, cluster: Cluster | None, moves: tuple[Move, ...]) -> State:
    report, _ = estimate_memory(values, models, cluster)
    d, peak, cap = deficit(report, values)
    return State(values, models, cluster, moves, report, d, peak, cap)


def _key(values: Mapping, models: Mapping) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in values.items())) + tuple(sorted((r, m.name) for r, m in models.items()))


def _apply(state: State, move: Move) -> State:
    values = {**state.values, **dict(move.changes)}
    models = {**state.models, **dict(move.models)} if move.models else state.models
    cluster = move.cluster(state.cluster, values) if move.cluster else state.cluster
    return _state(values, models, cluster, state.moves + (move,))


def _better(child: State, parent: State) -> bool:
    """Keep a move only when it helps: less over memory, or (both fitting) faster; a micro-batch below the measured
    ones never as faster."""
    if not parent.fits:
        return child.deficit < parent.deficit - 0.01 * GIB
    if not child.fits or below_measured_micro(child.values, parent.values):
        return False
    a, b = child.seconds, parent.seconds
    return a is not None and b is not None and a < b * 0.98


def advise(values: Mapping, models: Mapping[str, ModelFacts], cluster: Cluster | None, *,
           smaller: Sequence[ModelFacts] = (), limit: int = 5) -> Advice:
    """Alternatives to ``values`` on ``cluster`` (the user's hardware), best first. ``smaller``: models of the same
    family with fewer parameters (the catalogue's), offered as a change of method."""
    start = _state(dict(values), dict(models), cluster, ())
    if start.report is None or start.report.unmodelled or start.capacity is None:
        return Advice(fits_now=False, step_seconds=start.seconds)
    seen = {_key(start.values, start.models)}
    found = _search([start], seen, cluster, smaller)
    if not start.fits and not any(f.kind != METHOD for f in found):
        # seeds: every memory saving at once (with the rollout's TP and utilization chosen for it), relaxed toward
        # speed by the same search; a fit a beam of single moves cannot reach is found this way
        seeds = [_pruned(x, start) for x in _seeds(start, cluster) if x.fits]
        seeds = list({_key(x.values, x.models): x for x in seeds if _key(x.values, x.models) not in seen}.values())
        seen |= {_key(x.values, x.models) for x in seeds}
        found += seeds + _search(seeds, seen, cluster, (), depth=3)
    if not start.fits and not any(s.fits and _lora(s) for s in found):
        # LoRA of the plan's own model with every saving at once (a TP the beam did not reach, say), pruned back
        lora = _lora_move(start)
        if lora is not None:
            base = _apply(start, lora)
            fit = [replace(x, moves=(lora,) + x.moves) for x in _seeds(base, cluster) if x.fits]
            found += [_pruned(x, start) for x in fit[:4]]
    found = [_within_measured(s, start) if s.fits else s for s in found if not _reverts(s, start)]
    ranked = sorted(found, key=lambda s: (KIND_ORDER[s.kind] // 2, s.seconds if s.seconds is not None else math.inf,
                                          len(s.moves)))
    out = _with_lora(_distinct(ranked, limit), ranked, limit)
    tight = not start.fits and memory_verdict(start.report, start.values, start.models, start.cluster,
                                              fitting=lambda g: None).fits is True
    advice = Advice(fits_now=start.fits, step_seconds=start.seconds, tight_now=tight,
                    alternatives=[_alternative(s) for s in out])
    if not any(a.fits and a.kind != METHOD for a in advice.alternatives) and not start.fits:
        advice.statement = _nothing_fits(start, advice, cluster)
    return advice


def _reverts(s: State, start: State) -> bool:
    """A later move of ``s`` sets a key an earlier one changed back to the plan's own value ("CPU offload policy",
    then "no CPU offload policy"): its label would contradict itself, and the same config is reached without both."""
    counts: dict[str, int] = {}
    for m in s.moves:
        for k, _ in m.changes:
            counts[k] = counts.get(k, 0) + 1
    return any(n > 1 and s.values.get(k) == start.values.get(k) for k, n in counts.items())


def _lora(s: State) -> bool:
    """``s`` trains LoRA adapters of the plan's own model (a move set lora_rank, none changed the model)."""
    return any(dict(m.changes).get(LORA_KEY) for m in s.moves) and not any(m.models for m in s.moves)


def _with_lora(out: list[State], ranked: list[State], limit: int) -> list[State]:
    """``out`` with the fastest LoRA of the plan's own model that fits, where smaller models (always faster) left
    none: the first change of method a user weighs against training another model. It comes no later than fourth
    (what ``plan`` prints), before the slower changes of method it displaces."""
    if any(_lora(s) for s in out):
        return out
    lora = next((s for s in ranked if s.fits and _lora(s)), None)
    if lora is None:
        return out
    at = min(len(out), 3)
    return (out[:at] + [lora] + out[at:])[:limit]


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
                if key in seen or not _better(child, parent):
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
    from wizard.core.advice.moves import HARDWARE, all_savings, saving_moves, turn

    per_now = max(1, int(start.values.get("trainer.n_gpus_per_node") or 1))
    have = min((n.gpu_count for n in cluster.nodes), default=per_now) if cluster is not None else per_now
    tp_now = int(start.values.get("actor_rollout_ref.rollout.tensor_model_parallel_size") or 1)
    out = []
    for per in sorted({per_now, max(per_now, have)}):
        grow = (turn("GPUs per node", per_now, per, (("trainer.n_gpus_per_node", per),), " (all)", HARDWARE),) \
            if per != per_now else ()
        for tp in sorted({tp_now} | {t for t in (1, 2, 4, 8) if t <= per and per % t == 0}):
            # with and without CPU offload: offload trades GPU memory for host RAM, which a node may not have
            for util, offload in [(u, o) for u in (0.5, 0.7) for o in (True, False)]:
                target = {**all_savings(start.values, offload),
                          "actor_rollout_ref.rollout.tensor_model_parallel_size": tp,
                          "actor_rollout_ref.rollout.gpu_memory_utilization": util}
                moves = grow + tuple(saving_moves(start.values, target))
                values = {**start.values, **{k: v for m in moves for k, v in m.changes}}
                out.append(_state(values, start.models, start.cluster, moves))
    return out


def _pruned(seed: State, start: State) -> State:
    """``seed`` without the moves it fits without: each taken back in turn (the plan's own value again) while
    the rest still fits, so the alternative changes only what it needs."""
    moves = list(seed.moves)
    best = seed
    for move in list(reversed(seed.moves)):
        if move.kind != TUNING:
            continue
        keep = [m for m in moves if m is not move]
        values = {**start.values, **{k: v for m in keep for k, v in m.changes}}
        trial = _state(values, start.models, seed.cluster, tuple(keep))
        if trial.fits:
            moves, best = keep, trial
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
            values = {**start.values, **{k: v for m in moves for k, v in m.changes}}
            trial = _state(values, start.models, best.cluster, moves)
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
    return out


WORTH = 0.01  # a change is offered for speed only where it gains at least this share of a step
HOST_WORTH_SAYING = 64 * GIB  # an alternative's host need, said where the node's RAM is unknown, from this much


def _faster_by(s: State, than: State, share: float) -> bool:
    """``s`` is at least ``share`` of a step faster than ``than``."""
    return s.seconds is not None and than.seconds is not None and s.seconds <= than.seconds * (1 - share)


def _no_faster(s: State, than: State) -> bool:
    """``s`` takes at least as long per step as ``than`` (to the second), or neither has a step time."""
    if s.seconds is None or than.seconds is None:
        return s.seconds is None and than.seconds is None
    return round(s.seconds) >= round(than.seconds)


def _alternative(s: State) -> Alternative:
    changes: dict = {}
    for m in s.moves:
        changes.update(dict(m.changes))
    v = memory_verdict(s.report, s.values, s.models, s.cluster, fitting=lambda g: None)
    hosts = s.report.host if s.report is not None else []
    return Alternative(moves=s.moves, changes=changes, kind=s.kind, fits=s.fits, verdict=v.text(),
                       peak_bytes=s.peak, capacity_bytes=s.capacity, step_seconds=_round(s.seconds),
                       host_bytes=max((h.total for h in hosts), default=None),
                       host_known=bool(hosts) and all(h.capacity_bytes for h in hosts))


def _nothing_fits(start: State, advice: Advice, cluster: Cluster | None) -> str:
    """"Nothing on these 1 x 24 GiB GPUs fits Qwen2.5-7B full fine-tuning: it needs >= 4 of them; what fits on these changes what is trained: ..."."""
    actor = start.models.get("actor")
    cfg = read_config(start.values)
    what = f"{actor.name} {'LoRA' if cfg.lora_rank else 'full fine-tuning'}" if actor else "this plan"
    gpus = (f"these {cfg.world} x {start.capacity / GIB:.0f} GiB GPUs" if cfg.world != 1 else
            f"this {start.capacity / GIB:.0f} GiB GPU")
    host = _host_bound(start)
    need = _gpus_needed(start, cluster)
    if host is not None:  # the GPUs would hold it: the host's RAM is what is short
        head = (f"Nothing on {gpus} fits {what} within the host's RAM: with every memory saving the GPUs hold it, "
                f"but a node then needs about {host.total / GIB:.0f} GiB of its {host.capacity_bytes / GIB:.0f} GiB "
                f"(Ray stops the run at 95 %)")
        head += f"; >= {need} such GPUs hold it within that RAM" if need else ""
    elif advice.tight_now:  # it fits, without the estimate's margin: say so, and what would give it that
        head = f"It fits on {gpus} only tightly, and nothing there gives {what} the estimate's margin"
        head += (f": that needs >= {need} such GPUs (with memory savings, the rollout over several of them)"
                 if need else "")
    else:
        head = f"Nothing on {gpus} fits {what}"
        head += (f": it needs >= {need} such GPUs (with memory savings, the rollout over several of them)" if need
                 else ": not even on 512 such GPUs")
    methods = [a for a in advice.alternatives if a.fits and a.kind == METHOD]
    if methods:
        here = "this one" if cfg.world == 1 else "these"
        head += f"; what fits on {here} changes what is trained: " + ", or ".join(a.text for a in methods[:2])
    if not cfg.lora_rank and not any(m.changes.get(LORA_KEY) for m in methods):
        host = _lora_host_bound(start)
        if host is not None:
            head += (f"; LoRA would fit {gpus} but not the host: it needs about {host.total / GIB:.0f} GiB of "
                     f"{host.capacity_bytes / GIB:.0f} GiB of RAM a node (Ray stops the run at 95 %)")
    return head


LORA_KEY = "actor_rollout_ref.model.lora_rank"


def _lora_move(start: State) -> Move | None:
    """The change of method to LoRA of the plan's own model (None where the plan already trains LoRA)."""
    from wizard.core.advice.moves import LORA_RANK

    return next((m for m in moves_for(start.values, start.models, start.cluster, None, (), ())
                 if m.kind == METHOD and dict(m.changes).get(LORA_KEY) == LORA_RANK), None)


def _lora_host_bound(start: State):
    """The host estimate of LoRA with every memory saving where that fits the GPUs and only the host RAM stops it;
    None otherwise. What a user asks next when only a smaller model fits."""
    lora = _lora_move(start)
    return None if lora is None else _host_bound(start, lora)


def _host_bound(start: State, move: Move | None = None):
    """With every memory saving (with and without CPU offload, for each rollout TP a node allows) and ``move``: the
    smallest host estimate over Ray's limit among the variants that fit the GPUs, where none fits at all; None
    where one fits, or where none fits the GPUs either."""
    from wizard.core.advice.moves import all_savings

    best = None
    per = int(start.values.get("trainer.n_gpus_per_node") or 1)
    for offload, tp in [(o, t) for o in (False, True) for t in (1, 2, 4, 8) if t <= per and per % t == 0]:
        values = {**start.values, **all_savings(start.values, offload), **(dict(move.changes) if move else {}),
                  "actor_rollout_ref.rollout.tensor_model_parallel_size": tp}
        s = _state(values, start.models, start.cluster, (move,) if move else ())
        if s.fits:  # some variant fits: the host does not stop it
            return None
        if s.report is None or not s.report.host:
            continue
        over = [h for h in s.report.host if h.over]
        gpu_ok = all(g.peak.total + s.report.tight_margin(g.capacity_bytes) <= g.capacity_bytes
                     for g in s.report.groups if g.capacity_bytes) and not any(
            engine_start_shortfall(s.report, values, g) for g in s.report.groups)
        if over and gpu_ok and (best is None or over[0].total < best.total):
            best = over[0]
    return best


def _gpus_needed(start: State, cluster: Cluster | None) -> int | None:
    """The fewest GPUs of the same kind (up to 8 per node, then more nodes) on which the plan fits with every
    memory-saving tuning on (with and without CPU offload: offload trades GPU memory for host RAM, which more nodes
    do not add to per node) and the rollout's TP and gpu_memory_utilization chosen for it; None past 64 x 8."""
    from wizard.core.advice.moves import all_savings, grown_cluster

    have = max(1, read_config(start.values).world)
    for total in (2, 4, 8, 16, 32, 64, 128, 256, 512):
        if total <= have:
            continue
        per = min(8, total)
        nodes = total // per
        grown = grown_cluster(cluster, nodes, per)
        for savings in (all_savings(start.values, offload=False), all_savings(start.values)):
            base = {**start.values, **savings, "trainer.nnodes": nodes, "trainer.n_gpus_per_node": per}
            for tp in (1, 2, 4, 8):
                if tp > per:
                    break
                for util in (0.5, 0.7, 0.85):
                    values = {**base, "actor_rollout_ref.rollout.tensor_model_parallel_size": tp,
                              "actor_rollout_ref.rollout.gpu_memory_utilization": util}
                    if _state(values, start.models, grown, ()).fits:
                        return total
    return None
