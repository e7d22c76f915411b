"""The environment's secret values found wherever a plan holds them (pure)."""

from wizard.core.plan import Plan, apply_overrides, hide_known_values, plan_overrides
from wizard.core.secrets import hide_known, known_secrets, redact

KEY = "0123456789abcdef0123456789abcdef01234567"


def test_a_whole_quoted_value_becomes_the_bare_reference_and_a_part_a_reference_inside():
    assert hide_known(f"trainer.experiment_name='{KEY}'", {"WANDB_API_KEY": KEY}) == (
        "trainer.experiment_name=${oc.env:WANDB_API_KEY}", ["WANDB_API_KEY"])
    assert hide_known(f"+x.header=Bearer {KEY}", {"WANDB_API_KEY": KEY})[0] == "+x.header=Bearer ${oc.env:WANDB_API_KEY}"


def test_short_values_and_keys_are_left_alone():
    assert known_secrets({"DB_PASSWORD": "test", "HF_TOKEN": KEY, "PATH": "/usr/bin/" * 3}) == {"HF_TOKEN": KEY}
    assert hide_known(f"{KEY}=x", {"HF_TOKEN": KEY}) == (f"{KEY}=x", [])


def test_a_plan_field_and_a_passthrough_key_both_lose_the_value():
    plan = apply_overrides(Plan(), [f"trainer.experiment_name={KEY}", f"+reward.kw.auth=token {KEY}"])
    hidden, notes = hide_known_values(plan, {"WANDB_API_KEY": KEY})
    assert not any(KEY in t for t in plan_overrides(hidden)) and KEY not in hidden.model_dump_json()
    assert len(notes) == 2 and all("WANDB_API_KEY" in n for n in notes)
    assert hide_known_values(plan, {}) == (plan, [])


def test_a_bearer_token_of_no_known_issuer_is_redacted_in_text():
    assert redact(f"Authorization: Bearer {KEY}") == "Authorization: Bearer ${AUTH_TOKEN}"
    assert redact("Bearer ${HF_TOKEN}") == "Bearer ${HF_TOKEN}"
