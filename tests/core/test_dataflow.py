"""The dataflow graph: its mapping onto verl keys (every preset, every estimator), its rules and its layout."""

import itertools

import pytest

from wizard.usecases.plans import preset_plan
from wizard.adapters.files.resources import preset_names
from wizard.core.dataflow.graph import ESTIMATORS, KINDS, DataflowError, Graph, Link, Node, PortRef, can_connect, sorted_links
from wizard.core.dataflow.graph import canonical_links
from wizard.core.dataflow.check import validate
from wizard.core.dataflow.edit import (
    add_node,
    clear_layout,
    connect,
    disconnect,
    move,
    remove_node,
    set_estimator,
    set_param,
    set_reward,
)
from wizard.core.dataflow.layout import NODE_W, auto_layout, is_wrapped, node_height, positions, routes
from wizard.core.dataflow.keys import graph_for_plan, graph_from_plan, hidden_keys, plan_from_graph
from wizard.core.plan.emit import emit_overrides
from wizard.core.plan.model import load_plan
from wizard.core.plan.convert import plan_from_overrides

PRESETS = preset_names()
OPTIONAL = [k for k, spec in KINDS.items() if spec.optional]
REWARDS = {  # reward variant, params
    "rule": ("rule", {}),
    "rule+function": ("rule", {"function_path": "/srv/rewards/my reward.py", "function_name": "score"}),
    "model": ("model", {"model_path": "/models/rm-7b"}),
    "both": ("both", {"function_path": "/srv/rewards/genrm.py", "model_path": "Qwen/Qwen2.5-7B-Instruct"}),
}


def rules(findings):
    return [f.rule for f in findings]


def build(base: Graph, estimator: str, critic: bool, kl_loss: bool, kl_reward: bool, reward: str) -> Graph:
    """A graph made with the editor's own edits, as a user would: strip, pick the estimator, add stages."""
    g = base
    for kind in OPTIONAL:
        if g.has(kind):
            g = remove_node(g, kind)
    g = set_estimator(g, estimator)
    wanted = (["critic_values", "critic_update"] if critic else []) + (["ref"] if kl_loss or kl_reward else [])
    wanted += (["kl_loss"] if kl_loss else []) + (["kl_reward"] if kl_reward else [])
    for kind in wanted:
        g = add_node(g, kind)
    variant, params = REWARDS[reward]
    g = set_reward(g, variant)
    for name in ("function_path", "function_name", "model_path"):
        g = set_param(g, "reward", name, params.get(name))
    return g


def reread(plan):
    """The plan as verl-wizard reads back the overrides it wrote."""
    return plan_from_overrides(emit_overrides(plan).overrides, config_name=plan.config_name, script_env=plan.script_env)


@pytest.mark.parametrize("name", PRESETS)
def test_every_preset_draws_a_clean_graph_that_maps_back_to_the_same_plan(name):
    plan = preset_plan(name)
    graph = graph_from_plan(plan)
    assert validate(graph) == []
    assert plan_from_graph(graph, plan) == plan
    assert graph_from_plan(reread(plan)).same_flow(graph)


def test_presets_draw_what_they_run():
    ppo, grpo = graph_from_plan(preset_plan("ppo-8gpu")), graph_from_plan(preset_plan("grpo-2node"))
    assert ppo.has("critic_values") and ppo.has("critic_update") and not ppo.has("kl_loss")
    assert Link(PortRef("critic_values", "values"), PortRef("advantage", "values")) in ppo.links
    assert grpo.estimator == "grpo" and grpo.has("kl_loss") and grpo.has("ref") and not grpo.has("critic_values")
    assert grpo.node("rollout").params == {"n": 8}


@pytest.mark.parametrize("name,estimator", list(itertools.product(PRESETS, ESTIMATORS)))
def test_graph_to_overrides_to_graph_round_trips(name, estimator):
    base_plan = preset_plan(name)
    base = graph_from_plan(base_plan)
    for critic, kl_loss, kl_reward, reward in itertools.product((False, True), (False, True), (False, True), REWARDS):
        graph = build(base, estimator, critic, kl_loss, kl_reward, reward)
        assert graph.links == sorted_links(canonical_links(graph))  # the edits wire what verl wires
        plan = plan_from_graph(graph, base_plan)
        text = emit_overrides(plan).overrides
        assert f"algorithm.adv_estimator={estimator}" in text
        assert f"actor_rollout_ref.actor.use_kl_loss={str(kl_loss).lower()}" in text
        assert f"algorithm.use_kl_in_reward={str(kl_reward).lower()}" in text
        assert ("reward.reward_model.enable=true" in text) == (reward in ("model", "both"))
        back = reread(plan)
        again = graph_from_plan(back)
        assert again.same_flow(graph), (critic, kl_loss, kl_reward, reward)
        assert plan_from_graph(again, back) == back
        expected = {"dataflow.gae_values"} if estimator == "gae" and not critic else set()
        errors = {f.rule for f in validate(graph) if f.severity.value == "error"}
        assert errors == expected, (critic, kl_loss, kl_reward, reward)


def test_critic_key_is_written_only_when_it_differs_from_verls_choice():
    ppo_plan = preset_plan("ppo-8gpu")
    ppo = graph_from_plan(ppo_plan)
    assert ppo_plan.models.critic_enable is None  # gae: verl turns the critic on by itself
    no_critic = remove_node(remove_node(ppo, "critic_update"), "critic_values")
    assert plan_from_graph(no_critic, ppo_plan).models.critic_enable is False
    grpo = set_estimator(no_critic, "grpo")
    plan = plan_from_graph(grpo, ppo_plan)
    assert plan.models.critic_enable is None and plan.algorithm.adv_estimator == "grpo"
    assert "critic.enable" not in " ".join(emit_overrides(plan).overrides)
    with_critic = add_node(add_node(grpo, "critic_values"), "critic_update")
    assert "critic.enable=true" in emit_overrides(plan_from_graph(with_critic, ppo_plan)).overrides


def test_group_estimator_raises_n_and_one_response_per_prompt_is_flagged():
    plan = preset_plan("ppo-8gpu")
    graph = set_estimator(graph_from_plan(plan), "rloo")
    assert plan_from_graph(graph, plan).rollout.n == 5
    lonely = set_param(graph, "rollout", "n", 1)
    [finding] = [f for f in validate(lonely) if f.rule == "dataflow.group_size"]
    assert "rollout.n = 1" in finding.message and finding.fix_overrides == ["actor_rollout_ref.rollout.n=5"]
    assert "actor_rollout_ref.rollout.n=1" in emit_overrides(plan_from_graph(lonely, plan)).overrides


def test_gae_without_a_critic_fails_at_the_first_step():
    plan = preset_plan("grpo-8gpu")
    graph = set_estimator(graph_from_plan(plan), "gae")
    [finding] = validate(graph)
    assert finding.rule == "dataflow.gae_values" and finding.stage.value == "runtime"
    assert "KeyError: 'values'" in finding.message and finding.fix_overrides == ["critic.enable=True"]
    # no critic drawn: the plan must say so, since verl would turn it on for gae by itself
    assert "critic.enable=false" in emit_overrides(plan_from_graph(graph, plan)).overrides


def test_kl_needs_reference_log_probs():
    graph = remove_node(graph_from_plan(preset_plan("grpo-8gpu")), "ref")
    [finding] = validate(graph)
    assert finding.rule == "dataflow.kl_ref"
    assert "unresolved dependency: ref log-probs → KL in loss" in finding.message


def test_cut_input_is_an_unresolved_dependency_and_the_keys_stay():
    plan = preset_plan("ppo-8gpu")
    link = Link(PortRef("rollout", "responses"), PortRef("reward", "responses"))
    graph = disconnect(graph_from_plan(plan), link)
    [finding] = validate(graph)
    assert finding.message == "unresolved dependency: responses → Reward (nothing feeds its responses input)"
    assert plan_from_graph(graph, plan) == plan


def test_a_stage_whose_output_nothing_reads_is_off():
    plan = preset_plan("grpo-8gpu")
    graph = disconnect(graph_from_plan(plan), Link(PortRef("kl_loss", "kl"), PortRef("actor_update", "kl")))
    assert plan_from_graph(graph, plan).algorithm.use_kl_loss is False
    assert [f.keys for f in validate(graph)] == [["actor_rollout_ref.actor.use_kl_loss"], []]  # KL, and its reference
    again = connect(graph, PortRef("kl_loss", "kl"), PortRef("actor_update", "kl"))
    assert plan_from_graph(again, plan) == plan


def test_loops_are_refused_and_reported():
    graph = graph_from_plan(preset_plan("grpo-8gpu"))
    graph = add_node(graph, "kl_reward")
    ok, reason = can_connect(graph, PortRef("kl_reward", "scores_kl"), PortRef("kl_reward", "scores"))
    assert not ok and reason == "KL in reward cannot feed itself"
    looped = Graph(nodes=graph.nodes, links=graph.links + (Link(PortRef("kl_reward", "scores_kl"), PortRef("kl_reward", "scores")),))
    assert "dataflow.cycle" in rules(validate(looped))


def test_can_connect_explains_each_refusal():
    graph = graph_from_plan(preset_plan("grpo-8gpu"))
    cases = {
        (PortRef("reward", "scores"), PortRef("actor_update", "kl")): "takes KL term (from KL in loss), not scores",
        (PortRef("reward", "responses"), PortRef("kl_loss", "log_probs")): "both are inputs",
        (PortRef("actor_update", "kl"), PortRef("kl_loss", "kl")): "drag from an output",
        (PortRef("rollout", "responses"), PortRef("reward", "responses")): "already linked",
    }
    for (src, dst), words in cases.items():
        ok, reason = can_connect(graph, src, dst)
        assert not ok and words in reason
    graph = add_node(graph, "critic_values")
    ok, reason = can_connect(graph, PortRef("critic_values", "values"), PortRef("advantage", "values"))
    assert not ok and reason.startswith("grpo does not read critic values")
    with pytest.raises(DataflowError, match="always runs"):
        remove_node(graph, "reward")
    with pytest.raises(DataflowError, match="already has"):
        add_node(graph, "critic_values")


def test_editing_a_key_the_plan_kept_verbatim_replaces_it():
    plan = plan_from_overrides(["algorithm.adv_estimator=${oc.env:EST,grpo}", "actor_rollout_ref.rollout.name=vllm"])
    assert rules(hidden_keys(plan)) == ["dataflow.hidden_key"]
    edited = plan_from_graph(set_estimator(graph_from_plan(plan), "rloo"), plan)
    assert edited.algorithm.adv_estimator == "rloo" and not hidden_keys(edited)
    assert "${oc.env" not in " ".join(emit_overrides(edited).overrides)


def test_turning_the_reward_model_on_gives_it_an_engine():
    plan = preset_plan("grpo-8gpu")
    graph = set_param(set_reward(graph_from_plan(plan), "model"), "reward", "model_path", "/models/rm")
    text = emit_overrides(plan_from_graph(graph, plan)).overrides
    assert "reward.reward_model.enable=true" in text and "reward.reward_model.model_path=/models/rm" in text
    assert "reward.reward_model.rollout.name=vllm" in text
    no_model = set_reward(graph_from_plan(plan), "model")
    assert "dataflow.reward_model_path" in rules(validate(no_model))


def test_keeping_the_drawn_graph_while_it_says_what_the_plan_says():
    plan = preset_plan("ppo-8gpu")
    cut = disconnect(graph_from_plan(plan), Link(PortRef("rollout", "responses"), PortRef("reward", "responses")))
    assert graph_for_plan(plan, cut) == cut  # the cut stays on screen: the keys cannot hold it
    changed = plan.model_copy(update={"algorithm": plan.algorithm.model_copy(update={"use_kl_loss": True})})
    redrawn = graph_for_plan(changed, cut)
    assert redrawn.has("kl_loss") and validate(redrawn) == []


def test_layout_is_deterministic_left_to_right_and_without_overlaps():
    for name in PRESETS:
        for extra in ([], ["kl_reward"], ["critic_values", "critic_update", "kl_reward"]):
            graph = graph_from_plan(preset_plan(name))
            for kind in extra:
                graph = graph if graph.has(kind) else add_node(graph, kind)
            pos = auto_layout(graph)
            assert pos == auto_layout(graph)
            boxes = {n: (x, y, x + NODE_W, y + node_height(n)) for n, (x, y) in pos.items()}
            for a, b in itertools.combinations(boxes.values(), 2):
                assert a[2] <= b[0] or b[2] <= a[0] or a[3] <= b[1] or b[3] <= a[1]
            for link in graph.links:  # every link runs in reading order: left to right, or on to a later row
                (sx, sy), (dx, dy) = pos[link.src.node], pos[link.dst.node]
                assert sx < dx or dy >= sy + node_height(link.src.node)
            for link, points in routes(graph).items():  # and never under a stage it passes
                segments = list(zip(points[1:-1:2], points[2:-1:2]))
                if is_wrapped(points):  # on to the next row: every straight segment clear of every stage
                    segments = list(zip(points[1:-1], points[2:-1]))
                for (x0, y0), (x1, y1) in segments:
                    lo_x, hi_x, lo_y, hi_y = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
                    for node, (bx0, by0, bx1, by1) in boxes.items():
                        if node in (link.src.node, link.dst.node):
                            continue
                        if lo_x == hi_x:
                            assert not (bx0 < lo_x < bx1 and lo_y < by1 and by0 < hi_y), (link, node)
                        elif lo_x < bx1 and bx0 < hi_x:
                            assert not by0 < y0 < by1, (link, node)


def test_a_step_wider_than_the_canvas_wraps_onto_rows_shaped_like_it():
    graph = graph_from_plan(preset_plan("grpo-1gpu-smoke"))  # five columns: one row would be 4 times wider than tall
    pos = auto_layout(graph)
    width = max(x for x, _ in pos.values()) + NODE_W
    height = max(y + node_height(n) for n, (_, y) in pos.items())
    assert len({y for _, y in pos.values()}) > 1 and pos["actor_update"][1] > pos["rollout"][1] + node_height("rollout")
    assert 1.0 < width / height < 2.5  # near the canvas's 1.6 : 1, so it fits at a readable scale


def test_moves_are_saved_with_the_plan_and_never_written_as_overrides():
    plan = preset_plan("grpo-2node")
    graph = move(graph_from_plan(plan), {"reward": (600.0, -80.0)})
    saved = plan_from_graph(graph, plan)
    assert saved.dataflow.positions["reward"] == (600.0, -80.0) and len(saved.dataflow.positions) == len(graph.nodes)
    assert emit_overrides(saved).overrides == emit_overrides(plan).overrides
    reloaded = load_plan(saved.model_dump(mode="json"))
    assert positions(graph_from_plan(reloaded))["reward"] == (600.0, -80.0)
    added = add_node(graph_from_plan(reloaded), "kl_reward")  # a new stage lands on free canvas
    assert "kl_reward" in added.layout
    assert plan_from_graph(clear_layout(graph), plan).dataflow.positions == {}


def test_a_move_back_to_where_a_stage_is_drawn_is_no_edit():
    graph = graph_from_plan(preset_plan("grpo-2node"))
    here = positions(graph)["reward"]
    assert move(graph, {"reward": here}) is graph  # nothing pinned, nothing to undo
    pinned = move(graph, {"reward": (here[0], here[1] - 60)})
    assert pinned != graph and move(pinned, {"reward": pinned.layout["reward"]}) is pinned


def test_unknown_estimator_is_shown_not_lost():
    plan = plan_from_overrides(["algorithm.adv_estimator=my_registered_estimator"])
    graph = graph_from_plan(plan)
    assert graph.node("advantage") == Node("advantage", variant="my_registered_estimator")
    assert plan_from_graph(graph, plan) == plan
