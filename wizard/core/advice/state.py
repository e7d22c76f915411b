"""The advisor's states and answers: a candidate config with its estimate (:class:`State`), what is over memory
(:func:`deficit`), and what the advisor offers (:class:`Alternative`, :class:`Advice`). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from wizard.core.advice.moves import HARDWARE, LORA_KEY, METHOD, TUNING, Move, override
from wizard.core.hardware.cluster import Cluster
from wizard.core.memory.config import FOLLOWS, read_config
from wizard.core.memory.estimate import MemoryReport, estimate_memory
from wizard.core.memory.terms import GIB
from wizard.core.memory.verdict import engine_start_shortfall
from wizard.core.steptime.predict import StepTime, predict_step
from wizard.core.steptime.terms import seconds_text
from wizard.core.verl.fused_head import FUSED_KEY, fused_head_broken
from wizard.core.verl.lora_fsdp1 import FSDP2 as LORA_FSDP2
from wizard.core.verl.lora_fsdp1 import lora_fsdp1_one_gpu


HOST_WORTH_SAYING = 64 * GIB  # an alternative's host need, said where the node's RAM is unknown, from this much
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
    def trains(self) -> tuple:
        """What it trains, for weighing it against the others (:func:`trains`)."""
        return trains(self.moves)

    @property
    def text(self) -> str:
        """"actor micro-batch 8 -> 2, param offload" (what a person reads): a knob turned twice reads as one change."""
        out: list[str] = []
        first: dict[str, int] = {}
        dynamic: dict[str, int] = {}  # a pass turned to dynamic batching: a later budget move is its budget
        for m in self.moves:
            if " -> dynamic batching" in m.name:
                head = m.name.split(" -> dynamic batching")[0]
                dynamic[head.removesuffix(" micro-batch")] = (len(out), head)  # "critic micro-batch" / "critic"
            elif m.name.endswith(" token budget") and m.after and (
                    got := dynamic.get(m.name[:-len(" token budget")].removesuffix(" micro-batch"))):
                out[got[0]] = f"{got[1]} -> dynamic batching, {m.after} tokens{m.why}"
                continue
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
        step = f", about {seconds_text(self.step_seconds)} s per step" if self.step_seconds is not None else ""
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


def trains(moves: tuple[Move, ...]) -> tuple:
    """What ``moves`` train: (the smaller models they move to, by name; whether one sets LoRA, of them or of the
    plan's own model); ((), False) for the plan's own model as it is."""
    return tuple(m.what for m in moves if m.models), any(dict(m.changes).get(LORA_KEY) for m in moves)


@dataclass
class Advice:
    fits_now: bool  # with the estimate's margin
    step_seconds: float | None  # the plan as it is
    tight_now: bool = False  # fits as it is, inside the margin: the alternatives give it room
    alternatives: list[Alternative] = field(default_factory=list)  # best first
    statement: str | None = None  # nothing on this hardware fits: why, and the smallest change

    def pick(self) -> tuple[int | None, str | None]:
        """(the alternative one Apply takes unasked, by index; or None and why none is): the first that fits, changes
        no method and asks nothing of a host whose RAM nobody knows (a 4 x 24 GB node's first alternative wanted
        259 GiB of it). A change of method (LoRA, a smaller model) changes what is trained, and one that needs
        unknown host RAM may not start: the user picks those. The window selects this row; ``best`` reads it."""
        fitting = [a for a in self.alternatives if a.fits]
        for i, alt in enumerate(self.alternatives):
            if alt.fits and alt.kind != METHOD and not alt.host_note:
                return i, None
        if not fitting:
            return None, None
        if any(a.kind != METHOD for a in fitting):
            rest = ", the others change what is trained" if any(a.kind == METHOD for a in fitting) else ""
            return None, f"None is selected: the changes that fit need host RAM not known here{rest}; pick one to apply."
        return None, "None is selected: each of these changes what is trained; pick one to apply."

    @property
    def best(self) -> Alternative | None:
        """What ``check --fix`` applies (None: none such), the alternative at ``best_index``."""
        i = self.best_index()
        return None if i is None else self.alternatives[i]

    def best_index(self) -> int | None:
        """``pick``'s alternative; where only the host's unknown RAM stops it, the first that fits and changes no
        method all the same, which the user asked to apply and a ``memory.host_unknown`` note then qualifies (the
        window selects none there and says why)."""
        i, _ = self.pick()
        if i is not None:
            return i
        return next((j for j, a in enumerate(self.alternatives) if a.fits and a.kind != METHOD), None)

    def best_said(self) -> str:
        """Which alternative ``best`` is, where it is not the first: "2), the first that asks nothing of host RAM not
        known here" ("" where it is the first or there is none)."""
        i = self.best_index()
        if not i:
            return ""
        if self.pick()[0] == i:
            return f"{i + 1}), the first that asks nothing of host RAM not known here"
        return f"{i + 1}), the first that fits without changing what is trained"

    def lines(self, limit: int = 4) -> list[str]:
        out = [f"{i}) {a.line()}" for i, a in enumerate(self.alternatives[:limit], 1)]
        if self.statement:
            out.append(self.statement)
        return out

    def lora_kept(self, limit: int = 4) -> str | None:
        """Why a slower change of method comes before a faster one among the first ``limit``: LoRA of the plan's own
        model is kept in the list where smaller models (always faster) would push it out (offer._with_lora)."""
        methods = [a.step_seconds for a in self.alternatives[:limit] if a.kind == METHOD and a.step_seconds]
        if methods == sorted(methods):
            return None
        return "LoRA of this model is listed though a smaller model is faster, since it trains the model you chose"


def _text(v) -> str:
    """An override's value as Hydra reads it back: null for None (Hydra takes ``None`` for the string "None")."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def _round(x: float | None) -> float | None:
    return None if x is None else round(x, 1)


def deficit(report: MemoryReport | None, values: Mapping, host: bool = True) -> tuple[float, int, int | None]:
    """(bytes over memory with the margin, the worst GPU's peak, its capacity). Every way a plan fails to fit counts
    and they add up (a phase over memory, vLLM refusing to start, no KV cache for one request, host RAM unless
    ``host`` is False: the GPUs alone), so a change that cures one problem but not another still counts as progress.
    A plan that fits gets the (negative) room left on its fullest GPU; one that asks for GPUs the cluster does not
    have never fits (verl waits for them: gpus.available), whatever its GPUs hold."""
    if report is None:
        return math.inf, 0, None
    known = [g for g in report.groups if g.capacity_bytes]
    if not known:
        return math.inf, 0, None
    if any(p.missing for p in report.placement.pools):
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
    for h in report.host if host else ():
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


def followed(values: dict, changed: Mapping, explicit: set) -> dict:
    """``values`` (``changed`` already in them) with each knob that follows a changed one (the composed config's
    ``FOLLOWS``: the log-prob passes' token budgets and dynamic batching follow the actor's, the reference's strategy
    the actor's) taking its value, unless a move set it itself (``explicit``): what verl's config composed again
    with the alternative's overrides holds, so the estimate of an alternative is the plan its overrides make."""
    follows = values.get(FOLLOWS)
    if not isinstance(follows, Mapping) or not follows:
        return values
    out, moved = dict(values), set(changed)
    for _ in range(len(follows)):  # chains: a knob following one that follows another
        new = {f for f, source in follows.items() if source in moved and f not in moved and f not in explicit}
        if not new:
            break
        for f in new:
            out[f] = out.get(follows[f])
        moved |= new
    return out


def with_changes(base: Mapping, changes: Mapping) -> dict:
    """The plan ``base`` with ``changes``, and what follows them (:func:`followed`)."""
    return followed({**base, **changes}, changes, set(changes))


def with_moves(base: Mapping, moves: tuple[Move, ...]) -> dict:
    """The plan ``base`` with ``moves``' changes, and what follows them."""
    return with_changes(base, {k: v for m in moves for k, v in m.changes})


def _apply(state: State, move: Move) -> State:
    values = followed({**state.values, **dict(move.changes)}, dict(move.changes),
                      {k for m in (*state.moves, move) for k, _ in m.changes})
    models = {**state.models, **dict(move.models)} if move.models else state.models
    cluster = move.cluster(state.cluster, values) if move.cluster else state.cluster
    # a move turning the head on where it breaks is dropped, not undone
    values, moves = repaired(values, models, state.moves + (move,), head=FUSED_KEY not in dict(move.changes))
    return _state(values, models, cluster, moves)


def repaired(values: dict, models: Mapping, moves: tuple[Move, ...], head: bool = True) -> tuple[dict, tuple[Move, ...]]:
    """``values`` reached by ``moves``, with the moves that keep them off what verl cannot train: FSDP2 where they
    serve LoRA from FSDP1 on one GPU, then (``head``) the fused head off where FSDP2 leaves it broken."""
    values, moves = fsdp2_where_lora_hangs(values, moves)
    return head_off_where_needed(values, models, moves) if head else (values, moves)


FSDP2_FOR_LORA_MOVE = Move("FSDP2 for LoRA", LORA_FSDP2, why=" (LoRA on FSDP1 with one GPU hangs at its first sync)")


def fsdp2_where_lora_hangs(values: dict, moves: tuple[Move, ...]) -> tuple[dict, tuple[Move, ...]]:
    """``values`` reached by ``moves``, moved to FSDP2 as a move of its own where they serve LoRA from FSDP1 on one
    GPU, which verl hangs on at its first weight sync (wizard.core.verl.lora_fsdp1): a plan that is there already
    gets no alternative that stays there."""
    if not lora_fsdp1_one_gpu(values):
        return values, moves
    return {**values, **dict(FSDP2_FOR_LORA_MOVE.changes)}, moves + (FSDP2_FOR_LORA_MOVE,)


HEAD_OFF_MOVE = Move("the fused log-prob head off", ((FUSED_KEY, False),),
                     why=" (FSDP2 never gathers this model's untied lm_head for it)")


def head_off_where_needed(values: dict, models: Mapping, moves: tuple[Move, ...]) -> tuple[dict, tuple[Move, ...]]:
    """``values`` reached by ``moves``, with the fused head turned off, as a move of its own, where a move to FSDP2
    (the offload policy, FSDP1 -> FSDP2, LoRA on one GPU) left it on with an untied lm_head: verl would stop at the
    first log-prob pass (wizard.core.verl.fused_head.fsdp2_lm_head)."""
    if not fused_head_broken(values, models.get("actor")):
        return values, moves
    return {**values, **dict(HEAD_OFF_MOVE.changes)}, moves + (HEAD_OFF_MOVE,)
