"""The placement board's model without a window: drop targets, refused drops and their reasons, new pools, the verdict."""

from wizard.usecases.plans import preset_plan
from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.check.verdict import check_overrides
from wizard.core.hardware.cluster import parse_cluster_spec
from wizard.core.memory.board import OK, OOM, TIGHT, UNKNOWN, BoardState, board_state, fit_verdict, headline
from wizard.core.models.facts import ModelFacts
from wizard.core.placement.board import kept_machine, new_pool_size, plain_cluster, propose
from wizard.core.plan.convert import apply_overrides
from wizard.core.plan.emit import emit_overrides

RM = "reward.reward_model"
WITH_RM = [f"{RM}.enable=True", f"{RM}.model_path=Qwen/Qwen2.5-7B-Instruct"]
Q7 = ModelFacts(source="catalogue", name="Qwen/Qwen2.5-7B-Instruct", model_type="qwen2", hidden_size=3584,
                intermediate_size=18944, num_layers=28, num_attention_heads=28, num_kv_heads=4, head_dim=128,
                vocab_size=152064, tie_word_embeddings=False, max_position_embeddings=32768, attention_bias=True)


def machine(text):
    return parse_cluster_spec(text, load_gpu_catalogue())


def board(plan, cluster, models=None) -> BoardState:
    """The board's picture of ``plan`` on ``cluster`` from the plan's one check (no findings shown)."""
    result = check_overrides(load_schema(), emit_overrides(plan).overrides, config_name=plan.config_name,
                             moves=load_moves(), cluster=cluster, models=models or {})
    return board_state(plan, result.memory, [])


def state(preset, gpus, extra=(), models=None) -> BoardState:
    return board(preset_plan(preset, sets=list(extra) or None), machine(gpus), models)


def emits(plan, override):
    return override.lower() in (o.lower() for o in emit_overrides(plan).overrides)


def test_the_board_offers_the_pools_and_the_slots_for_new_ones():
    s = state("grpo-2node", "2x8xH100-80GB", WITH_RM)
    assert s.targets() == ["global_pool", "new:reward_pool", "new:rollout_pool"]
    assert s.roles() == [("actor", "global_pool"), ("rollout", "global_pool"), ("ref", "global_pool"),
                         ("reward", "global_pool")]
    assert s.describe() == "global_pool: 16 GPU(s) on 2 nodes (actor, rollout, ref, reward)"


def test_a_drop_verl_cannot_run_is_refused_with_the_reason_and_no_plan():
    s = state("ppo-8gpu", "8xH100-80GB")
    m = machine("8xH100-80GB")
    critic = propose(s, m, "critic", "new:reward_pool")
    assert not critic.ok and critic.plan is None
    assert critic.verdict.reason.startswith("verl 0.9.1 puts the critic on the training GPUs (global_pool) in its code")
    home = propose(s, m, "rollout", "global_pool")
    assert not home.ok and home.verdict.reason == "the rollout already runs on global_pool"
    actor = propose(s, m, "actor", "new:rollout_pool")
    assert not actor.ok and "the actor defines global_pool" in actor.verdict.reason


def test_no_new_pool_from_a_single_gpu():
    s = state("ppo-8gpu", "1xH100-80GB", ["trainer.n_gpus_per_node=1"])
    m = machine("1xH100-80GB")
    assert new_pool_size(s.placement, m) is None
    move = propose(s, m, "rollout", "new:rollout_pool")
    assert not move.ok
    assert move.verdict.reason == "no GPUs are free for a new pool and the training pool has a single GPU to give"


def test_a_new_pool_takes_spare_gpus_then_the_last_node_then_half_of_one_node():
    one_node = state("ppo-8gpu", "2x8xH100-80GB")  # the plan uses node0; node1 is spare
    assert new_pool_size(one_node.placement, machine("2x8xH100-80GB")) == (8, 1, [])
    two_nodes = state("grpo-2node", "2x8xH100-80GB", WITH_RM)
    assert new_pool_size(two_nodes.placement, machine("2x8xH100-80GB")) == (8, 1, ["trainer.nnodes=1"])
    full = state("ppo-8gpu", "8xH100-80GB")
    assert new_pool_size(full.placement, machine("8xH100-80GB")) == (4, 1, ["trainer.n_gpus_per_node=4"])


def test_an_accepted_drop_is_the_plan_it_makes_and_names_itself():
    s = state("grpo-2node", "2x8xH100-80GB", WITH_RM)
    move = propose(s, machine("2x8xH100-80GB"), "reward", "new:reward_pool")
    assert move.ok and move.pool == "reward_pool"
    assert move.text == "Move reward model to New reward-model pool"
    assert move.verdict.overrides == ["trainer.nnodes=1", f"{RM}.enable_resource_pool=True",
                                      f"{RM}.n_gpus_per_node=8", f"{RM}.nnodes=1"]
    assert all(emits(move.plan, o) for o in move.verdict.overrides)
    after = board(move.plan, machine("2x8xH100-80GB"))
    assert after.describe() == ("global_pool: 8 GPU(s) on node0 (actor, rollout, ref); "
                                "reward_pool: 8 GPU(s) on node1 (reward)")
    assert after.missing_gpus() is None


def test_a_plan_the_machine_cannot_hold_says_which_pool_lacks_gpus():
    s = state("grpo-2node", "8xH100-80GB")
    assert s.missing_gpus() == "global_pool lacks 8 GPU(s)"


def test_the_plan_drawn_machine_does_not_shrink_when_a_pool_is_carved_off():
    plan = preset_plan("ppo-8gpu")
    drawn = plain_cluster(1, 8)
    assert kept_machine(plan, drawn) is None  # nothing carved: draw the plan afresh
    carved = apply_overrides(plan, ["trainer.n_gpus_per_node=4", "trainer.v1.trainer_mode=separate_async"])
    assert kept_machine(carved, drawn) is drawn
    assert kept_machine(carved, machine("8xH100-80GB")) is None  # a chosen machine is never "kept"


def verdict(utilization=None):
    extra = [f"actor_rollout_ref.rollout.gpu_memory_utilization={utilization}"] if utilization else []
    s = state("ppo-8gpu", "8xH100-80GB", extra, models={"actor": Q7, "critic": Q7})
    worst = max(s.report.groups, key=lambda g: g.peak.total)
    return s, worst, fit_verdict(s.report, worst), headline(s)


def test_the_verdict_words_follow_the_worst_gpu():
    assert verdict()[2:] == (OK, "Fits: worst GPU 62.8 of 79.6 GiB in the generation phase (global_pool)")
    assert verdict(0.7)[2:] == (TIGHT, "Fits, tight: worst GPU 78.6 of 79.6 GiB in the generation phase "
                                       "(global_pool)")
    s, worst, word, line = verdict(0.95)
    assert word == OOM and line.startswith("Does not fit: worst GPU 98.4 of 79.6 GiB in the generation phase")
    assert fit_verdict(s.report, worst, total=0) == OK  # one phase's bar is judged on its own total


def test_without_gpu_memory_there_is_no_verdict_and_the_headline_says_why():
    s = state("ppo-8gpu", "8xH100-80GB")  # no model facts: nothing to estimate
    assert s.report is None and fit_verdict(s.report, None) == UNKNOWN
    assert headline(s).startswith("No memory estimate")
    unknown = board(preset_plan("ppo-8gpu"), plain_cluster(1, 8), models={"actor": Q7, "critic": Q7})
    assert headline(unknown).startswith("No memory estimate: the GPUs' memory is unknown")
