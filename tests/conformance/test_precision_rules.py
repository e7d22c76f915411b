"""bfloat16 on GPUs below compute capability 8.0 (gpus.bf16_rollout, gpus.bf16_training): the GPU catalogue's T4 and
V100 are refused, Ampere passes, and the float16 keys the fix names are the ones real verl 0.9.1 composes into the
dtypes its engines use (the rollout's vLLM dtype, FSDP's mixed-precision param dtype, the model's attention)."""

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir

from tests.core.test_rules import GOOD
from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
from wizard.core.findings import Severity, Stage
from wizard.core.hardware import parse_gpu_spec
from wizard.usecases.hardware import cluster_for_spec

RULES = ("gpus.bf16_rollout", "gpus.bf16_training")


def on(check, spec, overrides):
    gpus = parse_gpu_spec(spec)
    return check(overrides, gpus=gpus, cluster=cluster_for_spec(gpus, load_gpu_catalogue()))


def bf16(result):
    return {f.rule: f for f in result.findings if f.rule in RULES}


@pytest.mark.parametrize("spec", ["1xT4-16GB", "1xV100-32GB"])
def test_gpus_without_bf16_fail_at_startup_with_the_keys_to_set(check, spec):
    found = bf16(on(check, spec, GOOD))
    assert set(found) == set(RULES)
    assert all(f.severity is Severity.ERROR and f.stage is Stage.STARTUP for f in found.values())
    assert "Bfloat16 is only supported on GPUs with compute capability of at least 8.0" in found["gpus.bf16_rollout"].message
    assert found["gpus.bf16_rollout"].fix_overrides == ["actor_rollout_ref.rollout.dtype=float16"]
    assert found["gpus.bf16_training"].fix_overrides == [
        "+actor_rollout_ref.actor.fsdp_config.mixed_precision={param_dtype:fp16}",
        "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"]
    assert "Ampere or newer" in found["gpus.bf16_training"].fix


def test_ampere_and_newer_and_no_gpu_model_pass(check):
    assert bf16(on(check, "1xA100-80GB", GOOD)) == {}
    assert bf16(on(check, "1xRTX-4090-24GB", GOOD)) == {}
    assert bf16(check(GOOD, gpus=parse_gpu_spec("1"))) == {}


def test_the_fixes_clear_the_findings(check):
    fixed = on(check, "1xT4-16GB", GOOD)
    overrides = GOOD + [o for f in bf16(fixed).values() for o in f.fix_overrides]
    assert bf16(on(check, "1xT4-16GB", overrides)) == {}


def test_a_critic_cannot_train_on_them_whatever_the_dtypes(check):
    gae = GOOD + ["algorithm.adv_estimator=gae", "critic.ppo_micro_batch_size_per_gpu=4",
                  "critic.model.path=Qwen/Qwen2.5-0.5B-Instruct"]
    found = bf16(on(check, "1xT4-16GB", gae))["gpus.bf16_training"]
    assert "critic always loads with flash_attention_2" in found.message and found.fix_overrides == []


def test_the_fix_keys_reach_the_dtypes_verl_uses(verl_config_dir):
    """verl 0.9.1's own composition and classes: the rollout dtype vLLM gets (vllm_async_server.py:326), FSDP's
    param dtype (fsdp/transformer_impl.py:391-399) and the attention HFModelConfig passes on (workers/config/model.py:185)."""
    import torch
    from verl.utils.config import omega_conf_to_dataclass
    from verl.utils.torch_dtypes import PrecisionType

    fixes = ["actor_rollout_ref.rollout.dtype=float16",
             "+actor_rollout_ref.actor.fsdp_config.mixed_precision={param_dtype:fp16}",
             "+actor_rollout_ref.model.override_config.attn_implementation=sdpa"]
    with initialize_config_dir(config_dir=verl_config_dir, version_base=None):
        default = hydra_compose(config_name="ppo_trainer", overrides=["actor_rollout_ref.rollout.name=vllm"])
        fixed = hydra_compose(config_name="ppo_trainer", overrides=["actor_rollout_ref.rollout.name=vllm"] + fixes)

    def param_dtype(cfg):
        mixed = cfg.actor_rollout_ref.actor.fsdp_config.get("mixed_precision")  # FSDPEngineConfig.mixed_precision
        return PrecisionType.to_dtype(mixed.get("param_dtype", "bf16")) if mixed is not None else torch.bfloat16

    assert omega_conf_to_dataclass(default.actor_rollout_ref.rollout).dtype == "bfloat16"
    assert param_dtype(default) is torch.bfloat16
    assert default.actor_rollout_ref.model.override_config.get("attn_implementation", "flash_attention_2") == \
        "flash_attention_2"
    assert omega_conf_to_dataclass(fixed.actor_rollout_ref.rollout).dtype == "float16"
    assert param_dtype(fixed) is torch.float16
    assert fixed.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"


@pytest.mark.parametrize("value", ["BF16", "half", "float", "fp8", "16", "32", "bf16", "bfloat16", "fp32", "float16"])
def test_a_model_dtype_is_refused_exactly_where_verls_precision_type_refuses_it(check, value):
    """fsdp_config.model_dtype reaches verl's PrecisionType.to_dtype as Hydra composes it (16 and 32 as ints); it
    compares exactly, so BF16 or half stop the worker as it builds the model. The wizard once read them as sizes."""
    from verl.utils.torch_dtypes import PrecisionType

    key = "actor_rollout_ref.actor.fsdp_config.model_dtype"
    result = check([*GOOD, f"{key}={value}"])
    composed = int(value) if value.isdigit() else value  # as Hydra reads the override
    try:
        PrecisionType.to_dtype(composed)
        refused = False
    except RuntimeError as exc:
        refused = "unexpected precision" in str(exc)
    found = [f for f in result.findings if f.rule == "precision.model_dtype"]
    assert bool(found) == refused, (value, found)
    if found:
        fix = found[0].fix_overrides[0].split("=", 1)[1]
        PrecisionType.to_dtype(fix)  # the fix is a spelling verl takes
