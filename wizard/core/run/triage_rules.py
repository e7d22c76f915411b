"""Known failure texts of verl runs -> cause and fix, as Findings: one pattern rule each.

Pure: each rule has an id, a pattern on the text (after ANSI colour and Ray prefixes are removed), pulls the
numbers out of the text, and says what to change. Texts are the ones verl 0.9.1, vLLM, torch, Ray and Hydra print
(shared/reference/verl-0.9.1.md §3.7-3.8 and §5.3; the issue threads in peers-and-pain-points.md §4). ``triage``
runs them and picks the root cause.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from wizard.core.findings import Finding, Stage
from wizard.core.run.triage_roots import _f
from wizard.core.verl.keys import ACTOR, CRITIC, REF, ROLLOUT, R as RO



@dataclass(frozen=True)
class TriageContext:
    """What the whole log says beside the failing line (phase, sizes), for messages with numbers."""

    lines: list[str]  # prefix-free text, the tail the triage saw
    train_dataset_size: int | None
    train_batch_size: int | None

    def before(self, index: int, window: int = 80) -> list[str]:
        return self.lines[max(0, index - window): index + 1]


@dataclass(frozen=True)
class TriageRule:
    id: str
    pattern: re.Pattern
    build: Callable[[re.Match, TriageContext, int], Finding]
    needle: str  # a plain substring every match contains: a fast pre-filter


# --- phase of a CUDA OOM: the traceback frames (or the last lifecycle line) just before it -----------------

_PHASES = (
    ("wake_up", "rollout wake-up (vLLM taking its memory back after the trainer)"),
    ("generate_sequences", "rollout generation"),
    ("update_actor", "actor update (forward/backward)"),
    ("update_policy", "actor update (forward/backward)"),
    ("backward", "actor update (backward)"),
    ("update_critic", "critic update"),
    ("compute_ref_log_prob", "reference log-prob pass"),
    ("compute_log_prob", "old log-prob pass"),
    ("old_log_prob", "old log-prob pass"),
    ("init_model", "model loading"),
    ("load_state_dict", "model loading"),
)


def _phase(ctx: TriageContext, index: int) -> str | None:
    for text in reversed(ctx.before(index, 120)):
        for needle, phase in _PHASES:
            if needle in text:
                return phase
    return None


def _gib(value: str, unit: str) -> float:
    return float(value) * {"GiB": 1.0, "MiB": 1 / 1024, "KiB": 1 / 1024 / 1024, "GB": 1.0, "MB": 1 / 1024}[unit]


def _cuda_oom(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    tried = f"{m.group('tried')} {m.group('tunit')}" if m.group("tried") else None
    phase = _phase(ctx, i)
    detail = []
    if tried:
        detail.append(f"it tried to allocate {tried}")
    if m.group("gpu") is not None and m.group("total"):
        detail.append(f"GPU {m.group('gpu')} has {m.group('total')} {m.group('totunit')} in all, "
                      f"{m.group('free')} {m.group('freeunit')} free")
    where = f" during the {phase}" if phase else ""
    msg = f"A GPU ran out of memory{where}" + (": " + "; ".join(detail) if detail else "") + "."
    if phase and phase.startswith("rollout"):
        fix = (f"Give the trainer more room or vLLM less: lower {RO}.gpu_memory_utilization (e.g. 0.4), "
               f"{RO}.max_num_batched_tokens or {RO}.max_num_seqs; keep {RO}.free_cache_engine=true")
        overrides = [f"{RO}.gpu_memory_utilization=0.4"]
        keys = [f"{RO}.gpu_memory_utilization", f"{RO}.max_num_seqs"]
    else:
        fix = ("Lower actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu (or use_dynamic_bsz with a smaller "
               "ppo_max_token_len_per_gpu), turn on actor_rollout_ref.model.enable_gradient_checkpointing, offload "
               "parameters/optimizer (actor_rollout_ref.actor.fsdp_config.param_offload/optimizer_offload), "
               f"or lower {RO}.gpu_memory_utilization so the colocated vLLM leaves more to the trainer")
        overrides = ["actor_rollout_ref.model.enable_gradient_checkpointing=true"]
        keys = ["actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", f"{RO}.gpu_memory_utilization"]
    return _f("triage.cuda_oom", msg, fix, keys, overrides)


def _wake_oom(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    return _f("triage.vllm_wake_oom",
              f"vLLM could not take its GPU memory back at wake-up ({m.group(0).strip()}): the trainer or another "
              "process still holds memory when the rollout resumes.",
              f"Lower {RO}.gpu_memory_utilization (e.g. from 0.6 to 0.4), keep {RO}.free_cache_engine=true, and make "
              "sure no other process uses the GPUs (verl-wizard detect lists them)",
              [f"{RO}.gpu_memory_utilization", f"{RO}.free_cache_engine"], [f"{RO}.gpu_memory_utilization=0.4"])


def _no_kv_memory(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    return _f("triage.vllm_no_cache_memory",
              "vLLM found no GPU memory left for its KV cache after loading the model weights.",
              f"Raise {RO}.gpu_memory_utilization (e.g. 0.6), use a smaller model, or more tensor parallelism "
              f"({RO}.tensor_model_parallel_size)",
              [f"{RO}.gpu_memory_utilization", f"{RO}.tensor_model_parallel_size"])


def _gcs_unreachable(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    address = m.group(1)
    tries = sum(1 for line in ctx.lines if "Failed to connect to GCS at address" in line)
    local = address.startswith(("127.", "localhost"))
    return _f("triage.ray_gcs_unreachable",
              f"Ray cannot reach its head's GCS at {address} ({tries} attempt(s) in the log, each 'Failed to connect "
              f"to GCS ... within {m.group(2)} seconds'): the run waits on it and never starts"
              + ("; the head is this machine's loopback, so the loopback interface itself is down or filtered"
                 if local else "; the head's address is not reachable from this node"),
              ("Bring the loopback up (ip link set lo up) or run where it is up, and stop any other Ray this one may "
               "be joining (RAY_ADDRESS, ray stop)" if local else
               f"Check that {address} is the head's address and reachable from here (ping, the port open), or set "
               "ray_kwargs.ray_init._node_ip_address to an address this node can reach"),
              ["ray_kwargs.ray_init._node_ip_address"])


def _gpus_short(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    have, want = int(m.group(1)), int(m.group(2))
    what = "this machine has no GPU Ray can see" if have == 0 else f"Ray sees only {have} GPU(s)"
    return _f("triage.gpus_short",
              f"The run asks for {want} GPU(s) (trainer.nnodes × trainer.n_gpus_per_node, plus any reward/teacher "
              f"pool) but {what}: Total available GPUs {have} < {want}.",
              (f"Run on a machine with {want} GPU(s) (check with verl-wizard detect; CUDA_VISIBLE_DEVICES may hide "
               "some), or lower trainer.n_gpus_per_node / trainer.nnodes" if have == 0 else
               f"Set trainer.n_gpus_per_node={have} (with trainer.nnodes=1), or start Ray on more GPUs"),
              ["trainer.n_gpus_per_node", "trainer.nnodes"],
              [] if have == 0 else [f"trainer.n_gpus_per_node={have}"])


_MODULE_FIX = {
    "transfer_queue": "pip install TransferQueue==0.1.11 (verl 0.9.1's V1 trainer needs it)",
    "cachetools": "pip install cachetools (or pip install 'verl[verl-core]==0.9.1', which brings it)",
    "vllm": f"pip install 'verl[vllm]==0.9.1' for the vLLM rollout, or choose another engine with {RO}.name=sglang",
    "sglang": "pip install 'verl[sglang]==0.9.1', or use the vLLM rollout",
    "flash_attn": "pip install flash-attn matching your torch and CUDA, or set actor_rollout_ref.model.use_remove_padding=false",
}


def _missing_module(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    name = m.group(1)
    top = name.split(".")[0]
    fix = _MODULE_FIX.get(top, f"Install the package that provides {top!r} in the Python the run uses "
                               "(verl-wizard doctor --python PATH checks it)")
    return _f("triage.missing_module", f"The run's Python has no module {name!r}.", fix)


def _vllm_missing(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    return _f("triage.missing_module", "The run's Python has no vLLM, and the rollout engine is vllm.",
              _MODULE_FIX["vllm"], [f"{RO}.name"])


def _nccl_timeout(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    ms = m.group("ms")
    op = m.group("op")
    detail = (f" ({op} waited {int(ms) // 1000} s)" if ms and op else "")
    return _f("triage.nccl_timeout",
              f"A collective operation between GPUs timed out{detail}: one rank stopped (crashed, out of memory, "
              "or stuck in rollout) while the others waited, or the network between nodes is blocked.",
              "Look for the first error of another rank above this one; across nodes check NCCL_SOCKET_IFNAME and that "
              "the nodes reach each other (NCCL_DEBUG=INFO shows the chosen interface); a long rollout may need "
              "actor_rollout_ref.nccl_timeout raised",
              ["actor_rollout_ref.nccl_timeout"])


def _batched_tokens(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    tokens, length = int(m.group(1)), int(m.group(2))
    return _f("triage.max_num_batched_tokens",
              f"vLLM's max_num_batched_tokens ({tokens}) is smaller than max_model_len ({length}), so vLLM refuses to "
              "start (a whole sequence must fit in one batch).",
              f"Set {RO}.max_num_batched_tokens={length} or more, or lower data.max_prompt_length + "
              "data.max_response_length",
              [f"{RO}.max_num_batched_tokens", "data.max_prompt_length", "data.max_response_length"],
              [f"{RO}.max_num_batched_tokens={length}"], auto=True)


def _model_len_vs_positions(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    length, positions = int(m.group(1)), int(m.group(2))
    return _f("triage.max_model_len",
              f"The rollout's max_model_len ({length}) is longer than the model's context "
              f"(max_position_embeddings = {positions}).",
              f"Lower data.max_prompt_length + data.max_response_length to at most {positions} "
              f"(or {RO}.max_model_len)",
              ["data.max_prompt_length", "data.max_response_length", f"{RO}.max_model_len"])


def _prompt_too_long(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    n, limit = m.group("n"), m.group("limit")
    return _f("triage.prompt_too_long",
              f"A prompt of {n} tokens is longer than the limit of {limit} tokens.",
              "Set data.filter_overlong_prompts=true (drops prompts over data.max_prompt_length), or raise "
              "data.max_prompt_length (the rollout's context grows with it)",
              ["data.filter_overlong_prompts", "data.max_prompt_length"], ["data.filter_overlong_prompts=true"],
              auto=True)


_LORA_ON = re.compile(r"lora_rank'?[:=]\s*[1-9]")
# Ray's report lists the processes that held the most ("Top 10 memory users:" then "PID  MEM(GB)  COMMAND" rows)
_TOP_USER = re.compile(r"^\s*\d+\s+(?P<gb>[\d.]+)\s+(?P<cmd>\S+)")


def _host_oom(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    groups = m.groupdict()
    used = groups.get("used") or groups.get("used2")
    msg = "Ray killed the run's workers because the machine ran out of host memory (RAM)"
    if used and groups.get("used"):
        msg += f": {used}GB of {m.group('total')}GB used, over the threshold of {m.group('thr')}"
    elif used:  # Ray 2.60: "Memory on the node (...) was 120.86GB used / 125.85GB limit"; it kills at 95 %
        msg += f": {used} of {m.group('total2')} GiB used (Ray kills workers past 95 %)"
    after = ctx.lines[i: i + 80]
    top = [t for t in (_TOP_USER.match(x) for x in after[next((k for k, x in enumerate(after)
                                                                 if "Top 10 memory users" in x), len(after)):])
           if t and float(t.group("gb")) >= 1][:3]
    if top:
        msg += ". The largest: " + ", ".join(f"{t.group('cmd')} {float(t.group('gb')):.1f} GiB" for t in top)
    at_sync = any("update_weights" in x for x in ctx.before(i, 40) + after)
    lora = any(_LORA_ON.search(x) for x in ctx.lines[: i])  # verl prints its config: 'lora_rank': 32
    fix = ("Set actor_rollout_ref.rollout.load_format=safetensors: vLLM then reads the base weights itself, and the "
           "first weight sync no longer gathers the whole base model on every trainer rank's CPU (its fp32 copy), "
           "beside vLLM's pinned copy of its weights while it sleeps (LoRA keeps them); or use a node with more "
           "RAM. verl-wizard plan says what a node needs (memory.host)" if at_sync and lora else
           "Give each GPU about 80 GB of host RAM, or offload less to the CPU "
           "(actor_rollout_ref.actor.fsdp_config.param_offload/optimizer_offload=false), lower "
           "data.dataloader_num_workers, or run fewer rollout workers per node; verl-wizard plan says what a node "
           "needs (memory.host)")
    overrides = [f"{RO}.load_format=safetensors"] if at_sync and lora else []
    return _f("triage.host_oom", msg + ".", fix,
              ["actor_rollout_ref.actor.fsdp_config.param_offload", "actor_rollout_ref.actor.fsdp_config.optimizer_offload"],
              overrides)


def _actor_died(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    window = " ".join(ctx.before(i, 5) + ctx.lines[i: i + 20])
    if "OOM killer" in window or "low on memory" in window or "SIGKILL" in window:
        return _host_oom(re.match("", ""), ctx, i)
    return _f("triage.actor_died",
              "A Ray actor died unexpectedly (its process exited or was killed) before finishing its task.",
              "Read the actor's own error above this line; when nothing is printed the usual cause is the host "
              "running out of RAM (dmesg | grep -i oom), a segfault in a CUDA extension, or a node leaving the cluster")


def _override_missing(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    key = m.group(1)
    return _f("triage.hydra_override",
              f"Hydra could not compose the config: {key!r} is not a key of verl 0.9.1's config (renamed, removed, or "
              "misspelt).",
              f"Remove it, or fix the name (verl-wizard check names the key it moved to); to add a new key on "
              f"purpose write +{key}=...", [key], stage=Stage.COMPOSE)


def _override_exists(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    key = m.group(1)
    return _f("triage.hydra_append",
              f"Hydra could not add {key!r} with '+': the key already exists in the config.",
              f"Write {key}=... without the '+' (or ++{key}=... to set it either way)", [key], stage=Stage.COMPOSE)


def _hydra_other(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    return _f("triage.hydra_compose", f"Hydra could not compose the config: {m.group(1).strip()}",
              "Check the override syntax (key=value, lists as [a,b], quote values with spaces); verl-wizard check "
              "reports the exact override", stage=Stage.COMPOSE)


def _missing_value(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    key = m.group(1)
    return _f("triage.missing_value", f"The config leaves {key} at '???' (a value verl requires and has no default for).",
              f"Set {key}=...", [key], stage=Stage.STARTUP)


def _zero_division(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    window = " ".join(ctx.before(i, 40))
    if "steps_per_epoch" not in window and ctx.train_dataset_size is None:
        return _f("triage.zero_division", "A division by zero stopped the run.",
                  "Read the traceback above; if the dataset is small, check it holds at least data.train_batch_size "
                  "prompts after filtering")
    size, batch = ctx.train_dataset_size, ctx.train_batch_size
    nums = []
    if size is not None:
        nums.append(f"{size} training prompts after filtering")
    if batch is not None:
        nums.append(f"data.train_batch_size = {batch}")
    return _f("triage.dataset_smaller_than_batch",
              "The training set is smaller than one batch, so an epoch has 0 steps and verl divides by it"
              + (f" ({', '.join(nums)})" if nums else "") + ".",
              (f"Set data.train_batch_size to at most {size}, or use more data (data.filter_overlong_prompts may have "
               "dropped prompts: check data.max_prompt_length)" if size is not None else
               "Lower data.train_batch_size below the number of training prompts, or use more data"),
              ["data.train_batch_size", "data.train_files"],
              [f"data.train_batch_size={size}"] if size else [])


def _free_at_start(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    device = m.group(1) or "the GPU"
    free, total, util, want = float(m.group(2)), float(m.group(3)), float(m.group(4)), float(m.group(5))
    bound = int(100 * free / total) / 100  # what passes vLLM's start-up check, rounded down to a percent
    return _f("triage.vllm_free_memory_at_start",
              f"vLLM refused to start: {free:g} of {total:g} GiB were free on {device} when it started, and "
              f"gpu_memory_utilization={util:g} asks for {want:g} GiB. The other {total - free:.2f} GiB are held by "
              "what started before it on that GPU: the trainer's models (verl loads them first) or another process.",
              f"Lower {RO}.gpu_memory_utilization below {bound:g}, which only gets vLLM started: the trainer holds "
              "more once it trains (gradients, AdamW's moments), so take the value verl-wizard plan says fits; and "
              "free the GPU of other processes (verl-wizard detect lists them)",
              [f"{RO}.gpu_memory_utilization"])


def _sleep_shared(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    return _f("triage.vllm_sleep_shared_gpu",
              "vLLM's sleep (after generation, before training) found more GPU memory in use than before it released "
              "its own ('Memory usage increased after sleeping'): it measures the whole GPU, so another process "
              "allocated memory on the same GPU meanwhile: another job (a training run, a notebook, a second engine) "
              "or, with nothing else there, this run's own trainer or tensor-parallel ranks.",
              "Give the run GPUs of its own (verl-wizard detect lists the processes on each GPU; stop the others or "
              "point CUDA_VISIBLE_DEVICES at free GPUs). If the GPUs were the run's alone, its own processes tripped "
              "vLLM's check (reported upstream, verl issue #3902): retry, or pin the KV cache "
              f"(+{RO}.engine_kwargs.vllm.kv_cache_memory_bytes) so vLLM's sizing does not depend on the whole GPU")


def _lora_empty(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    return _f("triage.lora_adapter_empty",
              "vLLM received a LoRA adapter with no LoRA weights at the weight sync (StopIteration in "
              "_create_merged_loras_inplace) and its worker died; verl then waits for it and the run makes no "
              "progress. Seen with LoRA on FSDP1 (actor strategy=fsdp) on one GPU (verl 0.9.1, vLLM 0.24, twice on an "
              "H200); the same LoRA run on FSDP2 trained.",
              "Train LoRA with FSDP2: actor_rollout_ref.actor.strategy=fsdp2 actor_rollout_ref.ref.strategy=fsdp2 "
              "(the same LoRA runs ran there)",
              ["actor_rollout_ref.actor.strategy", "actor_rollout_ref.model.lora_rank"])


def _lora_base_sync(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    key = f"{RO}.checkpoint_engine.update_weights_bucket_megabytes"
    return _f("triage.lora_base_sync_bucket",
              "vLLM's worker died receiving the weights (IndexError in verl's rebuild_ipc): with LoRA and vLLM started "
              "from dummy weights, verl 0.9.1's first sync sends the base model from the CPU, and a weight larger than "
              "the weight-sync buffer goes through a CUDA IPC path a CPU tensor cannot take; the trainer then waits "
              "for the dead worker and the run makes no progress. Seen on an H200 with Qwen2.5-7B and LoRA 32: its fp32 "
              "embedding is 2,079 MiB, the buffer 2,048 MiB (verl-wizard check names the numbers for your model).",
              f"Set {key} above the model's largest fp32 weight (4096 for 7B and 14B Qwen2.5), or "
              f"{RO}.load_format=safetensors so that vLLM loads the base weights itself",
              [key, f"{RO}.load_format"])


_MICRO_SECTIONS = {"actor": ACTOR, "rollout": ROLLOUT, "ref": REF, "critic": CRITIC}


def _micro_unset(m: re.Match, ctx: TriageContext, i: int) -> Finding:
    section = _MICRO_SECTIONS.get(m.group(1) or "critic", m.group(1) or "critic")
    key = f"{section}.{m.group(2)}"
    legacy = key.removesuffix("_per_gpu")
    return _f("triage.micro_batch_unset",
              f"{key} is not set, and verl 0.9.1's worker asserts it at startup (the deprecated global "
              f"{legacy.rsplit('.', 1)[1]} passes the pre-flight but the worker no longer reads it).",
              f"Set {key} (a per-GPU count) and drop {legacy}", [key, legacy])


_U = r"(?:GiB|MiB|KiB|GB|MB)"
RULES: tuple[TriageRule, ...] = (
    TriageRule("triage.vllm_wake_oom", re.compile(r"cuda error: out of memory at \S*cumem_allocator\S*", re.I),
               _wake_oom, "out of memory"),
    TriageRule("triage.cuda_oom", re.compile(
        r"(?:CUDA out of memory|OutOfMemoryError: CUDA)[^.]*\.(?: Tried to allocate (?P<tried>[\d.]+) (?P<tunit>" + _U + r"))?"
        r"(?:\. GPU (?P<gpu>\d+) has a total capacity of (?P<total>[\d.]+) (?P<totunit>" + _U + r") of which "
        r"(?P<free>[\d.]+) (?P<freeunit>" + _U + r") is free)?"), _cuda_oom, "out of memory"),
    TriageRule("triage.vllm_no_cache_memory", re.compile(r"No available memory for the cache blocks"), _no_kv_memory,
               "cache blocks"),
    TriageRule("triage.vllm_free_memory_at_start", re.compile(
        r"Free memory on device(?: (\S+))? \(([\d.]+)/([\d.]+) GiB\) on startup is less than desired GPU memory "
        r"utilization \(([\d.]+), ([\d.]+) GiB\)"), _free_at_start, "on startup is less than desired"),
    TriageRule("triage.vllm_sleep_shared_gpu", re.compile(r"Memory usage increased after sleeping"), _sleep_shared,
               "increased after sleeping"),
    TriageRule("triage.lora_adapter_empty", re.compile(r"next\(iter\(lora_model\.loras\.values\(\)\)\)"),
               _lora_empty, "lora_model.loras.values()"),
    TriageRule("triage.lora_base_sync_bucket", re.compile(r"list_args\[6\] = device_id"), _lora_base_sync,
               "list_args[6]"),
    TriageRule("triage.micro_batch_unset", re.compile(
        r"assert self\.config\.(?:(actor|rollout|ref)\.)?(\w*micro_batch_size_per_gpu) is not None"), _micro_unset,
        "micro_batch_size_per_gpu is not None"),
    TriageRule("triage.ray_gcs_unreachable", re.compile(
        r"Failed to connect to GCS at address (\S+?) within (\d+) seconds"), _gcs_unreachable, "Failed to connect to GCS"),
    TriageRule("triage.gpus_short", re.compile(r"Total available GPUs (\d+) is less than total desired GPUs (\d+)"),
               _gpus_short, "Total available GPUs"),
    TriageRule("triage.missing_module", re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'"),
               _missing_module, "No module named"),
    TriageRule("triage.missing_module", re.compile(r"To use vllm rollout, please ensure the 'vllm' package"),
               _vllm_missing, "vllm"),
    TriageRule("triage.nccl_timeout", re.compile(
        r"(?:Watchdog caught collective operation timeout: WorkNCCL\([^)]*?OpType=(?P<op>\w+)[^)]*?"
        r"Timeout\(ms\)=(?P<ms>\d+)\)|NCCL (?:communicator|operation|watchdog)[^:]*timed? ?out|"
        r"DistBackendError: .*[Tt]imeout)"), _nccl_timeout, "imeout"),
    TriageRule("triage.max_num_batched_tokens", re.compile(
        r"max_num_batched_tokens \((\d+)\) is smaller than max_model_len \((\d+)\)"), _batched_tokens,
        "max_num_batched_tokens"),
    TriageRule("triage.max_model_len", re.compile(
        r"max_model_len \((\d+)\) should be less than or equal to max_position_embeddings \((\d+)\)"),
        _model_len_vs_positions, "max_position_embeddings"),
    TriageRule("triage.prompt_too_long", re.compile(
        r"Prompt length of (?P<n>\d+) is longer than the maximum model length of (?P<limit>\d+)|"
        r"sequence_length=(?P<n2>\d+) is larger than max_length=(?P<limit2>\d+)|"
        r"Prompt length \((?P<n3>\d+)\) leaves no room to generate within the model's maximum context length "
        r"\((?P<limit3>\d+)\)|Multimodal prompt produced (?P<n4>\d+) tokens, exceeding rollout.prompt_length="
        r"(?P<limit4>\d+)"), lambda m, c, i: _prompt_too_long(_Merged(m), c, i), "ength"),
    TriageRule("triage.host_oom", re.compile(
        r"(?:Task was killed due to the node running low on memory.*?was (?P<used>[\d.]+)GB / (?P<total>[\d.]+)GB "
        r"\([\d.]+\), which exceeds the memory usage threshold of (?P<thr>[\d.]+)|"
        r"worker\(s\) were killed due to the node running low on memory\. Memory on the node .*?was "
        r"(?P<used2>[\d.]+)GB used / (?P<total2>[\d.]+)GB limit|"
        r"killed by SIGKILL by OOM killer)"), _host_oom, "emory"),
    TriageRule("triage.actor_died", re.compile(r"ActorDiedError|The actor died unexpectedly"), _actor_died, "died"),
    TriageRule("triage.hydra_override", re.compile(r"Could not override '([^']+)'"), _override_missing,
               "Could not override"),
    TriageRule("triage.hydra_append", re.compile(r"Could not append to config\. An item is already at '([^']+)'"),
               _override_exists, "Could not append"),
    TriageRule("triage.missing_value", re.compile(r"Missing mandatory value: ([\w.\[\]]+)"), _missing_value,
               "Missing mandatory value"),
    TriageRule("triage.zero_division", re.compile(r"^ZeroDivisionError\b"), _zero_division, "ZeroDivisionError"),
    TriageRule("triage.hydra_compose", re.compile(r"ConfigCompositionException: (.*)"), _hydra_other,
               "ConfigCompositionException"),
)


class _Merged:
    """The alternatives of a pattern with numbered twins (n, n2, n3...) seen as one match."""

    def __init__(self, m: re.Match):
        self._m = m

    def group(self, name):
        for suffix in ("", "2", "3", "4"):
            value = self._m.groupdict().get(name + suffix)
            if value is not None:
                return value
        return None
