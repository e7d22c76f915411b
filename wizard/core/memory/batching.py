"""How verl 0.9.1 batches each pass on one GPU: a micro-batch's tokens and the micro-batches of a mini-batch, for
the actor's update, the log-prob passes and the critic (its V1 engine's token budget), with each role's Ulysses group.
Read by the memory estimate (wizard.core.memory.config), the step time and the advisor. Pure."""

from __future__ import annotations

import math
from collections.abc import Mapping

from wizard.core.memory.readers import flag_at as _flag, int_at as _int
from wizard.core.verl.keys import CF, REF, A, AF, M, R
from wizard.core.verl.roles import need_critic

# Each synthetic sequence the V1 trainer pads a step with (verl/trainer/ppo/padding_utils.py SYNTHETIC_PADDING_SEQ_LEN:
# 127 EOS tokens of prompt and one of response, no loss)
SYNTHETIC_SEQ_TOKENS = 128

# Not a verl key: the average prompt + response length of a fixed-size micro-batch's samples. Unset, every sample
# is taken at the maximum (the worst case); the memory rules set it to find the length at which a run still fits.
SAMPLE_TOKENS = "wizard.sample_tokens"


def micro_batch_tokens(values: Mapping, *, dynamic: str | None, budget: str, micro: str | None, seq: int, sp: int,
            per_gpu_samples: int | None = None, legacy_micro: int | None = None) -> int:
    """Tokens on one GPU in one micro-batch: the token budget with dynamic batching (a longer sequence is its
    own micro-batch), else micro-batch x the longest prompt + response (padding removed: the worst case);
    never more than the samples one GPU gets in that call. ``legacy_micro``: the per-GPU count a deprecated
    global key means, used when the per-GPU key is unset."""
    if dynamic is None or _flag(values, dynamic):
        tokens = max(_int(values, budget, 1) or 16384, -(-seq // sp))
        return min(tokens, max(1, per_gpu_samples * seq // sp)) if per_gpu_samples else tokens
    m = _int(values, micro, 1)
    if m is None:
        m = legacy_micro or 1
    if per_gpu_samples:
        m = min(m, per_gpu_samples)
    sample = values.get(SAMPLE_TOKENS)
    if isinstance(sample, int) and 0 < sample < seq and _flag(values, f"{M}.use_remove_padding"):
        seq = sample  # padding removed: a micro-batch holds what its samples really have
    return max(1, m * seq // sp)


def critic_batching(values: Mapping) -> tuple[str | None, str, str | None]:
    """(dynamic-batching flag, token budget, micro-batch) keys the critic's update is batched by in verl 0.9.1
    (verl #7462): the V1 trainer's engine packs by ``critic.ppo_infer_max_token_len_per_gpu`` for training too
    (trainer_base.py:266-268; no flag: always) unless ``critic.fsdp.use_dynamic_bsz=false``, then
    ``critic.fsdp.micro_batch_size_per_gpu`` samples (engine_workers.py:352-357); the legacy trainer
    (trainer.use_v1=false) reads critic.use_dynamic_bsz with critic.ppo_max_token_len_per_gpu, else
    critic.ppo_micro_batch_size_per_gpu (ray_trainer.py:810-811)."""
    if values.get("trainer.use_v1") is False:
        return "critic.use_dynamic_bsz", "critic.ppo_max_token_len_per_gpu", "critic.ppo_micro_batch_size_per_gpu"
    if values.get(f"{CF}.use_dynamic_bsz") is False and _int(values, f"{CF}.micro_batch_size_per_gpu", 1):
        return f"{CF}.use_dynamic_bsz", "critic.ppo_infer_max_token_len_per_gpu", f"{CF}.micro_batch_size_per_gpu"
    return None, "critic.ppo_infer_max_token_len_per_gpu", None


def critic_tokens(values: Mapping, seq: int, sp: int, samples: int) -> int:
    """Tokens per GPU in one micro-batch of the critic's update, as verl 0.9.1 batches it (:func:`critic_batching`)."""
    dynamic, budget, micro = critic_batching(values)
    return micro_batch_tokens(values, dynamic=dynamic, budget=budget, micro=micro, seq=seq, sp=sp, per_gpu_samples=samples)


def critic_samples(values: Mapping, world: int) -> tuple[int, int]:
    """(samples per GPU in one mini-batch of the critic's update, its Ulysses group)."""
    c_sp = sequence_parallel(values, "critic")
    n = _int(values, f"{R}.n", 1) or 1
    c_mini = _int(values, "critic.ppo_mini_batch_size", 1) or _int(values, f"{A}.ppo_mini_batch_size", 1) or 256
    return max(1, c_mini * n // max(1, world // c_sp)), c_sp


def critic_micro_batches(values: Mapping, world: int, seq: int) -> int:
    """Micro-batches of one mini-batch of the critic's update on one GPU (at worst with dynamic batching)."""
    dynamic, budget, micro = critic_batching(values)
    samples, sp = critic_samples(values, world)
    return _micro_batches(values, dynamic=dynamic, budget=budget, micro=micro, samples=samples, seq=seq, sp=sp)


def sequence_parallel(values: Mapping, role: str) -> int:
    """The Ulysses group of a role's passes ("actor": either of its keys, "ref", "critic"); 1 without one (the
    Megatron engine has none of these keys)."""
    keys = {"actor": (f"{A}.ulysses_sequence_parallel_size", f"{AF}.ulysses_sequence_parallel_size"),
            "ref": (f"{REF}.ulysses_sequence_parallel_size",),
            "critic": (f"{CF}.ulysses_sequence_parallel_size",)}[role]
    return max(_int(values, k, 1) or 1 for k in keys)


def actor_samples(values: Mapping, world: int) -> tuple[int, int]:
    """(samples per GPU in one mini-batch of update_actor, its Ulysses group)."""
    sp = sequence_parallel(values, "actor")
    n = _int(values, f"{R}.n", 1) or 1
    return max(1, (_int(values, f"{A}.ppo_mini_batch_size", 1) or 256) * n // max(1, world // sp)), sp


def actor_micro_batches(values: Mapping, world: int, seq: int) -> int:
    """Micro-batches of one mini-batch of update_actor on one GPU (at worst with dynamic batching)."""
    samples, sp = actor_samples(values, world)
    return _micro_batches(values, dynamic=f"{A}.use_dynamic_bsz", budget=f"{A}.ppo_max_token_len_per_gpu",
                          micro=f"{A}.ppo_micro_batch_size_per_gpu", samples=samples, seq=seq, sp=sp)


def logprob_micro_batches(values: Mapping, world: int, seq: int, *, ref: bool = False) -> int:
    """Micro-batches of the old log-prob pass (``ref``: the reference's) over the whole batch on one GPU."""
    section = REF if ref else R
    sp = sequence_parallel(values, "ref" if ref else "actor")
    samples, pad = _pass_samples(values, world, sp)
    return _micro_batches(values, dynamic=f"{section}.log_prob_use_dynamic_bsz",
                          budget=f"{section}.log_prob_max_token_len_per_gpu",
                          micro=f"{section}.log_prob_micro_batch_size_per_gpu", samples=samples, seq=seq, sp=sp,
                          synthetic=pad)


def critic_values_micro_batches(values: Mapping, world: int, seq: int) -> int:
    """Micro-batches of the critic's values pass over the whole batch on one GPU: verl's V1 engine packs it by
    ``critic.ppo_infer_max_token_len_per_gpu`` (trainer_base.py:266-268)."""
    sp = critic_samples(values, world)[1]
    samples, pad = _pass_samples(values, world, sp)
    return _micro_batches(values, dynamic=None, budget="critic.ppo_infer_max_token_len_per_gpu", micro=None,
                          samples=samples, seq=seq, sp=sp, synthetic=pad)


def _pass_samples(values: Mapping, world: int, sp: int) -> tuple[int, int]:
    """(samples one GPU's group computes in a pass over the whole batch (a Ulysses group of ``sp`` shares them), of
    which the V1 trainer's synthetic padding: :func:`synthetic_sequences`)."""
    n = _int(values, f"{R}.n", 1) or 1
    groups, pad = max(1, world // sp), synthetic_sequences(values)
    seqs = (_int(values, "data.train_batch_size", 1) or 1024) * n + pad
    return max(1, -(-seqs // groups)), pad // groups


def sync_steps(values: Mapping) -> int:
    """parameter_sync_step of the trainer mode (trainer_base.py:130: 1 unless trainer.v1.<mode> sets it)."""
    step = _int(values, f"trainer.v1.{values.get('trainer.v1.trainer_mode')}.parameter_sync_step")
    return step if step and step > 0 else 1


def step_batch(values: Mapping) -> tuple[int, int, int] | None:
    """(sequences per step, the multiple verl pads them to, sequences after padding): trainer_base.py:1589-1606 and
    1620-1621 (upsample_batch_to_divisible_size): lcm(the actor's data-parallel ranks, ppo_mini_batch_size x n, the
    critic's ppo_mini_batch_size x n). None where a size is unknown or not a number."""
    tbs, n, mini = (_int(values, k) for k in ("data.train_batch_size", f"{R}.n", f"{A}.ppo_mini_batch_size"))
    per_node, nodes = _int(values, "trainer.n_gpus_per_node"), _int(values, "trainer.nnodes")
    n_gpus = per_node * nodes if per_node is not None and nodes is not None else None
    if values.get(f"{A}.strategy") == "megatron":  # its data-parallel ranks: the GPUs over TP x PP x CP
        sp = 1
        for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"):
            sp *= max(1, _int(values, f"{A}.megatron.{k}") or 1)
    else:
        sp = sequence_parallel(values, "actor")
    dp = n_gpus // sp if n_gpus and n_gpus > 0 and n_gpus % sp == 0 else None
    sync_step = sync_steps(values)
    if None in (tbs, n, dp, mini) or min(tbs, n, dp, mini) <= 0 or tbs % sync_step:
        return None
    tbs //= sync_step  # each local update samples train_batch_size / parameter_sync_step prompts (:539)
    multiple = dp
    if need_critic(values):
        c_mini = _int(values, "critic.ppo_mini_batch_size")
        if c_mini is None or c_mini <= 0:
            return None
        multiple = math.lcm(multiple, c_mini * n)
    if (_int(values, "trainer.critic_warmup") or 0) <= 1:  # the actor updates from the first steps on
        multiple = math.lcm(multiple, mini * n)
    seqs = tbs * n
    return seqs, multiple, -(-seqs // multiple) * multiple


def pads_steps(values: Mapping) -> bool:
    """Whether the trainer pads its steps to whole mini-batches: the V1 trainer but in separate_async."""
    return bool(values.get("trainer.use_v1")) and values.get("trainer.v1.trainer_mode") != "separate_async"


def synthetic_sequences(values: Mapping) -> int:
    """The synthetic sequences the V1 trainer adds to each step (:func:`step_batch`, once for each of the step's
    parameter_sync_step local updates, trainer_base.py:533-556; none in the legacy trainer or separate_async, or
    where a size is unknown): they are forwarded and trained on like the rest, at SYNTHETIC_SEQ_TOKENS each, with
    no loss."""
    if not pads_steps(values):
        return 0
    sizes = step_batch(values)
    return sync_steps(values) * (sizes[2] - sizes[0]) if sizes is not None else 0


def _micro_batches(values: Mapping, *, dynamic: str | None, budget: str, micro: str | None, samples: int, seq: int,
                   sp: int, synthetic: int = 0) -> int:
    """Micro-batches of one mini-batch on one GPU, at worst (every sample at its longest with dynamic batching, but
    the ``synthetic`` ones among them, at SYNTHETIC_SEQ_TOKENS; ``dynamic`` None: always dynamic)."""
    if dynamic is None or _flag(values, dynamic):
        tokens = (samples - synthetic) * -(-seq // sp) + synthetic * -(-SYNTHETIC_SEQ_TOKENS // sp)
        return -(-tokens // max(1, _int(values, budget, 1) or 16384))
    return -(-samples // max(1, _int(values, micro, 1) or 1))


def sizes_below_one(values: Mapping, critic: bool) -> list[tuple[str, int]]:
    """The step's and the mini-batches' sizes in prompts that are below one (0 or negative): what batch.not_positive
    names and what gets no step time."""
    keys = ["data.train_batch_size", f"{A}.ppo_mini_batch_size"] + (["critic.ppo_mini_batch_size"] if critic else [])
    return [(k, v) for k in keys if (v := _int(values, k)) is not None and v < 1]
