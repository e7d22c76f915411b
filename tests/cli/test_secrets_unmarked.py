"""A credential in a key the wizard does not know as secret (an experiment name holding the W&B key, an
``auth_header`` with a bearer token) never reaches a file it writes, a cluster job, or a run's command line: the
value of the environment's own secret variable becomes its ``${oc.env:NAME}`` reference, with a note; the cluster
upload leaves out what may hold credentials; ``report`` of a raw verl log redacts such values."""

from __future__ import annotations

import stat
from pathlib import Path

import yaml

from tests.helpers.cli import run_cli

WANDB = "0123456789abcdef0123456789abcdef01234567"  # a W&B key: 40 hex digits, no shape of its own
BEARER = "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc"  # a token of no known issuer
ENV = {"WANDB_API_KEY": WANDB}
SETS = ["--set", f"trainer.experiment_name={WANDB}", "--set", f"+reward.custom_reward_function.reward_kwargs."
        f"auth_header=Bearer {BEARER}"]


def leaks(folder: Path) -> dict[str, list[str]]:
    found = {}
    for path in folder.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            hits = [s for s in (WANDB, BEARER) if s in text]
            if hits:
                found[path.name] = hits
    return found


def test_generate_and_cluster_write_references_not_the_values(tmp_path):
    gen = run_cli("generate", "--preset", "grpo-1gpu-smoke", *SETS, "--out", tmp_path / "gen", "--force", env=ENV)
    assert gen.returncode in (0, 1), gen.stderr
    assert "trainer.experiment_name holds the value of WANDB_API_KEY: written as ${oc.env:WANDB_API_KEY}" in gen.stdout
    run_sh = (tmp_path / "gen" / "run.sh").read_text()
    assert "trainer.experiment_name='${oc.env:WANDB_API_KEY}'" in run_sh, run_sh and "${oc.env:AUTH_TOKEN}" in run_sh
    clu = run_cli("cluster", tmp_path / "gen" / "plan.json", "--out", tmp_path / "cluster", "--force", env=ENV)
    assert clu.returncode in (0, 1), clu.stderr
    assert {"submit.sh", "slurm.sbatch", "kuberay-rayjob.yaml"} <= {p.name for p in (tmp_path / "cluster").iterdir()}
    assert leaks(tmp_path) == {}


def test_the_cluster_upload_leaves_out_scripts_env_and_key_files(tmp_path):
    run_cli("cluster", "grpo-2node", "--out", tmp_path / "c", env=ENV)
    excludes = yaml.safe_load((tmp_path / "c" / "runtime_env.yaml").read_text())["excludes"]
    for pattern in ("*.sh", "*.bak", ".env", "*.env", ".netrc", "*.pem", "*.key"):
        assert pattern in excludes


def test_a_run_gets_the_reference_on_its_command_line(tmp_path):
    py = tmp_path / "python"
    py.write_text(f"#!/bin/sh\ncase \"$*\" in *verl.trainer.main_ppo*) ;; *) exit 1;; esac\n"
                  f"cat /proc/$$/cmdline | tr '\\0' ' ' > '{tmp_path}/argv'\n")
    py.chmod(py.stat().st_mode | stat.S_IXUSR)
    proc = run_cli("launch", "--preset", "grpo-1gpu-smoke", *SETS[:2], "--python", py, "--out", tmp_path / "r",
                   env=ENV)
    argv = (tmp_path / "argv").read_text()
    assert "trainer.experiment_name=${oc.env:WANDB_API_KEY}" in argv, proc.stdout + proc.stderr
    assert leaks(tmp_path) == {}


def test_report_of_a_raw_verl_log_redacts_them(tmp_path):
    run = tmp_path / "raw"
    run.mkdir()
    (run / "run.log").write_text(f"{{'trainer': {{'experiment_name': '{WANDB}', 'auth_header': 'Bearer {BEARER}'}}}}\n"
                                 "step:1 - critic/score/mean:0.5\n")
    proc = run_cli("report", run, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert WANDB not in proc.stdout + proc.stderr and BEARER not in proc.stdout + proc.stderr
    text = (run / "report.md").read_text()
    assert WANDB not in text and BEARER not in text
    assert "'experiment_name': '${WANDB_API_KEY}'" in text and "Bearer ${AUTH_TOKEN}" in text
