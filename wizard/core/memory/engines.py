"""The rollout engines as the memory estimate sizes them (:class:`EngineConfig`): verl's rollout keys, then the
``engine_kwargs.<engine>`` verl passes after them (so they win), those the estimate does not model named in a note.
Split from :mod:`wizard.core.memory.config` (the trainer's side). Pure."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
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
    pinned = vllm_kv_bytes(kwargs.get("kv_cache_memory_bytes"))[0] if name == "vllm" else None
    unread = tuple(f"{prefix}.engine_kwargs.{name}.{k}={kwargs[k]}" for k in _UNREAD_KWARGS.get(name, ())
                   if kwargs.get(k) not in (None, "auto", 0, False, "", {}, []))
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


# ------------------------------------------------------------------------------------------------
# Engine values the engine itself refuses: the rules say so (rollout.memory_fraction_out_of_range,
# rollout.memory_fraction_not_a_number, rollout.kv_cache_memory_bytes) and the estimate is not made for them.

# vLLM parses --kv-cache-memory-bytes with human_readable_int (vllm/utils/argparse_utils.py; arg_utils.py gives the
# flag that type): a lowercase suffix is a power of 1000 (decimals allowed), an uppercase one a power of 1024 (whole
# numbers only), anything else int(text). verl hands every engine_kwargs.vllm value to vLLM's parser as text
# (vllm_rollout/utils.py build_cli_args_from_config: str(v); vllm_async_server.py:456-470).
_HUMAN_INT = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
_DECIMAL = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}
KV_FLAG = "--kv-cache-memory-bytes"


def vllm_kv_bytes(value) -> tuple[int | None, str | None]:
    """engine_kwargs.vllm.kv_cache_memory_bytes as vLLM reads it: (bytes, None), or (None, what vLLM's argument
    parser stops with); (None, None) where verl passes no flag (null, false). 0 is read, and means unset to vLLM."""
    if value is None or value is False:
        return None, None
    if value is True:  # verl passes a bare --kv-cache-memory-bytes
        return None, f"argument {KV_FLAG}: expected one argument"
    if not isinstance(value, (int, float, str)):
        return None, f"argument {KV_FLAG}: invalid human_readable_int value: {str(value)!r}"
    text = str(value).strip()
    match = _HUMAN_INT.fullmatch(text)
    if match:
        number, suffix = match.groups()
        if suffix in _DECIMAL:
            return int(float(number) * _DECIMAL[suffix]), None
        if "." in number:
            return None, (f"argument {KV_FLAG}: Decimals are not allowed with binary suffixes like {suffix}. Did you "
                          f"mean to use {number}{suffix.lower()} instead?")
        return int(number) * _BINARY[suffix], None
    try:
        return int(text), None
    except ValueError:
        return None, f"argument {KV_FLAG}: invalid human_readable_int value: {str(value)!r}"


# the engine argument that is the rollout's memory fraction, and the key of verl's it replaces
FRACTION_ARG = {"vllm": "gpu_memory_utilization", "sglang": "mem_fraction_static"}


@dataclass(frozen=True)
class RefusedValue:
    """An engine setting the engine refuses or cannot start with. ``kind``: fraction_range (a number outside
    (0, 1]), fraction_type (not a number), fraction_not_finite (nan or inf in the rollout key: its own rule),
    kv_bytes (kv_cache_memory_bytes vLLM does not parse, or below 0)."""
    kind: str
    key: str
    value: object
    said: str  # what the engine does with it, in its own words where it has them
    fix: str
    overrides: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        """Why the memory estimate is not made, in one line."""
        engine = "reward model's engine" if self.key.startswith(f"{RM}.") else "rollout engine"
        return (f"the {engine} does not start with {self.key}={self.value!r} (its error is below), so its memory is "
                "not estimated")


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def refused_values(get: Callable[[str], object], prefix: str, name: str) -> list[RefusedValue]:
    """The settings of the rollout at ``prefix`` (its engine ``name``) that the engine refuses: its memory fraction
    (engine_kwargs.<engine>'s if set, verl passes them last) outside (0, 1] or not a number, and vLLM's
    kv_cache_memory_bytes. ``get``: a resolved key's value."""
    arg = FRACTION_ARG.get(name)
    if arg is None:
        return []
    own = get(f"{prefix}.engine_kwargs")
    own = own.get(name) if isinstance(own, Mapping) else None
    kwargs = {k: v for k, v in own.items() if v is not None} if isinstance(own, Mapping) else {}
    out: list[RefusedValue] = []
    in_kwargs = arg in kwargs and not (name == "vllm" and kwargs[arg] is False)  # verl drops a false flag
    key = f"{prefix}.engine_kwargs.{name}.{arg}" if in_kwargs else f"{prefix}.gpu_memory_utilization"
    v = kwargs[arg] if in_kwargs else get(key)
    fix_key = f"++{key}" if in_kwargs else key
    if in_kwargs and name == "vllm" and isinstance(v, str):
        try:
            v = float(v)  # vLLM's parser reads the text as a float
        except ValueError:
            out.append(RefusedValue("fraction_type", key, v, f"argument --gpu-memory-utilization: invalid float value: "
                                    f"{v!r}", f"Set {key} to a fraction in (0, 1], e.g. 0.5, or remove it",
                                    (f"{fix_key}=0.5",)))
            v = None
    if in_kwargs and name == "sglang" and not _is_number(v):
        out.append(RefusedValue(
            "fraction_type", key, v, "verl passes engine_kwargs.sglang after its own arguments "
            "(async_sglang_server.py:317-340), so this replaces mem_fraction_static=gpu_memory_utilization, and SGLang "
            "fails with a TypeError where it sizes its memory with it (1 - mem_fraction_static)",
            f"Set {key} to a fraction in (0, 1], e.g. 0.5, or remove it", (f"{fix_key}=0.5",)))
    elif in_kwargs and name == "vllm" and v is True:
        out.append(RefusedValue("fraction_type", key, v, "argument --gpu-memory-utilization: expected one argument",
                                f"Set {key} to a fraction in (0, 1], e.g. 0.5, or remove it", (f"{fix_key}=0.5",)))
    elif _is_number(v) and not in_kwargs and not math.isfinite(v):  # the rule rollout.memory_fraction_not_a_number
        out.append(RefusedValue("fraction_not_finite", key, v, "vLLM's CacheConfig refuses anything outside 0 < "
                                "gpu_memory_utilization <= 1", f"Set {key}=0.5", (f"{key}=0.5",)))
    elif _is_number(v) and not 0 < v <= 1:
        if name == "vllm":
            bound = "less than or equal to 1" if v > 1 else "greater than 0"
            said = (f"vLLM accepts only 0 < gpu_memory_utilization <= 1 and stops at its start with: 1 validation "
                    f"error for CacheConfig: gpu_memory_utilization: Input should be {bound}")
        elif v > 1:
            said = ("SGLang does not check the range: it sizes its weights and KV pool as this fraction of the memory "
                    "free at its start, more than the GPU has, and fails allocating the pool (CUDA out of memory)")
        else:
            said = ("SGLang does not check the range: with this fraction of the free memory it has no room for a KV "
                    "pool and stops with: Not enough memory. Please try to increase --mem-fraction-static.")
        out.append(RefusedValue("fraction_range", key, v, said,
                                f"Set {key} to a fraction in (0, 1]: 0.5 is verl's default, 0.7-0.9 for a larger "
                                "KV cache", (f"{fix_key}=0.5",)))
    if name == "vllm" and "kv_cache_memory_bytes" in kwargs:
        out += _kv_bytes(prefix, kwargs["kv_cache_memory_bytes"])
    return out


def _kv_bytes(prefix: str, value) -> list[RefusedValue]:
    key = f"{prefix}.engine_kwargs.vllm.kv_cache_memory_bytes"
    n, error = vllm_kv_bytes(value)
    suffixes = ("vLLM reads 10G as 10 GiB (K, M, G, T: powers of 1024, whole numbers) and 10g as 10^10 bytes "
                "(k, m, g, t: powers of 1000)")
    if error is not None:
        whole = int(value) if _is_number(value) and math.isfinite(value) and value > 0 else None
        fix = (f"Give a whole number of bytes, +{key}={whole}, or a size such as 10G; {suffixes}" if whole else
               f"Give the KV cache's size per GPU as a whole number of bytes or a size such as 10G; {suffixes}")
        said = f"vLLM's argument parser stops the server at its start with: {error}"
        if isinstance(value, float):
            said = f"verl passes it as the text {str(value)!r}, and " + said
        return [RefusedValue("kv_bytes", key, value, said, fix, (f"++{key}={whole}",) if whole else ())]
    if n is not None and n < 0:
        return [RefusedValue("kv_bytes", key, value, "vLLM takes it as a KV cache of a negative size and stops at its "
                             "start with: No available memory for the cache blocks",
                             f"Give the KV cache's size per GPU (e.g. 10G), or remove it to size the KV cache from "
                             f"gpu_memory_utilization; {suffixes}")]
    return []


def refused_engine_values(values: Mapping) -> list[RefusedValue]:
    """:func:`refused_values` of the rollout and, where it is enabled, the reward model's engine, as the estimate
    reads them (``values``: resolved keys)."""
    engines = read_engines(values)
    out = refused_values(values.get, R, engines["rollout"].name)
    if "reward" in engines:
        out += refused_values(values.get, f"{RM}.rollout", engines["reward"].name)
    return out
