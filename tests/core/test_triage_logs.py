"""Triage names the root cause of real failed verl runs (tests/data/run_logs/README.md), not their last line."""

import gzip

import pytest

from tests.conftest import ROOT
from wizard.core.findings import Severity
from wizard.core.run.logparse import split_line
from wizard.core.run.rootcause import analyse
from wizard.core.run.triage import triage

LOGS = ROOT / "tests" / "data" / "run_logs"


def log(name: str) -> list[str]:
    with gzip.open(LOGS / f"{name}.run.log.gz", "rt", encoding="utf-8") as fh:
        return fh.read().splitlines()


def test_every_trajectory_failing_in_the_agent_loop_names_the_tokenizer_error_not_the_replay_buffer():
    findings = triage(log("failed-agent-loop"), exit_code=1)
    root = findings[0]
    assert root.rule == "triage.agent_loop_tokenizer" and root.severity is Severity.ERROR
    assert "ValueError: Expected Qwen newline to tokenize to one token, got []" in root.message
    assert "64 times in 8 processes (AgentLoopWorkerTQ)" in root.message
    assert "It explains the error the run stopped with: RuntimeError: Sync replay buffer" in root.message
    assert "encode(chr(10)" in root.fix and "/tmp/tiny" in root.fix
    assert not any(f.rule == "triage.unknown" for f in findings)


@pytest.mark.parametrize("name,why,first", [
    ("hub-offline", "HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE is set", "LocalEntryNotFoundError: Cannot find the requested files"),
    ("no-network", "this machine cannot reach huggingface.co", "ConnectError: [Errno -3] Temporary failure in name resolution"),
])
def test_a_run_without_the_hub_names_the_hub_not_the_instantiation_error(name, why, first):
    findings = triage(log(name), exit_code=1)
    root = findings[0]
    assert root.rule == "triage.hub_unreachable" and root.severity is Severity.ERROR
    assert "could not fetch the model Qwen/Qwen2.5-0.5B-Instruct from the Hugging Face hub" in root.message
    assert why in root.message and f"The first error: {first}" in root.message
    assert "It explains the error the run stopped with: OSError: We couldn't connect to 'https://huggingface.co'" in root.message
    assert "hf download Qwen/Qwen2.5-0.5B-Instruct --local-dir" in root.fix
    assert root.keys == ["actor_rollout_ref.model.path"]


def test_a_run_that_finished_has_no_root_cause():
    assert [f for f in triage(log("h200-grpo-ok"), exit_code=0) if f.severity is Severity.ERROR] == []


def processes_and_texts(lines):
    parts = [split_line(raw) for raw in lines]
    return [(f"{p.actor} pid={p.pid}" if p.actor else None, p.text) for p in parts]


def test_exceptions_are_clustered_across_processes_and_counted():
    a = analyse(processes_and_texts(log("failed-agent-loop")))
    qwen = next(c for c in a.clusters if "Qwen newline" in c.message)
    assert qwen.count == 64 and len(qwen.processes) == 8
    assert {p.split(" pid=")[0] for p in qwen.processes} == {"AgentLoopWorkerTQ"}
    root, final = a.root()
    assert root is qwen and "no materializable trajectories" in final.message and final.fallout


def test_printed_chains_lead_back_to_the_first_cause():
    a = analyse(processes_and_texts(log("no-network")))
    root, final = a.root()
    assert root.type == "ConnectError" and final.type == "OSError"
    assert [c.type for c in a.ancestors(final)] == ["ConnectError", "LocalEntryNotFoundError", "OSError"]


P1, P2 = "\x1b[36m(WorkerDict pid=11)\x1b[0m ", "\x1b[36m(WorkerDict pid=12)\x1b[0m "
OOM_THEN_TIMEOUT = [
    f"{P1}Traceback (most recent call last):",
    f"{P1}  File \".../verl/workers/engine_workers.py\", line 301, in update_actor",
    f"{P1}torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.11 GiB of which 1.23 GiB is free.",
    f"{P2}[rank1]:[E1202 14:10:00.123] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=42, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600017 milliseconds before timing out.",
    f"{P2}torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1.",
    "ray.exceptions.ActorDiedError: The actor died unexpectedly before finishing this task.",
]


def test_one_rank_out_of_memory_explains_the_others_timing_out():
    findings = triage(OOM_THEN_TIMEOUT, exit_code=1)
    assert findings[0].rule == "triage.cuda_oom" and findings[0].severity is Severity.ERROR
    assert "The first error of the run" in findings[0].message and "WorkerDict" in findings[0].message
    later = {f.rule: f for f in findings[1:]}
    assert later["triage.nccl_timeout"].severity is Severity.WARNING
    assert "likely from, the first error: OutOfMemoryError" in later["triage.nccl_timeout"].message


def test_an_unknown_root_is_quoted_with_where_and_how_often():
    lines = [f"{P1}Traceback (most recent call last):", f"{P1}  File \"x.py\", line 1, in f",
             f"{P1}KeyError: 'reward_model'", f"{P2}Traceback (most recent call last):", f"{P2}  File \"x.py\", line 1, in f",
             f"{P2}KeyError: 'reward_model'", "ray.exceptions.ActorDiedError: The actor died unexpectedly."]
    f = triage(lines, exit_code=1)[0]
    assert f.rule == "triage.unknown" and "KeyError: 'reward_model' (2 times in 2 processes (WorkerDict)" in f.message
    assert "It explains the error the run stopped with: ActorDiedError" in f.message


def test_vllm_refusing_to_start_names_the_free_memory_and_a_utilization_that_fits():
    root = triage(log("vllm-free-memory-at-start"), exit_code=1)[0]
    assert root.rule == "triage.vllm_free_memory_at_start"
    assert "132.13 of 139.8 GiB were free on cuda:0" in root.message and "asks for 132.81 GiB" in root.message
    assert "below 0.94, which only gets vLLM started" in root.fix and root.fix_overrides == []  # a bound, not a value
    assert "The first error of the run: RuntimeError: Engine core initialization failed" in root.message


def test_a_known_line_after_an_unknown_first_error_does_not_replace_it():
    lines = [f"{P1}Traceback (most recent call last):", f"{P1}  File \"x.py\", line 1, in f",
             f"{P1}KeyError: 'reward_model'",
             f"{P2}[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, "
             "NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600002 milliseconds before timing out.",
             "ray.exceptions.ActorDiedError: The actor died unexpectedly."]
    findings = triage(lines, exit_code=1)
    assert findings[0].rule == "triage.unknown" and "KeyError: 'reward_model'" in findings[0].message
    assert "triage.nccl_timeout" in [f.rule for f in findings[1:]]  # known, and after the first error: a consequence


def test_vllm_sleep_beside_another_process_says_the_gpu_was_shared():
    root = triage(log("vllm-sleep-beside-another-run"), exit_code=1)[0]
    assert root.rule == "triage.vllm_sleep_shared_gpu"
    assert "another process allocated memory on the same GPU" in root.message
    assert "verl-wizard detect" in root.fix


def test_a_bare_worker_assertion_on_an_unset_per_gpu_micro_batch_names_the_key():
    root = triage(log("legacy-micro-batch"), exit_code=1)[0]
    assert root.rule == "triage.micro_batch_unset"
    assert root.keys[0] == "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu"
    assert "drop actor_rollout_ref.rollout.log_prob_micro_batch_size" in root.fix


def test_a_lora_run_whose_adapter_reached_vllm_empty_names_fsdp2_as_the_way_out():
    # killed after 564 s without a step (the run hangs once vLLM's worker died): triage still names the cause
    root = triage(log("lora-fsdp1-one-gpu"), exit_code=-15)[0]
    assert root.rule == "triage.lora_adapter_empty"
    assert "no LoRA weights" in root.message and "FSDP1" in root.message
    assert "actor_rollout_ref.actor.strategy=fsdp2" in root.fix


def test_a_lora_7b_whose_base_weight_was_over_the_sync_buffer_names_the_buffer_and_its_fix():
    # the advisor's first choice for 7B GRPO on one H200 (LoRA 32), before it raised the buffer: vLLM's worker died
    # at the first sync and the run hung until the campaign stopped it at 584 s (SIGTERM)
    root = triage(log("lora-base-sync-bucket"), exit_code=-15)[0]
    assert root.rule == "triage.lora_base_sync_bucket"
    assert "2,079 MiB" in root.message and "rebuild_ipc" in root.message
    assert "update_weights_bucket_megabytes" in root.fix and "load_format=safetensors" in root.fix


def test_an_error_vllm_logs_from_its_worker_is_an_error_of_the_run():
    """vLLM's engine processes print tracebacks through its logger ("(Worker pid=N) ERROR <date> [file:line] ...")."""
    lines = [split_line(x) for x in log("lora-base-sync-bucket")]
    analysis = analyse([(f"{p.actor} pid={p.pid}" if p.actor else None, p.text) for p in lines])
    assert "IndexError: list assignment index out of range" in {c.text for c in analysis.clusters}


def test_a_lora_run_ray_killed_for_host_memory_at_its_first_sync_names_the_processes_and_the_load_format():
    """Ray 2.60 words it "N worker(s) were killed due to the node running low on memory. Memory on the node ... was
    120.86GB used / 125.85GB limit"; the run ended with exit code 1 and no step (14B LoRA on one H200)."""
    root = triage(log("lora-host-oom"), exit_code=1)[0]
    assert root.rule == "triage.host_oom"
    assert "120.86 of 125.85 GiB used" in root.message and "past 95 %" in root.message
    assert "ray::WorkerDict.actor_rollout_update_weights 56.0 GiB, VLLM::Worker 52.2 GiB" in root.message
    assert root.fix_overrides == ["actor_rollout_ref.rollout.load_format=safetensors"]


def test_a_host_oom_without_lora_keeps_the_offload_advice():
    lines = [line.replace("lora_rank': 32", "lora_rank': 0").replace("lora_rank=32", "lora_rank=0")
             for line in log("lora-host-oom")]
    root = triage(lines, exit_code=1)[0]
    assert root.rule == "triage.host_oom" and root.fix_overrides == [] and "offload less" in root.fix
