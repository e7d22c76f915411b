"""``verl-wizard launch``: dry run, bad input, a streamed run through a stand-in Python, and a real verl 0.9.1 run
on this CPU machine until its real failure, inside a loopback-only network namespace."""

import json
import os
import signal
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
from tests.helpers.tiny_data import write_gsm8k_like  # noqa: E402
from tests.helpers.netns import LOOPBACK_RAY, UNSHARE, namespaces_work as _namespaces_work


def cli(argv, capsys):
    from wizard import cli as wcli

    code = wcli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_dry_run_prints_the_exact_command_and_environment(capsys, tmp_path):
    code, out, err = cli(["launch", "--preset", "grpo-1gpu-smoke", "--steps", "2", "--dry-run", "--out", str(tmp_path / "r")],
                         capsys)
    assert code == 0 and err == ""
    assert "RAY_USAGE_STATS_ENABLED=0" in out and "RAY_DEDUP_LOGS=0" in out and "PYTHONUNBUFFERED=1" in out
    assert f"VERL_FILE_LOGGER_PATH={tmp_path / 'r' / 'metrics.jsonl'}" in out
    assert "-m verl.trainer.main_ppo" in out and "trainer.total_training_steps=2" in out
    assert "'trainer.logger=[console,file]'" in out and "+ray_kwargs.ray_init._node_ip_address=127.0.0.1" in out
    assert "HF_HUB_OFFLINE" not in out  # the preset's model is a hub id
    assert not (tmp_path / "r").exists()  # a dry run writes nothing


def test_dry_run_json_and_a_local_model_goes_offline(capsys, tmp_path, tiny_model):
    code, out, _ = cli(["launch", "--preset", "grpo-1gpu-smoke", "--dry-run", "--format", "json",
                        "--set", f"actor_rollout_ref.model.path={tiny_model}"], capsys)
    doc = json.loads(out)
    assert code == 0 and doc["ok"] and doc["env"]["HF_HUB_OFFLINE"] == "1"
    assert doc["command"][:3] == [sys.executable, "-m", "verl.trainer.main_ppo"]
    assert f"actor_rollout_ref.model.path={tiny_model}" in doc["command"]


def test_a_run_sh_and_a_plan_json_launch_the_same(capsys, tmp_path):
    from wizard.usecases.plans import preset_plan
    from wizard.usecases.writing import write_plan_files

    write_plan_files(preset_plan("grpo-1gpu-smoke"), tmp_path)
    runs = {}
    for name in ("run.sh", "plan.json"):
        code, out, _ = cli(["launch", str(tmp_path / name), "--dry-run", "--format", "json", "--out", "/r"], capsys)
        assert code == 0
        runs[name] = [w for w in json.loads(out)["command"] if w.startswith(("data.", "trainer.", "actor_rollout_ref."))]
    assert runs["run.sh"] == runs["plan.json"]


@pytest.mark.parametrize("argv,message", [
    (["launch"], "give one of --preset NAME"),
    (["launch", "--preset", "grpo-1gpu-smoke", "x.json"], "give one of --preset NAME"),
    (["launch", "--preset", "nope"], "no preset 'nope'"),
    (["launch", "--preset", "grpo-1gpu-smoke", "--steps", "0"], "--steps must be 1 or more"),
    (["launch", "--preset", "grpo-1gpu-smoke", "--python", "/no/such/python"], "--python /no/such/python: no such file"),
    (["launch", "--preset", "grpo-1gpu-smoke", "--set", "a=[1,"], "--set:"),
    (["launch", "/no/such/plan.json"], "no such file"),
    (["launch", "--preset", "grpo-1gpu-smoke", "--gpus", "lots"], ""),
])
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = cli(argv + ["--dry-run"], capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1 and message in err
    assert "Traceback" not in err


def test_config_errors_are_reported_and_nothing_starts(capsys, tmp_path):
    code, out, _ = cli(["launch", "--preset", "grpo-1gpu-smoke", "--set", "data.train_batch_size=4",
                        "--out", str(tmp_path / "r")], capsys)
    assert code == 1 and "Not started" in out and "error" in out and not (tmp_path / "r").exists()


FAKE_LOG = """\
[validate_config] All configuration checks passed successfully!
\x1b[36m(TaskRunnerV1 pid=466)\x1b[0m INFO:2026-12-02 14:07:12,343:Total training steps: 2
\x1b[36m(TaskRunnerV1 pid=466)\x1b[0m step:1 - critic/score/mean:np.float64(0.25) - actor/kl_loss:np.float64(0.001) - actor/grad_norm:np.float64(0.5)
\x1b[36m(TaskRunnerV1 pid=466)\x1b[0m step:2 - critic/score/mean:np.float64(0.5) - actor/kl_loss:np.float64(0.002) - actor/grad_norm:nan
\x1b[36m(TaskRunnerV1 pid=466)\x1b[0m 'Final validation metrics: None'
"""


def fake_python(tmp_path, log: str, code: int) -> Path:
    """A stand-in for the target Python: prints a recorded log (stdout) and exits with ``code``."""
    (tmp_path / "log.txt").write_text(log)
    path = tmp_path / "python"
    path.write_text(f"#!/bin/sh\ncat '{tmp_path / 'log.txt'}'\nexit {code}\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_streamed_run_prints_metrics_progress_and_alarms(capsys, tmp_path):
    py = fake_python(tmp_path, FAKE_LOG, 0)
    code, out, _ = cli(["launch", "--preset", "grpo-1gpu-smoke", "--python", str(py), "--out", str(tmp_path / "r")],
                       capsys)
    assert "verl-wizard: step 1/2: score/mean=0.25, kl_loss=0.001, grad_norm=0.5" in out
    assert "verl-wizard: alarm: actor/grad_norm is NaN/inf at step(s) 2" in out
    assert "\x1b[" not in out  # colour is for terminals
    assert code == 0 and "the run finished OK (2/2 steps)" in out
    assert "step:2 - critic/score/mean" in (tmp_path / "r" / "run.log").read_text()
    assert (tmp_path / "r" / "command.sh").read_text().count("verl.trainer.main_ppo") == 1


def test_a_failed_run_json_stream_ends_with_triage(capsys, tmp_path):
    log = "ValueError: Total available GPUs 0 is less than total desired GPUs 1\n"
    py = fake_python(tmp_path, log, 1)
    code, out, _ = cli(["launch", "--preset", "grpo-1gpu-smoke", "--python", str(py), "--out", str(tmp_path / "r"),
                        "--format", "json"], capsys)
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["event"] for e in events][0] == "started" and events[-1]["event"] == "end"
    end = events[-1]
    assert code == 1 and end["ok"] is False and end["exit_code"] == 1
    assert [f["rule"] for f in end["findings"]] == ["triage.gpus_short"]


def test_a_run_whose_ray_cannot_reach_its_head_raises_an_alarm_and_triage_names_it(capsys, tmp_path):
    # issue 30: the loopback was down; Ray repeated this for 10 minutes and launch said nothing
    line = ("[2026-12-04 10:00:00,000 W 4242 4242] gcs_rpc_client.h:151: Failed to connect to GCS at address "
            "127.0.0.1:6379 within 5 seconds.\n")
    py = fake_python(tmp_path, line * 4, 1)
    code, out, _ = cli(["launch", "--preset", "grpo-1gpu-smoke", "--python", str(py), "--out", str(tmp_path / "r"),
                        "--format", "json"], capsys)
    events = [json.loads(x) for x in out.splitlines()]
    alarms = [e for e in events if e["event"] == "alarm"]
    assert [a["rule"] for a in alarms] == ["health.ray_head_unreachable"] and "127.0.0.1:6379" in alarms[0]["message"]
    assert code == 1 and "triage.ray_gcs_unreachable" in [f["rule"] for f in events[-1]["findings"]]


# --- the real thing -------------------------------------------------------------------------------------------

DRIVER = textwrap.dedent("""
    import json, os, sys
    sys.path.insert(0, {root!r})
    from wizard import cli as wcli
    from wizard.adapters.processes.launcher import list_processes
    import glob
    before = set(glob.glob("/tmp/vw-ray-*"))  # another run's folders on this machine are not this run's
    code = wcli.main(sys.argv[1:])
    sys.stdout.flush()
    me = os.getpid()
    left = [p.pid for p in list_processes().values() if p.pid not in (1, me) and p.state != "Z"]
    ray = {{"shared": os.listdir("/tmp/ray") if os.path.isdir("/tmp/ray") else [],
            "private": sorted(set(glob.glob("/tmp/vw-ray-*")) - before)}}
    print(json.dumps({{"exit": code, "left": left, "ray": ray}}))
""")


@pytest.mark.ray
@pytest.mark.slow
@pytest.mark.verl
def test_a_real_verl_run_fails_for_want_of_a_gpu_and_triage_says_so(tmp_path, tiny_model):
    why = _namespaces_work()
    if why:
        pytest.skip(f"{why}; a real run starts Ray and never runs outside a loopback-only namespace")
    train = write_gsm8k_like(tmp_path / "train.parquet", 32)
    val = write_gsm8k_like(tmp_path / "test.parquet", 8)
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER.format(root=str(ROOT)))
    run_dir = tmp_path / "run"
    args = ["launch", "--preset", "grpo-1gpu-smoke", "--steps", "2", "--out", str(run_dir),
            "--set", f"actor_rollout_ref.model.path={tiny_model}", "--set", f"data.train_files={train}",
            "--set", f"data.val_files={val}", "--set", "ray_kwargs.ray_init.num_cpus=13"]
    env = dict(os.environ, RAY_USAGE_STATS_ENABLED="0", RAY_NODE_IP_ADDRESS="127.0.0.1")
    env.pop("RAY_ADDRESS", None)
    shell = (LOOPBACK_RAY + " && "
             f"cd {tmp_path} && exec {sys.executable} {driver} " + " ".join(f"'{a}'" for a in args))
    proc = subprocess.run([*UNSHARE, "bash", "-c", shell], capture_output=True, text=True, timeout=540, env=env)
    *lines, last = proc.stdout.rstrip("\n").splitlines()
    result = json.loads(last)
    out = "\n".join(lines)
    assert result["exit"] == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert result["left"] == []  # nothing of the run (driver, Ray, workers) outlives it
    # Ray kept its session (worker logs with verl's resolved config) in the run's private folder, now removed
    assert result["ray"] == {"shared": [], "private": []}
    # the streamed log: the startup lines a monitor shows
    assert "[validate_config] All configuration checks passed successfully!" in out
    assert "Started a local Ray instance" in out and "(TaskRunnerV1 pid=" in out
    assert "verl-wizard: 2 training steps" in out
    assert "ValueError: Total available GPUs 0 is less than total desired GPUs 1" in out
    # the triage
    assert "verl-wizard: the run failed (exit code 1)." in out
    assert "triage.gpus_short" in out and "Total available GPUs 0 < 1" in out
    assert "fix: Run on a machine with 1 GPU(s)" in out and "trainer.n_gpus_per_node" in out
    # the run directory
    log = (run_dir / "run.log").read_text()
    assert "Total available GPUs 0 is less than total desired GPUs 1" in log and "ip=127.0.0.1" in log
    assert "HF_HUB_OFFLINE=1" in (run_dir / "command.sh").read_text()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_to_launch_stops_the_whole_run_like_ctrl_c(tmp_path, sig):
    """SIGTERM (a scheduler, `kill`) and SIGHUP (a closed terminal) end the run's whole tree, as Ctrl-C does; a
    stop the user asked for is no failure to triage."""
    marker = f"{900 + int(sig)}{os.getpid()}"  # a sleep only this test's run starts (not another session's)
    py = tmp_path / "python"
    py.write_text("#!/bin/sh\ncase \"$*\" in *verl.trainer.main_ppo*) ;; *) exit 1;; esac\n"  # not a probe's Python
                  f"echo 'Total training steps: 5'\nsleep {marker} &\nsetsid sleep {marker} &\nexec sleep {marker}\n")
    py.chmod(py.stat().st_mode | stat.S_IXUSR)
    proc = subprocess.Popen([sys.executable, "-m", "wizard", "launch", "--preset", "grpo-1gpu-smoke", "--python",
                             str(py), "--out", str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    for line in proc.stdout:  # the run is started and printed its first line
        if "training steps" in line:
            break
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True).stdout.split()
    assert proc.returncode == 128 + sig, err
    assert "the run was stopped" in out and "triage" not in out and "Traceback" not in err
    assert left == [], "processes of the run survived the stop"
