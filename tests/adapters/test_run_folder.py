"""A run folder on disk: the recorded H200 run read whole (with generations in verl's format added), a live
run's dumps taken only when complete, the launch's record (run.json, gpus.csv), a smoke run found by its plan, and
the report with planted secrets."""

import json
import os
import shutil
from pathlib import Path

import pytest

from tests.helpers.rollout_dumps import recorded_run_dumps, varied_step
from wizard.usecases.plans import preset_plan
from wizard.adapters.files.run_folder import (
    DumpWatcher,
    RunFolderError,
    RunRecorder,
    find_smoke_run,
    read_run_folder,
)
from wizard.adapters.machine.gpu_sampler import GpuReading, GpuSnapshot
from wizard.core.run import digest
from wizard.core.run.logparse import RunLog
from wizard.core.run.record import RunMeta, plan_fingerprint, start_meta
from wizard.core.run.report import render_report
from wizard.core.run.smoke import SmokeOptions, smoke_plan

RUN = Path(__file__).resolve().parents[1] / "data" / "verl-run-h200"


@pytest.fixture
def run_dir(tmp_path):
    """The recorded run's folder, with generations as verl 0.9.1 would have dumped them."""
    folder = tmp_path / "launch-h200"
    shutil.copytree(RUN, folder)
    recorded_run_dumps(folder / "rollout")
    return folder


def test_the_recorded_run_read_whole(run_dir):
    r = read_run_folder(run_dir)
    assert r.meta is None and r.plan_smoke_only and r.plan.data.max_response_length == 512
    assert r.log_lines == 1279 and len(r.log_tail) == 1279 and r.state.progress() == (3, 3)
    assert sorted(r.rollout) == [1, 2, 3] and len(r.rollout[3]) == 64 and r.problems == []
    steps = digest.inspect_steps(r.rollout, r.state, 512)
    assert [s.verdict.cut for s in steps] == [20, 14, 20]  # verl's own clip ratio of each step, applied
    assert digest.timing_of(r).warmup.step == 1
    assert digest.forecast_of(r).steps == 8


def test_a_huge_log_is_read_from_its_tail_with_every_line_counted(run_dir, monkeypatch):
    # issue 31: a 507 MB run.log took 22-24 s for report/samples/timing; the tail is what they read
    import wizard.adapters.files.run_folder as run_folder

    whole = read_run_folder(run_dir)
    noise = "(WorkerDict pid=7) WARNING a line a long run repeats\n" * 50_000
    log = run_dir / "run.log"
    log.write_text(noise + log.read_text())
    monkeypatch.setattr(run_folder, "LOG_READ_BYTES", 160_000)  # the recorded log is 143 kB: it and a little noise
    r = read_run_folder(run_dir)
    assert r.log_lines == whole.log_lines + 50_000  # counted, not parsed
    assert r.log_tail[-200:] == whole.log_tail[-200:] and r.state.progress() == (3, 3)  # the steps, from metrics.jsonl
    assert digest.timing_of(r).steps == digest.timing_of(whole).steps
    (said,) = [p for p in r.problems if p.startswith("run.log")]
    assert said.startswith("run.log: its first") and "only the last" in said and "metrics.jsonl" in said


def test_a_folder_of_dumps_alone_and_what_is_no_run_folder(tmp_path):
    varied_step(tmp_path / "dumps", step=4)
    r = read_run_folder(tmp_path / "dumps")
    assert list(r.rollout) == [4] and r.plan is None
    with pytest.raises(RunFolderError, match="no such folder"):
        read_run_folder(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(RunFolderError, match="not a run folder"):
        read_run_folder(tmp_path / "empty")


def test_damaged_files_are_listed_not_fatal(run_dir):
    (run_dir / "run.json").write_text("{broken")
    (run_dir / "rollout" / "2.jsonl").write_text('{"output": "ok"}\nnot json\n')
    r = read_run_folder(run_dir)
    assert r.meta is None and len(r.rollout[2]) == 1
    assert any(p.startswith("run.json: cannot be read") for p in r.problems)
    assert "rollout/2.jsonl line 2: not JSON (Expecting value)" in r.problems


def test_the_watcher_takes_a_dump_only_once_it_is_complete(tmp_path):
    folder = tmp_path / "rollout"
    w = DumpWatcher(folder)
    assert w.poll() == []  # no folder yet
    folder.mkdir()
    (folder / "1.jsonl").write_text('{"output": "a", "step": 1}\n{"output": "b"')  # being written
    assert w.poll() == []
    with open(folder / "1.jsonl", "a") as fh:
        fh.write(', "step": 1}\n')
    assert w.poll() == []  # seen complete once: taken when its size holds
    ((step, samples),) = w.poll()
    assert step == 1 and [s.response for s in samples] == ["a", "b"]
    assert w.poll() == []  # once only
    (folder / "2.jsonl").write_text('{"output": "c"}\n')
    assert [step for step, _ in w.poll(final=True)] == [2]  # the run has ended: nothing more is being written


def test_the_recorder_writes_run_json_and_the_gpu_samples_by_step(tmp_path):
    plan = preset_plan("grpo-1gpu-smoke")
    smoke = smoke_plan(plan, SmokeOptions(steps=2, samples_dir=str(tmp_path)))
    meta = start_meta(plan, smoke, steps=2, python="/venv/bin/python", started="2026-12-03T15:44:10+0000",
                      wizard_version="0.x")
    rec = RunRecorder(tmp_path, meta, interval_s=0.0)
    rec.start()
    doc = json.loads((tmp_path / "run.json").read_text())
    assert doc["format"] == 1 and doc["fingerprint"] == plan_fingerprint(plan) and doc["ended"] is None
    assert doc["rollout_dir"] == f"{tmp_path}/rollout" and "trainer.total_training_steps=2" not in doc["plan_overrides"]
    state = RunLog()
    snap = GpuSnapshot(gpus=(GpuReading(0, "NVIDIA H200", memory_used=8 << 30, memory_total=141 << 30, util_gpu=5),))
    rec.tick(state, snap)
    state.feed("(TaskRunnerV1 pid=1) INFO:2026-12-03 15:48:33,013:all initialize finished, ready to fit")
    rec.tick(state, GpuSnapshot(gpus=(GpuReading(0, "NVIDIA H200", util_gpu=97, memory_used=60 << 30),)))
    rec.end(0, stopped=False)
    assert (tmp_path / "gpus.csv").read_text().splitlines() == [
        "time_s,step,gpu,util_percent,memory_mib", f"{0.0:.1f},0,0,5,8192",
        (tmp_path / "gpus.csv").read_text().splitlines()[2]]
    assert (tmp_path / "gpus.csv").read_text().splitlines()[2].endswith(",1,0,97,61440")
    meta = RunMeta.from_json(json.loads((tmp_path / "run.json").read_text()))
    assert meta.exit_code == 0 and meta.stopped is False and meta.ended


def test_a_smoke_run_of_the_same_plan_is_found(tmp_path):
    plan = preset_plan("grpo-1gpu-smoke")
    for name, p in (("a", plan), ("b", preset_plan("ppo-8gpu"))):
        (tmp_path / name).mkdir()
        meta = start_meta(p, smoke_plan(p), steps=1, python="py", started="t", wizard_version="0")
        (tmp_path / name / "run.json").write_text(json.dumps(meta.to_json()))
    assert find_smoke_run(tmp_path, plan_fingerprint(plan)) == tmp_path / "a"
    assert find_smoke_run(tmp_path, "0" * 16) is None and find_smoke_run(tmp_path / "none", "x") is None


SECRETS = {"WANDB_API_KEY": "wandb-planted-0123456789abcdef", "MY_SERVICE_TOKEN": "tok-planted-9876543210"}
LITERALS = ("hf_PLANTEDplantedPLANTEDplanted1234", "sk-planted-secret-value-123456789", "hunter2planted")


def test_the_report_has_everything_and_no_secret(run_dir, monkeypatch):
    for k, v in SECRETS.items():
        monkeypatch.setenv(k, v)
    with open(run_dir / "run.log", "a") as fh:  # a log the launcher did not get to redact
        fh.write(f"wandb: logging in with {SECRETS['WANDB_API_KEY']}\n")
        fh.write(f"(TaskRunnerV1 pid=7340) {{'api_key': '{LITERALS[1]}', 'hf_token': '{LITERALS[0]}'}}\n")
        fh.write(f"calling the service with {SECRETS['MY_SERVICE_TOKEN']}\n")
    plan = preset_plan("grpo-1gpu-smoke")
    from wizard.core.plan.convert import apply_overrides

    planted = apply_overrides(plan, [f"+trainer.db_password={LITERALS[2]}", f"+reward.hf_token={LITERALS[0]}"])
    meta = start_meta(planted, smoke_plan(planted), steps=3, python="py", started="t", wizard_version="0",
                      environment={"python": "3.12.3", "packages": {"verl": "0.9.1", "vllm": "0.24.0"},
                                   "torch": "2.11.0+cu130", "driver_cuda": "13.0"},
                      gpus=[{"index": 0, "name": "NVIDIA H200", "memory_mib": 143771}])
    meta.plan_overrides.append(f"+trainer.api_key={LITERALS[1]}")  # a record written by hand, secret and all
    (run_dir / "run.json").write_text(json.dumps(meta.to_json()))
    from wizard.adapters.files.run_folder import secret_values

    text = render_report(read_run_folder(run_dir), secrets=secret_values(), environment=meta.environment,
                         wizard_version="0.x", written="2026-12-03")
    for secret in (*SECRETS.values(), *LITERALS):
        assert secret not in text
    assert "${WANDB_API_KEY}" in text and "${MY_SERVICE_TOKEN}" in text and "<redacted>" in text
    assert "+trainer.db_password=${oc.env:DB_PASSWORD}" in text and "+reward.hf_token=${oc.env:HF_TOKEN}" in text
    for part in ("## Environment", "| vllm | 0.24.0 |", "- GPU 0: NVIDIA H200 (143,771 MiB)", "## Plan",
                 "algorithm.adv_estimator=grpo", "### Failure", "### Samples",
                 "31 % of responses hit the 512-token limit", "samples.flat_groups", "## Timing",
                 "| 1 (warm-up) | 62.6 s |", "The full run:", "run.log: the last 200 of 1282 lines"):
        assert part in text, part
    log = text.split("```text\n")[-1].split("\n```")[0].splitlines()
    assert len(log) == 200 and log[-1].startswith("calling the service with ${MY_SERVICE_TOKEN}")
    assert "\x1b[" not in text
    assert not os.environ.get("NOTHING")  # (monkeypatch restores the environment)


def test_run_json_killed_while_written_is_whole_and_its_temp_files_are_removed_by_the_next_write(tmp_path):

    from tests.helpers.cli import process_env
    from tests.helpers.procs import killed_while_writing
    from wizard.adapters.files.run_folder import write_meta

    writer = ("import sys\n"
              "from wizard.adapters.files.run_folder import write_meta\n"
              "from wizard.core.run.record import RunMeta\n"
              "i = 0\n"
              "while True:\n"
              "    i += 1\n"
              "    write_meta(sys.argv[1], RunMeta(plan_overrides=['x=' + 'y' * 200000], steps=i))\n")
    meta = tmp_path / "run.json"
    for path in killed_while_writing(writer, [str(tmp_path)], process_env(), lambda proc: meta, times=6, spread=3):
        assert json.loads(path.read_text())["steps"] >= 1
    write_meta(tmp_path, RunMeta(plan_overrides=[], steps=99))
    assert json.loads(meta.read_text())["steps"] == 99
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.json"]
