"""The rules that mirror verl's config classes, trainer and worker checks (resources/verl-checks/mapping.yaml): each
fires on the mistake, at the stage verl fails, with verl's own words and the numbers, and stays silent otherwise.
verl's messages are quoted from verl 0.9.1's source (file:line in each rule's docstring)."""

import pytest

from tests.core.test_rules import GOOD
from wizard.core.findings import Severity, Stage

A, R, REF = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref"
SEPARATE = ["trainer.v1.trainer_mode=separate_async", f"{R}.nnodes=1", f"{R}.checkpoint_engine.backend=nccl",
            "data.train_batch_size=32", f"{A}.ppo_mini_batch_size=8", "trainer.v1.separate_async.parameter_sync_step=4"]
DISTILL = ["distillation.enabled=true", "distillation.nnodes=1", "distillation.n_gpus_per_node=2",
           "distillation.teacher_models.teacher_model.model_path=Qwen/Qwen2.5-0.5B",
           "distillation.teacher_models.teacher_model.inference.tensor_model_parallel_size=1"]
RM = ["reward.reward_model.enable=true", "reward.reward_model.rollout.name=vllm", "reward.reward_model.model_path=x/y",
      "reward.reward_model.rollout.tensor_model_parallel_size=1"]


def errors(result):
    return [f for f in result.findings if f.severity is Severity.ERROR]


def only(result, rule):
    found = [f for f in errors(result) if f.rule == rule]
    assert len(found) == 1, [(f.rule, f.message) for f in errors(result)]
    return found[0]


@pytest.mark.parametrize("extra", [[], SEPARATE, DISTILL, RM, SEPARATE + RM + ["reward.reward_model.enable_resource_pool=true",
                                                                                "reward.reward_model.nnodes=1"]])
def test_valid_modes_have_no_errors(check, extra):
    assert errors(check(GOOD + extra)) == []


# --- fields: +key under a section verl builds into a class ---------------------------------------------------
def test_an_added_key_the_actor_class_lacks_fails_in_the_preflight_with_a_did_you_mean(check):
    f = only(check(GOOD + [f"+{A}.ppo_epoch=2"]), "fields.unknown")
    assert f.stage is Stage.PREFLIGHT and "did you mean actor_rollout_ref.actor.ppo_epochs" in f.message
    assert "FSDPActorConfig.__init__() got an unexpected keyword argument 'ppo_epoch'" in f.message
    assert f.fix_overrides == [f"~{A}.ppo_epoch", f"{A}.ppo_epochs=2"]


def test_an_added_key_under_the_rollout_fails_at_startup_and_under_a_plain_section_not_at_all(check):
    f = only(check(GOOD + [f"++{R}.gpu_mem=0.5"]), "fields.unknown")
    assert f.stage is Stage.STARTUP and "RolloutConfig" in f.message
    assert "fields.unknown" not in {x.rule for x in check(GOOD + ["+algorithm.foo=1", "+data.extra=1"]).findings}


def test_added_keys_that_are_fields_or_dict_contents_are_fine(check):
    ok = [f"+{A}.profiler.tool_config.torch.profile_token_start=5", f"+{R}.disaggregation.mooncake_protocol=tcp",
          "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"]
    assert "fields.unknown" not in {f.rule for f in check(GOOD + ok).findings}


def test_an_added_key_under_the_reference_policy_counts_only_when_there_is_one(check):
    assert "fields.unknown" not in {f.rule for f in check(GOOD + [f"+{REF}.bar=1"]).findings}
    f = only(check(GOOD + [f"+{REF}.bar=1", f"{A}.use_kl_loss=true", f"{REF}.log_prob_micro_batch_size_per_gpu=8"]),
             "fields.unknown")
    assert f.stage is Stage.STARTUP


def test_a_required_field_left_missing_fails_where_its_class_is_built(check):
    f = only(check(GOOD + [f"{A}.optim.lr='???'"]), "fields.missing")
    assert f.stage is Stage.PREFLIGHT and "Missing mandatory value: actor_rollout_ref.actor.optim.lr" in f.message


# --- engine and optimizer classes ------------------------------------------------------------------------------
def test_fsdp_engine_strategy(check):
    f = only(check(GOOD + [f"{A}.fsdp_config.strategy=fdsp"]), "engine.config")
    assert f.stage is Stage.PREFLIGHT and "strategy fdsp not supported" in f.message
    assert f.fix_overrides == [f"{A}.fsdp_config.strategy=fsdp"]


def test_the_reference_engine_is_built_at_startup(check):
    r = check(GOOD + [f"{REF}.fsdp_config.strategy=bar", f"{A}.use_kl_loss=true", f"{REF}.log_prob_micro_batch_size_per_gpu=8"])
    assert only(r, "engine.config").stage is Stage.STARTUP


def test_scheduler_and_megatron_dtypes(check):
    assert "AssertionError()" in only(check(GOOD + [f"{A}.optim.lr_scheduler_type=linear"]), "engine.config").message
    r = check(GOOD + ["model_engine=megatron", f"{A}.optim.main_grads_dtype=fp16"])
    assert "`main_grads_dtype` must be one of" in only(r, "engine.config").message
    r = check(GOOD + ["model_engine=megatron", f"{A}.megatron.dynamic_context_parallel=true"])
    assert "max_seqlen_per_dp_cp_rank must be a positive integer" in only(r, "engine.config").message


def test_ulysses_needs_padding_removal_in_the_preflight_or_at_engine_start(check):
    r = check(GOOD + [f"{A}.ulysses_sequence_parallel_size=2", "actor_rollout_ref.model.use_remove_padding=false"])
    assert only(r, "engine.sp_remove_padding").stage is Stage.PREFLIGHT
    r = check(GOOD + [f"{A}.fsdp_config.ulysses_sequence_parallel_size=2", "actor_rollout_ref.model.use_remove_padding=false"])
    assert only(r, "engine.sp_remove_padding").stage is Stage.STARTUP


def test_router_replay_r2_against_bypass_mode(check):
    r = check(GOOD + ["model_engine=megatron", f"{A}.megatron.router_replay.mode=R2",
                      "algorithm.rollout_correction.bypass_mode=true"])
    assert "R2 records routes" in only(r, "engine.router_replay").message


def test_an_unknown_training_engine_dies_when_workers_start(check):
    f = only(check(GOOD + [f"{A}.strategy=foo"]), "engine.backend")
    assert f.stage is Stage.STARTUP and "Unknown backend: foo" in f.message


GAE = ["algorithm.adv_estimator=gae", "critic.model.path=Qwen/Qwen2.5-0.5B-Instruct", "critic.ppo_micro_batch_size_per_gpu=4"]


def test_a_megatron_critic_in_a_config_composed_for_fsdp_passes_the_preflight_and_dies_when_workers_start(check):
    """FSDPCriticConfig copies critic.strategy into its FSDPEngineConfig unchecked (workers/config/critic.py:219),
    then the critic's TrainingWorker builds the Megatron engine from it (engine_workers.py:138), whose first line
    reads use_mbridge (megatron/transformer_impl.py:191). Unlike the actor's case, nothing fails in the pre-flight."""
    r = check(GOOD + GAE + ["critic.strategy=megatron"])
    f = only(r, "engine.critic_megatron_without_engine")
    assert f.stage is Stage.STARTUP and not r.ok
    assert "'FSDPEngineConfig' object has no attribute 'use_mbridge'" in f.message
    assert "model_engine=megatron" in f.fix and "ppo_megatron_trainer" in f.fix
    assert [x for x in errors(r) if x.stage is Stage.PREFLIGHT] == []  # verl's validate_config passes it
    assert f.fix_overrides == ["critic.strategy=fsdp"]  # the actor's FSDP
    assert errors(check(GOOD + GAE + ["critic.strategy=megatron", *f.fix_overrides])) == []
    fsdp2 = only(check(GOOD + GAE + ["critic.strategy=megatron", f"{A}.strategy=fsdp2"]),
                 "engine.critic_megatron_without_engine")
    assert fsdp2.fix_overrides == ["critic.strategy=fsdp2"]


def test_a_megatron_critic_is_fine_with_the_megatron_engine_and_unread_without_a_critic(check):
    assert "engine.critic_megatron_without_engine" not in {
        f.rule for f in check(GOOD + GAE + ["model_engine=megatron"]).findings}
    assert "engine.critic_megatron_without_engine" not in {
        f.rule for f in check(GOOD + ["critic.strategy=megatron"]).findings}  # GRPO trains no critic


# --- profiler classes: built with the actor even when nothing is profiled --------------------------------------
@pytest.mark.parametrize("override,said", [
    (f"{A}.profiler.tool_config.torch_memory.stack_depth=0", "stack_depth must be positive, got 0"),
    (f"{A}.profiler.tool_config.torch.contents=[gpu]", "Profiler contents only supports"),
    (f"{A}.profiler.tool_config.npu.level=level9", "Profiler level only supports level0, 1, 2, and level_none"),
    (f"{A}.profiler.tool_config.precision_debugger.strict=1", "strict must be bool"),
    (f"{A}.profiler.ranks=3", "Profiler ranks must be of type list"),
    (f"{A}.profiler.tool_config.torch.schedule.wait=-1", "wait must be >= 0, got -1"),
    ("global_profiler.global_tool_config.torch_memory.stack_depth=0", "stack_depth must be positive, got 0"),
])
def test_profiler_settings_fail_the_preflight(check, override, said):
    found = [f for f in errors(check(GOOD + [override])) if f.rule == "profiler.config"]
    # the actor's, in the preflight (the rollout's profiler interpolates it, and fails again at startup)
    assert found and found[0].stage is Stage.PREFLIGHT and said in found[0].message
    assert found[0].keys[0].startswith(("actor_rollout_ref.actor.", "actor_rollout_ref.ref."))


def test_an_empty_profiling_window(check):
    r = check(GOOD + [f"+{A}.profiler.tool_config.torch.profile_token_start=5", f"+{A}.profiler.tool_config.torch.profile_token_end=5"])
    assert "profile_token_end must be > profile_token_start, got start=5, stop=5" in only(r, "profiler.config").message


# --- rollout classes (actor, reward model, teacher) --------------------------------------------------------------
def test_expert_parallel_must_be_tp_times_dp(check):
    f = only(check(GOOD + [f"{R}.expert_parallel_size=2"]), "rollout.config")
    assert "expert_parallel_size=2 but tensor_model_parallel_size x data_parallel_size = 1 x 1 = 1" in f.message
    assert f.fix_overrides == [f"{R}.expert_parallel_size=1"]


@pytest.mark.parametrize("extra,said", [
    ([f"{R}.disaggregation.transfer_backend=tcp"], "disaggregation.transfer_backend='tcp' not in"),
    ([f"{R}.disaggregation.prefill_replicas=0"], "disaggregation requires >=1 prefill and >=1 decode replica"),
    ([f"{R}.disaggregation.bootstrap_port=70000"], "bootstrap_port out of range: 70000"),
    ([f"{R}.name=trtllm"], "rollout.disaggregation.enabled=True requires rollout.name in ('sglang', 'vllm')"),
])
def test_disaggregation(check, extra, said):
    assert said in only(check(GOOD + [f"{R}.disaggregation.enabled=true"] + extra), "rollout.config").message


def test_trace_sampling_and_reward_model_rollout_mode(check):
    assert "must be a non-negative integer" in only(check(GOOD + [f"{R}.trace.max_samples_per_step_per_worker=-1"]),
                                                     "rollout.config").message
    f = only(check(GOOD + RM + ["+reward.reward_model.rollout.mode=sync"]), "rollout.mode")
    assert f.keys == ["reward.reward_model.rollout.mode"] and f.stage is Stage.STARTUP


# --- the V1 trainer ----------------------------------------------------------------------------------------------
def test_separate_async_batch_identity(check):
    f = only(check(GOOD + SEPARATE + ["trainer.v1.separate_async.parameter_sync_step=2"]), "trainer.separate_async")
    assert "2 x 8 = 16" in f.message and "data.train_batch_size=32" in f.message
    assert f.fix_overrides == ["data.train_batch_size=16"]


@pytest.mark.parametrize("extra,said", [
    ([f"{R}.nnodes=0"], "nnodes must be > 0 in separate async training"),
    ([f"{R}.checkpoint_engine.backend=naive"], "please use nccl/nixl/mooncake"),
    (RM, "Colocate reward model"),
])
def test_separate_async_needs_its_own_rollout_pool(check, extra, said):
    assert said in only(check(GOOD + SEPARATE + extra), "trainer.separate_async").message


def test_hybrid_switch(check):
    f = only(check(GOOD + SEPARATE + ["trainer.v1.separate_async.hybrid_rollout.switch_threshold_ratio=1.5"]),
             "trainer.hybrid_switch")
    assert "switch_threshold_ratio must be in (0, 1], got 1.5" in f.message
    r = check(GOOD + SEPARATE + ["trainer.v1.separate_async.hybrid_rollout.enable_switch=true", f"{R}.disaggregation.enabled=true"])
    assert "does not support rollout disaggregation" in only(r, "trainer.hybrid_switch").message
    assert "trainer.hybrid_switch" not in {f.rule for f in check(GOOD + ["trainer.v1.separate_async.hybrid_rollout.switch_cost_window_size=0"]).findings}


@pytest.mark.parametrize("extra,said", [
    (["trainer.v1.sampler.max_off_policy_threshold=0"], "Invalid max off policy threshold: 0"),
    (["trainer.v1.sampler.max_off_policy_strategy=keep"], "Invalid max off policy strategy: keep"),
    (["algorithm.filter_groups.enable=true", "algorithm.filter_groups.metric=null"], "metric must be set"),
    (["algorithm.filter_groups.enable=true", "algorithm.filter_groups.max_inflight_gen_batches=0"],
     "max_inflight_gen_batches must be a positive integer"),
    (["algorithm.filter_groups.enable=true"] + RM, "requires the reward metric at sampling time"),
])
def test_replay_buffer(check, extra, said):
    f = only(check(GOOD + extra), "trainer.replay_buffer")
    assert f.stage is Stage.STARTUP and said in f.message


def test_async_modes_do_not_check_inflight_batches(check):
    r = check(GOOD + SEPARATE + ["algorithm.filter_groups.enable=true", "algorithm.filter_groups.max_inflight_gen_batches=0"])
    assert "trainer.replay_buffer" not in {f.rule for f in r.findings}


def test_adaptive_kl_needs_a_horizon_and_pools_need_gpus(check):
    r = check(GOOD + ["algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive", "algorithm.kl_ctrl.horizon=0",
                      f"{REF}.log_prob_micro_batch_size_per_gpu=8"])
    assert "horizon must be larger than 0. Got 0" in only(r, "trainer.kl_horizon").message
    r = check(GOOD + ["reward.reward_model.enable_resource_pool=true", "reward.reward_model.nnodes=0"])
    assert "config.reward.reward_model.nnodes must be greater than 0" in only(r, "trainer.pools").message


def test_class_names_resume_path_and_nsys(check):
    assert "Expected fully qualified class name" in only(check(GOOD + ["trainer.checkpoint_callback_class=Cb"]),
                                                          "trainer.callback_class").message
    f = only(check(GOOD + ["trainer.resume_mode=resume_path", "trainer.resume_from_path=ckpt/step5"]), "trainer.setup")
    assert "resume ckpt must specify the global_steps" in f.message
    r = check(GOOD + ["global_profiler.steps=[1]", "global_profiler.tool=nsys",
                      "global_profiler.global_tool_config.nsys.worker_nsight_options=null"])
    assert "worker_nsight_options must be set" in only(r, "trainer.setup").message


def test_the_legacy_trainer_is_not_held_to_v1_checks(check):
    r = check(GOOD + ["trainer.use_v1=false", "trainer.v1.sampler.max_off_policy_strategy=keep"])
    assert "trainer.replay_buffer" not in {f.rule for f in r.findings}


# --- workers ------------------------------------------------------------------------------------------------------
def test_log_prob_pass_must_batch_as_the_actor_does(check):
    f = only(check(GOOD + [f"{R}.log_prob_use_dynamic_bsz=true"]), "batch.worker_dynamic")
    assert f.stage is Stage.STARTUP and f.fix_overrides == [f"{R}.log_prob_use_dynamic_bsz=false"]
    found = [f for f in errors(check(GOOD + [f"{A}.use_dynamic_bsz=true", f"{A}.ppo_max_token_len_per_gpu=null"]))
             if f.rule == "batch.worker_dynamic"]  # the rollout's log-prob length follows the actor's: both null
    assert {f.keys[0] for f in found} == {f"{A}.ppo_max_token_len_per_gpu", f"{R}.log_prob_max_token_len_per_gpu"}


def test_reference_micro_batch_when_only_the_actor_is_dynamic(check):
    r = check(GOOD + [f"{A}.use_kl_loss=true", f"{A}.use_dynamic_bsz=true", f"{REF}.log_prob_use_dynamic_bsz=false"])
    f = only(r, "batch.ref_micro")
    assert f.stage is Stage.STARTUP and "[actor] Please set at least one of" in f.message


def test_checkpoint_engine_and_agent_loop_names(check):
    f = only(check(GOOD + [f"{R}.checkpoint_engine.backend=ncc"]), "names.checkpoint_engine")
    assert f.stage is Stage.STARTUP and f.fix_overrides == [f"{R}.checkpoint_engine.backend=nccl"]
    f = only(check(GOOD + [f"{R}.agent.default_agent_loop=tool"]), "names.agent_loop")
    assert f.stage is Stage.RUNTIME


def test_target_modules_must_be_strings(check):
    f = only(check(GOOD + ["actor_rollout_ref.model.target_modules=[q_proj,1]"]), "models.target_modules")
    assert f.stage is Stage.STARTUP and "All elements in target_modules list must be strings, but found int" in f.message


def test_rollout_servers(check):
    f = only(check(GOOD + [f"{R}.prometheus.enable=true"]), "rollout.servers")
    assert "Metrics monitoring requires disable_log_stats=False" in f.message
    f = only(check(GOOD + [f"{R}.quantization=int3"]), "rollout.servers")
    assert "Currently only support ['fp8', 'torchao', 'ascend'] quantization, got: int3" in f.message
    f = only(check(GOOD + [f"{R}.checkpoint_engine.backend=delta_sharded", f"{R}.data_parallel_size=2",
                           "trainer.n_gpus_per_node=2", "data.train_batch_size=16"]), "rollout.servers")
    assert "delta_sharded with vLLM requires data_parallel_size=1" in f.message


def test_data_files_verl_cannot_read(check):
    f = only(check(GOOD + ["data.train_files=/d/train.csv"]), "data.file_format")
    assert "Unsupported file format: /d/train.csv" in f.message


# --- rewards and distillation ---------------------------------------------------------------------------------------
def test_reward_loading(check):
    f = only(check(GOOD + ["reward.reward_manager.source=importlib"]), "reward.loading")
    assert "Module path is required" in f.message
    f = only(check(GOOD + ["reward.custom_reward_function.path=/r.py", "reward.custom_reward_function.name=null"]),
             "reward.loading")
    assert "its name is null" in f.message


def test_dapo_overlong_buffer(check):
    base = GOOD + ["reward.reward_manager.name=dapo", "+reward.reward_kwargs.max_resp_len=512"]
    r = check(base + ["+reward.reward_kwargs.overlong_buffer_cfg={enable:true,len:1024,penalty_factor:1.0,log:false}"])
    assert "max_resp_len must be larger than overlong_buffer.len (512 < 1024)" in only(r, "reward.dapo_overlong").message
    r = check(base + ["+reward.reward_kwargs.overlong_buffer_cfg={enable:true,len:128,penalty_factor:1.0,log:false}"])
    assert "reward.dapo_overlong" not in {f.rule for f in r.findings}


def test_reward_model_replicas(check):
    r = check(GOOD + RM + ["reward.reward_model.rollout.tensor_model_parallel_size=8"])
    assert "Not enough GPUs to run the reward model" in only(r, "placement.reward_groups").message


@pytest.mark.parametrize("extra,said", [
    (["distillation.distillation_loss.loss_mode=k1"], "Directly backpropagating k1 loss is incorrect"),
    (["distillation.distillation_loss.loss_mode=kl2"], "Unsupported loss mode: kl2"),
    (["distillation.teacher_models.teacher_model.inference.tensor_model_parallel_size=3"],
     "Single teacher's per_replica_world_size (3) must divide the distillation resource pool size"),
    (["distillation.teacher_models.teacher_model.model_path=null"], "model_path must be specified"),
    (["distillation.teacher_models.teacher_model.inference.max_model_len=16"], "requires room for the student prompt"),
])
def test_distillation(check, extra, said):
    f = only(check(GOOD + DISTILL + extra), "distillation.config")
    assert f.stage is Stage.STARTUP and said in f.message


# --- beyond assertions: what verl accepts and then does differently ------------------------------------------------
def one_advice(result, rule):
    found = [f for f in result.findings if f.rule == rule]
    assert len(found) == 1, [(f.rule, f.message) for f in result.findings]
    return found[0]


def test_critic_batching_keys_do_not_reach_the_critic(check):
    f = one_advice(check(GOOD + ["algorithm.adv_estimator=gae", "critic.model.path=x/y", "critic.ppo_micro_batch_size_per_gpu=2",
                                 "critic.ppo_max_token_len_per_gpu=8192"]), "advice.critic_batching")
    assert "critic.ppo_max_token_len_per_gpu=8192" in f.message and "32768 tokens per GPU" in f.message
    assert f.stage is Stage.ADVICE and f.severity is Severity.WARNING
    forward = one_advice(check(GOOD + ["algorithm.adv_estimator=gae", "critic.model.path=x/y",
                                       "critic.ppo_micro_batch_size_per_gpu=2", "critic.forward_max_token_len_per_gpu=9000"]),
                         "advice.critic_batching")
    assert "critic.forward_max_token_len_per_gpu=9000" in forward.message
    assert "+critic.fsdp.use_dynamic_bsz=false +critic.fsdp.micro_batch_size_per_gpu=N" in forward.fix


def test_kl_settings_whose_switch_is_off(check):
    f = one_advice(check(GOOD + ["algorithm.kl_ctrl.kl_coef=0.01"]), "advice.kl_unused")
    assert "algorithm.kl_ctrl.kl_coef=0.01 has no effect: algorithm.use_kl_in_reward is off" in f.message


def test_runs_that_train_nothing_or_never_the_actor(check):
    assert "runs no training step" in one_advice(check(GOOD + ["trainer.total_epochs=0"]), "advice.no_training").message
    f = one_advice(check(GOOD + ["trainer.total_training_steps=5", "trainer.critic_warmup=10"]), "advice.critic_warmup")
    assert "the actor is updated only from step 10 on, so it is never trained" in f.message


def test_lr_warmup_longer_than_the_run(check):
    f = one_advice(check(GOOD + ["trainer.total_training_steps=20", f"{A}.optim.lr_warmup_steps=50"]), "advice.lr_warmup")
    assert "50 but the run has 20 optimizer steps" in f.message and "40%" in f.message


def test_settings_verl_overrides(check):
    r = check(GOOD + [f"{A}.use_dynamic_bsz=true"])
    assert "is not used: with actor_rollout_ref.actor.use_dynamic_bsz=true" in one_advice(r, "advice.overridden").message
    r = check(GOOD + ["algorithm.filter_groups.enable=true", "data.gen_batch_size=32"])
    assert "data.gen_batch_size=32 is overridden to 1" in one_advice(r, "advice.overridden").message


def test_prompts_cut_by_a_shorter_rollout_prompt_length(check):
    f = one_advice(check(GOOD + [f"{R}.prompt_length=256", "data.max_prompt_length=512"]), "advice.prompt_truncated")
    assert "prompts of 257-512 tokens" in f.message


def test_gae_with_the_critic_switched_off(check):
    f = only(check(GOOD + ["algorithm.adv_estimator=gae", "critic.enable=false"]), "algorithm.gae_without_critic")
    assert f.stage is Stage.RUNTIME
