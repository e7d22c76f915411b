"""Sizes verl 0.9.1 relies on at every training step but no config class checks (docs/verl-unchecked.md lists them
all, with the line each one fails at): how the step's batch splits into mini- and micro-batches on each GPU, the
token budgets of dynamic batching, the padding the V1 trainer adds to make whole mini-batches, and checkpoint
contents matched by name. Each fails (or misbehaves) only once training runs: after Ray, the models and the rollout
servers are up and the first batch is generated.

The V1 sync step (trainer/ppo/v1/trainer_base.py:562-612): the batch of train_batch_size x rollout.n sequences is
padded up to a multiple of lcm(actor DP ranks, actor ppo_mini_batch_size x n, critic ppo_mini_batch_size x n)
(_balance_batch, :1608-1631), split evenly over the DP ranks for the log-prob forwards (old, reference, values), and
over mini-batches of ppo_mini_batch_size x n for the updates (engine_workers.py:243-270); each GPU's share is cut
into micro-batches by verl/workers/engine/utils.py:prepare_micro_batches.
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
# the step's batch and its padding: one reading, the step time's too
from wizard.core.memory.batching import SYNTHETIC_SEQ_TOKENS, pads_steps, step_batch, sync_steps
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.keys import A, AF, CF, R, REF

N = f"{R}.n"
MICRO_FAILS = "data size must be divisible by force_group_size * micro_batch_size_per_gpu"  # engine/utils.py:125-127
BUDGET_FAILS = "max_token_len must be greater than the sequence length"  # utils/seqlen_balancing.py:384-386
CONTENTS = ("model", "optimizer", "extra", "hf_model")  # utils/checkpoint/checkpoint_manager.py:72-98


def _int(value) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _sp(ctx: RuleContext, *keys: str) -> int:
    """The Ulysses size an engine runs with: the largest of the keys that set it (verl copies the legacy key in)."""
    return max([v for v in (ctx.int(k) for k in keys) if v and v > 0] or [1])


def actor_dp(ctx: RuleContext) -> int | None:
    n_gpus = ctx.n_gpus
    sp = _sp(ctx, f"{A}.ulysses_sequence_parallel_size", f"{AF}.ulysses_sequence_parallel_size")
    return n_gpus // sp if n_gpus and n_gpus > 0 and n_gpus % sp == 0 else None


def _divisors_up_to(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


@rule("batch.micro_split", Stage.RUNTIME)
def micro_split(ctx: RuleContext):
    """Fixed micro-batches (dynamic batching off) must divide each GPU's share of the batch they cut:
    verl/workers/engine/utils.py:124-127 ``assert total_data_size % (force_group_size * micro_batch_size_per_gpu) == 0``
    ("data size must be divisible by force_group_size * micro_batch_size_per_gpu"), at the first old-log-prob
    forward, reference forward or update. Each GPU's share: the padded step batch / DP ranks for the forwards
    (trainer_base.py:1620-1631), ppo_mini_batch_size x rollout.n / DP ranks for an update (engine_workers.py:267-270).
    The keys: rollout.log_prob_micro_batch_size_per_gpu (old log-probs, engine_workers.py:623-625), ref's
    log_prob_micro_batch_size_per_gpu (:582-584), actor.ppo_micro_batch_size_per_gpu (:627-629); the critic's
    engine only with its own +critic.fsdp.use_dynamic_bsz=false (trainer_base.py:266-268 leaves the rest as the
    engine section says), where an unset micro batch is None and the same line fails with a TypeError."""
    if ctx.strategy not in ("fsdp", "fsdp2") or ctx.get("trainer.v1.trainer_mode") == "separate_async":
        return
    sizes = step_batch(ctx)
    n, n_gpus = ctx.int(N), ctx.n_gpus
    if sizes is None or not n_gpus:
        return
    seqs, multiple, padded = sizes
    padding = f", padded to {padded}" if padded != seqs else ""
    jobs = []  # (what, micro key, micro value, per-GPU share, how the share comes about)
    dp = actor_dp(ctx)
    forward = f"train_batch_size x rollout.n = {seqs}{padding} over {dp} data-parallel ranks"
    bypass = ctx.get("algorithm.rollout_correction.bypass_mode")
    if not ctx.get(f"{R}.log_prob_use_dynamic_bsz") and not bypass:
        jobs.append(("the old log-probs", f"{R}.log_prob_micro_batch_size_per_gpu", padded // dp, forward))
    if not ctx.dynamic_bsz:
        mini = ctx.int(f"{A}.ppo_mini_batch_size")
        if (mini * n) % dp == 0:  # else batch.mini_vs_dp
            jobs.append(("an actor update", f"{A}.ppo_micro_batch_size_per_gpu", mini * n // dp,
                         f"ppo_mini_batch_size x rollout.n = {mini * n} over {dp} data-parallel ranks"))
    if ctx.need_ref and not ctx.get(f"{REF}.log_prob_use_dynamic_bsz"):
        sp = _sp(ctx, f"{REF}.ulysses_sequence_parallel_size", f"{REF}.fsdp_config.ulysses_sequence_parallel_size")
        if n_gpus % sp == 0:
            jobs.append(("the reference log-probs", f"{REF}.log_prob_micro_batch_size_per_gpu", padded // (n_gpus // sp),
                         f"train_batch_size x rollout.n = {seqs}{padding} over {n_gpus // sp} data-parallel ranks"))
    if ctx.need_critic and ctx.get(f"{CF}.use_dynamic_bsz") is False and ctx.get("critic.strategy") in ("fsdp", "fsdp2"):
        sp = _sp(ctx, f"{CF}.ulysses_sequence_parallel_size")
        c_mini = ctx.int("critic.ppo_mini_batch_size")
        if n_gpus % sp == 0 and c_mini and (c_mini * n) % (n_gpus // sp) == 0:
            c_dp = n_gpus // sp
            jobs.append(("the critic's values", f"{CF}.infer_micro_batch_size_per_gpu", padded // c_dp,
                         f"train_batch_size x rollout.n = {seqs}{padding} over {c_dp} data-parallel ranks"))
            jobs.append(("a critic update", f"{CF}.micro_batch_size_per_gpu", c_mini * n // c_dp,
                         f"critic.ppo_mini_batch_size x rollout.n = {c_mini * n} over {c_dp} data-parallel ranks"))
    for what, key, share, how in jobs:
        micro = ctx.get(key)
        if micro is None and key.startswith(CF):
            yield finding(Severity.ERROR, [key, f"{CF}.use_dynamic_bsz"],
                          f"{CF}.use_dynamic_bsz=false but {key} is not set: {what} cut each GPU's {share} sequences "
                          "into micro-batches of None, and verl fails at the first critic step with a TypeError "
                          "(verl/workers/engine/utils.py:124)",
                          f"Set +{key}={_divisors_up_to(share, 8)[-1]}", [f"+{key}={_divisors_up_to(share, 8)[-1]}"])
            continue
        micro = _int(micro)
        if not micro or micro <= 0 or share <= 0 or share % micro == 0:
            continue
        fits = _divisors_up_to(share, micro)
        best = fits[-1]
        yield finding(
            Severity.ERROR, [key, "data.train_batch_size", N],
            f"{key}={micro} does not divide the {share} sequences each GPU computes {what} for ({how}); verl cuts "
            f"them into micro-batches and fails at the first step with: {MICRO_FAILS}",
            f"Set {key}={best} (sizes that divide {share}: {', '.join(map(str, _divisors_up_to(share, share)))}), or "
            "turn on dynamic batching", [f"{'+' if key.startswith(CF) else ''}{key}={best}"])


@rule("batch.token_budget", Stage.RUNTIME)
def token_budget(ctx: RuleContext):
    """Dynamic batching packs micro-batches up to a per-GPU token budget x Ulysses size, and refuses a sequence
    longer than that: utils/seqlen_balancing.py:384-386 ``assert max_token_len >= max_seq_len`` ("max_token_len must
    be greater than the sequence length"), reached from engine/utils.py:108-111. A sequence is up to
    rollout.prompt_length + rollout.response_length tokens. The budgets: actor.ppo_max_token_len_per_gpu (updates,
    engine_workers.py:626), rollout.log_prob_max_token_len_per_gpu (old log-probs, :620-622), ref's
    log_prob_max_token_len_per_gpu (:581), critic.ppo_infer_max_token_len_per_gpu for the critic's values and updates
    (trainer_base.py:267-268)."""
    prompt, response = ctx.int(f"{R}.prompt_length"), ctx.int(f"{R}.response_length")
    if prompt is None or response is None:
        return
    longest = prompt + response
    sp_actor = _sp(ctx, f"{A}.ulysses_sequence_parallel_size", f"{AF}.ulysses_sequence_parallel_size")
    budgets = []
    if ctx.dynamic_bsz:
        budgets.append(("actor updates", f"{A}.ppo_max_token_len_per_gpu", sp_actor))
    if ctx.get(f"{R}.log_prob_use_dynamic_bsz"):
        budgets.append(("old log-probs", f"{R}.log_prob_max_token_len_per_gpu", sp_actor))
    if ctx.need_ref and ctx.get(f"{REF}.log_prob_use_dynamic_bsz"):
        budgets.append(("reference log-probs", f"{REF}.log_prob_max_token_len_per_gpu",
                        _sp(ctx, f"{REF}.ulysses_sequence_parallel_size", f"{REF}.fsdp_config.ulysses_sequence_parallel_size")))
    if ctx.need_critic and ctx.get(f"{CF}.use_dynamic_bsz") is not False and ctx.get("trainer.use_v1"):
        budgets.append(("the critic", "critic.ppo_infer_max_token_len_per_gpu", _sp(ctx, f"{CF}.ulysses_sequence_parallel_size")))
    for what, key, sp in budgets:
        budget = ctx.int(key)
        if budget is None or budget * sp >= longest:
            continue
        times = f" x Ulysses {sp} = {budget * sp}" if sp > 1 else ""
        yield finding(
            Severity.WARNING, [key, f"{R}.prompt_length", f"{R}.response_length"],
            f"{key}={budget}{times} tokens is less than one sequence can be (prompt {prompt} + response {response} = "
            f"{longest}): dynamic batching cannot fit such a sequence in a micro-batch, and the {what} fail on the "
            f"first one that long with: {BUDGET_FAILS}",
            f"Set {'+' if key.startswith('critic.ppo_infer') else ''}{key} to at least {-(-longest // sp)} (verl's "
            "examples use 2-3x prompt + response)", [f"{'+' if key.startswith('critic.ppo_infer') else ''}{key}="
                                                     f"{-(-longest // sp)}"])


@rule("batch.padded_step", Stage.ADVICE)
def padded_step(ctx: RuleContext):
    """The V1 trainer pads each step's batch with synthetic sequences up to a multiple of lcm(DP ranks,
    ppo_mini_batch_size x n, critic ppo_mini_batch_size x n) (trainer_base.py:1589-1606, 1620-1621,
    padding_utils.upsample_batch_to_divisible_size) instead of refusing a train_batch_size that is not a whole number
    of mini-batches; verl says nothing. Those sequences (128 EOS tokens each, no loss) are never generated but go
    through every log-prob pass and update as sequences and micro-batches of their own, and make the last
    mini-batch of each step mostly padding (the step time counts them)."""
    sizes = step_batch(ctx) if pads_steps(ctx) else None
    if sizes is None:
        return
    seqs, multiple, padded = sizes
    if padded == seqs:
        return
    tbs, n, sync = ctx.int("data.train_batch_size"), ctx.int(N), sync_steps(ctx)
    # each of the step's parameter_sync_step local updates samples train_batch_size / parameter_sync_step prompts
    # and is padded on its own (trainer_base.py:533-556)
    unit = multiple // n * sync if multiple % n == 0 else None
    better = sorted({-(-tbs // unit) * unit, max(unit, tbs // unit * unit)}) if unit else []
    what = (f"train_batch_size x rollout.n = {tbs} x {n} = {seqs}" if sync == 1 else
            f"each of the step's {sync} local updates' train_batch_size / parameter_sync_step x rollout.n = "
            f"{tbs // sync} x {n} = {seqs}")
    each = "every step" if sync == 1 else f"each local update ({sync} a step)"
    yield finding(
        Severity.WARNING, ["data.train_batch_size", f"{A}.ppo_mini_batch_size", N],
        f"{what} sequences is not a multiple of {multiple} (whole mini-batches over the data-parallel ranks): "
        f"{each} verl pads it with {padded - seqs} synthetic sequences of {SYNTHETIC_SEQ_TOKENS} tokens "
        f"({100 * (padded - seqs) / padded:.0f} % of the {padded} it forwards and trains on, never generated) and "
        "says nothing",
        ("Use data.train_batch_size=" + " or ".join(map(str, better)) if better else
         f"Make train_batch_size x rollout.n a multiple of {multiple}"),
        [f"data.train_batch_size={better[0]}"] if better else [], fix_auto=False)


@rule("checkpoint.contents", Stage.ADVICE)
def checkpoint_contents(ctx: RuleContext):
    """verl matches checkpoint contents by name ('model' in save_contents, ...: utils/checkpoint/checkpoint_manager.py:
    72-98, and each backend's load path) and ignores any other word: a typo ('hf_modle') saves no HF model and says
    nothing. Only model, optimizer, extra and hf_model mean something."""
    sections = [f"{A}.checkpoint"] + (["critic.checkpoint"] if ctx.need_critic else [])
    for section in sections:
        for what in ("save_contents", "load_contents"):
            value = ctx.get(f"{section}.{what}")
            if not isinstance(value, list) or (what == "load_contents" and not ctx.is_set(f"{section}.{what}")
                                               and value == ctx.get(f"{section}.save_contents")):
                continue  # load_contents follows save_contents (${.save_contents}): said once
            unknown = [v for v in value if v not in CONTENTS]
            if unknown:
                yield finding(
                    Severity.WARNING, [f"{section}.{what}"],
                    f"{section}.{what} names {', '.join(map(repr, unknown))}, which verl does not know: it looks only "
                    f"for {', '.join(CONTENTS)} and ignores the rest without a word",
                    f"Use only {', '.join(CONTENTS)} in {section}.{what}", fix_auto=False)


@rule("batch.gen_batch", Stage.RUNTIME)
def gen_batch(ctx: RuleContext):
    """The sync trainer fetches a step's prompts in whole dataloader batches of data.gen_batch_size:
    trainer_base.py:1485-1489 raises "num_prompts (N) must be a positive multiple of gen_batch_size (G); it is
    submitted in whole gen_batch_size dataloader fetches." at the first step when train_batch_size is not one.
    Other modes, group filtering and failed-group refills set gen_batch_size to 1 first (:727-739)."""
    if not ctx.get("trainer.use_v1") or ctx.get("trainer.v1.trainer_mode") != "sync":
        return
    if ctx.get("algorithm.filter_groups.enable") or ctx.get("trainer.v1.sampler.sync_refill_failed_groups"):
        return
    tbs, gen = ctx.int("data.train_batch_size"), ctx.int("data.gen_batch_size")
    if tbs is None or not gen or gen <= 0 or tbs <= 0 or tbs % gen == 0:
        return
    fits = _divisors_up_to(tbs, gen)
    yield finding(
        Severity.ERROR, ["data.gen_batch_size", "data.train_batch_size"],
        f"data.gen_batch_size={gen} does not divide data.train_batch_size={tbs}: the sync trainer fetches a step's "
        f"prompts in whole batches of {gen}, and fails at the first step with: num_prompts ({tbs}) must be a positive "
        f"multiple of gen_batch_size ({gen})",
        f"Set data.gen_batch_size={fits[-1]} (or null: one fetch of train_batch_size)", ["data.gen_batch_size=null"])


@rule("batch.sync_step", Stage.RUNTIME)
def sync_step(ctx: RuleContext):
    """Each step runs parameter_sync_step local updates of train_batch_size / parameter_sync_step prompts:
    trainer_base.py:535-538 asserts "train_batch_size (T) must be divisible by parameter_sync_step (S)" at the first
    step. The key is in verl's tree only for separate_async (where trainer.separate_async asks more of it); sync and
    colocate_async read it when added (+trainer.v1.sync.parameter_sync_step, trainer_base.py:130)."""
    mode = ctx.get("trainer.v1.trainer_mode")
    tbs, step = ctx.int("data.train_batch_size"), sync_steps(ctx)
    if not ctx.get("trainer.use_v1") or mode == "separate_async" or tbs is None or tbs <= 0 or tbs % step == 0:
        return
    key = f"trainer.v1.{mode}.parameter_sync_step"
    yield finding(
        Severity.ERROR, [key, "data.train_batch_size"],
        f"{key}={step} does not divide data.train_batch_size={tbs}; verl fails at the first step with: "
        f"train_batch_size ({tbs}) must be divisible by parameter_sync_step ({step})",
        f"Use a {key} that divides {tbs} ({', '.join(map(str, _divisors_up_to(tbs, min(tbs, 16))))}...)",
        fix_auto=False)
