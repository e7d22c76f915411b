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
