"""The pieces of a step-time prediction: the measured constants (:class:`Calibration`), a phase's terms and the step's
phases (:class:`TimeTerm`, :class:`PhaseTime`, :class:`StepTime`), the GPU they are scaled to, and what a token's
FLOPs count. Split from :mod:`wizard.core.steptime.predict`, whose docstring says how the terms are made. Pure.
"""

from __future__ import annotations

from dataclasses import dataclass

from wizard.core.hardware.cluster import Cluster
# Not verl keys: what the run's data and responses are expected to hold (means, tokens), shared with the memory verdict
from wizard.core.memory.lengths import PROMPT_TOKENS, RESPONSE_TOKENS, int_value, mean_lengths  # noqa: F401
from wizard.core.models.facts import ModelFacts


@dataclass(frozen=True)
class Calibration:
    """The measured constants, at the reference GPU (H200 SXM: 989 dense BF16 TFLOP/s, 4,800 GB/s)."""

    ref_tflops: float = 989.0
    ref_bandwidth_gbs: float = 4800.0
    # The model's own work, measured on the lent H100 with verl's kit (bench/real/attn_probe.py; bench/data/attn_probe/,
    # bench/bench_attention_probe.py): Qwen2.5-1.5B's 28 layers and 151,936-token head, its sequences as separate rows
    # (no mask), ran a forward and the log-probs at 8.8 us a token (35.6 % of 989 TFLOP/s) and a forward + backward
    # at 26.5 us a token (35 %).
    fwd_efficiency: float = 0.356  # achieved / peak FLOP/s of a log-prob pass's linear layers and head
    train_efficiency: float = 0.35  # the same in update_actor / update_critic
    # Attention without flash-attn: verl packs a micro-batch's sequences into one row (use_remove_padding) and
    # transformers' SDPA path gets them as one (T x T) block-causal boolean mask (masking_utils, packed sequences
    # found from position_ids; tests/conformance/test_sdpa_packed_mask.py), so torch's attention (cuDNN's on an H100)
    # computes every (query, key) pair of the micro-batch: 4 x T x (heads x head_dim) x layers FLOPs per token of the
    # forward, growing with the micro-batch's tokens T. The probe measured it, over the same tokens as separate rows,
    # at 178-279 TFLOP/s in a forward (0.5B-7B shapes, T 15,200-55,100) and 196-206 in a forward + backward: its cost
    # per token and layer grows with heads x head_dim as the FLOPs say. verl's passes grow about twice as fast with T
    # as that (1.5B, T 15,200 -> 39,900 on the H100); not understood, and left as the runs' error at long micro-batches.
    attention_tflops: float | None = 200.0  # achieved by that masked attention at the reference GPU; None: not counted
    # What verl's passes spend beyond that work. Most of it is the log-probs: without flash-attn's Triton
    # cross-entropy (flash_attn.ops.triton.cross_entropy, verl/utils/torch_functional.py:33-39,95) verl takes
    # logprobs_from_logits_v2 (:173-207), which loops in Python over the micro-batch's tokens, one log_softmax (or
    # logsumexp) over the vocabulary a token: the actor's and the reference's passes pay it, the critic's (a value
    # head, no log-probs) do not. A 1.5B PPO run alone on an H100 (advised-ppo-1.5b-critic-4096-h100) measured the
    # critic's values pass at 7.0 s against the actor's old log-prob's 17.9 over the same 224,640 tokens, and its
    # update at 28.6 s against the actor's 58.6. So the per-token constants fitted before to the actor's passes of
    # 13 runs alone (63.4 and 132.5 us) are split: what the critic's two passes leave after their FLOPs, attention
    # and micro-batches is the work every pass has (7.7 / 21.8 us), the rest is the loop's (55.7 / 110.7 us). A free
    # refit over the 17 runs alone (bench/fit_trainer_passes.py --attention 200 --fwd-eff 0.356 --train-eff 0.35)
    # gives 8.4 / 24.3 / 54.9 / 118.6 us with no cost per micro-batch, mean |error| 6.5 % over their 52 passes against
    # these constants' 6.7 %. With flash-attn (or use_fused_kernels) the loop is not there; what flash-attn's
    # cross-entropy costs in its place is not measured here (the device has no flash-attn wheel).
    fwd_s_per_token: float = 7.7e-6  # per token of any log-prob or values pass beyond its FLOPs
    train_s_per_token: float = 21.8e-6  # per token of an update beyond its FLOPs
    logprob_rows_fwd_s_per_token: float = 55.7e-6  # the row-by-row log-probs, per token of a forward
    logprob_rows_train_s_per_token: float = 110.7e-6  # the same in an update (its backward through each row's op)
    # use_fused_kernels (verl's fused head, torch backend: 512 tokens' fp32 logits at a time, their softmax, entropy
    # and log-softmax) in place of the loop: one run alone on an H100 (time-grpo-1.5b-fsdp2-u0.5-resp1024-fused-h100,
    # beside the same config without it: 28.2 s a step against 47.6) spent 1.43 s a log-prob pass over 93,536 tokens
    # beyond the other terms: 0.10 ns a logit (the head's element-wise passes go over the vocabulary). Its update came
    # within -2 % of the terms without it, so the update has none (its chunks' cost is inside the update's per-token
    # work, fitted to runs without the loop's share)
    fused_head_s_per_logit: float = 0.10e-9
    train_s_per_sequence: float = 0.0491  # per sequence of an update (per-sample work of the loss and the batch)
    # per micro-batch of any pass, whatever its tokens: fitted with the rest, and barely pinned (the runs' micro-batches
    # were 4-16 samples, nearly always in proportion to their tokens), so the advisor offers no micro-batch below 4
    # as faster (wizard.core.advice.moves.SMALLEST_MEASURED_MICRO)
    micro_batch_s: float = 0.0111
    # One decode step: the weights and the KV cache read at bandwidth_efficiency x the datasheet bandwidth, plus the
    # engine's own overhead. vLLM with CUDA graphs adds nothing measurable: a 1.5B run decoded 64 x 1,024 tokens,
    # prefill and per-sample work included, inside one 4-s poll on an H100 (time-grpo-1.5b-fsdp2-u0.5-resp1024-h100),
    # which bounds its step at <= 2.1 ms, the bytes' time at 0.7. SGLang (attention_backend=triton) logs its decode
    # throughput: 20,000 tokens/s at 64 sequences for 1.5B and 14,000 for 3B on an H100, the bytes' time + 1.25 ms
    # at both sizes; eager, 4,000 tokens/s at 1.5B: + 0.45 ms per layer (kernel launches).
    decode_overhead_graphs_s: float = 0.0
    sglang_decode_overhead_s: float = 0.00125
    decode_overhead_eager_layer_s: float = 0.00045
    bandwidth_efficiency: float = 0.7  # achieved / datasheet memory bandwidth, reading weights and KV
    # Per sample, after its decode: the agent loop scores it (the reward loop's workers) and puts it into
    # TransferQueue (verl/trainer/ppo/v1/agent_loop_tq.py:150-226), one sample at a time in each agent-loop worker's
    # event loop. 55 ms per sample and worker (27.5 ms per sample with the 2 workers every run had): the value that
    # puts every alone run's generation inside the 2-s poll it was seen at (bench/bench_step_time.py); without it a
    # 1.5B n=8 run (128 samples) could not take its > 4 s while 64 x 1,024 tokens took < 4 s.
    sample_s_per_worker: float = 0.055
    # vLLM decoding with a LoRA adapter, eager: x the same without (side-by-side pairs of 0.5-3B runs, all eager).
    # With CUDA graphs the adapter's kernels are inside the graphs: a 7B LoRA run alone on an H100 decoded 64 x 512
    # tokens within 10 % of the bytes' time without an adapter (advised-grpo-7b-full-1gpu-h100: 2.7 had predicted
    # 14.0 s of generation, measured 6.4), so no factor there
    lora_decode_factor: float = 2.7
    # a LoRA weight sync: vLLM takes the adapter as a runtime LoRA update (verl sets VLLM_ALLOW_RUNTIME_LORA_UPDATING):
    # 1.0 and 1.2 s a sync measured against the 0.2 s of a full sync's fixed cost (advised-grpo-7b-full-1gpu-h100)
    lora_sync_s: float = 0.8
    poll_s: float = 2.0  # verl's replay buffer polls for finished generations every 2 s
    # SGLang's sleep (release_memory_occupation of its weights and KV cache), inside verl's gen timer
    # (trainer_base.py:565-575: on_sample_end -> sleep_replicas in trainer_sync.py, the default trainer_mode, and in
    # trainer_colocate_async.py; async_sglang_server.py:505 skips it without free_cache_engine): 1.3-1.6 s after the
    # poll that saw the last sequence, on an H100 with Qwen2.5-1.5B (3 runs, KV pools of 1.8-40 GB); vLLM's sleep takes 0.06-0.1 s there
    sglang_sleep_s: float = 1.4
    sync_fixed_s: float = 0.22  # a weight sync's fixed cost
    sync_gbs: float = 30.0  # the weight sync's rate (GB/s of bf16 weights into the engine)
    host_link_gbs: float = 25.0  # achieved host <-> GPU copy rate (PCIe Gen5 x16 is 64 GB/s on paper)
    cpu_adam_s_per_param: float = 1.5e-9  # torch's CPU AdamW (FSDP2 CPUOffloadPolicy), per parameter and step
    # Megatron's passes beyond their FLOPs (verl's Megatron engine, megatron-core 0.18, TransformerEngine 2.16.1,
    # mbridge 0.15.1; four runs alone on an H100 at TP = PP = 1, bench/data/verl_real/meg-*-h100: Qwen2.5-0.5B and
    # 1.5B, 60,800 tokens a pass, and a 1.2B Qwen3-MoE, 52,800): a log-prob pass less its FLOPs (at FSDP's efficiency)
    # is 9.2-14.3 us a token, least squares 12.3 (FSDP's 7.7 did not cover it); an update less its FLOPs and optimizer
    # step 23.2 and 11.1 us a token on the dense models, 17.2 between them, and nothing per sequence (FSDP's 49 ms a
    # sequence would have made the 0.5B's 5.0 s where it took 1.95). The two dense sizes differed by less than their
    # FLOPs at FSDP's efficiency (at any efficiency up to the GPU's peak): at these sizes the per-token work dominates,
    # and the split is not measurable; FSDP's efficiencies are kept for the FLOPs of larger models, which no Megatron
    # run measured. The MoE's update spent 20.5 us a token more than that: 0.32 us a token for each MoE layer and
    # each of its top-k copies (16 layers x top-4; megatron-core's all-to-all dispatcher permutes each copy to its
    # expert and back, and the experts' grouped GEMMs), one run, taken as scaling with layers and top-k.
    megatron_fwd_s_per_token: float = 12.3e-6
    megatron_train_s_per_token: float = 17.2e-6
    megatron_moe_train_s_per_copy: float = 0.32e-6
    # The weight sync beyond the bytes: mbridge exports one Hugging Face tensor at a time; least squares over the
    # four runs (267-1,683 tensors; 0.30-1.04 s): 0.2 s and 0.5 ms a tensor (the MoE's 32 experts x 3 weights a layer
    # made its sync 1.1 s where the dense 1.5B's took 0.45)
    megatron_sync_fixed_s: float = 0.2
    megatron_sync_s_per_tensor: float = 0.5e-3
    # The Megatron reference's param_offload moves each param to pageable host memory and back, one tensor at a time
    # (verl/utils/megatron_utils.py:784-795: the reference is not wrapped in DDP, so it has no pinned buffer): the
    # 1.5B's reference pass took 3.0 s with it and 1.0 s without, 2 x 3.1 GB moved (meg-grpo-1.5b-tp1-u0.5-*-h100)
    pageable_gbs: float = 3.1


CALIBRATION = Calibration()


@dataclass(frozen=True)
class TimeTerm:
    label: str
    seconds: float
    note: str = ""


@dataclass(frozen=True)
class PhaseTime:
    name: str  # verl's timing_s/<name>: gen, old_log_prob, ref, values, update_critic, update_actor, update_weights
    title: str
    terms: tuple[TimeTerm, ...]

    @property
    def seconds(self) -> float:
        return sum(t.seconds for t in self.terms)

    def lines(self) -> list[str]:
        """``the actor update, 73.4 s:`` and one line per term, its seconds and arithmetic, largest first."""
        return [f"{self.title}, {self.seconds:.1f} s:"] + [
            f"  {t.seconds:7.2f} s  {t.label}" + (f" ({t.note})" if t.note else "")
            for t in sorted(self.terms, key=lambda t: -t.seconds)]


@dataclass(frozen=True)
class StepTime:
    phases: tuple[PhaseTime, ...] = ()
    reason: str | None = None  # why there is no prediction
    assumptions: tuple[str, ...] = ()
    tokens: int = 0  # prompt + response tokens of one step (the batch x n)

    @property
    def seconds(self) -> float | None:
        return None if self.reason else sum(p.seconds for p in self.phases)

    def by_name(self) -> dict[str, float]:
        return {p.name: round(p.seconds, 2) for p in self.phases}

    def longest(self) -> PhaseTime | None:
        return max(self.phases, key=lambda p: p.seconds, default=None) if self.reason is None else None

    def terms_json(self) -> dict[str, list[dict]]:
        return {p.name: [{"label": t.label, "seconds": round(t.seconds, 3), "note": t.note} for t in p.terms]
                for p in self.phases}

    def line(self, if_it_fit: bool = False) -> str:
        """``if_it_fit``: for a plan that does not fit, which runs no step: what one would take."""
        if self.reason:
            return f"step time: not predicted ({self.reason})"
        parts = ", ".join(f"{p.title} {p.seconds:.1f}" for p in self.phases if p.seconds >= 0.05)
        return f"step time{', if it fit' if if_it_fit else ''}: about {seconds_text(self.seconds)} s ({parts} s)"


def seconds_text(seconds: float) -> str:
    """A step's seconds as the wizard prints them: a decimal under 100 s, where the advisor's 2 % gain would not show
    in whole seconds (11.4 s against 11.1 read "about 11 s" twice)."""
    return f"{seconds:.1f}" if seconds < 100 else f"{seconds:.0f}"


@dataclass(frozen=True)
class Gpu:
    """What a prediction scales by: the card's dense BF16 TFLOP/s and memory bandwidth (the catalogue's)."""

    tflops: float
    bandwidth_gbs: float
    name: str
    memory_bytes: int = 0


def trainer_gpu(cluster: Cluster | None, c: Calibration) -> tuple[Gpu | None, str | None]:
    """The first GPU of the cluster as a :class:`Gpu`, or None with why no step time can be scaled to it."""
    if cluster is None:
        return None, "the GPU model is not named: its FLOP/s and memory bandwidth scale the step"
    gpus = [g for n in cluster.nodes for g in n.gpus]
    if not gpus:
        return None, "the GPU model is unknown"
    g = gpus[0]
    if g.bf16_tflops and g.memory_bandwidth_gbs:
        return Gpu(g.bf16_tflops, g.memory_bandwidth_gbs, g.catalogue_id or g.name, g.memory_total_bytes or 0), None
    if g.memory_bandwidth_gbs:
        return None, (f"the GPU catalogue has no BF16 tensor-core figure for {g.catalogue_id or g.name} (V100 and T4 "
                      "have no BF16 tensor cores)")
    return None, f"the speed of {g.name} is unknown (not in the GPU catalogue)"


def host_term(label: str, nbytes: float, c: Calibration, why: str = "") -> TimeTerm:
    """Bytes moved between the host and the GPU at the measured host-link rate."""
    return TimeTerm(label, nbytes / (c.host_link_gbs * 1e9),
                    f"{nbytes / 1e9:.1f} GB at {c.host_link_gbs:g} GB/s" + (f", {why}" if why else ""))


def flops_params(f: ModelFacts) -> int:
    """The parameters a token of text passes through, for its FLOPs: an MoE model's active ones (its top-k experts);
    a vision tower's are left out (its work on the images is not timed, and said so)."""
    return f.active_param_count if f.num_experts and f.num_experts_per_tok else f.param_count - (f.vision_params or 0)


def routed_expert_params(f: ModelFacts) -> int:
    """An MoE model's routed experts' parameters (all of them, every MoE layer); 0 for a dense model."""
    if not (f.num_experts and f.num_experts_per_tok):
        return 0
    return f.num_experts * 3 * f.hidden_size * (f.moe_intermediate_size or f.intermediate_size) * (
        f.num_layers - f.num_dense_layers)
