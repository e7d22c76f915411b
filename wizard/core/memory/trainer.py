"""The training process's side of a GPU's memory: what the FSDP trainer (actor, reference, critic) holds in each
phase, what it allocates for a weight sync, and the first step's differences from the steady state. The phases
themselves, with the engines beside the trainer, are put together in :mod:`wizard.core.memory.estimate`. Pure."""

from __future__ import annotations

from wizard.core.memory import terms as mt
from wizard.core.memory import vision
from wizard.core.memory.config import MemoryConfig
from wizard.core.memory.sdpa_mask import TWO_MASK_MODEL_TYPES, mask_bytes
from wizard.core.memory.terms import FUSED_CHUNK_ROWS, MemoryConstants, Term
from wizard.core.models.facts import ModelFacts

ADAM_KEYS = ("actor_adam", "critic_adam")
# what FSDP1 on one GPU keeps on it from the load until the first step's passes (Trainer.first_step_extra)
FIRST_STEP_KEYS = ("ref_params", "critic_params")


VISION_WORST = ("at worst: every prompt token an image token (micro-batch x data.max_prompt_length; with Ulysses every "
                "rank of a group runs the whole micro-batch's images)")

def first_step_terms(terms: list[Term], extra: list[Term]) -> list[Term]:
    """A phase's terms as in the first step: no AdamW moments yet (PyTorch creates them at the first optimizer step),
    and ``extra`` where the phase does not already hold it."""
    return [t for t in terms if t.key not in ADAM_KEYS] + [t for t in extra if not any(u.key == t.key for u in terms)]


def term(key: str, label: str, value: float, note: str = "") -> Term:
    """A term of the estimate: its bytes rounded down, a NaN or an infinity read as 0."""
    return Term(key=key, label=label, bytes=int(mt.finite(value)), note=note)


def tok(tokens: float) -> str:
    return f"{int(tokens):,} tokens"


class Trainer:
    """The numbers of one training GPU that several phases share."""

    def __init__(self, cfg: MemoryConfig, actor: ModelFacts, critic: ModelFacts | None, c: MemoryConstants):
        self.cfg, self.f, self.critic, self.c = cfg, actor, critic, c
        self.P, self.Pt = actor.param_count, cfg.trainable_params(actor)
        self.N = cfg.shards
        bm = cfg.actor_dtype_bytes
        self.params, self.grads, self.adam = bm * self.P / self.N, bm * self.Pt / self.N, 2 * bm * self.Pt / self.N
        self.on_cpu = cfg.actor_offload_policy  # FSDP2 CPUOffloadPolicy: states stay on CPU even in the update
        # FSDP1 on one GPU (NO_SHARD) with param_offload: verl 0.9.1's offload leaves the params where they are at
        # init, and the weight sync loads them back without putting them away until the update. verl H200
        # (phase marks): "After offload model to cpu" still holds the actor's 1.91 GiB (Qwen2.5-0.5B fp32), and
        # old_log_prob loads a second copy on top (NVML: +1.6 GiB for 0.5B, +6.7 GiB for 1.5B beside 5.75 GiB).
        self.offload_stays = cfg.strategy == "fsdp" and self.N == 1 and cfg.actor_param_offload and not self.on_cpu
        # FSDP1 on one GPU with a separate reference model: verl builds the reference on the GPU and its CPU offload
        # moves it away only during its first pass (verl H200: 11.50 GiB allocated, actor + reference, for Qwen2.5-
        # 1.5B until the first reference pass; 22.99 GiB for 3B)
        self.ref_whole = cfg.strategy == "fsdp" and self.N == 1 and cfg.ref_separate
        if critic is not None:
            bc, Nc, Pc = cfg.critic_dtype_bytes, cfg.critic_shards, mt.critic_params(critic)
            self.c_params, self.c_adam = bc * Pc / Nc, 2 * bc * Pc / Nc
        else:
            self.c_params = self.c_adam = 0.0

    def resident(self, *, params_loaded: bool = False, adam: bool = True, put_away: bool = False,
                 ref_gathered: bool = True) -> list[Term]:
        """What stays on the GPU between calls (after the first step created AdamW's moments); ``ref_gathered``:
        with the reference's reshard_after_forward=false, its whole bf16 copy from its last pass (never a backward
        to free it; verl's reshard after an eval pass is the root module's only, not recursive)."""
        cfg, out = self.cfg, []
        shard = f"{cfg.actor_dtype} x {self.P / 1e9:.2f}B params / {self.N} shards"
        stays = self.offload_stays and not put_away  # old_log_prob's offload at its end does put them away
        if not self.on_cpu and (params_loaded or not cfg.actor_param_offload or stays):
            note = ("FSDP1 on one GPU: param_offload leaves them on the GPU from the start and from each weight sync "
                    "until the update" if self.offload_stays and not params_loaded else
                    "loaded back for this call (param_offload moves it to CPU between calls)" if cfg.actor_param_offload
                    else "")
            out.append(term("actor_params", f"actor params ({shard})", self.params, note))
        if adam and not self.on_cpu and not cfg.actor_optimizer_offload and self.adam:
            out.append(term("actor_adam", "actor AdamW moments (2 per trainable param)", self.adam))
        if self.critic is not None and not cfg.critic_offload_policy:
            if not cfg.critic_param_offload:
                out.append(term("critic_params", f"critic params ({cfg.critic_dtype}, 1/{cfg.critic_shards})", self.c_params))
            if adam and not cfg.critic_optimizer_offload:
                out.append(term("critic_adam", "critic AdamW moments", self.c_adam))
        out.append(term("trainer_context", "trainer process: CUDA context, NCCL and library workspaces",
                        self.c.trainer_context + (self.c.nccl_buffers if cfg.world > 1 else 0)))
        if cfg.ref_keeps_gathered and ref_gathered:
            out.append(term("ref_gathered", "reference model still gathered whole in bf16 from its last pass "
                            "(ref.fsdp_config.reshard_after_forward=false)", 2 * self.P))
        return out

    def actor_still_gathered(self) -> list[Term]:
        """With the actor's reshard_after_forward=false, the old log-prob pass's whole bf16 copy until the update's
        backward frees it: held through the passes and the critic's update between them."""
        return [term("actor_gathered", "actor model still gathered whole in bf16 from the old log-prob pass, until "
                     "its update's backward (reshard_after_forward=false)", 2 * self.P)] \
            if self.cfg.actor_keeps_gathered else []

    def at_load(self) -> list[Term]:
        """When the engine starts: the params (no AdamW yet), the allocator's cache from building FSDP, and on one
        GPU with FSDP1 the reference model too (NO_SHARD keeps it on the GPU until its first pass)."""
        f, c = self.f, self.c
        out = self.resident(adam=False, ref_gathered=False)
        out.append(term("allocator", "allocator cache left by building the FSDP modules",
                        c.allocator_slack_vocab * mt.vocab_matrix(f)))
        return out + self.first_step_extra()

    def first_step_extra(self) -> list[Term]:
        """What FSDP1 on one GPU keeps on it from the load until the first step's passes move it away: the reference
        model (its first pass) and a critic with param_offload (its first offload)."""
        cfg, out = self.cfg, []
        if self.ref_whole:
            out.append(term("ref_params", f"reference params ({cfg.actor_dtype}; FSDP1 on one GPU keeps them on it until "
                                        "the first reference pass, in the first step)", self.params))
        if (self.critic is not None and cfg.critic_param_offload and cfg.critic_fsdp1 and cfg.critic_shards == 1
                and not cfg.critic_offload_policy):
            # verl H200, PPO on one GPU: the load peaked at 14.9 GiB with and without the critic's param_offload
            out.append(term("critic_params", f"critic params ({cfg.critic_dtype}; FSDP1 on one GPU keeps them on it "
                                           "until the critic's first offload, in the first step)", self.c_params))
        return out

    def first_step(self, terms: list[Term]) -> list[Term]:
        """A phase at its worse step: the steady state (AdamW's moments resident) or the first step, before the
        first optimizer step and with first_step_extra still on the GPU (FSDP1 on one GPU). With the optimizer
        offloaded, or at the first weight sync, the first step is the higher one (verl H200, Qwen2.5-3B, FSDP1 with
        param and optimizer offload: 37.65 GiB allocated at the first sync, 23.9 GiB at the later ones)."""
        first = first_step_terms(terms, self.first_step_extra())
        return first if sum(t.bytes for t in first) > sum(t.bytes for t in terms) else terms

    def forward(self, tokens: float, entropy_mode: str, load_params: bool, put_away: bool = False,
                ref: bool = False, images: int = 0) -> list[Term]:
        """A forward-only pass of the actor (old log-prob) or the reference model (``ref``: params from CPU);
        ``images``: the image tokens a vision tower runs per micro-batch (MemoryConfig.logprob_images)."""
        f, c = self.f, self.c
        out = self.resident(params_loaded=load_params, put_away=put_away, ref_gathered=not ref)
        if ref:
            out += self.actor_still_gathered()
        if load_params and self.offload_stays:
            out.append(term("actor_params_copy", "actor params loaded again beside the copy the sync left (FSDP1 on one "
                                                "GPU with param_offload)", self.params))
        if ref and self.ref_whole:
            # verl wraps FSDP1's reference in CPUOffload(offload_params=True); on one GPU (NO_SHARD) the pass held a
            # bf16 copy of the whole model (verl H200: ref minus old log-prob = +0.96 GiB for Qwen2.5-0.5B, +2.62 GiB
            # for 1.5B, their bf16 weights being 0.92 and 2.87 GiB)
            out.append(term("fsdp_gather", "reference model's bf16 copy, whole (FSDP1 on one GPU: NO_SHARD with the "
                                         "reference's CPU offload)", 2 * f.param_count))
        else:
            working = c.layer_copies_forward * 2 * f.layer_params + c.vocab_copies_forward * mt.vocab_matrix(f)
            if self.cfg.ref_keeps_gathered if ref else self.cfg.actor_keeps_gathered:
                out.append(term("fsdp_gather", f"{'reference' if ref else 'actor'} model gathered whole in bf16 "
                                f"({'ref.fsdp_config' if ref else 'fsdp_config'}.reshard_after_forward=false keeps "
                                "every layer after its forward)", max(working, 2 * f.param_count)))
            else:
                out.append(term("fsdp_gather", "FSDP working set: gathered bf16 layers + lm_head", working))
        return out + self.forward_moment(tokens, entropy_mode, images=images)

    def forward_moment(self, tokens: float, entropy_mode: str, images: int = 0) -> list[Term]:
        """A forward-only pass's transient at its worse moment. no_grad frees each layer's intermediates before the
        next, and the model's forward frees the SDPA mask before the head: the peak is the head's logits, one layer
        with the mask, or one vision block, not two of them."""
        f, c = self.f, self.c
        kept, transient = self.mask_terms(tokens)
        layer = term("layer_activations", f"one layer's activations ({tok(tokens)}, freed as it goes)",
                     c.forward_layer_fraction * mt.layer_activation(f, tokens, c))
        moments = [self.forward_head(tokens, entropy_mode), [layer, *kept, *transient]]
        if vision.has_tower(f) and images:  # the tower runs first, over the pass's images: a block at a time too
            moments.append([term("vision_activations", f"one vision block's activations ({tok(images)} of images, "
                                 "freed as it goes)", vision.forward_peak(f, images, c), VISION_WORST)])
        return max(moments, key=lambda ts: sum(t.bytes for t in ts))  # the first of equals: the head

    def forward_head(self, tokens: float, entropy_mode: str) -> list[Term]:
        """A forward-only pass's head: the logits (or the fused head's chunk) and the entropy's temporaries."""
        f, c = self.f, self.c
        head = [term("logits", f"log-probs from the hidden states, {FUSED_CHUNK_ROWS} tokens' logits at a time "
                     f"({tok(tokens)}; use_fused_kernels)" if self.cfg.fused_kernels else
                     f"logits ({tok(tokens)} x vocab {f.vocab_size})",
                     mt.logits(f, tokens, self.cfg.fused_kernels, c, update=False))]
        if ent := mt.entropy(f, tokens, entropy_mode, update=False, c=c):
            head.append(term("entropy", f"entropy temporaries ({entropy_mode})", ent))
        return head

    def mask_terms(self, tokens: float) -> tuple[list[Term], list[Term]]:
        """(held from the model's first layer to its last, added in the layer in flight) of transformers' SDPA mask
        over a forward-only pass's micro-batch of ``tokens`` per GPU without flash-attn (MemoryConfig.mask_pairs;
        nothing with flash-attn). Counted in the log-prob passes, where it was measured; not in the updates: the
        updates measured with a packed row (the actor's up to 16,384 tokens, the critic's up to 32,768) show none
        over their terms, whose peak is the head's logits or the optimizer step."""
        cfg = self.cfg
        pairs = cfg.mask_pairs(tokens)
        if not pairs:
            return [], []
        what = (f"the micro-batch packed in one row, {tok(tokens)}" if cfg.actor_packed else
                f"{tok(tokens)}, each over its padded sequence of {cfg.seq_tokens:,}")
        held, added = mask_bytes(pairs, self.f.model_type, self.c)
        two = self.f.model_type in TWO_MASK_MODEL_TYPES
        kept = term("sdpa_mask", f"SDPA attention mask{'s, full and sliding-window,' if two else ''} ({what}; "
                    "no flash-attn)", held,
                    "grows as the square of a micro-batch's tokens: smaller log-prob micro-batches (or token budgets), "
                    "or flash-attn, make it smaller" if cfg.actor_packed else "")
        transient = term("sdpa_mask_bias", "the layer in flight's attention bias made of the mask (its negation, "
                         "the bf16 bias and an aligned copy)", added)
        return [kept], [transient]

    def update_parts(self) -> tuple[list[Term], list[Term], list[Term], list[Term]]:
        """(states, backward of one micro-batch, optimizer step, the rest) of update_actor: params, grads and AdamW
        are all on the GPU (manual offload loads them back for the call)."""
        cfg, f, c = self.cfg, self.f, self.c
        T = cfg.actor_tokens
        states = [] if self.on_cpu else [
            term("actor_params", f"actor params ({cfg.actor_dtype} x {self.P / 1e9:.2f}B / {self.N} shards)", self.params,
                 "loaded back for the update" if cfg.actor_param_offload else ""),
            term("actor_grads", "actor gradients (sharded)", self.grads),
            term("actor_adam", "actor AdamW moments", self.adam,
                 "loaded back for the update" if cfg.actor_optimizer_offload else ""),
        ]
        acts, how = mt.train_activations(f, T, cfg.actor_gc, cfg.activation_offload, c)
        vocab = c.vocab_copies_update if cfg.lora_rank == 0 else c.vocab_copies_forward
        backward = [
            gathered("actor", c.layer_copies_update * 2 * f.layer_params + vocab * mt.vocab_matrix(f), f.param_count,
                     mt.vocab_matrix(f), cfg.actor_keeps_gathered),
            term("activations", f"activations of a micro-batch of {tok(T)}", acts, how),
        ]
        head = [term("logits", f"log-probs from the hidden states ({tok(T)}; use_fused_kernels)" if cfg.fused_kernels
                     else f"logits ({tok(T)} x vocab {f.vocab_size})" + ("" if cfg.flash_attn else
                     ", and a bf16 log-softmax per row for the backward (no flash-attn: logprobs_from_logits_v2)"),
                     mt.logits(f, T, cfg.fused_kernels, c, flash_attn=cfg.flash_attn))]
        if vision.has_tower(f):
            acts_v, how_v = vision.train_activations(f, cfg.actor_images, cfg.actor_gc, c)
            backward.append(term("vision_activations", f"vision tower activations ({tok(cfg.actor_images)} of "
                                 "images)", acts_v, f"{how_v}; {VISION_WORST}"))
        if cfg.update_entropy:
            head.append(term("entropy", f"entropy with gradient ({cfg.entropy_mode})",
                             mt.entropy(f, T, cfg.entropy_mode, update=True, c=c)))
        # no SDPA mask term (mask_terms): the updates measured with a packed row show none over their terms
        backward += head + unsharded_grads("actor", cfg.actor_unsharded_grad_bytes, self.Pt, self.N, cfg.strategy)
        # FSDP2's CPU offload policy keeps the grads and AdamW's moments on the host: the step runs there, with no
        # temporaries on the GPU
        step = [] if self.on_cpu else [term("optimizer_step", "AdamW step temporaries (foreach)",
                                            c.optimizer_step_temp * self.grads)]
        rest = [t for t in self.resident(adam=True) if not t.key.startswith("actor_")]
        return states, backward, step, rest

    def update(self) -> list[Term]:
        """update_actor at its worse moment: the backward of one micro-batch or the optimizer step. Without flash-attn
        the allocator still holds part of the backward's blocks at that moment (measured, see update_cache_fraction)."""
        states, backward, step, rest = self.update_parts()
        b = sum(t.bytes for t in backward)
        worse = backward if b >= sum(t.bytes for t in step) else step
        if not self.cfg.flash_attn:
            rest = rest + [term("allocator", "allocator: the backward's blocks still cached at the peak",
                                self.c.update_cache_fraction * self._cached(backward))]
            if self.critic is not None and not self.cfg.critic_param_offload:
                # the critic's update ran just before in the same process: its blocks stay cached (verl H200, PPO
                # on one GPU: the actor update held 3.8-5.7 GiB more than GRPO's for Qwen2.5-0.5B); a critic with
                # param_offload empties the cache when it puts its params away (18.9 GiB, not 24.0)
                held = sum(t.bytes for t in self.critic_update() if t.key in ("fsdp_gather", "activations"))
                rest.append(term("allocator_critic", "allocator: the critic update's blocks still cached (same process)",
                                 held))
            if mask := self.logprob_mask_cache():
                rest.append(term("allocator_logprob_mask", "allocator: the log-prob passes' SDPA mask blocks still "
                                 "cached (same process)", mask))
        if (self.cfg.strategy == "fsdp" and self.N == 1 and not self.cfg.flash_attn and not self.cfg.lora_rank
                and not (self.critic is not None and self.cfg.critic_param_offload)):
            # FSDP1: torch's peak allocation in the update equals FSDP2's, NVML's does not (verl H200, one GPU,
            # Qwen2.5-0.5B / 1.5B: +1.8 / +5.3-6.1 GiB, about the actor's params); a critic with param_offload empties
            # the cache before the actor's update (PPO, 0.5B: no excess). Counted where measured: one GPU, no
            # flash-attn (the other allocator terms of the update are measured there only too)
            rest = rest + [term("allocator_fsdp1", "allocator: FSDP1's flat-parameter blocks still cached", self.params,
                                "measured on one GPU, without flash-attn")]
        return states + worse + rest

    def update_cache(self) -> int:
        """What the actor's update leaves in the caching allocator (0 where it is not measured: flash-attn)."""
        if self.cfg.flash_attn:
            return 0
        _, backward, _, _ = self.update_parts()
        return int(self.c.update_cache_fraction * self._cached(backward))

    def _cached(self, backward: list[Term]) -> int:
        """The backward's blocks the allocator keeps cached at the update's peak. Without gradient checkpointing
        every layer's activations are live at the peak and freed layer by layer after it: they are not part of
        the cache (verl H200, Qwen2.5-0.5B, micro-batch 8: 31.0 GiB measured, 35.7 predicted with them)."""
        return sum(t.bytes for t in backward if self.cfg.actor_gc or t.key != "activations")

    def critic_update(self) -> list[Term]:
        cfg, f, c = self.cfg, self.critic, self.c
        if f is None:
            return []
        T = cfg.critic_tokens
        bc, Pc, Nc = cfg.critic_dtype_bytes, mt.critic_params(f), cfg.critic_shards
        out = [] if cfg.critic_offload_policy else [
            term("critic_params", f"critic params ({cfg.critic_dtype} x {Pc / 1e9:.2f}B / {Nc} shards)", bc * Pc / Nc),
            term("critic_grads", "critic gradients", bc * Pc / Nc), term("critic_adam", "critic AdamW moments", 2 * bc * Pc / Nc)]
        acts, how = mt.train_activations(f, T, cfg.critic_gc, False, c)
        out += [gathered("critic", c.layer_copies_update * 2 * f.layer_params + c.vocab_copies_update *
                         mt.vocab_matrix(f) / 2, Pc, 0, cfg.critic_keeps_gathered),
                term("activations", f"critic activations ({tok(T)}, dynamic batch)", acts, how)]
        out += unsharded_grads("critic", cfg.critic_unsharded_grad_bytes, Pc, Nc, "fsdp" if cfg.critic_fsdp1 else "fsdp2")
        rest = [t for t in self.resident(adam=True) if not t.key.startswith("critic_")] + self.actor_still_gathered()
        if cache := self.logprob_cache():
            rest.append(term("allocator", "allocator: the old log-prob pass's blocks still cached (same process)",
                             cache))
        return out + rest

    def logprob_cache(self) -> int:
        """What the actor's log-prob pass leaves cached for the critic's update in the same process: part of its
        worse moment's blocks (its logits', or one layer's with the SDPA mask where that is larger). Not the previous
        step's actor update: verl empties the cache at the weight sync, before the engine wakes (verl, PPO on one
        GPU, critic update over its own working set: Qwen2.5-0.5B +3.2 / +4.8 GiB and 1.5B +3.4 GiB with log-prob
        micro-batches of 16,384 tokens and updates of 8,192, and 1.5B +2.7 GiB with both at 16,384
        (advised-ppo-1.5b-critic-4096-h100), where the actor update's cache would have doubled; with the fused head
        at 65,536 tokens the mask's, advised-ppo-1.5b-critic-4096-h100-3). 0 with flash-attn (not measured there)."""
        cfg = self.cfg
        if cfg.flash_attn:
            return 0
        moment = self.forward_moment(cfg.logprob_tokens, cfg.entropy_mode)
        return int(self.c.update_cache_fraction * sum(t.bytes for t in moment))

    def logprob_mask_cache(self) -> int:
        """What the log-prob passes' SDPA mask leaves cached for the actor's update too, beyond their heads' blocks
        (which the update's own logits reuse): where one layer with the mask was a pass's worse moment, the mask's
        part over its head. verl H100 (advised-ppo-1.5b-critic-4096-h100-3, the fused head, 55,000 tokens a log-prob
        micro-batch): the critic's and the actor's updates each held their own working set over the 59.4 GiB the
        pass had reserved (66.0 and 72.7 GiB). 0 with flash-attn."""
        cfg = self.cfg
        if cfg.flash_attn:
            return 0
        over = 0
        for tokens, mode in ((cfg.logprob_tokens, cfg.entropy_mode),) + (
                ((cfg.ref_tokens, "none"),) if cfg.ref_separate else ()):
            moment = self.forward_moment(tokens, mode)
            mask = sum(t.bytes for t in moment if t.key in ("sdpa_mask", "sdpa_mask_bias"))
            head = sum(t.bytes for t in self.forward_head(tokens, mode))
            over = max(over, min(mask, sum(t.bytes for t in moment) - head))
        return int(self.c.update_cache_fraction * over)


def gathered(role: str, working: float, params: int, in_both: float, whole: bool) -> Term:
    """An update's FSDP working set: the layer in flight and the lm_head with its fp32 gradient; with
    reshard_after_forward=false (MemoryConfig.actor_keeps_gathered) every layer's bf16 params as well, gathered in
    the forward and kept until its backward (``in_both``: what both already count, the lm_head's bf16 weight)."""
    if not whole:
        return term("fsdp_gather", "FSDP working set: gathered layers, lm_head and its fp32 gradient"
                    if role == "actor" else "FSDP working set (critic)", working)
    return term("fsdp_gather", f"{role} model gathered whole in bf16 from the forward to the backward, and the "
                "layer in flight (reshard_after_forward=false)", 2 * params + working - in_both)


def unsharded_grads(role: str, per_param: int, trainable: int, shards: int, strategy: str) -> list[Term]:
    """The whole unsharded gradient ``use_no_sync_for_gradient_accumulation`` holds through a mini-batch's micro-
    batches (MemoryConfig.actor_unsharded_grad_bytes), beyond the 1/shards the sharded gradient term counts: by the
    last micro-batch's backward every layer has its unsharded gradient and none has been reduce-scattered yet."""
    if not per_param:
        return []
    fsdp = (f"FSDP1 keeps its flat gradient in the param dtype, {per_param} bytes a param" if strategy == "fsdp" else
            f"FSDP2 accumulates in the reduce dtype, {per_param} bytes a param")
    return [term(f"{role}_unsharded_grads", f"{role} gradients, whole and unsharded until the mini-batch's last "
                 f"micro-batch (use_no_sync_for_gradient_accumulation)", per_param * trainable * (1 - 1 / shards),
                 f"{fsdp}; off (verl's default), gradients are reduce-scattered after every micro-batch")]


def slack(terms: list[Term], f: ModelFacts, c: MemoryConstants, factor: float | None = None) -> list[Term]:
    """The caching allocator's reserved-but-unallocated memory at the peak of a pass with an FSDP working set
    (none when the optimizer step is the peak: few, large tensors), in copies of the vocabulary matrix."""
    if not any(t.key in ("fsdp_gather", "sync_tensor") for t in terms) or any(t.key == "allocator" for t in terms):
        return terms
    k = c.allocator_slack_vocab if factor is None else factor
    return terms + [term("allocator", "allocator slack (reserved, not allocated)", k * mt.vocab_matrix(f))]


def sync_buffers(cfg: MemoryConfig, tr: Trainer) -> list[Term]:
    """What the trainer allocates to send its weights to the rollout engine. verl 0.9.1's BucketedWeightSender
    (workers/rollout/vllm_rollout/bucketed_weight_transfer.py) fills a buffer of
    checkpoint_engine.update_weights_bucket_megabytes, allocated whole whatever the model's size; each weight goes in
    at the trainer's dtype (no cast). A weight the trainer does not already hold whole on the GPU (FSDP1's
    state_dict, param offload, CPUOffloadPolicy, LoRA's merged weights, shards over several GPUs) is first made
    whole: the largest one, the embedding, is there with the bucket. Measured on the H200 with torch's own peak
    counter (the sync lasts 0.1-0.2 s): 2.00 GiB over the resident state for FSDP2 on one GPU at 0.5B, 1.5B and 3B;
    2.00 GiB + the fp32 embedding (0.51 / 0.87 / 1.16 GiB) with offload or LoRA."""
    eng = cfg.engines.get("rollout")
    if eng is not None and eng.sglang is not None:
        return sglang_sync_buckets(cfg, tr)
    terms = [term("sync_bucket", f"weight-sync send buffer (update_weights_bucket_megabytes = {cfg.sync_bucket_bytes >> 20})",
                  cfg.sync_bucket_bytes)]
    if cfg.strategy == "fsdp" or tr.N > 1 or cfg.actor_param_offload or tr.on_cpu or cfg.lora_rank:
        terms.append(term("sync_tensor", "largest weight made whole for the sync (the embedding)",
                          mt.largest_weight(tr.f, cfg.actor_dtype_bytes)))
    return terms


def two_sync_buckets(bucket: int, largest: float, whole: float, what: str) -> Term:
    """verl's SGLang sync path (any training engine): the bucket it sent stays alive until the next is complete, so
    two buckets and the weight that overflows the second, at most ``whole`` (everything the rank exports)."""
    return term("sync_bucket", f"weight sync to SGLang: two buckets of update_weights_bucket_megabytes = "
                               f"{bucket >> 20} alive at once, and the weight that overflows the second ({what})",
                min(whole, 2 * bucket + largest))


def sglang_sync_buckets(cfg: MemoryConfig, tr: Trainer) -> list[Term]:
    """What the trainer holds while it sends its weights to SGLang. verl 0.9.1's SGLangRollout.update_weights
    (sglang_rollout/sglang_rollout.py:305-385) groups whole tensors into lists of update_weights_bucket_megabytes
    with get_named_tensor_buckets (sglang_rollout/utils.py:166-240), which keeps a copy of each (``_compact_for_bucket``
    clones the views DTensor.full_tensor() gives, at the trainer's dtype), and hands each list to SGLang as CUDA IPC
    handles; the list just sent stays referenced (the loop's variable) until the next one is complete, so two buckets
    and the tensor that overflows the second are alive at once, at most the whole state_dict (a tied embedding
    listed twice, as embed_tokens and lm_head). There is no preallocated buffer, unlike vLLM's sender. Measured on an
    H100 (Qwen2.5-1.5B, fp32 trainer, 2,048 MiB buckets): torch's peak rose 4.63 GiB over the resident state during
    update_weights (bounded here at 2 x 2 + 0.87 = 4.87 GiB). From the code, not measured: a shard copied to the GPU
    first (param offload, the CPU offload policy) or gathered over several GPUs is one more weight alive before its
    clone; FSDP1 on one GPU hands whole copies (its state_dict, :func:`sync_copies`) that the buckets only point
    into; LoRA served as an adapter first sends base weights from the CPU, one bucket on the GPU at a time; merged
    LoRA yields bf16."""
    merged = bool(cfg.lora_rank) and not cfg.engines["rollout"].sglang.lora_adapter
    dtype = 2 if merged else cfg.actor_dtype_bytes
    largest = mt.largest_weight(tr.f, dtype)
    whole = dtype * tr.P + (largest if tr.f.tie_word_embeddings else 0)
    bucket = cfg.sync_bucket_bytes
    if cfg.strategy == "fsdp" and tr.N == 1 and not cfg.lora_rank:
        return []
    if cfg.lora_rank and not merged:
        return [term("sync_bucket", f"weight sync to SGLang (LoRA adapter): the base weights from the CPU, one bucket of "
                                    f"update_weights_bucket_megabytes = {bucket >> 20} on the GPU at a time",
                     min(whole, max(bucket, largest)))]
    terms = [two_sync_buckets(bucket, largest, whole, "whole tensors at the trainer's dtype")]
    if cfg.actor_param_offload or tr.N > 1 or tr.on_cpu:
        terms.append(term("sync_tensor", "a weight copied to the GPU or gathered before its bucket's copy",
                          largest))
    return terms


def sync_copies(cfg: MemoryConfig, tr: Trainer) -> list[Term]:
    """What FSDP1 gathers for the weight sync (FSDP2 streams one tensor at a time). Without LoRA its state_dict()
    holds a copy of the params (verl H200, FSDP1 on one GPU: +2.35 GiB allocated for Qwen2.5-0.5B's 1.84 GiB). With
    LoRA and without rollout.layered_summon, collect_lora_params (verl/utils/fsdp_utils.py) runs inside
    FSDP.summon_full_params: the whole model unsharded on every GPU at every sync."""
    if cfg.strategy != "fsdp" or tr.on_cpu or (cfg.lora_rank and cfg.layered_summon):
        return []
    if cfg.lora_rank:
        return [term("sync_copy", "LoRA sync: the whole model unsharded (summon_full_params; rollout.layered_summon="
                                "True gathers a layer at a time)", tr.params * tr.N)]
    return [term("sync_copy", "FSDP1 state_dict for the sync: a copy of the params", tr.params)]
