"""What Make it fit's "FSDP2 with the CPU offload policy" sets is on the Rollout & training form beside the other
offload fields, so what was applied is seen, and can be changed back there, as one undo step."""

import pytest

pytest.importorskip("PySide6")

from wizard.core.plan import apply_overrides  # noqa: E402

from tests.helpers.gui_steps import at  # noqa: E402

pytestmark = pytest.mark.gui
POLICY = "actor_rollout_ref.actor.fsdp_config.offload_policy"
STRATEGY = "actor_rollout_ref.actor.strategy"
OFFLOAD_POLICY = ["actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2",
                  f"{POLICY}=True"]  # the advisor's words for it (wizard.core.advice)


def editors(page) -> dict:
    return {key: editor for form in page.forms for key, editor in form.editors.items()}


def test_the_offload_policy_applied_by_make_it_fit_shows_on_the_form_and_goes_back_to_the_default(window):
    page = at(window, "rollout")
    fields = editors(page)
    keys = list(fields)
    offload = keys.index("actor_rollout_ref.actor.fsdp_config.optimizer_offload")
    assert keys[offload - 2:offload + 2] == [STRATEGY, "actor_rollout_ref.actor.fsdp_config.param_offload",
                                             "actor_rollout_ref.actor.fsdp_config.optimizer_offload", POLICY]
    policy, strategy = fields[POLICY].widget, fields[STRATEGY].widget
    assert policy.currentText() == "verl default (false)" and strategy.currentText() == "verl default (fsdp)"
    window.doc.set_plan(apply_overrides(window.doc.plan, OFFLOAD_POLICY), text="Make it fit: FSDP2 with the CPU "
                        "offload policy (optimizer on the CPU)")
    assert policy.currentText() == "true" and strategy.currentText() == "fsdp2"
    caption = policy.parent().layout().labelForField(policy).text()
    assert "offload policy" in caption and "CPU" in caption
    assert "FSDP2" in policy.toolTip()  # verl's own words for the key
    # back to verl's default on the form: the key leaves the plan, one undo step puts it back
    before = window.doc.undo_stack.count()
    policy.setCurrentIndex(0)
    policy.activated.emit(0)
    assert f"{POLICY}=" not in " ".join(window.doc.overrides) and policy.currentText() == "verl default (false)"
    assert window.doc.undo_stack.count() == before + 1
    window.doc.undo_stack.undo()
    assert policy.currentText() == "true" and f"{POLICY}=True" in window.doc.overrides
    # and set on the form, it is what run.sh says
    policy.setCurrentIndex(policy.findData("false"))
    policy.activated.emit(policy.currentIndex())
    assert f"{POLICY}=false" in window.doc.overrides and window.doc.overrides.count(f"{POLICY}=True") == 0
