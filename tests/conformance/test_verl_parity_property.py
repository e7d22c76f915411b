"""Property: on thousands of random, plausible configs the wizard's early verdict is verl's.

Hypothesis draws a preset and a handful of edits from tests/helpers/parity_edits.py: every config key an
inventoried verl check reads (resources/verl-checks/mapping.yaml), with values on both sides of each condition,
plus the modes that reach them (separate_async, distillation, a reward model, Megatron). Real verl 0.9.1 judges
each config in a long-lived probe process: compose, validate_config, and what the TaskRunner and workers run at
startup before loading a model. Both verdicts must be common, or the generator is not testing anything.
"""

import os

import pytest

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.helpers.verl_verdict import wizard_stage
from tests.helpers.parity_edits import EDITS, compose_base
from wizard.usecases.plans import preset_plan
from wizard.adapters.files.resources import preset_names
from wizard.adapters.verl_env.verl_preflight import PreflightSession
from wizard.core.plan.emit import emit_overrides
from tests.conftest import examples

EXAMPLES = int(os.environ.get("VERL_WIZARD_PARITY_EXAMPLES", "2000"))
edit = st.sampled_from(EDITS)


@settings(max_examples=examples(EXAMPLES), deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(preset=st.sampled_from(preset_names()), edits=st.lists(edit, min_size=1, max_size=4))
def _agree(session, tiny_model, check, counts, preset, edits):
    overrides = compose_base(emit_overrides(preset_plan(preset)).overrides + [f"critic.model.path={tiny_model}"], edits)
    verl = session.check({"id": "x", "overrides": overrides})
    theirs = None if verl["ok"] else verl["stage"]
    mine = wizard_stage(check(overrides).findings)
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
