"""vLLM alone, started the way verl 0.9.1 starts its rollout server, through one sleep/wake cycle.

    python3 vllm_probe.py '{"model": "/tmp/real/q0.5b", "util": 0.5, "max_num_seqs": 256, "max_model_len": 4096,
                            "enforce_eager": false, "lora_rank": 0, "prompts": 64, "prompt_len": 440,
                            "max_tokens": 512}'

verl's engine arguments (vllm_async_server.py): bf16, dummy weights (the trainer syncs them), chunked prefill with
max_num_batched_tokens, prefix caching, sleep mode, cudagraph_mode FULL_AND_PIECEWISE unless eager; with LoRA
enable_lora, max_loras 1 and sleep level 1, else level 2. Phase marks go to $VERL_PHASE_LOG (the campaign's NVML
sampler cuts the samples with them): init, generate, sleep, wake. The last line printed is a JSON summary.
"""

from __future__ import annotations

import json
import os
import sys
import time


def mark(kind: str, name: str, **extra) -> None:
    path = os.environ.get("VERL_PHASE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps({"t": time.time(), "pid": os.getpid(), "kind": kind, "name": name, **extra}) + "\n")


def engine_args(spec: dict) -> dict:
    args = dict(model=spec["model"], dtype="bfloat16", load_format="dummy", seed=0,
                gpu_memory_utilization=spec["util"], max_num_seqs=spec.get("max_num_seqs", 256),
                max_model_len=spec.get("max_model_len", 4096),
                max_num_batched_tokens=spec.get("max_num_batched_tokens", 8192), enable_chunked_prefill=True,
                enable_prefix_caching=True, enable_sleep_mode=True, tensor_parallel_size=1,
                enforce_eager=spec.get("enforce_eager", False))
    if not args["enforce_eager"]:
        args["compilation_config"] = {"cudagraph_mode": "FULL_AND_PIECEWISE"}
    if spec.get("lora_rank"):
        args.update(enable_lora=True, max_loras=1, max_lora_rank=spec["lora_rank"])
    return args


def main(argv: list[str]) -> int:
    spec = json.loads(argv[1])
    from vllm import LLM, SamplingParams

    out: dict = {"spec": spec}
    mark("start", "init")
    llm = LLM(**engine_args(spec))
    mark("end", "init")
    try:
        cc = llm.llm_engine.vllm_config.cache_config
        out["num_gpu_blocks"], out["block_size"] = cc.num_gpu_blocks, cc.block_size
    except Exception as exc:  # the attribute moved: the log still has vLLM's own line
        out["cache_config_error"] = repr(exc)
    prompts = [{"prompt_token_ids": [(7 * i + j) % 300 + 3 for j in range(spec.get("prompt_len", 440))]}
               for i in range(spec.get("prompts", 64))]
    params = SamplingParams(max_tokens=spec.get("max_tokens", 512), ignore_eos=True, temperature=1.0)
    mark("start", "generate")
    res = llm.generate(prompts, params, use_tqdm=False)
    mark("end", "generate")
    out["generated_tokens"] = sum(len(r.outputs[0].token_ids) for r in res)
    level = 1 if spec.get("lora_rank") else 2
    mark("start", "sleep")
    llm.sleep(level=level)
    time.sleep(2.0)
    mark("end", "sleep")
    mark("start", "wake")
    llm.wake_up()
    time.sleep(2.0)
    mark("end", "wake")
    out["sleep_level"] = level
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
