"""The in-memory composition equals verl's own Hydra composition, and its errors help."""

import pytest
from hydra import compose as hydra_compose
from hydra import initialize_config_dir
from hydra.errors import HydraException
from omegaconf import OmegaConf

from wizard.core.verl.compose import compose, composed_view
from tests.conftest import examples

CASES = [
    [],
    ["data.train_batch_size=64", "actor_rollout_ref.rollout.name=vllm"],
    ["+ray_kwargs.ray_init.address=auto", "trainer.logger=[console,file]", "~trainer.project_name"],
    ["++trainer.new_thing.x=1", "actor_rollout_ref.actor.optim.lr=1e-6", "algorithm.adv_estimator=grpo"],
    ["model_engine=megatron", "actor_rollout_ref.actor.megatron.tensor_model_parallel_size=2"],
    ["critic.optim={lr:1e-5,weight_decay:0.0}"],
    ["trainer.logger.0=tensorboard"],  # a list element
    # keys added to an existing dict (set in place, as Hydra would), at the top, and then changed or added again
    ["+trainer.new_a=1", "+trainer.new_b=x", "+new_top=2.5", "+data.flag=null", "trainer.new_a=3", "++trainer.new_b=y"],
    ["+extra.k0=0", *[f"+extra.k{i}=v{i}" for i in range(1, 300)]],
]


@pytest.mark.parametrize("overrides", CASES)
def test_composition_matches_hydra_with_verls_config(schema, verl_config_dir, overrides):
    with initialize_config_dir(config_dir=verl_config_dir, version_base=None):
        real = hydra_compose(config_name="ppo_trainer", overrides=overrides)
    ours = compose(schema, overrides)
    assert ours.findings == []
    assert OmegaConf.to_container(ours.cfg, resolve=False) == OmegaConf.to_container(real, resolve=False)


@pytest.mark.parametrize(
    "override", ["critic.model.fsdp_config.param_offload=False", "trainer.logr=[console]", "+data.train_batch_size=8"]
)
def test_hydra_refuses_what_the_wizard_refuses(schema, verl_config_dir, override):
    with pytest.raises(HydraException), initialize_config_dir(config_dir=verl_config_dir, version_base=None):
        hydra_compose(config_name="ppo_trainer", overrides=[override])
    assert [f.stage.value for f in compose(schema, [override]).findings] == ["compose"]


def test_moved_key_names_its_new_home(schema, moves):
    (finding,) = compose(schema, ["critic.model.fsdp_config.param_offload=True"], moves=moves).findings
    assert "critic.fsdp.param_offload" in finding.message
    assert finding.fix_overrides == ["critic.fsdp.param_offload=True"]


def test_typo_gets_did_you_mean(schema, moves):
    (finding,) = compose(schema, ["trainer.logr=[console]"], moves=moves).findings
    assert "did you mean trainer.logger" in finding.message


def test_dataclass_only_field_is_told_to_use_plus(schema, moves):
    (finding,) = compose(schema, ["critic.ppo_infer_max_token_len_per_gpu=4096"], moves=moves).findings
    assert finding.fix_overrides == ["+critic.ppo_infer_max_token_len_per_gpu=4096"]


def test_every_bad_override_is_reported_not_just_the_first(schema):
    found = compose(schema, ["a.b=1", "data.train_batch_size=8", "c.d=2"]).findings
    assert sorted(f.keys[0] for f in found) == ["a.b", "c.d"]


@pytest.fixture(scope="module")
def verl_defaults(verl_config_dir):
    with initialize_config_dir(config_dir=verl_config_dir, version_base=None):
        return OmegaConf.to_container(hydra_compose(config_name="ppo_trainer"), resolve=False)


@pytest.mark.parametrize("overrides", [
    ["actor_rollout_ref.rollout.temperature=-4", "~actor_rollout_ref.rollout"],  # found by hypothesis
    ["actor_rollout_ref.rollout.temperature=-4", "actor_rollout_ref.rollout={}"],
    ["data.train_batch_size=7", "~data.train_batch_size", "+data.train_batch_size=9"],
    ["trainer.logger.0=tensorboard"],  # an element of a list in verl's default config
    ["trainer.logger.1=file", "~trainer.logger"],
    ["actor_rollout_ref.actor.checkpoint.load_contents.0=x"],  # through an interpolation (${.save_contents})
    ["actor_rollout_ref.rollout.profiler.ranks.0=3"],  # through a None
    ["+trainer.new_a=1", "~trainer"],  # a key added in place, then its parent deleted and put back
    ["+trainer.new_a=1", "trainer={}"],
    ["+extra.k0=0", "+extra.k1=1", "extra={}", "+extra.k2=2"],
])
def test_a_check_leaves_no_trace_in_the_next_one(schema, overrides, verl_defaults):
    """A value changed in place and then deleted with its parent must not become verl's default for the
    next check (the GUI re-checks after every edit on the same cached config)."""
    compose(schema, overrides)
    assert OmegaConf.to_container(compose(schema, []).cfg, resolve=False) == verl_defaults


def test_deleting_a_list_element_is_a_finding_where_hydra_crashes(schema, verl_config_dir):
    with initialize_config_dir(config_dir=verl_config_dir, version_base=None), pytest.raises(TypeError):
        hydra_compose(config_name="ppo_trainer", overrides=["~trainer.logger.0"])  # verl exits with this
    found = compose(schema, ["~trainer.logger.0", "data.train_batch_size=8"]).findings
    assert [f.rule for f in found] == ["compose.override_crash"]
    assert "TypeError" in found[0].message and "trainer.logger=[...]" in found[0].fix
    assert list(compose(schema, []).cfg.trainer.logger) == ["console", "wandb"]


def test_a_key_inside_a_list_value_gets_no_fix_that_replaces_the_list(schema):
    (found,) = compose(schema, ["trainer.logger.0.foo=1"]).findings
    assert "trainer.logger holds a value" in found.message and found.fix_overrides == []


def test_no_sequence_of_overrides_changes_the_next_check(schema, verl_defaults):
    """Random override sequences (set, add, force-add, delete; leaves, containers, list elements, paths through
    interpolations and None) leave the cached default config as verl's, and never raise."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    variant = schema.variant(None)
    keys = sorted(variant.yaml_keys)
    deep = [k + suffix for k in keys[::7] for suffix in (".0", ".x", ".0.y")]
    key = st.sampled_from(keys + deep)
    value = st.sampled_from(["1", "x", "null", "[a,b]", "{a:1}", "${data.train_batch_size}", "true"])
    override = st.one_of(
        st.builds(lambda k, v, kind: f"{kind}{k}={v}", key, value, st.sampled_from(["", "+", "++"])),
        st.builds("~{}".format, key),
    )

    @settings(max_examples=examples(200), deadline=None, database=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.lists(override, min_size=1, max_size=6))
    def run(overrides):
        with composed_view(schema, overrides):  # what a check does, without compose()'s copy
            pass
        with composed_view(schema, []) as view:
            assert OmegaConf.to_container(view.cfg, resolve=False) == verl_defaults, overrides

    run()


def test_thousands_of_added_keys_give_the_findings_of_the_same_overrides_in_chunks(schema, verl_defaults):
    added = [f"+extra.k{i}={i}" for i in range(3000)]
    bad = ["trainer.total_epoch=3", "+trainer.project_name=x"]  # a typo, and an add over an existing key
    whole = compose(schema, added[:1500] + bad + added[1500:])
    assert sorted(whole.cfg.extra) == sorted(f"k{i}" for i in range(3000)) and whole.cfg.extra.k2999 == 2999
    chunks = [compose(schema, added[i:i + 500] + bad).findings for i in range(0, 3000, 500)]
    assert all(found == whole.findings for found in chunks) and len(whole.findings) == 2
    assert OmegaConf.to_container(compose(schema, []).cfg, resolve=False) == verl_defaults


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_key_under_an_empty_engine_kwargs_mapping_is_fixed_with_a_plus(schema, engine):
    """engine_kwargs.<engine> is {} in verl's rollout.yaml: a key set there without '+' is refused by Hydra, whose own
    message asks for the '+'; the wizard offers that, not a list value that would break verl's ``.items()``."""
    key = f"actor_rollout_ref.rollout.engine_kwargs.{engine}.kv_cache_memory_bytes"
    (found,) = compose(schema, [f"{key}=1000"]).findings
    assert found.rule == "compose.unknown_key"
    assert found.fix == f"+{key}=1000" and found.fix_overrides == [f"+{key}=1000"]
    assert "=[...]" not in found.fix and "empty mapping" in found.message
    assert compose(schema, [f"+{key}=1000"]).findings == []


def test_a_megatron_key_in_a_config_composed_for_fsdp_is_fixed_by_switching_the_engine(schema):
    """actor.megatron.* exists only in verl's Megatron config: the fix is model_engine=megatron, not the nearest
    spelling (rollout.pipeline_model_parallel_size, which verl refuses above 1)."""
    key = "actor_rollout_ref.actor.megatron.pipeline_model_parallel_size"
    (found,) = compose(schema, [f"{key}=2"]).findings
    assert found.rule == "compose.unknown_key" and "Megatron config" in found.message
    assert found.fix_overrides == ["model_engine=megatron"] and "rollout" not in found.fix
    assert compose(schema, ["model_engine=megatron", f"{key}=2"]).findings == []


def test_a_key_set_again_after_its_removal_is_reported_once_for_its_last_setting(schema):
    """``~clip_ratio_high`` then ``clip_ratio_high=0`` and ``=0.0``: Hydra refuses both settings; the user is told
    once, of the setting Hydra takes (the last), as a plan that keeps only the last would be (Hypothesis found the
    plan round-trip reporting one finding where the overrides reported two)."""
    key = "actor_rollout_ref.actor.clip_ratio_high"
    result = compose(schema, [f"~{key}", f"{key}=0", f"{key}=0.0"])
    (finding,) = [f for f in result.findings if f.keys == [key]]
    assert finding.rule == "compose.unknown_key" and "removed its section" in finding.message and "0.0" in finding.message
