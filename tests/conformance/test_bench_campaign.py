"""The device campaign (bench/real/campaign.py) ends a run whose engine worker died: verl waits for a dead vLLM
worker without end, and a run left to its time limit spends device time that the next runs need."""

import importlib.util
import subprocess
import sys

from tests.conftest import ROOT
from tests.helpers.procs import default_hangup


def campaign():
    spec = importlib.util.spec_from_file_location("campaign", ROOT / "bench" / "real" / "campaign.py")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(ROOT / "bench" / "real"))
    spec.loader.exec_module(module)
    return module


def hanging(log, line: str) -> subprocess.Popen:
    """A process that prints ``line`` into ``log`` and then waits, as verl does for a worker that died."""
    code = f"import sys, time; print({line!r}, flush=True); time.sleep(600)"
    return subprocess.Popen([sys.executable, "-c", code], stdout=log.open("wb"), stderr=subprocess.STDOUT,
                            preexec_fn=default_hangup)


def test_a_run_whose_vllm_worker_died_is_ended_not_left_to_its_time_limit(tmp_path):
    c = campaign()
    log = tmp_path / "run.log"
    proc = hanging(log, "(vLLMHttpServer pid=8179) (Worker pid=8396) ERROR 12-05 04:32:43 "
                        "[multiproc_executor.py:1000] WorkerProc hit an exception.")
    try:
        assert c._wait(proc, log, timeout_s=600, grace_s=0) == (None, "dead_engine")
    finally:
        proc.kill()
        proc.wait()


def test_a_run_that_ends_by_itself_gives_its_exit_code(tmp_path):
    c = campaign()
    log = tmp_path / "run.log"
    proc = subprocess.Popen([sys.executable, "-c", "print('step:1'); raise SystemExit(3)"], stdout=log.open("wb"),
                            preexec_fn=default_hangup)
    assert c._wait(proc, log, timeout_s=600) == (3, None)


def test_an_sglang_run_gets_sglangs_python_path_and_a_vllm_run_the_kits(tmp_path, monkeypatch):
    # go.sh with SGL=1 exports SGLang's path (its folder first, vLLM hidden) beside the kit's: one campaign runs both
    c = campaign()
    monkeypatch.setenv("PYTHONPATH", "/tmp/site:/tmp/dev/wt")
    monkeypatch.setenv("SGL_PYTHONPATH", "/tmp/site-sgl:/tmp/site:/tmp/dev/wt")
    sgl = {"name": "s", "kind": "verl", "args": ["actor_rollout_ref.rollout.name=sglang", "trainer.nnodes=1"]}
    vllm = {"name": "v", "kind": "verl", "args": ["actor_rollout_ref.rollout.name=vllm"]}
    assert c._prepare(sgl, tmp_path / "s", {})["PYTHONPATH"] == "/tmp/site-sgl:/tmp/site:/tmp/dev/wt"
    assert c._prepare(vllm, tmp_path / "v", {})["PYTHONPATH"] == "/tmp/site:/tmp/dev/wt"
    assert (tmp_path / "s" / "spec.json").exists()
    # Hydra's last assignment wins; quotes around the value are the shell's
    later = {"name": "w", "kind": "verl", "args": ["+actor_rollout_ref.rollout.name='sglang'"]}
    assert c._prepare(later, tmp_path / "w", {})["PYTHONPATH"] == "/tmp/site-sgl:/tmp/site:/tmp/dev/wt"
    back = {"name": "b", "kind": "verl", "args": [*sgl["args"], "actor_rollout_ref.rollout.name=vllm"]}
    assert c._prepare(back, tmp_path / "b", {})["PYTHONPATH"] == "/tmp/site:/tmp/dev/wt"


def test_a_megatron_run_gets_megatrons_python_path(tmp_path, monkeypatch):
    # go.sh with MEG=1 exports Megatron's path (megatron-core, mbridge, TransformerEngine before the kit)
    c = campaign()
    monkeypatch.setenv("PYTHONPATH", "/tmp/site:/tmp/dev/wt")
    monkeypatch.setenv("MEG_PYTHONPATH", "/tmp/site-meg:/tmp/site:/tmp/dev/wt")
    for args in (["model_engine=megatron", "trainer.nnodes=1"], ["--config-name=ppo_megatron_trainer"],
                 ["--config-name", "ppo_megatron_trainer"], ["model_engine='megatron'"]):
        run = {"name": "m", "kind": "verl", "args": args}
        assert c._prepare(run, tmp_path / "m", {})["PYTHONPATH"] == "/tmp/site-meg:/tmp/site:/tmp/dev/wt", args
    back = {"name": "d", "kind": "verl", "args": ["model_engine=megatron", "model_engine=dp"]}
    assert c._prepare(back, tmp_path / "d", {})["PYTHONPATH"] == "/tmp/site:/tmp/dev/wt"


def test_campaign_spec_without_an_output_file_says_how_to_call_it_and_writes_nothing(tmp_path):
    # its first argument is the file it writes: "--help" or a flag there once made a file named after it
    script = ROOT / "bench" / "real" / "campaign_spec.py"
    for args, code in ((["--help"], 0), (["--timing"], 2), ([], 2)):
        done = subprocess.run([sys.executable, str(script), *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == code, (args, done.stderr)
        assert "campaign_spec.py OUT.json" in done.stdout
    assert list(tmp_path.iterdir()) == []


def test_a_run_alone_records_what_each_process_holds_on_the_host(tmp_path):
    """Only a run Ray killed said what the host held (its OOM report: the 14B LoRA run's trainer 56.00 GiB, its
    vLLM worker 52.25); a run alone now records each process's PSS and the node's used RAM once a second."""
    c = campaign()
    code = "import time; b = bytearray(300 * 2**20); b[::4096] = b'x' * len(b[::4096]); time.sleep(60)"
    proc = subprocess.Popen([sys.executable, "-c", code], preexec_fn=default_hangup)
    try:
        sampler = c.HostSampler(tmp_path / "host.jsonl", period_s=0.2)
        import time
        for _ in range(50):  # until the process has touched its 300 MiB
            row = sampler.reading()
            if row["procs"].get(str(proc.pid), [0])[0] >= 290:
                break
            time.sleep(0.1)
        mib, cmd = row["procs"][str(proc.pid)]
        assert mib >= 290 and cmd.startswith(sys.executable)
        assert row["used_mib"] > 0 and sampler.peak_mib >= mib
    finally:
        proc.kill()
        proc.wait()


def test_a_run_whose_model_never_appears_is_skipped_not_started_without_it(tmp_path, monkeypatch):
    # 2026-12-06: the campaign waited for a 7B model nobody was making, then started the run 64 s before the
    # deadline with no model; it is skipped now, at once (no make_models.py runs), and says why
    import json
    import time
    c = campaign()
    spec = tmp_path / "campaign.json"
    spec.write_text(json.dumps({"runs": [{"name": "r7b", "kind": "verl", "args": [], "expect_s": 1,
                                          "needs": str(tmp_path / "q7b" / "DONE")}]}))
    out = tmp_path / "out"
    def no_waiting(seconds):  # it waited out the lease for a model nobody makes
        raise AssertionError(f"waited {seconds} s for a model no make_models.py is making")

    monkeypatch.setattr(c.time, "sleep", no_waiting)
    assert c.main(["campaign.py", str(spec), str(out), "--deadline", str(time.time() + 600)]) == 0
    progress = (out / "progress.txt").read_text()
    assert "skip r7b: " in progress and "never appeared" in progress and "start r7b" not in progress
    assert not (out / "r7b").exists()
