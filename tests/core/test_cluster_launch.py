"""Cluster launch material: what each script really runs (real bash, with ``ray``, ``srun``, ``scontrol`` and
``python3`` stubbed by scripts that record their argv), the job's overrides against run.sh's, quoting of paths
with spaces, quotes and ``$``, secrets, and the KubeRay RayJob against KubeRay's own CRD schema."""

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.helpers.bash_argv import FAKE_HOME, bash_argv
from wizard.usecases.plans import preset_plan
from wizard.core.hardware.cluster import Cluster, ClusterNode
from wizard.core.cluster_launch.job import LOCAL_RAY_KEYS, SHAPE_KEYS, ClusterTarget, cluster_job, target_for
from wizard.core.cluster_launch.material import render_cluster
from wizard.core.cluster_launch.schedulers import rayjob_name
from wizard.core.plan.emit import render_run_sh
from wizard.core.plan.convert import apply_overrides, plan_from_overrides

DATA = Path(__file__).resolve().parents[1] / "data"
# `ray status` of a real Ray 2.60 head started with --num-cpus=16 --num-gpus=2 (the lines the SLURM wait reads)
RAY_STATUS = """======== Autoscaler status: 2026-12-02 16:13:39.599019 ========
Node status
---------------------------------------------------------------
Active:
 1 node_004124426f88c4a215fe40e68ff01cddb7e9a144ad185e14038d4114
Pending:
 (no pending nodes)
Recent failures:
 (no failures)

Resources
---------------------------------------------------------------
Total Usage:
 0.0/16.0 CPU
 0.0/{gpus}.0 GPU
 0B/15.55GiB memory
 0B/6.66GiB object_store_memory
"""

STUB = r"""#!/bin/bash
# one file per call (background calls run at once), named so that a listing sorts them by time
printf '%s\0' "$(basename "$0")" "${RAY_ADDRESS-}" "${PYTHONUNBUFFERED-}" "${SRUN_CPUS_PER_TASK-}" "$@" \
  > "$(mktemp "$STUB_LOG/$(date +%s%N).XXXX")"
case "$(basename "$0") $*" in
  "scontrol show hostnames"*) printf '%s\n' $STUB_NODES ;;
  "srun "*"hostname --ip-address"*) echo "$STUB_HEAD_IP" ;;
  *"ray status"*) cat "$STUB_RAY_STATUS" ;;
esac
exit 0
"""


def run_stubbed(tmp_path: Path, script: str, args=(), env=None, nodes=("node-a", "node-b"), gpus=16):
    """Run ``script`` under real bash with the cluster commands stubbed: (the finished process, its calls), each
    call being {"cmd", "RAY_ADDRESS", "PYTHONUNBUFFERED", "SRUN_CPUS_PER_TASK", "argv"}."""
    stubs = tmp_path / "stub-bin"
    stubs.mkdir(exist_ok=True)
    for name in ("ray", "srun", "scontrol", "python3"):
        (stubs / name).write_text(STUB)
        (stubs / name).chmod(0o755)
    log = tmp_path / "calls"
    shutil.rmtree(log, ignore_errors=True)
    log.mkdir()
    status = tmp_path / "ray-status.txt"
    status.write_text(RAY_STATUS.format(gpus=gpus))
    run_env = {"PATH": f"{stubs}:/usr/bin:/bin", "HOME": FAKE_HOME, "STUB_LOG": str(log),
               "STUB_NODES": " ".join(nodes), "STUB_HEAD_IP": "10.1.2.3", "STUB_RAY_STATUS": str(status),
               "SLURM_JOB_NODELIST": "node-[a-b]", "SLURM_CPUS_PER_TASK": "32", **(env or {})}
    proc = subprocess.run(["/bin/bash", script, *args], env=run_env, cwd=tmp_path, capture_output=True, text=True,
                          timeout=60, stdin=subprocess.DEVNULL)
    calls = []
    for path in sorted(log.iterdir()):
        cmd, ray_address, unbuffered, cpus, *argv = [f.decode() for f in path.read_bytes().split(b"\x00")[:-1]]
        calls.append({"cmd": cmd, "RAY_ADDRESS": ray_address, "PYTHONUNBUFFERED": unbuffered,
                      "SRUN_CPUS_PER_TASK": cpus, "argv": argv})
    return proc, calls


def write(tmp_path: Path, plan, target, targets=("ray", "slurm", "kuberay")) -> Path:
    out = tmp_path / "material"
    out.mkdir(exist_ok=True)
    material = render_cluster(plan, target, targets)
    for name, text in material.files.items():
        (out / name).write_text(text)
    return out


def verl_words(argv: list[str]) -> list[str]:
    """The words after ``python3 -m verl.trainer.main_ppo`` in a recorded argv."""
    i = argv.index("verl.trainer.main_ppo")
    assert argv[i - 2 : i] == ["python3", "-m"]
    return argv[i + 1 :]


def without(words: list[str], keys) -> list[str]:
    return [w for w in words if w.split("=", 1)[0].lstrip("+") not in keys]


def test_the_ray_job_gets_run_sh_s_overrides_except_the_shape(tmp_path):
    plan = preset_plan("grpo-1gpu-smoke")  # reads $HOME, sets ray_kwargs.ray_init.num_cpus=16 for a local Ray
    local = bash_argv(render_run_sh(plan))
    out = write(tmp_path, plan, target_for(plan, nodes=2, gpus_per_node=4, head_address="10.0.0.7"), ("ray",))
    proc, calls = run_stubbed(tmp_path, str(out / "submit.sh"), ["trainer.total_training_steps=3"])
    assert proc.returncode == 0, proc.stderr
    (submit,) = calls
    # through Ray's SDK (the CLI joined the words unquoted before ray-project/ray#63797): address, id, runtime env,
    # then the command's words, which the script quotes for the head's shell
    assert submit["cmd"] == "python3" and submit["argv"][:2] == ["-", "http://10.0.0.7:8265"]
    assert submit["argv"][3:5] == [str(out / "runtime_env.yaml"), "python3"]
    job = verl_words(submit["argv"])
    assert job[-1] == "trainer.total_training_steps=3"  # more overrides pass through, last wins
    assert without(job[:-1], SHAPE_KEYS) == without(local, SHAPE_KEYS + LOCAL_RAY_KEYS)
    assert "trainer.nnodes=2" in job and "trainer.n_gpus_per_node=4" in job
    assert "ray_kwargs.ray_init.num_cpus=16" in local and not any("num_cpus" in w for w in job)
    assert f"data.train_files={FAKE_HOME}/data/gsm8k/train.parquet" in job  # $HOME read where submit.sh runs


def test_submit_prints_how_to_follow_and_stop_the_job_it_submitted(tmp_path):
    plan = preset_plan("grpo-1gpu-smoke")
    out = write(tmp_path, plan, target_for(plan, head_address="10.0.0.7"), ("ray",))
    proc, calls = run_stubbed(tmp_path, str(out / "submit.sh"), env={"SUBMISSION_ID": "verl-try-1"})
    assert proc.returncode == 0 and calls[0]["argv"][2] == "verl-try-1"
    assert "Follow its logs: ray job logs -f --address http://10.0.0.7:8265 verl-try-1" in proc.stdout
    assert "Stop it:         ray job stop --address http://10.0.0.7:8265 verl-try-1" in proc.stdout
    proc, calls = run_stubbed(tmp_path, str(out / "submit.sh"))
    assert calls[0]["argv"][2].startswith("verl-grpo-1gpu-smoke-2")  # a fresh id per submission


def test_head_and_worker_scripts_start_ray_with_the_plan_s_shape(tmp_path):
    plan = preset_plan("grpo-2node")
    out = write(tmp_path, plan, target_for(plan, head_address="10.0.0.7", cpus_per_node=32), ("ray",))
    proc, calls = run_stubbed(tmp_path, str(out / "ray-head.sh"), ["--node-ip-address=10.0.0.7"])
    assert proc.returncode == 0, proc.stderr
    assert calls[0]["cmd"] == "ray" and calls[0]["argv"] == [
        "start", "--head", "--port=6379", "--dashboard-host=0.0.0.0", "--dashboard-port=8265", "--num-gpus=8",
        "--num-cpus=32", "--block", "--node-ip-address=10.0.0.7"]
    proc, calls = run_stubbed(tmp_path, str(out / "ray-worker.sh"), env={"NODE_GPUS": "4", "HEAD_PORT": "7000"})
    assert proc.returncode == 0, proc.stderr
    assert calls[0]["argv"] == ["start", "--address=10.0.0.7:7000", "--num-gpus=4", "--num-cpus=32", "--block"]


def test_without_a_head_address_the_worker_asks_for_it_and_starts_nothing(tmp_path):
    plan = preset_plan("grpo-2node")
    out = write(tmp_path, plan, target_for(plan), ("ray",))
    proc, calls = run_stubbed(tmp_path, str(out / "ray-worker.sh"))
    assert proc.returncode != 0 and calls == [] and "set HEAD_ADDRESS to the address of the node that runs ray-head.sh" in proc.stderr
    proc, calls = run_stubbed(tmp_path, str(out / "ray-worker.sh"), env={"HEAD_ADDRESS": "head-0"})
    assert proc.returncode == 0 and calls[0]["argv"][:2] == ["start", "--address=head-0:6379"]
    assert not any(a.startswith("--num-cpus") for a in calls[0]["argv"])  # CPUs not given: Ray counts them


def test_one_node_needs_no_worker_script(tmp_path):
    plan = preset_plan("grpo-1gpu-smoke")
    material = render_cluster(plan, target_for(plan), ("ray",))
    assert set(material.files) == {"ray-head.sh", "submit.sh", "runtime_env.yaml"}
    assert material.executable == ["ray-head.sh", "submit.sh"]


def test_paths_with_spaces_quotes_and_dollars_reach_verl_unchanged(tmp_path):
    odd = "/data/my runs/it's $x `x` \"q\"/train.parquet"
    plan = preset_plan("grpo-8gpu")
    plan.data.train_files = plan.trainer.experiment_name = odd
    work = str(tmp_path / "work dir $x")
    target = target_for(plan, head_address="10.0.0.7", working_dir=work)
    out = write(tmp_path, plan, target)
    local = bash_argv(render_run_sh(plan))
    proc, calls = run_stubbed(tmp_path, str(out / "submit.sh"))
    assert proc.returncode == 0, proc.stderr
    job = verl_words(calls[0]["argv"])
    assert without(job, SHAPE_KEYS) == without(local, SHAPE_KEYS + LOCAL_RAY_KEYS)
    assert any("my runs/it" in w and "$x `x`" in w for w in job)  # nothing expanded, nothing lost
    assert yaml.safe_load((out / "runtime_env.yaml").read_text())["working_dir"] == work
    proc, calls = run_stubbed(tmp_path, str(out / "slurm.sbatch"))
    assert proc.returncode == 0, proc.stderr
    (driver,) = [c for c in calls if "verl.trainer.main_ppo" in c["argv"]]  # background calls log in any order
    assert without(verl_words(driver["argv"]), SHAPE_KEYS) == without(local, SHAPE_KEYS + LOCAL_RAY_KEYS)
    entry = yaml.safe_load((out / "kuberay-rayjob.yaml").read_text())["spec"]["entrypoint"]
    resolved = resolve_oc_env(shlex.split(entry)[3:], {"HOME": FAKE_HOME})
    assert without(resolved, SHAPE_KEYS) == without(local, SHAPE_KEYS + LOCAL_RAY_KEYS)


def test_slurm_starts_ray_on_every_node_waits_for_the_gpus_then_runs_verl_on_the_head(tmp_path):
    plan = preset_plan("grpo-2node")
    local = bash_argv(render_run_sh(plan))
    out = write(tmp_path, plan, target_for(plan, nodes=3, gpus_per_node=8), ("slurm",))
    text = (out / "slurm.sbatch").read_text()
    assert "#SBATCH --nodes=3" in text and "#SBATCH --gpus-per-node=8" in text and "#SBATCH --cpus-per-task=64" in text
    proc, calls = run_stubbed(tmp_path, str(out / "slurm.sbatch"), ["trainer.total_epochs=1"],
                                   nodes=("node-a", "node-b", "node-c"), gpus=24)
    assert proc.returncode == 0, proc.stderr
    sruns = [c["argv"] for c in calls if c["cmd"] == "srun"]
    assert sruns[0] == ["--nodes=1", "--ntasks=1", "-w", "node-a", "hostname", "--ip-address"]
    starts = sorted((a for a in sruns if "start" in a), key=lambda a: "--head" not in a)
    assert starts[0][3:] == ["node-a", "ray", "start", "--head", "--node-ip-address=10.1.2.3", "--port=6379",
                             "--num-cpus=32", "--num-gpus=8", "--block"]
    # a worker on each other node (verl's example keeps the node list in one string: its workers never start), in
    # one step, once the head answers (ray start --address gives up after about 20 s)
    (workers,) = starts[1:]
    assert workers[:5] == ["--nodes=2", "--ntasks=2", "--ntasks-per-node=1", "--exclude=node-a", "ray"]
    assert "--address=10.1.2.3:6379" in workers and "--num-cpus=32" in workers
    first_status = next(i for i, a in enumerate(sruns) if "status" in a)
    assert first_status < sruns.index(workers)
    # every step gets the job's CPUs: since Slurm 22.05 srun does not inherit --cpus-per-task
    assert "#SBATCH --mem=0" in text
    assert {c["SRUN_CPUS_PER_TASK"] for c in calls if c["cmd"] == "srun"} == {"32"}
    (driver,) = [c for c in calls if "verl.trainer.main_ppo" in c["argv"]]  # background calls log in any order
    assert driver["cmd"] == "srun" and driver["argv"][:5] == ["--overlap", "--nodes=1", "--ntasks=1", "-w", "node-a"]
    assert driver["RAY_ADDRESS"] == "10.1.2.3:6379" and driver["PYTHONUNBUFFERED"] == "1"
    job = verl_words(driver["argv"])
    assert job[-1] == "trainer.total_epochs=1"
    assert without(job[:-1], SHAPE_KEYS) == without(local, SHAPE_KEYS + LOCAL_RAY_KEYS)
    assert "trainer.nnodes=3" in job


def test_slurm_gives_up_when_ray_never_offers_the_gpus(tmp_path):
    plan = preset_plan("grpo-8gpu")
    out = write(tmp_path, plan, target_for(plan), ("slurm",))
    text = (out / "slurm.sbatch").read_text().replace("seq 1 120", "seq 1 2").replace("sleep 5", "sleep 0")
    (out / "slurm.sbatch").write_text(text)  # the same loop, shortened for the test
    proc, calls = run_stubbed(tmp_path, str(out / "slurm.sbatch"), gpus=4, nodes=("node-a",))
    assert proc.returncode == 1 and "Ray did not offer 8 GPUs" in proc.stderr
    assert not any("verl.trainer.main_ppo" in c["argv"] for c in calls)


def test_a_container_prefix_wraps_every_srun(tmp_path):
    plan = preset_plan("grpo-2node")
    out = write(tmp_path, plan, target_for(plan, nodes=2, gpus_per_node=8), ("slurm",))
    prefix = "apptainer run --nv --bind /data /images/verl-0.9.1.sif"  # split at spaces, like a command line
    proc, calls = run_stubbed(tmp_path, str(out / "slurm.sbatch"), env={"CONTAINER": prefix}, gpus=16)
    assert proc.returncode == 0, proc.stderr
    launches = [c["argv"] for c in calls if c["cmd"] == "srun" and "hostname" not in c["argv"]]
    # the head, its first answer, the workers, the GPU wait, the driver
    assert sum("start" in a for a in launches) == 2 and len(launches) == 5
    for a in launches:
        at = a.index("apptainer")
        assert a[at : at + 6] == prefix.split() and a[at + 6] in ("ray", "python3"), a


def test_secrets_are_never_written_and_reach_the_nodes_from_their_environment(tmp_path):
    plan = apply_overrides(preset_plan("grpo-2node"), [
        "+ray_kwargs.ray_init.runtime_env.env_vars.WANDB_API_KEY=sk-live-123456", "trainer.logger=[console,wandb]",
        "+trainer.hub_token=hf_" + "t" * 34])
    out = write(tmp_path, plan, target_for(plan, head_address="10.0.0.7"))
    for path in out.iterdir():
        assert "sk-live-123456" not in path.read_text() and "hf_" + "t" * 34 not in path.read_text(), path.name
    assert "WANDB_API_KEY" in (out / "ray-head.sh").read_text() and "WANDB_API_KEY" in (out / "ray-worker.sh").read_text()
    proc, calls = run_stubbed(tmp_path, str(out / "submit.sh"), env={"HUB_TOKEN": "from-env"})
    argv = calls[0]["argv"]
    assert proc.returncode == 0 and "+trainer.hub_token=${oc.env:HUB_TOKEN}" in argv  # verl reads it on the head
    assert not any("from-env" in a for a in argv)  # never on a command line
    assert not any("env_vars.WANDB_API_KEY" in a for a in argv)  # the workers inherit it from their node
    job = yaml.safe_load((out / "kuberay-rayjob.yaml").read_text())
    assert "+trainer.hub_token=${oc.env:HUB_TOKEN}" in shlex.split(job["spec"]["entrypoint"])
    head = job["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert {"name": "WANDB_API_KEY", "valueFrom": {"secretKeyRef": {"name": "verl-secrets", "key": "WANDB_API_KEY"}}} \
        in head["env"]


def test_local_only_ray_init_keys_are_dropped_with_a_reason_and_the_rest_kept():
    plan = plan_from_overrides(["trainer.n_gpus_per_node=8", "ray_kwargs.ray_init.num_cpus=32",
                                "+ray_kwargs.ray_init.num_gpus=8", "+ray_kwargs.ray_init.object_store_memory=1000",
                                "+ray_kwargs.ray_init.runtime_env.env_vars.NCCL_DEBUG=INFO"])
    job = cluster_job(plan, ClusterTarget(nodes=2, gpus_per_node=8))
    assert sorted(job.dropped) == ["+ray_kwargs.ray_init.num_gpus=8", "+ray_kwargs.ray_init.object_store_memory=1000",
                                   "ray_kwargs.ray_init.num_cpus=32"]
    assert "+ray_kwargs.ray_init.runtime_env.env_vars.NCCL_DEBUG=INFO" in job.overrides
    assert not any(o.startswith(("ray_kwargs.ray_init.num", "+ray_kwargs.ray_init.num")) for o in job.overrides)
    assert any("Ray refuses it when joining a running cluster" in n for n in job.notes)
    assert "trainer.nnodes=2" in job.overrides and not any("trainer.nnodes" in n for n in job.notes)


def test_a_shape_key_the_plan_keeps_verbatim_is_replaced_not_doubled():
    plan = plan_from_overrides(["trainer.nnodes=${oc.env:NNODES}", "trainer.n_gpus_per_node=8"])
    job = cluster_job(plan, ClusterTarget(nodes=3, gpus_per_node=8))
    assert [o for o in job.overrides if o.startswith("trainer.nnodes")] == ["trainer.nnodes=3"]
    assert "trainer.nnodes=${oc.env:NNODES} is replaced by the cluster's shape" in job.notes


def test_the_shape_comes_from_flags_then_a_cluster_then_the_plan():
    plan = preset_plan("grpo-2node")  # 2 x 8 x H100-80GB
    assert (target_for(plan).nodes, target_for(plan).gpus_per_node) == (2, 8)
    cluster = Cluster(source="spec", nodes=[ClusterNode(name=f"n{i}", gpu_count=4, cpus=48) for i in range(3)])
    t = target_for(plan, cluster=cluster)
    assert (t.nodes, t.gpus_per_node, t.cpus_per_node) == (3, 4, 48)
    t = target_for(plan, nodes=5, cluster=cluster)
    assert (t.nodes, t.gpus_per_node) == (5, 4)
    with pytest.raises(ValueError, match="--gpus-per-node"):
        target_for(plan_from_overrides([]))
    with pytest.raises(ValueError, match="host name or an IPv4 address"):
        target_for(plan, head_address="10.0.0.1; rm -rf /")


def test_runtime_env_uploads_code_not_weights_or_checkpoints(tmp_path):
    plan = apply_overrides(preset_plan("grpo-2node"), ["trainer.default_local_dir=ckpts/run1"])
    material = render_cluster(plan, target_for(plan), ("ray",))
    doc = yaml.safe_load(material.files["runtime_env.yaml"])
    assert {"*.safetensors", "*.bin", "*.pt", "checkpoints/", "ckpts/", "/.git/"} <= set(doc["excludes"])
    assert doc["env_vars"] == {"PYTHONUNBUFFERED": "1", "TORCH_NCCL_AVOID_RECORD_STREAMS": "1"}
    assert "pip" not in doc
    assert any("ckpts/run1: relative" in n for n in material.notes)


# --- KubeRay --------------------------------------------------------------------------------------------------------

def strict(schema):
    """kubectl's strict field validation: an object that lists its properties allows no others."""
    if isinstance(schema, dict):
        schema = {k: strict(v) for k, v in schema.items()}
        if ("properties" in schema and "additionalProperties" not in schema
                and not schema.get("x-kubernetes-preserve-unknown-fields")):
            schema["additionalProperties"] = False
        return schema
    if isinstance(schema, list):
        return [strict(v) for v in schema]
    return schema


@pytest.fixture(scope="module")
def rayjob_validator():
    jsonschema = pytest.importorskip("jsonschema", reason="jsonschema comes with ray[default]")
    schema = strict(json.loads((DATA / "kuberay" / "ray.io_rayjobs.v1.schema.json").read_text()))
    return jsonschema.Draft7Validator(schema)


def kuberay(plan, **kw) -> dict:
    return yaml.safe_load(render_cluster(plan, target_for(plan, **kw), ("kuberay",)).files["kuberay-rayjob.yaml"])


@pytest.mark.parametrize("preset,nodes", [("grpo-1gpu-smoke", 1), ("grpo-2node", 2), ("grpo-8gpu", 4)])
def test_the_rayjob_is_valid_against_kuberay_s_crd_schema(rayjob_validator, preset, nodes):
    doc = kuberay(preset_plan(preset), nodes=nodes, image="registry.example/verl:0.9.1")
    errors = [f"{'/'.join(map(str, e.path))}: {e.message}" for e in rayjob_validator.iter_errors(doc)]
    assert errors == []
    assert doc["apiVersion"] == "ray.io/v1" and doc["kind"] == "RayJob" and doc["spec"]["shutdownAfterJobFinishes"]
    cluster = doc["spec"]["rayClusterSpec"]
    head = cluster["headGroupSpec"]["template"]["spec"]["containers"][0]
    gpus = str(preset_plan(preset).hardware.n_gpus_per_node)
    assert head["image"] == "registry.example/verl:0.9.1" and head["resources"]["limits"]["nvidia.com/gpu"] == gpus
    workers = cluster.get("workerGroupSpecs", [])
    assert sum(g["replicas"] for g in workers) == nodes - 1
    for g in workers:  # KubeRay's ValidateRayClusterSpec: min and max set when the autoscaler is off
        assert g["minReplicas"] == g["maxReplicas"] == g["replicas"]
        assert g["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == gpus
    yaml.safe_load(doc["spec"]["runtimeEnvYAML"])  # KubeRay refuses a runtimeEnvYAML that is not YAML


def test_the_schema_check_catches_a_misspelt_field(rayjob_validator):
    doc = kuberay(preset_plan("grpo-2node"))
    doc["spec"]["shutdownAfterJobFinish"] = doc["spec"].pop("shutdownAfterJobFinishes")
    doc["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["replicas"] = "one"
    messages = [e.message for e in rayjob_validator.iter_errors(doc)]
    assert any("shutdownAfterJobFinish" in m for m in messages) and any("'one' is not of type 'integer'" in m
                                                                         for m in messages)


def test_the_default_image_matches_the_rollout_engine_and_says_verl_is_not_in_it():
    doc = kuberay(preset_plan("grpo-8gpu"))
    assert doc["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] == \
        "verlai/verl:vllm024.latest"
    sglang = kuberay(apply_overrides(preset_plan("grpo-8gpu"), ["actor_rollout_ref.rollout.name=sglang"]))
    assert sglang["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["image"] == \
        "verlai/verl:sgl0512.latest"
    plan = preset_plan("grpo-8gpu")
    material = render_cluster(plan, target_for(plan), ("kuberay",))
    assert any("not verl 0.9.1 itself" in n for n in material.notes)
    assert "pip install --no-deps verl==0.9.1" in material.files["kuberay-rayjob.yaml"]


def resolve_oc_env(words: list[str], env: dict) -> list[str]:
    """Each override as verl's Hydra reads it, with ``${oc.env:NAME}`` resolved from ``env``."""
    import unittest.mock

    from omegaconf import OmegaConf

    from wizard.core.verl.overrides import parse_override

    out = []
    with unittest.mock.patch.dict(os.environ, env):
        for w in words:
            p = parse_override(w)  # Hydra's own override parser reads every word
            value = p.value()
            out.append(f"{p.key}={OmegaConf.create({'v': value}).v}" if isinstance(value, str) and "${oc.env:" in value
                       else w)
    return out


def test_the_entrypoint_is_run_sh_s_command_with_environment_references_read_by_verl():
    plan = preset_plan("grpo-8gpu")  # data under $HOME
    local = bash_argv(render_run_sh(plan))
    words = shlex.split(kuberay(plan, nodes=2)["spec"]["entrypoint"])
    assert words[:3] == ["python3", "-m", "verl.trainer.main_ppo"]
    assert "data.train_files=${oc.env:HOME}/data/gsm8k/train.parquet" in words  # read in the head pod, not the submitter
    resolved = resolve_oc_env(words[3:], {"HOME": FAKE_HOME})
    assert without(resolved, SHAPE_KEYS) == without(local, SHAPE_KEYS + LOCAL_RAY_KEYS)


@pytest.mark.parametrize("name,expected", [
    ("grpo-2node", "grpo-2node"), ("My Plan_2!", "my-plan-2"), ("2fast", "verl-2fast"), ("", "verl-job"),
    ("x" * 80, "x" * 47), ("Qwen2.5 GRPO -- run", "qwen2-5-grpo-run"),
])
def test_rayjob_names_are_dns_1035_labels_kuberay_accepts(name, expected):
    import re

    plan = plan_from_overrides(["trainer.n_gpus_per_node=8"], name=name)
    got = rayjob_name(cluster_job(plan, target_for(plan)))
    assert got == expected and len(got) <= 47 and re.fullmatch(r"[a-z]([-a-z0-9]*[a-z0-9])?", got)


def test_the_rayjob_s_ports_are_the_ones_ray_opens_and_its_command_meets_one_shell(tmp_path):
    doc = kuberay(preset_plan("grpo-2node"), nodes=2, port=7000, dashboard_port=9000)
    head = doc["spec"]["rayClusterSpec"]["headGroupSpec"]
    declared = {p["name"]: p["containerPort"] for p in head["template"]["spec"]["containers"][0]["ports"]}
    # KubeRay starts Ray on rayStartParams' ports (6379 and 8265 without them), the Service on the declared ones
    assert head["rayStartParams"]["port"] == str(declared["gcs-server"]) == "7000"
    assert head["rayStartParams"]["dashboard-port"] == str(declared["dashboard"]) == "9000"
    # the operator posts the entrypoint, which the head's sh reads once: ${oc.env:HOME} reaches verl as written
    assert doc["spec"]["submissionMode"] == "HTTPMode"
    proc = subprocess.run(["/bin/sh", "-c", "printf '%s\\n' " + doc["spec"]["entrypoint"]], capture_output=True,
                          text=True, check=True)
    assert "data.train_files=${oc.env:HOME}/data/gsm8k/train.parquet" in proc.stdout.splitlines()


def test_a_rayjob_without_a_host_estimate_requests_no_memory_and_says_to_add_it(rayjob_validator):
    from wizard.core.memory.terms import GIB

    plan = preset_plan("grpo-2node")
    bare = render_cluster(plan, target_for(plan), ("kuberay",)).files["kuberay-rayjob.yaml"]
    head = yaml.safe_load(bare)["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert "memory" not in head["resources"]["requests"] and "# No memory request:" in bare
    sized = yaml.safe_load(render_cluster(plan, target_for(plan), ("kuberay",), host_bytes=(int(100.2 * GIB), 90 * GIB))
                           .files["kuberay-rayjob.yaml"])
    assert list(rayjob_validator.iter_errors(sized)) == []
    head = sized["spec"]["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"][0]
    assert head["resources"]["requests"]["memory"] == "101Gi"  # rounded up: the scheduler needs at least that much
    worker = sized["spec"]["rayClusterSpec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"][0]
    assert worker["resources"]["requests"]["memory"] == "90Gi"
