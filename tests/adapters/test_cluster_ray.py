"""The generated Ray cluster material against a real Ray head on loopback: ``ray-head.sh`` starts the head,
``submit.sh`` submits the real verl 0.9.1 job with ``ray job submit``, the job reaches verl and fails for want of
a GPU, the printed ``ray job logs -f`` command shows why, and ``ray stop`` leaves nothing running.

Everything runs inside a private network namespace with only loopback (``unshare -n``; also its own PID and mount
namespaces, so ``ray stop`` and /tmp/ray touch only this cluster). The material lives under paths with a space and
a ``$`` in them, so quoting is tested end to end: bash, ``ray job submit``, Ray's shell in the head, Hydra.
"""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers.netns import LOOPBACK_RAY, UNSHARE, namespaces_work

ROOT = Path(__file__).resolve().parents[2]
VENV_BIN = Path(sys.executable).parent

DRIVER = textwrap.dedent("""
    import json, os, re, signal, subprocess, sys, time, urllib.request
    # Ctrl-C as a user's terminal delivers it: a harness started in the background (`nohup ... &`) ignores SIGINT
    # and every child inherits that, so `ray start --block` would never see the Ctrl-C this driver sends it
    signal.signal(signal.SIGINT, signal.default_int_handler)
    material, out = sys.argv[1], sys.argv[2]
    doc = {"t": {}}
    t0 = time.monotonic()
    def mark(name):
        doc["t"][name] = round(time.monotonic() - t0, 1)
    def alive():
        out = []
        for pid in os.listdir("/proc"):
            if pid.isdigit() and int(pid) != os.getpid():
                try:
                    stat = open(f"/proc/{pid}/stat").read()
                    cmd = open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\\0", b" ").decode()
                except OSError:
                    continue
                if stat[stat.rfind(")") + 2] != "Z":
                    out.append(cmd.strip())
        return out
    def run(argv, **kw):
        return subprocess.run(argv, capture_output=True, text=True, timeout=240, **kw)
    # the head exactly as a user starts it, with this machine's truth: no GPU (NODE_GPUS=0) and loopback only
    env = dict(os.environ, NODE_GPUS="0", DASHBOARD_HOST="127.0.0.1")
    head = subprocess.Popen(["bash", os.path.join(material, "ray-head.sh"), "--node-ip-address=127.0.0.1"],
                            env=env, stdout=open(os.path.join(out, "head.log"), "w"), stderr=subprocess.STDOUT)
    try:
        for _ in range(240):  # the job API answers once the dashboard is up
            try:
                urllib.request.urlopen("http://127.0.0.1:8265/api/version", timeout=2).read()
                break
            except OSError:
                if head.poll() is not None:
                    break
                time.sleep(0.5)
        mark("head_up")
        sub = run(["bash", os.path.join(material, "submit.sh")], cwd=out)
        doc["submit"] = {"rc": sub.returncode, "out": sub.stdout, "err": sub.stderr[-3000:]}
        mark("submitted")
        follow = re.search(r"^Follow its logs: (.*)$", sub.stdout, re.M)
        if follow:  # the command submit.sh printed, run as printed
            logs = run(follow.group(1).split())
            doc["logs"] = logs.stdout + logs.stderr
            mark("job_ended")
        doc["stop_rc"] = run(["ray", "stop"]).returncode
        mark("ray_stop")
        time.sleep(1)
        doc["after_ray_stop"] = alive()
        head.send_signal(signal.SIGINT)  # Ctrl-C in the head's terminal: `ray start --block` waits for a signal
        doc["head_rc"] = head.wait(timeout=240)  # a guard, not a timing
        mark("stopped")
    finally:
        if head.poll() is None:
            head.kill()
    time.sleep(1)
    doc["left"] = alive()
    print(json.dumps(doc))
""")


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.verl
def test_generated_scripts_run_a_real_verl_job_on_a_loopback_ray_cluster(tmp_path, tiny_model):
    pytest.importorskip("ray")
    why = namespaces_work()
    if why:
        pytest.skip(f"{why}; a Ray cluster never starts outside a loopback-only namespace")
    from tests.helpers.tiny_data import write_gsm8k_like
    from wizard.adapters.files.cluster_files import write_cluster_files
    from wizard.usecases.plans import preset_plan
    from wizard.core.cluster_launch.job import target_for
    from wizard.core.cluster_launch.material import render_cluster

    data = tmp_path / "data $x dir"
    data.mkdir()
    work = tmp_path / "work dir $x"
    work.mkdir()
    (work / "reward notes.txt").write_text("uploaded as the job's working_dir\n")
    plan = preset_plan("grpo-1gpu-smoke", sets=[
        f"actor_rollout_ref.model.path={tiny_model}",
        f"data.train_files={write_gsm8k_like(data / 'train.parquet', 32)}",
        f"data.val_files={write_gsm8k_like(data / 'test.parquet', 8)}",
        "trainer.total_training_steps=2",
    ])
    material = tmp_path / "cluster $files"
    # relative to the material's folder, as `cluster` and the GUI write it: submit.sh resolves it there
    target = target_for(plan, head_address="127.0.0.1", cpus_per_node=16, working_dir=os.path.relpath(work, material))
    write_cluster_files(render_cluster(plan, target, ("ray",)), material)
    out = tmp_path / "out"
    out.mkdir()
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)

    # RAY_AUTH_MODE=disabled: Ray 2.60 turns token auth on when ~/.ray/auth_token exists (see test_ray_cluster)
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_MODE="disabled",
               PATH=f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    env.pop("RAY_ADDRESS", None)
    shell = (LOOPBACK_RAY + " && "
             f'exec "{sys.executable}" "$0" "$1" "$2"')
    proc = subprocess.run([*UNSHARE, "bash", "-c", shell, str(driver), str(material), str(out)],
                          capture_output=True, text=True, timeout=400, env=env)
    assert proc.returncode == 0 and proc.stdout.strip(), proc.stderr[-3000:]
    doc = json.loads(proc.stdout.strip().splitlines()[-1])
    (tmp_path / "result.json").write_text(json.dumps(doc, indent=1))  # everything, for a failure's post-mortem
    print("seconds since the namespace started:", doc["t"])  # the figure for the report (-s shows it)

    assert doc["submit"]["rc"] == 0, doc["submit"]
    assert "Submitted verl-grpo-1gpu-smoke-" in doc["submit"]["out"]
    logs = doc["logs"]
    # verl got every word intact (Hydra-quoted as in run.sh): the paths with a space and a $ reached Hydra and the
    # dataset loader, and the working_dir with both was uploaded
    assert f"data.train_files='{data / 'train.parquet'}'" in logs and "dataset len: 32" in logs
    assert f"Creating a file package for local module '{work}'" in doc["submit"]["err"]
    assert "ray_init.num_cpus" not in logs  # Ray refuses num_cpus from a job that joins a running cluster
    assert "Connecting to existing Ray cluster at address: 127.0.0.1:6379" in logs
    assert "ValueError: Total available GPUs 0 is less than total desired GPUs 1" in logs
    job_id = doc["submit"]["out"].split("Submitted ")[1].split()[0]
    assert f"Job '{job_id}' failed" in logs  # `ray job logs -f` followed it to the end
    # `ray stop` ends every Ray process; only the head script's `ray start --block` waits for its signal
    assert doc["stop_rc"] == 0 and len(doc["after_ray_stop"]) == 1, doc["after_ray_stop"]
    assert "ray start --head" in doc["after_ray_stop"][0] and "--block" in doc["after_ray_stop"][0]
    assert doc["left"] == []  # and after it, nothing of the cluster is left
