"""The cluster job for two schedulers: a SLURM batch script (Ray started by ``srun`` on each node) and a KubeRay
``RayJob`` manifest. Pure text out; ``wizard.core.cluster_launch.job`` decides what the job is.

SLURM follows verl's documented pattern, examples/slurm/ray_on_slurm.slurm (volcengine/verl at 3f38806, unchanged
in verl-project/verl at 1dda039): one ``srun`` starts the Ray head on the first node, then the workers, then the
driver runs on the head node. Changes from it: the node list is read into a real array (the example's
``nodes_array=("$nodes")`` holds one element, so no worker ever starts); the workers start once the head answers
(``ray start --address`` gives up after about 20 s), in one ``srun`` over the other nodes rather than one per node;
every step gets the job's CPUs (since Slurm 22.05 ``srun`` no longer inherits ``--cpus-per-task``, so each Ray node
would run on one core while telling Ray it has them all; ``SRUN_CPUS_PER_TASK`` passes it on) and each node's
memory (``--mem=0``: verl's offload and vLLM's sleeping weights live in host RAM); and instead of fixed sleeps the
script waits until Ray offers every GPU, because verl counts GPUs once at start (``Total available GPUs X is less
than total desired GPUs Y``), and says what ``ray status`` last answered if it never does.

KubeRay: ``apiVersion: ray.io/v1``, ``kind: RayJob`` (validated in the tests against the CRD schema of
ray-project/kuberay v1.7.0), submitted by the operator over HTTP (``submissionMode: HTTPMode``): the head runs
``entrypoint`` through ``sh`` once (a submitter pod would pass it through bash and then ``ray job submit``, whose
CLI joined the words unquoted until ray-project/ray#63797). Values are single-quoted for that shell, and
environment references become ``${oc.env:NAME}``, which verl's Hydra resolves in the driver on the head pod, where
the secrets are.
"""

from __future__ import annotations

import math
import re
import shlex

import yaml

from wizard import __version__
from wizard.core.cluster_launch.job import (IMAGES, MIN_NODE_CPUS, ClusterJob, ClusterTarget, entry_words,
                                            env_checks, env_default, env_lines, runtime_env, shape_text, to_yaml)
from wizard.core.memory.terms import GIB
from wizard.core.plan.emit import ENTRY, env_to_oc

SECRET_NAME = "verl-secrets"
# KubeRay validates a RayJob name as a DNS-1035 label of at most 47 characters
# (ray-operator/controllers/ray/utils/validation.go ValidateRayJobMetadata, MaxRayJobNameLength).
MAX_RAYJOB_NAME = 47
FINISHED_TTL_S = 300


def node_cpus(target: ClusterTarget) -> int:
    """CPUs to ask the scheduler for per node: what the user said, else 8 per GPU and never under verl's need."""
    return target.cpus_per_node or max(MIN_NODE_CPUS, 8 * target.gpus_per_node)


# --- SLURM ---------------------------------------------------------------------------------------------------------

def _slurm_name(job: ClusterJob) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", job.plan.name or "verl").strip("-") or "verl"


def render_slurm(job: ClusterJob, target: ClusterTarget) -> str:
    g = target.gpus_per_node
    want = target.nodes * g
    run_in = '${container[@]+"${container[@]}"}'
    srun_on = 'srun --nodes=1 --ntasks=1 -w'
    lines = [
        "#!/usr/bin/env bash",
        f"#SBATCH --job-name={_slurm_name(job)}",
        f"#SBATCH --nodes={target.nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={g}",
        f"#SBATCH --cpus-per-task={node_cpus(target)}",
        "#SBATCH --mem=0",
        "#SBATCH --output=slurm-%j.out",
        "#SBATCH --error=slurm-%j.err",
        "# Your site's settings (delete one '#' to use a line):",
        "##SBATCH --partition=your-partition",
        "##SBATCH --account=your-account",
        "##SBATCH --time=04:00:00",
        f"# The verl {job.plan.verl_version} run {job.plan.name!r} on {shape_text(target)} as one SLURM job:",
        "# Ray on every node, then the training on the first. Written by verl-wizard "
        f"{__version__} after verl's examples/slurm/ray_on_slurm.slurm.",
        "#   sbatch slurm.sbatch [more Hydra overrides]     follow: tail -f slurm-JOBID.out     stop: scancel JOBID",
        "# To run inside a container, set CONTAINER to the command prefix, e.g.",
        '#   CONTAINER="apptainer run --nv --bind /data /images/verl-0.9.1.sif" sbatch slurm.sbatch',
        "set -euo pipefail",
        env_default("HEAD_PORT", target.port),
        'read -r -a container <<<"${CONTAINER:-}"',
        "# Slurm >= 22.05: srun does not inherit --cpus-per-task; without this each Ray node runs on one core",
        'export SRUN_CPUS_PER_TASK="$SLURM_CPUS_PER_TASK"',
        *env_lines(job, target),
        *env_checks(job, driver_here=True),
        "",
        'mapfile -t nodes_array < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'head_node="${nodes_array[0]}"',
        f'head_node_ip="$({srun_on} "$head_node" hostname --ip-address)"',
        "# several addresses (IPv6 first): keep the IPv4 one, as verl's example does",
        'if [[ "$head_node_ip" == *" "* ]]; then',
        "  IFS=' ' read -ra addrs <<<\"$head_node_ip\"",
        '  if [[ ${#addrs[0]} -gt 16 ]]; then head_node_ip="${addrs[1]}"; else head_node_ip="${addrs[0]}"; fi',
        "fi",
        'ip_head="$head_node_ip:$HEAD_PORT"',
        'echo "Ray head: $ip_head on $head_node"',
        "",
        f'{srun_on} "$head_node" {run_in} \\',
        '    ray start --head --node-ip-address="$head_node_ip" --port="$HEAD_PORT" '
        f'--num-cpus="$SLURM_CPUS_PER_TASK" --num-gpus={g} --block &',
        "# what Ray says from the head node (the last answer is printed if the cluster never comes up)",
        f'ray_status() {{ srun --overlap --nodes=1 --ntasks=1 -w "$head_node" {run_in} ray status --address="$ip_head" '
        "2>&1; }",
    ]
    if target.nodes > 1:
        others = target.nodes - 1
        lines += [
            "# the workers join once the head answers: ray start --address gives up after about 20 s",
            'for _ in $(seq 1 60); do ray_status >/dev/null && break; sleep 2; done',
            f"srun --nodes={others} --ntasks={others} --ntasks-per-node=1 --exclude=\"$head_node\" {run_in} \\",
            f'    ray start --address="$ip_head" --num-cpus="$SLURM_CPUS_PER_TASK" --num-gpus={g} --block &',
        ]
    lines += [
        "",
        f"# verl counts the cluster's GPUs once, at start: wait until Ray offers all {want}",
        "ready= answer=",
        "for _ in $(seq 1 120); do",
        '  answer="$(ray_status)" || true',
        "  gpus=\"$(sed -n 's#.*/\\([0-9.]*\\) GPU.*#\\1#p' <<<\"$answer\" | head -n 1)\"",
        f'  if [ -n "$gpus" ] && [ "${{gpus%.*}}" -ge {want} ]; then ready=1; break; fi',
        "  sleep 5",
        "done",
        'if [ -z "$ready" ]; then',
        f'  echo "Ray did not offer {want} GPUs within 10 minutes; ray status last said:" >&2',
        "  printf '%s\\n' \"$answer\" | tail -n 20 >&2",
        "  exit 1",
        "fi",
        "",
    ]
    driver = [f'PYTHONUNBUFFERED=1 RAY_ADDRESS="$ip_head" srun --overlap --nodes=1 --ntasks=1 -w "$head_node" {run_in}',
              *entry_words(job), '"$@"']
    lines.append(" \\\n    ".join(driver))
    return "\n".join(lines) + "\n"


# --- KubeRay -------------------------------------------------------------------------------------------------------

def rayjob_name(job: ClusterJob) -> str:
    """A DNS-1035 label of at most 47 characters from the plan's name."""
    name = re.sub(r"[^a-z0-9-]+", "-", (job.plan.name or "").lower()).strip("-")
    name = re.sub(r"-{2,}", "-", name)
    if not name or not name[0].isalpha():
        name = "verl-" + name if name else "verl-job"
    return name[:MAX_RAYJOB_NAME].rstrip("-")


def default_image(job: ClusterJob) -> str:
    return IMAGES.get(job.plan.rollout.name or "vllm", IMAGES["vllm"])


def entrypoint(job: ClusterJob) -> str:
    """The verl command as one shell line; ``$NAME`` references become ``${oc.env:NAME}`` (resolved by verl)."""
    env = set(job.env)
    words = ["python3", "-m", ENTRY]
    if job.plan.config_path:
        words.append("--config-path=" + env_to_oc(job.plan.config_path, env))
    if job.plan.config_name != "ppo_trainer" or job.plan.config_path:
        words.append("--config-name=" + job.plan.config_name)
    words += [env_to_oc(o, env) for o in job.overrides]
    return " ".join(shlex.quote(w) for w in words)


def memory_request(host_bytes: int | None) -> str | None:
    """A pod's memory request for a node that needs ``host_bytes`` of RAM (the estimate's node peak: offloaded
    states, vLLM's pinned copy of its weights while it sleeps, the workers), in whole GiB rounded up: the scheduler
    then places each pod only on a node with that much to spare. No limit: past one the kernel kills the pod, and
    Ray's memory monitor kills workers at 95 % of it (it killed a 14B LoRA run at 120.9 of 125.9 GB)."""
    return None if not host_bytes else f"{math.ceil(host_bytes / GIB)}Gi"


def node_memory(host_bytes: tuple[int, ...] | None) -> tuple[int | None, int | None]:
    """(the head pod's RAM, each worker pod's) from the estimate's node peaks in node order (the head first: the
    driver and rank 0's read of the model are there); (None, None) where there is no estimate."""
    if not host_bytes:
        return None, None
    return host_bytes[0], max(host_bytes[1:], default=host_bytes[0])


def _container(name: str, job: ClusterJob, target: ClusterTarget, image: str, head: bool,
               host_bytes: int | None = None) -> dict:
    amount = {"cpu": str(node_cpus(target)), "nvidia.com/gpu": str(target.gpus_per_node)}
    requests = dict(amount) | ({"memory": mem} if (mem := memory_request(host_bytes)) else {})
    spec: dict = {"name": name, "image": image, "resources": {"limits": dict(amount), "requests": requests}}
    if job.secrets:
        spec["env"] = [{"name": s, "valueFrom": {"secretKeyRef": {"name": SECRET_NAME, "key": s}}}
                       for s in job.secrets]
    if head:
        spec["ports"] = [{"containerPort": target.port, "name": "gcs-server"},
                         {"containerPort": target.dashboard_port, "name": "dashboard"},
                         {"containerPort": 10001, "name": "client"}]
    # NCCL and vLLM share memory through /dev/shm, which is 64 MiB in a pod unless a memory volume replaces it
    spec["volumeMounts"] = [{"name": "dshm", "mountPath": "/dev/shm"}]
    return spec


def _pod(name: str, job: ClusterJob, target: ClusterTarget, image: str, head: bool,
         host_bytes: int | None = None) -> dict:
    return {"spec": {"containers": [_container(name, job, target, image, head, host_bytes)],
                     "volumes": [{"name": "dshm", "emptyDir": {"medium": "Memory"}}]}}


def rayjob(job: ClusterJob, target: ClusterTarget, host_bytes: tuple[int, ...] | None = None) -> dict:
    """The RayJob document (a dict; ``render_kuberay`` adds the comments); ``host_bytes``: the RAM each node needs by
    the memory estimate, in node order (the head's pod requests the first, the workers' the largest of the rest)."""
    image = target.image or default_image(job)
    head_bytes, worker_bytes = node_memory(host_bytes)
    cluster: dict = {
        # the ports the head's container declares (its Service and the dashboard address come from them) are the ones
        # Ray opens only when rayStartParams says so: KubeRay starts the head on 6379 and 8265 otherwise
        "headGroupSpec": {"rayStartParams": {"dashboard-host": "0.0.0.0", "port": str(target.port),
                                             "dashboard-port": str(target.dashboard_port)},
                          "template": _pod("ray-head", job, target, image, head=True, host_bytes=head_bytes)},
    }
    workers = target.nodes - 1
    if workers:
        cluster["workerGroupSpecs"] = [{
            "groupName": "gpu-workers", "replicas": workers, "minReplicas": workers, "maxReplicas": workers,
            "rayStartParams": {}, "template": _pod("ray-worker", job, target, image, head=False,
                                                        host_bytes=worker_bytes),
        }]
    env_doc = runtime_env(job, None)
    return {
        "apiVersion": "ray.io/v1",
        "kind": "RayJob",
        "metadata": {"name": rayjob_name(job)},
        "spec": {
            "entrypoint": entrypoint(job),
            # the operator posts the entrypoint to the head itself, which runs it with sh once: a submitter pod runs it
            # through bash and then `ray job submit -- ...`, whose CLI joined the words unquoted until
            # ray-project/ray#63797 (June 2026), so the head's shell saw ${oc.env:HOME} bare (Bad substitution)
            "submissionMode": "HTTPMode",
            "runtimeEnvYAML": yaml.safe_dump(env_doc, sort_keys=False),  # a YAML text inside the YAML
            "shutdownAfterJobFinishes": True,
            "ttlSecondsAfterFinished": FINISHED_TTL_S,
            "rayClusterSpec": cluster,
        },
    }


def render_kuberay(job: ClusterJob, target: ClusterTarget, host_bytes: tuple[int, ...] | None = None,
                   host_why: str | None = None) -> str:
    doc = rayjob(job, target, host_bytes)
    name = doc["metadata"]["name"]
    image = target.image or default_image(job)
    head = [
        f"# KubeRay RayJob: the verl {job.plan.verl_version} run {job.plan.name!r} on {shape_text(target)}, "
        f"written by verl-wizard {__version__}.",
        "# Needs the KubeRay operator (ray.io/v1). Start: kubectl apply -f kuberay-rayjob.yaml",
        f"# Status: kubectl get rayjob {name}    Stop: kubectl delete rayjob {name}",
        "# Follow the logs (the operator submits the job itself: there is no submitter pod):",
        f"#   kubectl exec \"$(kubectl get pods -o name -l ray.io/node-type=head,ray.io/cluster=\"$(kubectl get rayjob {name} "
        "-o jsonpath='{.status.rayClusterName}')\")\" -- \\",
        f"#     ray job logs -f \"$(kubectl get rayjob {name} -o jsonpath='{{.status.jobId}}')\"",
        f"# The Ray cluster is deleted {FINISHED_TTL_S} s after the job ends (ttlSecondsAfterFinished).",
        f"# Image: {image}" + (" (verl's published image for the plan's rollout engine; see docker/README.md"
                               " in github.com/verl-project/verl)." if not target.image else "."),
    ]
    if not target.image:
        head += ["#   It carries verl's dependencies but not verl itself: use an image built FROM it with",
                 "#   `RUN pip install --no-deps verl==0.9.1`, and put its name in both `image:` fields."]
    if host_bytes:
        said = request_text(host_bytes, target.nodes)
        head.append(f"# {said[0].upper() + said[1:]}: what the plan's memory estimate says a "
                    "node holds at its peak (offload, vLLM's sleeping weights, the workers); no limit is set.")
    else:
        head += [f"# No memory request: the plan's host RAM was not estimated: {(host_why or 'no estimate').rstrip('.')}.",
                 "# verl's offload and vLLM's sleeping weights live in host RAM: add a request under resources.requests."]
    head += ["# Data, models and checkpoints must be in the image or on volumes the pods mount (add them below).",
             "# Values that start with ${oc.env:...} are read by verl from the head pod's environment."]
    if job.secrets:
        head.append(f"# Credentials come from the Secret {SECRET_NAME!r}: kubectl create secret generic "
                    f"{SECRET_NAME} " + " ".join(f"--from-literal={s}=..." for s in job.secrets))
    body = to_yaml(doc)
    return "\n".join(head) + "\n" + body


def pod_requests(host_bytes: tuple[int, ...] | None) -> dict | None:
    """{"head": "170Gi", "worker": "156Gi"}: what the pods request (None: nothing estimated)."""
    head, worker = node_memory(host_bytes)
    return None if head is None else {"head": memory_request(head), "worker": memory_request(worker)}


def request_text(host_bytes: tuple[int, ...], nodes: int) -> str:
    """"the head pod requests 170Gi of memory, each worker pod 156Gi" (one figure where one pod or all the same)."""
    asked = pod_requests(host_bytes)
    if nodes == 1 or asked["head"] == asked["worker"]:
        return f"{'each pod requests' if nodes > 1 else 'the pod requests'} {asked['head']} of memory"
    return f"the head pod requests {asked['head']} of memory, each worker pod {asked['worker']}"


def kuberay_notes(job: ClusterJob, target: ClusterTarget, host_bytes: tuple[int, ...] | None = None) -> list[str]:
    notes = []
    if host_bytes:
        notes.append(f"kuberay-rayjob.yaml: {request_text(host_bytes, target.nodes)}, the host RAM the memory estimate "
                     "says a node needs (offload, vLLM's sleeping weights, the workers)")
    if not target.image:
        notes.append(f"kuberay-rayjob.yaml uses {default_image(job)}, which has verl's dependencies but not verl "
                     "0.9.1 itself: build an image with it (pip install --no-deps verl==0.9.1) and pass --image")
    others = [n for n in job.env if n not in job.secrets and n != "HOME"]
    if others:
        notes.append("kuberay-rayjob.yaml: verl reads " + ", ".join(others) + " from the head pod's environment; "
                     "add them to the containers' env")
    return notes


__all__ = ["render_slurm", "render_kuberay", "rayjob", "rayjob_name", "entrypoint", "kuberay_notes", "node_cpus",
           "memory_request", "node_memory", "pod_requests"]
