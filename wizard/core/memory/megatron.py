"""The Megatron training engine's side of a training GPU (verl 0.9.1, ``actor.strategy=megatron``): what the actor
and the reference model hold per GPU under TP / PP / VPP / CP / EP and the distributed optimizer, in each phase.

Sources (file:line of the versions verl 0.9.1 installs: megatron-core 0.19.2, the newest on PyPI, which
megatron-bridge 0.5.x takes unpinned):

- **States** -- megatron/training/theoretical_memory_usage.py:12-305 (``compute_weight_and_optimizer_memory``):
  TP-sharded, replicated and expert-sharded parameters of the most loaded pipeline stage (the first holds the
  embedding, the last the output layer), 18 bytes per parameter, or ``6 + 12 / DP`` with the distributed optimizer
  (:296): bf16 params (2) + fp32 gradient buffer (4) on every model-parallel rank, fp32 main params and Adam's m, v
  (12) sharded over the data-parallel ranks -- DP x CP for dense parameters, the expert-data-parallel ranks for
  routed experts (megatron/core/distributed/distributed_data_parallel.py:221-224, ``intra_dp_cp_group`` /
  ``intra_expt_dp_group``). verl sets ``grad_reduce_in_fp32`` (workers/engine/megatron/transformer_impl.py:455-460),
  so the gradient buffer is fp32 (param_and_grad_buffer.py:917).
- **Activations** -- theoretical_memory_usage.py:308-379 (``compute_activation_memory``, Table 2 of
  arXiv 2205.05198): ``s b h (18 + 4 ffn / h) / TP`` bytes per layer and micro-batch with sequence parallelism,
  ``s b h (10 + 24 / TP)`` without (:386); the first stage keeps PP micro-batches in flight under 1F1B
  (``min(1, m / PP)`` of them when fewer), ``1 + (PP - 1) / (PP x VPP)`` times more with the interleaved schedule
  (:342-361). Full recompute keeps each checkpointed chunk's input (2 s b h / TP bytes) and recomputes a chunk in the
  backward (arXiv 2205.05198 §4); verl's default (``recompute_granularity: null``) with flash attention saves what
  selective recompute saves (the formula's attention scores are never stored).
- **Offload** -- verl/utils/megatron_utils.py:713-773 (``offload_megatron_model_to_cpu``: the bf16 param buffer to
  pinned CPU memory, the gradient buffer freed), :931-962 (``offload_megatron_optimizer``: main params and Adam's
  states), workers/engine/base.py:314-328 (param_offload and optimizer_offload load them back for a call and put them
  away after it); verl 0.9.1 has no ``grad_offload`` key: param_offload frees the gradient buffer too.
- **Reference** -- a forward-only engine without DDP wrapping (transformer_impl.py:470-472): bf16 params only, with
  the actor's parallel sizes and ``ref.megatron.param_offload`` (the actor's by default).
- **Log-probs** -- verl's vocab-parallel cross-entropy (utils/megatron/tensor_parallel.py:201-205 through megatron's
  ``vocab_parallel_cross_entropy``): the last stage's bf16 logits of its TP vocabulary shard and an fp32 copy kept
  for the backward; ``calculate_entropy`` clones the logits first (transformer_impl.py:1214-1229).
- **Weight sync** -- ``get_per_tensor_param`` (transformer_impl.py:1033-1063) loads the params (not the gradients)
  and megatron-bridge exports one Hugging Face tensor at a time, gathered over TP.

megatron-core's formulas themselves (states, activations per stage) are in
:mod:`wizard.core.memory.megatron_formulas`; this module puts them into verl's phases. Four runs measured them on a GPU
(an H100, TP = PP = 1: Qwen2.5-0.5B, then Qwen2.5-1.5B with and without param and optimizer offload and a 1.2B
Qwen3-MoE at EP 1, predicted before they ran: bench/real/megatron-carry.md): the log-prob pass's entropy bytes, the
update's logits bytes, the allocator cache the passes keep until the weight sync, and what the worker holds outside
torch once it has trained come from them; TP, PP, VPP, CP and EP > 1 are still from the formulas.
Pure.
"""

from __future__ import annotations

import math

from collections.abc import Callable, Mapping

from wizard.core.memory import terms as mt
from wizard.core.memory.pinned import megatron_state_ratio, pow2
from wizard.core.memory.batching import SAMPLE_TOKENS, micro_batch_tokens
from wizard.core.memory.config import MemoryConfig
from wizard.core.memory.megatron_formulas import activations, layer_activation, stage, states
from wizard.core.memory.megatron_layout import AM, MegatronConfig, layout_problems, positive_int, read_megatron
from wizard.core.memory.phases import PhaseName as P
from wizard.core.memory.terms import MemoryConstants, Term
from wizard.core.memory.trainer import term, tok, two_sync_buckets
from wizard.core.models.facts import ModelFacts
from wizard.core.verl.flags import truthy
from wizard.core.verl.keys import A, REF, R

# Bytes per logit element of the last stage's vocabulary shard: the bf16 logits and the fp32 copy megatron's
# vocab_parallel_cross_entropy makes (calculate_logits_max: .float(); its exp is saved for the backward) = 6.
# calculate_entropy: a bf16 clone (2) and the entropy's temporaries. Measured (an H100, micro-batches of 16,384
# tokens x 151,936 in a log-prob pass, 8,192 in the update, at the estimate's lengths): the old log-prob pass with
# entropy grew the trainer by 30.8 GiB in NVML (25.8 in torch's max_allocated, the rest the allocator's cached
# blocks), 13 bytes a logit element where 16 had been assumed (an fp32 softmax of 8 bytes is not there: the
# entropy's exp and division are in place on the bf16 clone: meg-grpo-0.5b-tp1-u0.4-h100). The update's torch peak,
# less its states and activations, was 14.7-16.8 bytes a logit element on three runs (0.5B, 1.5B, a 1.2B MoE;
# meg-grpo-*-h100) where the 8 of its backward (the fp32 gradient cast back to bf16, the temperature's division)
# had been assumed: the update is sized at 16. It is the same excess (7.8-10.2 GiB) on models whose activations
# differ 3x, so it belongs to the logits, not to the layers; where in megatron-core's backward the other 8 are held
# is not traced.
LOGIT_BYTES_FORWARD = 6
LOGIT_BYTES_UPDATE = 16
ENTROPY_BYTES = 7
# The passes' blocks stay cached: verl empties the allocator's cache at the weight sync
# (engine_workers.py:769,814) and where the offloads move params or states (megatron_utils.py:798,845,976,1004),
# not between the log-prob passes and the update. Measured: the reference pass and the update held the old log-prob
# pass's 44.7 GiB (NVML) though each needs less (meg-grpo-0.5b-tp1-u0.4-h100).
# what every reason a layout does not start ends with (memory.not_modelled's fix is then the layout, not a measurement)
NOT_STARTED = "no memory is estimated for it"
LORA_NOT_MODELLED = "LoRA with the Megatron engine is not modelled (adapters, frozen base weights and their sync)"
TRANSIENT_KEYS = ("logits", "entropy", "layer_activations", "activations")
# megatron-bridge gathers a TP-sharded weight into a list of shards and concatenates them: two copies of the
# largest weight (the V x h embedding) for a moment [E]
SYNC_GATHER_COPIES = 2


# ------------------------------------------------------------------------------------------------
# The trainer on one GPU of one stage


class MegatronTrainer:
    """The actor (and a separate reference model) under Megatron on one GPU of pipeline stage ``index``."""

    def __init__(self, values: Mapping, cfg: MemoryConfig, actor: ModelFacts, c: MemoryConstants, index: int = 0,
                 m: MegatronConfig | None = None):
        self.values, self.cfg, self.f, self.c = values, cfg, actor, c
        self.m = m or read_megatron(values, cfg.world)
        self.s = stage(actor, self.m, index)
        self.st = states(self.s, self.m)
        seq = cfg.seq_tokens
        n = cfg.rollout_n
        mini = positive_int(values, f"{A}.ppo_mini_batch_size", 256)
        samples = max(1, mini * n // self.m.dp)  # per data-parallel rank in one mini-batch of update_actor
        batch = max(1, -(-cfg.train_batch_size * n // self.m.dp))  # per rank in a log-prob pass
        # tokens on one GPU in one micro-batch: a micro-batch's samples split over CP (verl hands megatron
        # max_token_len_per_gpu x CP tokens with dynamic batching, transformer_impl.py:836, engine/utils.py:111)
        self.update_tokens = micro_batch_tokens(values, dynamic=f"{A}.use_dynamic_bsz", budget=f"{A}.ppo_max_token_len_per_gpu",
                                     micro=f"{A}.ppo_micro_batch_size_per_gpu", seq=seq, sp=self.m.cp,
                                     per_gpu_samples=samples)
        self.logprob_tokens = micro_batch_tokens(values, dynamic=f"{R}.log_prob_use_dynamic_bsz",
                                      budget=f"{R}.log_prob_max_token_len_per_gpu",
                                      micro=f"{R}.log_prob_micro_batch_size_per_gpu", seq=seq, sp=self.m.cp,
                                      per_gpu_samples=batch)
        self.ref_tokens = micro_batch_tokens(values, dynamic=f"{REF}.log_prob_use_dynamic_bsz",
                                  budget=f"{REF}.log_prob_max_token_len_per_gpu",
                                  micro=f"{REF}.log_prob_micro_batch_size_per_gpu", seq=seq, sp=self.m.cp,
                                  per_gpu_samples=batch)
        sample = values.get(SAMPLE_TOKENS)
        avg = sample if isinstance(sample, int) and 0 < sample < seq else seq
        # micro-batches per mini-batch on one data-parallel rank (fewer than PP leave the pipeline part empty)
        self.micro_batches = max(1, math.ceil(samples * avg / self.m.cp / max(1, self.update_tokens)))

    @property
    def unmodelled(self) -> str | None:
        """What of this plan the Megatron estimate does not model (no verdict then)."""
        if self.cfg.need_critic:
            return "the Megatron critic is not modelled (the actor and the reference model are)"
        if self.cfg.lora_rank:
            return LORA_NOT_MODELLED
        v = self.values
        if truthy(v, f"{AM}.use_megatron_fsdp"):
            return "Megatron-FSDP (actor.megatron.use_megatron_fsdp=True, parameters sharded ZeRO-3 style) is not modelled"
        if all(v.get(f"{AM}.{k}") is None for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size")):
            # actor.strategy=megatron over a config composed for FSDP (batch.megatron_without_engine): its optimizer
            # and every Megatron size are FSDP's or absent
            return ("the config was composed for FSDP (actor.strategy=megatron without model_engine=megatron: no "
                    "actor.megatron section)")
        opt = v.get(f"{A}.optim.optimizer")
        if isinstance(opt, str) and opt.lower() != "adam":
            return f"the Megatron engine's {opt} optimizer is not modelled (Adam with the distributed optimizer is)"
        if self.m.optimizer_unmodelled:
            return self.m.optimizer_unmodelled
        return self.does_not_start

    @property
    def does_not_start(self) -> str | None:
        """Why verl or megatron-core stops this layout at start (then there are no numbers to show, not only no
        verdict: the estimate would be of a layout that never runs)."""
        m, v = self.m, self.values
        for key in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size",
                    "expert_model_parallel_size"):
            raw = v.get(f"{AM}.{key}")
            if isinstance(raw, int) and not isinstance(raw, bool) and raw < 1:  # read as 1 by the layout
                return f"{key}={raw} is not a size Megatron starts with (its error says so), so {NOT_STARTED}"
        if m.world % (m.tp * m.pp * m.cp):  # verl's check stops it (batch.megatron_parallel)
            return (f"TP {m.tp} x PP {m.pp} x CP {m.cp} does not divide the {m.world} GPUs, so verl does not start it "
                    f"(its error says so) and {NOT_STARTED}")
        problems = layout_problems(self.f, m)
        if problems:  # megatron-core stops it (models.megatron_layout)
            return f"Megatron does not start this layout ({problems[0][1]}), so {NOT_STARTED}"
        if m.precision_aware and not m.dist_opt:  # megatron-core's OptimizerConfig.__post_init__
            return ("megatron-core supports the precision-aware optimizer only with the distributed optimizer "
                    f"(use_distributed_optimizer=False here), so {NOT_STARTED}")
        return None

    def notes(self) -> list[str]:
        m, s, st = self.m, self.s, self.st
        per = st.total / max(1.0, s.params)
        out = [f"Megatron: the GPUs of {s.name} peak highest and are shown; {s.params / 1e9:.2f}B params per GPU at "
               f"{per:.1f} bytes each (bf16 params 2 + fp32 gradients 4 + main params and Adam 12"
               + (f" / {m.dp_cp} DP x CP" if m.dist_opt else "")
               + (f", {'all' if m.cpu_optimizer == 1 else f'{m.cpu_optimizer:g}'} of Adam"
                  + (" and the main params" if m.cpu_main_params else "")
                  + " on the CPU (optimizer_cpu_offload), not in these GPUs' phases" if m.cpu_optimizer else "") + "; megatron-core theoretical_memory_usage.py); "
               f"{self.micro_batches} micro-batch(es) per mini-batch on each of {m.dp} data-parallel ranks. "
               "From megatron-core's formulas and verl's Megatron worker, checked on four runs on one H100 "
               "(TP = PP = 1: 0.5B and 1.5B dense, the 1.5B with param and optimizer offload, a 1.2B MoE), every "
               "phase within 10 %; TP, PP, CP and EP > 1 not measured"]
        if not m.param_offload:
            out.append("Megatron: the reference pass and the update keep the blocks the old log-prob pass leaves "
                       "cached (its logits and entropy), so they peak near it: verl empties the allocator's cache only "
                       "at the weight sync and where an offload moves params or optimizer states (measured on one "
                       "run: the three at 44.7 GiB)")
        # a layout Megatron refuses is an error of the check (batch.megatron_parallel, models.megatron_layout)
        return out

    def host_per_rank(self) -> list[tuple[str, str, float]]:
        """(key, label, bytes) one rank keeps on the host: the pinned copies the offloads make (megatron_utils.py:
        742-750: one pinned buffer per parameter buffer, made once; :931-962 the optimizer's main params and states)
        and the reference's params with its param_offload."""
        m, st, out = self.m, self.st, []
        if self.cfg.ref_separate and m.ref_param_offload:
            out.append(("host_ref", "reference params (bf16, offloaded between its passes)", st.params))
        if m.param_offload:  # one pinned buffer a model chunk, a power of two (torch's host allocator: pinned.pow2)
            chunks = m.vpp or 1
            out.append(("host_actor_params", "actor params offloaded between calls (bf16, pinned)",
                        chunks * pow2(st.params / chunks)))
        ratio = megatron_state_ratio(self.f, m.tp, m.ep, m.etp, m.dp_cp if m.dist_opt else 1,
                                     m.expert_dp if m.dist_opt else 1)
        adam_on_gpu = 1.0 - m.cpu_optimizer
        if m.optimizer_offload and (m.main_on_gpu or adam_on_gpu):
            # verl moves what the GPU holds of them tensor by tensor, each pinned in a power-of-two block (measured)
            out.append(("host_actor_adam", "actor main params and Adam states offloaded between updates (fp32, each "
                        f"tensor pinned in a power-of-two block: x {ratio:.2f} their size; measured once, on a 1.5B at "
                        "TP = DP = 1)", ratio * (m.main_on_gpu * st.main + adam_on_gpu * st.adam)))
        if m.cpu_optimizer:
            # megatron-core's CPU optimizer (cpu_offloading/hybrid_optimizer.py): its fraction's fp32 params and the
            # gradient copy it steps them with are pinned (rounded up as above); with the precision-aware optimizer
            # it pins a bf16 copy and steps an unpinned fp32 copy of it; Adam's states are unpinned
            f = m.cpu_optimizer
            pinned = (st.main / 2 if m.cpu_main_params else st.main) + st.main
            plain = (st.main if m.cpu_main_params else 0) + st.adam
            out.append(("host_actor_cpu_optimizer",
                        f"actor optimizer on the CPU (optimizer_cpu_offload, fraction {f:g}): fp32 main params, Adam "
                        f"states and a gradient copy (the pinned copies in power-of-two blocks, x {ratio:.2f})",
                        f * (ratio * pinned + plain)))
        return out

    # -- terms ---------------------------------------------------------------------------------

    def _label(self, what: str) -> str:
        m = self.m
        ways = f"TP {m.tp}, PP {m.pp}" + (f", EP {m.ep}" if m.ep > 1 else "") + (f", CP {m.cp}" if m.cp > 1 else "")
        return f"{what} ({ways}; {self.s.name})"

    def _params(self, note: str = "") -> Term:
        s = self.s
        experts = f" + {s.expert / 1e9:.2f}B routed-expert params" if s.expert else ""
        return term("actor_params", self._label(f"actor params, bf16: {s.dense / 1e9:.2f}B{experts} on this GPU"),
                    self.st.params, note)

    def _grads(self, note: str = "") -> Term:
        return term("actor_grads", "actor gradient buffer (fp32: verl sets grad_reduce_in_fp32), whole on every "
                                   "data-parallel rank", self.st.grads, note)

    def _optimizer_terms(self, *, adam: bool = True, note: str = "") -> list[Term]:
        """The fp32 main params and Adam's moments this GPU holds: megatron-core's CPU optimizer keeps its fraction
        of the moments on the host, and of the main params only with the precision-aware optimizer (without it the
        distributed optimizer's fp32 shard stays here and the CPU optimizer steps a host copy)."""
        m, out = self.m, []
        cpu = f"; {m.cpu_optimizer:g} of them on the CPU (optimizer_cpu_offload)" if m.cpu_optimizer else ""
        if m.main_on_gpu > 0:
            kept = ("; kept here by the distributed optimizer: the CPU optimizer steps a host copy "
                    "(use_precision_aware_optimizer=True moves them)" if m.cpu_optimizer and not m.cpu_main_params
                    else cpu)
            out.append(term("actor_main_params", f"actor fp32 main params ({self._shard()}{kept})",
                            m.main_on_gpu * self.st.main, note))
        if adam and m.cpu_optimizer < 1.0:
            out.append(term("actor_adam", f"actor Adam m and v (fp32, {self._shard()}{cpu})",
                            (1.0 - m.cpu_optimizer) * self.st.adam, note))
        return out

    def _shard(self) -> str:
        m = self.m
        if not m.dist_opt:
            return "whole on every rank (use_distributed_optimizer=False)"
        return f"/ {m.dp_cp} DP x CP ranks" + (f", experts / {m.expert_dp} expert-DP ranks" if self.s.expert else "")

    def resident(self, *, loaded: bool = False, grads: bool = True, adam: bool = True,
                 ref_loaded: bool = False, started: bool = True) -> list[Term]:
        """What stays on the GPU between calls; ``loaded``: the params brought back for this call (param_offload);
        ``started``: after the first weight sync and training pass (what the worker then holds outside torch)."""
        m, out = self.m, []
        if not m.param_offload or loaded:
            out.append(self._params("loaded back for this call (param_offload)" if m.param_offload else ""))
        if grads and not m.param_offload:
            out.append(self._grads())
        if not m.optimizer_offload:
            out += self._optimizer_terms(adam=adam)
        if self.cfg.ref_separate and (not m.ref_param_offload or ref_loaded):
            out.append(term("ref_params", "reference params (bf16, the actor's TP / PP; forward-only, no gradient "
                                          "buffer)" + (": loaded for its pass" if m.ref_param_offload else ""),
                            self.st.params))
        out.append(term("trainer_context", "trainer process: CUDA context, NCCL (TP, PP, DP, EP groups) and library "
                                           "workspaces", self.c.trainer_context + (self.c.nccl_buffers if
                                                                                    self.cfg.world > 1 else 0)))
        if started:
            out.append(term("megatron_runtime", "trainer process, once it has trained: TransformerEngine and cuBLASLt "
                                                "workspaces, NCCL buffers, compiled kernels (outside torch's "
                                                "allocator; measured on one GPU)", self.c.megatron_runtime))
        return out

    def at_load(self) -> list[Term]:
        """When the rollout engine starts: the states built and offloaded as configured, Adam's m and v not yet
        created (the first optimizer step creates them)."""
        return self.resident(adam=False, started=False)

    def sync(self) -> list[Term]:
        """The weight sync's trainer side: params loaded without their gradients (get_per_tensor_param), one weight
        gathered whole over TP at a time, and verl's send buffer."""
        f, cfg = self.f, self.cfg
        bucket = term("sync_bucket", f"weight-sync send buffer (update_weights_bucket_megabytes = "
                                     f"{cfg.sync_bucket_bytes >> 20})", cfg.sync_bucket_bytes)
        if cfg.engines["rollout"].sglang is not None:  # from verl's code, not measured with Megatron
            largest = mt.largest_weight(f, self.m.param_bytes)
            stage = self.m.param_bytes * f.param_count / max(1, self.m.pp) + largest
            bucket = two_sync_buckets(cfg.sync_bucket_bytes, largest, stage, "exported weights, at most this stage's")
        return self.resident(loaded=True) + [
            bucket,
            term("sync_tensor", f"largest weight gathered whole over TP for the export ({SYNC_GATHER_COPIES} copies: "
                                "the shards and their concatenation)",
                 SYNC_GATHER_COPIES * mt.largest_weight(f, self.m.param_bytes))]

    def _logits(self, tokens: float, update: bool, entropy: bool) -> list[Term]:
        if not self.s.output:
            return []
        f, m = self.f, self.m
        shard = f.vocab_size / m.tp
        if self.cfg.fused_kernels:
            return [term("logits", f"log-probs from the hidden states (use_fused_kernels; {tok(tokens)})",
                         mt.logits(f, tokens, True, self.c))]
        per = LOGIT_BYTES_UPDATE if update else LOGIT_BYTES_FORWARD
        out = [term("logits", f"logits of the vocabulary shard ({tok(tokens)} x {shard:,.0f} = vocab / TP {m.tp}; "
                              f"bf16 + the fp32 copy of vocab-parallel cross-entropy{' + its backward' if update else ''}"
                              ")", tokens * shard * per)]
        if entropy:
            out.append(term("entropy", "entropy: a bf16 clone of the logits, its exp and division in place, and "
                                       "the allocator's blocks around them (calculate_entropy; measured on one run)",
                            tokens * shard * ENTROPY_BYTES))
        return out

    def forward(self, tokens: float, *, ref: bool = False) -> list[Term]:
        """A forward-only pass (old log-prob, or the reference's): no activations kept, one layer's working set at a
        time; the last stage's logits; the params loaded for the call with param_offload."""
        m = self.m
        base = self.resident(loaded=not ref, ref_loaded=ref)
        logits = self._logits(tokens, update=False, entropy=not ref)
        layer = term("layer_activations", f"one layer's working set ({tok(tokens)}, freed as it goes)",
                     self.c.forward_layer_fraction * layer_activation(self.f, tokens, m, bool(self.s.moe_layers)))
        return base + (logits if sum(t.bytes for t in logits) >= layer.bytes else [layer])

    def update(self) -> list[Term]:
        """update_actor at its peak: every state on the GPU, the stage's in-flight activations, the last stage's
        logits (the pipeline's end runs its loss on one micro-batch at a time)."""
        T = self.update_tokens
        acts, how = activations(self.f, T, self.m, self.s, self.micro_batches)
        out = [self._params("loaded back for the update" if self.m.param_offload else ""),
               self._grads("loaded back for the update" if self.m.param_offload else ""),
               *self._optimizer_terms(note="loaded back for the update" if self.m.optimizer_offload else ""),
               term("activations", f"activations, micro-batches of {tok(T)} per GPU", acts, how)]
        out += self._logits(T, update=True, entropy=self.cfg.update_entropy)
        return out + [t for t in self.resident() if t.key in ("ref_params", "trainer_context", "megatron_runtime")]

    def cache_emptied(self, *, update: bool) -> bool:
        """An offload empties the allocator's cache before (and, for the reference, after) this pass: param_offload
        around every pass, the reference's around its own, optimizer_offload as the update loads its states."""
        m = self.m
        return m.param_offload or (m.optimizer_offload if update else m.ref_param_offload)

    def cache_kept(self, before: int, now: list[Term], *, update: bool) -> list[Term]:
        """The earlier passes' blocks the allocator still holds in a pass of ``now`` (``before``: the largest of
        their transients): what of them this pass does not reuse. None where an offload emptied the cache on the way
        (param_offload around every pass, the reference's around its own; optimizer_offload as the update loads
        its states)."""
        if self.cache_emptied(update=update):
            return []
        extra = before - transient(now)
        return [term("allocator", "allocator: the old log-prob pass's logits and entropy blocks still cached "
                                  "(verl empties the cache at the weight sync and in the offloads)", extra)] \
            if extra > 0 else []


def transient(terms: list[Term]) -> int:
    """What a pass allocates and frees: its logits, entropy and activations."""
    return sum(t.bytes for t in terms if t.key in TRANSIENT_KEYS)


EngineFn = Callable[..., dict]
EngineTermsFn = Callable[..., list[Term]]


def megatron_phases(cfg: MemoryConfig, tr: MegatronTrainer, roles: list[str], capacity: int, c: MemoryConstants,
                    models: Mapping[str, ModelFacts], engine: EngineFn, engine_terms: EngineTermsFn,
                    phase: Callable[..., object]) -> tuple[list, int]:
    """The phases of a training GPU with the Megatron trainer beside the engines (``engine`` / ``engine_terms``:
    the estimate's vLLM / SGLang terms; ``phase``: its Phase), as the FSDP phases are put together."""
    init = tr.at_load()
    free = capacity - c.driver_reserved - sum(t.bytes for t in init)
    engines = {r: engine(cfg, r, capacity, free, c, models.get(r)) for r in ("rollout", "reward") if r in roles}
    asleep = [t for r, e in engines.items() for t in engine_terms(r, e, False, c)]
    phases = []
    if "rollout" in engines:
        eng = cfg.engines["rollout"]
        phases.append(phase(name=P.LOAD, terms=init + engine_terms("rollout", engines["rollout"], True, c)))
        phases.append(phase(name=P.WEIGHT_SYNC, terms=tr.sync() + [
            term("engine_rollout_weights", f"rollout engine weights woken (bf16 / TP {eng.tp})",
                 mt.engine_weights(tr.f, eng.tp, eng.pp)),
            term("engine_rollout_asleep", "rollout engine context and CUDA graphs", engines["rollout"]["asleep"])]))
        phases.append(phase(name=P.GENERATION, terms=tr.resident() + engine_terms("rollout", engines["rollout"], True, c)
                            + [t for r, e in engines.items() if r != "rollout" for t in engine_terms(r, e, False, c)]))
    old = tr.forward(tr.logprob_tokens)
    phases.append(phase(name=P.OLD_LOG_PROB, terms=old + asleep))
    cached = transient(old)
    if cfg.ref_separate:
        ref = tr.forward(tr.ref_tokens, ref=True)
        phases.append(phase(name=P.REF_LOG_PROB, terms=ref + tr.cache_kept(cached, ref, update=False) + asleep))
        cached = 0 if tr.cache_emptied(update=False) else max(cached, transient(ref))
    upd = tr.update()
    phases.append(phase(name=P.ACTOR_UPDATE, terms=upd + tr.cache_kept(cached, upd, update=True) + asleep))
    if "reward" in engines:
        others = [t for r, e in engines.items() if r != "reward" for t in engine_terms(r, e, False, c)]
        phases.append(phase(name=P.REWARD, terms=tr.resident() + engine_terms("reward", engines["reward"], True, c)
                            + others))
    return phases, free


def worst_stage(values: Mapping, cfg: MemoryConfig, actor: ModelFacts, c: MemoryConstants,
                peak: Callable[[MegatronTrainer], int]) -> MegatronTrainer:
    """The stage whose GPUs peak highest (``peak``: a trainer's peak over its phases): the first (embedding, PP
    micro-batches in flight) or the last (output layer, logits); the middle ones hold less than either."""
    m = read_megatron(values, cfg.world)
    first = MegatronTrainer(values, cfg, actor, c, 0, m)
    if m.pp == 1:
        return first
    last = MegatronTrainer(values, cfg, actor, c, m.pp - 1, m)
    return last if peak(last) > peak(first) else first
