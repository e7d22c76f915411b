"""The rollout engines as the memory estimate sizes them (:class:`EngineConfig`): verl's rollout keys, then the
``engine_kwargs.<engine>`` verl passes after them (so they win), those the estimate does not model named in a note.
Split from :mod:`wizard.core.memory.config` (the trainer's side). Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from wizard.core.memory.readers import flag_at as _flag, float_at as _float, int_at as _int
from wizard.core.memory.sglang import SglangArgs
from wizard.core.memory.vision import NO_SETTINGS, MmProfile
from wizard.core.placement.pools import lora_rank, replica_size, truthy
from wizard.core.verl.keys import RM, M, R


@dataclass(frozen=True)
class EngineConfig:
    name: str
    util: float
    tp: int
    dp: int
    pp: int
    max_num_seqs: int
    max_num_batched_tokens: int
    max_model_len: int | None
    enforce_eager: bool
    free_cache_engine: bool
    capture_sizes: object
    # engine_kwargs.vllm.kv_cache_memory_bytes: vLLM takes exactly this KV cache and does not size it from
    # gpu_memory_utilization (gpu_worker.determine_available_memory returns it before profiling)
    kv_cache_bytes: int | None = None
    # engine_kwargs that size the engine's memory and that the estimate does not read ("key=value"), said in a note
    unread_kwargs: tuple[str, ...] = ()
    # SGLang: engine_kwargs.sglang that size its memory beyond the rollout keys (None for other engines)
    sglang: SglangArgs | None = None
    # vLLM: what shapes its profile of a vision tower (skip_mm_profiling, limit_mm_per_prompt, max_pixels)
    mm: MmProfile = NO_SETTINGS
    # vLLM's enable_prefix_caching (on by default): a prompt's n samples share its prefill
    prefix_caching: bool = True
    # the agent-loop workers that score and hand on the samples (rollout.agent.num_workers, verl's default 8)
    agent_workers: int = 8


# engine_kwargs the estimate reads: the engine's argument -> the rollout field it replaces (verl passes them last)
_KWARG_FIELDS = {
    "vllm": {"gpu_memory_utilization": "util", "max_num_seqs": "max_num_seqs",
             "max_num_batched_tokens": "max_num_batched_tokens", "max_model_len": "max_model_len",
             "enforce_eager": "enforce_eager"},
    "sglang": {"mem_fraction_static": "util", "max_running_requests": "max_num_seqs",
               "disable_cuda_graph": "enforce_eager"},
}
# engine_kwargs that change the engine's memory and that the estimate does not model: named in a note, not guessed
_UNREAD_KWARGS = {
    "vllm": ("kv_cache_dtype", "cpu_offload_gb", "num_gpu_blocks_override", "quantization", "kv_offloading_size",
             "max_num_partial_prefills", "cudagraph_capture_sizes", "compilation_config"),
    "sglang": ("kv_cache_dtype", "cpu_offload_gb", "quantization", "cuda_graph_bs", "context_length",
               "enable_dp_attention", "speculative_algorithm"),
}
# engine_kwargs.sglang the estimate reads into SglangArgs (server_args.py of sglang 0.5.12 names them)
_SGLANG_ARGS = ("chunked_prefill_size", "max_prefill_tokens", "cuda_graph_max_bs", "max_total_tokens")


def _engine(values: Mapping, prefix: str, fallback_name: str | None = None) -> EngineConfig:
    tp, dp, pp = replica_size(values, prefix)
    name = values.get(f"{prefix}.name")
    name = name if isinstance(name, str) and name not in ("???",) else (fallback_name or "vllm")
    fields = dict(
        util=_float(values, f"{prefix}.gpu_memory_utilization"),
        max_num_seqs=_int(values, f"{prefix}.max_num_seqs", 1) or 256,
        max_num_batched_tokens=_int(values, f"{prefix}.max_num_batched_tokens", 1) or 8192,
        max_model_len=_int(values, f"{prefix}.max_model_len"),
        enforce_eager=_flag(values, f"{prefix}.enforce_eager"))
    kwargs = _engine_kwargs(values, prefix, name)
    for arg, target in _KWARG_FIELDS.get(name, {}).items():
        value = _kwarg(kwargs, arg, fields[target])
        if value is not None:
            fields[target] = value
    pinned = _kwarg(kwargs, "kv_cache_memory_bytes", 0) if name == "vllm" else None
    unread = tuple(f"{prefix}.engine_kwargs.{name}.{k}={kwargs[k]}" for k in _UNREAD_KWARGS.get(name, ())
                   if kwargs.get(k) not in (None, "auto", 0, False, "", {}, []))
    if name == "vllm" and "kv_cache_memory_bytes" in kwargs and not (pinned and pinned > 0):
        unread += (f"{prefix}.engine_kwargs.vllm.kv_cache_memory_bytes={kwargs['kv_cache_memory_bytes']!r} "
                   "(not a whole number of bytes)",)
    workers = _int(values, f"{prefix}.agent.num_workers")
    return EngineConfig(
        name=name, tp=tp, dp=dp, pp=pp, **fields,
        prefix_caching=values.get(f"{prefix}.enable_prefix_caching") is not False,
        agent_workers=workers if workers and workers > 0 else 8,
        mm=_mm_profile(values, prefix, kwargs) if name == "vllm" else NO_SETTINGS,
        free_cache_engine=_flag(values, f"{prefix}.free_cache_engine"),
        capture_sizes=values.get(f"{prefix}.cudagraph_capture_sizes"),
        kv_cache_bytes=pinned if pinned and pinned > 0 else None, unread_kwargs=unread,
        sglang=_sglang_args(values, kwargs) if name == "sglang" else None)


def _mm_profile(values: Mapping, prefix: str, kwargs: Mapping) -> MmProfile:
    """engine_kwargs.vllm that shape vLLM's profile of a vision tower; verl's ``limit_images`` replaces
    ``limit_mm_per_prompt`` with ``{"image": N}`` (vllm_async_server.py:289-290)."""
    limits = kwargs.get("limit_mm_per_prompt")
    images = _int(values, f"{prefix}.limit_images", 1)
    if images:
        limits = {"image": images}
    limits = limits if isinstance(limits, Mapping) else {}

    def allowed(kind: str) -> bool:
        n = limits.get(kind)
        n = n.get("count") if isinstance(n, Mapping) else n  # {"image": {"count": 1, ...}} in newer vLLM
        return not (isinstance(n, int) and not isinstance(n, bool) and n == 0)

    proc = kwargs.get("mm_processor_kwargs")
    pixels = proc.get("max_pixels") if isinstance(proc, Mapping) else None
    return MmProfile(skip=kwargs.get("skip_mm_profiling") is True, images=allowed("image"), videos=allowed("video"),
                     max_pixels=pixels if isinstance(pixels, int) and not isinstance(pixels, bool) and pixels > 0
                     else None)


def _sglang_args(values: Mapping, kwargs: Mapping) -> SglangArgs:
    """engine_kwargs.sglang that size SGLang's memory; LoRA is served as an adapter unless model.lora.merge (verl
    sglang_rollout/utils.py:77-90: its sleep then keeps the base weights)."""
    read = {}
    for key in _SGLANG_ARGS:
        v = kwargs.get(key)
        if isinstance(v, int) and not isinstance(v, bool) and (v > 0 or (key == "chunked_prefill_size" and v == -1)):
            read[key] = v
    lora = values.get(f"{M}.lora")
    merge = isinstance(lora, Mapping) and bool(lora.get("merge"))
    backend = kwargs.get("attention_backend")
    splits = kwargs.get("triton_attention_num_kv_splits")
    if isinstance(splits, int) and not isinstance(splits, bool) and splits > 0:
        read["triton_kv_splits"] = splits
    return SglangArgs(**read, disable_piecewise_cuda_graph=kwargs.get("disable_piecewise_cuda_graph") is True,
                      lora_adapter=lora_rank(values) > 0 and not merge,
                      **({"attention_backend": backend} if isinstance(backend, str) and backend else {}))


def _engine_kwargs(values: Mapping, prefix: str, name: str) -> Mapping:
    """The engine's own arguments under ``<prefix>.engine_kwargs.<name>``; verl drops the null ones."""
    kwargs = values.get(f"{prefix}.engine_kwargs")
    own = kwargs.get(name) if isinstance(kwargs, Mapping) else None
    return {k: v for k, v in own.items() if v is not None} if isinstance(own, Mapping) else {}


def _kwarg(kwargs: Mapping, key: str, like: object):
    """``kwargs[key]`` when it is the kind of value ``like`` is (a flag, a count, a fraction), else None."""
    v = kwargs.get(key)
    if isinstance(like, bool):
        return v if isinstance(v, bool) else None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
        return None
    if isinstance(like, float):
        return float(v)
    return int(v) if float(v).is_integer() and v > 0 else None


def read_engines(values: Mapping) -> dict[str, EngineConfig]:
    """The rollout (and reward-model) engines as the estimate sizes them, without the trainer's keys (whatever the
    training engine: the engine_kwargs finding needs no FSDP config)."""
    return {role: eng for role, eng in all_engines(values).items() if role != "teacher"}


def all_engines(values: Mapping) -> dict[str, EngineConfig]:
    """The rollout engine, the reward model's where it is enabled, and a distillation teacher's (as verl sizes it)."""
    engines = {"rollout": _engine(values, R)}
    if truthy(values, f"{RM}.enable"):
        engines["reward"] = _engine(values, f"{RM}.rollout", engines["rollout"].name)
    engines["teacher"] = EngineConfig(name=engines["rollout"].name, util=0.5, tp=2, dp=1, pp=1, max_num_seqs=1024,
                                      max_num_batched_tokens=8192, max_model_len=None, enforce_eager=True,
                                      free_cache_engine=True, capture_sizes=None)
    return engines
