"""Secrets planted through every way in never come out: not in a written file, not in any command's output, not on
a run's command line or in its log (wizard.core.secrets says what a secret is)."""

from __future__ import annotations

import json
import stat
from pathlib import Path

from tests.helpers.cli import run_cli

KEY_VALUE = "wandbkey-0123456789abcdef"  # a value only its key marks as secret
HF = "hf_" + "Q" * 34  # a value whose shape marks it
SK = "sk-proj-" + "Z" * 30
ENV = {"WANDB_API_KEY": "envsecret-42424242", "HF_TOKEN": HF, "MY_SERVICE_PASSWORD": "hunter2hunter2"}
SCRIPT_ONLY = ("scriptpass-77777777", "defaulttoken-5555")  # written into a script, not shaped like anything
PLANTED = (KEY_VALUE, HF, SK, *ENV.values(), *SCRIPT_ONLY)


def _leaks(text: str) -> list[str]:
    return [s for s in PLANTED if s in text]


def _files_leak(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            leaks = _leaks(path.read_text(errors="replace"))
            if leaks:
                found[str(path.relative_to(folder))] = leaks
    return found


def _inputs(tmp: Path) -> dict[str, Path]:
    script = tmp / "in" / "run_qwen.sh"
    script.parent.mkdir(parents=True)
    script.write_text(f"""#!/bin/bash
export HF_TOKEN={HF}
DB_PASSWORD={SCRIPT_ONLY[0]}
MY_TOKEN=${{MY_TOKEN:-{SCRIPT_ONLY[1]}}}
python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo \\
    +trainer.wandb_api_key={KEY_VALUE} \\
    "+reward.custom_reward_function.reward_kwargs.header=Bearer $HF_TOKEN" \\
    +reward.custom_reward_function.reward_kwargs.db="$DB_PASSWORD" +x.auth="$MY_TOKEN" \\
    trainer.n_gpus_per_node=8 "$@"
""")
    yaml_cfg = tmp / "in" / "config.yaml"
    yaml_cfg.write_text(f"defaults: [ppo_trainer, _self_]\ntrainer:\n  api_key: {SK}\n")
    plan = tmp / "in" / "plan.json"
    plan.write_text(json.dumps({"schema_version": 1, "verl_version": "0.9.1",
                                "passthrough": [f"+trainer.wandb_api_key={KEY_VALUE}", f"+x.k={SK}"]}))
    return {"script": script, "yaml": yaml_cfg, "plan": plan}


def test_no_planted_secret_reaches_any_output(tmp_path):
    inputs = _inputs(tmp_path)
    out = tmp_path / "out"
    sets = ["--set", f"+trainer.wandb_api_key={KEY_VALUE}", "--set", f"+x.header=Bearer {HF}"]
    runs = [
        ("generate", "--preset", "grpo-1gpu-smoke", *sets, "--out", out / "gen", "--force"),
        ("check", "--preset", "grpo-1gpu-smoke", *sets, "--format", "json"),
        ("check", "--preset", "grpo-1gpu-smoke", *sets, "--fix"),
        ("plan", "--preset", "grpo-1gpu-smoke", *sets),
        ("launch", "--preset", "grpo-1gpu-smoke", *sets, "--dry-run"),
        ("cluster", inputs["script"], "--out", out / "cluster", "--force"),
        ("cluster", inputs["plan"], "--out", out / "cluster-plan", "--force"),
    ]
    for source in inputs.values():
        runs += [("check", source), ("check", source, "--format", "json"), ("check", source, "--fix"),
                 ("plan", source, "--format", "json")]
    for argv in runs:
        proc = run_cli(*argv, env=ENV, cwd=tmp_path)
        assert not _leaks(proc.stdout + proc.stderr), (argv, _leaks(proc.stdout + proc.stderr))
    assert (out / "gen" / "run.sh").exists() and (out / "cluster" / "submit.sh").exists()
    assert _files_leak(out) == {}


def test_a_run_gets_its_secrets_from_its_environment_and_its_log_never_shows_them(tmp_path):
    """A stand-in Python prints its command line and its environment's secrets: neither reaches the log or the
    wizard's output, and the command line holds references, not values."""
    py = tmp_path / "python"
    py.write_text('#!/bin/sh\necho "argv: $*"\necho "env: $WANDB_API_KEY $HF_TOKEN $MY_SERVICE_PASSWORD"\n')
    py.chmod(py.stat().st_mode | stat.S_IXUSR)
    run_dir = tmp_path / "run"
    proc = run_cli("launch", "--preset", "grpo-1gpu-smoke", "--set", f"+trainer.wandb_api_key={KEY_VALUE}",
                   "--python", py, "--out", run_dir, env=ENV, cwd=tmp_path)
    assert not _leaks(proc.stdout + proc.stderr)
    log = (run_dir / "run.log").read_text()
    assert "+trainer.wandb_api_key=${oc.env:WANDB_API_KEY}" in log  # a reference on the command line
    assert "env: ${WANDB_API_KEY} ${HF_TOKEN} ${MY_SERVICE_PASSWORD}" in log  # the values, redacted
    assert _files_leak(run_dir) == {}
