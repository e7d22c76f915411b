"""The dataflow of one verl training step: stages, typed ports and the links between them.

verl 0.9.1 runs a fixed step (``trainer/ppo/ray_trainer.py``): generate, score, reference
log-probs, critic values, KL, advantages, updates. Keys decide which stages run, so every
stage kind appears at most once and a node's id is its kind. The model is pure (no Qt): the
GUI's scene mirrors it; :mod:`wizard.core.dataflow.edit` changes it (each edit returns a new
graph), :mod:`wizard.core.dataflow.keys` maps it onto verl keys, :mod:`wizard.core.dataflow.check`
says what is wrong with it and :mod:`wizard.core.dataflow.layout` where it is drawn.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from wizard.core.check.rules.names import ESTIMATORS, GROUP_ESTIMATORS, GROUP_N  # noqa: F401 (GROUP_N: re-exported)


class PortType(str, Enum):
    """What flows along a link; a link joins two ports of the same type."""

    PROMPTS = "prompts"
    RESPONSES = "responses"
    LOG_PROBS = "log-probs"
    REF_LOG_PROBS = "ref log-probs"
    SCORES = "scores"
    VALUES = "values"
    ADVANTAGES = "advantages"
    KL_TERM = "KL term"


@dataclass(frozen=True)
class PortSpec:
    name: str
    type: PortType
    label: str
    required: bool = True
    doc: str = ""


@dataclass(frozen=True)
class KindSpec:
    kind: str
    title: str
    doc: str
    inputs: tuple[PortSpec, ...]
    outputs: tuple[PortSpec, ...]
    optional: bool  # the user may add or remove it; the others always run in verl
    rank: int  # the layer it sits in when nothing links it (auto-layout)
    category: str  # colour family in the GUI


def _p(name: str, type_: PortType, label: str | None = None, required: bool = True, doc: str = "") -> PortSpec:
    return PortSpec(name, type_, label or type_.value, required, doc)


T = PortType
KINDS: dict[str, KindSpec] = {
    spec.kind: spec
    for spec in (
        KindSpec("data", "Data", "Prompts from data.train_files, data.train_batch_size per step", (),
                 (_p("prompts", T.PROMPTS),), False, 0, "data"),
        KindSpec("rollout", "Generate", "The inference engine samples rollout.n responses per prompt; the actor "
                 "then recomputes their log-probs", (_p("prompts", T.PROMPTS),),
                 (_p("responses", T.RESPONSES), _p("log_probs", T.LOG_PROBS, doc="old log-probs, from the actor")),
                 False, 1, "generate"),
        KindSpec("reward", "Reward", "Scores each response: a rule function (verl's built-in scorer or your "
                 "reward.custom_reward_function), a reward model, or both", (_p("responses", T.RESPONSES),),
                 (_p("scores", T.SCORES),), False, 2, "score"),
        KindSpec("ref", "Reference log-probs", "The frozen initial policy scores the responses; verl runs it only "
                 "when a KL stage reads it", (_p("responses", T.RESPONSES),),
                 (_p("ref_log_probs", T.REF_LOG_PROBS),), True, 2, "model"),
        KindSpec("critic_values", "Critic values", "The critic (value model, critic.model.path) estimates a value "
                 "per token", (_p("responses", T.RESPONSES),), (_p("values", T.VALUES),), True, 2, "model"),
        KindSpec("kl_reward", "KL in reward", "algorithm.use_kl_in_reward: subtracts kl_coef × KL(actor‖ref) from "
                 "the token scores", (_p("scores", T.SCORES), _p("log_probs", T.LOG_PROBS),
                                      _p("ref_log_probs", T.REF_LOG_PROBS)),
                 (_p("scores_kl", T.SCORES, "scores − KL"),), True, 3, "kl"),
        KindSpec("kl_loss", "KL in loss", "actor.use_kl_loss: adds kl_loss_coef × KL(actor‖ref) to the actor loss",
                 (_p("log_probs", T.LOG_PROBS), _p("ref_log_probs", T.REF_LOG_PROBS)),
                 (_p("kl", T.KL_TERM),), True, 3, "kl"),
        KindSpec("advantage", "Advantage", "algorithm.adv_estimator turns scores (and, for gae, values) into "
                 "advantages", (_p("scores", T.SCORES), _p("values", T.VALUES, doc="read by gae only")),
                 (_p("advantages", T.ADVANTAGES),), False, 4, "advantage"),
        KindSpec("actor_update", "Actor update", "PPO-clip update of the policy from advantages (plus the KL term "
                 "when KL is in the loss)", (_p("responses", T.RESPONSES), _p("log_probs", T.LOG_PROBS),
                                            _p("advantages", T.ADVANTAGES), _p("kl", T.KL_TERM, required=False)),
                 (), False, 5, "update"),
        KindSpec("critic_update", "Critic update", "Trains the critic towards the returns",
                 (_p("values", T.VALUES), _p("returns", T.ADVANTAGES, "returns", doc="advantages and returns")),
                 (), True, 5, "update"),
    )
}
ORDER = {kind: i for i, kind in enumerate(KINDS)}

REWARD_VARIANTS = ("rule", "model", "both")
REWARD_TITLES = {"rule": "rule function", "model": "reward model", "both": "model + function"}
VALUE_ESTIMATORS = ("gae",)  # read critic values (core_algos.compute_gae_advantage_return)
DEFAULT_ESTIMATOR = "gae"  # algorithm.adv_estimator's default in ppo_trainer.yaml
ESTIMATOR_NOTES = {
    "gae": "PPO's generalised advantage estimation from the critic's values (γ, λ); needs a critic",
    "grpo": "group relative: each score against the other responses to the same prompt (n ≥ 2)",
    "reinforce_plus_plus": "REINFORCE++: returns normalised over the batch; no critic",
    "reinforce_plus_plus_baseline": "REINFORCE++ with the group mean as baseline (n ≥ 2)",
    "remax": "ReMax: a greedy response per prompt is the baseline (verl generates it)",
    "rloo": "leave-one-out: the baseline is the mean of the other responses (n ≥ 2)",
    "opo": "optimal baseline weighted by response length (n ≥ 2)",
    "grpo_passk": "GRPO for pass@k: only the best response of a group is rewarded (n ≥ 2)",
    "gpg": "group policy gradient (n ≥ 2)",
    "rloo_vectorized": "rloo, vectorised (n ≥ 2)",
    "grpo_vectorized": "grpo, vectorised (n ≥ 2)",
    "optimal_token_baseline": "token-level optimal baseline; verl 0.9.1 runs it only on the legacy trainer "
                              "(trainer.use_v1=false, actor.calculate_sum_pi_squared=True)",
    "tir_optimal_token_baseline": "optimal token baseline for multi-turn (tool) rollouts; like it, legacy trainer only",
    "gdpo": "group reward-decoupled normalisation of several reward terms (n ≥ 2)",
}


class DataflowError(ValueError):
    """An edit the graph refuses; the message is the reason, for the user."""


@dataclass(frozen=True)
class PortRef:
    node: str
    port: str


@dataclass(frozen=True, order=True)
class Link:
    src: PortRef  # an output
    dst: PortRef  # an input

    def __str__(self) -> str:
        return f"{port_label(self.src)} → {KINDS[self.dst.node].title}"


@dataclass(frozen=True)
class Node:
    id: str  # = its kind (one stage of each kind per step)
    variant: str | None = None  # estimator name (advantage), rule/model/both (reward)
    params: dict[str, Any] = field(default_factory=dict)  # n (rollout), function/model paths (reward)

    @property
    def spec(self) -> KindSpec:
        return KINDS[self.id]

    @property
    def title(self) -> str:
        return self.spec.title


@dataclass(frozen=True)
class Graph:
    nodes: tuple[Node, ...] = ()
    links: tuple[Link, ...] = ()
    layout: dict[str, tuple[float, float]] = field(default_factory=dict)  # positions the user placed

    def node(self, node_id: str) -> Node | None:
        return next((n for n in self.nodes if n.id == node_id), None)

    def has(self, node_id: str) -> bool:
        return self.node(node_id) is not None

    def feeding(self, dst: PortRef) -> Link | None:
        """The link into an input port (an input takes one link)."""
        return next((lk for lk in self.links if lk.dst == dst), None)

    def reading(self, src: PortRef) -> list[Link]:
        return [lk for lk in self.links if lk.src == src]

    def touching(self, node_id: str) -> list[Link]:
        return [lk for lk in self.links if node_id in (lk.src.node, lk.dst.node)]

    def same_flow(self, other: Graph) -> bool:
        """Equal but for positions."""
        return self.nodes == other.nodes and self.links == other.links

    @property
    def estimator(self) -> str:
        node = self.node("advantage")
        return (node.variant if node else None) or DEFAULT_ESTIMATOR


def find_port(ref: PortRef) -> tuple[PortSpec, str] | None:
    """(spec, "in" | "out") of a port, or None when the kind has no such port."""
    spec = KINDS.get(ref.node)
    if spec is None:
        return None
    for side, ports in (("in", spec.inputs), ("out", spec.outputs)):
        for port in ports:
            if port.name == ref.port:
                return port, side
    return None


def port_label(ref: PortRef) -> str:
    found = find_port(ref)
    return f"{KINDS[ref.node].title} · {found[0].label if found else ref.port}"


def all_ports(graph: Graph, side: str) -> list[PortRef]:
    out = []
    for node in graph.nodes:
        spec = node.spec
        for port in spec.inputs if side == "in" else spec.outputs:
            out.append(PortRef(node.id, port.name))
    return out


def uses_values(estimator: str) -> bool:
    return estimator in VALUE_ESTIMATORS


def is_group_estimator(estimator: str) -> bool:
    return estimator in GROUP_ESTIMATORS


def unused_inputs(graph: Graph, node_id: str) -> dict[str, str]:
    """Inputs the stage has but does not read as set (drawn greyed, with the note)."""
    if node_id == "advantage" and not uses_values(graph.estimator):
        return {"values": "gae only"}
    return {}


def estimator_choices(current: str | None = None) -> list[str]:
    """verl 0.9.1's registered estimators, plus the plan's own when it names another."""
    names = list(ESTIMATORS)
    return names + [current] if current and current not in names else names


# -- the question asked while dragging -----------------------------------------------------------------------
def can_connect(graph: Graph, src: PortRef, dst: PortRef) -> tuple[bool, str]:
    """Whether a link from ``src`` to ``dst`` is legal, and why not (or what it replaces)."""
    a, b = find_port(src), find_port(dst)
    if a is None or b is None or not graph.has(src.node) or not graph.has(dst.node):
        return False, "there is no such port in this graph"
    (sport, sside), (dport, dside) = a, b
    if sside == dside:
        which = "outputs" if sside == "out" else "inputs"
        return False, f"both are {which}: a link goes from an output (right side) to an input (left side)"
    if sside == "in":
        return False, "drag from an output (right side) to an input (left side)"
    if src.node == dst.node:
        return False, f"{KINDS[src.node].title} cannot feed itself"
    if sport.type is not dport.type:
        makers = " or ".join(k.title for k in KINDS.values() if any(p.type is dport.type for p in k.outputs))
        return False, f"{port_label(dst)} takes {dport.type.value} (from {makers}), not {sport.type.value}"
    if dst == PortRef("advantage", "values") and not uses_values(graph.estimator):
        return False, f"{graph.estimator} does not read critic values (only gae does); pick gae as the estimator first"
    existing = graph.feeding(dst)
    if existing is not None and existing.src == src:
        return False, "these ports are already linked"
    loop = _path(graph, dst.node, src.node)
    if loop:
        names = " → ".join(KINDS[n].title for n in [src.node, *loop])
        return False, f"that makes a loop ({names}); each stage runs once per step, in order"
    if existing is not None:
        return True, f"replaces the link from {port_label(existing.src)}"
    return True, ""


def _path(graph: Graph, start: str, goal: str) -> list[str]:
    """Nodes on a path start → … → goal along links (empty when none)."""
    prev: dict[str, str | None] = {start: None}
    frontier = [start]
    while frontier:
        node = frontier.pop(0)
        if node == goal:
            path = [node]
            while prev[path[-1]] is not None:
                path.append(prev[path[-1]])  # type: ignore[arg-type]
            return list(reversed(path))
        for lk in graph.links:
            if lk.src.node == node and lk.dst.node not in prev:
                prev[lk.dst.node] = node
                frontier.append(lk.dst.node)
    return []


def sorted_links(links) -> tuple[Link, ...]:
    return tuple(sorted(set(links), key=lambda lk: (ORDER[lk.src.node], ORDER[lk.dst.node], lk.src.port, lk.dst.port)))


def sorted_nodes(nodes) -> tuple[Node, ...]:
    return tuple(sorted(nodes, key=lambda n: ORDER[n.id]))


def canonical_links(graph: Graph) -> list[Link]:
    """The links verl's step makes between the stages present (what the auto-wiring draws)."""
    has, out = graph.has, []

    def add(s: str, sp: str, d: str, dp: str) -> None:
        if has(s) and has(d):
            out.append(Link(PortRef(s, sp), PortRef(d, dp)))

    add("data", "prompts", "rollout", "prompts")
    for consumer in ("reward", "ref", "critic_values", "actor_update"):
        add("rollout", "responses", consumer, "responses")
    for consumer in ("kl_reward", "kl_loss", "actor_update"):
        add("rollout", "log_probs", consumer, "log_probs")
    for consumer in ("kl_reward", "kl_loss"):
        add("ref", "ref_log_probs", consumer, "ref_log_probs")
    add("reward", "scores", "kl_reward", "scores")
    if has("kl_reward"):
        add("kl_reward", "scores_kl", "advantage", "scores")
    else:
        add("reward", "scores", "advantage", "scores")
    if uses_values(graph.estimator):
        add("critic_values", "values", "advantage", "values")
    add("critic_values", "values", "critic_update", "values")
    add("advantage", "advantages", "actor_update", "advantages")
    add("advantage", "advantages", "critic_update", "returns")
    add("kl_loss", "kl", "actor_update", "kl")
    return out
