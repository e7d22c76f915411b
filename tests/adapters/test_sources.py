"""Every kind of input becomes the same thing: overrides and a config name."""
import pytest

from wizard.usecases.writing import write_plan_files
from wizard.usecases.plans import preset_plan
from wizard.adapters.files.sources import load_source
from wizard.core.verl.overrides import parse_override
from wizard.core.plan.convert import plan_overrides


def test_yaml_written_by_the_wizard_reads_back_to_the_same_overrides(tmp_path):
    plan = preset_plan("ppo-8gpu")
    write_plan_files(plan, tmp_path)
    source = load_source(str(tmp_path / "config.yaml"))
    def as_dict(overrides):
        return {(p := parse_override(o)).key: p.value() for o in overrides}

    expected = as_dict(plan_overrides(plan))
    expected = {k: v.replace("$HOME", "${oc.env:HOME}") if isinstance(v, str) else v for k, v in expected.items()}
    assert as_dict(source.overrides) == expected


def test_user_yaml_unknown_keys_are_reported(tmp_path):
    cfg = tmp_path / "mine.yaml"
    cfg.write_text("defaults:\n  - ppo_trainer\n  - _self_\ndata:\n  train_batch_size: 32\n  trian_files: x\n")
    source = load_source(str(cfg))
    assert "data.train_batch_size=32" in source.overrides and "+data.trian_files=x" in source.overrides
    assert [f.keys for f in source.findings if f.rule == "yaml.unknown_key"] == [["data.trian_files"]]


def test_plan_json_round_trips(tmp_path):
    plan = preset_plan("grpo-2node")
    write_plan_files(plan, tmp_path)
    assert load_source(str(tmp_path / "plan.json")).plan == plan


def test_a_preset_yaml_is_read_as_a_plan_not_as_a_verl_config():
    from tests.conftest import ROOT

    src = load_source(str(ROOT / "resources" / "presets" / "grpo-1gpu-smoke.yaml"))
    assert src.plan is not None and src.plan.name == "grpo-1gpu-smoke"
    assert "actor_rollout_ref.rollout.n=4" in src.overrides
    assert not any(o.startswith("schema_version") for o in src.overrides)


def test_a_json_that_is_not_a_plan_is_one_line(tmp_path):
    path = tmp_path / "x.json"
    path.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a verl-wizard plan"):
        load_source(str(path))
