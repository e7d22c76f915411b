"""The edits the parity property draws: every config key an inventoried verl check reads, with values on both
sides of each condition (resources/verl-checks/mapping.yaml lists the keys; tests/core/test_verl_checks.py holds
this table to them).

An edit is a tuple of overrides applied together: most are one override; some set up a mode (separate_async,
distillation, a reward model, the Megatron engine) so that the keys only that mode reads are reached with the
rest of the config valid.
"""

from __future__ import annotations

A, R, REF = "actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.ref"
SA, HR, S, FG = "trainer.v1.separate_async", "trainer.v1.separate_async.hybrid_rollout", "trainer.v1.sampler", "algorithm.filter_groups"
PROF, D, T = f"{A}.profiler.tool_config", "distillation", "distillation.teacher_models.teacher_model"
SMALL = (1, 2, 3, 4, 6, 8, 16, 32, 64, 100, 128, 256, 512, 1024)

# Setups that make a mode's keys reachable with the rest valid.
SEPARATE_ASYNC = ("trainer.v1.trainer_mode=separate_async", f"{R}.nnodes=1", f"{R}.checkpoint_engine.backend=nccl",
                  "data.train_batch_size=64", f"{A}.ppo_mini_batch_size=16", f"{SA}.parameter_sync_step=4")
DISTILLATION = (f"{D}.enabled=true", f"{D}.nnodes=1", f"{D}.n_gpus_per_node=2", f"{T}.model_path=Qwen/Qwen2.5-0.5B",
                f"{T}.inference.tensor_model_parallel_size=1", f"{T}.inference.name=vllm")
REWARD_MODEL = ("reward.reward_model.enable=true", "reward.reward_model.rollout.name=vllm",
                "reward.reward_model.model_path=Qwen/Qwen2.5-0.5B", "reward.reward_model.rollout.tensor_model_parallel_size=1")
MEGATRON = ("model_engine=megatron",)
REF_ON = (f"{A}.use_kl_loss=true", f"{REF}.log_prob_micro_batch_size_per_gpu=8")


def one(key: str, *values) -> list[tuple[str, ...]]:
    return [(f"{key}={v}",) for v in values]


def within(setup: tuple[str, ...], key: str, *values) -> list[tuple[str, ...]]:
    return [setup + (f"{key}={v}",) for v in values]


BATCH = [
    *one("data.train_batch_size", *SMALL), *one(f"{A}.ppo_mini_batch_size", *SMALL), *one(f"{R}.n", 1, 2, 3, 4, 5, 8, 16),
    *one("trainer.n_gpus_per_node", 1, 2, 3, 4, 6, 8, 16), *one("trainer.nnodes", 1, 2, 3, 4),
    *one(f"{A}.ppo_micro_batch_size_per_gpu", "null", 1, 4, 16), *one(f"{A}.ppo_micro_batch_size", "null", 4, 16, 64),
    *one(f"{R}.log_prob_micro_batch_size_per_gpu", "null", 8), *one(f"{R}.log_prob_micro_batch_size", "null", 8),
    *one(f"{REF}.log_prob_micro_batch_size_per_gpu", "null", 8), *one(f"{REF}.log_prob_micro_batch_size", "null", 8),
    *one(f"{A}.use_dynamic_bsz", "true", "false"), *one(f"{A}.use_kl_loss", "true", "false"),
    *one("algorithm.use_kl_in_reward", "true", "false"), *one("critic.enable", "null", "true", "false"),
    *one("algorithm.adv_estimator", "gae", "grpo", "rloo", "reinforce_plus_plus", "grpoo"),
    *one("critic.ppo_micro_batch_size_per_gpu", "null", 4), *one("critic.ppo_micro_batch_size", "null", 8),
    *one("critic.ppo_mini_batch_size", *SMALL), *one(f"{A}.loss_agg_mode", "token-mean", "seq-mean-token-sum", "mean"),
    *one(f"{R}.temperature", 0, "0.0", "1.0"), *one(f"{R}.val_kwargs.do_sample", "true", "false"),
    *one(f"{A}.ulysses_sequence_parallel_size", 1, 2), *one("actor_rollout_ref.model.use_remove_padding", "true", "false"),
    *one(f"{R}.log_prob_use_dynamic_bsz", "true", "false"), *one(f"{A}.policy_loss.loss_mode", "vanilla", "gspo", "vanila"),
    REF_ON + (f"{A}.use_dynamic_bsz=true", f"{REF}.log_prob_use_dynamic_bsz=false"),
]
ROLLOUT = [
    *one(f"{R}.mode", "async", "sync"), *one(f"{R}.name", "vllm", "sglang", "trtllm", "'???'", "hf"),
    *one(f"{R}.pipeline_model_parallel_size", 1, 2), *one(f"{R}.expert_parallel_size", 1, 2),
    *one(f"{R}.data_parallel_size", 1, 2), *one(f"+{R}.moe_tensor_parallel_size", 1, 2),
    *one(f"{R}.tensor_model_parallel_size", 1, 2, 4), *one(f"{R}.trace.max_samples_per_step_per_worker", "null", -1, 5),
    *one(f"{R}.disaggregation.enabled", "true", "false"),
    *within((f"{R}.disaggregation.enabled=true",), f"{R}.disaggregation.transfer_backend", "nixl", "tcp"),
    *within((f"{R}.disaggregation.enabled=true",), f"{R}.disaggregation.prefill_replicas", 0, 1),
    *within((f"{R}.disaggregation.enabled=true",), f"{R}.disaggregation.bootstrap_port", "null", 70000, 8998),
    *within((f"{R}.disaggregation.enabled=true", f"{R}.disaggregation.transfer_backend=mooncake"),
            f"+{R}.disaggregation.mooncake_protocol", "tcp", "pigeon"),
    *one(f"{R}.checkpoint_engine.backend", "naive", "nccl", "ncc"), *one(f"{R}.agent.default_agent_loop", "tool_agent", "tool"),
    *one(f"{R}.disable_log_stats", "true", "false"), *one(f"{R}.prometheus.enable", "true", "false"),
    *one(f"{R}.quantization", "null", "fp8", "int3"),
    *one(f"{R}.log_prob_max_token_len_per_gpu", "null", 16384),
]
ENGINE = [
    *one(f"{A}.strategy", "fsdp", "fsdp2", "foo", "megatron", "'???'"), *one("critic.strategy", "fsdp2", "foo"),
    *one(f"{A}.fsdp_config.strategy", "fsdp2", "fsdp_turbo", "fdsp"), *one(f"{REF}.fsdp_config.strategy", "fsdp", "bar"),
    *one("critic.fsdp.strategy", "fsdp", "baz"), *one(f"{A}.optim.lr_scheduler_type", "constant", "cosine", "linear"),
    *one(f"{A}.optim.warmup_style", "null", "cosine", "linear"), *one("critic.optim.lr_scheduler_type", "cosine", "wsd"),
    *one(f"{A}.optim.lr", "'???'", "1e-6"), *one(f"{A}.fsdp_config.ulysses_sequence_parallel_size", 1, 2),
    *one("critic.fsdp.ulysses_sequence_parallel_size", 1, 2), *one("critic.model.use_remove_padding", "true", "false"),
    *one(f"{A}.ppo_max_token_len_per_gpu", "null", 8192),
    *within(MEGATRON, f"{A}.megatron.dtype", "bfloat16", "float32"),
    *within(MEGATRON, f"{A}.megatron.tensor_model_parallel_size", 1, 2, 3),
    *within(MEGATRON + (f"{A}.megatron.dynamic_context_parallel=true",), f"{A}.megatron.max_seqlen_per_dp_cp_rank", "null", 4096),
    *within(MEGATRON, f"{A}.megatron.router_replay.mode", "disabled", "R2", "R4"),
    *within(MEGATRON + (f"{A}.megatron.router_replay.mode=R2",), "algorithm.rollout_correction.bypass_mode", "true", "false"),
    *within(MEGATRON, f"{A}.optim.main_grads_dtype", "fp32", "fp16"), MEGATRON,
]
PROFILER = [
    *one(f"{PROF}.torch_memory.stack_depth", 0, 32), *one(f"{PROF}.torch_memory.trace_alloc_max_entries", 0, 1000),
    *one(f"{PROF}.torch_memory.memory_snapshot_num_steps", 0, 2), *one(f"{PROF}.torch.contents", "[cuda,memory]", "[gpu]"),
    *one(f"+{PROF}.torch.profile_token_end", "null", 0, 10), *one(f"+{PROF}.torch.profile_token_start", 5),
    *within((f"+{PROF}.torch.profile_token_start=5",), f"+{PROF}.torch.profile_token_end", 5, 6),
    *one(f"{PROF}.torch.schedule.wait", -1, 1), *one(f"{PROF}.npu.level", "level1", "level9"),
    *one(f"{PROF}.npu.contents", "[npu]", "[cuda]"), *one(f"{PROF}.npu.analysis", "true", "'yes'"),
    *one(f"{PROF}.precision_debugger.strict", "false", 1), *one(f"{A}.profiler.ranks", "[0,1]", 3),
    *one(f"{A}.profiler.finish_hook_cmd", "null", "'ls'", 5),
    *one(f"{R}.profiler.tool_config.torch.contents", "[memory]", "[bogus]"),
    *one("critic.profiler.tool_config.torch_memory.stack_depth", 0, 16),
    *within(REF_ON, f"{REF}.profiler.tool_config.torch_memory.stack_depth", 0, 16),
    *one("global_profiler.global_tool_config.torch_memory.stack_depth", 0, 8),
    *one("global_profiler.global_tool_config.precision_debugger.strict", "true", "'no'"),
    *within(("global_profiler.steps=[1]", "global_profiler.tool=nsys"),
            "global_profiler.global_tool_config.nsys.worker_nsight_options", "null"),
]
TRAINER = [
    *one("trainer.v1.trainer_mode", "sync", "colocate_async", "separate_async", "syn"), SEPARATE_ASYNC,
    *within(SEPARATE_ASYNC, f"{SA}.parameter_sync_step", 1, 2), *within(SEPARATE_ASYNC, f"{R}.nnodes", 0),
    *within(SEPARATE_ASYNC, f"{R}.n_gpus_per_node", 0), *within(SEPARATE_ASYNC, f"{R}.checkpoint_engine.backend", "naive"),
    *within(SEPARATE_ASYNC, f"{HR}.switch_threshold_ratio", 0, 1.0, 1.5),
    *within(SEPARATE_ASYNC, f"{HR}.switch_cost_window_size", 0, 3),
    *within(SEPARATE_ASYNC + (f"{R}.disaggregation.enabled=true",), f"{HR}.enable_switch", "true", "false"),
    *within(SEPARATE_ASYNC + (f"{HR}.enable_switch=true", f"{R}.disaggregation.enabled=true"),
            "actor_rollout_ref.hybrid_engine", "false", "true"),
    *within(SEPARATE_ASYNC, f"+{HR}.switch_every", 2), *within(SEPARATE_ASYNC + REWARD_MODEL, "reward.reward_model.enable_resource_pool", "true", "false"),
    *one(f"{S}.max_off_policy_threshold", "null", 0, 8, 1.5), *one(f"{S}.max_off_policy_strategy", "drop", "wait", "keep"),
    *one(f"{S}.sync_refill_failed_groups", "true", "false"), *one(f"{FG}.enable", "true", "false"),
    *within((f"{FG}.enable=true",), f"{FG}.metric", "null", "acc"),
    *within((f"{FG}.enable=true",), f"{FG}.max_inflight_gen_batches", 0, 2),
    *within((f"{FG}.enable=true",) + REWARD_MODEL, "reward.reward_model.enable_resource_pool", "true", "false"),
    *within(("algorithm.use_kl_in_reward=true", f"{REF}.log_prob_micro_batch_size_per_gpu=8"), "algorithm.kl_ctrl.type",
            "fixed", "adaptive", "pid"),
    *within(("algorithm.use_kl_in_reward=true", "algorithm.kl_ctrl.type=adaptive", f"{REF}.log_prob_micro_batch_size_per_gpu=8"),
            "algorithm.kl_ctrl.horizon", 0, 100),
    *one("reward.reward_model.enable_resource_pool", "true", "false"),
    *within(("reward.reward_model.enable_resource_pool=true",), "reward.reward_model.nnodes", 0, 1),
    *within(("reward.reward_model.enable_resource_pool=true", "reward.reward_model.nnodes=1"),
            "reward.reward_model.n_gpus_per_node", 0, 2),
    *one("trainer.checkpoint_callback_class", "null", "NoModule"), *one("trainer.resume_mode", "disable", "resume_path"),
    *within(("trainer.resume_mode=resume_path",), "trainer.resume_from_path", "null", "ckpt/global_step_5", "ckpt"),
    *one("trainer.logger", "[console]", "[console,wandbb]"), *one("data.train_files", "x.parquet", "x.csv"),
]
REWARD = [
    *one("reward.reward_manager.name", "naive", "dapo", "daapo"), *one("reward.reward_manager.source", "register", "importlib", "pip"),
    *one("reward.custom_reward_function.name", "compute_score", "null"), REWARD_MODEL,
    *within(REWARD_MODEL, "+reward.reward_model.rollout.mode", "async", "sync"),
    *within(REWARD_MODEL, "reward.reward_model.rollout.name", "vllm", "hf", "'???'"),
    *within(REWARD_MODEL, "reward.reward_model.rollout.tensor_model_parallel_size", 1, 64),
    *within(REWARD_MODEL, "reward.reward_model.rollout.skip_tokenizer_init", "false", "true"),
    *within(("reward.reward_manager.name=dapo", "+reward.reward_kwargs.max_resp_len=512"),
            "+reward.reward_kwargs.overlong_buffer_cfg", "{enable:true,len:128,penalty_factor:1.0,log:false}",
            "{enable:true,len:1024,penalty_factor:1.0,log:false}", "{enable:false,len:0,penalty_factor:1.0,log:false}"),
]
DISTILL = [
    DISTILLATION, *within(DISTILLATION, f"{D}.distillation_loss.loss_mode", "k3", "k1", "forward_kl_topk", "kl2"),
    *within(DISTILLATION, f"{D}.distillation_loss.policy_loss_mode", "vanilla", "gspo"),
    *within(DISTILLATION, f"{D}.distillation_loss.use_policy_gradient", "true", "false"),
    *within(DISTILLATION, f"{D}.n_gpus_per_node", 0, 3, 4), *within(DISTILLATION, f"{D}.nnodes", 0, 2),
    *within(DISTILLATION, f"{T}.model_path", "null"), *within(DISTILLATION, f"{T}.inference.tensor_model_parallel_size", 2, 3),
    *within(DISTILLATION, f"{T}.inference.max_model_len", "null", 16, 100000),
    *within(DISTILLATION + (f"{D}.distillation_loss.loss_mode=forward_kl_topk",), f"{D}.distillation_loss.topk", "null", 16),
    *within(DISTILLATION, f"{T}.inference.name", "vllm", "sglang", "trtllm"),
    *within(DISTILLATION, f"+{D}.teacher_models.teacher_model.foo", 1),
]
FIELDS = [
    *one(f"+{A}.ppo_epoch", 2), *one(f"++{A}.checkpoint.foo", 1), *one(f"++{R}.foo", 1), *one(f"+{R}.disaggregation.foo", 1),
    *one("+critic.baz", 1), *one("+algorithm.foo", 1), *one("+actor_rollout_ref.model.foo", 1),
    *one(f"+{R}.checkpoint_engine.foo", 1), *one("+skip.foo", 1), *within(REF_ON, f"+{REF}.bar", 1),
    *one("critic.model.target_modules", "all-linear", "[q_proj,1]", 5), *one("actor_rollout_ref.model.target_modules", "[q_proj,v_proj]", 7),
    *one("+actor_rollout_ref.model.override_config.attn_implementation", "sdpa"),
]
ODD = [("data.train_batch_size=abc",), ("trainer.logr=x",), ("critic.model.fsdp_config.param_offload=true",),
       ("+data.train_batch_size=8",), (f"{A}.ppo_epochs=1.5",), ("+ray_kwargs.ray_init.address=auto",)]



def compose_base(base: list[str], edits: list[tuple[str, ...]]) -> list[str]:
    """The preset's overrides and the edits; with the Megatron engine the preset's FSDP keys are dropped (they do
    not exist there, and Hydra would refuse them before any Megatron check is reached)."""
    overrides = [o for e in edits for o in e]
    if "model_engine=megatron" in overrides:
        base = [o for o in base if ".fsdp_config." not in o and not o.startswith("critic.fsdp.")]
    return base + overrides


EDITS: list[tuple[str, ...]] = BATCH + ROLLOUT + ENGINE + PROFILER + TRAINER + REWARD + DISTILL + FIELDS + ODD
# Read by inventoried checks but not varied, and why.
NOT_VARIED = {
    "actor_rollout_ref.model.lora_rank": "a LoRA rank with vLLM makes validate_config import vLLM, which the CPU test "
                                          "environment does not have: verl fails for any rank there",
}
