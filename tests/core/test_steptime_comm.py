"""FSDP's collectives in the step time over several GPUs: what a user on PCIe GPUs sees that one on NVLink does not.
Formulas only (every calibration run used one GPU): the tests hold the arithmetic and its effect on the advice."""

import pytest

from tests.core.test_advice import A, Q15, plan
from wizard.core.advice import advise
from wizard.core.steptime import CALIBRATION, comm
from wizard.usecases.advising import step_time

P = Q15.param_count
EIGHT = ["trainer.n_gpus_per_node=8", f"{A}.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2",
         "data.train_batch_size=64", f"{A}.ppo_mini_batch_size=16", f"{A}.ppo_micro_batch_size_per_gpu=1"]


def collectives(st, phase="update_actor"):
    terms = [t for p in st.phases if p.name == phase for t in p.terms if t.label.startswith("FSDP")]
    return terms[0] if terms else None


def test_an_update_gathers_twice_and_reduce_scatters_once_per_micro_batch():
    # 64 prompts x 4 samples over 8 GPUs, mini-batches of 16 x 4 / 8 = 8 samples: 4 steps of 8 micro-batches of 1;
    # each: the bf16 params gathered in the forward and again in the backward, the fp32 gradients reduce-scattered,
    # 7/8 of each through every GPU's link
    per_micro = (2 + 2 + 4) * P * 7 / 8
    assert comm.update_bytes(P, P, 8, 8, 4, False, 4, 8) == pytest.approx(4 * 8 * per_micro)
    # use_no_sync_for_gradient_accumulation: one reduce-scatter per step; reshard_after_forward=false: one gather
    assert comm.update_bytes(P, P, 8, 8, 4, False, 4, 1) == pytest.approx(4 * (8 * 4 * P + 4 * P) * 7 / 8)
    assert comm.update_bytes(P, P, 8, 8, 4, True, 4, 8) == pytest.approx(4 * 8 * 6 * P * 7 / 8)
    assert comm.forward_bytes(P, 8, 8, False) == pytest.approx(8 * 2 * P * 7 / 8)
    assert comm.update_bytes(P, P, 1, 8, 4, False, 4, 8) == 0  # one shard sends nothing


def test_pcie_gpus_wait_for_fsdp_where_nvlink_hides_it_behind_the_compute():
    pcie, nvlink = step_time(plan(EIGHT, "8xL40S-48GB", Q15)), step_time(plan(EIGHT, "8xH100-80GB", Q15))
    on_pcie, on_nvlink = collectives(pcie), collectives(nvlink)
    assert "PCIe" in on_pcie.note and on_pcie.seconds > 5  # 346 GB per GPU at 20 GB/s, beyond 7 s of compute
    assert "NVLink x18" in on_nvlink.note and on_nvlink.seconds == 0
    assert f"{4 * 8 * 7 * P / 1e9:,.1f} GB per GPU" in on_pcie.note  # 4 steps x 8 micro-batches x 7/8 x 8P bytes
    assert any("not measured" in a for a in pcie.assumptions)
    # bigger micro-batches gather the params fewer times: on PCIe that is most of the difference
    bigger = step_time(plan([*EIGHT, f"{A}.ppo_micro_batch_size_per_gpu=4"], "8xL40S-48GB", Q15))
    assert collectives(bigger).seconds < on_pcie.seconds / 2 and bigger.seconds < pcie.seconds


def test_one_gpu_has_no_collectives_and_a_second_node_is_slower_than_nvlink():
    one = step_time(plan(["data.train_batch_size=16"], "1xH100-80GB", Q15))
    assert collectives(one) is None and not any("collectives" in a for a in one.assumptions)
    two_nodes = step_time(plan([*EIGHT, "trainer.nnodes=2"], "2x8xH100-80GB", Q15))
    assert "between nodes (assumed" in collectives(two_nodes).note
    assert f"at {comm.NETWORK_GBS * comm.RING_EFFICIENCY:.0f} GB/s" in collectives(two_nodes).note


def test_a_cluster_spec_states_the_network_between_nodes():
    # 25 GB/s per GPU was assumed for every cluster: H100 clusters often have 400 Gb/s (50 GB/s) per GPU
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.cluster import parse_cluster_spec

    spec = {"nodes": [{"count": 2, "gpus": 8, "gpu": "H100-80GB", "network_gbps": 400}]}
    cluster = parse_cluster_spec(spec, load_gpu_catalogue())
    link = comm.ring_link(cluster, 16, 25.0)
    assert link.gbs == pytest.approx(50 * comm.RING_EFFICIENCY) and "50 GB/s per GPU between nodes (the cluster spec's)" in link.how
    assumed = comm.ring_link(parse_cluster_spec("2x8xH100-80GB", load_gpu_catalogue()), 16, 25.0)
    assert assumed.gbs == pytest.approx(comm.NETWORK_GBS * comm.RING_EFFICIENCY) and "network_gbps" in assumed.how


def test_on_pcie_the_advisor_offers_a_larger_micro_batch_as_faster():
    mp = plan(EIGHT, "8xL40S-48GB", Q15)
    advice = advise(mp.values, mp.models, mp.cluster)
    assert advice.fits_now
    larger = [a for a in advice.alternatives if int(a.changes.get(f"{A}.ppo_micro_batch_size_per_gpu", 1)) > 1]
    assert larger and all(a.fits and a.step_seconds < step_time(mp).seconds for a in larger)
    on_nvlink = plan(EIGHT, "8xH100-80GB", Q15)  # where the collectives hide, micro-batches gain no link time:
    bigger = step_time(plan([*EIGHT, f"{A}.ppo_micro_batch_size_per_gpu=4"], "8xH100-80GB", Q15))
    assert collectives(bigger).seconds == 0 == collectives(step_time(on_nvlink)).seconds
    # only the cost of each micro-batch: 32 samples a GPU in micro-batches of 1 (32) or of 4 (8)
    fewer = 32 - 8
    assert step_time(on_nvlink).seconds - bigger.seconds == pytest.approx(fewer * CALIBRATION.micro_batch_s, rel=1e-6)
    offered = advise(on_nvlink.values, on_nvlink.models, on_nvlink.cluster).alternatives
    assert not [a for a in offered if f"{A}.ppo_micro_batch_size_per_gpu" in a.changes and len(a.changes) == 1]


def test_rollout_tp_adds_two_all_reduces_per_layer_to_each_decode_step():
    # 28 layers x 2 all-reduces of 256 sequences x 1,536 hidden in bf16 over TP 2: latency + 2 x 1/2 of 786 KB
    link = comm.Link(gbs=20.0, how="PCIe")
    one = comm.ALLREDUCE_LATENCY_S + 2 * 1 / 2 * (2 * 256 * 1536) / 20e9
    assert comm.tp_decode_seconds(28, 256, 1536, 2, link) == pytest.approx(2 * 28 * one)
    assert comm.tp_decode_seconds(28, 256, 1536, 1, link) == 0

    def decode(gpus, tp):
        st = step_time(plan([*EIGHT, f"actor_rollout_ref.rollout.tensor_model_parallel_size={tp}"], gpus, Q15))
        return next(t for t in st.phases[0].terms if t.label == "decode").note

    assert "all-reduces" not in decode("8xL40S-48GB", 1)
    assert "TP 2 all-reduces over PCIe" in decode("8xL40S-48GB", 2)
    assert "TP 2 all-reduces over NVLink x18" in decode("8xH100-80GB", 2)


def test_the_counts_and_rates_the_collectives_are_timed_with():
    from tests.helpers.memory_values import full
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.cluster import parse_cluster_spec
    from wizard.core.memory.batching import logprob_micro_batches

    # a Ulysses group of 2 shares its samples: 64 x 4 over 4 groups = 64 micro-batches of 1, not 32
    values = full({"data.train_batch_size": 64, "actor_rollout_ref.rollout.n": 4, "trainer.n_gpus_per_node": 8,
                   "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": 1, f"{A}.ppo_mini_batch_size": 16,
                   "critic.ppo_mini_batch_size": 16})
    assert logprob_micro_batches(values, 8, 1024) == 32
    assert logprob_micro_batches({**values, f"{A}.ulysses_sequence_parallel_size": 2}, 8, 1024) == 64
    # NVLink 5 (B200) runs 50 GB/s a link and direction, NVLink 4 (H100) 25: 18 links, 80 % of it
    catalogue = load_gpu_catalogue()
    assert comm.ring_link(parse_cluster_spec("8xB200-180GB", catalogue), 8, 25).gbs == pytest.approx(18 * 50 * 0.8)
    assert comm.ring_link(parse_cluster_spec("8xH100-80GB", catalogue), 8, 25).gbs == pytest.approx(18 * 25 * 0.8)
    # FSDP1's SHARD_GRAD_OP under no_sync frees nothing in the backward: one gather of the params per step
    assert comm.update_bytes(P, P, 8, 8, 4, True, 4, 1, gather_once=True) == pytest.approx(4 * (2 * P + 4 * P) * 7 / 8)


def test_the_weight_sync_gathers_the_fp32_shards_and_epochs_repeat_the_update():
    st = step_time(plan(EIGHT, "8xL40S-48GB", Q15))
    sync = collectives(st, "update_weights")
    assert sync.label == "FSDP gathers the weights to send" and f"{4 * P * 7 / 8 / 1e9:,.1f} GB per GPU" in sync.note
    twice = step_time(plan([*EIGHT, f"{A}.ppo_epochs=2"], "8xL40S-48GB", Q15))
    update = {p.name: p.seconds for p in st.phases}["update_actor"]
    assert {p.name: p.seconds for p in twice.phases}["update_actor"] == pytest.approx(2 * update, rel=0.01)


def test_over_two_nodes_fsdp_within_each_node_is_offered_and_faster():
    # FSDP over 16 GPUs gathers the params across the network every micro-batch; HSDP (fsdp_size = a node's 8)
    # gathers them over NVLink and all-reduces only its shard of the gradients between the 2 groups
    from wizard.core.check.verdict import check_overrides
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.adapters.files.resources import load_moves, load_schema
    from wizard.core.hardware.cluster import parse_cluster_spec
    from tests.core.test_advice import ONE_GPU

    two = [*EIGHT, "trainer.nnodes=2"]
    across = step_time(plan(two, "2x8xH100-80GB", Q15))
    hsdp = step_time(plan([*two, "actor_rollout_ref.actor.fsdp_config.fsdp_size=8"], "2x8xH100-80GB", Q15))
    assert "between nodes (assumed" in collectives(across).note
    note = collectives(hsdp).note
    assert "over NVLink x18 at 360 GB/s + " in note and "all-reduced between the 2 FSDP groups" in note
    assert hsdp.seconds < across.seconds
    mp = plan(two, "2x8xH100-80GB", Q15)
    best = advise(mp.values, mp.models, mp.cluster).best
    assert best.fits and best.changes.get("actor_rollout_ref.actor.fsdp_config.fsdp_size") == 8

    def errors(overrides):  # what verl 0.9.1 and the wizard's rules refuse: HSDP brings nothing new
        result = check_overrides(load_schema(), [*ONE_GPU, *two, *overrides], moves=load_moves(), models=mp.models,
                                 cluster=parse_cluster_spec("2x8xH100-80GB", load_gpu_catalogue()), advise=False)
        return {f.rule for f in result.findings if f.severity.value == "error"}

    assert errors(best.overrides) <= errors([])


def test_an_offloaded_actor_brings_its_params_from_the_host_for_the_weight_sync():
    def sync(*extra):
        st = step_time(plan(["data.train_batch_size=16", *extra], "1xH100-80GB", Q15))
        return {t.label: t for p in st.phases if p.name == "update_weights" for t in p.terms}

    AFC = f"{A}.fsdp_config"
    assert "params from the host" not in sync(f"{A}.strategy=fsdp2")
    # FSDP2 moves each fp32 shard to the GPU as it sends it; FSDP1 loads the whole model and offloads it after
    fsdp2 = sync(f"{A}.strategy=fsdp2", f"{AFC}.param_offload=True")["params from the host"]
    assert f"{4 * P / 1e9:.1f} GB at 25 GB/s" in fsdp2.note
    fsdp1 = sync(f"{A}.strategy=fsdp", f"{AFC}.param_offload=True")["params from the host"]
    assert "in and out" in fsdp1.note and fsdp1.seconds == pytest.approx(2 * fsdp2.seconds)


def test_four_gpus_on_each_of_two_nodes_ring_over_the_network_not_one_node_s_nvlink():
    """trainer.n_gpus_per_node=4 on a 2 x 8 cluster: verl places 4 ranks on each node, so an FSDP ring of 8 crosses
    the network (it was timed over the first node's NVLink, as if the 8 ranks shared it)."""
    split = step_time(plan([*EIGHT, "trainer.n_gpus_per_node=4", "trainer.nnodes=2"], "2x8xH100-80GB", Q15))
    note = collectives(split).note
    assert "between nodes (assumed" in note and f"at {comm.NETWORK_GBS * comm.RING_EFFICIENCY:.0f} GB/s" in note
    one_node = step_time(plan(EIGHT, "8xH100-80GB", Q15))
    assert "between nodes" not in collectives(one_node).note
