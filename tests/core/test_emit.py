"""What the wizard writes: secrets never, environment references kept, every value quoted."""

from wizard.core.plan.emit import emit_overrides, render_run_sh, render_yaml
from wizard.core.plan.convert import plan_from_overrides
from wizard.core.plan import plan_overrides


def test_secrets_become_environment_references():
    plan = plan_from_overrides(["+trainer.wandb_api_key=abc123", "+reward.custom_reward_function.reward_kwargs."
                                "api_key=sk-proj-abcdefghijklmnopqrstuvwx", "+x.header='Bearer hf_" + "a" * 34 + "'"])
    text = render_run_sh(plan)
    yaml_text, _ = render_yaml(plan)
    dumped = plan.model_dump_json()
    for secret in ("abc123", "sk-proj-abcdefghijklmnopqrstuvwx", "hf_" + "a" * 34):
        assert secret not in text and secret not in yaml_text and secret not in dumped
    assert "+trainer.wandb_api_key='${oc.env:WANDB_API_KEY}'" in text and "${oc.env:API_KEY}" in yaml_text
    assert "Bearer ${oc.env:HF_TOKEN}" in text
    assert {"WANDB_API_KEY", "API_KEY", "HF_TOKEN"} <= set(emit_overrides(plan).env)


def test_a_secret_for_rays_workers_is_left_to_the_environment():
    """verl passes ray_init.runtime_env to Ray unresolved: a reference would reach the workers as text."""
    plan = plan_from_overrides(["+ray_kwargs.ray_init.runtime_env.env_vars.WANDB_API_KEY=abc123",
                                "+ray_kwargs.ray_init.runtime_env.env_vars.NCCL_DEBUG=INFO"])
    assert plan.passthrough == ["+ray_kwargs.ray_init.runtime_env.env_vars.NCCL_DEBUG=INFO"]


def test_token_budget_keys_are_not_secrets():
    plan = plan_from_overrides(["actor_rollout_ref.actor.ppo_max_token_len_per_gpu=24000"])
    assert "24000" in render_run_sh(plan)


def test_every_value_is_quoted_and_home_expands():
    plan = plan_from_overrides(["data.train_files=$HOME/data/train.parquet", "data.train_batch_size=64"],
                               script_env=["HOME"])
    text = render_run_sh(plan)
    assert "data.train_files=\"${HOME}/data/train.parquet\"" in text
    assert "data.train_batch_size='64'" in text


def test_deletions_cannot_live_in_yaml_and_are_listed():
    plan = plan_from_overrides(["~trainer.project_name", "data.train_batch_size=64"])
    text, cli_only = render_yaml(plan)
    assert cli_only == ["~trainer.project_name"]
    assert any(line.startswith("# Pass these") and "~trainer.project_name" in line for line in text.splitlines())


def test_megatron_engine_goes_into_the_defaults_list():
    text, _ = render_yaml(plan_from_overrides(["model_engine=megatron"]))
    assert "override model_engine: megatron" in text


def test_the_written_run_sh_reads_back_to_the_same_plan():
    from wizard.usecases.plans import preset_plan
    from wizard.adapters.files.resources import preset_names
    from wizard.core.scripts.reader import read_launch_script

    for name in preset_names():
        plan = preset_plan(name)
        script = read_launch_script(render_run_sh(plan))
        back = plan_from_overrides(script.args, config_name=script.config_name, script_env=script.env)
        assert back.model_dump(exclude={"name", "description", "hardware"}) == plan.model_dump(
            exclude={"name", "description", "hardware"}
        )
        assert script.warnings == []


def test_config_yaml_is_the_text_omegaconf_writes():
    """config.yaml is dumped without building an OmegaConf tree (an edit's cost); the text must be OmegaConf's own,
    on every preset and on the real verl scripts the YAML can hold (values of every kind: lists, floats, null,
    interpolations, strings that look like numbers)."""
    from pathlib import Path

    from omegaconf import OmegaConf

    import wizard.core.plan.emit as emit
    from wizard.adapters.files.resources import preset_names
    from wizard.adapters.files.sources import load_source
    from wizard.usecases.plans import preset_plan

    scripts = sorted((Path(__file__).resolve().parents[1] / "data" / "verl_scripts").glob("*.sh"))
    plans = [preset_plan(n) for n in preset_names()]
    for script in scripts:
        try:
            plans.append(load_source(str(script)).to_plan())
        except ValueError:  # a script the reader refuses (its config name is an argument): nothing to write
            continue
    plans.append(plan_from_overrides(["+x.a='007'", "+x.b=[1,'2',null,1e-6]", "+x.c={k: 'yes'}", "+x.d='${data.x}'"]))
    docs = []
    original = emit._omegaconf_yaml
    emit._omegaconf_yaml = lambda doc: docs.append(doc) or original(doc)
    try:
        for plan in plans:
            try:
                emit.render_yaml(plan)
            except emit.YamlEmitError:
                continue
    finally:
        emit._omegaconf_yaml = original
    assert len(docs) > 40
    for doc in docs:
        assert original(doc) == OmegaConf.to_yaml(OmegaConf.create(doc))


def test_a_key_set_again_later_is_written_once_with_its_last_value():
    # a script's trainer.nnodes=2 with --set trainer.nnodes=1 after it was printed twice by check --fix (Hydra takes
    # the last); an append and a deletion keep their place, their order means something
    plan = plan_from_overrides(["trainer.nnodes=2", "+foo.bar=1", "trainer.nnodes=1", "~foo.bar",
                                "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.n=8"])
    out = plan_overrides(plan)
    assert [o for o in out if o.startswith("trainer.nnodes=")] == ["trainer.nnodes=1"]
    assert [o for o in out if "rollout.n=" in o] == ["actor_rollout_ref.rollout.n=8"]
    assert out.index("+foo.bar=1") < out.index("~foo.bar")
    # a deletion between two sets reads the first (~key=value deletes only a match): both stay; so does a value the
    # field cannot hold (verl stops at it) and a set of a key the plan does not type
    for kept in (["actor_rollout_ref.rollout.n=2", "~actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.n=8"],
                 ["trainer.nnodes=abc", "trainer.nnodes=1"],
                 ["actor_rollout_ref.actor.optim=0", "actor_rollout_ref.actor.optim=[]"]):
        assert plan_overrides(plan_from_overrides(kept)) == kept
