"""The Ray part of a cluster launch: head and worker ``ray start`` scripts, a ``ray job submit`` script and its
``runtime_env.yaml``. Pure: a job and a target in, file texts out.
"""

from __future__ import annotations

import re

from wizard import __version__
from wizard.core.cluster_launch.job import (ClusterJob, ClusterTarget, entry_words, env_checks, env_default, env_lines,
                                            runtime_env, script_header, to_yaml)
from wizard.core.check.rules.resources import CPUS_PER_GPU, transfer_queue_cpus
from wizard.core.plan.model import Plan


def _head_address_lines(target: ClusterTarget) -> list[str]:
    if target.head_address:
        return [env_default("HEAD_ADDRESS", target.head_address)]
    return [': "${HEAD_ADDRESS:?set HEAD_ADDRESS to the address of the node that runs ray-head.sh}"']


def _ray_start_args(head: bool) -> list[str]:
    args = ["--head", '--port="$HEAD_PORT"', '--dashboard-host="$DASHBOARD_HOST"',
            '--dashboard-port="$DASHBOARD_PORT"'] if head else ['--address="${HEAD_ADDRESS}:${HEAD_PORT}"']
    return ["args=(" + " ".join(args + ['--num-gpus="$NODE_GPUS"']) + ")",
            'if [ -n "$NODE_CPUS" ]; then args+=(--num-cpus="$NODE_CPUS"); fi',
            'exec ray start "${args[@]}" --block "$@"']


def _node_lines(target: ClusterTarget) -> list[str]:
    # each GPU's bundle of verl's pools holds CPUS_PER_GPU CPUs on its node; the head also TaskRunner and TransferQueue
    need = CPUS_PER_GPU * target.gpus_per_node
    cpus = ([env_default("NODE_CPUS", target.cpus_per_node)] if target.cpus_per_node
            else ['NODE_CPUS="${NODE_CPUS:-}"  # empty: Ray counts the node\'s CPUs (verl needs '
                  f'{need} on each node, and {need + transfer_queue_cpus(8)} on the head)'])
    return [env_default("HEAD_PORT", target.port), env_default("NODE_GPUS", target.gpus_per_node), *cpus]


def render_ray_head(job: ClusterJob, target: ClusterTarget) -> str:
    workers = target.nodes - 1
    lines = script_header(job.plan, "Ray head node", target) + [
        "# Start it first, on the head node. It stays in the foreground (--block); Ctrl-C stops Ray on this node",
        "# (`ray stop` ends Ray's processes but leaves `ray start --block` waiting for that signal):",
        "#   bash ray-head.sh [more ray start options, e.g. --node-ip-address=10.0.0.1]",
        (f"# then `bash ray-worker.sh` on each of the {workers} other node(s), then `bash submit.sh`."
         if workers else "# then `bash submit.sh` (one node: no workers to start)."),
        "# The dashboard port takes jobs from anyone who reaches it: keep it on a private network (or set",
        "# DASHBOARD_HOST=127.0.0.1 and reach it through an SSH tunnel).",
        "set -euo pipefail",
        *_node_lines(target),
        env_default("DASHBOARD_HOST", target.dashboard_host),
        env_default("DASHBOARD_PORT", target.dashboard_port),
        *env_lines(job, target),
        *_ray_start_args(head=True),
    ]
    return "\n".join(lines) + "\n"


def render_ray_worker(job: ClusterJob, target: ClusterTarget) -> str:
    lines = script_header(job.plan, "Ray worker node", target) + [
        f"# Start it on each of the {target.nodes - 1} node(s) other than the head, after ray-head.sh; it stays in",
        "# the foreground (--block) and Ctrl-C stops Ray on this node:",
        "#   bash ray-worker.sh [more ray start options]",
        "set -euo pipefail",
        *_head_address_lines(target),
        *_node_lines(target),
        *env_lines(job, target),
        *_ray_start_args(head=False),
    ]
    return "\n".join(lines) + "\n"


def submission_prefix(plan: Plan) -> str:
    base = re.sub(r"[^A-Za-z0-9_-]+", "-", plan.name or "run").strip("-") or "run"
    return f"verl-{base[:40]}"


def render_submit(job: ClusterJob, target: ClusterTarget) -> str:
    lines = script_header(job.plan, "`ray job submit` of the training", target) + [
        "# Run it where Python imports Ray (`ray[default]`; PYTHON picks the interpreter, python3 by default) and the",
        "# head's dashboard port can be reached:",
        "#   bash submit.sh [more Hydra overrides]",
        "# runtime_env.yaml (next to this script) names the folder uploaded as the job's working directory.",
        "# Follow the logs:  ray job logs -f --address http://HEAD:DASHBOARD_PORT SUBMISSION_ID",
        "# Stop the run:     ray job stop --address http://HEAD:DASHBOARD_PORT SUBMISSION_ID",
        "set -euo pipefail",
        'HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"',
        *_head_address_lines(target),
        env_default("DASHBOARD_PORT", target.dashboard_port),
        f'[ -n "${{SUBMISSION_ID:-}}" ] || SUBMISSION_ID="{submission_prefix(job.plan)}-$(date +%Y%m%d-%H%M%S)"',
        'JOB_ADDRESS="http://${HEAD_ADDRESS}:${DASHBOARD_PORT}"',
        *env_checks(job),
        "",
    ]
    lines += [
        "# Submitted through Ray's SDK, the command quoted for the head's shell: `ray job submit -- WORDS` joined the",
        "# words unquoted until ray-project/ray#63797 (June 2026: subprocess.list2cmdline), so that shell expanded a",
        "# $, a backtick or a space in a value a second time.",
    ]
    submit = ['"${PYTHON:-python3}" - "$JOB_ADDRESS" "$SUBMISSION_ID" "$HERE/runtime_env.yaml"', *entry_words(job),
              "\"$@\" <<'PY'"]
    lines.append(" \\\n    ".join(submit))
    lines += [
        "import shlex, sys",
        "import yaml",
        "from ray.job_submission import JobSubmissionClient",
        "address, submission_id, env_file, *words = sys.argv[1:]",
        "import os",
        "with open(env_file) as f:",
        "    runtime_env = yaml.safe_load(f)",
        "folder = runtime_env.get('working_dir')",
        "if folder and '://' not in folder and not os.path.isabs(folder):  # relative to runtime_env.yaml's folder",
        "    runtime_env['working_dir'] = os.path.normpath(os.path.join(os.path.dirname(env_file), folder))",
        "JobSubmissionClient(address).submit_job(entrypoint=shlex.join(words), submission_id=submission_id,",
        "                                        runtime_env=runtime_env)",
        "PY",
    ]
    lines += ['echo "Submitted $SUBMISSION_ID to $JOB_ADDRESS"',
              'echo "Follow its logs: ray job logs -f --address $JOB_ADDRESS $SUBMISSION_ID"',
              'echo "Stop it:         ray job stop --address $JOB_ADDRESS $SUBMISSION_ID"']
    return "\n".join(lines) + "\n"


def render_runtime_env(job: ClusterJob, target: ClusterTarget) -> str:
    head = [f"# Ray runtime environment of the verl run {job.plan.name!r}, written by verl-wizard {__version__}.",
            "# working_dir (relative to this file's folder: submit.sh resolves it) is uploaded with the job (Ray",
            "# caps the upload near 500 MiB): model weights, checkpoints and logs are excluded (they belong on",
            "# storage every node reads), and so is whatever may hold a credential (launch scripts, env and key",
            "# files, backups). Python packages come from the nodes' own environment or image (verl 0.9.1",
            "# installed there), so there is no pip section."]
    return "\n".join(head) + "\n" + to_yaml(runtime_env(job, target))
