"""The reward bench's one-line verdict, from the core's own findings and summary."""

from wizard.core.reward.bench import Trial, judge, summarize
from wizard.core.reward.verdict import verdict


def bench(scores: dict[str, float], rows=(0, 1), **kw):
    trials = [Trial(row=r, candidate=c, text=f"#### {r}" if c == "ground_truth_formatted" else str(r), score=s, **kw)
              for r in rows for c, s in scores.items()]
    return trials, summarize(trials), judge(trials)


def test_right_beats_wrong_can_teach_and_the_format_is_named():
    trials, summary, findings = bench({"ground_truth": 0.0, "ground_truth_formatted": 1.0, "empty": 0.0, "wrong": 0.0})
    v = verdict(trials, summary, findings, "verl's gsm8k scorer")
    assert v.level == "good"
    assert v.text.startswith("verl's gsm8k scorer gives 1.0 to the right answer and 0.0 to a wrong one: it can teach.")
    assert "'#### 0'" in v.text and "the bare answer scores 0.0" in v.text


def test_the_same_score_for_everything_cannot_teach():
    trials, summary, findings = bench({"ground_truth": 0.0, "empty": 0.0, "wrong": 0.0})
    v = verdict(trials, summary, findings)
    assert v.level == "error" and "same score (0.0)" in v.text and "learns nothing" in v.text


def test_a_wrong_answer_scoring_as_high_names_the_rows():
    trials, summary, findings = bench({"ground_truth": 1.0, "empty": 0.0, "wrong": 1.0}, rows=(3,))
    trials += [Trial(row=4, candidate=c, text="", score=s) for c, s in (("ground_truth", 1.0), ("empty", 0.0),
                                                                         ("wrong", 0.0))]
    v = verdict(trials, summarize(trials), judge(trials))
    assert v.level == "warning" and v.text.startswith("On row 3 the right answer scores no higher")


def test_slow_is_said_after_a_good_verdict():
    trials, summary, findings = bench({"ground_truth": 1.0, "empty": 0.0, "wrong": 0.0}, seconds=1.5)
    v = verdict(trials, summary, findings)
    assert v.level == "warning" and "can teach" in v.text and "slow: 1500 ms per call" in v.text


def test_nothing_scored_says_why():
    from wizard.core.reward.bench import BenchRow, builtin_findings

    findings = builtin_findings([BenchRow(0, "my_source", "1")])
    v = verdict([], summarize([]), findings)
    assert v.level == "none" and v.text.startswith("Nothing was scored: no built-in scorer of verl 0.9.1 handles")
