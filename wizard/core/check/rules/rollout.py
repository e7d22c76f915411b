"""Rollout engine settings verl only checks when workers start (RolloutConfig, engine_workers)."""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, choices, finding
from wizard.core.check.rules.sections import built_sections
from wizard.core.verl.keys import R
from wizard.core.verl.lora_fsdp1 import lora_fsdp1_one_gpu as hangs_on_first_sync

ENGINES = ("vllm", "sglang", "trtllm")


@rule("rollout.name", Stage.STARTUP, also={"rollout.engine": Stage.STARTUP})
def rollout_name(ctx: RuleContext):
    """rollout.name has no default (???) and must name a registered engine."""
    if ctx.missing(f"{R}.name") or ctx.get(f"{R}.name") is None:
        yield finding(
            Severity.ERROR,
            [f"{R}.name"],
            "actor_rollout_ref.rollout.name is not set (verl has no default); verl's pre-flight passes, then the "
            "actor workers die with: Missing mandatory value: actor_rollout_ref.rollout.name",
            f"Set {R}.name=vllm (or sglang)",
            [f"{R}.name=vllm"],
            fix_auto=False,
        )
        return
    name = ctx.get(f"{R}.name")
    if name not in ENGINES:
        hint = " (the HF rollout was removed in verl 0.9)" if name == "hf" else ""
        yield finding(
            Severity.ERROR,
            [f"{R}.name"],
            f"Rollout {name} is not an engine verl 0.9.1 has{hint}; workers die at startup "
            f"with: Rollout {name} with mode async not found",
            "One of: " + choices(ENGINES),
            [f"{R}.name=vllm"],
            fix_auto=False, rule="rollout.engine",
        )


@rule("rollout.mode", None, also={"rollout.engine_mode": Stage.STARTUP})  # mode: when its section is built
def rollout_mode(ctx: RuleContext):
    """RolloutConfig.__post_init__: mode 'sync' was removed (every rollout verl builds); any mode but async is not in
    the actor rollout's engine registry (workers/rollout/base.py:106)."""
    for section in built_sections(ctx, ("RolloutConfig",)):
        key = f"{section.path}.mode"
        mode = ctx.get(key)
        if mode == "sync":
            yield finding(
                Severity.ERROR, [key],
                "Rollout mode 'sync' has been removed. Please set `actor_rollout_ref.rollout.mode=async` or remove the "
                f"mode setting entirely. ({key}=sync)",
                f"Set {key}=async", [f"{key}=async"], stage=section.stage,
            )
        elif section.path == R and mode not in ("async", None) and ctx.get(f"{R}.name") in ENGINES:
            yield finding(
                Severity.ERROR, [key],
                f"{key}={mode!r}: verl warns that only 'async' exists, then the actor workers die with: Rollout "
                f"{ctx.get(f'{R}.name')} with mode {mode} not found",
                f"Set {key}=async (or remove it)", [f"{key}=async"], rule="rollout.engine_mode",
            )


@rule("rollout.pipeline_parallel", None)  # the stage verl builds the section at
def rollout_pp(ctx: RuleContext):
    """RolloutConfig.__post_init__: no engine implements rollout pipeline parallelism."""
    for section in built_sections(ctx, ("RolloutConfig",)):
        key = f"{section.path}.pipeline_model_parallel_size"
        pp = ctx.int(key)
        name = ctx.get(f"{section.path}.name")
        if pp is not None and pp > 1 and name in ENGINES:
            yield finding(
                Severity.ERROR, [key],
                f"Current rollout self.name={name!r} not implemented pipeline_model_parallel_size > 1 yet "
                f"(pipeline_model_parallel_size={pp})",
                f"Set {key}=1", [f"{key}=1"], stage=section.stage,
            )


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


@rule("rollout.world_size", Stage.STARTUP, also={"rollout.replica_nodes": Stage.STARTUP,
                                                 "rollout.parallel_size": Stage.STARTUP})
def rollout_world_size(ctx: RuleContext):
    """engine_workers.py:655: TP x DP x PP of a rollout replica must divide the actor's GPUs. A size below 1 passes
    verl's config classes and stops the rollout's start: RolloutReplica.__init__ (workers/rollout/replica.py:107-115)
    takes ``world_size % min(gpus_per_node, world_size)``, a division by zero."""
    sizes = {k: ctx.int(f"{R}.{k}") for k in ("tensor_model_parallel_size", "data_parallel_size",
                                              "pipeline_model_parallel_size")}
    for key, v in sizes.items():
        null = v is None and ctx.is_set(f"{R}.{key}") and ctx.get(f"{R}.{key}") is None
        if null or (v is not None and v < 1):
            fails = ("TypeError: unsupported operand type(s) for *: 'NoneType' and 'int'" if null else
                     "ZeroDivisionError: integer modulo by zero" if v == 0 else
                     "a negative size is no GPU count, and the engine's parallel groups cannot form")
            yield finding(
                Severity.ERROR, [f"{R}.{key}"],
                f"{R}.{key}={'null' if null else v}: verl's config accepts it, and the rollout's start fails: "
                f"{fails} (RolloutReplica, workers/rollout/replica.py:107-115: TP x DP x PP GPUs a replica)",
                f"Set {R}.{key}=1 (or the number of GPUs one replica spans)", [f"{R}.{key}=1"],
                rule="rollout.parallel_size")
            return
    tp, dp, pp = sizes.values()
    n_gpus = ctx.n_gpus
    if None in (tp, dp, pp) or not n_gpus:
        return
    replica = tp * dp * pp
    if n_gpus % replica != 0:
        fits = [d for d in _divisors(n_gpus) if d <= tp] or [1]
        yield finding(
            Severity.ERROR,
            [f"{R}.tensor_model_parallel_size", "trainer.n_gpus_per_node", "trainer.nnodes"],
            f"A rollout replica needs TP x DP x PP = {tp} x {dp} x {pp} = {replica} GPUs, which does not divide the "
            f"{n_gpus} training GPUs; workers die at startup with: rollout world_size: {n_gpus} is not divisible by "
            f"infer_world_size: {replica}",
            f"Set {R}.tensor_model_parallel_size={fits[-1]}",
            [f"{R}.tensor_model_parallel_size={fits[-1]}"],
        )
        return
    per_node = ctx.int("trainer.n_gpus_per_node")
    if per_node and replica > per_node and replica % per_node != 0:
        yield finding(
            Severity.ERROR,
            [f"{R}.tensor_model_parallel_size", "trainer.n_gpus_per_node"],
            f"A rollout replica of {replica} GPUs spans nodes of {per_node} GPUs unevenly; verl stops with: "
            f"world_size {replica} must be divisible by gpus_per_node {per_node}",
            f"Use a TP x DP x PP that is a multiple of {per_node} or at most {per_node}", rule="rollout.replica_nodes",
        )


@rule("rollout.context_length", Stage.RUNTIME)
def context_length(ctx: RuleContext):
    """A set max_model_len must hold a prompt and its response (vllm_async_server.py:593)."""
    max_len = ctx.int(f"{R}.max_model_len")
    prompt, response = ctx.int(f"{R}.prompt_length"), ctx.int(f"{R}.response_length")
    if max_len is None or prompt is None or response is None or prompt + response <= max_len:
        return
    yield finding(
        Severity.ERROR if prompt >= max_len else Severity.WARNING,
        [f"{R}.max_model_len", "data.max_prompt_length", "data.max_response_length"],
        f"rollout.max_model_len={max_len} is shorter than prompt + response = {prompt} + {response} = "
        f"{prompt + response}: "
        + ("a prompt can fill the whole context, and vLLM rejects it with: Prompt length leaves no room to generate"
           if prompt >= max_len else f"responses after long prompts are cut at {max_len} tokens, before "
           "data.max_response_length"),
        f"Set {R}.max_model_len={prompt + response} (or leave it null: the model's own limit)",
        [f"{R}.max_model_len={prompt + response}"],
    )


@rule("rollout.batched_tokens", Stage.ADVICE)
def batched_tokens(ctx: RuleContext):
    """Without chunked prefill, verl raises max_num_batched_tokens to max_model_len itself (more memory)."""
    if ctx.get(f"{R}.enable_chunked_prefill"):
        return
    tokens, max_len = ctx.int(f"{R}.max_num_batched_tokens"), ctx.int(f"{R}.max_model_len")
    if tokens is not None and max_len is not None and tokens < max_len:
        yield finding(
            Severity.INFO,
            [f"{R}.max_num_batched_tokens", f"{R}.max_model_len", f"{R}.enable_chunked_prefill"],
            f"With enable_chunked_prefill=false, max_num_batched_tokens ({tokens}) below max_model_len ({max_len}) "
            f"is raised to {max_len} by verl at startup; the vLLM memory estimate should use {max_len}",
            f"Set {R}.max_num_batched_tokens={max_len}, or enable chunked prefill",
            [f"{R}.max_num_batched_tokens={max_len}"],
        )


# vLLM's MaxLoRARanks, as verl falls back to it (workers/rollout/vllm_rollout/utils.py:83-102).
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


@rule("rollout.vllm_lora_rank", Stage.ADVICE)
def vllm_lora_rank(ctx: RuleContext):
    """validate_config -> get_vllm_max_lora_rank (vllm_rollout/utils.py:83-102): with vLLM, a LoRA rank above vLLM's
    largest is an error; one between its ranks is rounded up to the next (vLLM's max_lora_rank), which is fine."""
    lora = ctx.get("actor_rollout_ref.model.lora") or {}
    rank = lora.get("rank", 0) if isinstance(lora, dict) else 0
    if not isinstance(rank, int) or rank <= 0:
        rank = ctx.int("actor_rollout_ref.model.lora_rank") or 0
    if isinstance(lora, dict) and lora.get("merge", False):
        rank = 0
    if rank <= 0 or ctx.get(f"{R}.name") != "vllm":
        return
    largest = VLLM_LORA_RANKS[-1]
    if rank > largest:
        yield finding(
            Severity.ERROR, ["actor_rollout_ref.model.lora_rank"],
            f"lora_rank must be less than or equal to {largest}, but got {rank} (vLLM serves LoRA ranks up to {largest})",
            f"Use actor_rollout_ref.model.lora_rank={largest} or less", [f"actor_rollout_ref.model.lora_rank={largest}"],
        )
    elif rank not in VLLM_LORA_RANKS:
        served = next(r for r in VLLM_LORA_RANKS if r >= rank)
        yield finding(
            Severity.INFO, ["actor_rollout_ref.model.lora_rank"],
            f"LoRA rank {rank} is not one of vLLM's ranks ({', '.join(map(str, VLLM_LORA_RANKS))}); verl starts vLLM "
            f"with max_lora_rank={served}, which serves it, with KV/adapter memory sized for rank {served}",
            f"Use actor_rollout_ref.model.lora_rank={served} to train what vLLM reserves room for",
            [f"actor_rollout_ref.model.lora_rank={served}"], fix_auto=False,
        )


@rule("rollout.lora_fsdp1_one_gpu", Stage.RUNTIME)
def lora_fsdp1_one_gpu(ctx: RuleContext):
    """LoRA served by vLLM, the actor on FSDP1 (strategy=fsdp) and one GPU in all: verl 0.9.1's first weight sync
    hands vLLM 0.24 an empty adapter and the run hangs (wizard.core.verl.lora_fsdp1, which the advisor reads too)."""
    rank = hangs_on_first_sync(ctx)
    if rank is None:
        return
    yield finding(
        Severity.ERROR, ["actor_rollout_ref.actor.strategy", "actor_rollout_ref.model.lora_rank"],
        f"LoRA (rank {rank}) on FSDP1 with 1 GPU: the first weight sync sends vLLM an empty adapter (StopIteration in "
        "vLLM's _create_merged_loras_inplace), vLLM's worker dies and the run hangs without a step "
        "(verl 0.9.1 + vLLM 0.24, seen twice on an H200)",
        "Use FSDP2 for LoRA: actor_rollout_ref.actor.strategy=fsdp2 and actor_rollout_ref.ref.strategy=fsdp2",
        ["actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.ref.strategy=fsdp2"],
    )
