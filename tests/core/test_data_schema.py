"""verl's dataset format as the core checks it: findings name the column and the rows."""

import pytest

from wizard.core.data.schema import (
    ConversionError,
    ConversionSpec,
    SchemaChecker,
    batch_findings,
    conversion_findings,
    convert_row,
    format_rows,
    length_stats,
    prompt_length_findings,
    scorer_for,
    scorer_table,
)
from wizard.core.findings import Severity


def good_row(i=0, source="openai/gsm8k", gt="72"):
    return {"data_source": source, "prompt": [{"role": "user", "content": f"question {i}"}],
            "reward_model": {"style": "rule", "ground_truth": gt}, "extra_info": {"index": i}}


def check(rows, columns=None, custom=False):
    c = SchemaChecker(has_custom_reward=custom)
    c.columns(columns if columns is not None else list(rows[0]))
    for i, r in enumerate(rows):
        c.add(i, r)
    return c, c.findings()


def by_rule(findings):
    return {f.rule: f for f in findings}


def test_good_rows_have_no_findings():
    c, findings = check([good_row(i) for i in range(4)])
    assert findings == []
    assert c.data_sources == {"openai/gsm8k": 4}


@pytest.mark.parametrize("source, scorer", [
    ("openai/gsm8k", "gsm8k"), ("HuggingFaceH4/MATH-500", "math_reward"), ("aime2024", "math_dapo"),
    ("math", "math_dapo"), ("numina_olympiads", "prime_math"), ("codeforces", "prime_code"),
    ("hiyouga/geometry3k", "geo3k"), ("searchR1_nq", "search_r1_like_qa_em"), ("gsm8k", None), ("my/data", None),
])
def test_data_source_to_builtin_scorer_follows_verl_0_9_1(source, scorer):
    assert scorer_for(source) == scorer


@pytest.mark.parametrize("column", ["prompt", "data_source", "reward_model"])
def test_a_missing_column_is_named_with_the_columns_the_file_has(column):
    rows = [{k: v for k, v in good_row(i).items() if k != column} for i in range(3)]
    _, findings = check(rows)
    (f,) = [f for f in findings if f.rule.startswith("data.missing_column")]
    assert f.severity is Severity.ERROR
    name = "reward_model.ground_truth" if column == "reward_model" else column
    assert f"column '{name}' is missing in all 3 rows" in f.message
    assert "the file has:" in f.message
    if column != "prompt":
        assert "KeyError" in f.message


def test_rows_without_ground_truth_are_named():
    rows = [good_row(i) for i in range(8)]
    rows[2]["reward_model"] = {"style": "rule"}
    rows[6]["reward_model"] = None
    _, findings = check(rows)
    msgs = [f.message for f in findings if f.rule == "data.missing_value.ground_truth"]
    assert all(f.severity is Severity.ERROR for f in findings)
    assert any("has no 'ground_truth' in row 2 " in m for m in msgs)
    assert any("is not a dict in row 6 " in m for m in msgs)


def test_prompt_as_plain_string_names_rows_and_suggests_convert():
    rows = [dict(good_row(i), prompt=f"question {i}") for i in range(12)]
    _, findings = check(rows)
    f = by_rule(findings)["data.prompt_format"]
    assert "column 'prompt' in rows 0, 1, 2, 3, 4 and 7 more is a plain string" in f.message
    assert "verl-wizard data convert" in f.fix


def test_prompt_messages_without_role_or_with_unknown_role():
    rows = [good_row(0), dict(good_row(1), prompt=[{"content": "hi"}]), dict(good_row(2), prompt=[]),
            dict(good_row(3), prompt=[{"role": "human", "content": "hi"}])]
    _, findings = check(rows)
    role = by_rule(findings)["data.prompt_role"]
    assert role.severity is Severity.WARNING and "row 3" in role.message and "'human'" in role.message
    msgs = [f.message for f in findings if f.rule == "data.prompt_format"]
    assert any("row 1" in m and "lacks 'role'" in m for m in msgs)
    assert any("row 2" in m and "empty list" in m for m in msgs)


def test_unknown_data_source_is_an_error_unless_a_custom_function_is_set():
    rows = [good_row(0), good_row(1, source="my/data"), good_row(2, source="my/data")]
    _, findings = check(rows)
    f = by_rule(findings)["data.unknown_data_source"]
    assert "'my/data' (rows 1, 2)" in f.message and "NotImplementedError" in f.message
    assert "reward.custom_reward_function.path" in f.fix
    _, findings = check(rows, custom=True)
    assert "data.unknown_data_source" not in by_rule(findings)


def test_scorer_table_counts_rows_per_source():
    c, _ = check([good_row(0), good_row(1, source="x"), good_row(2)])
    assert scorer_table(c.data_sources) == [
        {"data_source": "openai/gsm8k", "rows": 2, "scorer": "gsm8k"}, {"data_source": "x", "rows": 1, "scorer": None}]


def test_gsm8k_ground_truth_holding_a_whole_solution_is_flagged():
    _, findings = check([good_row(0, gt="He has 3+4=7 apples.\n#### 7")])
    assert by_rule(findings)["data.ground_truth_format"].severity is Severity.WARNING


def test_empty_file():
    (f,) = SchemaChecker().findings()
    assert f.rule == "data.empty" and "Train dataloader is empty" in f.message


def test_fewer_rows_than_batch_size_names_both_numbers_and_the_crash():
    (f,) = batch_findings(100, 256)
    assert f.severity is Severity.ERROR
    assert "100 rows" in f.message and "data.train_batch_size=256" in f.message and "ZeroDivisionError" in f.message
    assert f.fix_overrides == ["data.train_batch_size=64"]
    assert batch_findings(512, 256) == []
    (note,) = batch_findings(600, 256)
    assert note.severity is Severity.INFO and "the last 88 rows" in note.message


def test_filter_overlong_prompts_can_leave_too_few_rows():
    (f,) = batch_findings(300, 256, rows_after_filter=200)
    assert f.severity is Severity.ERROR and "200 left after filter_overlong_prompts" in f.message


def test_overlong_prompts_suggest_filter_overlong_prompts():
    lengths = [(0, 100), (1, 900), (2, 512), (3, 513)]
    (f,) = prompt_length_findings(lengths, 512)
    assert f.severity is Severity.WARNING
    assert "2 prompts (rows 1, 3)" in f.message and "longest 900 tokens" in f.message
    assert f.fix_overrides == ["data.filter_overlong_prompts=True"]
    (f,) = prompt_length_findings(lengths, 512, filter_overlong=True)
    assert f.severity is Severity.INFO
    assert prompt_length_findings([(0, 10)], 512) == []


def test_length_stats():
    assert length_stats([5, 1, 3, 100]) == {"count": 4, "min": 1, "median": 3, "p95": 100, "max": 100}
    assert length_stats([]) == {}


def test_format_rows():
    assert format_rows([3]) == "row 3"
    assert format_rows([1, 2, 3, 4, 5], 9) == "rows 1, 2, 3, 4, 5 and 4 more"


def test_convert_row_to_verl_format_with_system_and_template():
    spec = ConversionSpec(question="q", answer="a", data_source="openai/gsm8k", system="Be brief.",
                          template='{question} Output the final answer after "####".', split="train")
    row = convert_row({"q": "How many?", "a": 72.0}, spec, 5)
    assert row["prompt"] == [{"role": "system", "content": "Be brief."},
                             {"role": "user", "content": 'How many? Output the final answer after "####".'}]
    assert row["reward_model"] == {"style": "rule", "ground_truth": "72"}
    assert row["data_source"] == "openai/gsm8k"
    assert row["extra_info"] == {"index": 5, "question": "How many?", "answer": "72", "split": "train"}
    # the converted row passes the checks
    _, findings = check([row])
    assert findings == []


def test_conversion_spec_errors_are_one_line():
    with pytest.raises(ConversionError, match="must contain {question}"):
        ConversionSpec("q", "a", template="no slot").validate()
    with pytest.raises(ConversionError, match="--question 'qq': no such column .*the file has: q, a"):
        ConversionSpec("qq", "a").validate(["q", "a"])
    with pytest.raises(ConversionError, match="row 3: column 'q' is empty"):
        convert_row({"q": " ", "a": "1"}, ConversionSpec("q", "a"), 3)


def test_conversion_to_an_unknown_data_source_warns():
    assert conversion_findings(ConversionSpec("q", "a", data_source="openai/gsm8k")) == []
    (f,) = conversion_findings(ConversionSpec("q", "a", data_source="mine"))
    assert "'mine' has no built-in scorer" in f.message


def vl_row(i, n_tags, n_images, item=None):
    row = good_row(i)
    row["prompt"] = [{"role": "user", "content": "<image>" * n_tags + " What is shown?"}]
    row["images"] = [item if item is not None else {"image": f"file:///data/{i}.jpg"}] * n_images
    return row


def test_placeholders_and_images_must_pair_up_as_verl_pairs_them():
    rows = [vl_row(0, 1, 1), vl_row(1, 2, 1), vl_row(2, 1, 2), vl_row(3, 1, 1, item="/data/3.jpg")]
    found = by_rule(check(rows)[1])
    too_few = found["data.media_placeholders"]
    assert too_few.severity is Severity.ERROR and "row 1" in too_few.message and "AssertionError" in too_few.message
    assert "row 2" in found["data.media_unused"].message and found["data.media_unused"].severity is Severity.WARNING
    assert "row 3" in found["data.media_format"].message and "{'bytes'" in found["data.media_format"].fix


def test_placeholders_without_an_images_column_are_an_error():
    row = good_row(0)
    row["prompt"] = [{"role": "user", "content": "<image> What is this?"}]
    assert "data.media_placeholders" in by_rule(check([row])[1])


def test_tool_agent_rows_without_tool_kwargs_and_unknown_agent_loops():
    row = good_row(0)
    row["extra_info"] = {"index": 0, "need_tools_kwargs": True}
    row["agent_name"] = "my_agent"
    found = by_rule(check([row])[1])
    assert found["data.tools_kwargs"].severity is Severity.WARNING
    assert "my_agent" in found["data.agent_name"].message and found["data.agent_name"].severity is Severity.INFO
    row["agent_name"] = "tool_agent"
    row["extra_info"]["tools_kwargs"] = {"calc": {"create_kwargs": {}}}
    assert not {"data.tools_kwargs", "data.agent_name"} & set(by_rule(check([row])[1]))
