"""The committed key schema is exactly what the installed verl gives (nothing typed by hand)."""

import json
import subprocess
import sys
from importlib import resources

from tests.conftest import ROOT


def test_snapshot_matches_the_installed_verl(tmp_path, verl_config_dir):
    out = tmp_path / "schema.json"
    probe = ROOT / "wizard" / "adapters" / "verl_env" / "probes" / "extract_verl_schema.py"
    subprocess.run([sys.executable, str(probe), "--out", str(out)], check=True, capture_output=True, timeout=300)
    fresh = json.loads(out.read_text())
    snapshot_path = resources.files("wizard.resources") / "verl-schema" / f"{fresh['verl_version']}.json"
    assert snapshot_path.is_file(), f"no snapshot for verl {fresh['verl_version']}: add the file this test wrote"
    snapshot = json.loads(snapshot_path.read_text())
    assert fresh == snapshot, "verl's config tree drifted from the snapshot: regenerate it with the probe script"


def test_snapshot_covers_every_engine_and_the_keys_people_set(schema):
    assert set(schema.engines) >= {"dp", "megatron"}
    keys = schema.variant().keys
    for key in ("data.train_batch_size", "actor_rollout_ref.rollout.name", "critic.fsdp.param_offload", "trainer.v1.trainer_mode"):
        assert key in keys
    assert keys["actor_rollout_ref.rollout.name"].type == "missing"
    assert not keys["critic.ppo_infer_max_token_len_per_gpu"].in_yaml  # a dataclass field: needs '+'


def test_key_docs_match_the_comments_in_the_installed_verl(tmp_path, verl_config_dir):
    out = tmp_path / "docs.json"
    probe = ROOT / "wizard" / "adapters" / "verl_env" / "probes" / "extract_verl_key_docs.py"
    subprocess.run([sys.executable, str(probe), "--out", str(out)], check=True, capture_output=True, timeout=300)
    fresh = json.loads(out.read_text())
    committed = resources.files("wizard.resources") / "verl-key-docs" / f"{fresh['verl_version']}.json"
    assert committed.is_file(), f"no key docs for verl {fresh['verl_version']}: add the file this test wrote"
    assert fresh == json.loads(committed.read_text()), "verl's key comments drifted: regenerate with the probe"


def test_key_help_explains_the_keys_newcomers_set(schema):
    from wizard.adapters.files.resources import load_key_docs
    from wizard.core.verl.key_help import key_help

    docs = load_key_docs()
    text = key_help(schema, docs, "actor_rollout_ref.rollout.gpu_memory_utilization")
    assert "Fraction of GPU memory" in text and "default: 0.5" in text
    # a key documented in a file several packages use gets the right package's words
    assert "Learning rate" in key_help(schema, docs, "critic.optim.lr")
    assert "+critic.ppo_infer_max_token_len_per_gpu" in key_help(schema, docs, "critic.ppo_infer_max_token_len_per_gpu")
    assert "Not a key" in key_help(schema, docs, "actor_rollout_ref.rollout.gpu_mem_util")
