"""The Megatron engine's layout as verl 0.9.1 reads it (``actor_rollout_ref.actor.megatron``: TP, PP, VPP, CP, EP, the
distributed optimizer, recompute, offloads), and the splits of a model megatron-core refuses at start. Split from
:mod:`wizard.core.memory.megatron`, which sizes what each GPU holds under such a layout; the check's rules and the
advisor read the layout here too. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from wizard.core.memory import terms as mt
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.flags import is_on, truthy
from wizard.core.verl.keys import A, REF

AM = f"{A}.megatron"


def positive_int(values: Mapping, key: str, default: int) -> int:
    """The key's value where it is an int of 1 or more, else ``default`` (a size of 0 is the check's to report)."""
    v = values.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 1 else default


@dataclass(frozen=True)
class MegatronConfig:
    """actor_rollout_ref.actor.megatron as verl 0.9.1 reads it (verl/trainer/config/engine/megatron.yaml)."""

    world: int
    tp: int = 1
    pp: int = 1
    vpp: int | None = None
    cp: int = 1
    ep: int = 1
    etp: int = 1  # expert_tensor_parallel_size (null: TP)
    sp: bool = True
    dist_opt: bool = True
    param_offload: bool = False
    optimizer_offload: bool = False
    ref_param_offload: bool = False
    recompute: str = "none"  # none | selective | full (override_transformer_config.recompute_granularity)
    recompute_method: str | None = None  # uniform | block
    recompute_layers: int = 1
    grads_fp32: bool = True  # verl's grad_reduce_in_fp32 default (override_ddp_config may turn it off)
    param_bytes: int = 2  # dtype: bfloat16 | float16
    # megatron-core's CPU optimizer (optim.override_optimizer_config.optimizer_cpu_offload, passed through to its
    # OptimizerConfig by verl/utils/megatron/optimizer.py:210-216): the fraction of the main params and Adam states
    # kept and stepped on the host (optimizer_offload_fraction; megatron-core's default 0.0 offloads nothing)
    cpu_optimizer: float = 0.0
    # the CPU optimizer holds the fp32 main params on the host only with the precision-aware optimizer: without it
    # megatron-core's distributed optimizer makes them on the GPU (distrib_optimizer.py
    # _build_model_and_main_param_groups: shard_model_param.clone().float()) and the CPU optimizer steps a host copy
    # of them (cpu_offloading/hybrid_optimizer.py _get_sub_optimizer_param_groups)
    cpu_main_params: bool = False
    precision_aware: bool = False  # use_precision_aware_optimizer (megatron-core needs the distributed optimizer)
    # an optimizer override the estimate does not model (its reason), e.g. the precision-aware optimizer
    optimizer_unmodelled: str | None = None

    @property
    def main_on_gpu(self) -> float:
        """The share of the fp32 main params on the GPU (all of them unless the CPU optimizer holds them)."""
        return 1.0 - self.cpu_optimizer if self.cpu_main_params else 1.0

    @property
    def dp(self) -> int:
        """Data-parallel ranks: world / (TP x PP x CP) (how verl splits a batch)."""
        return max(1, self.world // (self.tp * self.pp * self.cp))

    @property
    def dp_cp(self) -> int:
        """The ranks the distributed optimizer shards dense parameters over (DP x CP)."""
        return max(1, self.world // (self.tp * self.pp))

    @property
    def expert_dp(self) -> int:
        """The ranks it shards routed experts over: world / (ETP x EP x PP)."""
        return max(1, self.world // (self.etp * self.ep * self.pp))


def layout_problems(f: ModelFacts, m: MegatronConfig) -> list[tuple[str, str]]:
    """(key, why) for each way this layout of this model stops Megatron at start (megatron-core 0.19.2):
    attention heads over TP (transformer_config.py:1323, KV heads :1338-1345), layers over PP
    (transformer_block.py:150-152) and over the virtual stages (:169-172), experts over EP, and the GPUs over
    EP x ETP x PP."""
    out = []
    if not tp_fits_heads(f, m.tp):
        out.append(("tensor_model_parallel_size",
                    f"TP {m.tp} does not split {f.num_attention_heads} attention heads / {f.num_kv_heads} KV heads "
                    f"(num_attention_heads must be a multiple of tensor_model_parallel_size, and the KV heads a "
                    f"multiple or a divisor of it)"))
    if f.num_layers and f.num_layers % m.pp:
        out.append(("pipeline_model_parallel_size",
                    f"PP {m.pp} does not divide the {f.num_layers} layers (num_layers % pipeline_model_parallel_size)"))
    elif f.num_layers and m.vpp and (f.num_layers // m.pp) % m.vpp:
        out.append(("virtual_pipeline_model_parallel_size",
                    f"VPP {m.vpp} does not divide the {f.num_layers // m.pp} layers of each pipeline rank"))
    if f.num_experts and (f.num_experts % m.ep or m.world % (m.etp * m.ep * m.pp)):
        out.append(("expert_model_parallel_size",
                    f"EP {m.ep} x ETP {m.etp} x PP {m.pp} does not divide the {f.num_experts} experts or the "
                    f"{m.world} GPUs"))
    return out


def tp_fits_heads(f: ModelFacts, tp: int) -> bool:
    """Megatron splits the attention heads over TP; the KV heads split over it or are replicated to it."""
    kv = f.num_kv_heads or f.num_attention_heads
    return f.num_attention_heads % tp == 0 and (kv % tp == 0 or tp % kv == 0)


def tp_choices(model: ModelFacts | None, per_node: int, world: int, other: int = 1) -> list[int]:
    """The Megatron TPs the advisor tries: 1, 2, 4 or 8 within a node, dividing the world with the other model
    parallel sizes (``other``: PP x CP), where the model's heads split."""
    return [t for t in (1, 2, 4, 8) if t <= per_node and per_node % t == 0 and world % (t * other) == 0
            and (model is None or tp_fits_heads(model, t))]


OPT_OVERRIDE = f"{A}.optim.override_optimizer_config"
# megatron-core OptimizerConfig fields that change what the optimizer holds, beyond the CPU offload read here
LOWER_PRECISION = ("main_grads_dtype", "main_params_dtype", "exp_avg_dtype", "exp_avg_sq_dtype")


FP32 = {"fp32", "float32", "torch.float32", "32", "none"}  # what verl's PrecisionType reads as fp32 (and unset)


def _on(v: object) -> bool:
    """A switch as megatron-core's OptimizerConfig takes it from verl: True, or a YAML string "true"."""
    return is_on(v, ("true",))


def optimizer_overrides(values: Mapping) -> tuple[float, bool, bool, str | None]:
    """(the fraction of the optimizer on the CPU, whether its main params go there too, whether the precision-aware
    optimizer is on, why an override is not modelled) from ``optim.override_optimizer_config`` (a mapping, or dotted
    keys under it, applied last by verl: utils/megatron/optimizer.py:210-216) and verl's own
    ``optim.use_precision_aware_optimizer``.

    megatron-core 0.18's CPU optimizer (HybridDeviceOptimizer, optimizer/__init__.py:502-540) is built without the
    precision-aware optimizer's dtypes or remainders: it steps fp32 copies of its fraction on the host and the rest on
    the GPU. Without the precision-aware optimizer the distributed optimizer makes every fp32 main param on the GPU
    first (distrib_optimizer.py: shard_model_param.clone().float()) and the CPU optimizer steps a host copy; with it
    there is no GPU main param, so the main params leave with the CPU optimizer's fraction. Without the CPU optimizer
    the precision-aware optimizer keeps the main params' remainders and lower-precision states on the GPU: not
    modelled. verl's own key also sets the gradient buffer's dtype (main_grads_dtype): modelled only at fp32."""
    over = values.get(OPT_OVERRIDE)
    over = dict(over) if isinstance(over, Mapping) else {}
    over.update({k[len(OPT_OVERRIDE) + 1:]: v for k, v in values.items()
                 if isinstance(k, str) and k.startswith(OPT_OVERRIDE + ".")})
    verl_precise = truthy(values, f"{A}.optim.use_precision_aware_optimizer")
    # fp16 params: verl turns it on itself (init_megatron_optim_config, utils/megatron/optimizer.py:159-168)
    fp16 = str(values.get(f"{AM}.dtype")).lower() in ("float16", "fp16", "half")
    set_here = over.get("use_precision_aware_optimizer")
    precise = _on(set_here) if set_here is not None else (verl_precise or fp16)
    fraction = over.get("optimizer_offload_fraction", 0.0)
    if not _on(over.get("optimizer_cpu_offload")):
        fraction = 0.0
    elif isinstance(fraction, bool) or not isinstance(fraction, (int, float)) or not 0 <= fraction <= 1:
        return 0.0, False, precise, f"optimizer_offload_fraction {fraction!r} is not a fraction between 0 and 1"
    why = None
    grads = values.get(f"{A}.optim.main_grads_dtype")
    if verl_precise and str(grads).lower() not in FP32:
        why = f"a {grads} gradient buffer (optim.main_grads_dtype with the precision-aware optimizer) is not modelled"
    elif not precise and any(str(over.get(k, "fp32")).lower() not in FP32 for k in LOWER_PRECISION):
        why = "lower-precision optimizer states (override_optimizer_config's *_dtype) are not modelled"
    elif precise and not fraction:
        why = ("the Megatron precision-aware optimizer without the CPU optimizer is not modelled (it keeps the main "
               "params' remainders and its states' dtypes on the GPU); with optimizer_cpu_offload it is")
    return float(fraction), precise and fraction > 0, precise, why


def read_megatron(values: Mapping, world: int) -> MegatronConfig:
    tp = positive_int(values, f"{AM}.tensor_model_parallel_size", 1)
    vpp = values.get(f"{AM}.virtual_pipeline_model_parallel_size")
    over = values.get(f"{AM}.override_transformer_config")
    over = over if isinstance(over, Mapping) else {}
    ddp = values.get(f"{AM}.override_ddp_config")
    ddp = ddp if isinstance(ddp, Mapping) else {}

    def recompute(key: str):  # a dotted override (the advisor's, or a flat mapping) wins over the section's value
        dotted = f"{AM}.override_transformer_config.{key}"
        return values[dotted] if dotted in values else over.get(key)

    gran, method, layers = (recompute(k) for k in ("recompute_granularity", "recompute_method", "recompute_num_layers"))
    param_offload = truthy(values, f"{AM}.param_offload")
    ref_offload = values.get(f"{REF}.megatron.param_offload")
    dtype = str(values.get(f"{AM}.dtype") or "bfloat16")
    cpu_fraction, cpu_main, precise, optimizer_why = optimizer_overrides(values)
    return MegatronConfig(
        world=max(1, world), tp=tp, pp=positive_int(values, f"{AM}.pipeline_model_parallel_size", 1),
        vpp=vpp if isinstance(vpp, int) and not isinstance(vpp, bool) and vpp > 1 else None,
        cp=positive_int(values, f"{AM}.context_parallel_size", 1), ep=positive_int(values, f"{AM}.expert_model_parallel_size", 1),
        etp=positive_int(values, f"{AM}.expert_tensor_parallel_size", tp),
        sp=values.get(f"{AM}.sequence_parallel") is not False,
        dist_opt=values.get(f"{AM}.use_distributed_optimizer") is not False,
        param_offload=param_offload, optimizer_offload=truthy(values, f"{AM}.optimizer_offload"),
        ref_param_offload=param_offload if not isinstance(ref_offload, bool) else ref_offload,
        recompute=str(gran) if gran in ("full", "selective") else "none",
        recompute_method=str(method) if method in ("uniform", "block") else None,
        recompute_layers=layers if isinstance(layers, int) and not isinstance(layers, bool) and layers >= 1 else 1,
        grads_fp32=ddp.get("grad_reduce_in_fp32") is not False, param_bytes=mt.dtype_bytes(dtype, 2),
        cpu_optimizer=cpu_fraction, cpu_main_params=cpu_main, precision_aware=precise,
        optimizer_unmodelled=optimizer_why)
