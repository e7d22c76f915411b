"""Rules for what verl 0.9.1's trainer and workers rely on but no config class checks (docs/verl-unchecked.md), each
held to a real verl 0.9.1 composition: verl's own Hydra tree and config classes, and the lines of verl's source the
rule quotes."""

import importlib.util
from pathlib import Path

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir

from tests.core.test_rules import GOOD

VERL = Path(importlib.util.find_spec("verl").origin).parent if importlib.util.find_spec("verl") else None


def verl_line(path: str, line: int) -> str:
    return (VERL / path).read_text().splitlines()[line - 1]


def composed(verl_config_dir, overrides):
    with initialize_config_dir(config_dir=verl_config_dir, version_base=None):
        return hydra_compose(config_name="ppo_trainer", overrides=overrides)


def rules(result, rule):
    return [f for f in result.findings if f.rule == rule]


# --- verl issue #7462: the critic's batching keys never reach its engine ---------------------------------------
CRITIC_KEYS = ["critic.ppo_micro_batch_size_per_gpu=2", "critic.use_dynamic_bsz=false",
               "critic.ppo_max_token_len_per_gpu=1000", "critic.forward_max_token_len_per_gpu=900",
               "critic.forward_micro_batch_size_per_gpu=3"]


def test_the_critic_engine_gets_none_of_the_critics_batching_keys(verl_config_dir, tiny_model, check):
    from verl.utils.config import omega_conf_to_dataclass

    critic = omega_conf_to_dataclass(composed(verl_config_dir, [f"critic.model.path={tiny_model}"] + CRITIC_KEYS).critic)
    engine = critic.engine  # what TrainingWorker reads (engine_workers.py:352-357, 406-411)
    assert (engine.use_dynamic_bsz, engine.micro_batch_size_per_gpu, engine.infer_micro_batch_size_per_gpu) == (
        True, None, None)
    # and the V1 trainer sets both budgets from ppo_infer_max_token_len_per_gpu (trainer_base.py:267-268)
    assert "= critic_cfg.ppo_infer_max_token_len_per_gpu" in verl_line("trainer/ppo/v1/trainer_base.py", 267)
    assert verl_line("trainer/ppo/v1/trainer_base.py", 268).strip() == (
        "critic_cfg.engine.max_token_len_per_gpu = critic_cfg.ppo_infer_max_token_len_per_gpu")
    # the engine section's own keys do reach it: the fix the rule offers
    fixed = omega_conf_to_dataclass(composed(verl_config_dir, [
        f"critic.model.path={tiny_model}", "critic.ppo_micro_batch_size_per_gpu=2", "+critic.fsdp.use_dynamic_bsz=false", "+critic.fsdp.micro_batch_size_per_gpu=5",
        "+critic.fsdp.infer_micro_batch_size_per_gpu=6"]).critic).engine
    assert (fixed.use_dynamic_bsz, fixed.micro_batch_size_per_gpu, fixed.infer_micro_batch_size_per_gpu) == (False, 5, 6)
    found = rules(check(GOOD + ["algorithm.adv_estimator=gae", f"critic.model.path={tiny_model}"] + CRITIC_KEYS),
                  "advice.critic_batching")
    assert len(found) == 1 and all(k.split("=")[0] in found[0].message for k in CRITIC_KEYS)


# --- sizes at the training step (wizard/core/check/rules/step_sizes.py) -----------------------------------------
def verl_padding(cfg, dp: int, critic: bool) -> int:
    """verl's own PPOTrainer._get_required_batch_multiple on the composed config (trainer_base.py:1589-1606)."""
    from types import SimpleNamespace

    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    return PPOTrainer._get_required_batch_multiple(SimpleNamespace(config=cfg, use_critic=critic, global_steps=1), dp)


def verl_micro_batches(size: int, micro: int, seq_len: int = 8):
    """verl's prepare_micro_batches (engine/utils.py:92-129) on one GPU's share of ``size`` sequences."""
    import torch
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine.utils import prepare_micro_batches

    ones = torch.ones(size, seq_len, dtype=torch.int64)
    td = TensorDict({"input_ids": ones, "attention_mask": ones}, batch_size=[size])
    tu.assign_non_tensor(td, use_dynamic_bsz=False, micro_batch_size_per_gpu=micro)
    return prepare_micro_batches(td)[0]


SPLIT = ["data.train_batch_size=16", "actor_rollout_ref.rollout.n=5", "trainer.n_gpus_per_node=8",
         "actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=4",
         "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=5"]


def test_a_micro_batch_that_does_not_divide_a_gpus_share_fails_in_verl_and_is_an_error_here(verl_config_dir, check):
    cfg = composed(verl_config_dir, GOOD + SPLIT)
    dp, n = 8, cfg.actor_rollout_ref.rollout.n
    seqs = cfg.data.train_batch_size * n
    multiple = verl_padding(cfg, dp, critic=False)
    share = -(-seqs // multiple) * multiple // dp  # each GPU's sequences for the old log-probs
    micro = cfg.actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu
    with pytest.raises(AssertionError, match="data size must be divisible by force_group_size"):
        verl_micro_batches(share, micro)
    (found,) = rules(check(GOOD + SPLIT), "batch.micro_split")
    assert found.keys[0] == "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
    assert f"divide the {share} sequences each GPU" in found.message and found.stage.value == "runtime"
    fixed = int(found.fix_overrides[0].split("=")[1])
    assert len(verl_micro_batches(share, fixed)) == share // fixed  # the size offered is one verl accepts
    with pytest.raises(AssertionError):  # a micro batch larger than the share fails too (8 % 16 != 0)
        verl_micro_batches(8, 16)
    # the update's micro batch divides ppo_mini_batch_size x n / DP = 5: no finding for it
    assert (8 * n // dp) % cfg.actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu == 0


def test_no_responses_per_prompt_passes_verls_checks_then_leaves_nothing_to_train_and_is_an_error_here(
        verl_config_dir, check):
    from wizard.adapters.verl_env.verl_preflight import run_preflight

    overrides = GOOD + ["actor_rollout_ref.rollout.n=0"]
    [verl] = run_preflight([{"id": "n0", "overrides": overrides}])
    assert verl["ok"], verl  # verl's pre-flight and config classes accept it
    # the agent loop starts range(n) requests per prompt (agent_loop_tq.py:123), and the step's batch multiple is
    # lcm(DP, ppo_mini_batch_size x n) = 0: balance_batch's len(batch) % 0 (padding_utils.py:165)
    assert verl_line("trainer/ppo/v1/agent_loop_tq.py", 123).strip() == "for i in range(n):"
    assert verl_padding(composed(verl_config_dir, overrides), 1, critic=False) == 0
    assert verl_line("trainer/ppo/padding_utils.py", 165).strip() == "remainder = len(batch) % batch_multiple"
    found = rules(check(overrides), "batch.no_responses")
    assert len(found) == 1 and found[0].severity.value == "error" and found[0].stage.value == "runtime"
    assert found[0].fix_overrides == ["actor_rollout_ref.rollout.n=5"]
    assert verl_padding(composed(verl_config_dir, GOOD + found[0].fix_overrides), 1, critic=False) > 0


def test_a_token_budget_below_one_sequence_fails_in_verl_and_is_named_here(verl_config_dir, check):
    import torch
    from tensordict import TensorDict
    from verl.utils.seqlen_balancing import rearrange_micro_batches

    overrides = GOOD + ["actor_rollout_ref.actor.use_dynamic_bsz=true", "actor_rollout_ref.actor.ppo_max_token_len_per_gpu=800"]
    cfg = composed(verl_config_dir, overrides)
    longest = cfg.actor_rollout_ref.rollout.prompt_length + cfg.actor_rollout_ref.rollout.response_length
    mask = torch.ones(2, longest, dtype=torch.int64)
    batch = TensorDict({"input_ids": mask, "attention_mask": mask}, batch_size=[2])
    with pytest.raises(AssertionError, match="max_token_len must be greater than the sequence length"):
        rearrange_micro_batches(batch, max_token_len=cfg.actor_rollout_ref.actor.ppo_max_token_len_per_gpu)
    found = {f.keys[0]: f for f in rules(check(overrides), "batch.token_budget")}
    # the old log-probs' budget follows the actor's (${oc.select:actor_rollout_ref.actor.ppo_max_token_len_per_gpu})
    assert set(found) == {"actor_rollout_ref.actor.ppo_max_token_len_per_gpu",
                          "actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu"}
    assert cfg.actor_rollout_ref.rollout.log_prob_max_token_len_per_gpu == 800
    assert rearrange_micro_batches(batch, max_token_len=longest)  # the budget the fix names is enough
    assert found["actor_rollout_ref.actor.ppo_max_token_len_per_gpu"].fix_overrides == [
        f"actor_rollout_ref.actor.ppo_max_token_len_per_gpu={longest}"]


@pytest.mark.parametrize("tbs, mini, pad", [(20, 8, 16), (16, 8, 0), (24, 16, 32)])
def test_the_padding_verl_adds_to_each_step_is_what_the_advice_says(verl_config_dir, check, tbs, mini, pad):
    overrides = GOOD + [f"data.train_batch_size={tbs}", f"actor_rollout_ref.actor.ppo_mini_batch_size={mini}"]
    cfg = composed(verl_config_dir, overrides)
    seqs = tbs * cfg.actor_rollout_ref.rollout.n
    multiple = verl_padding(cfg, dp=1, critic=False)
    assert -(-seqs // multiple) * multiple - seqs == pad
    found = rules(check(overrides), "batch.padded_step")
    assert [f"pads it with {pad} synthetic" in f.message for f in found] == ([True] if pad else [])


def test_checkpoint_contents_verl_does_not_know_are_ignored_and_named_here(check):
    from types import SimpleNamespace

    from verl.utils.checkpoint.checkpoint_manager import BaseCheckpointManager

    typo = SimpleNamespace(checkpoint_save_contents=["model", "hf_modle"])
    assert BaseCheckpointManager.should_save_hf_model.fget(typo) is False  # no HF model, no word about it
    found = rules(check(GOOD + ["actor_rollout_ref.actor.checkpoint.save_contents=[model,hf_modle]"]),
                  "checkpoint.contents")
    assert len(found) == 1 and "'hf_modle'" in found[0].message


def test_a_gen_batch_size_that_does_not_divide_the_batch_fails_in_verl_and_is_an_error_here(verl_config_dir, check):
    from types import SimpleNamespace

    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    overrides = GOOD + ["data.gen_batch_size=6"]
    cfg = composed(verl_config_dir, overrides)
    fake = SimpleNamespace(config=cfg, global_steps=1, _fetch_one_gen_batch=lambda: None)
    with pytest.raises(ValueError, match=r"num_prompts \(16\) must be a positive multiple of gen_batch_size \(6\)"):
        PPOTrainer._next_train_batch(fake)
    (found,) = rules(check(overrides), "batch.gen_batch")
    assert found.severity.value == "error" and "gen_batch_size=4" in found.fix
    assert rules(check(GOOD + ["data.gen_batch_size=8"]), "batch.gen_batch") == []


def test_a_parameter_sync_step_that_does_not_divide_the_batch_fails_in_verl_and_is_an_error_here(verl_config_dir, check):
    from types import SimpleNamespace

    from verl.trainer.ppo.v1.trainer_base import PPOTrainer

    overrides = GOOD + ["+trainer.v1.sync.parameter_sync_step=3"]
    cfg = composed(verl_config_dir, overrides)
    step = cfg.trainer.v1.get(cfg.trainer.v1.trainer_mode, {}).get("parameter_sync_step", 1)  # trainer_base.py:130
    assert "parameter_sync_step" in verl_line("trainer/ppo/v1/trainer_base.py", 130) and step == 3
    with pytest.raises(AssertionError, match=r"train_batch_size \(16\) must be divisible by parameter_sync_step \(3\)"):
        PPOTrainer.step(SimpleNamespace(config=cfg, parameter_sync_step=step), {}, {})
    (found,) = rules(check(overrides), "batch.sync_step")
    assert found.severity.value == "error" and found.keys[0] == "trainer.v1.sync.parameter_sync_step"


# --- what the log-prob head gives (wizard/core/check/rules/logprob_head.py) -------------------------------------
def test_the_v1_trainer_hands_the_optimal_baseline_no_sum_of_squared_probabilities(verl_config_dir, check):
    """The V1 trainer reads these fields for the advantage (trainer_base.py:1745) and verl's own compute_advantage,
    given a batch of them, stops with the assertion the rule quotes; the legacy trainer's batch has the sum."""
    import numpy as np
    import torch
    from verl import DataProto
    from verl.trainer.ppo.ray_trainer import compute_advantage

    fields = verl_line("trainer/ppo/v1/trainer_base.py", 1745)
    assert fields.strip().startswith("fields = [") and "old_log_probs" in fields and "sum_pi_squared" not in fields
    # nothing on the V1 path asks for the sum or reads it: its trainers and the workers they call
    v1 = [*(VERL / "trainer/ppo/v1").rglob("*.py"), VERL / "workers/engine_workers.py"]
    assert len(v1) > 3 and not [p.name for p in v1 if "sum_pi" in p.read_text()]
    cfg = composed(verl_config_dir, ["algorithm.adv_estimator=optimal_token_baseline"])
    ones = torch.ones(4, 3)
    batch = {"token_level_rewards": ones, "response_mask": ones, "old_log_probs": -ones}
    uid = {"uid": np.array(["a", "a", "b", "b"], dtype=object)}
    with pytest.raises(AssertionError, match="Step-dependent optimal baseline requires sum_pi_squared from actor"):
        compute_advantage(DataProto.from_dict(tensors=batch, non_tensors=uid), adv_estimator="optimal_token_baseline",
                          num_repeat=2, config=cfg.algorithm)
    legacy = compute_advantage(DataProto.from_dict(tensors={**batch, "sum_pi_squared": ones * 0.5}, non_tensors=uid),
                               adv_estimator="optimal_token_baseline", num_repeat=2, config=cfg.algorithm)
    assert legacy.batch["advantages"].shape == (4, 3)
    v1 = rules(check(GOOD + ["algorithm.adv_estimator=optimal_token_baseline",
                             "actor_rollout_ref.actor.calculate_sum_pi_squared=true"]), "algorithm.sum_pi_squared")
    assert len(v1) == 1 and "trainer.use_v1=false" in v1[0].fix_overrides


def test_the_fused_head_refuses_the_sum_of_squared_probabilities(check):
    """verl's FSDP engine stops the log-prob pass before it runs the model (transformer_impl.py:1343-1347)."""
    from tensordict import TensorDict
    from verl.utils import tensordict_utils as tu
    from verl.workers.engine.fsdp.transformer_impl import FSDPEngineWithLMHead

    td = TensorDict({}, batch_size=[])
    tu.assign_non_tensor(td, use_fused_kernels=True, calculate_sum_pi_squared=True)
    with pytest.raises(NotImplementedError, match="calculate_sum_pi_squared=True is not supported with use_fused_kernels"):
        FSDPEngineWithLMHead.prepare_model_outputs(None, None, {}, td, None)
    found = rules(check(GOOD + ["trainer.use_v1=false", "actor_rollout_ref.actor.calculate_sum_pi_squared=true",
                                "actor_rollout_ref.model.use_fused_kernels=true"]), "model.fused_head")
    assert len(found) == 1 and found[0].fix_overrides == ["actor_rollout_ref.model.use_fused_kernels=false"]


def test_no_fsdp_model_gives_the_fused_heads_top_k_distillation_losses():
    """The FSDP engine takes the top-k losses from the output's fused_linear_aux (transformer_impl.py:1374), which no
    model forward verl 0.9.1 patches in sets: the loss then reads a key that is not there (losses.py:319)."""
    assert 'getattr(output, "fused_linear_aux", None)' in verl_line("workers/engine/fsdp/transformer_impl.py", 1374)
    assert 'model_output["distillation_losses"]' in verl_line("trainer/distillation/losses.py", 319)
    setters = [p for p in VERL.rglob("*.py") if "fused_linear_aux" in p.read_text(errors="ignore")]
    assert [p.relative_to(VERL).as_posix() for p in setters] == ["workers/engine/fsdp/transformer_impl.py"]


@pytest.mark.parametrize("tied", [False, True])
def test_fsdp2_wraps_an_untied_head_apart_and_the_fused_forward_reads_its_weight_uncalled(tied, check):
    """verl's own FSDP2 wrap selection on a tiny real Qwen2 model: an untied lm_head is a unit of its own (never
    gathered by the root's forward), a tied one is not; the fused forward takes the weight without calling the head."""
    from transformers import AutoModelForCausalLM, Qwen2Config
    from verl.utils.fsdp_utils import _select_fsdp2_wrap_targets

    cfg = Qwen2Config(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                      num_key_value_heads=2, vocab_size=512, tie_word_embeddings=tied)
    model = AutoModelForCausalLM.from_config(cfg)
    wrapped = _select_fsdp2_wrap_targets(model, ["Qwen2DecoderLayer"])
    assert (model.lm_head in wrapped) is not tied
    assert "vocab_weights=self.lm_head.weight" in verl_line("models/transformers/dense_common.py", 125).replace(" ", "")
    from tests.helpers.hf_configs import QWEN25_7B
    from wizard.core.models.facts import facts_from_hf_config

    q7 = facts_from_hf_config({**QWEN25_7B, "tie_word_embeddings": tied}, name="Qwen/Qwen2.5-7B-Instruct",
                              source="catalogue")
    found = rules(check(GOOD + ["actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2",
                                "actor_rollout_ref.model.use_fused_kernels=true"], models={"actor": q7, "ref": q7}),
                  "model.fused_head")
    assert len(found) == (0 if tied else 1)


def test_the_model_types_read_as_tied_without_the_key_are_those_transformers_ties_by_default():
    """A config.json without tie_word_embeddings means the config class's default (save_pretrained leaves a default
    out): the facts read such a model as tied exactly where transformers (the one verl installs) would."""
    from transformers import AutoConfig

    from wizard.core.models.facts import _TIED_BY_DEFAULT

    untied = [t for t in sorted(_TIED_BY_DEFAULT) if AutoConfig.for_model(t).tie_word_embeddings is not True]
    assert untied == []
    assert AutoConfig.for_model("qwen2").tie_word_embeddings is False and "qwen2" not in _TIED_BY_DEFAULT
    assert AutoConfig.for_model("llama").tie_word_embeddings is False and "llama" not in _TIED_BY_DEFAULT


def test_each_gpu_s_bundle_holds_the_cpus_the_rule_counts():
    from verl.single_controller.ray.base import RayResourcePool, ResourcePoolManager

    from wizard.core.check.rules.resources import CPUS_PER_GPU

    # the V1 trainer builds ResourcePoolManager with its default max_colocate_count (trainer_base.py:848)
    assert ResourcePoolManager(resource_pool_spec={}, mapping={}).max_colocate_count == CPUS_PER_GPU
    assert "ResourcePoolManager(resource_pool_spec=resource_pool_spec, mapping=self.mapping)" in verl_line(
        "trainer/ppo/v1/trainer_base.py", 848)
    # each GPU's bundle holds that many CPUs, a node's bundles placed together
    assert verl_line("single_controller/ray/base.py", 146).strip() == 'bundle = {"CPU": self.max_colocate_count}'
    assert RayResourcePool.get_placement_groups.__defaults__[0] == "STRICT_PACK"


def test_a_standalone_rollout_replica_s_bundle_holds_the_cpus_the_rule_counts():
    from wizard.core.check.rules.resources import CPUS_PER_STANDALONE_GPU

    lines = (VERL / "workers/rollout/replica.py").read_text().splitlines()[200:207]
    assert f"max_colocate_count={CPUS_PER_STANDALONE_GPU}," in [x.strip() for x in lines]


# --- the critic's engine and embedding (rules/engine.py, rules/model_files.py) ---------------------------------
def test_a_megatron_critic_over_the_fsdp_config_passes_verls_preflight_then_meets_an_fsdp_engine_config(
        verl_config_dir, tiny_model, check):
    """ppo_trainer builds the critic as FSDPCriticConfig; its __post_init__ copies critic.strategy into the
    FSDPEngineConfig unchecked, and the critic's TrainingWorker builds the engine that strategy names from it."""
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import omega_conf_to_dataclass, validate_config

    overrides = GOOD + ["algorithm.adv_estimator=gae", f"critic.model.path={tiny_model}",
                        "critic.ppo_micro_batch_size_per_gpu=4", "critic.strategy=megatron"]
    cfg = composed(verl_config_dir, overrides)
    validate_config(cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))  # no error
    critic = omega_conf_to_dataclass(cfg.critic)
    assert (type(critic).__name__, type(critic.engine).__name__, critic.engine.strategy) == (
        "FSDPCriticConfig", "FSDPEngineConfig", "megatron")
    assert not hasattr(critic.engine, "use_mbridge")
    assert verl_line("workers/engine_workers.py", 138).strip() == "backend=self.engine_config.strategy,"
    assert verl_line("workers/engine/megatron/transformer_impl.py", 191).strip() == (
        'assert self.engine_config.use_mbridge, "use_mbridge must be True"')
    result = check(overrides)
    (f,) = rules(result, "engine.critic_megatron_without_engine")
    assert f.stage.value == "startup" and "use_mbridge" in f.message
    assert not [x for x in result.findings if x.severity.value == "error" and x.stage.value in ("compose", "preflight")]


def test_verl_hands_the_critic_the_actors_token_ids_and_never_resizes_its_embedding():
    """What models.critic_vocab rests on: no re-tokenizing for the critic, no resize anywhere in verl, and an id past
    the embedding fails in torch's lookup."""
    import torch

    assert verl_line("trainer/ppo/v1/trainer_base.py", 1730).strip() == "output = self.critic_wg.infer_batch(batch)"
    assert verl_line("workers/engine/fsdp/transformer_impl.py", 1191).strip() == (
        "input_ids_rmpad = input_ids.values().unsqueeze(0)  # (1, total_nnz)")
    assert "load_valuehead_model(" in verl_line("workers/engine/fsdp/transformer_impl.py", 300)
    resizers = [p for p in VERL.rglob("*.py") if "resize_token_embeddings" in p.read_text(errors="ignore")]
    assert resizers == []
    with pytest.raises(IndexError, match="index out of range in self"):
        torch.nn.Embedding(8, 2)(torch.tensor([8]))
