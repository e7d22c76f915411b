"""The generations dumps: read as verl writes them, each response and GRPO group flagged, a verdict per step with
the numbers. On the recorded H200 run's numbers (tests/helpers/rollout_dumps.py) and one step per flag."""

import json

import pytest

from tests.helpers.rollout_dumps import (
    ENGLISH,
    RECORDED_CLIP,
    cut_indices,
    recorded_run_dumps,
    varied_step,
)
from wizard.core.findings import Severity
from wizard.core.run.samples.checks import (
    CUT,
    EMPTY,
    LANGUAGE,
    LOOP,
    SAME_SCORE,
    SAME_TEXT,
    StepHints,
    inspect_step,
    is_loop,
    loop_period,
    switches_language,
)
from wizard.core.run.samples.dump import dump_step, groups_of, haystack, matches, parse_dump, parse_dump_line

CLIPS = {1: 0.3125, 2: 0.21875, 3: 0.3125}  # response_length/clip_ratio of the recorded run's steps


@pytest.fixture(scope="module")
def recorded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("rollout")
    return {int(p.stem): p for p in recorded_run_dumps(folder)}


def read(path):
    return parse_dump(path.read_text().splitlines(), int(path.stem)).samples


def test_a_dump_line_as_verl_writes_it():
    line = json.dumps({"input": "user\nwhat is 1 + 2 ?\nassistant\n", "output": "#### 3", "gts": "3", "score": 1.0,
                       "step": 7, "uid": "8f2c-uuid_2_0", "acc": True})
    s = parse_dump_line(line, step=99, index=4)
    assert (s.step, s.index, s.group, s.answer, s.score, s.ground_truth) == (7, 4, "8f2c-uuid", 2, 1.0, "3")
    assert s.extra == {"acc": True} and s.response == "#### 3"


def test_what_is_not_a_sample_says_why_and_odd_values_read_safely():
    assert parse_dump_line("{not json", 1, 0).startswith("line 1: not JSON")
    assert "no \"output\" key" in parse_dump_line('{"input": "x"}', 1, 2)
    s = parse_dump_line(json.dumps({"input": "p", "output": "r", "score": float("nan"), "gts": ["a", "b"]}), 3, 0)
    assert s.score is None and s.ground_truth == '["a", "b"]' and s.group == "p"  # no uid: grouped by prompt
    read = parse_dump(["", '{"output": "a"}', "oops"], 2)
    assert len(read.samples) == 1 and read.bad_lines == ["line 3: not JSON (Expecting value)"]
    assert dump_step("12.jsonl") == 12 and dump_step("12.jsonl.tmp") is None and dump_step("x.jsonl") is None


def test_the_recorded_runs_steps_say_what_hit_the_limit_and_that_grpo_learned_nothing(recorded):
    lines = {}
    for step, path in recorded.items():
        got = inspect_step(read(path), StepHints(max_response_length=512, clip_ratio=CLIPS[step]))
        lines[step] = got.verdict.line
        assert {i for i, f in enumerate(got.flags) if CUT in f} == cut_indices(path)  # the truly cut ones
        assert got.verdict.cut == RECORDED_CLIP[step] and got.verdict.cut_exact
    assert lines[1] == ("step 1: 64 responses to 16 prompts (4 each): 31 % of responses hit the 512-token limit; "
                        "in all 16 groups every response scored the same (0), so GRPO's advantage is 0 there; "
                        "mean score 0")
    assert "22 % of responses hit the 512-token limit" in lines[2]
    assert "in 14 of 16 groups every response scored the same (0)" in lines[3] and "mean score 0.0312" in lines[3]


def test_findings_name_the_numbers_and_a_step_that_teaches_nothing_is_an_error(recorded):
    one = inspect_step(read(recorded[1]), StepHints(512, CLIPS[1])).verdict.findings
    three = inspect_step(read(recorded[3]), StepHints(512, CLIPS[3])).verdict.findings
    assert [(f.rule, f.severity) for f in one] == [("samples.no_signal", Severity.ERROR),
                                                   ("samples.cut", Severity.WARNING)]
    assert "in all 16 groups every response scored the same (0)" in one[0].message
    cut = next(f for f in three if f.rule == "samples.cut")
    assert "20 of 64 responses (31 %) hit the 512-token limit" in cut.message
    assert cut.fix_overrides == ["data.max_response_length=1024"] and not cut.fix_auto
    assert [f.rule for f in three] == ["samples.flat_groups", "samples.cut"]


def test_without_verls_clip_ratio_the_cut_is_estimated_and_says_so(recorded):
    est = inspect_step(read(recorded[1]), StepHints(max_response_length=512, mean_tokens=300.0)).verdict
    assert not est.cut_exact and "about " in est.line and "hit the 512-token limit" in est.line
    none = inspect_step(read(recorded[1]), StepHints()).verdict  # no limit known: nothing is called cut
    assert none.cut == 0 and "hit" not in none.line


def test_one_group_per_flag(tmp_path):
    got = inspect_step(read(varied_step(tmp_path)), StepHints(max_response_length=512))
    by_group = [got.flags[i:i + 4] for i in range(0, 32, 4)]
    assert by_group[0] == [()] * 4  # healthy
    assert by_group[1][1] == (LOOP,)
    assert by_group[2][0] == (EMPTY,)
    assert by_group[3][1] == (LANGUAGE,)
    assert by_group[4] == [(SAME_TEXT, SAME_SCORE)] * 4
    assert by_group[5] == [(SAME_SCORE,)] * 4
    assert CUT in by_group[6][0] and LOOP in by_group[6][0]  # 2,000 characters of a repeated clause
    v = got.verdict
    assert (v.empty, v.loops, v.language, v.same_text_groups, v.same_score_groups) == (1, 2, 1, 1, 2)
    assert v.line == ("step 1: 32 responses to 8 prompts (4 each): about 3 % of responses hit the 512-token limit; "
                      "in 2 of 8 groups every response scored the same, so GRPO's advantage is 0 there; in 1 of 8 "
                      "groups every response is the same text; 1 is empty; 2 repeat in a loop; 1 switches language; "
                      "mean score 0.562")


def test_a_healthy_step_says_so():
    lines = [json.dumps({"input": "q", "output": f"answer {i} is #### {i}", "score": float(i % 2),
                         "uid": f"u{i // 4}_{i % 4}_0"}) for i in range(8)]
    v = inspect_step(parse_dump(lines, 5).samples, StepHints(max_response_length=512, clip_ratio=0.0)).verdict
    assert v.line == ("step 5: 8 responses to 2 prompts (4 each): scores differ within all 2 groups; no response cut, "
                      "empty, looping or in another language; mean score 0.5")
    assert v.findings == []


@pytest.mark.parametrize("text, loops", [
    ("Let me check again. " * 12, True),
    (ENGLISH + " " + "I think so. " * 12, True),  # a loop at the end of a sensible start
    ("x" * 60, True),
    (" ".join(f"w{i % 30}" for i in range(300)), True),  # the same 30 words over and over
    (ENGLISH, False),
    ("Step 1: 3 * 4 = 12. Step 2: 12 + 5 = 17. Step 3: 17 - 2 = 15. Step 4: 15 / 3 = 5. The answer is 5.", False),
    ("short", False),
])
def test_loops(text, loops):
    assert is_loop(text) is loops


def test_the_loops_unit_is_found_from_the_end():
    assert loop_period("abc " + "Let me check again. " * 10) == len("Let me check again. ")
    assert loop_period("no repetition at the end of this sentence at all, none whatsoever here") is None


@pytest.mark.parametrize("prompt_script, response, switches", [
    ("Latin", ENGLISH, False),
    ("Latin", "The total is 72. 所以答案是七十二，我们先把四月和五月的数量加起来。", True),
    ("Latin", "Let α = 3 and π ≈ 3.14, so the area is 28.3", False),  # Greek letters are math, not a language
    ("CJK", "娜塔莉亚在五月卖出了二十四个夹子 x = 24", False),
    ("CJK", "Natalia sold 24 clips in May and 72 in total.", True),
    ("Cyrillic", "Ответ: 72", False),
])
def test_language_switch(prompt_script, response, switches):
    assert switches_language(prompt_script, response) is switches


def test_groups_search_and_sort_keys():
    samples = parse_dump([json.dumps({"input": "p", "output": o, "gts": "72", "score": s, "uid": f"g{i // 2}_{i}_0"})
                          for i, (o, s) in enumerate([("The Answer", 1.0), ("nope", 0.0), ("x", None), ("", 0.5)])],
                         1).samples
    assert [len(g) for g in groups_of(samples).values()] == [2, 2]
    assert matches(haystack(samples[0]), "answer THE") and not matches(haystack(samples[0]), "answer missing")
    assert matches(haystack(samples[1]), "72")  # the ground truth is searched too
    assert matches(haystack(samples[0]), '"the answer"') and not matches(haystack(samples[0]), '"answer the"')
    from wizard.core.run.samples.dump import sort_value

    by_score = sorted(samples, key=lambda s: sort_value(s, "score"))
    assert [s.score for s in by_score] == [0.0, 0.5, 1.0, None]  # no score last


@pytest.mark.parametrize("prompt, question", [
    ("system\nYou are a helpful assistant.\nuser\n你好吗？\nassistant\n", "你好吗？"),
    ("user\nwhat is 1 + 2 ?\nassistant\n", "what is 1 + 2 ?"),
    ("Solve: 2 + 2", "Solve: 2 + 2"),
])
def test_the_prompts_language_is_its_questions(prompt, question):
    from wizard.core.run.samples.checks import question_of

    assert question_of(prompt) == question
