"""The device campaign's edits to verl (bench/real/patch_verl.py) apply to verl 0.9.1 as installed, and the phase
marks they add are what bench/real_records.py reads: a campaign whose patch silently missed would record no phases."""

import importlib.util
import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, need_verl

FILES = ("verl/utils/profiler/performance.py", "verl/utils/model.py")


def test_the_campaign_patch_applies_to_verl_091_and_writes_phase_marks(tmp_path, monkeypatch):
    need_verl()
    installed = Path(importlib.util.find_spec("verl").origin).parents[1]
    for rel in FILES:
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(installed / rel, tmp_path / rel)
    out = subprocess.run([sys.executable, str(ROOT / "bench" / "real" / "patch_verl.py"), str(tmp_path)],
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout
    assert "NOT APPLIED" not in out.stdout
    assert 'attn_implementation="sdpa"' in (tmp_path / FILES[1]).read_text()
    # the patched module's note, run as verl would run it: one JSON line per mark in $VERL_PHASE_LOG
    log = tmp_path / "phases.jsonl"
    monkeypatch.setenv("VERL_PHASE_LOG", str(log))
    spec = importlib.util.spec_from_file_location("patched_performance", tmp_path / FILES[0])
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module._phase_note("mark", "Before resume weights")  # what the patched log_gpu_memory_usage calls first
    assert 'def log_gpu_memory_usage(head: str, logger: logging.Logger = None, level=logging.DEBUG, rank: int = 0):\n' \
        '    _phase_note("mark", head)' in (tmp_path / FILES[0]).read_text()
    with module.simple_timer("gen", {}):
        pass
    marks = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(m["kind"], m["name"]) for m in marks] == [("mark", "Before resume weights"), ("start", "gen"), ("end", "gen")]
    # a second run of the patch changes nothing
    again = subprocess.run([sys.executable, str(ROOT / "bench" / "real" / "patch_verl.py"), str(tmp_path)],
                           capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout.count("already") == 3
