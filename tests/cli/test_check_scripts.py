"""``check SCRIPT.sh`` on real verl scripts: findings by line in text, all of them in JSON, refusals in one line."""

import json

from tests.cli.test_cli import assert_one_line_error, run
from tests.conftest import SCRIPTS
from tests.helpers.cli import run_cli

QWEN3_8B = SCRIPTS / "main" / "examples__grpo_trainer__run_qwen3_8b_fsdp.sh"


def test_a_bash_array_launch_from_verl_main_is_read_not_refused():
    proc = run("check", "--format", "json", str(QWEN3_8B))
    assert proc.returncode in (0, 1), proc.stderr
    doc = json.loads(proc.stdout)
    script = [f for f in doc["findings"] if f["rule"].startswith("script.")]
    assert not [f for f in doc["findings"] if f["rule"] == "compose.syntax"]
    # the knobs left at their defaults are one note, with every one of them in its data
    [defaults] = [f for f in script if f["rule"] == "script.defaults"]
    assert defaults["severity"] == "info" and len(defaults["data"]["defaults"]) >= 20
    assert all(isinstance(f["line"], int) for f in script)
    assert len([f for f in script if f["severity"] == "warning"]) <= 3


def test_text_output_groups_the_script_findings_by_line():
    proc = run("check", str(QWEN3_8B))
    out = proc.stdout
    assert " From the script, by line" in out
    section = out.split(" From the script, by line", 1)[1]
    lines = [int(t.split()[1]) for t in section.splitlines() if t.startswith("  line ")]
    assert lines == sorted(lines) and len(lines) == len(set(lines)) >= 2
    assert "script.defaults" in section and out.count("script.defaults") == 1


def test_a_script_past_the_size_budget_is_one_line_and_exit_2(tmp_path):
    big = tmp_path / "big.sh"
    big.write_text("python3 -m verl.trainer.main_ppo a.b=" + "x" * 1_000_000 + "\n")
    assert_one_line_error(run("check", str(big)), 2, "the wizard reads scripts up to 262,144")


def test_a_refusal_names_the_line(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\nset -e\nsrun -N 2 python3 -m verl.trainer.main_ppo a=1\n")
    assert_one_line_error(run("check", str(script)), 2, "line 3: verl is started through 'srun'")


def test_a_sourced_file_next_to_the_script_counts(tmp_path):
    (tmp_path / "knobs.sh").write_text("export BATCH=48\n")
    script = tmp_path / "run.sh"
    script.write_text('source "$(dirname "$0")/knobs.sh"\npython3 -m verl.trainer.main_ppo '
                      'data.train_batch_size=${BATCH:-1024}\n')
    doc = json.loads(run("check", "--format", "json", str(script)).stdout)
    assert any(f["rule"] == "script.source" and f["line"] == 1 and "read" in f["message"] for f in doc["findings"])


def test_a_critic_model_on_a_plan_without_a_critic_is_noted():
    """GRPO with critic.model.path set: verl never builds the critic; users expect a value model."""
    proc = run_cli("check", "--preset", "grpo-1gpu-smoke", "--set", "critic.model.path=Qwen/Qwen2.5-0.5B-Instruct")
    assert "advice.critic_unused: critic.model.path is set, but this plan trains no critic: adv_estimator=grpo" \
        in proc.stdout
    ppo = run_cli("check", "--preset", "ppo-8gpu")
    assert "advice.critic_unused" not in ppo.stdout


def test_the_critic_keys_that_do_not_reach_it_are_named_without_the_unset_ones():
    proc = run_cli("check", "--preset", "ppo-8gpu", "--set", "critic.ppo_max_token_len_per_gpu=8192",
                   "--set", "critic.forward_micro_batch_size_per_gpu=null")
    line = next(x for x in proc.stdout.splitlines() if "advice.critic_batching" in x)
    assert "critic.ppo_max_token_len_per_gpu=8192" in line and "forward_micro_batch_size_per_gpu" not in line
    assert "pre-flight check still asks for critic.ppo_micro_batch_size_per_gpu" in line
