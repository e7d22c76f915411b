"""verl 0.9.1's first LoRA weight sync, and the send buffer its largest base weight must fit in.

With LoRA served as an adapter (``model.lora.merge=false``, verl's default) and vLLM started from dummy weights
(``rollout.load_format=dummy``, verl's default: ``base_sync_done = "dummy" not in load_format``,
verl/workers/engine_workers.py:673), the first weight sync sends the whole base model. ``collect_lora_params``
(verl/utils/fsdp_utils.py:761-772) copies each base weight to the CPU at the trainer's dtype (fp32 unless
``fsdp_config.model_dtype`` says otherwise), and ``BucketedWeightSender.send_weights``
(verl/workers/rollout/vllm_rollout/bucketed_weight_transfer.py:133-146) packs the weights into a GPU buffer of
``checkpoint_engine.update_weights_bucket_megabytes`` (2048 by default). A weight larger than the buffer goes
through ``_direct_send_large_weight`` (:222-237) as a CUDA IPC handle, which a CPU tensor does not have: the vLLM
worker's ``rebuild_ipc`` (:44-51) fails with ``IndexError: list assignment index out of range`` and the trainer
waits for it without end.

Measured on the H200 (bench/data/verl_real/advised-grpo-7b-full-1gpu, 2026-12-05): Qwen2.5-7B's shapes with LoRA
rank 32 on FSDP2; its fp32 embedding is 152,064 x 3,584 x 4 B = 2,079 MiB, over the 2,048 MiB default; the worker died
at the first sync, and the run had done no step when it was stopped at 584 s. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from wizard.core.memory import terms as mt
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.keys import A, AF, M, R

BUCKET_KEY = f"{R}.checkpoint_engine.update_weights_bucket_megabytes"
LOAD_FORMAT_KEY = f"{R}.load_format"
BACKEND_KEY = f"{R}.checkpoint_engine.backend"
DEFAULT_BUCKET_MB = 2048
# what verl reads to decide the first sync's path (a rule that uses base_sync_blocked asks for these)
KEYS = (f"{R}.name", f"{M}.lora", f"{M}.lora_rank", LOAD_FORMAT_KEY, BUCKET_KEY, f"{AF}.model_dtype", f"{A}.strategy",
        f"{R}.layered_summon", BACKEND_KEY)


@dataclass(frozen=True)
class BaseSyncBlock:
    """The first LoRA sync's largest base weight, over the send buffer."""

    largest_bytes: int
    dtype: str
    bucket_mb: int
    needed_mb: int  # the smallest power-of-two buffer (MiB) that holds it

    @property
    def largest_mib(self) -> float:
        return self.largest_bytes / 2**20


def _bucket_mb(values: Mapping) -> int:
    v = values.get(BUCKET_KEY)
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else DEFAULT_BUCKET_MB


def served_as_adapter(values: Mapping) -> bool:
    """LoRA on an FSDP trainer served to vLLM as an adapter, not merged (verl sleeps the engine at level 1 then,
    keeping its weights on the CPU: vllm_async_server.py:1289-1303)."""
    # verl's FSDP engine turns LoRA on from model.lora_rank alone (workers/engine/fsdp/transformer_impl.py:162;
    # model.lora.rank is the Megatron engine's)
    rank = values.get(f"{M}.lora_rank")
    if not isinstance(rank, int) or isinstance(rank, bool) or rank <= 0:
        return False
    if str(values.get(f"{R}.name") or "vllm") != "vllm":
        return False
    lora = values.get(f"{M}.lora")
    return not (isinstance(lora, Mapping) and lora.get("merge") is True)


def sends_base(values: Mapping) -> bool:
    """The first weight sync sends the whole base model: an adapter served to vLLM started from dummy weights, by an
    FSDP trainer. ``collect_lora_params`` (verl/utils/fsdp_utils.py:761-772) then moves the model to the CPU and
    gathers each weight whole (``full_tensor().cpu()``) on every rank."""
    if not served_as_adapter(values):
        return False
    if "dummy" not in str(values.get(LOAD_FORMAT_KEY) or "dummy"):
        return False
    if values.get(f"{R}.layered_summon") is True:  # verl refuses that with dummy weights before it sends anything
        return False
    return str(values.get(f"{A}.strategy") or "fsdp") in ("fsdp", "fsdp2")


def base_sync_blocked(values: Mapping, actor: ModelFacts | None) -> BaseSyncBlock | None:
    """The block when this config's first weight sync would send a base weight the bucketed path cannot take; None
    when it will not (no LoRA, LoRA merged, vLLM loading the base weights itself, another engine or trainer, a
    buffer large enough, or the model unknown)."""
    if actor is None or not sends_base(values):
        return None
    # only the naive backend goes through the bucketed sender (engine_workers.py:755-758: any other sends
    # through its checkpoint engine)
    if str(values.get(BACKEND_KEY) or "naive") != "naive":
        return None
    dtype = str(values.get(f"{AF}.model_dtype") or "fp32")
    largest = mt.largest_weight(actor, mt.dtype_bytes(dtype))
    bucket = _bucket_mb(values)
    if largest <= bucket << 20:
        return None
    return BaseSyncBlock(largest_bytes=largest, dtype=dtype, bucket_mb=bucket,
                         needed_mb=1 << math.ceil(math.log2(largest / 2**20)))
