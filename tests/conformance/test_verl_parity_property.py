"""Property: on thousands of random, plausible configs the wizard's early verdict is verl's.

Hypothesis draws a preset and a handful of edits (batch arithmetic, micro batches, KL
switches, engine and estimator names, value types, unknown and moved keys, GPU counts);
real verl 0.9.1 judges each one in a long-lived probe process. Both verdicts must be
common, or the generator is not testing anything.
"""

import os

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conformance.test_verl_parity import _wizard_stage
from wizard.adapters.generate import preset_plan
from wizard.adapters.resources import preset_names
from wizard.adapters.verl_preflight import PreflightSession
from wizard.core.plan.emit import emit_overrides
from tests.conftest import examples

EXAMPLES = int(os.environ.get("VERL_WIZARD_PARITY_EXAMPLES", "2000"))
A, R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"

small = st.sampled_from([1, 2, 3, 4, 6, 8, 16, 32, 64, 100, 128, 256, 512, 1024])
edit = st.one_of(
    st.builds("data.train_batch_size={}".format, small),
    st.builds(f"{A}.ppo_mini_batch_size={{}}".format, small),
    st.builds(f"{R}.n={{}}".format, st.sampled_from([1, 2, 3, 4, 5, 8, 16])),
    st.builds("trainer.n_gpus_per_node={}".format, st.sampled_from([1, 2, 3, 4, 6, 8, 16])),
    st.builds("trainer.nnodes={}".format, st.sampled_from([1, 2, 3, 4])),
    st.builds(f"{A}.ppo_micro_batch_size_per_gpu={{}}".format, st.sampled_from(["null", "1", "4", "16"])),
    st.builds(f"{A}.ppo_micro_batch_size={{}}".format, st.sampled_from(["null", "4", "16", "64"])),
    st.builds(f"{R}.log_prob_micro_batch_size_per_gpu={{}}".format, st.sampled_from(["null", "8"])),
    st.builds(f"{R}.log_prob_micro_batch_size={{}}".format, st.sampled_from(["null", "8"])),
    st.builds("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu={}".format, st.sampled_from(["null", "8"])),
    st.builds("actor_rollout_ref.ref.log_prob_micro_batch_size={}".format, st.sampled_from(["null", "8"])),
    st.builds(f"{A}.use_dynamic_bsz={{}}".format, st.booleans()),
    st.builds(f"{A}.use_kl_loss={{}}".format, st.booleans()),
    st.builds("algorithm.use_kl_in_reward={}".format, st.booleans()),
    st.builds("algorithm.adv_estimator={}".format, st.sampled_from(["gae", "grpo", "rloo", "reinforce_plus_plus", "grpoo"])),
    st.builds("critic.enable={}".format, st.sampled_from(["null", "true", "false"])),
    st.builds("critic.ppo_micro_batch_size_per_gpu={}".format, st.sampled_from(["null", "4"])),
    st.builds("critic.ppo_mini_batch_size={}".format, small),
    st.builds(f"{A}.loss_agg_mode={{}}".format, st.sampled_from(["token-mean", "seq-mean-token-sum", "mean"])),
    st.builds(f"{R}.temperature={{}}".format, st.sampled_from(["0", "0.0", "1.0"])),
    st.builds(f"{R}.val_kwargs.do_sample={{}}".format, st.booleans()),
    st.builds(f"{R}.mode={{}}".format, st.sampled_from(["async", "sync"])),
    st.builds(f"{R}.name={{}}".format, st.sampled_from(["vllm", "sglang", "'???'", "hf"])),
    st.builds(f"{R}.pipeline_model_parallel_size={{}}".format, st.sampled_from([1, 2])),
    st.sampled_from(["data.train_batch_size=abc", "trainer.logr=x", "critic.model.fsdp_config.param_offload=true",
                     "+data.train_batch_size=8", f"{A}.ppo_epochs=1.5", f"{A}.strategy=megatron",
                     "+ray_kwargs.ray_init.address=auto", "trainer.logger=[console,wandbb]"]),
)


@settings(max_examples=examples(EXAMPLES), deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(preset=st.sampled_from(preset_names()), edits=st.lists(edit, min_size=1, max_size=5))
def _agree(session, tiny_model, check, counts, preset, edits):
    overrides = emit_overrides(preset_plan(preset)).overrides + [f"critic.model.path={tiny_model}"] + edits
    verl = session.check({"id": "x", "overrides": overrides})
    theirs = None if verl["ok"] else verl["stage"]
    mine = _wizard_stage(check(overrides).findings)
    counts[theirs is None] += 1
    assert mine == theirs, f"{preset} + {edits}: wizard={mine} verl={theirs} {verl.get('error_type')}: {verl.get('message')}"


@pytest.mark.slow
def test_wizard_and_verl_agree_on_random_configs(tiny_model, check):
    counts = {True: 0, False: 0}
    with PreflightSession() as session:
        _agree(session, tiny_model, check, counts)
    total = counts[True] + counts[False]
    print(f"\n{total} random configs: verl accepted {counts[True]}, rejected {counts[False]}")
    assert total >= EXAMPLES * 0.95
    assert min(counts.values()) >= total * 0.2, counts
