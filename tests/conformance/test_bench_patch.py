"""The device campaign's edits to verl (bench/real/patch_verl.py) apply to verl 0.9.1 as installed, and the phase
marks they add are what tests/helpers/real_records.py reads: a campaign whose patch silently missed would record no phases."""

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
    # with a GPU (torch.cuda stood in for: none here) each sync's mark carries torch's counters and resets the peak
    import torch

    resets = []
    for name, value in {"is_available": True, "is_initialized": True, "memory_allocated": 1 << 30,
                        "memory_reserved": 2 << 30, "max_memory_allocated": 3 << 30}.items():
        monkeypatch.setattr(torch.cuda, name, lambda value=value: value)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: resets.append(1))
    module._phase_note("mark", "Before resume weights")  # what the patched log_gpu_memory_usage calls first
    module._phase_note("mark", "After update_weights")
    monkeypatch.undo()
    monkeypatch.setenv("VERL_PHASE_LOG", str(log))
    assert 'def log_gpu_memory_usage(head: str, logger: logging.Logger = None, level=logging.DEBUG, rank: int = 0):\n' \
        '    _phase_note("mark", head)' in (tmp_path / FILES[0]).read_text()
    with module.simple_timer("gen", {}):
        pass
    marks = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(m["kind"], m["name"]) for m in marks] == [("mark", "Before resume weights"), ("mark", "After update_weights"),
                                                        ("start", "gen"), ("end", "gen")]
    assert marks[0]["peak_reset"] is True and "peak_reset" not in marks[1] and resets == [1]
    assert (marks[0]["allocated"], marks[0]["reserved"], marks[0]["max_allocated"]) == (1 << 30, 2 << 30, 3 << 30)
    # a second run of the patch changes nothing
    again = subprocess.run([sys.executable, str(ROOT / "bench" / "real" / "patch_verl.py"), str(tmp_path)],
                           capture_output=True, text=True)
    assert again.returncode == 0 and again.stdout.count("already") == 3
