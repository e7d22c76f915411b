"""config.yaml, used as verl's primary config, composes to the same config as run.sh's overrides."""

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from wizard.core.plan.emit import CONFIG_YAML
from wizard.usecases.plans import preset_plan
from wizard.usecases.writing import write_plan_files
from wizard.adapters.files.resources import preset_names
from wizard.core.plan.emit import emit_overrides
from wizard.core.plan.convert import apply_overrides


@pytest.mark.parametrize("name", preset_names())
def test_yaml_and_overrides_compose_the_same(tmp_path, monkeypatch, verl_config_dir, name):
    monkeypatch.setenv("HOME", "/home/tester")
    plan = apply_overrides(preset_plan(name), ["+ray_kwargs.ray_init.runtime_env.env_vars.X=1", "trainer.device=cuda"])
    write_plan_files(plan, tmp_path)
    with initialize_config_dir(config_dir=str(tmp_path), version_base=None):
        from_yaml = compose(config_name=CONFIG_YAML[:-5])
    overrides = [o.replace("$HOME", "/home/tester") for o in emit_overrides(plan).overrides]
    with initialize_config_dir(config_dir=verl_config_dir, version_base=None):
        from_cli = compose(config_name="ppo_trainer", overrides=overrides)
    a = OmegaConf.to_container(from_yaml, resolve=True)
    b = OmegaConf.to_container(from_cli, resolve=True)
    a.pop("hydra", None)
    assert a == b
