"""Placement: the pools verl 0.9.1 builds from a config, replicas over the topology, and which moves a config can say."""

import pytest

from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.check.verdict import check_overrides
from wizard.core.hardware.cluster import GPU, Cluster, GpuLink, LinkKind, ClusterNode, parse_cluster_spec
from wizard.core.findings import Severity
from wizard.core.placement.models import GpuRef
from wizard.core.placement.pools import plan_placement
from wizard.core.placement.moves import check_move, check_pool_shape

R, RM = "actor_rollout_ref.rollout", "reward.reward_model"
GRPO = {"trainer.n_gpus_per_node": 8, "trainer.nnodes": 1, "algorithm.adv_estimator": "grpo",
        "actor_rollout_ref.actor.use_kl_loss": True, f"{R}.tensor_model_parallel_size": 2}


def spec(text):
    return parse_cluster_spec(text, load_gpu_catalogue())


def test_default_pool_holds_actor_rollout_and_fused_ref_with_consecutive_tp_groups():
    p = plan_placement(GRPO, spec("8xH100-80GB"))
    (pool,) = p.pools
    assert pool.name == "global_pool" and pool.roles == ["actor", "rollout", "ref"] and len(pool.gpus) == 8
    reps = p.replicas_of("rollout")
    assert [[g.index for g in r.gpus] for r in reps] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert p.issues == []  # all-to-all NVLink
    assert p.roles_on(GpuRef(node="node0", index=3)) == ["actor", "rollout", "ref"]


def test_critic_joins_global_pool_and_lora_drops_the_separate_ref():
    p = plan_placement({**GRPO, "algorithm.adv_estimator": "gae", "actor_rollout_ref.actor.use_kl_loss": False})
    assert p.pools[0].roles == ["actor", "rollout", "critic"]
    p = plan_placement({**GRPO, "actor_rollout_ref.model.lora_rank": 16})
    assert p.pools[0].roles == ["actor", "rollout"]  # ref = actor without its adapter


def test_tp_group_across_nodes_is_a_warning():
    p = plan_placement({**GRPO, "trainer.nnodes": 2, f"{R}.tensor_model_parallel_size": 16}, spec("2x8xH100-80GB"))
    (rep,) = p.replicas_of("rollout")
    assert {g.node for g in rep.gpus} == {"node0", "node1"} and rep.worst_link == "network"
    (issue,) = p.issues
    assert issue.rule == "placement.tp_link" and issue.severity is Severity.WARNING
    assert "across nodes" in issue.message and "TP group of 16" in issue.message
    # the advisor raises TP for memory (a 7B on two 24 GB GPUs): the fix does not tell the user to undo that
    assert "where the model needs this TP for memory, keep it" in issue.fix


def test_pcie_only_nodes_and_nvlink_nodes():
    p = plan_placement(GRPO, spec("8xL40S-48GB"))  # no NVLink: the spec lays PCIe links
    assert {r.worst_link for r in p.replicas} == {"PCIe"}
    assert "over PCIe" in p.issues[0].message and "4 rollout replica(s)" in p.issues[0].message
    assert plan_placement({**GRPO, f"{R}.tensor_model_parallel_size": 1}, spec("8xL40S-48GB")).issues == []


def numa_node():
    """Two NVLink pairs on different NUMA nodes, joined through the CPUs (SYS) - as nvidia-smi topo -m shows."""
    gpus = [GPU(index=i, name="A100", memory_total_bytes=80 * 2**30, numa_node=0 if i < 2 else 1) for i in range(4)]
    links = [GpuLink(a=0, b=1, kind=LinkKind.NV, nvlinks=12), GpuLink(a=2, b=3, kind=LinkKind.NV, nvlinks=12)]
    links += [GpuLink(a=a, b=b, kind=LinkKind.SYS) for a in (0, 1) for b in (2, 3)]
    return Cluster(source="nvml", nodes=[ClusterNode(name="host", gpu_count=4, gpus=gpus, links=links)])


def test_cross_numa_tp_group_is_a_warning_and_nvlink_pairs_are_not():
    four = {**GRPO, "trainer.n_gpus_per_node": 4}
    assert plan_placement(four, numa_node()).issues == []  # TP 2 on the NVLink pairs
    p = plan_placement({**four, f"{R}.tensor_model_parallel_size": 4}, numa_node())
    assert p.replicas[0].worst_link == "SYS" and "across NUMA nodes" in p.issues[0].message


def test_reward_pool_and_groups_that_cannot_be_formed():
    values = {**GRPO, f"{RM}.enable": True, f"{RM}.enable_resource_pool": True, f"{RM}.n_gpus_per_node": 4,
              f"{RM}.nnodes": 1, f"{RM}.rollout.tensor_model_parallel_size": 2}
    p = plan_placement({**values, "trainer.n_gpus_per_node": 4}, spec("8xH100-80GB"))
    assert [(x.name, x.roles, len(x.gpus)) for x in p.pools] == [("global_pool", ["actor", "rollout", "ref"], 4),
                                                                   ("reward_pool", ["reward"], 4)]
    assert [g.index for g in p.pools[1].gpus] == [4, 5, 6, 7] and len(p.replicas_of("reward")) == 2
    too_big = plan_placement({**values, f"{RM}.rollout.tensor_model_parallel_size": 8})
    assert too_big.issues[0].rule == "placement.reward_groups" and "Not enough GPUs" in too_big.issues[0].message
    uneven = plan_placement({**values, f"{RM}.rollout.tensor_model_parallel_size": 3})
    assert "does not split" in uneven.issues[0].message
    assert uneven.issues[0].fix_overrides == [f"{RM}.rollout.tensor_model_parallel_size=2"]


def test_colocated_reward_model_shares_global_pool():
    p = plan_placement({**GRPO, f"{RM}.enable": True})
    assert p.pools[0].roles[-1] == "reward" and len(p.pools) == 1


def test_teacher_pool_must_equal_what_the_teachers_need():
    teachers = {"math": {"num_replicas": 2, "inference": {"tensor_model_parallel_size": 2}}}
    ok = {**GRPO, "distillation.enabled": True, "distillation.n_gpus_per_node": 4, "distillation.nnodes": 1,
          "distillation.teacher_models": teachers}
    assert plan_placement(ok).issues == []
    bad = plan_placement({**ok, "distillation.n_gpus_per_node": 8})
    assert bad.issues[0].rule == "placement.teacher_groups" and "need 4" in bad.issues[0].message


def test_standalone_rollout_pools_in_separate_async():
    values = {**GRPO, "trainer.v1.trainer_mode": "separate_async", "actor_rollout_ref.hybrid_engine": False,
              f"{R}.nnodes": 1, f"{R}.n_gpus_per_node": 4}
    p = plan_placement(values, spec("2x8xH100-80GB"))
    assert p.pools[0].roles == ["actor", "ref"]  # no rollout on the training GPUs
    standalone = [x for x in p.pools if x.name.startswith("rollout_pool_")]
    assert len(standalone) == 2 and all(x.size == 2 for x in standalone)
    assert p.gpus_needed == 12


def test_too_few_gpus_leaves_pool_gpus_missing():
    p = plan_placement({**GRPO, "trainer.nnodes": 2}, spec("8xH100-80GB"))
    assert p.pools[0].missing == 8 and len(p.pools[0].gpus) == 8


@pytest.mark.parametrize("role,pool,ok", [
    ("reward", "reward_pool", True), ("rollout", "rollout_pool", True), ("teacher", "teacher_pool", True),
    ("critic", "reward_pool", False), ("ref", "rollout_pool", False), ("actor", "reward_pool", False),
    ("teacher", "global_pool", False), ("reward", "global_pool", True),
])
def test_which_moves_a_config_can_express(role, pool, ok):
    values = {**GRPO, f"{RM}.enable": True}
    verdict = check_move(values, role, pool, per_node=4, nnodes=1)
    assert verdict.expressible is ok, verdict.reason
    if not ok:
        assert verdict.reason and verdict.overrides == []


def test_move_overrides_compose_in_real_verl_keys():
    verdict = check_move({**GRPO, f"{RM}.enable": True}, "rollout", "rollout_pool", per_node=8, nnodes=1)
    assert "trainer.v1.trainer_mode=separate_async" in verdict.overrides
    result = check_overrides(load_schema(), [*verdict.overrides, f"{R}.name=vllm"], moves=load_moves())
    assert not [f for f in result.findings if f.rule.startswith("compose")], result.findings
    reason = check_move(GRPO, "critic", "reward_pool").reason
    assert "PPOTrainer subclass" in reason
    assert "reward.reward_model.enable=True" in check_move(GRPO, "reward", "reward_pool").reason


def test_pool_shape_is_the_same_count_on_every_node():
    assert check_pool_shape([4, 4, 0]).expressible
    shape = check_pool_shape([3, 5])
    assert not shape.expressible and "3, 5" in shape.reason


def test_first_fit_puts_each_bundle_of_a_pool_on_its_own_node_and_each_pool_starts_over():
    # nodes of 4, 8, 2 and 8 GPUs: the 3 bundles of 4 go on n0, n1 and n3 (one per node, as Ray places verl's
    # [4] * 3 placement groups; n2 is too small, never taken); the 3 reward bundles of 2 start again from the first
    # node, one per node: the rest of n1, n2, the rest of n3
    values = {**GRPO, "trainer.n_gpus_per_node": 4, "trainer.nnodes": 3, f"{R}.tensor_model_parallel_size": 1,
              "reward.reward_model.enable": True, "reward.reward_model.enable_resource_pool": True,
              "reward.reward_model.n_gpus_per_node": 2, "reward.reward_model.nnodes": 3}
    nodes = [ClusterNode(name=f"n{i}", gpu_count=k, gpus=[GPU(index=j, name="GPU") for j in range(k)])
             for i, k in enumerate([4, 8, 2, 8])]
    p = plan_placement(values, Cluster(source="spec", nodes=nodes))
    glob, reward = p.pools[0], next(x for x in p.pools if "reward" in x.roles)
    assert [str(g) for g in glob.gpus] == ["n0:0", "n0:1", "n0:2", "n0:3", "n1:0", "n1:1", "n1:2", "n1:3",
                                           "n3:0", "n3:1", "n3:2", "n3:3"]
    assert [str(g) for g in reward.gpus] == ["n1:4", "n1:5", "n2:0", "n2:1", "n3:4", "n3:5"]
    assert glob.missing == reward.missing == 0


def test_four_gpus_on_each_of_two_nodes_are_node0_0_3_and_node1_0_3():
    # trainer.n_gpus_per_node=4 trainer.nnodes=2 on 2 x 8 GPUs: verl's pool is [4, 4], one placement group per node;
    # it used to be laid as node0:0-7 (both bundles on the first node with room)
    p = plan_placement({**GRPO, "trainer.n_gpus_per_node": 4, "trainer.nnodes": 2}, spec("2x8xH100-80GB"))
    (pool,) = p.pools
    assert [str(g) for g in pool.gpus] == ["node0:0", "node0:1", "node0:2", "node0:3",
                                           "node1:0", "node1:1", "node1:2", "node1:3"]
    assert pool.missing == 0
    # TP 2 replicas: consecutive ranks, each inside one node
    assert [[str(g) for g in r.gpus] for r in p.replicas_of("rollout")] == [
        ["node0:0", "node0:1"], ["node0:2", "node0:3"], ["node1:0", "node1:1"], ["node1:2", "node1:3"]]
    assert p.issues == []


def test_more_bundles_than_nodes_share_a_node_rather_than_go_missing():
    # [4] * 2 on one 8-GPU node: Ray can pack both placement groups there, and verl only counts GPUs
    p = plan_placement({**GRPO, "trainer.n_gpus_per_node": 4, "trainer.nnodes": 2}, spec("8xH100-80GB"))
    assert [str(g) for g in p.pools[0].gpus] == [f"node0:{i}" for i in range(8)] and p.pools[0].missing == 0
    # [4] * 3 on 2 x 8: one on each node, the third where there is room left (node0)
    p = plan_placement({**GRPO, "trainer.n_gpus_per_node": 4, "trainer.nnodes": 3}, spec("2x8xH100-80GB"))
    assert [str(g) for g in p.pools[0].gpus] == (["node0:0", "node0:1", "node0:2", "node0:3"]
                                                 + ["node1:0", "node1:1", "node1:2", "node1:3"]
                                                 + ["node0:4", "node0:5", "node0:6", "node0:7"])
    # [8] * 3 on 2 x 8: the third bundle finds no room
    p = plan_placement({**GRPO, "trainer.n_gpus_per_node": 8, "trainer.nnodes": 3}, spec("2x8xH100-80GB"))
    assert len(p.pools[0].gpus) == 16 and p.pools[0].missing == 8


def test_pool_cluster_is_the_pool_s_gpus_node_by_node_so_rings_over_two_nodes_go_over_the_network():
    from wizard.core.placement import pool_cluster
    from wizard.core.steptime import comm

    cluster = spec("2x8xH100-80GB")
    p = plan_placement({**GRPO, "trainer.n_gpus_per_node": 4, "trainer.nnodes": 2}, cluster)
    seen = pool_cluster(cluster, p.pool("global_pool"))
    assert [(n.name, n.gpu_count, [g.index for g in n.gpus]) for n in seen.nodes] == [
        ("node0", 4, [0, 1, 2, 3]), ("node1", 4, [0, 1, 2, 3])]
    assert all(x.a in range(4) and x.b in range(4) for n in seen.nodes for x in n.links)
    # the step time's ring over the 8 FSDP shards: the whole cluster's first node has 8 GPUs (NVLink only);
    # the pool's has 4, so the ring crosses nodes and the network bounds it
    whole, pooled = comm.ring_link(cluster, 8, 50.0), comm.ring_link(seen, 8, 50.0)
    assert "between nodes" not in whole.how
    assert "between nodes" in pooled.how and pooled.gbs < whole.gbs
    assert comm.ring_link(seen, 2, 50.0).gbs == comm.ring_link(cluster, 2, 50.0).gbs  # a TP pair stays in a node
    assert pool_cluster(None, p.pools[0]) is None and pool_cluster(cluster, None) is cluster


def test_a_kept_placement_is_given_again_only_while_every_key_it_read_is_the_same():
    cluster = spec("2x8xH100-80GB")
    first = plan_placement(GRPO, cluster)
    # a key the placement never reads: the same answer
    assert plan_placement({**GRPO, "actor_rollout_ref.actor.optim.lr": 3e-6}, cluster) is first
    # a key it reads, changed or newly set: a new answer
    wider = plan_placement({**GRPO, f"{R}.tensor_model_parallel_size": 4}, cluster)
    assert [len(r.gpus) for r in wider.replicas_of("rollout")] == [4, 4]
    two = plan_placement({**GRPO, "trainer.nnodes": 2}, cluster)
    assert len(two.pools[0].gpus) == 16
    assert plan_placement(GRPO, spec("2x8xH100-80GB")) is not first  # another cluster object
