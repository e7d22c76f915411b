"""The generation phase against the real runs: verl times it to the replay buffer's 2-s poll that sees the last
sample done, so each alone run pins the phase to one poll; SGLang also logs its decode throughput, which pins its
decode step. A 1,024-token run on an H100 (64 samples, all within one 4-s poll) is what showed the old per-step
overhead (5 ms) twice too slow."""

import gzip
import importlib.util
import re
from pathlib import Path

import pytest

from tests.core.test_advice import Q15, R, plan
from wizard.usecases.advising import step_time

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "bench" / "data" / "verl_real"


def bench():
    spec = importlib.util.spec_from_file_location("bench_step_time", ROOT / "bench" / "bench_step_time.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def gen(st):
    return next(p for p in st.phases if p.name == "gen")


def term(st, label):
    return next(t for t in gen(st).terms if t.label == label)


def test_every_alone_run_s_generation_ends_at_the_poll_it_was_seen_at():
    b = bench()
    alone = [c for c in b.cases(DATA) if c["alone"] and "gen" in c["measured"]]
    assert len(alone) >= 12
    names = {c["run"] for c in alone}
    assert "time-grpo-1.5b-fsdp2-u0.5-resp1024-h100" in names and "time-grpo-1.5b-fsdp2-u0.5-n8-h100" in names
    missed = {}
    for case in alone:
        phases, _ = b.predicted(case)
        # within half a poll: the poll it ended at, give or take SGLang's sleep after it
        if abs(phases["gen"] - case["measured"]["gen"]) >= 1.0:
            missed[case["run"]] = (round(phases["gen"], 1), round(case["measured"]["gen"], 1))
    # The one run that ended a poll later than predicted, not understood: 64 responses of 3,072 tokens (1.5B PPO
    # on an H100), 14.1 s measured against 12.0 (the decode at 2.9 ms a step; the 2,048-token run's 2.5 ms was
    # right). Strict: a change that explains it, or another run that misses, fails here.
    # And one that ended a poll earlier: the 1.2B MoE on Megatron (an H100), 64 responses of 512 tokens, 2.0 s
    # measured against 4.0: its decode (0.64 s predicted) and the samples' hand-off (1.76) add up to 2.4 s, past the
    # 2-s poll it was seen at; the hand-off constant is FSDP runs', and vLLM's fused-MoE decode is not measured alone.
    # And one a poll late where nothing of the generation differs: the fused-kernels 1.5B run (an H100), 6.1 s in
    # both steady steps against 4.0, where the same config without use_fused_kernels (the trainer's key: vLLM's decode
    # is the same) measured 4.06 on another H100, at the poll's edge.
    # The PPO one came again in its next advised run (a fused head, otherwise the same rollout: 14.1 against 12.0),
    # and three polls late in the run of that config again (18.1), while the mask test's run, the same rollout at
    # log-prob micro-batches of 8, ended at 12.1 on the same H100 just before it: the spread is vLLM's, not the config's.
    assert missed == {"advised-ppo-1.5b-critic-4096-h100": (12.0, 14.1),
                      "advised-ppo-1.5b-critic-4096-h100-3": (12.0, 14.1),
                      "advised-ppo-1.5b-critic-4096-h100-4": (12.0, 18.1),
                      "meg-grpo-moe1b-ep1-u0.5-h100": (4.0, 2.0),
                      "time-grpo-1.5b-fsdp2-u0.5-resp1024-fused-h100": (4.0, 6.1)}, missed


def sglang_decode_ms(run: str) -> float:
    """ms per decode step SGLang logged in the run's last step: the requests running / its gen throughput."""
    with gzip.open(DATA / run / "run.log.gz", "rt", errors="replace") as f:
        text = f.read()
    last = text[text.rfind("step:1 "):]
    logged = re.findall(r"Decode batch, #running-req: (\d+),.*?gen throughput \(token/s\): ([\d.]+)", last)
    assert len(logged) >= 5, run
    steps = [int(n) / float(rate) * 1e3 for n, rate in logged[1:]]  # the first window spans the prefill
    return sum(steps) / len(steps)


@pytest.mark.parametrize("run", ["sgl-grpo-1.5b-fsdp2-u0.5-graphs-triton-h100",
                                 "sgl-grpo-3b-fsdp2-u0.55-graphs-triton-h100",
                                 "sgl-grpo-1.5b-fsdp2-u0.6-eager-triton-h100"])
def test_sglang_s_decode_step_is_the_one_it_logged(run):
    b = bench()
    case = next(c for c in b.cases(DATA) if c["run"] == run)
    from wizard.core.steptime import predict_step
    st = predict_step(case["values"], case["models"], case["cluster"], case["report"])
    decode = term(st, "decode")
    steps = int(re.search(r"x ([\d,]+) steps", decode.note).group(1).replace(",", ""))
    assert decode.seconds / steps * 1e3 == pytest.approx(sglang_decode_ms(run), rel=0.10), decode.note


BATCH = ["data.max_response_length=512", "data.max_prompt_length=512", "data.train_batch_size=256"]


def test_each_agent_loop_worker_handles_its_share_of_the_samples():
    # 256 prompts x 4 samples: 1,024 samples; verl's 8 workers by default, each scoring and handing its samples on
    default = step_time(plan(BATCH, "1xH100-80GB", Q15))
    two = step_time(plan([*BATCH, f"{R}.agent.num_workers=2"], "1xH100-80GB", Q15))
    per = term(default, "samples' scoring and hand-off")
    assert "128 samples per agent-loop worker (8 workers" in per.note
    assert term(two, "samples' scoring and hand-off").seconds == pytest.approx(4 * per.seconds)
    assert gen(two).seconds > gen(default).seconds


def test_a_prompt_s_samples_share_its_prefill():
    four = step_time(plan(BATCH, "1xH100-80GB", Q15))
    eight = step_time(plan([*BATCH, "data.train_batch_size=128", f"{R}.n=8"], "1xH100-80GB", Q15))
    # the same 1,024 samples from half the prompts: half the prefill, the same decode
    assert term(eight, "prefill").seconds == pytest.approx(term(four, "prefill").seconds / 2, rel=0.02)
    assert "each prefilled once for its 8 samples" in term(eight, "prefill").note
    assert term(eight, "decode").seconds == pytest.approx(term(four, "decode").seconds)
    # without vLLM's prefix cache every sample prefills its prompt
    uncached = step_time(plan([*BATCH, "data.train_batch_size=128", f"{R}.n=8", f"{R}.enable_prefix_caching=False"],
                              "1xH100-80GB", Q15))
    assert term(uncached, "prefill").seconds == pytest.approx(8 * term(eight, "prefill").seconds, rel=0.02)
    assert "each prefilled once" not in term(uncached, "prefill").note
