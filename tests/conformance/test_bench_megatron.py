"""The Megatron kit for the lent GPU (bench/real/megatron-carry.md): the campaign's Megatron runs compose and validate
with verl 0.9.1 and each fits one card by the estimate made before it runs, and the small Qwen3-MoE that
make_models.py writes loads into transformers' Qwen3-MoE with every expert where its checkpoint names put it (vLLM and
mbridge read those names; transformers 5's module holds the experts fused)."""

import importlib.util
import json
import sys

import pytest

from tests.conftest import ROOT, need_verl

REAL = ROOT / "bench" / "real"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, REAL / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(REAL))
    spec.loader.exec_module(module)
    return module


@pytest.mark.verl
def test_every_megatron_run_of_the_campaign_composes_and_validates_with_verl_091():
    need_verl()
    spec = _load("campaign_spec")
    runs = spec.megatron_runs()
    assert {run["name"] for run in runs} >= {"meg-grpo-0.5b-tp1-u0.4", "meg-grpo-moe1b-ep1-u0.5"}
    for run in runs:
        assert "model_engine=megatron" in run["args"]
        assert 0 < run["predicted_peak_gib"] < 140 and run["predicted_step_s"] > 0
    assert spec.preflight(sys.executable, runs)


@pytest.mark.verl
def test_the_moe_checkpoint_loads_with_each_expert_where_its_names_say(tmp_path):
    need_verl()
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    from wizard.core.models.facts import facts_from_hf_config

    make = _load("make_models")
    make.make_model(tmp_path / "m", "moetiny", "cpu")
    saved = load_file(str(tmp_path / "m" / "model.safetensors"))
    assert "model.layers.1.mlp.experts.3.gate_proj.weight" in saved and not any(
        k.endswith("experts.gate_up_proj") for k in saved)
    model, info = AutoModelForCausalLM.from_pretrained(tmp_path / "m", output_loading_info=True, dtype=torch.bfloat16)
    assert not info["missing_keys"] and not info["unexpected_keys"]
    experts = model.model.layers[1].mlp.experts
    gate, up, down = (saved[f"model.layers.1.mlp.experts.3.{n}.weight"] for n in ("gate_proj", "up_proj", "down_proj"))
    assert torch.equal(experts.gate_up_proj[3], torch.cat([gate, up])) and torch.equal(experts.down_proj[3], down)
    # the estimate sizes it from its config.json as the checkpoint holds it
    facts = facts_from_hf_config(json.loads((tmp_path / "m" / "config.json").read_text()), name="moetiny",
                                 source="config")
    assert facts.param_count == sum(t.numel() for t in saved.values())
    assert (facts.num_experts, facts.num_experts_per_tok) == (4, 2)
