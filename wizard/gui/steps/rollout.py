"""The Rollout & training step: the generation engine and the actor, critic and trainer settings."""

from __future__ import annotations

from wizard.gui.document import PlanDocument
from wizard.gui.steps import texts
from wizard.gui.steps._form import FormPage


class RolloutPage(FormPage):
    step, title, subtitle = texts("rollout")
    groups = [
        ("Rollout engine", [
            ("rollout.name", "Engine", ("vllm", "sglang", "trtllm")),
            ("rollout.tensor_model_parallel_size", "Tensor parallel size"),
            ("rollout.gpu_memory_utilization", "GPU memory share"),
            ("rollout.max_num_batched_tokens", "Max batched tokens"),
            ("rollout.max_num_seqs", "Max concurrent sequences"),
            ("rollout.temperature", "Temperature"),
            ("rollout.top_p", "Top-p"),
            ("rollout.enforce_eager", "No CUDA graphs (eager)"),
            ("rollout.free_cache_engine", "Free the KV cache while training"),
            ("rollout.log_prob_micro_batch_size_per_gpu", "Log-prob micro batch per GPU"),
        ]),
        ("Actor update", [
            ("training.actor_lr", "Learning rate"),
            ("training.ppo_mini_batch_size", "Mini batch (prompts per update)"),
            ("training.ppo_micro_batch_size_per_gpu", "Micro batch per GPU"),
            ("training.use_dynamic_bsz", "Dynamic batch (token budget)"),
            ("training.ppo_max_token_len_per_gpu", "Token budget per GPU"),
            ("training.ref_log_prob_micro_batch_size_per_gpu", "Reference log-prob micro batch per GPU"),
            ("training.actor_strategy", "Training backend", ("fsdp", "fsdp2", "megatron")),
            ("placement.actor_param_offload", "Offload weights to CPU between phases"),
            ("placement.actor_optimizer_offload", "Offload optimizer to CPU between phases"),
            # what Make it fit's "FSDP2 with the CPU offload policy" sets: a key the Plan keeps in its passthrough
            ("actor_rollout_ref.actor.fsdp_config.offload_policy", "FSDP2 offload policy (all on the CPU)"),
        ]),
        ("Critic update (GAE)", [
            ("training.critic_lr", "Critic learning rate"),
            ("training.critic_ppo_mini_batch_size", "Critic mini batch"),
            ("training.critic_ppo_micro_batch_size_per_gpu", "Critic micro batch per GPU"),
            ("trainer.critic_warmup", "Critic warm-up steps"),
        ]),
        ("Trainer", [
            ("trainer.total_epochs", "Epochs"),
            ("trainer.total_training_steps", "Steps (overrides epochs)"),
            ("trainer.logger", "Loggers (comma separated)"),
            ("trainer.project_name", "Project"),
            ("trainer.experiment_name", "Experiment"),
            ("trainer.save_freq", "Save every N steps"),
            ("trainer.test_freq", "Validate every N steps"),
            ("trainer.val_before_train", "Validate before training"),
            ("trainer.resume_mode", "Resume", ("auto", "disable", "resume_path")),
            ("trainer.default_local_dir", "Checkpoint folder"),
        ]),
    ]

    def __init__(self, doc: PlanDocument) -> None:
        super().__init__(doc)
        self.finish()
