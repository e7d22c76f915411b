"""The reward bench in a real subprocess: verl's own GSM8K scorer and real custom reward function files."""

import os
import sys
import textwrap

import pytest

from wizard.adapters.verl_env.reward_runner import RewardRunError, run_bench
from wizard.core.findings import Severity
from wizard.core.reward.bench import BenchRow

PY = sys.executable
GSM8K = [BenchRow(0, "openai/gsm8k", "72"), BenchRow(1, "openai/gsm8k", "18")]


def rules(result):
    return {f.rule: f for f in result.findings}


def reward_file(tmp_path, body, name="my_reward.py"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return str(path)


def scores(result):
    return {(t.row, t.candidate): t.score for t in result.trials}


@pytest.mark.verl
def test_verls_own_gsm8k_scorer(tmp_path):
    result = run_bench(GSM8K, user_texts=["Natalia sold 48 + 24 = 72 clips.\n#### 72"], python=PY)
    s = scores(result)
    assert s[(0, "ground_truth_formatted")] == 1.0  # a response ending "#### 72"
    assert s[(0, "wrong")] == 0.0 and s[(0, "empty")] == 0.0
    assert s[(0, "ground_truth")] == 0.0  # "72" alone: the strict scorer wants "#### 72"
    assert s[(0, "user")] == 1.0 and s[(1, "user")] == 0.0
    assert result.findings == []
    assert result.summary.min == 0.0 and result.summary.max == 1.0


def test_rows_no_builtin_scorer_handles_are_named_not_run(tmp_path):
    result = run_bench([BenchRow(3, "my/data", "x")], python=PY)
    f = rules(result)["reward.no_scorer"]
    assert "'my/data' (row 3)" in f.message and "--function" in f.fix
    assert result.trials == [] and result.skipped_rows == [3]


def test_a_custom_function_that_works(tmp_path):
    path = reward_file(tmp_path, """
        def compute_score(data_source, solution_str, ground_truth, extra_info=None):
            return 1.0 if solution_str.strip().endswith(str(ground_truth)) else 0.0
    """)
    rows = [BenchRow(0, "mine", "Paris", {"index": 0}), BenchRow(1, "mine", "Rome", {"index": 1})]
    result = run_bench(rows, function=path, name="compute_score", python=PY)
    assert scores(result) == {(0, "ground_truth"): 1.0, (0, "empty"): 0.0, (0, "wrong"): 0.0,
                              (1, "ground_truth"): 1.0, (1, "empty"): 0.0, (1, "wrong"): 0.0}
    assert result.findings == []


def test_a_custom_function_that_raises_shows_the_users_traceback(tmp_path):
    path = reward_file(tmp_path, """
        def helper(extra_info):
            return extra_info["difficulty"]

        def fn(data_source, solution_str, ground_truth, extra_info=None):
            print("debug output must not break the bench")
            return float(solution_str == ground_truth) * helper(extra_info)
    """)
    result = run_bench([BenchRow(0, "mine", "1", {"index": 0})], function=path, name="fn", python=PY)
    f = rules(result)["reward.exception"]
    assert f.severity is Severity.ERROR
    assert "fn in my_reward.py raised KeyError: 'difficulty' on 3 of 3 calls" in f.message
    assert f'File "{path}", line 3, in helper' in f.message and "reward_probe.py" not in f.message


def test_none_nan_and_constant_returns(tmp_path):
    path = reward_file(tmp_path, """
        import math

        def returns_none(data_source, solution_str, ground_truth, extra_info=None):
            if solution_str == ground_truth:
                return 1.0
            # forgot to return 0.0

        def returns_nan(data_source, solution_str, ground_truth, extra_info=None):
            return 1.0 if solution_str == ground_truth else math.nan

        def always_zero(data_source, solution_str, ground_truth, extra_info=None):
            return 0.0

        def returns_text(data_source, solution_str, ground_truth, extra_info=None):
            return {"acc": True}
    """)
    rows = [BenchRow(0, "mine", "7")]
    f = rules(run_bench(rows, function=path, name="returns_none", python=PY))["reward.non_numeric"]
    assert "returned None on 2 of 3 calls" in f.message
    f = rules(run_bench(rows, function=path, name="returns_nan", python=PY))["reward.nan"]
    assert "nan on 2 of 3 calls" in f.message
    f = rules(run_bench(rows, function=path, name="always_zero", python=PY))["reward.constant"]
    assert "same score 0" in f.message
    f = rules(run_bench(rows, function=path, name="returns_text", python=PY))["reward.non_numeric"]
    assert "a dict without a numeric 'score'" in f.message


def test_async_and_dict_returns_as_verl_accepts_them(tmp_path):
    path = reward_file(tmp_path, """
        async def fn(data_source, solution_str, ground_truth, extra_info=None, **kwargs):
            ok = solution_str == ground_truth
            return {"score": 1.0 if ok else -1.0, "acc": ok}
    """)
    result = run_bench([BenchRow(0, "mine", "7")], function=path, name="fn", python=PY)
    assert scores(result)[(0, "ground_truth")] == 1.0 and result.findings == []


def test_a_hanging_function_times_out_and_keeps_finished_calls(tmp_path):
    path = reward_file(tmp_path, """
        import time

        def fn(data_source, solution_str, ground_truth, extra_info=None):
            if solution_str == "":
                time.sleep(60)
            return 1.0 if solution_str == ground_truth else 0.0
    """)
    result = run_bench([BenchRow(0, "mine", "7")], function=path, name="fn", python=PY, timeout=3)
    f = rules(result)["reward.timeout"]
    assert "row 0 (empty), after 1 of 3 calls" in f.message
    assert [t.candidate for t in result.trials] == ["ground_truth"]


def test_slow_function_is_flagged(tmp_path):
    path = reward_file(tmp_path, """
        import time

        def fn(data_source, solution_str, ground_truth, extra_info=None):
            time.sleep(0.08)
            return 1.0 if solution_str == ground_truth else 0.0
    """)
    f = rules(run_bench([BenchRow(0, "mine", "7")], function=path, name="fn", python=PY))["reward.slow"]
    assert "ms per call" in f.message and "per step" in f.message


def test_bad_function_file_name_or_python_are_one_line_errors(tmp_path):
    path = reward_file(tmp_path, "def fn(data_source, solution_str, ground_truth, extra_info=None):\n    return 1\n")
    rows = [BenchRow(0, "mine", "7")]
    with pytest.raises(RewardRunError, match="no such file"):
        run_bench(rows, function=str(tmp_path / "nope.py"), name="fn", python=PY)
    with pytest.raises(RewardRunError, match="no function 'other'"):
        run_bench(rows, function=path, name="other", python=PY)
    broken = reward_file(tmp_path, "def fn(:\n", name="broken.py")
    with pytest.raises(RewardRunError, match="SyntaxError"):
        run_bench(rows, function=broken, name="fn", python=PY)
    with pytest.raises(RewardRunError, match="cannot run .*no such file"):
        run_bench(rows, function=path, name="fn", python=str(tmp_path / "no-python"))


# --- reward functions that misbehave: the wizard stays whole and nothing of theirs is left running -------------

def _left(marker: str) -> list[str]:
    import subprocess

    return subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()


def test_a_child_holding_stdout_does_not_hold_the_time_limit(tmp_path):
    """The function forks a child that keeps the probe's stdout open and sleeps: the bench ends at its limit
    and the child is gone (only killing the probe, then reading to EOF, waited for the child)."""
    marker = f"1911{os.getpid()}"  # a sleep only this test starts (not another session's)
    fn = reward_file(tmp_path, f"""
        import subprocess, time
        def score(data_source, solution_str, ground_truth, extra_info=None):
            subprocess.Popen(["sleep", "{marker}"])  # inherits stdout and stderr
            time.sleep(1000)
    """)
    result = run_bench(GSM8K, function=fn, name="score", python=PY, timeout=3)
    assert "reward.timeout" in rules(result) and _left(f"sleep {marker}") == []


def test_a_detached_child_is_ended_with_the_scorer(tmp_path):
    marker = f"1912{os.getpid()}"
    fn = reward_file(tmp_path, f"""
        import subprocess
        def score(data_source, solution_str, ground_truth, extra_info=None):
            subprocess.Popen(["setsid", "sleep", "{marker}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            return 1.0 if solution_str.strip().endswith(ground_truth) else 0.0
    """)
    run_bench(GSM8K, function=fn, name="score", python=PY, timeout=60)
    assert _left(f"sleep {marker}") == []


def test_a_function_that_prints_a_flood_keeps_the_wizard_small(tmp_path):
    import resource

    fn = reward_file(tmp_path, """
        import sys
        def score(data_source, solution_str, ground_truth, extra_info=None):
            sys.stdout.write("x" * (200 * 1024 * 1024))  # 200 MB per call
            return 0.5 if solution_str else 0.0
    """)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = run_bench(GSM8K[:1], function=fn, name="score", python=PY, timeout=120)
    grew_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert len(result.trials) == 3 and grew_kib < 200 * 1024  # the output was dropped past its cap, not kept


def test_an_allocation_past_the_limit_fails_in_the_scorer_not_the_machine(tmp_path):
    fn = reward_file(tmp_path, """
        def score(data_source, solution_str, ground_truth, extra_info=None):
            big = bytearray(40 * 1024**3)
            return 1.0
    """)
    result = run_bench(GSM8K[:1], function=fn, name="score", python=PY, timeout=60)
    assert "MemoryError" in rules(result)["reward.exception"].message


def test_a_function_that_ends_the_process_is_a_failure_not_ok(tmp_path):
    fn = reward_file(tmp_path, """
        import os
        def score(data_source, solution_str, ground_truth, extra_info=None):
            os._exit(0)
    """)
    result = run_bench(GSM8K, function=fn, name="score", python=PY, timeout=60)
    ended = rules(result)["reward.process_ended"]
    assert ended.severity is Severity.ERROR and "exited with code 0 after 0 of 6 calls" in ended.message
