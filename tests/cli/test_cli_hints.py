"""What the CLI tells a first-time user (issue 30): every command it quotes exists, terse errors say what was expected,
hints fit the case."""

import re
from pathlib import Path

import pytest

from tests.helpers.cli import run_cli
from wizard.cli import build_parser

ROOT = Path(__file__).resolve().parents[2]
QUOTED = re.compile(r"verl-wizard((?: [a-z][a-z-]*)+)((?: --[a-z][a-z-]*)*)")


def quoted_commands() -> set[str]:
    """Every ``verl-wizard SUB [SUB] [--flag ...]`` the wizard's own messages and help texts quote."""
    found = set()
    for path in (ROOT / "wizard").rglob("*.py"):
        for words, flags in QUOTED.findall(path.read_text()):
            found.add((words.strip() + flags).strip())
    return found


def _resolve(words: list[str]):
    """(the sub-parser the words reach, the words left): the real argparse tree, command by command."""
    import argparse

    parser = build_parser()
    while words:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs or words[0] not in subs[0].choices:
            break
        parser, words = subs[0].choices[words[0]], words[1:]
    return parser, words


def test_every_command_the_wizard_quotes_exists_with_its_options():
    """A quoted ``verl-wizard data --reward`` (the command is ``data reward``) fails here: each option must be one the
    sub-command it follows takes. Words after verl-wizard that are no command are prose ("verl-wizard plans ...")."""
    from wizard.cli import NAMES

    commands = [c for c in quoted_commands() if c.split()[0] in NAMES]
    assert "data reward" in commands and len(commands) > 10  # the scan sees the messages
    wrong = []
    for text in sorted(commands):
        parser, _ = _resolve([w for w in text.split() if not w.startswith("--")])
        options = {o for a in parser._actions for o in a.option_strings}
        wrong += [f"verl-wizard {text}: {parser.prog} has no {f}" for f in text.split()
                  if f.startswith("--") and f not in options]
    assert wrong == []


def test_help_says_that_no_arguments_open_the_window():
    proc = run_cli("--help")
    assert proc.returncode == 0 and "no arguments" in proc.stdout and "window" in proc.stdout


def one_line_error(proc) -> str:
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stdout + proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    return line


def test_a_cluster_in_words_where_a_file_is_expected_gets_the_file_form_and_gpus():
    line = one_line_error(run_cli("plan", "--preset", "grpo-2node", "--cluster", "2x8xH100-80GB nvlink"))
    assert "no such file" in line and "nodes: [{count: 2" in line and "--gpus 2x8xH100-80GB" in line


@pytest.mark.parametrize("command", ["plan", "check"])
def test_overrides_without_a_file_or_dashes_say_to_put_dashes_before_them(command):
    """A newcomer pasted `check --fix`'s output after `plan`: argparse took the first override for the file."""
    line = one_line_error(run_cli(command, "algorithm.adv_estimator=grpo", "data.train_batch_size=8"))
    assert line.endswith("algorithm.adv_estimator=grpo: no such file; it reads as an override: give overrides "
                         "without a file after -- (-- algorithm.adv_estimator=grpo ...), or each with --set")


def test_a_set_without_an_equals_sign_says_key_value():
    line = one_line_error(run_cli("plan", "--preset", "grpo-8gpu", "--set", "nonsense"))
    assert "expected KEY=VALUE" in line and "'nonsense'" in line
    proc = run_cli("check", "--format", "json", "--set", "nonsense", "--", "data.train_batch_size=8")
    import json

    syntax = [f for f in json.loads(proc.stdout)["findings"] if f["rule"] == "compose.syntax"]
    assert "expected KEY=VALUE" in syntax[0]["message"] and syntax[0]["fix"].startswith("Write it as KEY=VALUE")


@pytest.mark.parametrize("name", ["train.parquet", "train.jsonl"])
def test_a_dataset_given_to_check_points_at_data_check(tmp_path, name):
    path = tmp_path / name
    path.write_bytes(b"PAR1\x00\xff\xfe")
    line = one_line_error(run_cli("check", str(path)))
    assert f"verl-wizard data check {path}" in line and "UTF-8" not in line


@pytest.mark.parametrize("path, script", [("/nowhere/math/train.parquet", "math_dataset.py"),
                                          ("/nowhere/gsm8k/train.parquet", "gsm8k.py"),
                                          ("/nowhere/mine/train.parquet", "verl-wizard data convert")])
def test_a_missing_data_file_gets_the_preparation_hint_of_its_dataset(path, script):
    import json

    proc = run_cli("check", "--format", "json", "--", f"data.train_files={path}", "data.train_batch_size=8")
    (missing,) = [f for f in json.loads(proc.stdout)["findings"]
                  if f["rule"] == "data.file_missing" and f["keys"] == ["data.train_files"]]
    assert script in missing["fix"]
    assert ("gsm8k" in missing["fix"]) == ("gsm8k" in path)


def test_a_report_of_a_run_that_never_stepped_does_not_say_the_dump_was_not_set(tmp_path):
    """The run set trainer.rollout_data_dir and failed before step 1: the report said it "was not set"."""
    run = tmp_path / "failed"
    run.mkdir()
    original = (ROOT / "tests" / "data" / "verl-run-h200" / "command.sh").read_text()
    (run / "command.sh").write_text(original.replace(" algorithm.adv_estimator=grpo",
                                                     " trainer.rollout_data_dir=/tmp/runA/rollout algorithm.adv_estimator=grpo"))
    (run / "run.log").write_text("ValueError: Total available GPUs 0 is less than total desired GPUs 1\n")
    text = run_cli("report", str(run), "--out", "-").stdout
    assert "was not set" not in text
    assert "trainer.rollout_data_dir=/tmp/runA/rollout was set, but the run never finished a training step" in text


def test_a_date_the_script_computed_stays_text_in_config_yaml_which_says_so_and_check_tells(tmp_path):
    from wizard.adapters.files.sources import load_source
    from wizard.core.plan.emit import render_files

    script = tmp_path / "run.sh"
    script.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo "
                      "trainer.experiment_name=qwen_$(date +%Y%m%d_%H%M) trainer.n_gpus_per_node=1\n")
    files, _, notes = render_files(load_source(str(script)).to_plan("imported"))
    comment = [line for line in files["config.yaml"].splitlines() if line.startswith("# trainer.experiment_name")]
    assert comment and "$(date +%Y%m%d_%H%M) as text" in comment[0]
    assert "experiment_name: qwen_$(date +%Y%m%d_%H%M)" in files["config.yaml"]  # the YAML itself is unchanged
    assert any("config.yaml keeps trainer.experiment_name" in n for n in notes)
    assert "trainer.experiment_name=\"'qwen_$(date +%Y%m%d_%H%M)'\"" in files["run.sh"]  # run.sh computes it
    yaml_file = tmp_path / "config.yaml"
    yaml_file.write_text(files["config.yaml"])
    import json

    doc = json.loads(run_cli("check", str(yaml_file), "--format", "json").stdout)
    (found,) = [f for f in doc["findings"] if f["rule"] == "yaml.shell_text"]
    assert found["keys"] == ["trainer.experiment_name"] and "'qwen_$(date +%Y%m%d_%H%M)' as written" in found["message"]
