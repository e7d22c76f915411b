"""The committed key schema is exactly what the installed verl gives (nothing typed by hand)."""

import json
import subprocess
import sys
from importlib import resources

from tests.conftest import ROOT


def test_snapshot_matches_the_installed_verl(tmp_path, verl_config_dir):
    out = tmp_path / "schema.json"
    probe = ROOT / "wizard" / "adapters" / "probes" / "extract_verl_schema.py"
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
