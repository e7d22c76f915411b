"""LoRA served by vLLM from FSDP1 on one GPU, which verl 0.9.1 + vLLM 0.24 hang on: the check's rule
``rollout.lora_fsdp1_one_gpu`` and the advisor (which never offers such a config, and moves a plan off it) read it.
Pure; takes the resolved values (a mapping, or anything with ``get``)."""

from __future__ import annotations

from collections.abc import Mapping

from wizard.core.verl.keys import REF, A, M, R

# what takes a plan off it: FSDP2 for the actor and its reference (the same run on FSDP2 trained)
FSDP2 = ((f"{A}.strategy", "fsdp2"), (f"{REF}.strategy", "fsdp2"))


def _int(values: Mapping, key: str) -> int | None:
    v = values.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def lora_fsdp1_one_gpu(values: Mapping) -> int | None:
    """The LoRA rank of a plan verl hangs on at its first weight sync, else None: LoRA (``model.lora_rank``, what
    verl's FSDP engine reads: workers/engine/fsdp/transformer_impl.py) not merged, vLLM, the actor on FSDP1
    (strategy=fsdp) and one GPU in all. verl 0.9.1 handed vLLM 0.24 an adapter with no LoRA weights; vLLM's worker
    died on a StopIteration in _create_merged_loras_inplace and the run hung with no step done (seen twice on an H200,
    bench/data/verl_real/grpo-0.5b-lora32-fsdp1-u0.06; the same run with FSDP2 trained). Only what was seen is
    flagged: FSDP1 on several GPUs and rollout.layered_summon were not tried."""
    rank = _int(values, f"{M}.lora_rank") or 0
    lora = values.get(f"{M}.lora") or {}
    if isinstance(lora, Mapping) and lora.get("merge", False):
        return None
    if rank <= 0 or values.get(f"{R}.name") != "vllm" or values.get(f"{A}.strategy") != "fsdp":
        return None
    per_node, nodes = _int(values, "trainer.n_gpus_per_node"), _int(values, "trainer.nnodes")
    if per_node is None or nodes is None or per_node * nodes != 1:
        return None
    return rank
