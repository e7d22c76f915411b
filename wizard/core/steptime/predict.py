"""Seconds per phase and per step of a verl 0.9.1 run, before it starts, from terms a reader can follow.

Each phase is a sum of :class:`TimeTerm` (seconds, with the arithmetic that gave them):

- **generation**: decode steps x the time of one decode step (the weights and KV cache read from memory once per
  step at the GPU's bandwidth, plus the engine's per-step overhead, larger without CUDA graphs), once per round when
  the KV cache holds fewer sequences than the batch puts on a replica; the prompts' prefill as FLOPs; the agent
  loop's work on each finished sample (its reward, its put into TransferQueue); and verl's trainer sees it finish
  only at its replay buffer's next poll, every 2 s (``verl/trainer/ppo/v1/replay_buffer.py:144,409``).
- **log-prob passes** (old log-prob, reference, critic values): tokens x FLOPs per token / achieved FLOP/s, plus the
  per-token handling measured around them (moving the batch in and out of the workers), plus, for the actor's and
  the reference's log-probs without flash-attn, verl's loop over the tokens (one log_softmax over the vocabulary
  each), plus loading offloaded parameters over the host link.
- **updates** (actor, critic): 6 x params FLOPs per token (8 with gradient checkpointing; LoRA trains no weight
  gradients of the base: 4 and 6), the per-token and per-sequence handling, the optimizer step (its states read and
  written at memory bandwidth, or moved over the host link when offloaded, or run on the CPU with offload_policy).
- **weight sync**: the weights' bytes through the engine's update at a measured rate, plus a fixed cost.

Random-weight models (the bench's) run every response to max_response_length, which is also what the prediction
assumes unless ``wizard.response_tokens`` states an expected mean (a smoke run's samples give one). Calibrated on
real verl 0.9.1 runs on one H200 measured alone on the GPU (``bench/bench_step_time.py`` prints each run's
predicted and measured seconds); other GPUs are scaled by their dense BF16 tensor FLOP/s and memory bandwidth from
the GPU catalogue. Pure.
"""

from __future__ import annotations

from collections.abc import Mapping

from wizard.core.hardware.cluster import Cluster
from wizard.core.placement.pools import plan_placement, pool_cluster, trainer_mode
from wizard.core.memory.batching import (
    SYNTHETIC_SEQ_TOKENS, actor_micro_batches, critic_micro_batches, critic_values_micro_batches, logprob_micro_batches,
    sequence_parallel, synthetic_sequences,
)
from wizard.core.memory.config import read_config
from wizard.core.memory.estimate import MemoryReport
from wizard.core.memory.terms import lora_params
from wizard.core.memory.vision import has_tower
from wizard.core.models.facts import ModelFacts
from wizard.core.steptime import comm
from wizard.core.steptime.generation import generation
from wizard.core.steptime.guards import engine_stops, no_step
from wizard.core.steptime.megatron import ASSUMPTION, MegatronStep
from wizard.core.verl.keys import M
from wizard.core.steptime.terms import (  # noqa: F401 (PROMPT_TOKENS, RESPONSE_TOKENS, TimeTerm: the package's face)
    CALIBRATION, PROMPT_TOKENS, RESPONSE_TOKENS, Calibration, Gpu, PhaseTime, StepTime, TimeTerm, flops_params,
    mean_lengths,
    host_term, int_value, trainer_gpu,
)


def _given(stated, used: int) -> str:
    """How a stated mean response length was taken: as given, or capped at data.max_response_length."""
    if isinstance(stated, int) and not isinstance(stated, bool) and stated > used:
        return f" (given {stated:,}, capped at data.max_response_length)"
    return " (as given)"


def predict_step(values: Mapping, models: Mapping[str, ModelFacts], cluster: Cluster | None,
                 report: MemoryReport | None = None, c: Calibration = CALIBRATION) -> StepTime:
    """The steady step (not the first, which also warms up) of a sync colocated run, per phase."""
    actor = models.get("actor")
    if actor is None:
        return StepTime(reason="the actor's model is unknown")
    gpu, why = trainer_gpu(cluster, c)
    if gpu is None:
        return StepTime(reason=why)
    # the rings run over the GPUs the trainer's pool takes, node by node (4 of each of two 8-GPU nodes: a ring of 8
    # crosses the network), not over the first node's GPUs
    placement = report.placement if report is not None else plan_placement(values, cluster)
    links_on = pool_cluster(cluster, placement.pool("global_pool"))
    cfg = read_config(values)
    if cfg.engines["rollout"].name not in ("vllm", "sglang"):
        return StepTime(reason=f"the {cfg.engines['rollout'].name} engine's speed is not modelled")
    if cfg.strategy not in ("fsdp", "fsdp2", "megatron"):
        return StepTime(reason=f"the {cfg.strategy} training engine's speed is not modelled")
    lp, lr = mean_lengths(values, cfg)
    if why := no_step(values, lp + lr) or engine_stops(values, report):
        return StepTime(reason=why)
    assumptions = [f"prompts average {lp:,} tokens" + (" (the train file's)" if PROMPT_TOKENS in values else
                                                        " (data.max_prompt_length: the train file was not read)"),
                   f"responses average {lr:,} tokens" + (_given(values.get(RESPONSE_TOKENS), lr)
                                                         if RESPONSE_TOKENS in values else
                                                         " (every response runs to data.max_response_length: the "
                                                         "worst case; --response-tokens states an expected mean)")]
    world = max(1, cfg.world)
    seqs = cfg.train_batch_size * cfg.rollout_n
    tokens = seqs * (lp + lr)
    # the V1 trainer's synthetic padding (batch.padded_step): never generated, but forwarded and trained on, at
    # SYNTHETIC_SEQ_TOKENS each; the passes and updates count them, and their sequences and micro-batches
    pad = synthetic_sequences(values)
    trained = seqs + pad
    per_gpu = (tokens + pad * SYNTHETIC_SEQ_TOKENS) / world
    if pad:
        assumptions.append(f"verl pads each step with {pad:,} synthetic sequences of {SYNTHETIC_SEQ_TOKENS} tokens "
                           f"(batch.padded_step): forwarded and trained on, never generated")
    flops_scale = gpu.tflops * 1e12
    mean_seq = lp + lr
    tp = cfg.engines["rollout"].tp
    # standalone replicas (separate_async without the hybrid engine) run their TP ring over their own pool's GPUs
    own = [p for p in placement.pools if p.name.startswith("rollout_pool_")]
    rollout_on = pool_cluster(cluster, own[0]) if own else links_on
    if trainer_mode(values) == "separate_async":
        assumptions.append("trainer mode separate_async: generation overlaps the trainer's phases; timed here as in "
                           "sync mode (their sum), an upper bound: no separate_async run was measured")
    phases = [generation(cfg, actor, report, seqs, lp, lr, gpu, c,
                          comm.ring_link(rollout_on, tp, c.host_link_gbs) if tp > 1 else None,
                          gpus=sum(p.size for p in own) or None)]
    if cfg.strategy == "megatron":
        return _megatron(values, cfg, actor, links_on, gpu, c, phases[0], trained,
                         round((tokens + pad * SYNTHETIC_SEQ_TOKENS) / trained), assumptions, tokens)
    # the FSDP trainer's passes
    links = {n: comm.ring_link(links_on, n, c.host_link_gbs) for n in {cfg.shards, cfg.critic_shards, world}}
    P, F = actor.param_count, flops_params(actor)  # F: what a token passes through (MoE: its top-k experts)
    actor_sp = sequence_parallel(values, "actor")
    lp_micro = logprob_micro_batches(values, world, mean_seq)
    rows = _rows(cfg)
    phases.append(_collectives(_forward("old_log_prob", "old log-prob", F, per_gpu, flops_scale, c,
                                        offload=cfg.actor_param_offload, param_bytes=2 * P / cfg.shards, rows=rows,
                                        extra=(*_masked_attention(values, cfg, actor, per_gpu, lp_micro, actor_sp,
                                                                      1, gpu, c), *_micro_term(lp_micro, c),
                                               *_fused_head(cfg, actor, per_gpu, c),
                                               *_policy_copies(cfg.actor_offload_policy, lp_micro, P, P, cfg.shards,
                                                               c, update=False))),
                               comm.forward_bytes(P, cfg.shards, lp_micro, cfg.actor_keeps_gathered),
                               links[cfg.shards]))
    if _uses_ref(values):  # a separate reference, or the actor with its LoRA adapters off
        ref_shards = world if cfg.ref_separate else cfg.shards
        ref_micro = logprob_micro_batches(values, world, mean_seq, ref=cfg.ref_separate)
        ref_sp = sequence_parallel(values, "ref") if cfg.ref_separate else actor_sp
        phases.append(_collectives(_forward("ref", "ref log-prob", F, per_gpu, flops_scale, c,
                                            offload=cfg.ref_separate, param_bytes=2 * P / cfg.shards, rows=rows,
                                            extra=(*_masked_attention(values, cfg, actor, per_gpu, ref_micro,
                                                                          ref_sp, 1, gpu, c), *_micro_term(ref_micro, c),
                                                   *_fused_head(cfg, actor, per_gpu, c))),
                                   comm.forward_bytes(P, ref_shards, ref_micro,
                                                      cfg.ref_keeps_gathered if cfg.ref_separate
                                                      else cfg.actor_keeps_gathered), links[ref_shards]))
    critic = models.get("critic")
    if cfg.need_critic and critic is not None:
        cp, cn = critic.param_count, cfg.critic_shards
        steps, epochs = _optimizer_steps(values, "critic.ppo_mini_batch_size", cfg, critic=True), _epochs(values, True)
        micro = critic_micro_batches(values, world, mean_seq)
        critic_sp = sequence_parallel(values, "critic")
        values_micro = critic_values_micro_batches(values, world, mean_seq)
        phases.append(_collectives(_forward("values", "critic values", flops_params(critic), per_gpu, flops_scale, c,
                                            offload=cfg.critic_param_offload,
                                            param_bytes=cfg.critic_dtype_bytes * cp / cn,
                                            extra=(*_masked_attention(values, cfg, critic, per_gpu, values_micro,
                                                                          critic_sp, 1, gpu, c), *_micro_term(values_micro, c))),
                                   comm.forward_bytes(cp, cn, values_micro, cfg.critic_keeps_gathered), links[cn]))
        no_sync = bool(cfg.critic_unsharded_grad_bytes)
        phases.append(_collectives(
            _update("update_critic", "critic update", cp, cp, cfg.critic_gc, epochs * per_gpu, epochs * trained / world,
                    steps, cn,
                    cfg.critic_param_offload, cfg.critic_optimizer_offload, cfg.critic_offload_policy, gpu, c,
                    active=flops_params(critic),
                    extra=(*_masked_attention(values, cfg, critic, epochs * per_gpu, micro * steps, critic_sp,
                                                  4 if cfg.critic_gc else 3, gpu, c), *_micro_term(micro * steps, c),
                           *_policy_copies(cfg.critic_offload_policy, epochs * micro * steps, cp, cp, cn, c,
                                           update=True))),
            comm.update_bytes(cp, cp, cn, micro, steps, cfg.critic_keeps_gathered, cfg.critic_reduce_bytes,
                              1 if no_sync else micro, gather_once=no_sync and cfg.critic_fsdp1 and
                              cfg.critic_keeps_gathered), links[cn],
            replicas=_replicas(links_on, world, cn, cfg.critic_reduce_bytes * cp, steps * (1 if no_sync else micro), c)))
    trainable = lora_params(actor, cfg.lora_rank) if cfg.lora_rank else P
    steps, epochs = _optimizer_steps(values, "actor_rollout_ref.actor.ppo_mini_batch_size", cfg), _epochs(values)
    micro = actor_micro_batches(values, world, mean_seq)
    phases.append(_collectives(
        _update("update_actor", "actor update", P, trainable, cfg.actor_gc, epochs * per_gpu, epochs * trained / world,
                steps, cfg.shards,
                cfg.actor_param_offload, cfg.actor_optimizer_offload, cfg.actor_offload_policy, gpu, c,
                lora=bool(cfg.lora_rank), active=F, rows=rows,
                extra=(*_masked_attention(values, cfg, actor, epochs * per_gpu, micro * steps, actor_sp,
                                              4 if cfg.actor_gc else 3, gpu, c), *_micro_term(micro * steps, c),
                       *_policy_copies(cfg.actor_offload_policy, epochs * micro * steps, P, trainable, cfg.shards, c,
                                       update=True))),
        comm.update_bytes(P, trainable, cfg.shards, micro, steps, cfg.actor_keeps_gathered, cfg.actor_reduce_bytes,
                          1 if cfg.actor_unsharded_grad_bytes else micro,
                          gather_once=bool(cfg.actor_unsharded_grad_bytes) and cfg.strategy == "fsdp"
                          and cfg.actor_keeps_gathered), links[cfg.shards],
        replicas=_replicas(links_on, world, cfg.shards, cfg.actor_reduce_bytes * trainable,
                           steps * (1 if cfg.actor_unsharded_grad_bytes else micro), c)))
    sync_bytes = 2 * (trainable if cfg.lora_rank else P)
    # verl gathers each sharded param whole for the sync (full_tensor(), fsdp/transformer_impl.py:1032): fp32 shards
    gathered = cfg.actor_dtype_bytes * (trainable if cfg.lora_rank else P)
    lora_sync = (TimeTerm("the adapter loaded into the engine", c.lora_sync_s, "measured once (a 7B LoRA run)"),) \
        if cfg.lora_rank else ()
    phases.append(_collectives(PhaseTime("update_weights", "weight sync", (
        TimeTerm("fixed", c.sync_fixed_s, "measured"), *lora_sync,
        TimeTerm("weights into the engine", sync_bytes / (c.sync_gbs * 1e9),
                 f"{sync_bytes / 1e9:.1f} GB at {c.sync_gbs:g} GB/s"), *_offloaded_sync(cfg, P, c))),
        comm.ring_bytes(gathered, cfg.shards), links[cfg.shards], label="FSDP gathers the weights to send"))
    if any(link is not None for link in links.values()) or cfg.shards < world:
        assumptions.append("FSDP's collectives timed from the links' bandwidth, overlapping the compute: not measured "
                           "(every calibration run used one GPU)")
    span = max(_packed(per_gpu, lp_micro, actor_sp), _packed(epochs * per_gpu, micro * steps, actor_sp))
    if not cfg.flash_attn and span > MEASURED_SPAN and values.get(f"{M}.use_remove_padding") is not False:
        assumptions.append(f"without flash-attn a micro-batch of {span:,.0f} packed tokens attends over all of them "
                           f"(one SDPA mask): the trainer's passes were measured up to {MEASURED_SPAN:,}, and grew "
                           "faster than the mask's counted attention there; this step may be longer; smaller "
                           "micro-batches or flash-attn avoid it")
    looped = [p for p in phases if any(t.label == ROWS_LABEL for t in p.terms)]
    if looped:
        step = sum(p.seconds for p in phases)
        seconds = sum(t.seconds for p in looped for t in p.terms if t.label == ROWS_LABEL)
        assumptions.append(f"without flash-attn verl computes the log-probs one token at a time: {seconds:.1f} s of this "
                           f"{step:.1f} s step ({', '.join(p.title for p in looped)}); with flash-attn installed where "
                           "the run happens that loop is gone" + ("" if has_tower(actor) else
                           ", and with actor_rollout_ref.model.use_fused_kernels=True verl's fused head replaces it "
                           "(measured: 47.6 -> 28.2 s a step for a 1.5B)"))
    return StepTime(phases=tuple(phases), assumptions=tuple(assumptions + _assumptions(cfg, actor, gpu)),
                    tokens=int(tokens))


# the largest packed micro-batch (tokens) the trainer passes were measured at: the 2,048-token run's log-prob
# passes, 16 x 2,486 (time-grpo-1.5b-fsdp2-u0.5-resp2048-h100), 8-9 % slower than predicted with the mask counted
MEASURED_SPAN = 39_800

ROWS_LABEL = "log-probs row by row"


def _rows(cfg) -> bool:
    """Whether the actor's and the reference's passes compute their log-probs token by token: verl's
    logprobs_from_logits_v2 loops over the tokens where flash-attn's Triton cross-entropy does not import
    (verl/utils/torch_functional.py:33-39,95-106), unless use_fused_kernels computes them in its fused head."""
    return not cfg.flash_attn and not cfg.fused_kernels


def _fused_head(cfg, actor: ModelFacts, tokens: float, c: Calibration) -> tuple[TimeTerm, ...]:
    """A log-prob pass's fused head (use_fused_kernels): the vocabulary's element-wise work on every token, measured
    without flash-attn (with it the head takes flash-attn's cross-entropy, not measured: nothing is added, as for
    flash-attn's log-probs without the head)."""
    if not cfg.fused_kernels or cfg.flash_attn:
        return ()
    logits = tokens * actor.vocab_size
    return (TimeTerm("fused log-prob head", logits * c.fused_head_s_per_logit,
                     f"{tokens:,.0f} tokens x {actor.vocab_size:,} logits x {c.fused_head_s_per_logit * 1e9:.2f} ns: "
                     "use_fused_kernels computes 512 tokens' logits at a time, with their softmax and entropy "
                     "(measured on one run)"),)


def _rows_term(tokens: float, per_token: float, rows: bool) -> tuple[TimeTerm, ...]:
    if not rows:
        return ()
    return (TimeTerm(ROWS_LABEL, tokens * per_token,
                     f"{tokens:,.0f} tokens x {per_token * 1e6:.1f} us: without flash-attn's cross-entropy verl loops "
                     "over the tokens, one log_softmax over the vocabulary each (logprobs_from_logits_v2); "
                     "flash-attn removes it"),)


def _assumptions(cfg, actor: ModelFacts, gpu: Gpu) -> list[str]:
    """What every prediction assumes beyond the lengths: the GPU's scaling, the engine, the attention."""
    assumptions = []
    if gpu.name != "H200-141GB":
        assumptions.append(f"scaled from the H200 to the {gpu.name} by BF16 FLOP/s ({gpu.tflops:g} TFLOP/s) and "
                           f"memory bandwidth ({gpu.bandwidth_gbs:g} GB/s)")
    if cfg.engines["rollout"].name == "sglang":
        assumptions.append("SGLang decodes at its own measured rate: the weights and KV read per step + 1.25 ms, "
                           "from the throughput it logged on an H100 (Qwen2.5-1.5B and 3B, attention_backend=triton; "
                           "+0.45 ms per layer eager), and its sleep is measured; its weight sync runs at vLLM's "
                           "rate, and its default flashinfer attention is not measured")
    if actor.vision_params:
        assumptions.append("the vision tower's work on the images is not timed (the language model's passes are)")
    if not cfg.flash_attn:
        assumptions.append("attention through SDPA (no flash-attn), as in the runs it was calibrated on")
    else:
        assumptions.append("flash-attn: calibrated on runs without it (SDPA, log-probs row by row), whose row loop and "
                           "packed-mask attention are left out here; its own kernels' time is not measured")
    return assumptions


def _megatron(values: Mapping, cfg, actor: ModelFacts, cluster: Cluster | None, gpu: Gpu, c: Calibration,
              gen: PhaseTime, seqs: int, mean_seq: int, assumptions: list[str], tokens: int) -> StepTime:
    """The step of a plan whose trainer is Megatron: the rollout's generation, then the Megatron engine's passes
    (``seqs`` and ``mean_seq``: what they are trained on, synthetic padding included; ``tokens``: the step's own)."""
    ms = MegatronStep(values, cfg, actor, cluster, gpu, c, seqs=seqs, mean_seq=mean_seq)
    if ms.unmodelled:
        return StepTime(reason=ms.unmodelled)
    phases = [gen, ms.forward("old_log_prob", "old log-prob", ms.t.logprob_tokens, ms.m.param_offload)]
    if _uses_ref(values):
        phases.append(ms.forward("ref", "ref log-prob", ms.t.ref_tokens, ms.m.ref_param_offload,
                                 pageable=True))
    phases += [ms.update(_optimizer_steps(values, "actor_rollout_ref.actor.ppo_mini_batch_size", cfg), _epochs(values)),
               ms.weight_sync()]
    return StepTime(phases=tuple(phases), assumptions=tuple(assumptions + [ASSUMPTION] + _assumptions(cfg, actor, gpu)),
                    tokens=int(tokens))


def _offloaded_sync(cfg, params: int, c: Calibration) -> tuple[TimeTerm, ...]:
    """Offloaded params reach the GPU for the sync (verl fsdp/transformer_impl.py:977-1040, get_per_tensor_param):
    FSDP2 moves each shard as it sends it (``.to(device)``); FSDP1 and LoRA load the whole shard and offload it
    after (load_fsdp_model_to_gpu / offload_fsdp_model_to_cpu)."""
    if not (cfg.actor_param_offload or cfg.actor_offload_policy):
        return ()
    staged = (cfg.strategy == "fsdp" or bool(cfg.lora_rank)) and not cfg.actor_offload_policy
    nbytes = (2 if staged else 1) * cfg.actor_dtype_bytes * params / cfg.shards
    return (host_term("params from the host", nbytes, c, "in and out" if staged else ""),)


def _collectives(phase: PhaseTime, nbytes: float, link: comm.Link | None, label: str = "",
                 replicas: tuple[float, comm.Link | None, int] | None = None) -> PhaseTime:
    """``phase`` with the time its FSDP collectives take beyond its compute (FSDP overlaps them with it; a phase
    without FLOPs, the weight sync, waits for all of it); ``replicas``: (bytes, link, count) of the gradients'
    all-reduce between FSDP groups (fsdp_size below the GPU count: verl's 2-D mesh, HSDP)."""
    parts = [(nbytes, link, "")] if link is not None and nbytes > 0 else []
    if replicas is not None and replicas[1] is not None and replicas[0] > 0:
        parts.append((replicas[0], replicas[1], f" all-reduced between the {replicas[2]} FSDP groups"))
    if not parts:
        return phase
    seconds = sum(b / (ln.gbs * 1e9) for b, ln, _ in parts)
    compute = sum(t.seconds for t in phase.terms if t.label == "FLOPs")
    beyond = max(0.0, seconds - compute)
    note = " + ".join(f"{b / 1e9:,.1f} GB per GPU{what} over {ln.how} at {ln.gbs:.0f} GB/s" for b, ln, what in parts)
    note += f" = {seconds:.1f} s" + (f", overlapping {compute:.1f} s of compute" if compute else "")
    return PhaseTime(phase.name, phase.title, (*phase.terms, TimeTerm(
        label or "FSDP collectives beyond the compute", beyond, note + "; from link bandwidth, not measured")))


def _replicas(cluster: Cluster | None, world: int, shards: int, grad_bytes: float, syncs: int,
              c: Calibration) -> tuple[float, comm.Link | None, int] | None:
    """The gradients' all-reduce between the world / shards FSDP groups: each sync, every GPU's shard of them."""
    groups = world // max(1, shards)
    if groups < 2:
        return None
    return comm.allreduce_bytes(grad_bytes / max(1, shards), groups) * syncs, \
        comm.ring_link(cluster, world, c.host_link_gbs), groups


def _uses_ref(values: Mapping) -> bool:
    from wizard.core.verl.roles import need_ref

    return need_ref(values)


def _epochs(values: Mapping, critic: bool = False) -> int:
    """Passes of an update over the batch (critic.ppo_epochs follows the actor's unless set)."""
    actor = int_value(values, "actor_rollout_ref.actor.ppo_epochs", 1)
    return int_value(values, "critic.ppo_epochs", actor) if critic else actor


def _optimizer_steps(values: Mapping, mini_key: str, cfg, critic: bool = False) -> int:
    """Mini-batches a step's update takes: the step's sequences, the V1 trainer's synthetic padding included, in
    mini-batches of ppo_mini_batch_size x n, times the epochs."""
    mini = int_value(values, mini_key, int_value(values, "actor_rollout_ref.actor.ppo_mini_batch_size", 256))
    n = max(1, cfg.rollout_n)
    trained = cfg.train_batch_size * n + synthetic_sequences(values)
    return max(1, trained // max(1, mini * n)) * _epochs(values, critic)


def _forward(name: str, title: str, params: int, tokens: float, flops: float, c: Calibration, *, offload: bool,
             param_bytes: float, rows: bool = False, extra: tuple[TimeTerm, ...] = ()) -> PhaseTime:
    """``rows``: the pass computes its log-probs row by row (:func:`_rows`); ``extra``: the pass's terms that depend on
    its micro-batches (the packed mask's attention, the cost per micro-batch)."""
    terms = [TimeTerm("FLOPs", 2 * params * tokens / (flops * c.fwd_efficiency),
                      f"2 x {params / 1e9:.2f}B params x {tokens:,.0f} tokens per GPU at {c.fwd_efficiency:.0%} of "
                      f"{flops / 1e12:g} TFLOP/s"),
             TimeTerm("per token", tokens * c.fwd_s_per_token, f"{tokens:,.0f} tokens x {c.fwd_s_per_token * 1e6:.1f} us"),
             *_rows_term(tokens, c.logprob_rows_fwd_s_per_token, rows)]
    if offload:
        terms.append(host_term("params from the host", param_bytes, c))
    return PhaseTime(name, title, (*terms, *extra))


def _update(name: str, title: str, params: int, trainable: int, gc: bool, tokens: float, seqs: float, steps: int,
            shards: int, param_offload: bool, optimizer_offload: bool, policy: bool, gpu: Gpu, c: Calibration,
            lora: bool = False, active: int | None = None, rows: bool = False,
            extra: tuple[TimeTerm, ...] = ()) -> PhaseTime:
    """``params``: the model's; ``active``: those a token passes through (an MoE model's top-k experts); ``rows``:
    the log-probs row by row (:func:`_rows`); ``extra``: the terms that depend on its micro-batches."""
    k = (4 if lora else 6) + (2 if gc else 0)
    flops = gpu.tflops * 1e12
    a = active or params
    terms = [TimeTerm("FLOPs", k * a * tokens / (flops * c.train_efficiency),
                      f"{k} x {a / 1e9:.2f}B {'active ' if a != params else ''}params x {tokens:,.0f} tokens per GPU at {c.train_efficiency:.0%} "
                      f"of {flops / 1e12:g} TFLOP/s" + (" (gradient checkpointing recomputes the forward)" if gc else "")),
             TimeTerm("per token", tokens * c.train_s_per_token, f"{tokens:,.0f} x {c.train_s_per_token * 1e6:.1f} us"),
             *_rows_term(tokens, c.logprob_rows_train_s_per_token, rows),
             TimeTerm("per sequence", seqs * c.train_s_per_sequence, f"{seqs:,.0f} x {c.train_s_per_sequence * 1e3:.0f} ms")]
    state = 16 * trainable / shards  # fp32 params, grads and two AdamW moments of this GPU's shard
    if policy:
        terms.append(TimeTerm("optimizer on the CPU", steps * trainable / shards * c.cpu_adam_s_per_param,
                              f"{steps} step(s) x {trainable / shards / 1e9:.2f}B params (offload_policy)"))
        terms.append(TimeTerm("params and grads over the host link", steps * 8 * trainable / shards /
                              (c.host_link_gbs * 1e9), "each optimizer step"))
    else:
        terms.append(TimeTerm("optimizer step", steps * state / (gpu.bandwidth_gbs * 1e9 * c.bandwidth_efficiency),
                              f"{steps} step(s) x {state / 1e9:.1f} GB of states"))
        if optimizer_offload:
            terms.append(TimeTerm("optimizer states over the host link", 2 * 8 * trainable / shards /
                                  (c.host_link_gbs * 1e9), "in and out once per update"))
    if param_offload and not policy:
        terms.append(TimeTerm("params over the host link", 2 * 4 * params / shards / (c.host_link_gbs * 1e9),
                              "in and out once per update"))
    return PhaseTime(name, title, (*terms, *extra))


def _masked_attention(values: Mapping, cfg, f: ModelFacts, tokens: float, micro_batches: float, sp: int, passes: int,
                      gpu: Gpu, c: Calibration) -> tuple[TimeTerm, ...]:
    """Attention's work without flash-attn: transformers' SDPA path attends over a micro-batch's whole packed
    (T x T) block-causal mask, every (query, key) pair computed, so a token costs 4 x T x heads x head_dim x layers
    FLOPs per forward, T the micro-batch's tokens (its Ulysses group's; each GPU computes its share of the heads).
    Without use_remove_padding each sequence is padded to the longest and attends over that. ``passes``: 1 for a
    forward, 3 for a forward and backward, 4 with gradient checkpointing's recompute. With flash-attn (varlen) each
    sequence attends causally to itself only, a few % of the FLOPs at these lengths: left out."""
    if cfg.flash_attn or tokens <= 0 or not c.attention_tflops:
        return ()
    packed = values.get(f"{M}.use_remove_padding") is not False
    span = _packed(tokens, micro_batches, sp) if packed else cfg.seq_tokens
    width, layers = f.num_attention_heads * f.head_dim, f.num_layers
    rate = c.attention_tflops * 1e12 * gpu.tflops / c.ref_tflops
    flops = passes * 4 * span * width * layers * tokens
    how = "a micro-batch's packed tokens" if packed else "the padded sequence"
    return (TimeTerm("attention over the SDPA mask", flops / rate,
                     f"{passes} x 4 x {span:,.0f} ({how}) x {width} x {layers} layers x {tokens:,.0f} tokens per GPU "
                     f"at {rate / 1e12:.0f} TFLOP/s: no flash-attn, so every pair in the micro-batch is computed; "
                     "smaller micro-batches or flash-attn make it smaller"),)


def _packed(tokens: float, micro_batches: float, sp: int) -> float:
    """Tokens in one packed micro-batch of a pass: a GPU's ``tokens`` over its micro-batches, times the Ulysses
    group that shares each micro-batch."""
    return tokens * sp / max(1.0, micro_batches)


def _policy_copies(on: bool, micro_batches: float, params: int, trainable: int, shards: int, c: Calibration,
                   update: bool) -> tuple[TimeTerm, ...]:
    """FSDP2's CPU offload policy keeps the fp32 shards on the host: each gather copies a shard to the GPU (the
    forward's, and with reshard_after_forward the backward's again: torch fully_shard _fsdp_param.py), and each
    micro-batch's reduced gradients come back to the host (_fsdp_collectives.py), every micro-batch, not once a step.
    At the host link's rate: a lower bound (the copies of many small tensors, and the CPU's adds, are slower)."""
    if not on or micro_batches <= 0:
        return ()
    per = 4 * params / shards * (2 if update else 1) + (4 * trainable / shards if update else 0)
    return (host_term("offload policy: shards to the GPU" + (" and grads back" if update else ""),
                      micro_batches * per, c,
                      f"{micro_batches:,.0f} micro-batches x {per / 1e9:.2f} GB (not measured alone)"),)


def _micro_term(micro_batches: float, c: Calibration) -> tuple[TimeTerm, ...]:
    """verl's fixed work per micro-batch of a pass (its slicing, the FSDP hooks of each layer, the loss's
    bookkeeping), whatever its tokens."""
    if not c.micro_batch_s or micro_batches <= 0:
        return ()
    return (TimeTerm("per micro-batch", micro_batches * c.micro_batch_s,
                     f"{micro_batches:,.0f} micro-batches x {c.micro_batch_s * 1e3:.0f} ms"),)

