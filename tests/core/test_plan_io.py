"""Reading overrides into a Plan and writing them back never changes the effective config."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from wizard.adapters.files.resources import load_schema
from wizard.core.verl.compose import compose
from wizard.core.verl.overrides import render_value
from wizard.core.plan.model import field_map
from wizard.core.plan.convert import apply_overrides, plan_from_overrides, plan_overrides
from tests.conftest import examples

MODELLED = sorted(field_map())
OTHER = [
    "trainer.device", "data.truncation", "actor_rollout_ref.actor.optim.weight_decay", "critic.fsdp.fsdp_size",
    "actor_rollout_ref.actor.optim", "actor_rollout_ref.rollout", "trainer.v1", "reward.reward_kwargs",
]
value = st.one_of(
    st.integers(-5, 4096), st.floats(0, 2, allow_nan=False), st.booleans(), st.none(),
    st.sampled_from(["grpo", "vllm", "$HOME/x y.parquet", "1e-6", "${trainer.nnodes}", "[a,b]"]),
    st.lists(st.sampled_from(["console", "file"]), max_size=2),
)


@st.composite
def override_lists(draw):
    out = []
    for _ in range(draw(st.integers(0, 12))):
        key = draw(st.sampled_from(MODELLED + OTHER + ["ray_kwargs.ray_init.address"]))
        kind = draw(st.sampled_from(["", "", "", "+", "++", "~"]))
        if kind == "~":
            out.append(f"~{key}")
        else:
            out.append(f"{kind}{key}={render_value(draw(value))}")
    return out


def effective(schema, overrides):
    result = compose(schema, overrides)
    return OmegaConf.to_container(result.cfg, resolve=False), [(f.rule, f.keys) for f in result.findings]


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(override_lists())
def test_parse_then_emit_keeps_the_effective_config(overrides):
    schema = load_schema()
    plan = plan_from_overrides(overrides)
    assert effective(schema, plan_overrides(plan)) == effective(schema, overrides)


def test_plain_overrides_become_plan_fields_and_the_rest_passes_through():
    plan = plan_from_overrides(
        ["data.train_batch_size=64", "trainer.logger=[console,file]", "+ray_kwargs.ray_init.address=auto",
         "actor_rollout_ref.actor.optim.lr=1e-6", "actor_rollout_ref.actor.optim.lr=2e-6", "trainer.total_epochs=${x}"]
    )
    assert plan.data.train_batch_size == 64 and plan.trainer.logger == ["console", "file"]
    assert plan.training.actor_lr == 2e-6  # set twice: Hydra takes the last, and so does the plan
    assert plan.passthrough == ["+ray_kwargs.ray_init.address=auto", "trainer.total_epochs=${x}"]
    # a dict value merges into what came before it (OmegaConf.update(merge=True)): both stay, in their order
    merged = plan_from_overrides(["+foo={a:1}", "foo={b:2}", "foo={c:3}"])
    assert merged.passthrough == ["+foo={a:1}", "foo={b:2}", "foo={c:3}"]


def test_quoted_number_stays_a_string():
    plan = plan_from_overrides(["data.max_prompt_length='512'"])
    assert plan.data.max_prompt_length is None and plan.passthrough == ["data.max_prompt_length='512'"]


def test_apply_replaces_fields_and_passthrough_entries():
    plan = plan_from_overrides(["data.train_batch_size=64", "+foo.bar=1", "trainer.device=cpu"])
    plan = apply_overrides(plan, ["data.train_batch_size=32", "trainer.device=cuda"])
    assert plan.data.train_batch_size == 32
    assert plan.passthrough == ["+foo.bar=1", "trainer.device=cuda"]


@settings(max_examples=examples(60), deadline=None)
@given(override_lists())
def test_checking_leaves_the_shared_default_config_untouched(overrides):
    from wizard.core.verl.compose import _base, compose

    schema = load_schema()
    before = OmegaConf.to_container(_base(schema.variant()), resolve=False)
    compose(schema, overrides)
    compose(schema, overrides + ["model_engine=megatron"])
    assert OmegaConf.to_container(_base(schema.variant()), resolve=False) == before


def test_a_presets_experiment_name_follows_a_model_set_over_its_own_and_a_name_the_user_set_stays():
    from wizard.core.plan.convert import follow_model

    preset = plan_from_overrides(["actor_rollout_ref.model.path=Qwen/Qwen2.5-0.5B-Instruct",
                                  "trainer.experiment_name=grpo_smoke_qwen2.5_0.5b"])

    def after(*sets):
        return follow_model(preset, apply_overrides(preset, list(sets))).trainer.experiment_name

    assert after("actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct") == "grpo_smoke_qwen2.5_7b"
    assert after("actor_rollout_ref.model.path=/data/my models/$X/Qwen3-8B/") == "grpo_smoke_qwen3_8b"
    assert after("actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct", "trainer.experiment_name=mine") == "mine"
    assert after("data.train_batch_size=8") == "grpo_smoke_qwen2.5_0.5b"
    other = apply_overrides(preset, ["trainer.experiment_name=exp1"])  # a name that does not spell the model
    assert follow_model(other, apply_overrides(other, ["actor_rollout_ref.model.path=Qwen/Qwen3-8B"])) \
        .trainer.experiment_name == "exp1"


def test_adding_a_key_with_plus_replaces_the_plain_override_hydra_refused_so_check_fix_ends_clean():
    key = "actor_rollout_ref.rollout.engine_kwargs.vllm.kv_cache_memory_bytes"
    plan = plan_from_overrides([f"{key}=1000", "data.train_batch_size=8"])
    fixed = plan_overrides(apply_overrides(plan, [f"+{key}=1000"]))
    assert [o for o in fixed if key in o] == [f"+{key}=1000"]
    again = plan_overrides(apply_overrides(apply_overrides(plan, [f"+{key}=1000"]), [f"++{key}=2000"]))
    assert [o for o in again if key in o] == [f"++{key}=2000"]  # a second '+' of one key would be Hydra's error
    assert "data.train_batch_size=8" in again
