"""The dataflow graph <-> the Plan's verl keys, both ways.

Which stages run is all verl lets a config choose, so the mapping is over these keys:
``algorithm.adv_estimator``, ``critic.enable``, ``actor.use_kl_loss``, ``algorithm.use_kl_in_reward``,
``reward.reward_model.enable`` (+ ``model_path``), ``reward.custom_reward_function.path/name`` and
``rollout.n``. Everything else in the plan is left alone.

A stage whose output nothing reads is off: cutting the link from *KL in loss* to *Actor update*
turns ``use_kl_loss`` off, linking it again turns it back on. The critic is on when its values are
read or its update is fed. A key the graph does not change keeps its value, even an explicit
default, so a plan → graph → plan trip changes nothing.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from wizard.core.dataflow.graph import DEFAULT_ESTIMATOR, Graph, Node, canonical_links, sorted_links
from wizard.core.findings import Finding, Severity, Stage
from wizard.core.verl.overrides import OverrideSyntaxError, parse_override
from wizard.core.plan.model import Plan, field_map, get_field
from wizard.core.verl.keys import A, R, RM

EST = "algorithm.adv_estimator"
CRITIC_ENABLE = "critic.enable"
KL_LOSS = f"{A}.use_kl_loss"
KL_REWARD = "algorithm.use_kl_in_reward"
RM_ENABLE = f"{RM}.enable"
RM_PATH = f"{RM}.model_path"
FN_PATH = "reward.custom_reward_function.path"
FN_NAME = "reward.custom_reward_function.name"
N = f"{R}.n"
RM_ENGINE = f"{RM}.rollout.name"  # not modelled: kept as an extra override
DATAFLOW_KEYS = (EST, CRITIC_ENABLE, KL_LOSS, KL_REWARD, RM_ENABLE, RM_PATH, FN_PATH, FN_NAME, N)


# -- plan -> graph ------------------------------------------------------------------------------------------
def estimator_of(plan: Plan) -> str:
    return plan.algorithm.adv_estimator or DEFAULT_ESTIMATOR


def critic_of(plan: Plan, estimator: str | None = None) -> bool:
    """verl's need_critic (trainer/ppo/utils.py): critic.enable when set, else on for gae only."""
    enable = plan.models.critic_enable
    return bool(enable) if enable is not None else (estimator or estimator_of(plan)) == "gae"


def reward_variant(plan: Plan) -> str:
    """reward_loop.py: a custom function wins; with a reward model it is the function that calls the model."""
    if plan.models.reward_model_enable:
        return "both" if plan.reward.custom_function_path else "model"
    return "rule"


def _reward_params(plan: Plan) -> dict[str, Any]:
    params = {
        "function_path": plan.reward.custom_function_path,
        "function_name": plan.reward.custom_function_name,
        "model_path": plan.models.reward_model_path,
    }
    return {k: v for k, v in params.items() if v is not None}


def graph_from_plan(plan: Plan) -> Graph:
    """The stages the plan's keys run, wired as verl's step wires them, at the plan's saved positions."""
    est = estimator_of(plan)
    kl_loss, kl_reward = bool(plan.algorithm.use_kl_loss), bool(plan.algorithm.use_kl_in_reward)
    critic = critic_of(plan, est)
    nodes = [
        Node("data"),
        Node("rollout", params={"n": plan.rollout.n} if plan.rollout.n is not None else {}),
        Node("reward", variant=reward_variant(plan), params=_reward_params(plan)),
    ]
    nodes += [Node("ref")] if kl_loss or kl_reward else []
    nodes += [Node("critic_values")] if critic else []
    nodes += [Node("kl_reward")] if kl_reward else []
    nodes += [Node("kl_loss")] if kl_loss else []
    nodes += [Node("advantage", variant=est), Node("actor_update")]
    nodes += [Node("critic_update")] if critic else []
    graph = Graph(nodes=tuple(nodes), layout={k: tuple(v) for k, v in plan.dataflow.positions.items()})
    return replace(graph, links=sorted_links(canonical_links(graph)))


# -- graph -> plan ------------------------------------------------------------------------------------------
def output_read(graph: Graph, node_id: str) -> bool:
    return graph.has(node_id) and any(lk.src.node == node_id for lk in graph.links)


def critic_on(graph: Graph) -> bool:
    return output_read(graph, "critic_values") or any(lk.dst.node == "critic_update" for lk in graph.links)


def stage_on(graph: Graph, node_id: str, _path: tuple[str, ...] = ()) -> bool:
    """Whether the stage takes part in the step (what the keys will say): an optional stage runs when a stage
    that runs reads its output (the reference model runs for a KL stage that is on)."""
    if not graph.has(node_id):
        return False
    if node_id in ("critic_values", "critic_update"):
        return critic_on(graph)
    if node_id in ("kl_loss", "kl_reward", "ref"):
        readers = {lk.dst.node for lk in graph.links if lk.src.node == node_id} - set(_path)
        return any(stage_on(graph, r, (*_path, node_id)) for r in sorted(readers))
    return True


def wanted_keys(graph: Graph, plan: Plan) -> dict[str, Any]:
    """The value each dataflow key must have for the plan to run this graph."""
    est = graph.estimator if graph.has("advantage") else estimator_of(plan)
    reward = graph.node("reward")
    variant = (reward.variant if reward else None) or reward_variant(plan)
    params = reward.params if reward else _reward_params(plan)
    rollout = graph.node("rollout")
    return {
        EST: est,
        CRITIC_ENABLE: critic_on(graph),
        KL_LOSS: stage_on(graph, "kl_loss"),
        KL_REWARD: stage_on(graph, "kl_reward"),
        RM_ENABLE: variant in ("model", "both"),
        RM_PATH: params.get("model_path"),
        FN_PATH: params.get("function_path") if variant in ("rule", "both") else None,
        FN_NAME: params.get("function_name"),
        N: rollout.params.get("n") if rollout else plan.rollout.n,
    }


def _effective(plan: Plan, key: str, est: str) -> Any:
    """What verl does with the plan's value (unset booleans are off; unset estimator is gae)."""
    value = get_field(plan, key)
    if key == EST:
        return value or DEFAULT_ESTIMATOR
    if key == CRITIC_ENABLE:
        return critic_of(plan, est)
    if key in (KL_LOSS, KL_REWARD, RM_ENABLE):
        return bool(value)
    return value


def plan_from_graph(graph: Graph, plan: Plan) -> Plan:
    """``plan`` with the dataflow keys set so that verl runs ``graph``; positions saved in plan.dataflow."""
    out = plan.model_copy(deep=True)
    wanted = wanted_keys(graph, plan)
    est = wanted[EST]
    for key in DATAFLOW_KEYS:
        want = wanted[key]
        if _effective(plan, key, est) == want:
            continue
        if key == CRITIC_ENABLE and want == (est == "gae"):
            want = None  # verl's own choice for this estimator: no override needed
        _assign(out, key, want)
    if wanted[RM_ENABLE] and not _effective(plan, RM_ENABLE, est):
        _add_reward_engine(out)
    out.dataflow.positions = {k: (float(x), float(y)) for k, (x, y) in graph.layout.items()}
    return out


def _assign(plan: Plan, key: str, value: Any) -> None:
    """Set a modelled key in place; an extra override of the same key would win on the command line, so it goes."""
    section, name = field_map()[key]
    setattr(getattr(plan, section), name, value)
    plan.passthrough = [t for t in plan.passthrough if _key_of(t) != key]


def _add_reward_engine(plan: Plan) -> None:
    """reward.reward_model.rollout.name is ``???`` in verl 0.9.1 (reward/reward.yaml): turning the reward model on
    without it fails when the reward workers start. Serve it with the actor's engine (trtllm cannot serve one)."""
    if any(_key_of(t) == RM_ENGINE for t in plan.passthrough):
        return
    engine = plan.rollout.name if plan.rollout.name in ("vllm", "sglang") else "vllm"
    plan.passthrough = [*plan.passthrough, f"{RM_ENGINE}={engine}"]


def _key_of(text: str) -> str | None:
    try:
        return parse_override(text).key
    except OverrideSyntaxError:
        return None


def same_dataflow(a: Plan, b: Plan) -> bool:
    """Equal plans, positions aside."""
    return a.model_copy(update={"dataflow": b.dataflow}) == b


def graph_for_plan(plan: Plan, current: Graph | None = None) -> Graph:
    """The graph to show for ``plan``: the one on screen while it still says the same as the plan (it may hold a
    cut link or an unwired stage the keys cannot), else the plan's own graph. Positions come from the plan."""
    layout = {k: tuple(v) for k, v in plan.dataflow.positions.items()}
    if current is not None and same_dataflow(plan_from_graph(current, plan), plan):
        return replace(current, layout=layout)  # type: ignore[arg-type]
    return graph_from_plan(plan)


def hidden_keys(plan: Plan) -> list[Finding]:
    """Dataflow keys the plan keeps only as extra overrides (interpolations, ``+key``): the graph cannot read them."""
    out = []
    for text in plan.passthrough:
        key = _key_of(text)
        if key in DATAFLOW_KEYS:
            out.append(Finding(
                rule="dataflow.hidden_key", severity=Severity.INFO, stage=Stage.ADVICE, keys=[key],
                message=f"{text} is kept as written, so the graph shows {key} as if unset; an edit of that stage "
                        "in the graph replaces it",
                fix="Edit the stage in the graph, or the override on the review page",
            ))
    return out


__all__ = [
    "DATAFLOW_KEYS", "critic_on", "graph_for_plan", "graph_from_plan", "hidden_keys",
    "plan_from_graph", "same_dataflow", "stage_on", "wanted_keys",
]
