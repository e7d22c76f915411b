"""The advisor's Megatron fix, as ``check --fix`` prints it, is a config verl 0.9.1 itself composes and validates."""

from tests.conftest import ROOT, need_verl
from tests.helpers.cli import run_cli

DENSE = ROOT / "tests" / "data" / "megatron" / "grpo_qwen2.5-32b_tp4_pp2.sh"
NO_OFFLOAD = ["trainer.nnodes=1", "actor_rollout_ref.actor.megatron.param_offload=False",
              "actor_rollout_ref.actor.megatron.optimizer_offload=False",
              "actor_rollout_ref.ref.megatron.param_offload=False"]


def test_the_32b_megatron_fix_on_one_node_is_megatron_cores_cpu_optimizer_and_verl_accepts_it(tmp_path):
    need_verl()
    fixed = run_cli("check", "--gpus", "8xH100-80GB", "--fix", str(DENSE), *NO_OFFLOAD)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr  # it fits after the fix (it said 'needs >= 16 GPUs')
    lines = fixed.stdout.splitlines()
    # the corrected overrides keep the script's config: without it they would compose over FSDP's ppo_trainer
    assert lines[0] == "--config-name=ppo_megatron_trainer"
    assert "++actor_rollout_ref.actor.optim.override_optimizer_config.optimizer_cpu_offload=True" in lines
    data = [f"data.{k}_files={tmp_path / 'x.parquet'}" for k in ("train", "val")]
    words = [w for w in lines if not w.startswith(("data.train_files", "data.val_files"))] + data
    verl = run_cli("check", "--gpus", "8xH100-80GB", "--verl", "--", *words)
    assert "verl.preflight_ok" in verl.stdout and verl.returncode == 0, verl.stdout + verl.stderr
