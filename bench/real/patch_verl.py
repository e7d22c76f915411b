"""Two edits to the installed verl 0.9.1 for the memory measurements (run once after install.sh):

* phase marks: verl's ``_timer`` (behind every ``marked_timer("gen"|"old_log_prob"|...)`` of the trainer) and
  ``log_gpu_memory_usage`` (the workers' "After resume kv_cache", ...) also append a JSON line with the wall
  time to ``$VERL_PHASE_LOG``, so the NVML samples can be cut into verl's own phases. At "Before resume weights"
  torch's peak counter is reset (the mark says ``peak_reset``), so each sync's own peak is exact: verl's
  ``actor/perf/max_memory_*`` metrics then count from the last sync, which the update comes after.
* critic attention: verl's ``load_valuehead_model`` (verl/utils/model.py) passes
  ``attn_implementation="flash_attention_2"`` itself, whatever the overrides say, and there is no flash-attn
  wheel for the device; it is set to "sdpa" so that PPO with a critic can be measured at all. Every record
  says so: the critic's attention activations differ from a run with flash-attn.

    python3 patch_verl.py SITE_DIR      -> prints what it changed; exit 1 when an edit did not apply
"""

from __future__ import annotations

import sys
from pathlib import Path

NOTE = '''
def _phase_note(kind, name, **extra):
    import json as _json, os as _os, time as _time
    path = _os.environ.get("VERL_PHASE_LOG")
    if not path:
        return
    try:
        import torch as _torch
        if _torch.cuda.is_available() and _torch.cuda.is_initialized():
            extra.setdefault("allocated", _torch.cuda.memory_allocated())
            extra.setdefault("reserved", _torch.cuda.memory_reserved())
            extra.setdefault("max_allocated", _torch.cuda.max_memory_allocated())
            if name == "Before resume weights":  # each weight sync's own torch peak (it lasts 0.1-0.2 s)
                _torch.cuda.reset_peak_memory_stats()
                extra["peak_reset"] = True
    except Exception:
        pass
    with open(path, "a") as f:
        f.write(_json.dumps({"t": _time.time(), "pid": _os.getpid(), "kind": kind, "name": name, **extra}) + "\\n")

'''

EDITS = [
    ("verl/utils/profiler/performance.py",
     "def log_gpu_memory_usage(head: str, logger: logging.Logger = None, level=logging.DEBUG, rank: int = 0):\n",
     NOTE + "def log_gpu_memory_usage(head: str, logger: logging.Logger = None, level=logging.DEBUG, rank: int = 0):\n"
     "    _phase_note(\"mark\", head)\n"),
    ("verl/utils/profiler/performance.py",
     "    with Timer(name=name, logger=None) as timer:\n        yield\n",
     "    _phase_note(\"start\", name)\n    with Timer(name=name, logger=None) as timer:\n        yield\n"
     "    _phase_note(\"end\", name)\n"),
    ("verl/utils/model.py", 'attn_implementation="flash_attention_2",', 'attn_implementation="sdpa",'),
]


def main(argv: list[str]) -> int:
    site = Path(argv[1] if len(argv) > 1 else "/tmp/site")
    ok = True
    for rel, old, new in EDITS:
        path = site / rel
        text = path.read_text()
        if new in text:
            print(f"already: {rel}")
            continue
        n = text.count(old)
        if n == 0:
            print(f"NOT APPLIED: {rel}: {old[:60]!r} not found")
            ok = False
            continue
        path.write_text(text.replace(old, new))
        print(f"patched {rel} ({n}x)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
