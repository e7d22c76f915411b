"""bfloat16 on GPUs that lack it: compute capability below 8.0 (V100, T4, the RTX 20xx), which the GPU catalogue marks
``bf16: false``. verl 0.9.1 runs every engine in bfloat16 unless told otherwise, and nothing in verl compares that to
the GPU: vLLM refuses it when its engine starts, FSDP casts to it, and flash-attn (verl's default attention) has no
kernel for those GPUs. The findings name the keys that move each engine to float16, or say to use an Ampere or
newer GPU. Silent without a GPU model (no compute capability to compare).
"""

from __future__ import annotations

from wizard.core.findings import Severity, Stage
from wizard.core.check.rules import rule
from wizard.core.check.rules.context import RuleContext, finding
from wizard.core.verl.keys import AF, ATTN_KEY, CF, R, REF, RM

BF16 = ("bf16", "bfloat16")  # verl/utils/torch_dtypes.py:22 BFLOAT_LIST (as config text)
FLASH = ("flash_attention_2", "flash_attention_3")
AMPERE = (8, 0)
NEWER = "use an Ampere or newer GPU (compute capability 8.0 or more: A10, A100, L4, L40S, RTX 30xx/40xx, H100...)"
NEWER_FIX = "U" + NEWER[1:]


def old_gpus(ctx: RuleContext) -> list[str]:
    """The distinct GPU models of the cluster below compute capability 8.0, as "Tesla T4 (7.5)"."""
    if ctx.cluster is None:
        return []
    seen: dict[str, None] = {}
    for node in ctx.cluster.nodes:
        for gpu in node.gpus:
            cc = gpu.compute_capability
            if cc is not None and tuple(cc) < AMPERE:
                seen[f"{gpu.name} ({cc[0]}.{cc[1]})"] = None
    return list(seen)


@rule("gpus.bf16_rollout", Stage.STARTUP)
def rollout_bf16(ctx: RuleContext):
    """verl hands ``rollout.dtype`` (default bfloat16, workers/config/rollout.py:184) to vLLM unchanged
    (workers/rollout/vllm_rollout/vllm_async_server.py:326 ``"dtype": self.config.dtype``), and vLLM's worker refuses
    bfloat16 below compute capability 8.0 (its _check_if_gpu_supports_dtype) after the weights are loaded. The
    reward model's vLLM servers read ``reward.reward_model.rollout.dtype`` the same way."""
    gpus = old_gpus(ctx)
    if not gpus:
        return
    engines = [(R, "rollout")]
    if ctx.get(f"{RM}.enable"):
        engines.append((f"{RM}.rollout", "reward model"))
    for section, who in engines:
        dtype = ctx.get(f"{section}.dtype")
        if ctx.get(f"{section}.name") != "vllm" or str(dtype).lower() not in BF16:
            continue
        yield finding(
            Severity.ERROR, [f"{section}.dtype"],
            f"The {who}'s vLLM runs in {section}.dtype={dtype}, but {', '.join(gpus)} has no bfloat16 (compute "
            "capability below 8.0); vLLM stops when its engine starts with: Bfloat16 is only supported on GPUs with "
            "compute capability of at least 8.0",
            f"Set {section}.dtype=float16, or: {NEWER}", [f"{section}.dtype=float16"], fix_auto=False)


@rule("gpus.bf16_training", Stage.STARTUP)
def training_bf16(ctx: RuleContext):
    """The FSDP engine trains in bfloat16 mixed precision unless ``fsdp_config.mixed_precision`` says otherwise
    (workers/engine/fsdp/transformer_impl.py:391-399: param_dtype "bf16" when the dict or its key is absent), and loads
    the model with ``override_config.attn_implementation``, default flash_attention_2 (workers/config/model.py:185),
    whose kernels need compute capability 8.0 ("FlashAttention only supports Ampere GPUs or newer." at the first
    forward). The critic is loaded with flash_attention_2 whatever its override_config says (verl/utils/model.py
    load_valuehead_model), so a critic cannot train on these GPUs at all. Other engines (Megatron, ...) are not
    judged here."""
    gpus = old_gpus(ctx)
    if not gpus:
        return
    engines = [(AF, "actor", ctx.get("actor_rollout_ref.actor.strategy"))]
    if ctx.need_ref:
        engines.append((f"{REF}.fsdp_config", "reference", ctx.get(f"{REF}.strategy")))
    if ctx.need_critic:
        engines.append((CF, "critic", ctx.get("critic.strategy")))
    problems, keys, fixes = [], [], []
    for section, who, strategy in engines:
        if strategy not in ("fsdp", "fsdp2"):
            continue
        mixed = ctx.get(f"{section}.mixed_precision")
        param = (mixed or {}).get("param_dtype", "bf16") if isinstance(mixed, dict) or mixed is None else None
        if str(param).lower() in BF16:
            why = "unset: verl's default" if not isinstance(mixed, dict) or "param_dtype" not in mixed else "set"
            problems.append(f"the {who} trains in bf16 ({section}.mixed_precision.param_dtype {why})")
            keys.append(f"{section}.mixed_precision")
            fixes.append(f"+{section}.mixed_precision={{param_dtype:fp16}}")
    attn = ctx.get(ATTN_KEY) or "flash_attention_2"
    if engines[0][2] in ("fsdp", "fsdp2") and attn in FLASH:
        problems.append(f"the actor's attention is {attn} ({ATTN_KEY}), which flash-attn runs only on Ampere or newer")
        keys.append(ATTN_KEY)
        fixes.append(f"{'' if ctx.get(ATTN_KEY) else '+'}{ATTN_KEY}=sdpa")
    critic = ctx.need_critic and ctx.get("critic.strategy") in ("fsdp", "fsdp2")
    if critic:
        problems.append("the critic always loads with flash_attention_2 (verl/utils/model.py load_valuehead_model), "
                        "so it cannot run on these GPUs")
        keys.append("critic.strategy")
    if not problems:
        return
    yield finding(Severity.ERROR, keys,
                  f"{', '.join(gpus)} has no bfloat16 and no flash-attn kernels (compute capability below 8.0), but "
                  f"{'; '.join(problems)}; the workers fail when they start or at the first forward",
                  NEWER_FIX if critic else f"{NEWER_FIX}; or train in float16: {' '.join(fixes)}",
                  [] if critic else fixes, fix_auto=False)


# verl/utils/torch_dtypes.py:20-22: what PrecisionType.to_dtype takes (as config values: Hydra reads 16 and 32 as ints);
# anything else raises "unexpected precision" when the worker builds the model (engine/fsdp/transformer_impl.py)
PRECISIONS = (16, "16", "fp16", "float16", 32, "32", "fp32", "float32", "bf16", "bfloat16")
MODEL_DTYPE_KEYS = (f"{AF}.model_dtype", f"{REF}.fsdp_config.model_dtype", f"{CF}.model_dtype")


@rule("precision.model_dtype", Stage.STARTUP)
def model_dtype(ctx: RuleContext):
    """An ``fsdp_config.model_dtype`` verl's PrecisionType does not know (it compares exactly: ``BF16``, ``half`` and
    ``float`` are refused) stops the worker as it builds the model, after Ray and the engines started."""
    for key in MODEL_DTYPE_KEYS:
        value = ctx.get(key)
        if value is None or isinstance(value, bool) or value in PRECISIONS:
            continue
        text = str(value).lower()
        spelled = {"half": "fp16", "float": "fp32", "bfloat": "bf16"}.get(text, text)
        fix = spelled if spelled in PRECISIONS else "bf16"
        yield finding(
            Severity.ERROR, [key],
            f"{key}={value!s} is not a precision verl knows (it takes exactly fp16, float16, fp32, float32, bf16 or "
            f"bfloat16, and 16 or 32): the worker stops as it builds the model with "
            f"RuntimeError: unexpected precision: {value!s}",
            f"Set {key}={fix}", [f"{key}={fix}"],
        )
