"""The Plan: the one description of a training setup that the GUI and the CLI edit.

Every modelled field maps to exactly one verl key (declared next to the field with
``verl(...)``). ``None`` means "not set: verl's default applies". Everything else a
launch script sets is kept verbatim, in order, in ``passthrough``, so importing a
real verl script and writing it back loses nothing.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

SCHEMA_VERSION = 1


def verl(key: str, doc: str = "") -> Any:
    """A field that mirrors the verl key ``key``; ``doc`` explains it in plain words."""
    return Field(default=None, description=doc, json_schema_extra={"verl": key})


class Section(BaseModel):
    model_config = ConfigDict(validate_assignment=True, extra="forbid")


Files = str | list[str]
# A float key that keeps an int as an int (1 stays 1, as on verl's command line).
Number = int | float


class Algorithm(Section):
    adv_estimator: str | None = verl("algorithm.adv_estimator", "How advantages are computed (gae needs a critic)")
    norm_adv_by_std_in_grpo: bool | None = verl("algorithm.norm_adv_by_std_in_grpo")
    gamma: Number | None = verl("algorithm.gamma")
    lam: Number | None = verl("algorithm.lam")
    use_kl_in_reward: bool | None = verl("algorithm.use_kl_in_reward", "Subtract a KL penalty from the reward")
    kl_penalty: str | None = verl("algorithm.kl_penalty")
    kl_ctrl_type: str | None = verl("algorithm.kl_ctrl.type")
    kl_coef: Number | None = verl("algorithm.kl_ctrl.kl_coef")
    use_kl_loss: bool | None = verl("actor_rollout_ref.actor.use_kl_loss", "Add a KL term to the actor loss")
    kl_loss_coef: Number | None = verl("actor_rollout_ref.actor.kl_loss_coef")
    kl_loss_type: str | None = verl("actor_rollout_ref.actor.kl_loss_type")
    entropy_coeff: Number | None = verl("actor_rollout_ref.actor.entropy_coeff")
    loss_agg_mode: str | None = verl("actor_rollout_ref.actor.loss_agg_mode")
    loss_mode: str | None = verl("actor_rollout_ref.actor.policy_loss.loss_mode")
    clip_ratio: Number | None = verl("actor_rollout_ref.actor.clip_ratio")
    clip_ratio_low: Number | None = verl("actor_rollout_ref.actor.clip_ratio_low")
    clip_ratio_high: Number | None = verl("actor_rollout_ref.actor.clip_ratio_high")
    ppo_epochs: int | None = verl("actor_rollout_ref.actor.ppo_epochs")


class Models(Section):
    actor_path: str | None = verl("actor_rollout_ref.model.path", "Policy model: a local folder or a hub id")
    trust_remote_code: bool | None = verl("actor_rollout_ref.model.trust_remote_code")
    use_remove_padding: bool | None = verl("actor_rollout_ref.model.use_remove_padding")
    enable_gradient_checkpointing: bool | None = verl("actor_rollout_ref.model.enable_gradient_checkpointing")
    lora_rank: int | None = verl("actor_rollout_ref.model.lora_rank")
    lora_alpha: int | None = verl("actor_rollout_ref.model.lora_alpha")
    critic_enable: bool | None = verl("critic.enable", "Force the critic on or off (default: on for gae)")
    critic_path: str | None = verl("critic.model.path", "Critic model: a local folder or a hub id")
    reward_model_enable: bool | None = verl("reward.reward_model.enable")
    reward_model_path: str | None = verl("reward.reward_model.model_path")


class Data(Section):
    train_files: Files | None = verl("data.train_files", "Training parquet/json/jsonl file(s)")
    val_files: Files | None = verl("data.val_files", "Validation file(s); verl always loads them")
    train_batch_size: int | None = verl("data.train_batch_size", "Prompts per training step")
    max_prompt_length: int | None = verl("data.max_prompt_length")
    max_response_length: int | None = verl("data.max_response_length")
    filter_overlong_prompts: bool | None = verl("data.filter_overlong_prompts")
    prompt_key: str | None = verl("data.prompt_key")
    shuffle: bool | None = verl("data.shuffle")


class Hardware(Section):
    nnodes: int | None = verl("trainer.nnodes")
    n_gpus_per_node: int | None = verl("trainer.n_gpus_per_node")
    ray_num_cpus: int | None = verl("ray_kwargs.ray_init.num_cpus", "Logical CPUs Ray may schedule")
    gpu: str | None = Field(default=None, description="GPU model the plan is for, e.g. H100-80GB (not a verl key)")


class Rollout(Section):
    name: str | None = verl("actor_rollout_ref.rollout.name", "Inference engine: vllm, sglang or trtllm")
    n: int | None = verl("actor_rollout_ref.rollout.n", "Responses sampled per prompt")
    tensor_model_parallel_size: int | None = verl("actor_rollout_ref.rollout.tensor_model_parallel_size")
    gpu_memory_utilization: Number | None = verl("actor_rollout_ref.rollout.gpu_memory_utilization")
    temperature: Number | None = verl("actor_rollout_ref.rollout.temperature")
    top_p: Number | None = verl("actor_rollout_ref.rollout.top_p")
    max_num_batched_tokens: int | None = verl("actor_rollout_ref.rollout.max_num_batched_tokens")
    max_num_seqs: int | None = verl("actor_rollout_ref.rollout.max_num_seqs")
    enforce_eager: bool | None = verl("actor_rollout_ref.rollout.enforce_eager")
    free_cache_engine: bool | None = verl("actor_rollout_ref.rollout.free_cache_engine")
    log_prob_micro_batch_size_per_gpu: int | None = verl(
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
    )


class Training(Section):
    actor_lr: Number | None = verl("actor_rollout_ref.actor.optim.lr")
    ppo_mini_batch_size: int | None = verl("actor_rollout_ref.actor.ppo_mini_batch_size", "Prompts per update")
    ppo_micro_batch_size_per_gpu: int | None = verl("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu")
    use_dynamic_bsz: bool | None = verl("actor_rollout_ref.actor.use_dynamic_bsz")
    ppo_max_token_len_per_gpu: int | None = verl("actor_rollout_ref.actor.ppo_max_token_len_per_gpu")
    actor_strategy: str | None = verl("actor_rollout_ref.actor.strategy")
    ref_log_prob_micro_batch_size_per_gpu: int | None = verl("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu")
    critic_lr: Number | None = verl("critic.optim.lr")
    critic_ppo_mini_batch_size: int | None = verl("critic.ppo_mini_batch_size")
    critic_ppo_micro_batch_size_per_gpu: int | None = verl("critic.ppo_micro_batch_size_per_gpu")


class PlacementSettings(Section):
    """Where roles run. verl 0.9.1 colocates actor, rollout, reference and critic on one
    global pool; a reward model may get its own pool."""

    actor_param_offload: bool | None = verl("actor_rollout_ref.actor.fsdp_config.param_offload")
    actor_optimizer_offload: bool | None = verl("actor_rollout_ref.actor.fsdp_config.optimizer_offload")
    ref_param_offload: bool | None = verl("actor_rollout_ref.ref.fsdp_config.param_offload")
    critic_param_offload: bool | None = verl("critic.fsdp.param_offload")
    critic_optimizer_offload: bool | None = verl("critic.fsdp.optimizer_offload")
    reward_pool: bool | None = verl("reward.reward_model.enable_resource_pool")
    reward_pool_gpus_per_node: int | None = verl("reward.reward_model.n_gpus_per_node")
    reward_pool_nnodes: int | None = verl("reward.reward_model.nnodes")


class Reward(Section):
    manager: str | None = verl("reward.reward_manager.name", "naive, dapo, gdpo, rate_limited or remote")
    custom_function_path: str | None = verl("reward.custom_reward_function.path")
    custom_function_name: str | None = verl("reward.custom_reward_function.name")


class Trainer(Section):
    project_name: str | None = verl("trainer.project_name")
    experiment_name: str | None = verl("trainer.experiment_name")
    logger: list[str] | None = verl("trainer.logger", "console, file, wandb, tensorboard, ...")
    total_epochs: int | None = verl("trainer.total_epochs")
    total_training_steps: int | None = verl("trainer.total_training_steps")
    save_freq: int | None = verl("trainer.save_freq")
    test_freq: int | None = verl("trainer.test_freq")
    val_before_train: bool | None = verl("trainer.val_before_train")
    resume_mode: str | None = verl("trainer.resume_mode")
    default_local_dir: str | None = verl("trainer.default_local_dir")
    critic_warmup: int | None = verl("trainer.critic_warmup")
    trainer_mode: str | None = verl("trainer.v1.trainer_mode")


class Dataflow(Section):
    """Editor state of the dataflow graph. The graph itself is derived from the verl keys
    (adv_estimator, critic, KL placement, reward); only what the keys cannot hold is kept."""

    positions: dict[str, tuple[float, float]] = Field(default_factory=dict)


class Plan(BaseModel):
    model_config = ConfigDict(validate_assignment=True, extra="forbid")

    schema_version: Literal[1] = SCHEMA_VERSION
    verl_version: str = "0.9.1"
    name: str = ""
    description: str = ""
    config_name: str = Field(default="ppo_trainer", description="--config-name of the launch")
    config_path: str | None = Field(default=None, description="--config-path, when the script used its own")
    script_env: list[str] = Field(
        default_factory=list,
        description="Environment variables the launch script reads (e.g. HOME); kept as $NAME when written",
    )
    script_runtime: list[str] = Field(
        default_factory=list,
        description="Values the launch script computes when it runs ($(date +%Y%m%d), $RANDOM); run.sh computes them "
        "again (only the harmless ones: wizard.core.plan.emit.RUNTIME_OK)",
    )
    algorithm: Algorithm = Field(default_factory=Algorithm)
    models: Models = Field(default_factory=Models)
    data: Data = Field(default_factory=Data)
    hardware: Hardware = Field(default_factory=Hardware)
    rollout: Rollout = Field(default_factory=Rollout)
    training: Training = Field(default_factory=Training)
    placement: PlacementSettings = Field(default_factory=PlacementSettings)
    reward: Reward = Field(default_factory=Reward)
    trainer: Trainer = Field(default_factory=Trainer)
    dataflow: Dataflow = Field(default_factory=Dataflow)
    passthrough: list[str] = Field(default_factory=list, description="verl overrides the plan does not model")


SECTIONS = ("algorithm", "models", "data", "hardware", "rollout", "training", "placement", "reward", "trainer")


@lru_cache(maxsize=1)
def field_map() -> dict[str, tuple[str, str]]:
    """verl key -> (section, field) for every modelled field, in emit order."""
    out: dict[str, tuple[str, str]] = {}
    for section in SECTIONS:
        model = Plan.model_fields[section].annotation
        for name, info in model.model_fields.items():
            extra = info.json_schema_extra or {}
            if isinstance(extra, dict) and "verl" in extra:
                key = extra["verl"]
                assert key not in out, f"{key} is modelled twice"
                out[key] = (section, name)
    return out


def get_field(plan: Plan, key: str):
    section, name = field_map()[key]
    return getattr(getattr(plan, section), name)


def migrate(doc: dict) -> dict:
    """Bring a saved plan document up to SCHEMA_VERSION (one step per version)."""
    version = doc.get("schema_version", 1)
    if not isinstance(version, int) or version > SCHEMA_VERSION:
        raise ValueError(f"plan schema_version {version!r} is newer than this verl-wizard understands")
    return doc


def load_plan(doc: dict) -> Plan:
    """A saved plan; a secret in its passthrough (a file written before secrets were hidden, or by hand) is
    replaced by its environment reference as it is read (see wizard.core.secrets)."""
    from wizard.core.secrets import hide_secrets

    plan = Plan.model_validate(migrate(dict(doc)))
    if plan.passthrough:
        plan.passthrough = hide_secrets(plan.passthrough)[0]
    return plan
