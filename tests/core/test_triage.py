"""Triage on failure texts as verl 0.9.1, torch, vLLM, Ray and Hydra print them (reference §3.7, §3.8, §5.3;
issue threads in peers-and-pain-points.md §4)."""

import pytest

from wizard.core.findings import Severity, Stage
from wizard.core.run.triage import RULES, triage

ESC = "\x1b"
P = f"{ESC}[36m(TaskRunnerV1 pid=466){ESC}[0m "

# The tail of a real failing run on a CPU-only machine (verl 0.9.1, Ray 2.60), as launched by the wizard.
GPUS_SHORT = f"""\
{P}INFO:2026-12-02 14:07:12,343:train and validate dataloader initialized, train dataset size: 32, val dataset size: 8
{P}INFO:2026-12-02 14:07:12,343:Total training steps: 5
Error executing job with overrides: ['algorithm.adv_estimator=grpo', 'trainer.n_gpus_per_node=1']
Traceback (most recent call last):
  File ".../verl/trainer/main_ppo.py", line 93, in run_ppo
    ray.get(runner.run.remote(config))
ray.exceptions.RayTaskError(ValueError): {ESC}[36mray::TaskRunnerV1.run(){ESC}[39m (pid=466, ip=127.0.0.1, actor_id=ed8437ac81499d57b242693e01000000, repr=<main_ppo.TaskRunnerV1 object at 0x7fb5afaa5850>)
  File ".../verl/trainer/ppo/v1/trainer_base.py", line 231, in _setup
    self.resource_pool_manager.create_resource_pool()
  File ".../verl/single_controller/ray/base.py", line 240, in _check_resource_available
    raise ValueError(
ValueError: Total available GPUs 0 is less than total desired GPUs 1

Set the environment variable HYDRA_FULL_ERROR=1 for a complete stack trace.
"""


def one(text, exit_code=1):
    findings = triage(text.splitlines(), exit_code)
    assert len(findings) == 1, [f.rule for f in findings]
    return findings[0]


def test_too_few_gpus_names_the_numbers_and_a_fix_once():
    f = one(GPUS_SHORT)
    assert f.rule == "triage.gpus_short" and f.severity is Severity.ERROR and f.stage is Stage.RUNTIME
    assert "Total available GPUs 0 < 1" in f.message and "1 GPU(s)" in f.message
    assert "trainer.n_gpus_per_node" in f.fix and "verl-wizard detect" in f.fix


def test_too_few_gpus_with_some_gpus_offers_the_override():
    f = one("ValueError: Total available GPUs 4 is less than total desired GPUs 8")
    assert f.fix_overrides == ["trainer.n_gpus_per_node=4"] and "Ray sees only 4" in f.message


def test_cuda_oom_with_numbers_and_phase():
    log = """\
(WorkerDict pid=812) Traceback (most recent call last):
(WorkerDict pid=812)   File ".../verl/workers/engine_workers.py", line 301, in update_actor
(WorkerDict pid=812)     loss.backward()
(WorkerDict pid=812) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.23 GiB is free. Process 4242 has 77.86 GiB memory in use.
"""
    f = one(log)
    assert f.rule == "triage.cuda_oom"
    assert "2.00 GiB" in f.message and "79.11 GiB" in f.message and "1.23 GiB free" in f.message
    assert "actor update" in f.message and "ppo_micro_batch_size_per_gpu" in f.fix


def test_cuda_oom_in_rollout_points_at_vllm():
    log = """\
  File ".../verl/workers/rollout/vllm_rollout/vllm_async_server.py", line 612, in generate_sequences
torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB.
"""
    f = one(log)
    assert "rollout generation" in f.message and "512.00 MiB" in f.message
    assert "gpu_memory_utilization" in f.fix


def test_vllm_wake_up_oom():
    log = """\
  File ".../vllm/device_allocator/cumem.py", line 210, in wake_up
    inference_engine.wake_up()
RuntimeError: CUDA Error: out of memory at /workspace/csrc/cumem_allocator.cpp:62
"""
    f = one(log)
    assert f.rule == "triage.vllm_wake_oom" and "gpu_memory_utilization" in f.fix


@pytest.mark.parametrize("module,fix", [
    ("transfer_queue", "TransferQueue==0.1.11"), ("cachetools", "pip install cachetools"), ("vllm", "verl[vllm]"),
    ("somethingelse.sub", "verl-wizard doctor"),
])
def test_missing_modules(module, fix):
    f = one(f"{P}ModuleNotFoundError: No module named '{module}'")
    assert f.rule == "triage.missing_module" and module in f.message and fix in f.fix


def test_vllm_not_installed_text():
    f = one("PackageNotFoundError: To use vllm rollout, please ensure the 'vllm' package is properly installed.")
    assert f.rule == "triage.missing_module" and "verl[vllm]" in f.fix


def test_nccl_watchdog_timeout_with_the_numbers():
    f = one("[rank1]:[E1202 14:10:00.123] [PG 0 Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600017 "
            "milliseconds before timing out.")
    assert f.rule == "triage.nccl_timeout" and "ALLREDUCE waited 600 s" in f.message and "NCCL_SOCKET_IFNAME" in f.fix


def test_max_num_batched_tokens():
    f = one("ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (9216). This effectively limits "
            "the maximum sequence length to max_num_batched_tokens and makes vLLM reject longer sequences.")
    assert f.rule == "triage.max_num_batched_tokens" and "8192" in f.message and "9216" in f.message
    assert f.fix_overrides == ["actor_rollout_ref.rollout.max_num_batched_tokens=9216"]


def test_max_model_len_vs_position_embeddings():
    f = one("ValueError: max_model_len (40960) should be less than or equal to max_position_embeddings (32768)")
    assert f.rule == "triage.max_model_len" and "32768" in f.fix


@pytest.mark.parametrize("text,n,limit", [
    ("ValueError: Prompt length of 558 is longer than the maximum model length of 512.", "558", "512"),
    ("NotImplementedError: sequence_length=1081 is larger than max_length=1024", "1081", "1024"),
    ("ValueError: Prompt length (4096) leaves no room to generate within the model's maximum context length (4096); "
     "need at least 1 token of headroom.", "4096", "4096"),
])
def test_prompt_too_long(text, n, limit):
    f = one(text)
    assert f.rule == "triage.prompt_too_long" and f"{n} tokens" in f.message and f"limit of {limit}" in f.message
    assert f.fix_overrides == ["data.filter_overlong_prompts=true"]


def test_host_oom_from_rays_memory_monitor():
    f = one("ray.exceptions.OutOfMemoryError: Task was killed due to the node running low on memory. Memory on the node "
            "(IP: 10.0.0.5, ID: abc) where the task (actor ID: 1, name=WorkerDict.__init__, pid=4471) was running was "
            "120.52GB / 125.80GB (0.958), which exceeds the memory usage threshold of 0.95.")
    assert f.rule == "triage.host_oom" and "120.52GB of 125.80GB" in f.message and "0.95" in f.message


def test_actor_died_from_the_oom_killer_is_one_host_oom_finding():
    log = """\
ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.
\tclass_name: WorkerDict
Worker exit type: SYSTEM_ERROR Worker exit detail: Worker unexpectedly exits with a connection error code 2. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.
"""
    f = one(log)
    assert f.rule == "triage.host_oom" and "80 GB" in f.fix


def test_actor_died_without_a_reason():
    f = one("ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.")
    assert f.rule == "triage.actor_died"


def test_hydra_could_not_override():
    log = ("Could not override 'actor_rollout_ref.actor.fsdp_config.grad_offload'.\n"
           "To append to your config use +actor_rollout_ref.actor.fsdp_config.grad_offload=False\n"
           "Key 'grad_offload' is not in struct\n")
    f = one(log)
    assert f.rule == "triage.hydra_override" and f.stage is Stage.COMPOSE
    assert f.keys == ["actor_rollout_ref.actor.fsdp_config.grad_offload"]


def test_hydra_append_over_an_existing_key():
    f = one("Could not append to config. An item is already at 'trainer.n_gpus_per_node'.")
    assert f.rule == "triage.hydra_append" and "trainer.n_gpus_per_node=..." in f.fix


def test_missing_mandatory_value():
    f = one("omegaconf.errors.MissingMandatoryValue: Missing mandatory value: actor_rollout_ref.model.path")
    assert f.rule == "triage.missing_value" and f.keys == ["actor_rollout_ref.model.path"]


def test_dataset_smaller_than_a_batch():
    log = f"""\
{P}                    'train_batch_size': 64,
{P}INFO:2026-12-02 14:07:12,343:train and validate dataloader initialized, train dataset size: 16, val dataset size: 8
{P}  File ".../verl/trainer/ppo/v1/trainer_base.py", line 765, in fit
{P}    current_epoch = self.global_steps // self.steps_per_epoch
{P}ZeroDivisionError: integer division or modulo by zero
"""
    f = one(log)
    assert f.rule == "triage.dataset_smaller_than_batch"
    assert "16 training prompts" in f.message and "data.train_batch_size = 64" in f.message
    assert f.fix_overrides == ["data.train_batch_size=16"]


def test_unknown_failure_quotes_the_last_error():
    f = one("Traceback (most recent call last):\nKeyError: 'reward_model'\n", exit_code=1)
    assert f.rule == "triage.unknown" and "KeyError: 'reward_model'" in f.message and "exit code 1" in f.message


def test_a_clean_run_has_no_findings():
    assert triage(["(TaskRunnerV1 pid=1) step:1 - a:1", "'Final validation metrics: None'"], 0) == []


def test_every_rule_has_an_id_and_a_fix():
    ids = {r.id for r in RULES}
    assert all(i.startswith("triage.") for i in ids) and len(ids) >= 14


# Ray on a node whose loopback is down (issue 30: launch waited 10 minutes in silence): the driver's log repeats this.
GCS_DOWN = "\n".join(
    f"[2026-12-04 10:0{i}:00,000 W 4242 4242] gcs_rpc_client.h:151: Failed to connect to GCS at address "
    f"127.0.0.1:6379 within 5 seconds." for i in range(4))


def test_ray_that_cannot_reach_its_own_head_is_named_with_the_loopback():
    f = one(GCS_DOWN, exit_code=-15)  # the user stopped the waiting run
    assert f.rule == "triage.ray_gcs_unreachable" and f.severity is Severity.ERROR
    assert "127.0.0.1:6379" in f.message and "4 attempt(s)" in f.message and "loopback" in f.message
    assert "ip link set lo up" in f.fix
    other = one(GCS_DOWN.replace("127.0.0.1", "10.0.0.7"))
    assert "not reachable from this node" in other.message and "10.0.0.7:6379" in other.fix
