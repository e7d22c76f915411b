"""Batch-size arithmetic: verl's validate_config and the actor/critic config classes,
plus the data-parallel divisibility verl only meets on the first update."""

from __future__ import annotations

from math import gcd, lcm

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.keys import A, R

TBS = "data.train_batch_size"
N = f"{R}.n"
LOSS_AGG_MODES = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")


def nearest_multiples(value: int, step: int) -> list[int]:
    below = (value // step) * step
    above = below + step
    return [v for v in (below, above) if v > 0]


def _micro_suggestion(per_gpu_batch: int | None) -> int:
    """A micro batch that divides the per-GPU mini batch: the largest power of two <= 8 that does."""
    if not per_gpu_batch or per_gpu_batch < 1:
        return 4
    for m in (8, 4, 2, 1):
        if per_gpu_batch % m == 0:
            return m
    return 1


@rule("batch.real_train_batch_size", Stage.PREFLIGHT, also={
    "batch.no_gpus": Stage.PREFLIGHT, "batch.megatron_without_engine": Stage.PREFLIGHT,
    "batch.megatron_parallel": Stage.PREFLIGHT})
def real_train_batch_size(ctx: RuleContext):
    """validate_config: data.train_batch_size x rollout.n must be divisible by the minimal batch."""
    if ctx.dynamic_bsz:
        return
    tbs, n, n_gpus = ctx.int(TBS), ctx.int(N), ctx.n_gpus
    if n_gpus == 0:  # minimal_bsz is 0 (FSDP: n_gpus; Megatron: 0 data-parallel ranks x micro)
        yield finding(
            Severity.ERROR, ["trainer.n_gpus_per_node", "trainer.nnodes"],
            f"trainer.n_gpus_per_node x trainer.nnodes = {ctx.int('trainer.n_gpus_per_node')} x "
            f"{ctx.int('trainer.nnodes')} = 0 GPUs; verl's pre-flight divides the batch by the GPU count and stops "
            "with: ZeroDivisionError: integer modulo by zero",
            "Give the GPUs per node and the nodes, each 1 or more: trainer.n_gpus_per_node=8 trainer.nnodes=1",
            ["trainer.n_gpus_per_node=1", "trainer.nnodes=1"], fix_auto=False, rule="batch.no_gpus")
        return
    if tbs is None or n is None or n_gpus is None or n_gpus < 0:
        return
    if ctx.strategy == "megatron" and ctx.get(f"{A}.megatron") is None:
        yield finding(
            Severity.ERROR,
            [f"{A}.strategy", "model_engine"],
            "actor.strategy=megatron, but the config was composed for FSDP (no actor.megatron section); "
            "verl's pre-flight fails reading actor.megatron.tensor_model_parallel_size",
            "Switch the engine as a whole: model_engine=megatron (or --config-name=ppo_megatron_trainer)",
            ["model_engine=megatron"], rule="batch.megatron_without_engine",
        )
        return
    if ctx.strategy == "megatron":
        tp, pp, cp = (ctx.int(f"{A}.megatron.{k}") for k in ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size"))
        micro = ctx.int(f"{A}.ppo_micro_batch_size_per_gpu")
        if None in (tp, pp, cp):
            return
        if min(tp, pp, cp) < 1:
            yield finding(
                Severity.ERROR, [f"{A}.megatron.tensor_model_parallel_size", f"{A}.megatron.pipeline_model_parallel_size",
                                 f"{A}.megatron.context_parallel_size"],
                f"Megatron TP x PP x CP = {tp} x {pp} x {cp}: each must be 1 or more; "
                + ("verl's pre-flight divides the GPU count by their product and stops with: ZeroDivisionError: "
                   "integer modulo by zero" if 0 in (tp, pp, cp) else
                   "verl's pre-flight does not catch a negative size (its divisions still come out whole), and "
                   "Megatron's parallel groups fail when the workers start"),
                "Set each of them to 1 or more", rule="batch.megatron_parallel",
            )
            return
        if n_gpus % (tp * pp * cp) != 0:
            yield finding(
                Severity.ERROR,
                ["trainer.n_gpus_per_node", "trainer.nnodes", f"{A}.megatron.tensor_model_parallel_size"],
                f"n_gpus ({n_gpus}) must be divisible by model_parallel_size ({tp * pp}) times "
                f"context_parallel_size ({cp})",
                "Choose Megatron TP x PP x CP that divides the GPU count", rule="batch.megatron_parallel",
            )
            return
        if micro is None:
            return  # verl raises a TypeError here; batch.actor_micro reports the cause
        minimal = n_gpus // (tp * pp * cp) * micro
        what = f"the Megatron data-parallel size ({n_gpus // (tp * pp * cp)}) x ppo_micro_batch_size_per_gpu ({micro})"
    else:
        minimal = n_gpus
        what = f"the {n_gpus} GPUs (trainer.n_gpus_per_node x trainer.nnodes)"
    real = tbs * n
    if minimal > 0 and real % minimal != 0:
        step = minimal // gcd(n, minimal)
        # never a step below one prompt: from below one, the nearest sizes to one mini-batch
        near = tbs if tbs >= 1 else max(1, ctx.int(f"{A}.ppo_mini_batch_size") or 1)
        options = nearest_multiples(near, step)
        if ctx.strategy != "megatron":
            # whole mini-batches too (as batch.mini_vs_dp leaves them), where that stays near: else the V1 trainer
            # pads every step (3 GPUs: 1023 x 5 with mini-batches of 255 x 5 pads 20 %; 1020 pads nothing)
            whole = lcm(step, _whole_minis(ctx, n, minimal))
            if whole <= near:
                options = nearest_multiples(near, whole)
        yield finding(
            Severity.ERROR,
            [TBS, N, "trainer.n_gpus_per_node"],
            f"data.train_batch_size x rollout.n = {tbs} x {n} = {real} is not divisible by {what} = {minimal}; "
            f"verl stops with: real_train_batch_size ({real}) must be divisible by minimal possible batch size "
            f"({minimal})",
            "Use data.train_batch_size=" + " or ".join(str(o) for o in options),
            [f"{TBS}={options[-1] if len(options) == 1 else options[0]}"],
        )


@rule("batch.actor_micro", Stage.PREFLIGHT)
def actor_micro(ctx: RuleContext):
    """FSDPActorConfig.__post_init__: exactly one of ppo_micro_batch_size(_per_gpu) unless dynamic bsz."""
    if ctx.dynamic_bsz:
        return
    micro = ctx.get(f"{A}.ppo_micro_batch_size")
    per_gpu = ctx.get(f"{A}.ppo_micro_batch_size_per_gpu")
    if micro is not None and per_gpu is not None:
        yield finding(
            Severity.ERROR,
            [f"{A}.ppo_micro_batch_size", f"{A}.ppo_micro_batch_size_per_gpu"],
            f"Both actor.ppo_micro_batch_size ({micro}) and actor.ppo_micro_batch_size_per_gpu ({per_gpu}) are set; "
            "verl only supports the per-GPU key (the other is deprecated)",
            f"Remove {A}.ppo_micro_batch_size",
            [f"{A}.ppo_micro_batch_size=null"],
        )
    elif micro is None and per_gpu is None:
        per_gpu_mini = _per_gpu_mini(ctx, f"{A}.ppo_mini_batch_size")
        m = _micro_suggestion(per_gpu_mini)
        yield finding(
            Severity.ERROR,
            [f"{A}.ppo_micro_batch_size_per_gpu"],
            "actor.ppo_micro_batch_size_per_gpu is not set (verl has no default for it) and dynamic batch size is "
            "off; verl stops with: [actor] Please set at least one of 'actor.ppo_micro_batch_size' or "
            "'actor.ppo_micro_batch_size_per_gpu'",
            f"Set {A}.ppo_micro_batch_size_per_gpu={m} (trajectories per GPU per forward; lower it if you run out of "
            f"memory), or turn on {A}.use_dynamic_bsz=true",
            [f"{A}.ppo_micro_batch_size_per_gpu={m}"],
        )


def _per_gpu_mini(ctx: RuleContext, mini_key: str) -> int | None:
    mini, n, n_gpus = ctx.int(mini_key), ctx.int(N), ctx.n_gpus
    if None in (mini, n, n_gpus) or n_gpus <= 0:
        return None
    return mini * n // n_gpus


@rule("batch.loss_agg_mode", Stage.PREFLIGHT)
def loss_agg_mode(ctx: RuleContext):
    """ActorConfig.__post_init__: loss_agg_mode must be one of five."""
    mode = ctx.get(f"{A}.loss_agg_mode")
    if mode not in LOSS_AGG_MODES:
        yield finding(
            Severity.ERROR,
            [f"{A}.loss_agg_mode"],
            f"Invalid loss_agg_mode: {mode}",
            "One of: " + ", ".join(LOSS_AGG_MODES),
            [f"{A}.loss_agg_mode=token-mean"],
        )


@rule("batch.mini_vs_train", Stage.PREFLIGHT, also={"batch.actor_mini_vs_train": Stage.PREFLIGHT,
                                                   "batch.critic_mini_vs_train": Stage.PREFLIGHT})
def mini_vs_train(ctx: RuleContext):
    """ActorConfig.validate / CriticConfig.validate: train_batch_size >= ppo_mini_batch_size."""
    tbs = ctx.int(TBS)
    checks = [(ctx.dynamic_bsz, f"{A}.ppo_mini_batch_size", "actor")]
    if ctx.need_critic:
        checks.append((bool(ctx.get("critic.use_dynamic_bsz")), "critic.ppo_mini_batch_size", "critic"))
    for dynamic, key, who in checks:
        mini = ctx.int(key)
        if dynamic or tbs is None or mini is None or mini < 1 or tbs >= mini:
            continue  # a mini-batch below one prompt: batch.not_positive
        yield finding(
            Severity.ERROR,
            [TBS, key],
            f"train_batch_size ({tbs}) must be >= {who}.ppo_mini_batch_size ({mini}): one update needs "
            f"{mini} prompts but a step only has {tbs}",
            # never a size below one prompt (a step of 0 prompts: batch.not_positive)
            f"Set {key}={tbs} or lower (or raise {TBS})" if tbs >= 1 else f"Set {TBS}={mini} (prompts per step)",
            [f"{key}={tbs}"] if tbs >= 1 else [f"{TBS}={mini}"], rule=f"batch.{who}_mini_vs_train",
        )


@rule("batch.deprecated_actor_micro", Stage.PREFLIGHT)
def deprecated_actor_micro(ctx: RuleContext):
    """ActorConfig.validate with the deprecated global ppo_micro_batch_size."""
    if ctx.dynamic_bsz:
        return
    micro, mini, n_gpus = ctx.int(f"{A}.ppo_micro_batch_size"), ctx.int(f"{A}.ppo_mini_batch_size"), ctx.n_gpus
    sp = ctx.int(f"{A}.ulysses_sequence_parallel_size") or 1
    if micro is None or mini is None or ctx.int(TBS) is None or ctx.int(TBS) < mini:
        return
    if micro and mini % micro != 0:
        yield finding(
            Severity.ERROR,
            [f"{A}.ppo_micro_batch_size"],
            f"ppo_mini_batch_size ({mini}) must be divisible by ppo_micro_batch_size ({micro})",
            f"Use the per-GPU key instead: {A}.ppo_micro_batch_size_per_gpu",
        )
    elif n_gpus is not None and micro * sp < n_gpus:
        yield finding(
            Severity.ERROR,
            [f"{A}.ppo_micro_batch_size"],
            f"ppo_micro_batch_size ({micro}) * ulysses_sequence_parallel_size ({sp}) must be >= n_gpus ({n_gpus})",
            f"Use the per-GPU key instead: {A}.ppo_micro_batch_size_per_gpu",
        )


def _log_prob_pair(ctx: RuleContext, section: str):
    name = f"actor_rollout_ref.{section}"
    micro = ctx.get(f"{name}.log_prob_micro_batch_size")
    per_gpu = ctx.get(f"{name}.log_prob_micro_batch_size_per_gpu")
    if micro is None and per_gpu is None:
        yield finding(
            Severity.ERROR,
            [f"{name}.log_prob_micro_batch_size_per_gpu"],
            f"{name}.log_prob_micro_batch_size_per_gpu is not set (no default) and dynamic batch size is off; "
            f"verl stops with: [{name}] Please set at least one of '{name}.log_prob_micro_batch_size' or "
            f"'{name}.log_prob_micro_batch_size_per_gpu'",
            f"Set {name}.log_prob_micro_batch_size_per_gpu=8 (sequences per GPU per log-prob forward)",
            [f"{name}.log_prob_micro_batch_size_per_gpu=8"], rule=f"batch.{section}_log_prob_micro",
        )
    elif micro is not None and per_gpu is not None:
        yield finding(
            Severity.ERROR,
            [f"{name}.log_prob_micro_batch_size", f"{name}.log_prob_micro_batch_size_per_gpu"],
            f"Both {name}.log_prob_micro_batch_size ({micro}) and ..._per_gpu ({per_gpu}) are set; verl only "
            "supports the per-GPU key",
            f"Remove {name}.log_prob_micro_batch_size",
            [f"{name}.log_prob_micro_batch_size=null"], rule=f"batch.{section}_log_prob_micro",
        )


@rule("batch.log_prob_micro", Stage.PREFLIGHT, also={"batch.rollout_log_prob_micro": Stage.PREFLIGHT,
                                                    "batch.ref_log_prob_micro": Stage.PREFLIGHT})
def log_prob_micro(ctx: RuleContext):
    """validate_config: rollout (always) and ref (when a reference model is needed) micro-batch keys."""
    if ctx.dynamic_bsz:
        return
    if ctx.need_ref:
        yield from _log_prob_pair(ctx, "ref")
    yield from _log_prob_pair(ctx, "rollout")


@rule("batch.critic_micro", Stage.PREFLIGHT)
def critic_micro(ctx: RuleContext):
    """FSDPCriticConfig.__post_init__/validate, when a critic is needed."""
    if not ctx.need_critic or ctx.get("critic.use_dynamic_bsz"):
        return
    micro, per_gpu = ctx.get("critic.ppo_micro_batch_size"), ctx.get("critic.ppo_micro_batch_size_per_gpu")
    if micro is None and per_gpu is None:
        yield finding(
            Severity.ERROR,
            ["critic.ppo_micro_batch_size_per_gpu"],
            "The critic is on (adv_estimator=gae) but critic.ppo_micro_batch_size_per_gpu is not set; verl stops "
            "with: [critic] Please set at least one of 'critic.micro_batch_size' or 'critic.micro_batch_size_per_gpu'",
            "Set critic.ppo_micro_batch_size_per_gpu=4",
            ["critic.ppo_micro_batch_size_per_gpu=4"],
        )
    elif micro is not None and per_gpu is not None:
        yield finding(
            Severity.ERROR,
            ["critic.ppo_micro_batch_size", "critic.ppo_micro_batch_size_per_gpu"],
            f"Both critic.ppo_micro_batch_size ({micro}) and critic.ppo_micro_batch_size_per_gpu ({per_gpu}) are set",
            "Remove critic.ppo_micro_batch_size",
            ["critic.ppo_micro_batch_size=null"],
        )
    else:
        mini, n_gpus = ctx.int("critic.ppo_mini_batch_size"), ctx.n_gpus
        sp = ctx.int("critic.ulysses_sequence_parallel_size") or 1
        if isinstance(micro, int) and micro and mini is not None and mini % micro != 0:
            yield finding(
                Severity.ERROR,
                ["critic.ppo_micro_batch_size"],
                f"[critic] ppo_mini_batch_size ({mini}) must be divisible by ppo_micro_batch_size ({micro})",
                "Use critic.ppo_micro_batch_size_per_gpu instead",
            )
        elif isinstance(micro, int) and n_gpus is not None and micro * sp < n_gpus and (ctx.int(TBS) or 0) >= (mini or 0):
            yield finding(
                Severity.ERROR,
                ["critic.ppo_micro_batch_size"],
                f"critic.ppo_micro_batch_size ({micro}) * ulysses_sequence_parallel_size ({sp}) must be >= n_gpus "
                f"({n_gpus})",
                "Use critic.ppo_micro_batch_size_per_gpu instead",
            )


@rule("data.lengths", Stage.RUNTIME)
def data_lengths(ctx: RuleContext):
    """A prompt or response length below 1 passes every check verl 0.9.1 makes and fails once it runs."""
    for key, what in (("data.max_response_length", "verl does not check it, and the agent loop pads or cuts every "
                       "response to this many tokens (agent_loop.py, _pad_token_ids), so no response token is left to "
                       "train on; it shows only after the engines have started"),
                      ("data.max_prompt_length", "no prompt is that short, so filter_overlong_prompts drops every "
                       "prompt and verl stops with 'Train dataloader is empty!' (ray_trainer.py:427); without the "
                       "filter, truncation=error refuses every prompt")):
        value = ctx.num(key)
        if value is not None and value < 1:
            yield finding(Severity.ERROR, [key], f"{key} = {value:g}: {what}",
                          f"Set {key} to the longest {key.split('_')[1]} you want, in tokens (at least 1)",
                          fix_auto=False)


@rule("batch.val_temperature", Stage.PREFLIGHT)
def val_temperature(ctx: RuleContext):
    """validate_config: sampling in validation needs temperature > 0."""
    temperature = ctx.num("actor_rollout_ref.rollout.temperature")
    if ctx.get("actor_rollout_ref.rollout.val_kwargs.do_sample") and temperature is not None and temperature <= 0:
        yield finding(
            Severity.ERROR,
            ["actor_rollout_ref.rollout.temperature", "actor_rollout_ref.rollout.val_kwargs.do_sample"],
            f"validation gen temperature should be greater than 0 when enabling do_sample (temperature={temperature})",
            "Set actor_rollout_ref.rollout.temperature=1.0, or val_kwargs.do_sample=false",
            ["actor_rollout_ref.rollout.temperature=1.0"],
        )


@rule("batch.worker_micro", Stage.STARTUP)
def worker_micro(ctx: RuleContext):
    """engine_workers.py:635: the deprecated global micro keys pass validate_config but fail at worker start."""
    if ctx.dynamic_bsz:
        return
    for key, old in (
        (f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.ppo_micro_batch_size"),
        ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", "actor_rollout_ref.rollout.log_prob_micro_batch_size"),
    ):
        old_value = ctx.get(old)
        if ctx.get(key) is None and old_value is not None:
            yield finding(
                Severity.ERROR,
                [old, key],
                f"{old}={old_value} is deprecated: it passes verl's pre-flight, but the actor worker asserts that "
                f"{key} is set and dies at startup",
                f"Replace it with {key} (a per-GPU count)",
                [f"{old}=null", f"{key}={_micro_suggestion(_per_gpu_mini(ctx, f'{A}.ppo_mini_batch_size'))}"],
            )


def _mini_sections(ctx: RuleContext) -> list[tuple[str, int]]:
    """(section, its Ulysses size) of each FSDP update whose ppo_mini_batch_size x n splits over its DP ranks."""
    sections = [(A, ctx.int(f"{A}.fsdp_config.ulysses_sequence_parallel_size") or ctx.int(f"{A}.ulysses_sequence_parallel_size") or 1)]
    if ctx.need_critic:
        sections.append(("critic", ctx.int("critic.fsdp.ulysses_sequence_parallel_size") or 1))
    return sections


def _mini_options(mini: int, n: int, dp: int) -> list[int]:
    """The mini-batch sizes nearest ``mini`` whose x n splits over ``dp`` ranks (batch.mini_vs_dp's fix: the first)."""
    return nearest_multiples(mini, dp // gcd(n, dp))


def _whole_minis(ctx: RuleContext, n: int, n_gpus: int) -> int:
    """The lcm of the FSDP updates' mini-batch sizes as batch.mini_vs_dp leaves them (its fix where one does not
    split): a train_batch_size that is a multiple of it makes whole mini-batches, which the V1 trainer pads
    otherwise (batch.padded_step); 1 where a size is unknown."""
    out = 1
    for section, sp in _mini_sections(ctx):
        mini = ctx.int(f"{section}.ppo_mini_batch_size")
        if mini is None or mini <= 0 or sp <= 0 or n_gpus % sp != 0:
            return 1
        dp = n_gpus // sp
        out = lcm(out, mini if (mini * n) % dp == 0 else _mini_options(mini, n, dp)[0])
    return out


@rule("batch.mini_vs_dp", Stage.RUNTIME)
def mini_vs_dp(ctx: RuleContext):
    """engine_workers.py:267: ppo_mini_batch_size x rollout.n must split evenly over data-parallel ranks."""
    n, n_gpus = ctx.int(N), ctx.n_gpus
    if n is None or not n_gpus or ctx.strategy == "megatron":
        return
    for section, sp in _mini_sections(ctx):
        mini = ctx.int(f"{section}.ppo_mini_batch_size")
        if mini is None or mini < 1 or sp <= 0 or n_gpus % sp != 0:
            continue  # below one prompt: batch.not_positive
        dp = n_gpus // sp
        if (mini * n) % dp != 0:
            options = _mini_options(mini, n, dp)
            yield finding(
                Severity.ERROR,
                [f"{section}.ppo_mini_batch_size", N],
                f"{section}.ppo_mini_batch_size x rollout.n = {mini} x {n} = {mini * n} trajectories do not split "
                f"over {dp} data-parallel ranks; verl fails at the first update with: Got mini_batch_size={mini * n} "
                f"and self.engine.get_data_parallel_size()={dp}",
                f"Use {section}.ppo_mini_batch_size=" + " or ".join(str(o) for o in options),
                [f"{section}.ppo_mini_batch_size={options[0]}"],
            )
