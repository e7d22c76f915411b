"""Smoke overrides and the exact environment of a launch."""

import pytest

from wizard.core.verl.overrides import parse_override
from wizard.core.plan.model import Plan
from wizard.core.plan.convert import apply_overrides, plan_overrides
from wizard.core.run.smoke import (
    SmokeOptions,
    dump_dirs,
    render_command,
    smoke_command,
    smoke_env,
    smoke_overrides,
    smoke_plan,
)


def base_plan(**passthrough):
    plan = Plan(name="t", script_env=["HOME"])
    plan.models.actor_path = "/models/tiny"
    plan.data.train_files = "$HOME/data/train.parquet"
    plan.hardware.ray_num_cpus = 4
    plan.trainer.logger = ["console", "wandb"]
    plan.trainer.total_training_steps = 1000
    plan.passthrough = list(passthrough.get("extra", []))
    return plan


def as_dict(overrides):
    return {parse_override(o).key: parse_override(o).value() for o in overrides}


def test_smoke_overrides_few_steps_console_and_file_val_at_the_end():
    got = as_dict(smoke_overrides(base_plan(), SmokeOptions(steps=3)))
    assert got["trainer.total_training_steps"] == 3 and got["trainer.logger"] == ["console", "file"]
    assert got["trainer.test_freq"] == 3 and got["trainer.val_before_train"] is False
    assert got["trainer.save_freq"] == -1 and got["trainer.resume_mode"] == "disable"
    assert got["ray_kwargs.ray_init.num_cpus"] == 10  # 4 would hang TransferQueue


@pytest.mark.parametrize("val,freq,before", [("none", -1, False), ("start", -1, True), ("both", 5, True)])
def test_validation_as_chosen(val, freq, before):
    got = as_dict(smoke_overrides(base_plan(), SmokeOptions(validation=val)))
    assert got["trainer.test_freq"] == freq and got["trainer.val_before_train"] is before


def test_enough_ray_cpus_are_kept():
    plan = base_plan()
    plan.hardware.ray_num_cpus = 16
    assert "ray_kwargs.ray_init.num_cpus" not in as_dict(smoke_overrides(plan))


def test_bad_options_are_refused():
    with pytest.raises(ValueError, match="steps must be 1 or more"):
        SmokeOptions(steps=0)
    with pytest.raises(ValueError, match="validation must be one of"):
        SmokeOptions(validation="sometimes")


def test_smoke_plan_edits_the_plan_and_binds_ray_to_loopback_once():
    plan = smoke_plan(base_plan())
    words = plan_overrides(plan)
    assert "trainer.total_training_steps=5" in words and "trainer.logger=[console,file]" in words
    assert words.count("+ray_kwargs.ray_init._node_ip_address=127.0.0.1") == 1
    again = smoke_plan(plan)
    assert plan_overrides(again).count("+ray_kwargs.ray_init._node_ip_address=127.0.0.1") == 1
    mine = smoke_plan(base_plan(extra=["+ray_kwargs.ray_init._node_ip_address=10.0.0.2"]))
    assert not any("127.0.0.1" in w for w in plan_overrides(mine))
    assert not any("_node_ip_address" in w for w in plan_overrides(smoke_plan(base_plan(), SmokeOptions(loopback=False))))


def test_environment_is_explicit():
    assert smoke_env("/runs/a/metrics.jsonl", model_is_local=False) == {
        "PYTHONUNBUFFERED": "1", "RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0",
        "VERL_FILE_LOGGER_PATH": "/runs/a/metrics.jsonl"}
    local = smoke_env("/m.jsonl", model_is_local=True)
    assert local["HF_HUB_OFFLINE"] == "1" and local["TRANSFORMERS_OFFLINE"] == "1"


def test_command_expands_what_bash_would_and_displays_references():
    plan = smoke_plan(base_plan())
    cmd = smoke_command(plan, SmokeOptions(), run_dir="/runs/a", file_logger_path="/runs/a/metrics.jsonl",
                        model_is_local=True, environ={"HOME": "/home/u"})
    assert cmd.args[:2] == ["-m", "verl.trainer.main_ppo"] and cmd.args[-1] == "hydra.run.dir=/runs/a/hydra"
    assert "data.train_files=/home/u/data/train.parquet" in cmd.args
    assert "data.train_files=$HOME/data/train.parquet" in cmd.display and cmd.reads == ["HOME"] and not cmd.missing
    line = render_command("/env/bin/python", cmd)
    assert line.startswith("PYTHONUNBUFFERED=1 RAY_USAGE_STATS_ENABLED=0 RAY_DEDUP_LOGS=0 ")
    assert '"data.train_files=${HOME}/data/train.parquet"' in line and " /env/bin/python -m verl.trainer.main_ppo " in line
    missing = smoke_command(plan, SmokeOptions(), run_dir="/r", file_logger_path="/r/m", model_is_local=False, environ={})
    assert missing.missing == ["HOME"]


def test_secrets_reach_the_run_through_its_environment_never_its_command_line():
    plan = smoke_plan(base_plan(extra=["+trainer.wandb_api_key=abcd1234secret"]))
    cmd = smoke_command(plan, SmokeOptions(), run_dir="/r", file_logger_path="/r/m", model_is_local=False,
                        environ={"HOME": "/h", "WANDB_API_KEY": "abcd1234secret"})
    assert cmd.secrets == ["WANDB_API_KEY"] and cmd.missing == []
    assert "+trainer.wandb_api_key=${oc.env:WANDB_API_KEY}" in cmd.args  # verl's Hydra reads it from the env
    assert not any("abcd1234secret" in w for w in cmd.args + cmd.display)
    assert "abcd1234secret" not in render_command("python", cmd)
    unset = smoke_command(plan, SmokeOptions(), run_dir="/r", file_logger_path="/r/m", model_is_local=False,
                          environ={"HOME": "/h"})
    assert unset.missing == ["WANDB_API_KEY"]  # the launcher refuses to start a run that would fail on it
    from wizard.core.secrets import redact

    assert redact("key=abcd1234secret!", {"WANDB_API_KEY": "abcd1234secret"}) == "key=${WANDB_API_KEY}!"



def test_a_smoke_run_dumps_its_generations_into_its_folder_unless_the_plan_says_where():
    plan = smoke_plan(base_plan(), SmokeOptions(samples_dir="/runs/my try"))
    words = plan_overrides(plan)
    assert "trainer.rollout_data_dir='/runs/my try/rollout'" in words  # Hydra's own quoting: one value
    got = as_dict(words)
    assert got["trainer.validation_data_dir"] == "/runs/my try/validation"
    assert dump_dirs(plan) == ("/runs/my try/rollout", "/runs/my try/validation")
    own = smoke_plan(apply_overrides(base_plan(), ["trainer.rollout_data_dir=/data/dumps"]),
                     SmokeOptions(samples_dir="/r"))
    assert dump_dirs(own) == ("/data/dumps", "/r/validation")
    assert dump_dirs(smoke_plan(base_plan())) == (None, None)  # no folder given: no dumps


def test_scrub_leaves_no_secret_and_keeps_references():
    text = ("trainer.wandb_api_key=abc123xyz 'hf_token': 'hf_abcdefghijklmnopqrstuvwxyz0123456' "
            "max_num_batched_tokens=8192 'api_key': None secret=${WANDB} sk-abcdefghijklmnopqrstuvwxyz "
            "OPENAI_API_KEY=topsecretvalue pad_token_id=0")
    from wizard.core.secrets import scrub

    out = scrub(text, {"WANDB_API_KEY": "abc123xyz"})
    for secret in ("abc123xyz", "hf_abcdefghijklmnopqrstuvwxyz0123456", "sk-abcdefghijklmnopqrstuvwxyz",
                   "topsecretvalue"):
        assert secret not in out
    assert "trainer.wandb_api_key=${WANDB_API_KEY}" in out and "'hf_token': '${HF_TOKEN}'" in out
    assert "max_num_batched_tokens=8192" in out and "'api_key': None" in out and "secret=${WANDB}" in out
    assert "pad_token_id=0" in out


def test_without_flash_attn_the_smoke_run_adds_sdpa_and_says_so():
    from wizard.core.run.smoke import SDPA_OVERRIDE, adds_sdpa, smoke_notes

    plan, opts = base_plan(), SmokeOptions(flash_attn=False)
    assert adds_sdpa(plan, opts)
    assert SDPA_OVERRIDE in plan_overrides(smoke_plan(plan, opts))
    assert smoke_notes(plan, opts)[0].startswith("flash-attn does not import in the run's Python: added "
                                                 "+actor_rollout_ref.model.override_config.attn_implementation=sdpa")


@pytest.mark.parametrize("flash_attn", [True, None])
def test_with_flash_attn_or_unknown_nothing_is_added(flash_attn):
    from wizard.core.run.smoke import SDPA_OVERRIDE, smoke_notes

    opts = SmokeOptions(flash_attn=flash_attn)
    assert SDPA_OVERRIDE not in plan_overrides(smoke_plan(base_plan(), opts))
    assert smoke_notes(base_plan(), opts) == []


def test_an_attention_the_plan_chose_is_kept():
    from wizard.core.run.smoke import adds_sdpa

    plan = base_plan(extra=["+actor_rollout_ref.model.override_config.attn_implementation=eager"])
    assert not adds_sdpa(plan, SmokeOptions(flash_attn=False))
    assert "+actor_rollout_ref.model.override_config.attn_implementation=sdpa" not in plan_overrides(
        smoke_plan(plan, SmokeOptions(flash_attn=False)))


def test_a_per_token_metric_is_shown_in_a_shared_report_and_a_token_is_not():
    from wizard.core.secrets import scrub

    text = "rollout_corr/chi2_token: 0.0123  step:2 - rollout_corr/chi2_token:1.5e-03 - HF_TOKEN=hf_" + "x" * 34
    shown = scrub(text)
    assert "rollout_corr/chi2_token: 0.0123" in shown and "chi2_token:1.5e-03" in shown
    assert "hf_" + "x" * 34 not in shown
    assert scrub("db_password: 123456") == "db_password: <redacted>"  # a number that is not a measurement stays hidden
