"""The configurations measured on the H200 (bench/data/verl_real/), in the order the campaign runs them.

    python3 bench/real/campaign_spec.py OUT.json [--side-by-side | --timing | --advised | --megatron |
        --sglang [--sglang-kwargs K=V,... | --triton-first]]
        [--skip-recorded] [--margin F]
        [--first NAME,NAME,...] [--steps N] [--expect S] [--preflight PYTHON] [--gpu H100-80GB] [--then OTHER.json]
        [--tag T]  (each name + "-T": a run again beside the record of its earlier try)

Writes campaign.py's input. ``--preflight`` first runs verl's own pre-flight (Hydra compose + validate_config,
``wizard/adapters/verl_env/probes/verl_preflight_probe.py``) on every verl run with PYTHON, where verl 0.9.1 is installed:
a config error found here costs nothing, on the device it costs a run.

Every run: one H200, random-weight Qwen2.5 models with their real shapes and vocabulary (make_models.py), prompts
of about 440 tokens and responses that run to max_response_length (random weights rarely draw the end token),
2 training steps (the second generation runs with AdamW's moments resident), SDPA attention (no flash-attn wheel
exists for the device; the log-probs take verl's torch path, logprobs_from_logits_v2).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = "/tmp/real"
PROMPT_LEN = 440  # the campaign's prompts, in tokens (make_models.py PROMPT_TOKENS): what the predictions assume
A, R, AF, M = ("actor_rollout_ref.actor", "actor_rollout_ref.rollout", "actor_rollout_ref.actor.fsdp_config",
               "actor_rollout_ref.model")
STEPS = 2
GPU = "H200-141GB"  # --gpu: the GPU catalogue id of the lent card the predictions are made for (H100-80GB when only
# an H100 is lent; each run's spec says which, and bench/ predicts it on that card)


def base(size: str, util: float, *, strategy: str = "fsdp2", eager: bool = False) -> list[str]:
    model = f"{ROOT}/q{size}"
    return [
        "algorithm.adv_estimator=grpo", "algorithm.use_kl_in_reward=false",
        f"{A}.use_kl_loss=true", f"{A}.kl_loss_coef=0.001", f"{A}.kl_loss_type=low_var_kl", f"{A}.entropy_coeff=0.0",
        f"{M}.path={model}", f"{M}.use_remove_padding=true", f"{M}.enable_gradient_checkpointing=true",
        f"data.train_files={ROOT}/data/train.parquet", f"data.val_files={ROOT}/data/test.parquet",
        "data.train_batch_size=16", "data.max_prompt_length=512", "data.max_response_length=512",
        "data.filter_overlong_prompts=true", "data.dataloader_num_workers=2",
        "trainer.nnodes=1", "trainer.n_gpus_per_node=1", "ray_kwargs.ray_init.num_cpus=16",
        f"{R}.name=vllm", f"{R}.n=4", f"{R}.tensor_model_parallel_size=1", f"{R}.gpu_memory_utilization={util}",
        f"{R}.log_prob_micro_batch_size_per_gpu=16", f"{R}.enforce_eager={str(eager).lower()}",
        f"{R}.agent.num_workers=2", "reward.num_workers=2",
        f"{A}.optim.lr=1e-6", f"{A}.ppo_mini_batch_size=8", f"{A}.ppo_micro_batch_size_per_gpu=8",
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16",
        f"{A}.strategy={strategy}", f"actor_rollout_ref.ref.strategy={strategy}",
        "trainer.project_name=mem", "trainer.experiment_name=mem", "trainer.logger=[console,file]",
        "trainer.total_epochs=1", f"trainer.total_training_steps={STEPS}", "trainer.save_freq=-1",
        "trainer.test_freq=-1", "trainer.val_before_train=false", "trainer.resume_mode=disable",
        f"+{M}.override_config.attn_implementation=sdpa", "+ray_kwargs.ray_init._node_ip_address=127.0.0.1",
    ]


def replace(words: list[str], *changes: str) -> list[str]:
    """``words`` with each change's key set to its value (appended when absent)."""
    out = list(words)
    for change in changes:
        key = change.split("=", 1)[0]
        hit = [i for i, w in enumerate(out) if w.split("=", 1)[0] == key]
        if hit:
            out[hit[0]] = change
        else:
            out.append(change)
    return out


def drop(words: list[str], *keys: str) -> list[str]:
    return [w for w in words if w.split("=", 1)[0] not in keys]


def verl(name: str, args: list[str], expect_s: int = 200, timeout_s: int = 420) -> dict:
    model = next(w.split("=", 1)[1] for w in args if w.startswith(f"{M}.path="))
    return {"name": name, "kind": "verl", "args": args, "steps": STEPS, "expect_s": expect_s, "timeout_s": timeout_s,
            "needs": f"{model}/DONE", "gpu": GPU}


# seconds from the campaign's start of a run to verl's first step (Ray, the model load, vLLM's compile and graphs,
# the first weight sync), read off the recorded runs: 1.5B 240-250 s on the H100, 7B about 360 s (its first sync at
# 250 s after the model load, 6 minutes from the start in TIMING.md); a critic adds its own load
STARTUP_S = {"0.5b": 200, "1.5b": 240, "3b": 260, "7b": 360, "14b": 440}


def budget(size: str, step_s: float | None, steps: int, *, critic: bool = False) -> tuple[int, int]:
    """(expect_s, timeout_s) for a run whose step is predicted at ``step_s``: the campaign skips a run with less
    device time left than expect_s, and cuts one at timeout_s (a run of 170-s steps is not cut at a fixed 580 s)."""
    if step_s is None:
        return 480, 580
    expect = STARTUP_S.get(size, 300) + (40 if critic else 0) + round(steps * step_s * 1.1)
    return expect, round(expect * 1.25) + 60


def _cluster():
    """One lent card: the H200 as bench_memory_real.py sees it (nvidia-smi's 143,771 MiB), or another catalogue GPU."""
    if GPU == "H200-141GB":
        from tests.helpers.real_memory import h200

        return h200(143771)
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.core.hardware.cluster import parse_cluster_spec

    return parse_cluster_spec(f"1x{GPU}", load_gpu_catalogue())


def runs() -> list[dict]:
    smoke = {"name": "launch-smoke-0.5b-fsdp1-u0.4", "kind": "launch", "steps": STEPS, "expect_s": 240, "timeout_s": 480,
             "needs": f"{ROOT}/q0.5b/DONE",
             "args": ["--preset", "grpo-1gpu-smoke", "--steps", str(STEPS), "--val", "none",
                      "--set", f"{M}.path={ROOT}/q0.5b", "--set", f"data.train_files={ROOT}/data/train.parquet",
                      "--set", f"data.val_files={ROOT}/data/test.parquet", "--set", f"{R}.agent.num_workers=2",
                      "--set", "reward.num_workers=2", "--set", "data.dataloader_num_workers=2"]}
    b15 = base("1.5b", 0.5)
    lora = replace(b15, f"{M}.lora_rank=64", f"{M}.lora_alpha=32", f"{M}.target_modules=all-linear",
                   f"{A}.optim.lr=1e-5")
    critic = replace(base("0.5b", 0.3, strategy="fsdp"), "algorithm.adv_estimator=gae", f"{A}.use_kl_loss=false",
                     f"critic.model.path={ROOT}/q0.5b", "critic.strategy=fsdp", "critic.optim.lr=1e-5",
                     "critic.ppo_micro_batch_size_per_gpu=8", "+critic.model.override_config.attn_implementation=sdpa")
    offload = replace(base("1.5b", 0.6, strategy="fsdp"), f"{AF}.param_offload=true", f"{AF}.optimizer_offload=true")
    legacy = replace(drop(base("1.5b", 0.5), f"{A}.ppo_micro_batch_size_per_gpu", f"{R}.log_prob_micro_batch_size_per_gpu",
                          "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"),
                     f"{AF}.offload_policy=true", f"{A}.ppo_micro_batch_size=8", f"{R}.log_prob_micro_batch_size=16",
                     "actor_rollout_ref.ref.log_prob_micro_batch_size=16")
    return [
        smoke,
        verl("grpo-1.5b-fsdp2-u0.5", b15),
        verl("grpo-1.5b-fsdp2-u0.95-startfail", base("1.5b", 0.95, eager=True), expect_s=120, timeout_s=300),
        verl("grpo-3b-fsdp2-u0.75-eager", base("3b", 0.75, eager=True), expect_s=240, timeout_s=480),
        verl("grpo-1.5b-lora64-fsdp2-u0.5", lora),
        verl("ppo-0.5b-critic-fsdp1-u0.3", critic),
        verl("grpo-1.5b-fsdp1-offload-u0.6", offload),
        verl("grpo-1.5b-nogc-micro32-u0.3", replace(base("1.5b", 0.3, eager=True), f"{M}.enable_gradient_checkpointing=false",
                                                  f"{A}.ppo_mini_batch_size=16", f"{A}.ppo_micro_batch_size_per_gpu=32"),
             expect_s=150, timeout_s=360),
        verl("grpo-3b-fsdp2-u0.75-optoffload-eager", replace(base("3b", 0.75, eager=True), f"{AF}.optimizer_offload=true"),
             expect_s=240, timeout_s=480),
        verl("grpo-1.5b-fsdp2-policy-legacy-micro", legacy),
        *vllm_runs(),
    ]


def vllm_runs() -> list[dict]:
    out = []
    for util, seqs, max_len, lora, eager in [(0.5, 256, 4096, 0, False), (0.8, 256, 4096, 0, False),
                                             (0.3, 64, 2048, 0, False), (0.5, 256, 4096, 64, False),
                                             (0.5, 256, 4096, 0, True), (0.3, 1024, 32768, 0, False)]:
        name = f"vllm-1.5b-u{util}-seqs{seqs}-len{max_len}" + (f"-lora{lora}" if lora else "") + ("-eager" if eager else "")
        out.append({"name": name, "kind": "vllm", "expect_s": 70, "timeout_s": 180, "needs": f"{ROOT}/q1.5b/DONE",
                    "args": {"model": f"{ROOT}/q1.5b", "util": util, "max_num_seqs": seqs, "max_model_len": max_len,
                             "lora_rank": lora, "enforce_eager": eager, "prompts": 64, "prompt_len": 440,
                             "max_tokens": 512}})
    return out


ENV = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1",
       "RAY_USAGE_STATS_ENABLED": "0", "RAY_DEDUP_LOGS": "0", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
       "VLLM_USE_FLASHINFER_SAMPLER": "0", "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1",
       # verl's runtime env sets these only where the launching shell has not: vLLM's memory lines in the log
       # (weights, activation peak, KV cache), and its torch.compile cache kept between runs (minutes saved)
       "VLLM_LOGGING_LEVEL": "INFO", "VLLM_DISABLE_COMPILE_CACHE": "0"}


def preflight(python: str, spec: list[dict]) -> bool:
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from wizard.adapters.verl_env.verl_preflight import run_preflight

    cases = [{"id": r["name"], "overrides": r["args"], "config_name": "ppo_trainer"} for r in spec if r["kind"] == "verl"]
    ok = True
    for res in run_preflight(cases, python=python):
        print(f"{'ok ' if res.get('ok') else 'BAD'} {res['id']}: {res.get('message') or ''}"[:300])
        ok = ok and bool(res.get("ok"))
    return ok


# Side by side (campaign.py --lanes N): small gpu_memory_utilization values so that several runs share the GPU,
# vLLM's KV cache pinned to the estimate's own KV term (beside other runs vLLM would size it from their memory too),
# the generations dumped (trainer.rollout_data_dir: real samples for the Run step's Samples tab), no Ray dashboard
# (one per run would fight for its port). A run reserves the estimate's peak + 12 % + 1 GiB.
MODELS = Path(__file__).resolve().parents[1] / "data" / "verl_real"
MODEL_JSON = {"0.5b": "launch-smoke-0.5b-fsdp1-u0.4", "1.5b": "grpo-1.5b-fsdp2-u0.5", "3b": "grpo-3b-fsdp2-u0.75-eager"}


def model_config(size: str) -> dict:
    """The config.json of the model of this size: a recorded run's, or, for a shape no run has used yet (the MoE),
    the one make_models.py writes."""
    if size in MODEL_JSON:
        return json.loads((MODELS / MODEL_JSON[size] / "model.json").read_text())
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from make_models import config

    return config(size).to_dict()


def _report(args: list[str], size: str):
    """The estimate's report for these overrides on one H200 without flash-attn (what bench_memory_real.py compares
    with), for the recorded model of this size."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from wizard.adapters.files.resources import load_moves, load_schema
    from wizard.core.memory.config import FLASH_ATTN
    from wizard.core.memory.estimate import estimate_memory
    from wizard.core.check.verdict import check_overrides
    from wizard.core.models.facts import facts_from_hf_config

    facts = facts_from_hf_config(model_config(size), name=size, source="config")
    models = {"actor": facts, "ref": facts, "critic": facts}
    cluster = _cluster()
    mp = check_overrides(load_schema(), args, moves=load_moves(), models=models, cluster=cluster).memory
    report, _ = estimate_memory({**mp.values, FLASH_ATTN: False}, models, cluster)
    return report


def estimate(args: list[str], size: str) -> tuple[int, int, int]:
    """(GPU peak bytes, rollout KV bytes, host bytes) of the estimate for these overrides on one H200."""
    report = _report(args, size)
    return report.groups[0].peak.total, report.kv["rollout"].kv_bytes, sum(h.total for h in report.host)


SIDE = ["+ray_kwargs.ray_init.include_dashboard=false", "+ray_kwargs.ray_init.object_store_memory=4000000000"]


MARGIN = 0.12  # --margin: a run reserves the estimate's peak times 1 + MARGIN, plus 1 GiB


def paired(name: str, args: list[str], size: str, expect_s: int = 330, timeout_s: int = 560) -> dict:
    args = [*args, *SIDE, f"trainer.rollout_data_dir=/tmp/out/{name}/rollout"]
    peak, kv, host = estimate(args, size)
    args.append(f"+{R}.engine_kwargs.vllm.kv_cache_memory_bytes={kv}")
    run = verl(name, args, expect_s=expect_s, timeout_s=timeout_s)
    run["reserve_mib"] = int((peak * (1 + MARGIN) + 2**30) / 2**20)
    # host RAM too: two offloading runs side by side ran the 126 GB host out (2026-12-04, Ray killed both)
    run["host_reserve_mib"] = int(host * 1.2 / 2**20)
    return run


def side_runs() -> list[dict]:
    def g(size, util, strategy="fsdp2", *changes, eager=True):
        return replace(base(size, util, strategy=strategy, eager=eager), *changes)

    lora = (f"{M}.lora_rank=32", f"{M}.lora_alpha=32", f"{M}.target_modules=all-linear", f"{A}.optim.lr=1e-5")
    lora64 = (f"{M}.lora_rank=64", f"{M}.lora_alpha=32", f"{M}.target_modules=all-linear", f"{A}.optim.lr=1e-5")
    offload = (f"{AF}.param_offload=true", f"{AF}.optimizer_offload=true")

    def critic(size, util, strategy):
        return g(size, util, strategy, "algorithm.adv_estimator=gae", f"{A}.use_kl_loss=false",
                 f"critic.model.path={ROOT}/q{size}", f"critic.strategy={strategy}", "critic.optim.lr=1e-5",
                 "critic.ppo_micro_batch_size_per_gpu=8", "+critic.model.override_config.attn_implementation=sdpa")

    legacy = replace(drop(g("1.5b", 0.1), f"{A}.ppo_micro_batch_size_per_gpu", f"{R}.log_prob_micro_batch_size_per_gpu",
                          "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu"),
                     f"{AF}.offload_policy=true", f"{A}.ppo_micro_batch_size=8", f"{R}.log_prob_micro_batch_size=16",
                     "actor_rollout_ref.ref.log_prob_micro_batch_size=16")
    plan = [
        ("grpo-0.5b-fsdp2-u0.06", g("0.5b", 0.06), "0.5b"),
        ("grpo-1.5b-lora64-fsdp2-u0.1", g("1.5b", 0.1, "fsdp2", *lora64), "1.5b"),
        ("ppo-0.5b-critic-fsdp1-u0.06", critic("0.5b", 0.06, "fsdp"), "0.5b"),
        ("grpo-0.5b-fsdp1-offload-u0.06", g("0.5b", 0.06, "fsdp", *offload), "0.5b"),
        ("grpo-1.5b-fsdp1-offload-u0.1", g("1.5b", 0.1, "fsdp", *offload), "1.5b"),
        ("grpo-0.5b-lora32-fsdp2-u0.06", g("0.5b", 0.06, "fsdp2", *lora), "0.5b"),
        ("grpo-0.5b-fsdp1-u0.06", g("0.5b", 0.06, "fsdp"), "0.5b"),
        ("grpo-3b-lora64-fsdp2-u0.1", g("3b", 0.1, "fsdp2", *lora64), "3b"),
        ("grpo-0.5b-fsdp2-offload-u0.06", g("0.5b", 0.06, "fsdp2", *offload), "0.5b"),
        ("grpo-1.5b-fsdp2-policy-legacy-micro-u0.1", legacy, "1.5b"),
        ("ppo-0.5b-critic-fsdp2-u0.06", critic("0.5b", 0.06, "fsdp2"), "0.5b"),
        ("grpo-0.5b-fsdp2-policy-u0.06", g("0.5b", 0.06, "fsdp2", f"{AF}.offload_policy=true"), "0.5b"),
        ("grpo-1.5b-nogc-micro4-u0.1", g("1.5b", 0.1, "fsdp2", f"{M}.enable_gradient_checkpointing=false",
                                          f"{A}.ppo_micro_batch_size_per_gpu=4"), "1.5b"),
        ("grpo-0.5b-lora32-fsdp1-u0.06", g("0.5b", 0.06, "fsdp", *lora), "0.5b"),
        ("grpo-0.5b-nokl-fsdp2-u0.06", g("0.5b", 0.06, "fsdp2", f"{A}.use_kl_loss=false"), "0.5b"),
        ("grpo-3b-fsdp2-optoffload-u0.1", g("3b", 0.1, "fsdp2", f"{AF}.optimizer_offload=true"), "3b"),
        ("ppo-1.5b-critic-fsdp2-u0.1", critic("1.5b", 0.1, "fsdp2"), "1.5b"),
        ("grpo-0.5b-nogc-micro8-u0.06", g("0.5b", 0.06, "fsdp2", f"{M}.enable_gradient_checkpointing=false"), "0.5b"),
        ("grpo-1.5b-fsdp1-u0.1", g("1.5b", 0.1, "fsdp"), "1.5b"),
        ("grpo-3b-fsdp1-offload-u0.1", g("3b", 0.1, "fsdp", *offload), "3b"),
        ("grpo-0.5b-fsdp2-u0.25-graphs", g("0.5b", 0.25, eager=False), "0.5b"),
        ("grpo-1.5b-fsdp2-offload-u0.1", g("1.5b", 0.1, "fsdp2", *offload), "1.5b"),
        ("grpo-3b-fsdp2-u0.1", g("3b", 0.1), "3b"),
        ("ppo-0.5b-critic-fsdp1-offload-u0.06", replace(critic("0.5b", 0.06, "fsdp"), *offload,
                                                         "critic.fsdp.param_offload=true",
                                                         "critic.fsdp.optimizer_offload=true"), "0.5b"),
    ]
    out = [paired(name, args, size) for name, args, size in plan]
    kv = next(w for w in out[0]["args"] if "kv_cache_memory_bytes=" in w).split("=", 1)[1]
    # the project's own smoke run (it dumps its generations itself): a real run folder for the Run step's tabs
    smoke = {"name": "launch-smoke-0.5b-u0.06-dumps", "kind": "launch", "steps": STEPS, "expect_s": 330,
             "timeout_s": 560, "needs": f"{ROOT}/q0.5b/DONE", "reserve_mib": 30 * 1024,
             "args": ["--preset", "grpo-1gpu-smoke", "--steps", str(STEPS), "--val", "none",
                      *(x for k in [f"{M}.path={ROOT}/q0.5b", f"data.train_files={ROOT}/data/train.parquet",
                                    f"data.val_files={ROOT}/data/test.parquet", f"{R}.agent.num_workers=2",
                                    "reward.num_workers=2", "data.dataloader_num_workers=2",
                                    f"{R}.gpu_memory_utilization=0.06", f"+{R}.engine_kwargs.vllm.kv_cache_memory_bytes={kv}",
                                    *SIDE] for x in ("--set", k))]}
    return [out[0], smoke, *out[1:]]


def timing_runs() -> list[dict]:
    """The step-time campaign (--timing): 15 configurations, each alone on its GPU (never --lanes), 3 steps (two
    steady ones), each with the step time predicted before it runs (``predicted_step_s``, ``predicted_phases_s``:
    the calibration never saw them, so bench/bench_step_time.py's error on them is the error on runs left out)."""
    def g(size, util, strategy="fsdp2", *changes, eager=False):
        return replace(base(size, util, strategy=strategy, eager=eager), *changes, "trainer.total_training_steps=3")

    lora = (f"{M}.lora_rank=32", f"{M}.lora_alpha=32", f"{M}.target_modules=all-linear", f"{A}.optim.lr=1e-5")
    offload = (f"{AF}.param_offload=true", f"{AF}.optimizer_offload=true")
    critic = ("algorithm.adv_estimator=gae", f"{A}.use_kl_loss=false", f"critic.model.path={ROOT}/q1.5b",
              "critic.strategy=fsdp2", "critic.optim.lr=1e-5", "critic.ppo_micro_batch_size_per_gpu=8",
              "+critic.model.override_config.attn_implementation=sdpa")
    plan = [
        ("time-grpo-0.5b-fsdp2-u0.4", g("0.5b", 0.4), "0.5b"),
        ("time-grpo-3b-fsdp2-u0.5", g("3b", 0.5), "3b"),
        ("time-grpo-1.5b-fsdp2-u0.5-eager", g("1.5b", 0.5, eager=True), "1.5b"),
        ("time-grpo-1.5b-fsdp2-u0.5-resp1024", g("1.5b", 0.5, "fsdp2", "data.max_response_length=1024"), "1.5b"),
        ("time-grpo-1.5b-fsdp2-u0.5-n8", g("1.5b", 0.5, "fsdp2", f"{R}.n=8"), "1.5b"),
        ("time-grpo-1.5b-fsdp2-u0.5-batch32", g("1.5b", 0.5, "fsdp2", "data.train_batch_size=32"), "1.5b"),
        ("time-grpo-1.5b-lora32-fsdp2-u0.5", g("1.5b", 0.5, "fsdp2", *lora), "1.5b"),
        ("time-grpo-1.5b-fsdp2-offload-u0.5", g("1.5b", 0.5, "fsdp2", *offload), "1.5b"),
        ("time-grpo-1.5b-fsdp2-policy-u0.5", g("1.5b", 0.5, "fsdp2", f"{AF}.offload_policy=true"), "1.5b"),
        ("time-grpo-1.5b-nogc-micro4-u0.5", g("1.5b", 0.5, "fsdp2", f"{M}.enable_gradient_checkpointing=false",
                                              f"{A}.ppo_micro_batch_size_per_gpu=4"), "1.5b"),
        ("time-ppo-1.5b-critic-fsdp2-u0.4", g("1.5b", 0.4, "fsdp2", *critic), "1.5b"),
        ("time-grpo-3b-fsdp1-u0.5", g("3b", 0.5, "fsdp"), "3b"),
        # the trainer's passes at longer packed micro-batches (16 x 2,500 tokens): without flash-attn, transformers'
        # SDPA path gets the packed sequences as one (T x T) block-causal mask, whose work grows with T squared
        ("time-grpo-1.5b-fsdp2-u0.5-resp2048", g("1.5b", 0.5, "fsdp2", "data.max_response_length=2048"), "1.5b"),
        # the agent-loop workers' per-sample term where it matters: verl's default 8 workers, 256 short samples (the
        # term was measured with 2 workers only: 55 ms x 32 samples a worker here, x 128 were it not divided)
        ("time-grpo-1.5b-fsdp2-u0.5-n8-batch32-resp64-workers8",
         g("1.5b", 0.5, "fsdp2", f"{R}.n=8", "data.train_batch_size=32", "data.max_response_length=64",
           f"{R}.agent.num_workers=8"), "1.5b"),
        # verl's fused head (use_fused_kernels, its torch backend): the log-probs from chunks of the hidden states,
        # not the row-by-row loop over the full logits that SDPA runs take (logprobs_from_logits_v2); beside the
        # resp1024 run, which differs by this key only
        ("time-grpo-1.5b-fsdp2-u0.5-resp1024-fused",
         g("1.5b", 0.5, "fsdp2", "data.max_response_length=1024", f"{M}.use_fused_kernels=true"), "1.5b"),
    ]
    out = []
    for name, args, size in plan:
        step, by_phase = predicted_step(args, size)
        run = verl(name, args, *budget(size, step, 3, critic=any(w.startswith("critic.") for w in args)))
        run["steps"] = 3
        run["predicted_step_s"], run["predicted_phases_s"] = step, by_phase
        out.append(run)
    return out


ADVISED = [  # (name, the question, size, what the user starts from)
    ("advised-grpo-7b-full-1gpu", "7B GRPO full fine-tuning on one GPU", "7b", []),
    ("advised-grpo-14b-1gpu", "a 14B model on one GPU (host RAM bounds the offload)", "14b", []),
    ("advised-ppo-1.5b-critic-4096", "1.5B PPO with a critic at 4,096 tokens", "1.5b",
     ["algorithm.adv_estimator=gae", f"{A}.use_kl_loss=false", f"critic.model.path={ROOT}/q1.5b",
      "critic.strategy=fsdp2", "critic.optim.lr=1e-5", "+critic.model.override_config.attn_implementation=sdpa",
      # what `check --fix` sets (batch.critic_micro): without it verl stops before Ray starts (2026-12-06, H200)
      "critic.ppo_micro_batch_size_per_gpu=4",
      "data.max_prompt_length=1024", "data.max_response_length=3072"]),
]
HUB = {"7b": "Qwen/Qwen2.5-7B-Instruct", "14b": "Qwen/Qwen2.5-14B-Instruct", "1.5b": "Qwen/Qwen2.5-1.5B-Instruct"}


def advised_runs() -> list[dict]:
    """The advisor's first choice for three questions a user brings, on one H200 (--advised): each run records the
    peak and step time predicted before it runs; the campaign checks it trains 2 steps at them (+-10 %)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.adapters.files.model_facts import load_catalogue
    from wizard.adapters.files.resources import load_moves, load_schema
    from wizard.core.advice import advise
    from wizard.core.check.verdict import check_overrides
    from wizard.core.hardware.cluster import parse_cluster_spec
    from wizard.core.memory.config import FLASH_ATTN
    from wizard.core.steptime import PROMPT_TOKENS

    cluster = parse_cluster_spec(f"1x{GPU}", load_gpu_catalogue())
    cluster.nodes[0].memory_bytes = 125 * 2**30  # the device's host RAM (free -g there): it bounds CPU offload
    out = []
    for name, question, size, extra in ADVISED:
        facts = load_catalogue().facts(HUB[size])
        models = {"actor": facts, "ref": facts, "critic": facts}
        args = replace(base(size, 0.5), *extra)
        critic = any(w.startswith("critic.model.path=") for w in args)
        mp = check_overrides(load_schema(), args, moves=load_moves(), models=models, cluster=cluster).memory
        # the campaign's prompts are 440 tokens (make_models.py), as a user's plan reads them from the train file:
        # without it the step is predicted at max_prompt_length (1,024 for the PPO question: +12 % a step)
        data = {FLASH_ATTN: False, PROMPT_TOKENS: PROMPT_LEN}
        # no smaller models (plan's list has them: a 14B on one H200 gets Qwen2.5-3B first, LoRA 32 third): each
        # question is about training its model, so its first choice is the first that still trains it
        advice = advise({**mp.values, **data}, models, cluster)
        # the first choice: the best change of tuning, else (nothing on this GPU fits) the first change of method
        best = advice.best or next((a for a in advice.alternatives if a.fits), None)
        if best is None and not advice.fits_now:
            print(f"{name}: nothing fits ({advice.statement})")
            continue
        if best is None:  # it fits as it is and nothing faster fits: the advice is the plan itself
            from wizard.core.steptime import predict_step

            values = {**mp.values, **data}
            step = predict_step(values, models, cluster, mp.report).seconds
            run = verl(name, args, *budget(size, step, STEPS, critic=critic))
            run.update(question=question, advised="as planned (it fits)", predicted_step_s=step and round(step, 1),
                       predicted_peak_gib=round(max(g.peak.total for g in mp.report.groups) / 2**30, 1))
        else:
            run = verl(name, replace(args, *best.overrides), *budget(size, best.step_seconds, STEPS, critic=critic))
            run.update(question=question, advised=best.text, predicted_peak_gib=round(best.peak_bytes / 2**30, 1),
                       predicted_step_s=best.step_seconds)
        errors = [f for f in check_overrides(load_schema(), run["args"], moves=load_moves(), models=models,
                                             cluster=cluster, advise=False).findings
                  if f.severity.name == "ERROR" and f.rule != "env.flash_attn_critic"]
        if errors:  # verl would refuse it: no device time for a run that cannot start
            print(f"{name}: not run, {len(errors)} error(s): {errors[0].rule}: {errors[0].message}")
            continue
        out.append(run)
    return out


def mask_test_runs(advised: list[dict]) -> list[dict]:
    """The advisor's PPO choice again with log-prob micro-batches of 8 (--advised --mask-test): the test of the SDPA mask
    term. Its run with 16 (the fused head, 55,000 packed tokens) held 17 GiB of mask in its old log-prob pass; at 8
    the term says a quarter of it. The phases' peaks and the step are predicted here, before the run."""
    ppo = next((r for r in advised if r["name"].startswith("advised-ppo")), None)
    if ppo is None or not any(a == f"{M}.use_fused_kernels=True" for a in ppo["args"]):
        return []  # the test is of the fused head's log-prob pass, where nothing hides the mask
    args = replace(ppo["args"], f"{R}.log_prob_micro_batch_size_per_gpu=8")
    step, by_phase = predicted_step(args, "1.5b")
    phases, _ = predicted_phases(args, "1.5b")
    run = verl("mask-ppo-1.5b-critic-4096-fused-lp8", args, *budget("1.5b", step, STEPS, critic=True))
    run.update(predicted_step_s=step, predicted_phases_s=by_phase, predicted_phases_gib=phases,
               predicted_peak_gib=round(max(phases.values()), 1), question="the SDPA mask term: the PPO choice at log-prob "
               "micro-batches of 8")
    return [run]


def predicted_step(args: list[str], size: str) -> tuple[float | None, dict]:
    """The step time plan predicts for these overrides on one H200, before the run (responses at the maximum: the
    random-weight models run to max_response_length)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from wizard.adapters.files.gpu_catalogue import load_gpu_catalogue
    from wizard.adapters.files.resources import load_moves, load_schema
    from wizard.core.check.verdict import check_overrides
    from wizard.core.hardware.cluster import parse_cluster_spec
    from wizard.core.memory.config import FLASH_ATTN
    from wizard.core.models.facts import facts_from_hf_config
    from wizard.core.steptime import PROMPT_TOKENS, predict_step

    facts = facts_from_hf_config(model_config(size), name=size, source="config")
    models = {"actor": facts, "ref": facts, "critic": facts}
    cluster = parse_cluster_spec(f"1x{GPU}", load_gpu_catalogue())
    mp = check_overrides(load_schema(), args, moves=load_moves(), models=models, cluster=cluster).memory
    st = predict_step({**mp.values, FLASH_ATTN: False, PROMPT_TOKENS: PROMPT_LEN}, models, cluster, mp.report)
    return (None if st.seconds is None else round(st.seconds, 1)), st.by_name()


# SGLang 0.5.12 as the rollout engine (--sglang; SGLANG.md): each run alone on the GPU, 2 steps, verl's defaults for
# SGLang (attention_backend flashinfer, JIT-compiled at the first start: no flashinfer-jit-cache travels), varying
# what the estimate's SGLang terms depend on: mem_fraction_static (gpu_memory_utilization) x the memory free when the
# engine starts, CUDA graphs (enforce_eager=true only turns the decode graphs off; the piecewise prefill graphs stay
# unless disable_piecewise_cuda_graph), max_total_tokens (caps the KV pool) and chunked_prefill_size (the prefill
# activations and the piecewise graphs' sizes). Rollout TP 1 (one GPU).
SGL = f"+{R}.engine_kwargs.sglang"
SGLANG_PLAN = [  # (name, size, util, eager, engine_kwargs.sglang); 1.5B and 3B share head_dim 128, so flashinfer's
    # JIT-compiled kernels of the first run serve the next three (0.5B's head_dim 64 would compile its own)
    ("sgl-grpo-1.5b-fsdp2-u0.5-graphs", "1.5b", 0.5, False, {}),
    ("sgl-grpo-1.5b-fsdp2-u0.6-eager", "1.5b", 0.6, True, {}),
    ("sgl-grpo-1.5b-fsdp2-u0.4-maxtok64k-chunk2k", "1.5b", 0.4, False,
     {"max_total_tokens": 65536, "chunked_prefill_size": 2048}),
    ("sgl-grpo-3b-fsdp2-u{util}-graphs", "3b", {"H200-141GB": 0.7, "H100-80GB": 0.55}, False, {}),  # 0.7: 83.8 GiB
    # of an H100's 79.2
    # a fifth where time is left: no piecewise graphs, decode graphs up to 64 requests
    ("sgl-grpo-1.5b-fsdp2-u0.5-nopiecewise-bs64", "1.5b", 0.5, False,
     {"disable_piecewise_cuda_graph": True, "cuda_graph_max_bs": 64}),
]
# SGLang's own memory lines (model_runner.py; sglang-carry.md): verl starts the engine with log_level="error", which
# hides them; engine_kwargs.sglang.log_level=info (passed after verl's own arguments, so it wins) brings them back
SGLANG_LINES = ["Load weight end", "KV Cache is allocated. #tokens:", "Capture cuda graph end",
                "Capture piecewise CUDA graph end", "max_total_num_tokens=", "Not enough memory",
                "Memory usage increased after sleeping"]


def sglang_args(size: str, util: float, eager: bool, kwargs: dict) -> list[str]:
    args = replace(base(size, util, eager=eager), f"{R}.name=sglang")
    return [*args, f"{SGL}.log_level=info", *(f"{SGL}.{k}={str(v).lower() if isinstance(v, bool) else v}" for k, v in kwargs.items())]


def predicted_phases(args: list[str], size: str) -> tuple[dict[str, float], dict[str, float]]:
    """The estimate's per-phase GPU peaks (GiB, one H200, no flash-attn) and its generation-phase SGLang terms."""
    report = _report(args, size)
    group = report.groups[0]
    phases = {p.name: round(p.total / 2**30, 2) for p in group.phases}
    gen = next((p for p in group.phases if p.name == "generation"), group.peak)
    terms = {t.key: round(t.bytes / 2**30, 2) for t in gen.terms if "rollout" in t.key}
    return phases, terms


def sglang_runs(extra: dict | None = None) -> list[dict]:
    """``extra``: engine_kwargs.sglang for every run (--sglang-kwargs), e.g. attention_backend=triton,
    sampling_backend=pytorch where flashinfer's JIT compilation takes too long on the device."""
    out = []
    for name, size, util, eager, kwargs in SGLANG_PLAN:
        if isinstance(util, dict):  # a larger model's fraction, per card
            util = util[GPU]
            name = name.format(util=util)
        args = sglang_args(size, util, eager, {**kwargs, **(extra or {})})
        # the first run JIT-compiles flashinfer's kernels (nvcc, minutes); later runs find them in ~/.cache/flashinfer
        # a run on another attention backend is another record (sgl-...-triton), kept beside verl's flashinfer one
        backend = (extra or {}).get("attention_backend")
        name = f"{name}-{backend}" if backend and backend != "flashinfer" else name
        run = verl(name, args, expect_s=420 if not out else 300, timeout_s=590 if not out else 480)
        phases, terms = predicted_phases(args, size)
        # the step time too: SGLang at vLLM's measured rates (the plan says so), checked by bench_step_time.py
        step, by_phase = predicted_step(args, size)
        run.update(predicted_peak_gib=max(phases.values()), predicted_phases_gib=phases,
                   predicted_sglang_terms_gib=terms, look_for=SGLANG_LINES, predicted_step_s=step,
                   predicted_phases_s=by_phase)
        out.append(run)
    return out


# verl 0.9.1's Megatron engine (--megatron; install_megatron.sh, megatron-carry.md): TP = PP = 1 on one GPU, the
# vanilla-mbridge path (megatron-bridge 0.5.2, which verl pins for its default path, is not on PyPI), TransformerEngine's
# fused attention (its flash backend needs the flash_attn package, which the device lacks). Each run alone, 2 steps,
# its memory phases and step time predicted before it runs (the estimate's Megatron terms have never met a run).
MEGATRON = ("model_engine=megatron", f"{A}.megatron.vanilla_mbridge=True",
            f"{A}.megatron.override_transformer_config.attention_backend=fused")
MEGATRON_PLAN = [  # (name, size, util, changes)
    ("meg-grpo-0.5b-tp1-u0.4", "0.5b", 0.4, ()),
    ("meg-grpo-1.5b-tp1-u0.5", "1.5b", 0.5, ()),
    ("meg-grpo-1.5b-tp1-u0.5-paramoffload", "1.5b", 0.5,
     (f"{A}.megatron.param_offload=True", f"{A}.megatron.optimizer_offload=True")),
    # a small Qwen3-MoE (make_models.py's moe1b: 32 experts, 4 a token; 1.2B params, 0.4B active), EP = 1
    ("meg-grpo-moe1b-ep1-u0.5", "moe1b", 0.5, ()),
]


def megatron_args(size: str, util: float, *changes: str) -> list[str]:
    args = drop(base(size, util), f"{A}.strategy", "actor_rollout_ref.ref.strategy")
    return replace(args, *MEGATRON, *changes)


def megatron_runs() -> list[dict]:
    out = []
    for name, size, util, changes in MEGATRON_PLAN:
        args = megatron_args(size, util, *changes)
        # the first run loads TransformerEngine and megatron-core for the first time: more time
        run = verl(name, args, expect_s=420 if not out else 330, timeout_s=590 if not out else 540)
        phases, _ = predicted_phases(args, size)
        step, by_phase = predicted_step(args, size)
        run.update(predicted_peak_gib=max(phases.values()), predicted_phases_gib=phases, predicted_step_s=step,
                   predicted_phases_s=by_phase)
        out.append(run)
    return out


def _kwargs(argv: list[str]) -> dict:
    if "--sglang-kwargs" not in argv:
        return {}
    pairs = [kv.split("=", 1) for kv in argv[argv.index("--sglang-kwargs") + 1].split(",") if kv]
    return {k: v for k, v in pairs}


def main(argv: list[str]) -> int:
    global MARGIN, GPU
    if len(argv) < 2 or argv[1].startswith("-"):  # the output file comes first: never write one named "--help"
        print("\n\n".join(__doc__.strip().split("\n\n")[:2]))
        return 0 if argv[1:2] in (["-h"], ["--help"]) else 2
    if "--gpu" in argv:
        GPU = argv[argv.index("--gpu") + 1]
    if "--margin" in argv:  # the estimate was within a few % of every run so far: a smaller margin packs more runs
        MARGIN = float(argv[argv.index("--margin") + 1])
    spec = (side_runs() if "--side-by-side" in argv else timing_runs() if "--timing" in argv else
            advised_runs() if "--advised" in argv else sglang_runs(_kwargs(argv)) if "--sglang" in argv else
            megatron_runs() if "--megatron" in argv else runs())
    if "--mask-test" in argv:  # with --advised: the PPO choice at log-prob micro-batches of 8 after them
        spec += mask_test_runs(spec)
    if "--sglang" in argv and "--triton-first" in argv:  # flashinfer's JIT (nvcc, minutes) only after four runs that
        # need none: the four on triton attention and torch sampling, then verl's default (flashinfer) once, then
        # the fifth on triton
        triton = sglang_runs({"attention_backend": "triton", "sampling_backend": "pytorch"})
        spec = [*triton[:4], spec[0], *triton[4:]]
    if GPU != "H200-141GB":  # a run on another card is another record (time-...-h100), kept beside the H200's
        tag = "-" + GPU.split("-")[0].lower()
        spec = [{**run, "name": run["name"] + tag} for run in spec]
    if "--tag" in argv:  # a run again under a new name (the record of its earlier try stays): --tag 2 -> NAME-2
        tag = argv[argv.index("--tag") + 1]
        spec = [{**run, "name": f"{run['name']}-{tag}"} for run in spec]
    if "--then" in argv:  # another campaign's runs after these (go.sh with SGL=1 runs SGLang and vLLM runs alike)
        more = json.loads(Path(argv[argv.index("--then") + 1]).read_text())["runs"]
        spec += [run for run in more if run["name"] not in {r["name"] for r in spec}]
    if "--skip-recorded" in argv:  # a later campaign measures only what bench/data/verl_real does not hold yet
        spec = [run for run in spec if not (MODELS / run["name"]).is_dir()]
    if "--first" in argv:  # these names first, in this order (the rest keep theirs)
        first = argv[argv.index("--first") + 1].split(",")
        spec.sort(key=lambda run: first.index(run["name"]) if run["name"] in first else len(first))
    if "--steps" in argv:  # fewer steps where device time is short (the last is the steady one from step 2 on)
        n = int(argv[argv.index("--steps") + 1])
        spec = [{**run, "steps": n, "args": replace(run["args"], f"trainer.total_training_steps={n}")}
                if run["kind"] == "verl" else run for run in spec]
    if "--expect" in argv:  # seconds a run takes beside the others (a run with less time left is skipped)
        expect = int(argv[argv.index("--expect") + 1])
        spec = [{**run, "expect_s": expect, "timeout_s": max(run["timeout_s"], expect + 200)} for run in spec]
    if "--preflight" in argv and not preflight(argv[argv.index("--preflight") + 1], spec):
        return 1
    Path(argv[1]).write_text(json.dumps({"env": ENV, "runs": spec}, indent=1))
    print(f"{len(spec)} runs written to {argv[1]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
