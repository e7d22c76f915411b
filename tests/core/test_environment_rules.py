"""What the target environment must hold for a plan: a critic needs flash-attn (verl 0.9.1's
load_valuehead_model asks for flash_attention_2 whatever the overrides say)."""

from wizard.adapters.files.resources import load_moves, load_schema
from wizard.core.check.rules.context import EnvironmentFacts
from wizard.core.check.verdict import check_overrides
from wizard.core.findings import Severity

BASE = ["actor_rollout_ref.rollout.name=vllm", "trainer.n_gpus_per_node=1",
        "actor_rollout_ref.rollout.tensor_model_parallel_size=1"]
PPO = [*BASE, "algorithm.adv_estimator=gae", "critic.model.path=/models/q"]
GRPO = [*BASE, "algorithm.adv_estimator=grpo"]


def critic_findings(overrides, environment):
    result = check_overrides(load_schema(), overrides, moves=load_moves(), environment=environment)
    return [f for f in result.findings if f.rule == "env.flash_attn_critic"]


def test_a_critic_without_flash_attn_is_an_error_that_sdpa_does_not_fix():
    found = critic_findings(PPO, EnvironmentFacts(flash_attn=False, python="/venv/bin/python"))
    assert len(found) == 1 and found[0].severity is Severity.ERROR
    assert "flash-attn does not import in the run's Python (/venv/bin/python)" in found[0].message
    assert "load_valuehead_model" in found[0].message and "please install trl" in found[0].message
    assert found[0].fix.startswith("pip install flash-attn") and found[0].fix_overrides == []
    with_sdpa = [*PPO, "+critic.model.override_config.attn_implementation=sdpa"]
    assert critic_findings(with_sdpa, EnvironmentFacts(flash_attn=False))[0].severity is Severity.ERROR


def test_a_critic_with_an_unknown_environment_is_advice():
    for env in (None, EnvironmentFacts(flash_attn=None)):
        found = critic_findings(PPO, env)
        assert len(found) == 1 and found[0].severity is Severity.INFO
        assert "needs flash-attn" in found[0].message


def test_no_critic_or_flash_attn_present_says_nothing():
    assert critic_findings(GRPO, EnvironmentFacts(flash_attn=False)) == []
    assert critic_findings(PPO, EnvironmentFacts(flash_attn=True)) == []
