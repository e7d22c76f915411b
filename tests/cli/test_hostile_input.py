"""Hostile and absurd input, through the real program: every case ends with exit 0, 1 or 2, never a traceback or
an "internal error", within a memory cap (an address-space limit on the process) and a generous time cap that only
catches a hang, leaving no process behind. Cases from issue 19 and more; each new kind of bad input that ever crashed
the wizard belongs here.

Each case is a process of its own, forked from one that imported the wizard (tests/helpers/forked.py): what
``python -m wizard ARGS`` runs, without starting an interpreter and importing the wizard 50 times.
"""

from __future__ import annotations

import json
import os

import pytest

from tests.helpers.forked import Forker

MEMORY_CAP = 3 * 1024**3  # bytes of address space: a YAML bomb or a huge placement would pass it
HANG = 300  # seconds: a safety net for a hang, not a measure of speed


@pytest.fixture(scope="module")
def forker():
    server = Forker({"PYTHONWARNINGS": "ignore"}, unset=("RAY_ADDRESS",))
    yield server
    server.close()


def wizard(forker, *args, cwd=None, stdin=None):
    """The program in a session of its own; afterwards nothing of that session may be left running."""
    proc = forker.run(args, cwd=cwd or os.getcwd(), stdin=stdin, memory=MEMORY_CAP, timeout=HANG)
    assert proc.returncode is not None, f"`verl-wizard {' '.join(map(str, args))[:80]}` ran past {HANG} s"
    try:
        os.killpg(proc.pid, 0)
        left = True
    except ProcessLookupError:
        left = False
    if left:
        os.killpg(proc.pid, 9)
    assert not left, f"processes of `verl-wizard {' '.join(map(str, args))[:80]}` were left running"
    return proc


def _bomb(levels: int = 9) -> str:
    lines = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    prev = "a"
    for i in range(levels):
        name = f"l{i}"
        lines.append(f"{name}: &{name} [" + ", ".join([f"*{prev}"] * 9) + "]")
        prev = name
    return "\n".join(lines) + f"\ntrainer:\n  experiment_name: *{prev}\n"


def _xml(gpus: int, memory: str = "81559 MiB") -> str:
    gpu = (f"<gpu id='00000000:00:00.0'><product_name>NVIDIA H100 80GB HBM3</product_name>"
           f"<fb_memory_usage><total>{memory}</total></fb_memory_usage></gpu>")
    return f"<nvidia_smi_log><driver_version>580</driver_version><cuda_version>13.0</cuda_version>{gpu * gpus}</nvidia_smi_log>"


FILES = {
    "bomb.yaml": _bomb(),
    "deep.yaml": "a: " + "[" * 5000 + "]" * 5000 + "\n",
    "deep-map.yaml": "".join("  " * i + f"k{i}:\n" for i in range(200)) + "  " * 200 + "v: 1\n",
    "binary.yaml": "trainer:\n  experiment_name: !!binary aGVsbG8=\n",
    "set.yaml": "trainer:\n  logger: !!set {console: null}\n",
    "list.yaml": "- a\n- b\n",
    "empty.yaml": "",
    "hydra-only.yaml": "hydra:\n  - just a list\n",
    "not-yaml.yaml": "trainer: [unclosed\n",
    "deep.json": "[" * 100000 + "]" * 100000,
    "not-utf8.sh": "\xff\xfe python3 -m verl.trainer.main_ppo\n",
    "comments.sh": "# nothing but a comment\n",
    "spec-huge.yaml": "nodes:\n  - count: 1000\n    gpus: 1024\n    gpu: H100-80GB\n",
    "spec-many.yaml": "nodes:\n  - count: 5000\n    gpus: 8\n    gpu: H100-80GB\n",
    "spec-bomb.yaml": _bomb(),
    "gpus-20000.xml": _xml(20000),
    "gpus-inf.xml": _xml(2, "inf MiB"),
    "gpus-nan.xml": _xml(2, "nan MiB"),
    "not-xml.xml": "<nvidia_smi_log><gpu>",
}

CASES = {
    "yaml bomb, check": ["check", "{bomb.yaml}"],
    "yaml bomb, plan": ["plan", "{bomb.yaml}", "--gpus", "8xH100-80GB"],
    "yaml bomb, cluster spec": ["plan", "--preset", "grpo-8gpu", "--cluster", "{spec-bomb.yaml}"],
    "deep flow yaml": ["check", "{deep.yaml}"],
    "deep block yaml": ["check", "{deep-map.yaml}"],
    "!!binary": ["check", "{binary.yaml}"],
    "!!set": ["check", "{set.yaml}"],
    "a yaml list": ["check", "{list.yaml}"],
    "an empty yaml": ["check", "{empty.yaml}"],
    "a yaml with Hydra's section only": ["check", "{hydra-only.yaml}"],
    "broken yaml": ["check", "{not-yaml.yaml}"],
    "deep json plan": ["check", "{deep.json}"],
    "not utf-8": ["check", "{not-utf8.sh}"],
    "a script with no launch": ["check", "{comments.sh}"],
    "a folder as the config": ["check", "{dir}"],
    "a missing file": ["check", "{dir}/nope.sh"],
    "spec 1000 x 1024 GPUs": ["plan", "--preset", "grpo-8gpu", "--cluster", "{spec-huge.yaml}"],
    "spec 5000 nodes": ["check", "--preset", "grpo-8gpu", "--cluster", "{spec-many.yaml}"],
    "xml with 20,000 GPUs": ["detect", "--nvidia-smi-xml", "{gpus-20000.xml}"],
    "xml with inf memory": ["detect", "--nvidia-smi-xml", "{gpus-inf.xml}"],
    "xml with nan memory": ["detect", "--nvidia-smi-xml", "{gpus-nan.xml}"],
    "broken xml": ["detect", "--nvidia-smi-xml", "{not-xml.xml}"],
    "--gpus 12500x8": ["check", "--preset", "grpo-8gpu", "--gpus", "12500x8xH100-80GB"],
    "--gpus 8x1000000": ["plan", "--preset", "grpo-8gpu", "--gpus", "8x1000000"],
    "--gpus 0": ["check", "--preset", "grpo-8gpu", "--gpus", "0"],
    "--gpus of an unknown model": ["generate", "--preset", "grpo-8gpu", "--gpus", "8xFOO", "--out", "{dir}/g"],
    "nnodes 2**62 with GPUs": ["check", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set",
                               "trainer.nnodes=4611686018427387904"],
    "nnodes 10**8, plan": ["plan", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set",
                           "trainer.nnodes=100000000"],
    "n_gpus_per_node 10**9": ["plan", "--preset", "grpo-8gpu", "--set", "trainer.n_gpus_per_node=1000000000"],
    "negative sizes": ["check", "--", "trainer.nnodes=-1", "trainer.n_gpus_per_node=0"],
    "a 5000-character name": ["check", "--preset", "grpo-8gpu", "--set", "trainer.experiment_name=" + "x" * 5000],
    "a 5000-character data path": ["check", "--", "data.train_files=/" + "y" * 5000],
    "a NUL byte in a path": ["check", "--", "data.train_files=/tmp/a\\x00b"],
    "a preset path": ["generate", "--preset", "../../resources/presets/grpo-8gpu", "--out", "{dir}/p"],
    "an absolute preset path": ["check", "--preset", "/etc/passwd"],
    "an empty --out": ["generate", "--preset", "grpo-8gpu", "--out", ""],
    "--out is a file": ["generate", "--preset", "grpo-8gpu", "--out", "{comments.sh}"],
    "a cluster into a file": ["cluster", "grpo-2node", "--out", "{comments.sh}"],
    "an override without a value": ["check", "--", "trainer.nnodes"],
    "an override of brackets": ["check", "--", "trainer.logger=[[[["],
    "an unknown command": ["frobnicate"],
    "a batch of garbage": ["check", "--batch", "{not-utf8.sh}"],
    "--steps 0": ["launch", "--preset", "grpo-1gpu-smoke", "--steps", "0", "--dry-run"],
    "--timeout -1": ["detect", "--ray-address", "127.0.0.1:1", "--timeout", "-1"],
    # issue 31: these ended in "internal error", exit 3
    "gpu_memory_utilization=nan, plan": ["plan", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set",
                                         "actor_rollout_ref.rollout.gpu_memory_utilization=nan"],
    "gpu_memory_utilization=inf, check": ["check", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set",
                                          "actor_rollout_ref.rollout.gpu_memory_utilization=inf"],
    "a new key of 500 parts, plan": ["plan", "--gpus", "8xH100-80GB", "--", "+" + ".".join(["a"] * 500) + "=1"],
    "a 5000-character host, plan": ["plan", "--preset", "grpo-8gpu", "--ray-address", "h" * 5000 + ":6379"],
    "a 5000-character host, detect": ["detect", "--ray-address", "h" * 5000 + ":6379"],
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("hostile")
    for name, text in FILES.items():
        (folder / name).write_bytes(text.encode("utf-8", "surrogateescape") if "utf8" not in name
                                    else b"\xff\xfe python3 -m verl.trainer.main_ppo\n")
    return folder


@pytest.mark.parametrize("case", sorted(CASES))
def test_bad_input_is_a_reason_or_a_finding_never_a_crash(case, files, forker):
    names = {"{dir}": str(files), **{"{" + n + "}": str(files / n) for n in FILES}}
    args = []
    for arg in CASES[case]:
        for mark, value in names.items():
            arg = arg.replace(mark, value)
        args.append(arg)
    args = [a.replace("\\x00", "\x00") for a in args]
    if any("\x00" in a for a in args):  # an argv cannot hold NUL: it comes from a file, as in a batch
        batch = files / "nul.jsonl"
        batch.write_text(json.dumps({"id": "nul", "overrides": [a for a in args if "=" in a]}) + "\n")
        args = ["check", "--batch", str(batch)]
    proc = wizard(forker, *args, cwd=files)
    out = proc.stdout + proc.stderr
    assert proc.returncode in (0, 1, 2), f"{case}: exit {proc.returncode}\n{out[-2000:]}"
    assert "Traceback" not in out and "internal error" not in out, f"{case}:\n{out[-2000:]}"
    if proc.returncode == 2:
        assert len(proc.stderr.strip().splitlines()) == 1, f"{case}: more than one line:\n{proc.stderr[-2000:]}"


SPECIAL = {  # issue 31: each of these hung for good (a FIFO) or read until memory ran out (/dev/zero behind a link)
    "a FIFO as the script": (["check", "{fifo}.sh"], "named pipe"),
    "a FIFO as the YAML": (["check", "{fifo}.yaml"], "named pipe"),
    "a FIFO as the plan": (["plan", "{fifo}.json", "--gpus", "8xH100-80GB"], "named pipe"),
    "a FIFO as --cluster": (["plan", "--preset", "grpo-8gpu", "--cluster", "{fifo}.yaml"], "named pipe"),
    "a FIFO as --batch": (["check", "--batch", "{fifo}.jsonl"], "named pipe"),
    "a FIFO as nvidia-smi XML": (["detect", "--nvidia-smi-xml", "{fifo}.xml"], "named pipe"),
    "/dev/zero as the YAML": (["check", "{zero}.yaml"], "character device"),
    "/dev/urandom as the script": (["check", "{urandom}.sh"], "character device"),
    "/dev/zero as --batch": (["check", "--batch", "{zero}.jsonl"], "character device"),
    "/dev/zero as nvidia-smi XML": (["detect", "--nvidia-smi-xml", "{zero}.xml"], "character device"),
    "a 20 MiB YAML": (["check", "{big}.yaml"], "more than the 16.0 MiB"),
}


@pytest.mark.parametrize("case", sorted(SPECIAL))
def test_a_fifo_a_device_or_a_huge_file_is_refused_in_one_line(case, tmp_path, forker):
    args, words = SPECIAL[case]
    suffix = os.path.splitext(args[-1] if "{" in args[-1] else next(a for a in args if "{" in a))[1]
    name = next(a for a in args if "{" in a)
    path = tmp_path / f"input{suffix}"
    if name.startswith("{fifo}"):
        os.mkfifo(path)  # nobody writes into it
    elif name.startswith("{big}"):
        with open(path, "wb") as fh:
            fh.truncate(20 * 1024 * 1024)
    else:
        path.symlink_to("/dev/zero" if name.startswith("{zero}") else "/dev/urandom")
    proc = wizard(forker, *[str(path) if a == name else a for a in args], cwd=tmp_path)
    assert proc.returncode == 2, f"{case}: exit {proc.returncode}\n{(proc.stdout + proc.stderr)[-2000:]}"
    assert words in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


@pytest.mark.parametrize("override,rule", [
    ("data.train_batch_size=1000000000000000000", "batch.absurd_size"),
    ("actor_rollout_ref.rollout.n=1000000000000", "batch.absurd_size"),
    ("actor_rollout_ref.rollout.gpu_memory_utilization=nan", "rollout.memory_fraction_not_a_number"),
])
def test_an_absurd_size_is_a_finding_not_a_silent_fit(override, rule, forker):
    # issue 31: 10**18 prompts per step planned as FITS with no word; nan crashed the plan
    proc = wizard(forker, "plan", "--preset", "grpo-8gpu", "--gpus", "8xH100-80GB", "--set", override,
                  "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr[-2000:]
    findings = json.loads(proc.stdout)["findings"]
    assert rule in {f["rule"] for f in findings}, [f["rule"] for f in findings]
