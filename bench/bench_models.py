"""How long model facts take: a local folder with a 2-file safetensors checkpoint, a catalogue hub id,
and the CLI check with a local model (process start included) against one without model facts.

The folder holds a Qwen2-layout checkpoint with Qwen2.5-7B's tensor list (28 layers, 339 tensors,
as many header entries as the real one) at tiny sizes, so the header reads are realistic.
Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_models.py
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import fmt, timed

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

R = "actor_rollout_ref.rollout"
BASE = ["algorithm.adv_estimator=grpo", f"{R}.name=vllm", f"{R}.n=4", "data.train_batch_size=16",
        "actor_rollout_ref.actor.ppo_mini_batch_size=8", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=1",
        f"{R}.log_prob_micro_batch_size_per_gpu=1", "trainer.n_gpus_per_node=8", "trainer.resume_mode=disable",
        "trainer.logger=[console]", f"{R}.tensor_model_parallel_size=4"]


def cli(args):
    return subprocess.run([sys.executable, "-m", "wizard", *args], capture_output=True, text=True, cwd=ROOT)


def main() -> None:
    from tests.helpers.tiny_model import write_tiny_model
    from wizard.adapters.files.model_facts import load_catalogue, load_model_facts

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_tiny_model(Path(tmp) / "qwen-7b-layout", shards=2, config={
            "hidden_size": 56, "intermediate_size": 64, "num_hidden_layers": 28, "num_attention_heads": 14,
            "num_key_value_heads": 2, "tie_word_embeddings": False})
        index = json.loads((folder / "model.safetensors.index.json").read_text())
        print(f"local folder: 2 safetensors files, {len(index['weight_map'])} tensors in their headers")

        t0 = time.perf_counter()
        load_catalogue()
        print(f"catalogue load (first time, YAML)            {1000 * (time.perf_counter() - t0):8.2f} ms")
        print(f"facts of the local folder                    {fmt(timed(lambda: load_model_facts(str(folder)), 50), 2)}")
        print(f"facts of a catalogue id                      "
              f"{fmt(timed(lambda: load_model_facts('Qwen/Qwen2.5-7B-Instruct'), 200), 2)}")

        from wizard.cli.check import check_one

        def in_process(path):
            return lambda: check_one(None, [*BASE, f"actor_rollout_ref.model.path={path}"], None, False, None)

        in_process(folder)()  # warm the schema, moves and Hydra once
        print(f"check in-process, local model                {fmt(timed(in_process(folder), 30), 2)}")
        print(f"check in-process, catalogue id               {fmt(timed(in_process('Qwen/Qwen2.5-7B-Instruct'), 30), 2)}")
        print(f"check in-process, no model facts             {fmt(timed(in_process('hdfs://cluster/models/m'), 30), 2)}")

        local = ["check", "--", *BASE, f"actor_rollout_ref.model.path={folder}"]
        none = ["check", "--", *BASE, "actor_rollout_ref.model.path=hdfs://cluster/models/m"]
        hub = ["check", "--", *BASE, "actor_rollout_ref.model.path=Qwen/Qwen2.5-7B-Instruct"]
        assert "models.tp_heads" in cli(local).stdout  # the model rules did run
        print(f"CLI check, local model (facts + 2nd check)   {fmt(timed(lambda: cli(local), 5), 2)}")
        print(f"CLI check, catalogue id                      {fmt(timed(lambda: cli(hub), 5), 2)}")
        print(f"CLI check, no model facts (remote path)      {fmt(timed(lambda: cli(none), 5), 2)}")

        for label, path in (("one local folder", folder), ("no model facts", "hdfs://cluster/models/m")):
            cases = Path(tmp) / "cases.jsonl"
            cases.write_text("\n".join(json.dumps({"id": str(i), "overrides": BASE[:-1] + [
                f"actor_rollout_ref.model.path={path}", f"{R}.tensor_model_parallel_size={1 + i % 4}"]})
                for i in range(100)))
            print(f"CLI check --batch, 100 cases, {label:17s}{fmt(timed(lambda: cli(['check', '--batch', str(cases)]), 3), 2)}")


if __name__ == "__main__":
    main()
