"""One composition per CLI call: ``check`` and ``plan`` judge a config and estimate its memory from one composition
of verl's config (the findings and the memory plan are read from the same resolved values)."""

import json

from tests.helpers.cli import run_cli
from tests.helpers.compositions import counted_compositions


def test_plan_composes_once_and_its_verdict_agrees_with_the_memory_findings(monkeypatch):
    with counted_compositions(monkeypatch) as made:
        proc = run_cli("plan", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    assert len(made) == 1
    doc = json.loads(proc.stdout)
    assert doc["verdict"] is not None and doc["gpus"], doc  # the memory plan came from that one composition
    oom = any(f["rule"] == "memory.gpu_oom" for f in doc["findings"])
    assert oom == (doc["verdict"] == "does_not_fit" and doc["fits_up_to_avg_tokens"] is None)


def test_check_composes_once(monkeypatch):
    with counted_compositions(monkeypatch) as made:
        proc = run_cli("check", "--preset", "ppo-8gpu", "--gpus", "8xH100-80GB")
    assert proc.returncode in (0, 1), proc.stderr
    assert len(made) == 1


def test_a_batch_composes_once_per_case(monkeypatch, tmp_path):
    cases = tmp_path / "cases.jsonl"
    cases.write_text("".join(json.dumps({"id": str(i), "overrides": [f"data.train_batch_size={16 * (i + 1)}"]}) + "\n"
                             for i in range(5)))
    with counted_compositions(monkeypatch) as made:
        proc = run_cli("check", "--batch", cases, "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    assert len(made) == 5 and len(proc.stdout.splitlines()) == 5
