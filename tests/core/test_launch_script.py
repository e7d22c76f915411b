"""Reading real verl launch scripts statically, and refusing what is not one launch."""

import pytest

from tests.conftest import SCRIPTS
from tests.helpers.script_corpus import corpus_name, main_ppo_scripts, other_scripts
from wizard.core.scripts.reader import ScriptError, read_launch_script

# run_test.sh takes its config name as $1: refused (tested below), so not in MAIN.
MAIN = [p for p in main_ppo_scripts() if p.name != "tests__special_e2e__run_test.sh"]
OTHER = other_scripts()


def test_the_corpus_is_there():
    assert len(MAIN) >= 230 and len(OTHER) >= 9


@pytest.mark.parametrize("path", MAIN, ids=corpus_name)
def test_every_main_ppo_example_is_read(path):
    script = read_launch_script(path.read_text())
    assert script.args, "no overrides found"
    assert all(a for a in script.args), "an empty argument"


@pytest.mark.parametrize(
    "path, reason",
    [
        ("examples__sapo_trainer__run_qwen30b_sapo.sh", "srun"),
        ("examples__sft__gsm8k__run_qwen_05_sp2.sh", "fsdp_sft_trainer"),
        ("tests__special_e2e__run_dapo.sh", "recipe.dapo.main_dapo"),
        ("tests__special_e2e__run_one_step_off_policy.sh", "one_step_off_policy"),
        ("verl__experimental__fully_async_policy__shell__dapo_30b_a3b_base_math_fsdp.sh", "'ray'"),
    ],
)
def test_other_launchers_are_refused_with_the_reason(path, reason):
    with pytest.raises(ScriptError, match=reason):
        read_launch_script((SCRIPTS / "other" / path).read_text())


def test_variables_lists_and_home_reference():
    script = read_launch_script((SCRIPTS / "examples__grpo_trainer__run_qwen2-7b_math.sh").read_text())
    assert "data.train_files=['$HOME/data/gsm8k/train.parquet', '$HOME/data/math/train.parquet']" in script.args
    assert script.env == ["HOME"] and script.forwards_args


def test_arrays_and_megatron_config_name():
    script = read_launch_script((SCRIPTS / "examples__grpo_trainer__run_qwen2-7b_math_megatron_lora.sh").read_text())
    assert script.config_name == "ppo_megatron_trainer"
    assert "actor_rollout_ref.model.lora.rank=256" in script.args
    assert not any("canonical_lora" in a for a in script.args)  # commented out inside the array


def test_branch_taken_by_the_scripts_own_values():
    script = read_launch_script((SCRIPTS / "tests__special_e2e__ppo_trainer__run_function_reward.sh").read_text())
    assert "actor_rollout_ref.actor.checkpoint.save_contents=['model','optimizer','extra']" in script.args


def test_comment_after_backslash_ends_the_command_and_is_reported():
    script = read_launch_script((SCRIPTS / "examples__ppo_trainer__run_deepseek7b_llm_pfppo.sh").read_text())
    assert len(script.args) < 10
    assert any("not part of the launch" in w for w in script.warnings)


def test_command_substitution_is_a_placeholder_with_a_note():
    text = 'python3 -m verl.trainer.main_ppo trainer.experiment_name=run_$(date +%s) data.train_batch_size=$((8 * 4))\n'
    script = read_launch_script(text)
    assert script.argv == ["trainer.experiment_name=run_$(date +%s)", "data.train_batch_size=32"]
    assert script.args == ["trainer.experiment_name='run_$(date +%s)'", "data.train_batch_size=32"]  # Hydra reads it
    assert [(n.line, n.kind) for n in script.notes] == [(1, "runtime")]


def test_defaults_and_env_prefix():
    text = 'NNODES=${NNODES:-2}\nPYTHONUNBUFFERED=1 python3 -m verl.trainer.main_ppo trainer.nnodes="$NNODES" "$@"\n'
    script = read_launch_script(text)
    assert script.args == ["trainer.nnodes=2"] and script.launch_env == {"PYTHONUNBUFFERED": "1"}


@pytest.mark.parametrize(
    "text, reason",
    [
        ("echo hello\n", "no 'python3 -m verl.trainer.main_ppo'"),
        ((SCRIPTS / "tests__special_e2e__run_test.sh").read_text(), "config-name is"),
        ("python3 -m verl.trainer.main_ppo a=1\npython3 -m verl.trainer.main_ppo a=2\n", "2 times"),
        ("for i in 1 2; do\n python3 -m verl.trainer.main_ppo a=$i\ndone\n", "inside a loop"),
        ("python3 -m verl.trainer.main_ppo a='unterminated\n", "unterminated"),
    ],
)
def test_refusals_say_why(text, reason):
    with pytest.raises(ScriptError, match=reason):
        read_launch_script(text)
