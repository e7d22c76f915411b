"""Judging reward scores: the failures that make a run learn nothing, named with rows and candidates."""

import math

from wizard.core.findings import Severity
from wizard.core.reward.bench import (
    BenchRow,
    Trial,
    bench_rows,
    builtin_findings,
    candidates_for,
    classify,
    judge,
    summarize,
)


def rules(findings):
    return {f.rule: f for f in findings}


def trials(scores, rows=(0, 1)):
    kinds = ["ground_truth_formatted", "empty", "wrong"]
    out = []
    for r in rows:
        for k, s in zip(kinds, scores):
            out.append(Trial(row=r, candidate=k, text="", score=s, seconds=0.001))
    return out


def test_candidates_for_gsm8k_put_the_answer_where_the_scorer_looks():
    cands = {c.kind: c.text for c in candidates_for(BenchRow(0, "openai/gsm8k", "72"), ["my text"])}
    assert cands["ground_truth"] == "72"
    assert cands["ground_truth_formatted"].endswith("#### 72")
    assert cands["empty"] == ""
    assert cands["wrong"].endswith("#### 73")
    assert cands["user"] == "my text"


def test_candidates_for_a_custom_function_are_plain():
    kinds = [c.kind for c in candidates_for(BenchRow(0, "mine", "Paris"), custom=True)]
    assert kinds == ["ground_truth", "empty", "wrong"]


def test_classify_like_verl_reads_returns():
    assert classify(1) == ("number", 1.0)
    assert classify(True) == ("number", 1.0)
    assert classify({"score": 0.5, "acc": True}) == ("dict", 0.5)
    assert classify({"acc": True}) == ("dict", None)
    assert classify(None) == ("none", None)
    assert classify("1.0") == ("number", 1.0)
    assert classify("yes") == ("other", None)


def test_a_scorer_that_separates_right_from_wrong_has_no_findings():
    assert judge(trials([1.0, 0.0, 0.0])) == []


def test_all_equal_scores_are_an_error():
    f = rules(judge(trials([0.0, 0.0, 0.0])))["reward.constant"]
    assert f.severity is Severity.ERROR and "same score 0" in f.message and "advantages are all 0" in f.message


def test_nan_is_an_error_naming_rows_and_candidates():
    t = trials([1.0, float("nan"), 0.0])
    f = rules(judge(t))["reward.nan"]
    assert "nan on 2 of 6 calls" in f.message and "rows 0, 1 (candidates: empty)" in f.message


def test_none_and_non_numbers_are_errors():
    t = trials([1.0, 0.0, 0.0])
    t[1] = Trial(row=0, candidate="empty", text="", kind="none", score=None, raw="None")
    f = rules(judge(t))["reward.non_numeric"]
    assert "returned None on 1 of 6 calls, row 0 (candidates: empty)" in f.message


def test_exceptions_carry_the_users_traceback():
    t = trials([1.0, 0.0, 0.0])
    t[2] = Trial(row=0, candidate="wrong", text="", error="KeyError: 'x'", score=None,
                 traceback='Traceback (most recent call last):\n  File "/u/r.py", line 3, in fn\nKeyError: \'x\'')
    f = rules(judge(t, source="fn in r.py"))["reward.exception"]
    assert "fn in r.py raised KeyError: 'x' on 1 of 6 calls" in f.message
    assert 'File "/u/r.py", line 3, in fn' in f.message


def test_right_answer_not_above_wrong_is_a_warning():
    f = rules(judge(trials([1.0, 0.0, 1.0])))["reward.no_signal"]
    assert f.severity is Severity.WARNING and "rows 0, 1" in f.message


def test_slowness_is_estimated_per_step():
    t = trials([1.0, 0.0, 0.0])
    t[0].seconds = 2.5
    f = rules(judge(t))["reward.slow"]
    assert "2.50 s at worst (row 0, ground_truth_formatted)" in f.message and "per step" in f.message


def test_timeout_is_an_error():
    f = rules(judge([], timed_out="no answer within 5 s on row 3 (empty)"))["reward.timeout"]
    assert "row 3" in f.message


def test_summary_range_and_distribution():
    s = summarize(trials([1.0, 0.0, 0.0]) + [Trial(row=2, candidate="user", text="", score=math.nan)])
    assert (s.min, s.max) == (0.0, 1.0)
    assert s.distribution == {"0": 4, "1": 2}
    assert s.by_candidate["ground_truth_formatted"]["mean"] == 1.0
    assert s.by_candidate["user"]["mean"] is None


def test_rows_without_a_scorer_or_ground_truth():
    (f,) = builtin_findings([BenchRow(0, "openai/gsm8k", "1"), BenchRow(4, "mine", "x")])
    assert "'mine' (row 4)" in f.message
    rows, (g,) = bench_rows([(0, {"data_source": "a", "reward_model": {"ground_truth": "1"}}),
                             (1, {"data_source": "a", "reward_model": {}})])
    assert [r.row for r in rows] == [0] and "row 1 lack" in g.message
