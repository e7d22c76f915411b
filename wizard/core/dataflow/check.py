"""What is wrong with a dataflow graph, as Findings attached to the stages they concern.

Two kinds of problem: a picture that does not hold together (an input nothing feeds, a loop, a
KL stage without reference log-probs) and a step verl would run badly or not at all (gae
without critic values, a group estimator with one response per prompt, a reward model with no
model). Each message names the ports and numbers involved; each fix says what to draw.
"""

from __future__ import annotations

from wizard.core.dataflow.graph import (
    GROUP_N,
    KINDS,
    Graph,
    PortRef,
    is_group_estimator,
    port_label,
    uses_values,
)
from wizard.core.dataflow.keys import (CRITIC_ENABLE, EST, FN_PATH, KL_LOSS, KL_REWARD, N, RM_ENABLE, RM_PATH, critic_on,
                                      stage_on)
from wizard.core.findings import Finding, Severity, Stage, sort_findings

NodeFinding = tuple[tuple[str, ...], Finding]
_STAGE_KEY = {"kl_loss": KL_LOSS, "kl_reward": KL_REWARD}


def _f(rule: str, severity: Severity, stage: Stage, keys: list[str], message: str, fix: str,
       fix_overrides: list[str] | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, stage=stage, keys=keys, message=message, fix=fix,
                   fix_overrides=fix_overrides or [], fix_auto=False)


def check_nodes(graph: Graph) -> list[NodeFinding]:
    """Every finding, with the ids of the stages to mark."""
    out: list[NodeFinding] = []
    out += _cycles(graph)
    out += _inputs(graph)
    out += _idle(graph)
    out += _estimator(graph)
    out += _reward(graph)
    return out


def validate(graph: Graph) -> list[Finding]:
    """The findings alone, worst first."""
    return sort_findings([f for _, f in check_nodes(graph)])


def _cycles(graph: Graph) -> list[NodeFinding]:
    succ: dict[str, list[str]] = {}
    for lk in graph.links:
        succ.setdefault(lk.src.node, []).append(lk.dst.node)
    seen: set[frozenset[str]] = set()
    out: list[NodeFinding] = []

    def walk(node: str, path: list[str]) -> None:
        for nxt in succ.get(node, []):
            if nxt in path:
                loop = path[path.index(nxt):]
                if frozenset(loop) not in seen:
                    seen.add(frozenset(loop))
                    names = " → ".join(KINDS[n].title for n in [*loop, nxt])
                    out.append((tuple(loop), _f(
                        "dataflow.cycle", Severity.ERROR, Stage.ADVICE, [],
                        f"a loop: {names}; verl runs each stage once per step, in order, so no plan can say this",
                        "Delete one link of the loop")))
            else:
                walk(nxt, [*path, nxt])

    for node in graph.nodes:
        walk(node.id, [node.id])
    return out


def unresolved_inputs(graph: Graph) -> list[PortRef]:
    """Required inputs of the stages that run, with nothing linked into them (Advantage's values only for gae)."""
    out = []
    for node in graph.nodes:
        if node.spec.optional and not stage_on(graph, node.id):
            continue  # an idle stage gets one finding in _idle, not one per input
        for port in node.spec.inputs:
            ref = PortRef(node.id, port.name)
            if not port.required or graph.feeding(ref) is not None:
                continue
            if ref == PortRef("advantage", "values") and not uses_values(graph.estimator):
                continue
            out.append(ref)
    return out


def _inputs(graph: Graph) -> list[NodeFinding]:
    out: list[NodeFinding] = []
    for ref in unresolved_inputs(graph):
        node = graph.node(ref.node)
        port = next(p for p in node.spec.inputs if p.name == ref.port)
        if ref == PortRef("advantage", "values"):
            out.append(_gae_values(graph))
        elif port.name == "ref_log_probs":
            out.append(((node.id,), _f(
                "dataflow.kl_ref", Severity.ERROR, Stage.ADVICE, [_STAGE_KEY[node.id]],
                f"{node.title} compares the actor with the reference model, but nothing feeds its ref log-probs "
                f"(unresolved dependency: ref log-probs → {node.title})",
                f"Add Reference log-probs and link it to {node.title} (verl runs the reference model whenever a "
                "KL stage is on)")))
        else:
            out.append(((node.id,), _f(
                "dataflow.unresolved", Severity.ERROR, Stage.ADVICE, [],
                f"unresolved dependency: {port.type.value} → {node.title} (nothing feeds its {port.label} input)",
                f"Link an output that makes {port.type.value} to {port_label(ref)}")))
    return out


def _gae_values(graph: Graph) -> NodeFinding:
    if critic_on(graph):
        return (("advantage", "critic_values"), _f(
            "dataflow.gae_values", Severity.ERROR, Stage.ADVICE, [EST],
            "gae reads critic values, but nothing feeds Advantage · values "
            "(unresolved dependency: values → Advantage)",
            "Link Critic values · values to Advantage · values"))
    return (("advantage",), _f(
        "dataflow.gae_values", Severity.ERROR, Stage.RUNTIME, [EST, CRITIC_ENABLE],
        "gae needs critic values but the critic is off (critic.enable=False): verl fails at the first advantage "
        "computation with KeyError: 'values'",
        "Add Critic values and Critic update, or pick an estimator without a critic (grpo, rloo, …)",
        ["critic.enable=True"]))


def _idle(graph: Graph) -> list[NodeFinding]:
    """Stages drawn but not wired into the step: the keys say they are off."""
    out: list[NodeFinding] = []
    for node_id, reader, effect, keys in (
        ("kl_loss", "Actor update", f"{KL_LOSS}=False", [KL_LOSS]),
        ("kl_reward", "Advantage", f"{KL_REWARD}=False", [KL_REWARD]),
        ("ref", "a KL stage", "verl runs no reference model", []),
    ):
        if graph.has(node_id) and not stage_on(graph, node_id):
            title = KINDS[node_id].title
            out.append(((node_id,), _f(
                "dataflow.stage_off", Severity.WARNING, Stage.ADVICE, keys,
                f"{title} is drawn but no stage that runs reads its output, so it is off ({effect})",
                f"Link its output to {reader} to turn it on, or delete it")))
    drawn = [n for n in ("critic_values", "critic_update") if graph.has(n)]
    if drawn and not critic_on(graph):
        out.append((tuple(drawn), _f(
            "dataflow.stage_off", Severity.WARNING, Stage.ADVICE, [CRITIC_ENABLE],
            "the critic is drawn but not wired in (its values feed nothing and its update gets nothing), so it is "
            "off (critic.enable=False)", "Link Critic values to Critic update (and to Advantage for gae), or delete")))
    if critic_on(graph) and not graph.has("critic_update"):
        out.append((("critic_values",), _f(
            "dataflow.critic_update", Severity.WARNING, Stage.ADVICE, [CRITIC_ENABLE],
            "the critic runs but is never updated in this picture; verl trains it every step",
            "Add Critic update (it reads values and returns)")))
    return out


def _estimator(graph: Graph) -> list[NodeFinding]:
    est = graph.estimator
    out: list[NodeFinding] = []
    rollout = graph.node("rollout")
    n = rollout.params.get("n") if rollout else None
    if is_group_estimator(est) and n in (1, None):  # below 1: batch.no_responses
        out.append((("advantage", "rollout"), _f(
            "dataflow.group_size", Severity.WARNING, Stage.ADVICE, [N, EST],
            f"{est} compares the responses to the same prompt, but rollout.n = {n or 1}: every advantage is 0 and the "
            "policy does not learn (verl raises no error)",
            f"Sample a group per prompt: set n on Generate to {GROUP_N}", [f"{N}={GROUP_N}"])))
    if critic_on(graph) and not uses_values(est):
        out.append((("critic_values", "advantage"), _f(
            "dataflow.critic_unused", Severity.INFO, Stage.ADVICE, [CRITIC_ENABLE, EST],
            f"{est} does not read critic values: the critic is trained every step (GPU time and memory) but no "
            "advantage uses it", "Delete the critic stages, or pick gae", [f"{CRITIC_ENABLE}=False"])))
    return out


def _reward(graph: Graph) -> list[NodeFinding]:
    node = graph.node("reward")
    if node is None:
        return []
    out: list[NodeFinding] = []
    if node.variant in ("model", "both") and not node.params.get("model_path"):
        out.append((("reward",), _f(
            "dataflow.reward_model_path", Severity.ERROR, Stage.STARTUP, [RM_ENABLE, RM_PATH],
            "the reward model is on but has no model (reward.reward_model.model_path is unset): every reward "
            "worker fails at startup loading its tokenizer",
            "Set the reward model path on the Reward stage (a local folder or a hub id)")))
    if node.variant == "both" and not node.params.get("function_path"):
        out.append((("reward",), _f(
            "dataflow.reward_function", Severity.WARNING, Stage.ADVICE, [FN_PATH, RM_ENABLE],
            "model + function needs your function (reward.custom_reward_function.path): without it verl scores "
            "with the reward model alone", "Set the reward function path on the Reward stage, or pick reward model")))
    return out
