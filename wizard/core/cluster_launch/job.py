"""What a cluster job is: the target shape, the overrides the job gets, and the shell and YAML pieces every
launcher (Ray scripts, SLURM, KubeRay) shares.

What the cluster job receives is the local ``run.sh``'s overrides with two kinds of change, and no other:

- the shape keys ``trainer.nnodes`` / ``trainer.n_gpus_per_node`` are set to the cluster's shape;
- the ``ray.init`` arguments Ray refuses when it joins a running cluster are dropped (``num_cpus`` and friends:
  ``ray/_private/worker.py`` raises "When connecting to an existing cluster, num_cpus and num_gpus must not be
  provided"); on a cluster they are ``ray start`` options of each node instead.

Shell rules are run.sh's (``wizard.core.plan.emit``): every value quoted, secrets only as ``${NAME}`` references.
Every script setting (ports, GPUs per node, head address) is a default the environment can override, so one set
of files serves a test on loopback and the real cluster.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from dataclasses import dataclass, field

import yaml

from wizard import __version__
from wizard.core.hardware.cluster import Cluster
from wizard.core.plan.emit import ENTRY, emit_overrides, override_word, shell_word
from wizard.core.plan.model import Plan
from wizard.core.secrets import is_secret_name
from wizard.core.verl.overrides import OverrideSyntaxError, parse_override

TARGETS = ("ray", "slurm", "kuberay")
SHAPE_KEYS = ("trainer.nnodes", "trainer.n_gpus_per_node")
# ray.init() arguments Ray 2.x refuses when it connects to a running cluster (ray/_private/worker.py, the
# "When connecting to an existing cluster, ... must not be provided" errors): a cluster job never gets them.
LOCAL_RAY_KEYS = tuple(f"ray_kwargs.ray_init.{k}" for k in (
    "num_cpus", "num_gpus", "resources", "labels", "object_store_memory", "_system_config", "_node_name"))
# verl's V1 trainer holds 1 TaskRunner + 1 TransferQueue controller + 8 storage units on one logical CPU each.
MIN_NODE_CPUS = 16
DEFAULT_PORT = 6379
DEFAULT_DASHBOARD_PORT = 8265
# verl publishes images with verl's dependencies for each rollout engine (verl-project/verl docker/README.md at
# 1dda039: "verlai/verl:sgl0512.latest, verlai/verl:vllm024.latest"); vLLM 0.24.0 and SGLang 0.5.12 are the
# versions verl 0.9.1's vllm and sglang extras pin. The images hold verl's dependencies, not verl itself
# (docker/Dockerfile.stable.vllm installs verl and uninstalls it again), so verl 0.9.1 goes in on top.
IMAGES = {"vllm": "verlai/verl:vllm024.latest", "sglang": "verlai/verl:sgl0512.latest"}
# Files Ray must not upload as the job's working_dir: weights, checkpoints, logs, VCS data. Ray caps the upload
# (its gRPC message limit, about 500 MiB), and weights belong on storage every node reads.
# Nor what may hold credentials: launch scripts (a user's own run.sh with its literal tokens, this material), their
# backups, env files and key files; the job needs none of them (verl runs as `python3 -m`, secrets come from the
# nodes' environment).
EXCLUDES = ["/.git/", "*.safetensors", "*.bin", "*.pt", "*.pth", "*.ckpt", "*.gguf", "*.onnx", "*.h5",
            "checkpoints/", "wandb/", "outputs/", "runs/", "__pycache__/", "*.sif",
            "*.sh", "*.sbatch", "*.bak", "*.tmp", ".env", "*.env", ".envrc", ".netrc", ".git-credentials", "*.pem",
            "*.key", ".ssh/", ".aws/", ".kube/", ".huggingface/", "kuberay-rayjob.yaml", "runtime_env.yaml"]
# What the job's processes get on top of the node's environment. TORCH_NCCL_AVOID_RECORD_STREAMS is the one
# variable verl's own verl/trainer/runtime_env.yaml sets for every run (its CUDA_DEVICE_MAX_CONNECTIONS=1 is
# Megatron-on-Hopper only and verl 0.9.1 sets it itself when it applies).
JOB_ENV = {"PYTHONUNBUFFERED": "1", "TORCH_NCCL_AVOID_RECORD_STREAMS": "1"}
# Loggers whose credentials the nodes need in their environment (never in a file).
LOGGER_SECRETS = {"wandb": "WANDB_API_KEY", "swanlab": "SWANLAB_API_KEY"}
_HOST = re.compile(r"[A-Za-z0-9]([A-Za-z0-9.\-]*[A-Za-z0-9])?")


@dataclass(frozen=True)
class ClusterTarget:
    """The cluster a plan runs on and how it is reached. ``head_address`` None: the scripts ask for it."""

    nodes: int
    gpus_per_node: int
    cpus_per_node: int | None = None  # None: Ray counts each node's CPUs (SLURM/KubeRay ask for MIN_NODE_CPUS+)
    gpu_model: str | None = None
    head_address: str | None = None
    port: int = DEFAULT_PORT
    dashboard_port: int = DEFAULT_DASHBOARD_PORT
    dashboard_host: str = "0.0.0.0"
    image: str | None = None  # KubeRay; None: the verl image for the plan's rollout engine
    working_dir: str = "."  # what `ray job submit` uploads (runtime_env working_dir)

    def __post_init__(self):
        for name, value, low in (("nodes", self.nodes, 1), ("GPUs per node", self.gpus_per_node, 1),
                                 ("port", self.port, 1), ("dashboard port", self.dashboard_port, 1)):
            if value < low:
                raise ValueError(f"{name} must be {low} or more, not {value}")
        for name, value in (("port", self.port), ("dashboard port", self.dashboard_port)):
            if value > 65535:
                raise ValueError(f"{name} must be 65535 or less, not {value}")
        if self.cpus_per_node is not None and self.cpus_per_node < 1:
            raise ValueError(f"CPUs per node must be 1 or more, not {self.cpus_per_node}")
        if self.head_address is not None and not _HOST.fullmatch(self.head_address):
            raise ValueError(f"head address {self.head_address!r}: use a host name or an IPv4 address, e.g. 10.0.0.1")

    @property
    def total_cpus(self) -> int | None:
        return None if self.cpus_per_node is None else self.cpus_per_node * self.nodes


def target_for(plan: Plan, *, nodes: int | None = None, gpus_per_node: int | None = None,
               cluster: Cluster | None = None, **options) -> ClusterTarget:
    """The shape: explicit numbers first, then a discovered/declared ``Cluster``, then the plan's trainer keys.

    ValueError (one line) when nothing says how many GPUs a node has.
    """
    spec = cluster.to_gpu_spec() if cluster is not None else None
    n = nodes or (spec.nodes if spec else None) or plan.hardware.nnodes or 1
    g = gpus_per_node or (spec.gpus_per_node if spec else None) or plan.hardware.n_gpus_per_node
    if g is None:
        raise ValueError("the plan does not say how many GPUs a node has: give --gpus-per-node N")
    if cluster is not None and options.get("cpus_per_node") is None:
        cpus = [int(x.cpus) for x in cluster.nodes if x.alive and x.gpu_count > 0 and x.cpus]
        if cpus:
            options["cpus_per_node"] = min(cpus)
    model = options.pop("gpu_model", None) or (spec.model if spec else None) or plan.hardware.gpu
    return ClusterTarget(nodes=n, gpus_per_node=g, gpu_model=model, **options)


@dataclass
class ClusterJob:
    """The cluster run: its plan (shape applied, local-only Ray keys gone) and the overrides it is launched with."""

    plan: Plan
    overrides: list[str]
    env: list[str]  # environment variables the overrides read (``$HOME``, secrets)
    secrets: list[str]  # the subset that are credentials: nodes need them in their environment
    dropped: list[str]  # overrides of the local plan the cluster job does not get
    notes: list[str] = field(default_factory=list)


def _key(text: str) -> str | None:
    try:
        return parse_override(text).key
    except OverrideSyntaxError:
        return None


def _under(key: str, roots: tuple[str, ...]) -> bool:
    return any(key == r or key.startswith(r + ".") for r in roots)


def cluster_job(plan: Plan, target: ClusterTarget) -> ClusterJob:
    """``plan`` as the cluster runs it (see the module docstring for the only differences from run.sh)."""
    job = plan.model_copy(deep=True)
    dropped, notes = [], []
    if job.hardware.ray_num_cpus is not None:
        dropped.append(f"ray_kwargs.ray_init.num_cpus={job.hardware.ray_num_cpus}")
        job.hardware.ray_num_cpus = None
    kept, shape = [], []
    for text in job.passthrough:
        key = (_key(text) or "").lstrip("+~")
        (dropped if _under(key, LOCAL_RAY_KEYS) else shape if _under(key, SHAPE_KEYS) else kept).append(text)
    job.passthrough = kept
    for text in dropped:
        notes.append(f"{text} is left out of the cluster job: Ray refuses it when joining a running cluster; "
                     "each node's CPUs and GPUs are its `ray start --num-cpus/--num-gpus`")
    notes += [f"{text} is replaced by the cluster's shape" for text in shape]
    dropped += shape
    for key, old, new in (("trainer.nnodes", plan.hardware.nnodes, target.nodes),
                          ("trainer.n_gpus_per_node", plan.hardware.n_gpus_per_node, target.gpus_per_node)):
        if old is not None and old != new:
            notes.append(f"{key}: {old} in the plan, {new} on this cluster")
    job.hardware.nnodes, job.hardware.n_gpus_per_node = target.nodes, target.gpus_per_node
    if target.gpu_model:
        job.hardware.gpu = target.gpu_model
    emitted = emit_overrides(job)
    secrets = sorted({n for n in emitted.env if is_secret_name(n)} | _logger_secrets(job))
    notes += emitted.notes + _path_notes(job)
    return ClusterJob(plan=job, overrides=emitted.overrides, env=emitted.env, secrets=secrets, dropped=dropped,
                      notes=notes)


def _logger_secrets(plan: Plan) -> set[str]:
    loggers = plan.trainer.logger or []
    return {LOGGER_SECRETS[name] for name in loggers if name in LOGGER_SECRETS}


def _path_notes(plan: Plan) -> list[str]:
    """Relative paths resolve inside the job's working directory on the cluster, not where the user is."""
    notes = []
    save = plan.trainer.save_freq
    local_dir = plan.trainer.default_local_dir
    if save not in (None, 0, -1) and not _absolute(local_dir):
        shown = local_dir or "checkpoints/${trainer.project_name}/${trainer.experiment_name} (verl's default)"
        notes.append(f"trainer.default_local_dir is {shown}: relative, so checkpoints land in the job's "
                     "temporary working directory on one node; set it to storage every node shares")
    for key, value in (("data.train_files", plan.data.train_files), ("data.val_files", plan.data.val_files),
                       ("reward.custom_reward_function.path", plan.reward.custom_function_path)):
        for path in [value] if isinstance(value, str) else value or []:
            if not _absolute(path):
                notes.append(f"{key}={path} is relative: on the cluster it is read relative to the job's working "
                             "directory; an absolute path on storage every node sees is safer")
    return notes


def _absolute(path: str | None) -> bool:
    return bool(path) and path.startswith(("/", "$", "~", "hdfs://", "s3://", "gs://"))


# --- shell pieces ------------------------------------------------------------------------------------------------

def env_default(name: str, value) -> str:
    """A setting the environment may override: ``NAME`` keeps its value when set, else gets ``value``."""
    return f'[ -n "${{{name}:-}}" ] || {name}={shlex.quote(str(value))}'


def shape_text(target: ClusterTarget) -> str:
    gpus = f"{target.gpus_per_node}x{target.gpu_model}" if target.gpu_model else f"{target.gpus_per_node} GPUs"
    return f"{target.nodes} node(s) x {gpus}"


def script_header(plan: Plan, what: str, target: ClusterTarget) -> list[str]:
    name = f" {plan.name!r}" if plan.name else ""
    return ["#!/usr/bin/env bash", f"# {what} for the verl {plan.verl_version} run{name} on {shape_text(target)}.",
            f"# Written by verl-wizard {__version__}; every setting below can be changed from the environment."]


def env_lines(job: ClusterJob, target: ClusterTarget) -> list[str]:
    """The environment the node's Ray processes (and so verl's workers) inherit, made explicit."""
    lines = ['export RAY_USAGE_STATS_ENABLED="${RAY_USAGE_STATS_ENABLED:-0}"  # no usage report leaves the cluster']
    if target.nodes > 1:
        lines += ["# Several nodes: NCCL and Gloo pick a network interface themselves; on machines with more than one,",
                  "# name the one the nodes reach each other on (the same on every node), e.g.:",
                  "#   export NCCL_SOCKET_IFNAME=eth0 GLOO_SOCKET_IFNAME=eth0"]
    if job.secrets:
        lines += ["# The run needs these credentials; export them on every node before this script (never written",
                  "# in a file): " + ", ".join(job.secrets)]
    if read_by_verl := _read_by_verl(job):
        lines += ["# verl reads these from the environment of the node its driver runs on (${oc.env:...}): export",
                  "# them there before this script: " + ", ".join(read_by_verl)]
    return lines


def _read_by_verl(job: ClusterJob) -> list[str]:
    """The variables verl itself reads (``${oc.env:NAME}``, resolved in the driver), secrets and HOME aside."""
    return [n for n in job.env if n not in job.plan.script_env and n not in job.secrets and n != "HOME"]


def env_checks(job: ClusterJob, driver_here: bool = False) -> list[str]:
    """For the script that starts the driver: the variables it needs set, each checked at the top (under ``set -u``
    an unset one failed only at the driver's line, after the cluster had come up). Those the shell expands in the
    overrides; with ``driver_here`` (slurm.sbatch: the driver runs in this script's environment) also those verl
    reads, which submit.sh cannot check (they are read on the head)."""
    reads = [n for n in job.plan.script_env if n in job.env and n not in job.secrets and n != "HOME"]
    reads += _read_by_verl(job) if driver_here else []
    if not reads:
        return []
    return ["# The run's overrides read these variables from this script's environment:",
            *(f': "${{{n}:?set {n}, which the overrides read}}"' for n in reads)]  # no quote inside: bash


def entry_words(job: ClusterJob) -> list[str]:
    """``python3 -m verl.trainer.main_ppo`` and the overrides, as shell words (run.sh's quoting)."""
    env = set(job.env)
    words = [f"python3 -m {ENTRY}"]
    if job.plan.config_path:
        words.append("--config-path=" + shell_word(job.plan.config_path, env))
    if job.plan.config_name != "ppo_trainer" or job.plan.config_path:
        words.append("--config-name=" + shell_word(job.plan.config_name, env))
    return words + [override_word(o, env) for o in job.overrides]


def upload_folder(working_dir: str, out_dir: str) -> str:
    """The job's working_dir as runtime_env.yaml holds it: relative to the material's folder (both absolute here),
    which submit.sh resolves, so the project and the folder can move to a login node together; a path of this
    machine would not exist there."""
    return posixpath.relpath(working_dir, out_dir)


def runtime_env(job: ClusterJob, target: ClusterTarget | None) -> dict:
    """Ray's runtime environment for the job; without a target (KubeRay) nothing is uploaded."""
    doc: dict = {}
    if target is not None:
        doc["working_dir"] = target.working_dir
        excludes = list(EXCLUDES)
        local_dir = job.plan.trainer.default_local_dir
        if local_dir and not _absolute(local_dir):
            excludes.append(local_dir.split("/", 1)[0] + "/")
        doc["excludes"] = list(dict.fromkeys(excludes))
    doc["env_vars"] = dict(JOB_ENV)
    return doc


class _Dumper(yaml.SafeDumper):
    """YAML for people: a text with line breaks is a ``|`` block, not one long escaped line."""


_Dumper.add_representer(str, lambda d, s: d.represent_scalar("tag:yaml.org,2002:str", s, style="|" if "\n" in s
                                                             else None))


def to_yaml(doc: dict) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)
