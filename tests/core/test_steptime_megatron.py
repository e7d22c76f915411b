"""The Megatron engine's step time: formulas (megatron-core's schedules and collectives), not measured. The tests hold
its terms to their arithmetic and to what a user would see change: the pipeline bubble with more micro-batches or
virtual stages, TP's collectives, EP's all-to-all, the advice ranked by it."""

import json

import pytest

from tests.core.test_memory_megatron import AM, DENSE, MOE, plan_of
from tests.helpers.cli import run_cli
from wizard.core.advice.search import advise
from wizard.core.memory.config import read_config
from wizard.core.memory.megatron import MegatronTrainer
from wizard.core.memory.terms import CONSTANTS
from wizard.core.steptime import RESPONSE_TOKENS, predict_step
from wizard.adapters.files.model_facts import load_model_facts
from wizard.core.steptime.megatron import ASSUMPTION, hf_tensors
from wizard.core.steptime.terms import CALIBRATION
from wizard.usecases.advising import step_time


def terms(st, phase="update_actor"):
    return {t.label: t for p in st.phases if p.name == phase for t in p.terms}


def test_the_dense_plan_has_a_step_time_with_the_megatron_terms_and_its_assumption():
    _, result = plan_of(DENSE)
    st = step_time(result.memory)
    assert st.reason is None and st.seconds > 0 and ASSUMPTION in st.assumptions
    assert [p.name for p in st.phases] == ["gen", "old_log_prob", "ref", "update_actor", "update_weights"]
    update = terms(st)
    assert {"FLOPs", "pipeline bubble", "TP collectives", "gradient sync", "optimizer step"} <= set(update)
    # the bubble: PP 2 idles (PP - 1) / micro-batches of the update's compute
    micro = int(update["pipeline bubble"].note.split("(")[2].split(" micro")[0])
    assert update["pipeline bubble"].seconds == pytest.approx(update["FLOPs"].seconds / micro)
    sync = terms(st, "update_weights")
    assert {"gathered over TP", "sent to every stage"} <= set(sync)


def test_virtual_stages_shrink_the_bubble_and_a_longer_pipeline_grows_it():
    _, base = plan_of(DENSE)
    _, vpp = plan_of(DENSE, f"{AM}.virtual_pipeline_model_parallel_size=2")
    bubble, interleaved = terms(step_time(base.memory))["pipeline bubble"], terms(step_time(vpp.memory))["pipeline bubble"]
    assert interleaved.seconds == pytest.approx(bubble.seconds / 2)
    # TP 2 x PP 4 on the same 16 GPUs: three stages' worth of idling, and half the TP collectives' bytes per GPU
    _, pp4 = plan_of(DENSE, f"{AM}.tensor_model_parallel_size=2", f"{AM}.pipeline_model_parallel_size=4")
    longer = terms(step_time(pp4.memory))
    assert longer["pipeline bubble"].seconds > 2 * bubble.seconds
    assert longer["TP collectives"].seconds < terms(step_time(base.memory))["TP collectives"].seconds


def test_tp_collectives_follow_the_activations_arithmetic():
    _, result = plan_of(DENSE)
    values, actor = result.memory.values, result.memory.models["actor"]
    st = step_time(result.memory)
    tp = terms(st)["TP collectives"]
    # a stage's 32 layers (64 over PP 2) x 2 collectives each (after attention, after the MLP); the update passes the
    # forward, the backward (1.5: sequence parallelism gathers each input again) and full recompute's second forward
    assert "(64 collectives of a stage's 32 layers x " in tp.note and "x 3.5 pass(es)" in tp.note
    micro = int(tp.note.split("32 layers x ")[1].split(" micro")[0])
    t = MegatronTrainer(values, read_config(values), actor, CONSTANTS)  # a micro-batch's tokens on a GPU
    expected = 3.5 * micro * 64 * 2 * (4 - 1) / 4 * 2 * t.update_tokens * actor.hidden_size
    assert f"{expected / 1e9:,.1f} GB per GPU" in tp.note
    # the micro-batches follow the step's mean length: shorter responses, fewer micro-batches, fewer collectives
    mp = result.memory
    short = predict_step({**values, RESPONSE_TOKENS: 256}, mp.models, mp.cluster, mp.report)
    assert terms(short)["TP collectives"].seconds < tp.seconds / 2


def test_the_gradient_sync_runs_once_per_optimizer_step():
    _, result = plan_of(DENSE)
    sync = terms(step_time(result.memory))["gradient sync"]
    # DP 2 over 16 GPUs at TP 4 x PP 2: the stage's params' fp32 gradients reduce-scattered, bf16 params gathered
    t = MegatronTrainer(result.memory.values, read_config(result.memory.values), result.memory.models["actor"],
                        CONSTANTS)
    per_step = (4 + 2) * t.s.dense / 2
    assert sync.note.startswith("4 step(s) x ") and f"{per_step / 1e9:,.1f} GB per GPU" in sync.note
    # 256 prompts in mini-batches of 64: 4 optimizer steps; of 16: 16 steps, four times the syncs
    _, more = plan_of(DENSE, "actor_rollout_ref.actor.ppo_mini_batch_size=16")
    assert terms(step_time(more.memory))["gradient sync"].seconds == pytest.approx(4 * sync.seconds)


def test_the_moe_plan_sends_its_tokens_to_their_experts():
    _, result = plan_of(MOE)
    st = step_time(result.memory)
    a2a = terms(st)["EP all-to-all"]
    assert a2a.seconds > 0 and "top-8 copies" in a2a.note
    # ETP 1: EP 8 is eight neighbouring GPUs, one node's NVLink; EP 16 sends half its copies over the network
    assert "between nodes" not in a2a.note and "NVLink" in a2a.note
    _, ep16 = plan_of(MOE, f"{AM}.expert_model_parallel_size=16")
    wide = terms(step_time(ep16.memory))["EP all-to-all"]
    assert "between nodes" in wide.note and wide.seconds > 5 * a2a.seconds
    # routed experts' gradients sync over the expert-data-parallel ranks even where DP x CP is 1 (TP 8, EP 4, ETP 1)
    _, tp8 = plan_of(MOE, f"{AM}.tensor_model_parallel_size=8", f"{AM}.expert_model_parallel_size=4",
                     "trainer.nnodes=1")
    assert "gradient sync (routed experts)" in terms(step_time(tp8.memory))
    # ETP 2: EP ranks two GPUs apart (EP 8 spans both nodes), and the routed copies gathered over ETP
    _, etp2 = plan_of(MOE, f"{AM}.expert_tensor_parallel_size=2")
    spread = terms(step_time(etp2.memory))
    assert "between nodes" in spread["EP all-to-all"].note and spread["ETP collectives"].seconds > 0
    assert "3.35B params" in terms(st)["FLOPs"].note  # FLOPs from the active parameters, not the 30.5B


def test_the_advice_on_a_megatron_plan_is_ranked_by_step_time_and_says_null_not_none():
    _, result = plan_of(DENSE)
    mp = result.memory
    advice = advise(mp.values, mp.models, mp.cluster)
    now = step_time(mp).seconds
    assert advice.alternatives and all(a.step_seconds is not None for a in advice.alternatives)
    faster = [a for a in advice.alternatives if a.fits]
    assert faster and all(a.step_seconds < now for a in faster)
    assert [a.step_seconds for a in faster] == sorted(a.step_seconds for a in faster)
    # "no recompute" sets recompute_granularity to null, which Hydra reads as None (it reads "None" as a string,
    # which megatron-core refuses at start)
    words = [o for a in advice.alternatives for o in a.overrides if "recompute_granularity" in o]
    assert words and all(o.endswith("=null") for o in words)


def test_what_the_megatron_step_does_not_model_says_why():
    _, result = plan_of(DENSE, "algorithm.adv_estimator=gae", "critic.model.path=Qwen/Qwen2.5-32B-Instruct",
                        critic=True)
    st = step_time(result.memory)
    assert st.seconds is None and "Megatron critic is not modelled" in st.reason


@pytest.mark.parametrize("script", [DENSE, MOE], ids=["dense-tp4-pp2", "moe-ep8"])
def test_plan_json_gives_the_megatron_step_seconds(script):
    proc = run_cli("plan", str(script), "--gpus", "2x8xH100-80GB", "--no-data", "--format", "json")
    doc = json.loads(proc.stdout)
    assert doc["step_seconds"] > 0 and doc["step_reason"] is None
    assert "pipeline bubble" in {t["label"] for t in doc["phases_terms"]["update_actor"]}


def test_a_cluster_whose_links_are_unknown_still_gets_a_step_time():
    _, result = plan_of(MOE)
    mp = result.memory
    dead = mp.cluster.model_copy(deep=True)
    for node in dead.nodes:
        node.alive = False  # a Ray cluster whose nodes went away: no link can be read
    st = predict_step(mp.values, mp.models, dead, mp.report)
    assert st.seconds > 0 and "links unknown (not timed)" in terms(st)["TP collectives"].note


def test_the_reference_offloaded_goes_through_pageable_memory_slower_than_the_actors_pinned_buffers():
    # measured on an H100: the 1.5B reference pass took 3.0 s with param_offload and 1.0 s without (its params go
    # tensor by tensor to pageable memory: megatron_utils.py:784-795); the actor's old log-prob pass only 0.27 s more
    c = CALIBRATION
    _, result = plan_of(DENSE, f"{AM}.param_offload=True", "actor_rollout_ref.ref.megatron.param_offload=True")
    st = step_time(result.memory)
    ref, actor = terms(st, "ref")["params from and back to the host"], terms(st, "old_log_prob")[
        "params from and back to the host"]
    assert "pageable" in ref.note and "pageable" not in actor.note
    assert ref.seconds == pytest.approx(actor.seconds * c.host_link_gbs / c.pageable_gbs)
    _, kept = plan_of(DENSE, f"{AM}.param_offload=True", "actor_rollout_ref.ref.megatron.param_offload=False")
    assert "params from and back to the host" not in terms(step_time(kept.memory), "ref")


def test_the_weight_sync_exports_one_tensor_at_a_time_so_an_moe_s_experts_make_it_longer():
    # measured on an H100: a 1.2B MoE with 32 experts a layer (about 1,700 tensors) synced in 1.1 s, the dense 1.5B
    # (311 as hf_tensors counts them) in 0.45
    dense = terms(step_time(plan_of(DENSE)[1].memory), "update_weights")["fixed"]
    moe = terms(step_time(plan_of(MOE)[1].memory), "update_weights")["fixed"]
    qwen3_30b = load_model_facts("Qwen/Qwen3-30B-A3B").facts  # 48 layers x 128 experts x 3 weights
    assert hf_tensors(qwen3_30b) >= 48 * 128 * 3
    assert moe.seconds == pytest.approx(CALIBRATION.megatron_sync_fixed_s
                                        + hf_tensors(qwen3_30b) * CALIBRATION.megatron_sync_s_per_tensor)
    assert moe.seconds > 5 * dense.seconds and f"{hf_tensors(qwen3_30b):,}" in moe.note


def test_the_optimizer_states_offloaded_are_timed_coming_in_not_going_out():
    # verl copies them back to the host non_blocking (megatron_utils.py:956-962): the 1.5B's update took 1.05 s
    # more with both offloads, where in and out at the host link's rate would have been 1.7 s
    _, result = plan_of(DENSE, f"{AM}.param_offload=True", f"{AM}.optimizer_offload=True")
    states = terms(step_time(result.memory))["optimizer states over the host link"]
    moved_gb = float(states.note.split(" GB at ")[0])  # what the update brings in: this GPU's main params and Adam's
    # 12 bytes a parameter over the 2 DP ranks (distributed optimizer) against the params' 2 moved in and out: 1.5 x
    params_gb = float(terms(step_time(result.memory))["params over the host link"].note.split(" GB at ")[0])
    assert moved_gb == pytest.approx(1.5 * params_gb, rel=0.02)
    assert states.seconds == pytest.approx(moved_gb / CALIBRATION.host_link_gbs, rel=0.01)
    assert "in once per update" in states.note


def test_an_moe_update_pays_for_each_token_s_copies_through_its_moe_layers_and_a_dense_one_does_not():
    # measured on an H100: the 1.2B MoE's update (16 MoE layers, top-4) spent 20.5 us a token more than the dense
    # models' per-token work: 0.32 us a copy and layer
    moe = terms(step_time(plan_of(MOE)[1].memory))
    dispatch = moe["MoE dispatch"]
    tokens = float(dispatch.note.split(" tokens")[0].replace(",", ""))
    layers = int(dispatch.note.split(" MoE layers")[0].split(" x ")[-1])
    assert "top-8" in dispatch.note and layers >= 1
    assert dispatch.seconds == pytest.approx(tokens * 8 * layers * CALIBRATION.megatron_moe_train_s_per_copy,
                                             rel=0.01)
    assert "MoE dispatch" not in terms(step_time(plan_of(DENSE)[1].memory))
