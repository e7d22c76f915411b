"""A rule's id and stage are declared once, by its ``@rule``: every finding a rule reports is one its declaration
names (the engine refuses any other, as a failed rule), and no rule fails on the configs users write."""

import ast
from pathlib import Path

from tests.helpers.parity_edits import EDITS
from wizard.core.check.rules import RULES, _load
from wizard.core.findings import Stage

RULES_DIR = Path(__file__).resolve().parents[2] / "wizard" / "core" / "check" / "rules"


def test_every_id_a_rule_module_names_is_declared_with_a_stage():
    _load()
    declared = {rid: stage for r in RULES for rid, stage in r.ids.items()}
    named = set()
    for path in RULES_DIR.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "finding":
                named |= {k.value.value for k in node.keywords if k.arg == "rule" and isinstance(k.value, ast.Constant)}
    assert named and sorted(named - set(declared)) == []
    assert all(stage is None or isinstance(stage, Stage) for stage in declared.values())
    assert len({r.id for r in RULES}) == len(RULES)  # one registration per id


def test_no_rule_fails_on_the_presets_and_the_parity_edits():
    """Each of the parity property's edits (every key an inventoried verl check reads, both sides of each
    condition, the modes that reach them) on a preset, with GPUs whose memory is known: a rule that reported an
    undeclared id or stage, or crashed, would show as internal.rule_failed."""
    from wizard.adapters.files.resources import preset_names
    from wizard.core.plan.emit import emit_overrides
    from wizard.usecases.assessment import assess
    from wizard.usecases.hardware import machines_for, read_gpu_spec
    from wizard.usecases.plans import preset_plan

    failed, presets = [], sorted(preset_names())
    gpus = ("8xH100-80GB", "2x8xA100-40GB", "1xRTX-4090-24GB", "1xH100-80GB")
    for k, preset in enumerate(presets):
        spec = read_gpu_spec(gpus[k % len(gpus)])
        base = emit_overrides(preset_plan(preset)).overrides
        for i, edit in enumerate([(), *EDITS]):
            if edit and i % len(presets) != k:  # each preset as it is, and every edit once over the presets
                continue
            result = assess(base + list(edit), gpus=spec, cluster=machines_for(spec))
            failed += [(preset, edit, f.message) for f in result.findings if f.rule == "internal.rule_failed"]
    assert failed == []
