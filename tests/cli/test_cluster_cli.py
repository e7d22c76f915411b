"""``verl-wizard cluster``: what it writes for each target, the check for the cluster's shape before writing, backups,
and one-line refusals of bad input."""

import json
import os
import stat

import pytest
import yaml


def cli(argv, capsys):
    from wizard import cli as wcli

    code = wcli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


ALL = {"ray-head.sh", "ray-worker.sh", "submit.sh", "runtime_env.yaml", "slurm.sbatch", "kuberay-rayjob.yaml"}


def test_writes_every_target_for_a_preset_and_says_what_to_run(capsys, tmp_path):
    out_dir = tmp_path / "cluster"
    code, out, err = cli(["cluster", "grpo-2node", "--out", str(out_dir), "--head-address", "10.0.0.7"], capsys)
    assert code == 0 and err == ""
    assert {p.name for p in out_dir.iterdir()} == ALL
    for name in ("ray-head.sh", "ray-worker.sh", "submit.sh", "slurm.sbatch"):
        assert (out_dir / name).stat().st_mode & stat.S_IXUSR, name
    assert not (out_dir / "kuberay-rayjob.yaml").stat().st_mode & stat.S_IXUSR
    assert f"wrote {out_dir / 'submit.sh'}" in out
    assert f"on the head node: bash {out_dir / 'ray-head.sh'}" in out
    assert f"sbatch {out_dir / 'slurm.sbatch'}" in out and f"kubectl apply -f {out_dir / 'kuberay-rayjob.yaml'}" in out
    assert "note: trainer.default_local_dir is" in out  # the preset saves checkpoints under a relative folder
    assert 'HEAD_ADDRESS=10.0.0.7' in (out_dir / "submit.sh").read_text()
    # the working_dir is where the command ran, relative to the material's folder (which submit.sh resolves): the
    # project and the folder move together to a login node, where this machine's path would not exist
    written = yaml.safe_load((out_dir / "runtime_env.yaml").read_text())["working_dir"]
    assert not os.path.isabs(written) and os.path.normpath(out_dir / written) == os.getcwd()


@pytest.mark.parametrize("target,files", [
    ("ray", {"ray-head.sh", "ray-worker.sh", "submit.sh", "runtime_env.yaml"}),
    ("slurm", {"slurm.sbatch"}),
    ("kuberay", {"kuberay-rayjob.yaml"}),
])
def test_one_target_writes_only_its_files(capsys, tmp_path, target, files):
    code, out, _ = cli(["cluster", "grpo-2node", "--target", target, "--out", str(tmp_path)], capsys)
    assert code == 0 and {p.name for p in tmp_path.iterdir()} == files


def test_json_gives_the_job_overrides_with_the_cluster_shape(capsys, tmp_path):
    # the 1-GPU preset's micro batches (16 and 8) are more than each of 8 GPUs gets (8 and 4): smaller ones
    micro = ["--set", "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=8", "--set",
             "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=8", "--set",
             "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=4"]
    code, out, _ = cli(["cluster", "grpo-1gpu-smoke", "--nodes", "2", "--gpus-per-node", "4", "--cpus-per-node", "32",
                        "--out", str(tmp_path), "--format", "json", *micro], capsys)
    doc = json.loads(out)
    request = doc["target"].pop("memory_request")  # KubeRay's pods: the estimate's node peaks, whole GiB
    assert code == 0 and doc["ok"] and doc["target"] == {"nodes": 2, "gpus_per_node": 4, "cpus_per_node": 32,
                                                         "head_address": None}
    assert all(r.endswith("Gi") and int(r[:-2]) > 0 for r in (request["head"], request["worker"]))
    assert "trainer.nnodes=2" in doc["overrides"] and "trainer.n_gpus_per_node=4" in doc["overrides"]
    assert doc["dropped"] == ["ray_kwargs.ray_init.num_cpus=16"]
    assert sorted(os.path.basename(f) for f in doc["files"]) == sorted(ALL)


def test_the_plan_is_checked_for_the_cluster_s_shape_and_errors_write_nothing(capsys, tmp_path):
    # 16 prompts x 4 responses = 64 rollouts do not split over 3 x 7 GPUs
    argv = ["cluster", "grpo-1gpu-smoke", "--nodes", "3", "--gpus-per-node", "7", "--out", str(tmp_path / "c")]
    code, out, _ = cli(argv, capsys)
    assert code == 1 and "batch.real_train_batch_size" in out and "21 GPUs" in out
    assert "Nothing written" in out and not (tmp_path / "c").exists()
    code, out, _ = cli(argv + ["--force"], capsys)
    assert code == 1 and (tmp_path / "c" / "submit.sh").exists()


def test_the_cluster_s_cpus_are_checked_against_verl_s_need(capsys, tmp_path):
    code, out, _ = cli(["cluster", "grpo-8gpu", "--cpus-per-node", "4", "--out", str(tmp_path)], capsys)
    assert code == 1 and "ray.transfer_queue_cpus" in out and "The Ray cluster has 4 CPUs" in out


def test_a_cluster_spec_gives_the_shape(capsys, tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text("cluster: 4x8xH100-80GB nvlink\n")
    # on 32 GPUs each gets 1280 / 32 = 40 sequences of an update: the preset's micro batch of 16 does not divide them
    code, out, _ = cli(["cluster", "grpo-8gpu", "--cluster", str(spec), "--out", str(tmp_path / "c"), "--format", "json",
                        "--set", "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["target"]["nodes"] == 4 and doc["target"]["gpus_per_node"] == 8
    sbatch = (tmp_path / "c" / "slurm.sbatch").read_text()
    assert "#SBATCH --nodes=4" in sbatch and "H100-80GB" in sbatch


def test_a_run_sh_and_its_plan_json_give_the_same_cluster_job(capsys, tmp_path):
    from wizard.usecases.plans import preset_plan
    from wizard.usecases.writing import write_plan_files

    write_plan_files(preset_plan("grpo-2node"), tmp_path / "src")
    jobs = {}
    for name in ("run.sh", "plan.json"):
        code, out, _ = cli(["cluster", str(tmp_path / "src" / name), "--out", str(tmp_path / name),
                            "--format", "json"], capsys)
        assert code == 0
        jobs[name] = json.loads(out)["overrides"]
    assert jobs["run.sh"] == jobs["plan.json"]


def test_writing_again_keeps_the_earlier_files_as_backups(capsys, tmp_path):
    cli(["cluster", "grpo-2node", "--target", "ray", "--out", str(tmp_path)], capsys)
    code, out, _ = cli(["cluster", "grpo-2node", "--target", "ray", "--nodes", "4", "--out", str(tmp_path)], capsys)
    assert code == 0 and "kept the previous file as" in out
    backups = [p for p in tmp_path.iterdir() if p.name.startswith("submit.sh.") and p.name.endswith(".bak")]
    assert len(backups) == 1 and "trainer.nnodes='2'" in backups[0].read_text()
    assert "trainer.nnodes='4'" in (tmp_path / "submit.sh").read_text()


@pytest.mark.parametrize("extra,message", [
    (["nope"], "'nope' is neither a file nor a preset"),
    (["/no/such/plan.json"], "no such file"),
    (["grpo-2node", "--nodes", "0"], "--nodes must be 1 or more"),
    (["grpo-2node", "--gpus-per-node", "-1"], "--gpus-per-node must be 1 or more"),
    (["grpo-2node", "--head-address", "10.0.0.1; reboot"], "use a host name or an IPv4 address"),
    (["grpo-2node", "--port", "70000"], "port must be 65535 or less"),
    (["grpo-2node", "--target", "aws"], "invalid choice"),
    (["grpo-2node", "--set", "a=[1,"], "--set:"),
    (["grpo-2node", "--cluster", "/no/such/spec.yaml"], "no such file"),
    (["grpo-2node", "--working-dir", "/no/such/dir"], "--working-dir /no/such/dir: no such folder"),
])
def test_bad_input_is_one_line_and_exit_2(capsys, tmp_path, extra, message):
    code, out, err = cli(["cluster", *extra, "--out", str(tmp_path / "c")], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err, err
    assert "Traceback" not in err and not (tmp_path / "c").exists()


def test_an_out_path_that_is_a_file_is_refused(capsys, tmp_path):
    (tmp_path / "c").write_text("mine")
    code, out, err = cli(["cluster", "grpo-2node", "--out", str(tmp_path / "c")], capsys)
    assert code == 2 and "it is a file, not a folder" in err and (tmp_path / "c").read_text() == "mine"


def test_a_variable_the_overrides_read_is_checked_before_the_cluster_comes_up(capsys, tmp_path):
    from tests.core.test_cluster_launch import run_stubbed

    script = tmp_path / "run.sh"
    script.write_text(
        "python3 -m verl.trainer.main_ppo algorithm.adv_estimator=grpo actor_rollout_ref.model.path=$MODEL_PATH "
        "trainer.project_name='${oc.env:PROJECT}' "
        "actor_rollout_ref.rollout.name=vllm trainer.n_gpus_per_node=8 trainer.nnodes=2 data.train_batch_size=64 "
        "actor_rollout_ref.actor.ppo_mini_batch_size=16 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=2 "
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=2 "
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=2\n")
    out = tmp_path / "c"
    code, _out, _err = cli(["cluster", str(script), "--out", str(out), "--force"], capsys)
    assert code in (0, 1) and (out / "slurm.sbatch").exists()
    for name in ("slurm.sbatch", "submit.sh"):
        proc, calls = run_stubbed(tmp_path, str(out / name), env={"HEAD_ADDRESS": "10.0.0.7"})
        # under set -u it failed at the driver's line, after Ray had come up on every node
        assert proc.returncode == 1 and "set MODEL_PATH, which the overrides read" in proc.stderr, name
        assert calls == [], name  # nothing started
        # ${oc.env:PROJECT} is read by verl where its driver runs: slurm.sbatch's own environment, checked there;
        # the head's for submit.sh, which cannot check it (ray-head.sh says to export it)
        here = {"HEAD_ADDRESS": "10.0.0.7", "MODEL_PATH": "/m"} | ({"PROJECT": "p"} if name == "slurm.sbatch" else {})
        proc, calls = run_stubbed(tmp_path, str(out / name), env=here)
        assert proc.returncode == 0, (name, proc.stderr)
    assert "export" in (out / "ray-head.sh").read_text() and "PROJECT" in (out / "ray-head.sh").read_text()


def test_a_preset_named_like_the_output_folder_and_printed_paths_to_paste(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for _ in range(2):  # the second time a folder grpo-8gpu is there: it was read as the plan ("is a directory")
        code, out, _err = cli(["cluster", "grpo-8gpu", "--out", "grpo-8gpu"], capsys)
        assert code == 0, out
    odd = tmp_path / "we ird $x"
    code, out, _err = cli(["cluster", "grpo-2node", "--out", str(odd)], capsys)
    assert code == 0 and f"sbatch '{odd / 'slurm.sbatch'}'" in out  # quoted: pasted, it names the file


def test_kuberays_pods_request_the_host_ram_the_plan_needs_a_node(capsys, tmp_path):
    """A pod with no memory request is scheduled onto any node with free GPUs, and verl's offload and vLLM's
    sleeping weights then find too little RAM an hour in (Ray's monitor kills workers at 95 % of it): the head's pod
    requests the head node's peak by the memory estimate (the figures `plan` prints), the workers' pods the workers'
    (the head holds the driver and rank 0's read of the model), and no limit is set."""
    import math

    from wizard.usecases.assessment import assess
    from wizard.usecases.hardware import read_gpu_spec
    from wizard.usecases.plans import preset_plan
    from wizard.core.cluster_launch import render_cluster, target_for

    plan = preset_plan("grpo-2node")
    job = render_cluster(plan, target_for(plan), ("kuberay",)).job
    host = assess(job.overrides, gpus=read_gpu_spec("2x8xH100-80GB"), advise=False).memory.report.host
    head, worker = (f"{math.ceil(h.total / 2**30)}Gi" for h in host)
    assert head != worker  # the test's point: each group its own
    code, out, err = cli(["cluster", "grpo-2node", "--target", "kuberay", "--out", str(tmp_path)], capsys)
    assert code == 0, err
    assert f"note: kuberay-rayjob.yaml: the head pod requests {head} of memory, each worker pod {worker}" in out
    text = (tmp_path / "kuberay-rayjob.yaml").read_text()
    cluster = yaml.safe_load(text)["spec"]["rayClusterSpec"]
    for pod, want in ((cluster["headGroupSpec"], head), (cluster["workerGroupSpecs"][0], worker)):
        resources = pod["template"]["spec"]["containers"][0]["resources"]
        assert resources["requests"]["memory"] == want and "memory" not in resources["limits"]
    assert f"# The head pod requests {head} of memory" in text
    code, out, _ = cli(["cluster", "grpo-2node", "--target", "slurm", "--out", str(tmp_path / "s"), "--format",
                        "json"], capsys)
    assert json.loads(out)["target"]["memory_request"] == {"head": head, "worker": worker}  # whatever is written


def test_a_rayjob_whose_host_ram_was_not_estimated_says_why(capsys, tmp_path):
    code, out, err = cli(["cluster", "grpo-2node", "--target", "kuberay", "--out", str(tmp_path), "--force", "--set",
                          "actor_rollout_ref.model.path=/nonexistent/mymodel"], capsys)
    text = (tmp_path / "kuberay-rayjob.yaml").read_text()
    line = next(x for x in text.splitlines() if x.startswith("# No memory request"))
    assert "the actor's model is unknown" in line and "name the GPU model" not in line
    assert "memory:" not in text.split("\napiVersion")[1].replace("object_store_memory", "")
