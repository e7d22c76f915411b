"""Training engines and optimizers: the engine/optimizer config classes (workers/config/engine.py, optimizer.py),
sequence parallelism against padding removal, router replay, and the engine backend the workers look up.

The engine and optimizer sections are built with the section that holds them (the actor in validate_config, the
reference model and the critic's engine when workers start), so each check has that build's stage.
"""

from __future__ import annotations

import math

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.check.rules.sections import Section, built_sections, not_one_of, stops
from wizard.core.verl.keys import A, M

# class -> (field, allowed values, verl's message with {v} for the value): workers/config/engine.py, optimizer.py
CHOICES: dict[str, tuple[tuple[str, tuple, str], ...]] = {
    "FSDPEngineConfig": (("strategy", ("fsdp", "fsdp2", "fsdp_turbo"), "strategy {v} not supported"),),
    "McoreEngineConfig": (("strategy", ("megatron",), "AssertionError"),
                          ("dtype", ("bfloat16", "float16"), "dtype {v} not supported")),
    "VeOmniEngineConfig": (("strategy", ("veomni",), "strategy {v} not supported"),),
    "TorchtitanEngineConfig": (
        ("attn_type", ("flex", "flex_flash", "varlen"), "attn_type {v} not supported (sdpa is not a valid language-model backend)"),
        ("spmd_backend", ("default", "full_dtensor", "spmd_types"), "spmd_backend {v} not supported"),
        ("activation_checkpoint", ("selective", "full", "none"), "activation_checkpoint {v} not supported"),
        ("strategy", ("torchtitan",), "strategy {v} not supported")),
    "AutomodelEngineConfig": (("strategy", ("automodel",), "strategy must be 'automodel', got {v}"),
                              ("distributed_strategy", ("fsdp2", "megatron_fsdp", "ddp"), "distributed_strategy {v} not supported")),
    "EngineRouterReplayConfig": (("mode", ("disabled", "R2", "R3"),
                                  "Invalid router_replay mode: {v}. Must be one of ['disabled', 'R2', 'R3']"),),
    "FSDPOptimizerConfig": (("lr_scheduler_type", ("constant", "cosine"), "AssertionError()"),),
    "AutomodelOptimizerConfig": (("lr_scheduler_type", ("constant", "cosine", "linear", "inverse-square-root"), "AssertionError()"),),
}
MCORE_DTYPES = ("32", "bf16", "bfloat16", "float32", "fp32")
# Engine backends registered for each model type (workers/engine/*/transformer_impl.py @EngineRegistry.register).
BACKENDS = {"language_model": ("fsdp", "fsdp2", "fsdp_turbo", "megatron", "veomni", "torchtitan", "automodel"),
            "value_model": ("fsdp", "fsdp2", "megatron", "veomni")}


@rule("engine.config", None)  # the stage verl builds the section at
def engine_config(ctx: RuleContext):
    """The __post_init__ checks of the engine, router-replay and optimizer config classes, for every section of
    those classes verl builds."""
    for section in built_sections(ctx, tuple(CHOICES) + ("McoreOptimizerConfig",)):
        for name, allowed, said in CHOICES.get(section.cls, ()):
            found = not_one_of(ctx, section, name, allowed, said, "engine.config")
            if found:
                yield found
                break
        else:
            yield from _numbers(ctx, section)


def _bad(ctx: RuleContext, section: Section, key: str, message: str, said: str, fix: str, overrides=()):
    return finding(Severity.ERROR, [key], f"{message}; " + stops(section, said), fix,
                   list(overrides), stage=section.stage)


def _numbers(ctx: RuleContext, section: Section):
    p = section.path
    if section.cls == "McoreEngineConfig" and ctx.get(f"{p}.dynamic_context_parallel"):
        v = ctx.get(f"{p}.max_seqlen_per_dp_cp_rank")
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            yield _bad(ctx, section, f"{p}.max_seqlen_per_dp_cp_rank",
                       f"{p}.dynamic_context_parallel is on but max_seqlen_per_dp_cp_rank={v!r} is not a positive int",
                       "max_seqlen_per_dp_cp_rank must be a positive integer when dynamic_context_parallel is enabled",
                       f"Set {p}.max_seqlen_per_dp_cp_rank to the longest sequence one DP x CP rank holds, or turn "
                       "dynamic_context_parallel off")
    elif section.cls == "AutomodelEngineConfig" and ctx.get(f"{p}.pp_size") not in (1, None):
        yield _bad(ctx, section, f"{p}.pp_size", f"{p}.pp_size={ctx.get(f'{p}.pp_size')}",
                   "Pipeline parallelism (pp_size > 1) is not yet supported for automodel backend",
                   f"Set {p}.pp_size=1", [f"{p}.pp_size=1"])
    elif section.cls == "VeOmniEngineConfig":
        v = ctx.get(f"{p}.activation_offload_host_cache_limit_gb")
        if not isinstance(v, (int, float)) or isinstance(v, bool) or not math.isfinite(v) or v < 0:
            yield _bad(ctx, section, f"{p}.activation_offload_host_cache_limit_gb",
                       f"{p}.activation_offload_host_cache_limit_gb={v!r} is not a finite number >= 0",
                       f"activation_offload_host_cache_limit_gb must be a finite non-negative value, got {v}.",
                       f"Set {p}.activation_offload_host_cache_limit_gb=4.0", [f"{p}.activation_offload_host_cache_limit_gb=4.0"])
    elif section.cls == "FSDPOptimizerConfig":
        v = ctx.get(f"{p}.warmup_style")
        if v is not None and v not in ("constant", "cosine"):
            yield _bad(ctx, section, f"{p}.warmup_style", f"{p}.warmup_style={v!r} is not constant or cosine",
                       "AssertionError()", f"Use {p}.lr_scheduler_type=constant|cosine (warmup_style is deprecated)",
                       [f"{p}.warmup_style=null"])
    elif section.cls == "McoreOptimizerConfig":
        for name in ("main_grads_dtype", "exp_avg_dtype", "exp_avg_sq_dtype"):
            v = ctx.get(f"{p}.{name}")
            if str(v) not in MCORE_DTYPES:
                yield _bad(ctx, section, f"{p}.{name}", f"{p}.{name}={v!r} is not one of {', '.join(MCORE_DTYPES)}",
                           f"`{name}` must be one of {sorted(MCORE_DTYPES)}, got {v!r}", f"Set {p}.{name}=fp32",
                           [f"{p}.{name}=fp32"])
                break


@rule("engine.sp_remove_padding", None)  # the stage verl builds the section at
def sp_remove_padding(ctx: RuleContext):
    """Ulysses sequence parallelism needs padding removal: FSDPActorConfig.validate (actor.py:339) in the pre-flight for
    the actor's legacy key, FSDPEngine.__init__ (transformer_impl.py:149) at startup for the engine's own key."""
    if ctx.get(f"{A}.strategy") in ("fsdp", "fsdp2") and ctx.get(f"{A}._target_", "").endswith("FSDPActorConfig"):
        top, engine = ctx.int(f"{A}.ulysses_sequence_parallel_size") or 1, ctx.int(f"{A}.fsdp_config.ulysses_sequence_parallel_size") or 1
        padding = ctx.get(f"{M}.use_remove_padding")
        if top > 1 and not padding:
            yield _padding(f"{A}.ulysses_sequence_parallel_size", top, f"{M}.use_remove_padding", Stage.PREFLIGHT,
                           "When using sequence parallelism for actor/ref policy, you must enable `use_remove_padding`.")
        elif engine > 1 and not padding:
            yield _padding(f"{A}.fsdp_config.ulysses_sequence_parallel_size", engine, f"{M}.use_remove_padding",
                           Stage.STARTUP, "When using sequence parallelism (ulysses_sequence_parallel_size > 1), you "
                           "must enable `use_remove_padding`.")
    if ctx.need_critic and ctx.get("critic.strategy") in ("fsdp", "fsdp2") and "critic.fsdp" in _paths(ctx):
        sp = ctx.int("critic.fsdp.ulysses_sequence_parallel_size") or 1
        if sp > 1 and not ctx.get("critic.model.use_remove_padding"):
            yield _padding("critic.fsdp.ulysses_sequence_parallel_size", sp, "critic.model.use_remove_padding",
                           Stage.STARTUP, "When using sequence parallelism (ulysses_sequence_parallel_size > 1), you "
                           "must enable `use_remove_padding`.")


def _paths(ctx: RuleContext) -> set[str]:
    return {s.path for s in built_sections(ctx)}


def _padding(sp_key: str, sp: int, padding_key: str, stage: Stage, said: str):
    when = "in its pre-flight" if stage is Stage.PREFLIGHT else "when the training engine starts"
    return finding(Severity.ERROR, [sp_key, padding_key],
                   f"{sp_key}={sp} splits sequences over {sp} ranks, which needs {padding_key}=true; verl stops "
                   f"{when} with: {said}", f"Set {padding_key}=true (or {sp_key}=1)", [f"{padding_key}=true"], stage=stage)


@rule("engine.router_replay", Stage.PREFLIGHT)
def router_replay(ctx: RuleContext):
    """utils/config.py:74-85: router replay R2 recomputes old log-probs, which bypass mode skips; VeOmni's router
    replay needs padding removal (actor.py:369)."""
    for engine in ("megatron", "veomni", "fsdp_config"):
        mode = ctx.get(f"{A}.{engine}.router_replay.mode")
        if mode == "R2" and ctx.get("algorithm.rollout_correction.bypass_mode"):
            yield finding(Severity.ERROR, [f"{A}.{engine}.router_replay.mode", "algorithm.rollout_correction.bypass_mode"],
                          "router_replay.mode='R2' requires algorithm.rollout_correction.bypass_mode=False: R2 records "
                          "routes while recomputing actor old_log_probs, but bypass mode skips that forward.",
                          f"Set algorithm.rollout_correction.bypass_mode=false, or {A}.{engine}.router_replay.mode=R3",
                          ["algorithm.rollout_correction.bypass_mode=false"], fix_auto=False)
    mode = ctx.get(f"{A}.veomni.router_replay.mode")
    if ctx.get(f"{A}.strategy") == "veomni" and mode not in (None, "disabled") and not ctx.get(f"{A}.use_remove_padding"):
        yield finding(Severity.ERROR, [f"{A}.veomni.router_replay.mode", f"{A}.use_remove_padding"],
                      f"{A}.veomni.router_replay.mode={mode} needs {A}.use_remove_padding=true; verl's pre-flight "
                      "stops with: router_replay requires use_remove_padding=True. In VeOmni engine, ...",
                      f"Set {A}.use_remove_padding=true", [f"{A}.use_remove_padding=true"])


@rule("engine.backend", Stage.STARTUP, also={"engine.critic_megatron_without_engine": Stage.STARTUP})
def backend(ctx: RuleContext):
    """workers/engine/base.py:400: the worker looks the engine up by actor.strategy / critic.strategy."""
    roles = [(f"{A}.strategy", "language_model")]
    if ctx.need_critic:
        roles.append(("critic.strategy", "value_model"))
    for key, model_type in roles:
        value = ctx.get(key)
        if value == "megatron" and ctx.get(f"{key.rsplit('.', 1)[0]}.megatron") is None:
            if key == "critic.strategy":
                yield _critic_megatron_without_engine(ctx)
            continue  # the actor's: batch.megatron_without_engine says it, earlier (verl's pre-flight)
        if isinstance(value, str) and value not in BACKENDS[model_type]:
            yield finding(Severity.ERROR, [key],
                          f"{key}={value!r} is not a training engine verl 0.9.1 has for the {model_type.split('_')[0]} "
                          f"model ({', '.join(BACKENDS[model_type])}); the pre-flight passes, then the workers die with: "
                          f"Unknown backend: {value}",
                          f"Set {key}=fsdp (or switch engines as a whole with model_engine=megatron|veomni|torchtitan)",
                          [f"{key}=fsdp"], fix_auto=False)


def _critic_megatron_without_engine(ctx: RuleContext):
    """critic.strategy=megatron over a config composed for FSDP (no critic.megatron section). Unlike the actor's
    case, verl's pre-flight passes: FSDPCriticConfig.__post_init__ copies the strategy into its FSDPEngineConfig
    with object.__setattr__, past that class's own strategy check (workers/config/critic.py:212-219,
    engine.py:306). The critic's TrainingWorker then builds the engine named by that strategy with the FSDP config
    (trainer_base.py:266-286, engine_workers.py:136-138): the Megatron value engine's first line reads
    engine_config.use_mbridge (megatron/transformer_impl.py:191), which FSDPEngineConfig lacks; without
    megatron-core the lookup fails first (base.py:401)."""
    actor = ctx.get(f"{A}.strategy")
    fsdp = actor if actor in ("fsdp", "fsdp2") else "fsdp2"
    return finding(
        Severity.ERROR, ["critic.strategy", "model_engine"],
        "critic.strategy=megatron, but the config was composed for FSDP (the critic is built as FSDPCriticConfig, "
        "with no critic.megatron section): verl's pre-flight passes, since FSDPCriticConfig copies the strategy into "
        "its FSDP engine config unchecked, then the critic workers build the Megatron engine from that FSDP config "
        "and die at startup with: AttributeError: 'FSDPEngineConfig' object has no attribute 'use_mbridge' "
        "(where megatron-core is not installed: AssertionError: Unknown backend: megatron)",
        f"Train the critic with FSDP: critic.strategy={fsdp}; or switch the engine as a whole, actor and critic, "
        "with model_engine=megatron (or --config-name=ppo_megatron_trainer)",
        [f"critic.strategy={fsdp}"], fix_auto=False, rule="engine.critic_megatron_without_engine",
    )
