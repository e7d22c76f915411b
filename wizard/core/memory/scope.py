"""What the estimate does not model well enough for a verdict, said rather than guessed.

Modelled and measured (bench/bench_memory_real.py): FSDP and FSDP2 trainers, vLLM as rollout engine, dense and
MoE text models. Modelled from code, not measured: SGLang 0.5.12 as rollout engine (its own memory arithmetic, term
by term, :func:`wizard.core.memory.sglang.sglang_memory`) and Megatron, from megatron-core's formulas
(:mod:`wizard.core.memory.megatron`; its critic and LoRA get no verdict), and the vision towers of Qwen2-VL and
Qwen2.5-VL (:mod:`wizard.core.memory.vision`). Other vision-language models get the numbers, labelled a rough
guess, and no verdict.
"""

from __future__ import annotations

from wizard.core.memory.config import MemoryConfig
from wizard.core.memory.vision import has_tower
from wizard.core.models.facts import ModelFacts

VISION_TYPES = ("vl", "vision", "llava", "idefics", "paligemma", "pixtral", "mllama", "internvl", "minicpmv")


def unmodelled(cfg: MemoryConfig, actor: ModelFacts) -> str | None:
    """What the estimate counts but does not model well enough for a verdict (said, not guessed). A vision tower
    whose shape is read (Qwen2-VL, Qwen2.5-VL) is modelled: :mod:`wizard.core.memory.vision`."""
    arch, kind = (actor.architecture or ""), (actor.model_type or "").lower()
    if has_tower(actor):
        rollout = cfg.engines.get("rollout")
        if cfg.strategy == "megatron":
            return ("the vision tower under Megatron is not modelled (its parameters are counted with the model's, its "
                    "activations over the images are not)")
        if rollout is not None and rollout.name == "sglang":
            return ("SGLang's vision encoder is not modelled (its prefill runs the tower inside the memory left after "
                    "the KV pool): the SGLang numbers leave the tower's work out")
        return None
    if arch.endswith("ForConditionalGeneration") or any(v in kind for v in VISION_TYPES):
        tower = (f"the vision tower's {actor.vision_params / 1e9:.2f}B parameters are counted with the model's, but "
                 "its activations and the image tokens of a batch are not" if actor.vision_params else
                 "the vision tower, its activations and the image tokens are not counted; the numbers cover the "
                 "language model only")
        return f"vision-language models are not fully modelled ({arch or kind}): {tower}"
    return None
