"""The wizard's verdict equals real verl 0.9.1's, on every preset and on generated variants.

verl runs in a subprocess (wizard/adapters/verl_env/verl_preflight.py): Hydra composition,
validate_config with need_reference_policy/need_critic (what main_ppo runs before
Ray), and what the TaskRunner and workers run at startup before loading a model.
"""

import random

import pytest

from tests.helpers.verl_verdict import wizard_stage
from wizard.usecases.plans import preset_plan
from wizard.adapters.files.resources import preset_names
from wizard.adapters.verl_env.verl_preflight import run_preflight
from wizard.core.plan.emit import emit_overrides
from wizard.core.findings import Severity

MUTATIONS = [
    "data.train_batch_size=257", "data.train_batch_size=7", "data.train_batch_size=abc", "data.train_batch_size='64'",
    "actor_rollout_ref.rollout.n=3", "actor_rollout_ref.rollout.n=1", "trainer.n_gpus_per_node=3",
    "trainer.n_gpus_per_node=6", "trainer.nnodes=3", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=null",
    "actor_rollout_ref.actor.ppo_micro_batch_size=8", "actor_rollout_ref.actor.ppo_mini_batch_size=100000",
    "actor_rollout_ref.actor.use_dynamic_bsz=true", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=null",
    "actor_rollout_ref.rollout.log_prob_micro_batch_size=4", "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=null",
    "actor_rollout_ref.actor.use_kl_loss=false", "actor_rollout_ref.actor.use_kl_loss=true", "algorithm.use_kl_in_reward=true",
    "actor_rollout_ref.actor.loss_agg_mode=token-avg", "actor_rollout_ref.rollout.temperature=0",
    "actor_rollout_ref.rollout.val_kwargs.do_sample=true", "actor_rollout_ref.rollout.mode=sync",
    "actor_rollout_ref.rollout.name='???'", "actor_rollout_ref.rollout.pipeline_model_parallel_size=2",
    "critic.enable=true", "critic.ppo_micro_batch_size_per_gpu=null", "critic.ppo_mini_batch_size=100000",
    "critic.use_dynamic_bsz=true", "trainer.logr=x", "critic.model.fsdp_config.param_offload=true",
    "+data.train_batch_size=8", "actor_rollout_ref.actor.optim.lr=abc", "actor_rollout_ref.actor.clip_ratio=high",
    "actor_rollout_ref.rollout.gpu_memory_utilization=lots", "algorithm.gamma=abc", "actor_rollout_ref.actor.ppo_epochs=1.5",
    "actor_rollout_ref.actor.use_kl_loss=maybe", "actor_rollout_ref.actor.strategy=megatron", "model_engine=megatron",
    "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=3", "data.train_batch_size=1",
    # config classes, the trainer's constructor and pools (verl_preflight_probe.startup)
    "+actor_rollout_ref.actor.ppo_epoch=2", "++actor_rollout_ref.rollout.foo=1",
    "actor_rollout_ref.actor.profiler.tool_config.torch_memory.stack_depth=0",
    "actor_rollout_ref.actor.fsdp_config.strategy=fdsp", "actor_rollout_ref.actor.optim.lr_scheduler_type=linear",
    "actor_rollout_ref.rollout.expert_parallel_size=2", "actor_rollout_ref.rollout.trace.max_samples_per_step_per_worker=-1",
    "trainer.v1.trainer_mode=separate_async", "trainer.v1.trainer_mode=syn", "trainer.v1.sampler.max_off_policy_strategy=keep",
    "reward.reward_manager.name=daapo", "reward.reward_model.enable_resource_pool=true", "distillation.enabled=true",
]


def _cases(tiny_model):
    cases = []
    rng = random.Random(20261202)
    for name in preset_names():
        base = emit_overrides(preset_plan(name)).overrides + [f"critic.model.path={tiny_model}"]
        cases.append((f"{name}", base))
        for m in MUTATIONS:
            cases.append((f"{name} + {m}", base + [m]))
        for i in range(12):
            picks = rng.sample(MUTATIONS, rng.randint(2, 3))
            cases.append((f"{name} + {' + '.join(picks)}", base + picks))
    return cases


@pytest.fixture(scope="module")
def verdicts(tiny_model, check):
    cases = _cases(tiny_model)
    results = run_preflight([{"id": cid, "overrides": ovs} for cid, ovs in cases])
    return [(cid, ovs, check(ovs), verl) for (cid, ovs), verl in zip(cases, results)]


def test_every_preset_passes_real_verl(verdicts):
    for cid, _, ours, verl in verdicts:
        if "+" not in cid:
            assert verl["ok"], (cid, verl)
            assert ours.ok, (cid, [f.message for f in ours.findings])


def test_wizard_and_verl_agree_on_every_variant(verdicts):
    disagreements = []
    for cid, _, ours, verl in verdicts:
        theirs = None if verl["ok"] else verl["stage"]
        mine = wizard_stage(ours.findings)
        if mine != theirs:
            disagreements.append(f"{cid}: wizard={mine} verl={theirs} ({verl.get('error_type')}: {verl.get('message')}) "
                                 f"wizard said: {[f.rule for f in ours.findings if f.severity is Severity.ERROR]}")
    print(f"\n{len(verdicts)} configs, {len(disagreements)} disagreements")
    assert not disagreements, "\n".join(disagreements)
    assert len(verdicts) > 150


def test_the_probe_runs_verls_checks_without_importing_the_users_code(tiny_model):
    """Names verl checks itself still fail; a class or file a config names is not imported by a check."""
    base = emit_overrides(preset_plan("grpo-1gpu-smoke")).overrides + [f"critic.model.path={tiny_model}"]
    cases = [
        {"id": "fqn", "overrides": base + ["trainer.checkpoint_callback_class=NoDots"]},
        {"id": "callback", "overrides": base + ["trainer.checkpoint_callback_class=not_installed.Callback"]},
        {"id": "sampler", "overrides": base + ["trainer.v1.sampler.custom_sampler.path=/nowhere/sampler.py",
                                               "trainer.v1.sampler.custom_sampler.name=Sampler"]},
        {"id": "reward", "overrides": base + ["reward.custom_reward_function.path=/nowhere/reward.py"]},
    ]
    results = {r["id"]: r for r in run_preflight(cases)}
    assert results["fqn"]["stage"] == "startup" and "Expected fully qualified class name" in results["fqn"]["message"]
    assert all(results[k]["ok"] for k in ("callback", "sampler", "reward")), results
