"""The knobs the advisor turns, as :class:`Move` (a named set of value changes), generated from a plan's values.

Tuning keeps what is trained and how (micro-batches, token budgets, gpu_memory_utilization, offload, gradient
checkpointing, FSDP2, rollout TP, the weight sync's buffer); hardware uses more of the GPUs the user has (never
more than the cluster given); a change of method changes what is trained (LoRA with a rank, a smaller model of the
same family) and is labelled so. Moves go both ways: those that save memory and, on a plan with room, those that
spend it on speed (no offload, larger micro-batches, no recomputation). Pure.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from wizard.core.hardware.cluster import Cluster
from wizard.core.memory import terms as mt
from wizard.core.memory.batching import critic_batching
from wizard.core.memory.config import FOLLOWS, read_config
from wizard.core.memory.estimate import MemoryReport
from wizard.core.memory.lora_sync import LOAD_FORMAT_KEY, sends_base
from wizard.core.memory.vision import has_tower
from wizard.core.memory.megatron_layout import OPT_OVERRIDE, layout_problems, read_megatron, tp_fits_heads
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.flags import truthy
from wizard.core.verl.fused_head import fused_head_refused
from wizard.core.verl.keys import CF, REF, A, AF, M, R
from wizard.core.verl.roles import need_critic

TUNING, HARDWARE, METHOD = "tuning", "hardware", "method"
LORA_RANK = 32
LORA_KEY = f"{M}.lora_rank"
# Keys of verl's config classes that its YAML lacks (the V1 critic engine's batching): verl refuses a plain override
# of one ("not in struct") and a '+' of one the plan already sets, so the advisor writes them with '++' (add or
# change). tests/core/test_advice.py holds this set to the schema.
ADDED_KEYS = frozenset({"critic.ppo_infer_max_token_len_per_gpu", f"{CF}.use_dynamic_bsz", f"{CF}.micro_batch_size_per_gpu"})


def override(key: str, text: str) -> str:
    """One of the advisor's changes as a verl override (``text``: the value as Hydra reads it). A key under
    megatron's ``override_optimizer_config`` (an empty mapping in verl's YAML) is added the same way."""
    added = key in ADDED_KEYS or key.startswith(OPT_OVERRIDE + ".")
    return f"{'++' if added else ''}{key}={text}"


@dataclass(frozen=True)
class Move:
    name: str  # the knob, or the whole change where there is no before and after: "param offload"
    changes: tuple[tuple[str, object], ...]
    kind: str = TUNING
    models: tuple[tuple[str, ModelFacts], ...] = ()  # a change of model: role -> its facts
    cluster: Callable[[Cluster | None, Mapping], Cluster | None] | None = None  # a change of GPUs used
    before: str = ""  # the knob's value before and after, as a person reads them
    after: str = ""
    why: str = ""  # a few words after the change: " (KV cache for one request)"
    numerics: bool = False  # it changes the precision trained with (a bf16 base): as fast, another comes first

    @property
    def what(self) -> str:
        """"actor micro-batch 8 -> 4" (what a person reads)."""
        return f"{self.name} {self.before} -> {self.after}{self.why}" if self.before else f"{self.name}{self.why}"


# LoRA's frozen base as the checkpoint stores it: verl loads the actor in fp32 for training (fsdp_config.model_dtype,
# fp32 by default: engine/fsdp/transformer_impl.py _build_module), a full fp32 copy of weights LoRA never updates; at
# bf16 it casts the adapters to the base's dtype (_build_lora_module: "FSDP requires all params in a flat group to
# share dtype"), as verl's own LoRA examples (examples/tuning/lora/*) and its users' LoRA scripts set it
LORA_BF16 = ((f"{AF}.model_dtype", "bf16"),)
# The adapters then train in bf16 too: an update below 1/256 of a weight is lost, so LoRA's higher learning rate
# matters more; the search offers it only where it is what fits or what makes the step faster (search.py)
LORA_BF16_MOVE = Move("LoRA's frozen base in bf16 (fsdp_config.model_dtype: half its fp32 copy; the adapters then "
                      "train in bf16 too: keep LoRA's higher learning rate)", LORA_BF16, numerics=True)


def turn(name: str, before, after, changes: tuple, why: str = "", kind: str = TUNING) -> Move:
    return Move(name, changes, kind, before=str(before), after=str(after), why=why)


def _int(values: Mapping, key: str) -> int | None:
    v = values.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def moves_for(values: Mapping, models: Mapping[str, ModelFacts], cluster: Cluster | None, user_cluster: Cluster | None,
              smaller: Sequence[ModelFacts], done: Sequence[Move], report: MemoryReport | None = None) -> list[Move]:
    """Every move that applies to ``values`` (one step each way per knob; the search combines them); ``report``,
    the estimate of ``values``, sizes the moves that aim at a number (the KV cache's utilization)."""
    cfg = read_config(values)
    seq = cfg.seq_tokens
    out: list[Move] = []
    out += _micro_moves(values, seq)
    if cfg.need_critic:
        out += _critic_moves(values, seq)
    megatron = cfg.strategy == "megatron"
    out += _megatron_moves(values, cfg, models.get("actor")) if megatron else _offload_moves(values, cfg)
    out += _engine_moves(values, cfg, cluster)
    out += _kv_moves(cfg, report)
    actor = models.get("actor")
    if actor is not None and not cfg.lora_rank:
        # LoRA's first sync sends CPU tensors the bucketed path cannot take;
        # verl sends the weights through a buffer of this size, allocated whole; never below the largest weight
        largest = mt.largest_weight(actor, cfg.actor_dtype_bytes)
        out += [turn("weight-sync buffer (MB)", cfg.sync_bucket_bytes >> 20, b,
                     ((f"{R}.checkpoint_engine.update_weights_bucket_megabytes", b),))
                for b in (1024, 512) if largest <= b << 20 < cfg.sync_bucket_bytes]
    if cfg.lora_rank and not megatron and cfg.actor_dtype_bytes > 2:
        out.append(LORA_BF16_MOVE)
    if cfg.lora_sends_base:
        out.append(turn("rollout.load_format", "dummy", "safetensors", ((LOAD_FORMAT_KEY, "safetensors"),),
                        " (vLLM reads the base weights; no gather of the base model on the CPU at the first sync)"))
    if cfg.strategy == "fsdp" and cfg.lora_rank and not cfg.layered_summon:
        # FSDP1's LoRA sync runs inside summon_full_params: the whole model unsharded on every GPU at every sync;
        # layered summon gathers a layer at a time (verl/utils/fsdp_utils.py), and needs the base in vLLM already
        changes = [(f"{R}.layered_summon", True)] + (
            [(LOAD_FORMAT_KEY, "safetensors")] if values.get(LOAD_FORMAT_KEY, "dummy") == "dummy" else [])
        out.append(Move("LoRA sync a layer at a time (rollout.layered_summon" + (
            ", vLLM loading the base weights itself)" if len(changes) > 1 else ")"), tuple(changes)))
    if megatron:
        pass  # recompute is among the Megatron moves
    elif not cfg.actor_gc:
        out.append(Move("gradient checkpointing on", ((f"{M}.enable_gradient_checkpointing", True),)))
    else:
        out.append(Move("gradient checkpointing off (faster, more memory)", ((f"{M}.enable_gradient_checkpointing", False),)))
    if cfg.need_critic and not cfg.critic_gc:
        out.append(Move("critic gradient checkpointing on", (("critic.model.enable_gradient_checkpointing", True),)))
    for who, held, key in (("actor", cfg.actor_unsharded_grad_bytes, NO_SYNC),
                           ("critic", cfg.critic_unsharded_grad_bytes, CRITIC_NO_SYNC)):
        if held:
            out.append(Move(f"{who} gradients synced every micro-batch (no whole unsharded copy held)",
                            ((key, False),)))
    for who, whole, key in (("actor", cfg.actor_keeps_gathered, RESHARD), ("reference", cfg.ref_keeps_gathered,
                            REF_RESHARD), ("critic", cfg.critic_keeps_gathered, CRITIC_RESHARD)):
        if whole:
            out.append(Move(f"{who} params resharded after each forward (not kept gathered whole)", ((key, True),)))
    per_node = _int(values, "trainer.n_gpus_per_node") or 1
    if not megatron and cfg.world > per_node > 1 and cfg.shards == cfg.world:
        # HSDP: each node's GPUs shard the model, the gradients are all-reduced between nodes once a sync (verl's
        # 2-D mesh, fsdp/utils.py create_device_mesh); the params are gathered over NVLink, not the network
        out.append(turn("FSDP group", f"{cfg.world} GPUs", f"each node's {per_node} (HSDP)",
                        ((f"{AF}.fsdp_size", per_node),)))
    if cfg.strategy == "fsdp":
        changes = [(f"{A}.strategy", "fsdp2"), (f"{REF}.strategy", "fsdp2")]
        if cfg.need_critic:
            changes.append(("critic.strategy", "fsdp2"))
        out.append(Move("FSDP1 -> FSDP2", tuple(changes)))
    if not (megatron or cfg.flash_attn or cfg.fused_kernels or actor is None or has_tower(actor)
            or fused_head_refused(values, actor)):
        # without flash-attn verl computes the actor's and the reference's log-probs one token at a time; its fused
        # head takes 512 tokens' logits at a time instead (measured on a dense model without LoRA: 47.6 -> 28.2 s a
        # step for a 1.5B, time-grpo-1.5b-fsdp2-u0.5-resp1024{,-fused}-h100, and 3 GiB less in its log-prob passes;
        # an untied lm_head on FSDP2 stops it: wizard.core.verl.fused_head, and the search drops any state with it).
        # A vision model's fused forward is its own (qwen2_vl.py and others), not measured
        out.append(Move("verl's fused log-prob head (use_fused_kernels: no token-by-token log-probs without "
                        "flash-attn)", ((f"{M}.use_fused_kernels", True),)))
    if cfg.update_entropy and cfg.entropy_mode == "eager" and not megatron:
        out.append(Move("entropy checkpointing", ((f"{AF}.entropy_checkpointing", True),)))
    out += _hardware_moves(values, cluster, user_cluster)
    if not any(m.kind == METHOD for m in done):
        out += _method_moves(values, models, cfg, smaller)
    return out


# samples: the smallest micro-batch of the runs the step time was fitted on. verl's work per micro-batch is barely
# pinned by them (micro-batches of 4-16 samples), so a smaller one is offered where it saves memory, never as faster
# (wizard.core.advice.search._better, wizard.core.advice.offer._within_measured)
SMALLEST_MEASURED_MICRO = 4
MICRO_KEYS = (f"{A}.ppo_micro_batch_size_per_gpu", f"{R}.log_prob_micro_batch_size_per_gpu",
              f"{REF}.log_prob_micro_batch_size_per_gpu", f"{CF}.micro_batch_size_per_gpu",
              "critic.ppo_micro_batch_size_per_gpu")


def below_measured_micro(values: Mapping, than: Mapping) -> bool:
    """``values`` lowers a micro-batch of ``than`` to below the measured ones."""
    def lowered(k) -> bool:
        v, was = values.get(k), than.get(k)
        return isinstance(v, int) and not isinstance(v, bool) and v < SMALLEST_MEASURED_MICRO and (
            not isinstance(was, int) or v < was)

    return any(lowered(k) for k in MICRO_KEYS)


# the actor's passes: (name, micro-batch key, dynamic batching's flag, its token budget)
BATCHING = (("actor micro-batch", f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.use_dynamic_bsz",
             f"{A}.ppo_max_token_len_per_gpu"),
            ("log-prob micro-batch", f"{R}.log_prob_micro_batch_size_per_gpu", f"{R}.log_prob_use_dynamic_bsz",
             f"{R}.log_prob_max_token_len_per_gpu"),
            ("ref micro-batch", f"{REF}.log_prob_micro_batch_size_per_gpu", f"{REF}.log_prob_use_dynamic_bsz",
             f"{REF}.log_prob_max_token_len_per_gpu"))


def _micro_moves(values: Mapping, seq: int) -> list[Move]:
    out = []
    for name, micro, dyn, budget in BATCHING:
        out += _batching_moves(values, seq, name, micro, budget, dynamic=truthy(values, dyn), dyn=dyn)
    return out


def _critic_moves(values: Mapping, seq: int) -> list[Move]:
    """The critic's batching, by the keys verl 0.9.1 reads for it (:func:`critic_batching`): the V1 engine packs
    both its values pass and its update by ``critic.ppo_infer_max_token_len_per_gpu`` tokens, which the plan's
    other token budgets leave alone."""
    dyn, budget, micro = critic_batching(values)
    dynamic = dyn is None or truthy(values, dyn)
    return _batching_moves(values, seq, "critic", micro, budget, dynamic=dynamic, dyn=dyn)


def _batching_moves(values: Mapping, seq: int, name: str, micro: str | None, budget: str, *, dynamic: bool,
                    dyn: str | None) -> list[Move]:
    """A pass's micro-batch (smaller, to any of half, a quarter or 1; larger, twice) or, with dynamic batching,
    its token budget (half, while one sample still fits; twice); a fixed micro-batch may turn to dynamic batching."""
    out = []
    if dynamic:
        b = _int(values, budget)
        why = _followers(values, budget)
        if b and b // 2 >= seq:
            out.append(turn(f"{name} token budget", f"{b:,}", f"{b // 2:,}", ((budget, b // 2),), why))
        if b:
            out.append(turn(f"{name} token budget", f"{b:,}", f"{2 * b:,}", ((budget, 2 * b),), why))
        return out
    m = _int(values, micro) if micro else None
    if m and m > 1:
        for smaller in sorted({m // 2, m // 4, 1} - {0}, reverse=True):  # one move to any of them
            out.append(turn(micro_name(name), m, smaller, ((micro, smaller),)))
    if m:
        out.append(turn(micro_name(name), m, 2 * m, ((micro, 2 * m),)))
        if dyn:  # dynamic batching with the same tokens as the micro-batch holds at its longest: packs short samples
            out.append(Move(f"{micro_name(name)} -> dynamic batching, {max(seq, m * seq):,} tokens",
                            ((dyn, True), (budget, max(seq, m * seq))), why=_followers(values, dyn, budget)))
    return out


# the passes whose knobs follow another's in verl's YAML, as a person names them
_PASS_OF = {R: "the log-prob pass", REF: "the reference's pass", "critic": "the critic"}


def _followers(values: Mapping, *keys: str) -> str:
    """" (the log-prob pass and the reference's pass follow it)" where the composed config makes other passes' knobs
    follow ``keys`` (FOLLOWS: verl's YAML takes the log-prob passes' dynamic batching and token budgets from the
    actor's, the critic's dynamic batching too), which the change then moves as well; else ""."""
    follows = values.get(FOLLOWS)
    if not isinstance(follows, Mapping):
        return ""
    critic = need_critic(values)
    passes = sorted({p for f, source in follows.items() if source in keys
                     for prefix, p in _PASS_OF.items() if f.startswith(prefix + ".") and (critic or prefix != "critic")})
    return f" ({' and '.join(passes)} follow{'s' if len(passes) == 1 else ''} it)" if passes else ""


def micro_name(name: str) -> str:
    """"critic" -> "critic micro-batch"; "actor micro-batch" as it is."""
    return name if name.endswith("micro-batch") else f"{name} micro-batch"


AM = f"{A}.megatron"
NO_SYNC = f"{AF}.use_no_sync_for_gradient_accumulation"
RESHARD = f"{AF}.reshard_after_forward"
REF_RESHARD = f"{REF}.fsdp_config.reshard_after_forward"
CRITIC_RESHARD = f"{CF}.reshard_after_forward"
CRITIC_NO_SYNC = f"{CF}.use_no_sync_for_gradient_accumulation"
RECOMPUTE = f"{AM}.override_transformer_config"
FULL_RECOMPUTE = ((f"{RECOMPUTE}.recompute_granularity", "full"), (f"{RECOMPUTE}.recompute_method", "uniform"),
                  (f"{RECOMPUTE}.recompute_num_layers", 1))
# with the precision-aware optimizer, as verl's large-model recipes set it (Megatron-LM's own arguments require it):
# without it the distributed optimizer keeps the fp32 main params on the GPU (megatron_layout.cpu_main_params)
CPU_OPTIMIZER = ((f"{OPT_OVERRIDE}.optimizer_cpu_offload", True), (f"{OPT_OVERRIDE}.optimizer_offload_fraction", 1.0),
                 (f"{OPT_OVERRIDE}.use_precision_aware_optimizer", True))
CPU_OPTIMIZER_NAME = "megatron-core's CPU optimizer (main params and Adam kept and stepped on the host)"


def _megatron_moves(values: Mapping, cfg, actor: ModelFacts | None = None) -> list[Move]:
    """The Megatron engine's knobs: its offloads (the reference's param_offload with the actor's), full recompute,
    and a larger TP where TP x PP x CP still divides the GPUs of a node."""
    m = read_megatron(values, cfg.world)
    out = [Move("no param offload (faster)" if m.param_offload else "param offload",
                ((f"{AM}.param_offload", not m.param_offload), (f"{REF}.megatron.param_offload", not m.param_offload))),
           Move("no optimizer offload (faster)" if m.optimizer_offload else "optimizer offload",
                ((f"{AM}.optimizer_offload", not m.optimizer_offload),))]
    # megatron-core's CPU optimizer (verl's recipes fit a 72B on 16 GPUs with it): the main params and Adam stay and
    # step on the host, where verl's optimizer_offload only parks them there between updates
    # with the precision-aware optimizer, as verl's large-model recipes set it; megatron-core takes that only with
    # its distributed optimizer (without it the CPU optimizer still moves Adam's states)
    cpu = CPU_OPTIMIZER if m.dist_opt else CPU_OPTIMIZER[:2]
    if 0 < m.cpu_optimizer < 1.0:
        out.append(turn("CPU optimizer fraction", f"{m.cpu_optimizer:g}", "1", cpu))
    elif m.cpu_optimizer == 0:
        out.append(Move(CPU_OPTIMIZER_NAME, cpu))
    elif not m.cpu_main_params and not m.optimizer_unmodelled and m.dist_opt:
        out.append(Move("the precision-aware optimizer (the CPU optimizer then holds the fp32 main params on the host "
                        "too)", ((f"{OPT_OVERRIDE}.use_precision_aware_optimizer", True),)))
    if m.cpu_optimizer:  # the precision-aware optimizer goes with it: without it, it is not modelled
        out.append(Move("no CPU optimizer (faster)", ((f"{OPT_OVERRIDE}.optimizer_cpu_offload", False),) + (
            ((f"{OPT_OVERRIDE}.use_precision_aware_optimizer", False),) if m.precision_aware else ())))
    if m.recompute != "full":
        out.append(Move("full recompute (uniform, 1 layer a chunk)", FULL_RECOMPUTE))
    else:
        out.append(Move("no recompute (faster, more memory)", ((f"{RECOMPUTE}.recompute_granularity", None),)))
    per = _int(values, "trainer.n_gpus_per_node") or 1
    if (2 * m.tp <= per and per % (2 * m.tp) == 0 and cfg.world % (2 * m.tp * m.pp * m.cp) == 0
            and (actor is None or tp_fits_heads(actor, 2 * m.tp))):
        out.append(turn("Megatron TP", m.tp, 2 * m.tp, ((f"{AM}.tensor_model_parallel_size", 2 * m.tp),)))
    return out


def _offload_moves(values: Mapping, cfg) -> list[Move]:
    out = []
    for key, on, off in ((f"{AF}.param_offload", "param offload", "no param offload (faster)"),
                         (f"{AF}.optimizer_offload", "optimizer offload", "no optimizer offload (faster)")):
        out.append(Move(off if truthy(values, key) else on, ((key, not truthy(values, key)),)))
    if cfg.strategy == "fsdp2" and cfg.actor_offload_policy:
        out.append(Move("no CPU offload policy (faster)", ((f"{AF}.offload_policy", False),)))
    elif not cfg.actor_offload_policy:
        out.append(Move("FSDP2 with the CPU offload policy (optimizer on the CPU)",
                        ((f"{A}.strategy", "fsdp2"), (f"{REF}.strategy", "fsdp2"), (f"{AF}.offload_policy", True))))
    if cfg.need_critic:
        for key, on in ((f"{CF}.param_offload", "critic param offload"), (f"{CF}.optimizer_offload", "critic optimizer offload")):
            if not truthy(values, key):
                out.append(Move(on, ((key, True),)))
        if cfg.critic_offload_policy:
            out.append(Move("critic without the CPU offload policy (faster)", ((f"{CF}.offload_policy", False),)))
        else:  # the critic's states on the host through its update too (PPO's second full model)
            out.append(Move("critic on FSDP2 with the CPU offload policy (its optimizer on the CPU)",
                            (("critic.strategy", "fsdp2"), (f"{CF}.offload_policy", True))))
    return out


def _engine_moves(values: Mapping, cfg, cluster: Cluster | None) -> list[Move]:
    out = []
    eng = cfg.engines["rollout"]
    util = round(eng.util, 2)
    for step in (0.05, 0.1, 0.2):
        if util - step >= 0.1:
            out.append(turn("gpu_memory_utilization", f"{util:g}", f"{util - step:.2f}",
                            ((f"{R}.gpu_memory_utilization", round(util - step, 2)),)))
        if util + step <= 0.95:
            out.append(turn("gpu_memory_utilization", f"{util:g}", f"{util + step:.2f}",
                            ((f"{R}.gpu_memory_utilization", round(util + step, 2)),)))
    if eng.max_model_len is None or eng.max_model_len > cfg.seq_tokens:
        out.append(Move(f"max_model_len {cfg.seq_tokens:,} (prompt + response)", ((f"{R}.max_model_len", cfg.seq_tokens),)))
    per = _int(values, "trainer.n_gpus_per_node") or 1
    if eng.tp * 2 <= per and per % (eng.tp * 2) == 0:
        out.append(turn("rollout TP", eng.tp, eng.tp * 2, ((f"{R}.tensor_model_parallel_size", eng.tp * 2),)))
    if eng.tp > 1:
        out.append(turn("rollout TP", eng.tp, eng.tp // 2, ((f"{R}.tensor_model_parallel_size", eng.tp // 2),)))
    if eng.enforce_eager:
        out.append(Move("CUDA graphs on (faster decoding)", ((f"{R}.enforce_eager", False),)))
    if eng.max_num_seqs >= 64:  # vLLM sizes its activations and sampler for this many sequences at once
        out.append(turn("max_num_seqs", eng.max_num_seqs, eng.max_num_seqs // 2,
                        ((f"{R}.max_num_seqs", eng.max_num_seqs // 2),)))
    return out


def _kv_moves(cfg, report: MemoryReport | None) -> list[Move]:
    """gpu_memory_utilization aimed at the rollout engine's KV cache: the least that holds one request of
    max_model_len, and the least that holds every sequence the batch sends at once (in 0.05 steps)."""
    kv = report.kv.get("rollout") if report is not None else None
    eng = cfg.engines["rollout"]
    if kv is None or kv.engine != "vllm" or kv.pinned or not eng.util or not kv.budget_bytes:  # pinned: util sizes no KV
        return []
    total = kv.budget_bytes / eng.util  # what vLLM sizes from (CUDA's total)
    fixed = kv.weights_bytes + kv.activation_bytes + kv.other_bytes
    one = (min(kv.max_model_len or kv.seq_tokens, kv.seq_tokens) if kv.max_model_len else kv.seq_tokens)
    out = []
    for what, tokens in (("one request", one), ("the whole batch at once", kv.wanted * kv.seq_tokens)):
        util = math.ceil((fixed + 1.1 * tokens * kv.bytes_per_token) / total * 20) / 20
        if util <= 0.95 and abs(util - eng.util) > 1e-6:
            out.append(turn("gpu_memory_utilization", f"{eng.util:g}", f"{util:.2f}",
                            ((f"{R}.gpu_memory_utilization", round(util, 2)),), f" (KV cache for {what})"))
    return out


def _hardware_moves(values: Mapping, cluster: Cluster | None, user_cluster: Cluster | None) -> list[Move]:
    """More of the user's own GPUs: more per node up to what a node has, more nodes up to the cluster's."""
    if user_cluster is None or not user_cluster.nodes:
        return []
    per = _int(values, "trainer.n_gpus_per_node") or 1
    nodes = _int(values, "trainer.nnodes") or 1
    have_per = min((n.gpu_count for n in user_cluster.nodes), default=0)
    out = []
    if per * 2 <= have_per:
        out.append(turn("GPUs per node", per, per * 2, (("trainer.n_gpus_per_node", per * 2),), f" (of {have_per})", HARDWARE))
    elif per < have_per:
        out.append(turn("GPUs per node", per, have_per, (("trainer.n_gpus_per_node", have_per),), " (all)", HARDWARE))
    if nodes < len(user_cluster.nodes):
        more = min(len(user_cluster.nodes), nodes * 2)
        out.append(turn("nodes", nodes, more, (("trainer.nnodes", more),), f" (of {len(user_cluster.nodes)})", HARDWARE))
    return out


def _method_moves(values: Mapping, models: Mapping[str, ModelFacts], cfg, smaller: Sequence[ModelFacts]) -> list[Move]:
    out = []
    actor = models.get("actor")
    # LoRA on the Megatron engine (model.lora.*, Megatron-Bridge) is not modelled: no estimate could verify the move
    if not cfg.lora_rank and cfg.strategy != "megatron":
        changes = [(LORA_KEY, LORA_RANK), (f"{M}.lora_alpha", LORA_RANK)]
        text = f"LoRA rank {LORA_RANK} (trains adapters, not the full model; raise the learning rate)"
        if sends_base({**values, LORA_KEY: LORA_RANK}):
            # as verl's LoRA guide (docs/advance/ppo_lora.rst) sets it: from dummy weights, the first sync would
            # gather the base model on every rank's CPU and send weights the sync buffer may not hold (lora_sync.py)
            changes.append((LOAD_FORMAT_KEY, "safetensors"))
            text += ", vLLM loading the base weights itself (the first sync sends the adapter only)"
        out.append(Move(text, tuple(changes), METHOD))
    layout = read_megatron(values, cfg.world) if cfg.strategy == "megatron" else None
    for facts in smaller:
        if actor is None or facts.param_count >= actor.param_count:
            continue
        if layout is not None and layout_problems(facts, layout):  # its heads, layers or experts do not split so
            continue
        changes = [(f"{M}.path", facts.name)]
        roles = [(r, facts) for r, f in models.items() if f.name == actor.name and r in ("actor", "ref")]
        also = ""
        if need_critic(values) and models.get("critic") is not None and models["critic"].name == actor.name:
            changes.append(("critic.model.path", facts.name))  # the critic was the actor's model: it follows
            roles.append(("critic", facts))
            also = ", as actor and critic"
        out.append(Move(f"the smaller {facts.name} ({facts.param_count / 1e9:.1f}B{also})", tuple(changes), METHOD,
                        models=tuple(roles)))
    return out


def grown_cluster(cluster: Cluster | None, nodes: int, per_node: int | None = None) -> Cluster | None:
    """``cluster`` as ``nodes`` nodes of ``per_node`` GPUs like its first node's (for "it needs N such GPUs")."""
    if cluster is None or not cluster.nodes or not cluster.nodes[0].gpus:
        return cluster
    src = cluster.nodes[0]
    per_node = per_node or src.gpu_count
    gpus = [src.gpus[0].model_copy(update={"index": i, "physical_index": i, "uuid": None, "pci_bus_id": None})
            for i in range(per_node)]
    node = src.model_copy(update={"gpu_count": per_node, "gpus": gpus, "links": []})
    return cluster.model_copy(update={"nodes": [node.model_copy(update={"name": f"node{i}"}) for i in range(nodes)]})
